"""No setting's default is written in the product but in its row of the settings table.

A default written twice drifts (issue 36 found 1800, 900 and 3 restated far from config.py), so
the product's modules are scanned for the three shapes a restatement takes:

1. an environment read with a literal fallback: `os.environ.get("RECON_X", 30)`, `getenv(...)`,
   `os.environ.get("RECON_X") or "INFO"` (a fallback of "" or None stands only for a setting that
   is unset by default: it says "unset", not a value);
2. a literal equal to a setting's default given to a name of that setting: a constant
   (`DEFAULT_GRACE_DAYS = 3`), a field or parameter default (`retry_seconds: float = 5.0`,
   `extract_batch_size: int = Field(default=50)`), a keyword argument or a dict entry. A name is
   the setting's when every word of it (but `default`) is a word of the setting's field or
   variable, and one of them is more than a common word (`seconds`, `host`, `wait` ...);
3. a line that names a setting's variable and writes its default beside it, code or comment
   (`DEFAULT = 3  # RECON_RECEIPT_GRACE_DAYS when unset`).

`test_the_scan_catches_a_planted_restatement` shows each shape is caught, so a clean scan is not
a blind one. A default of 0, 0.0 or "" is too common a value to look for in shapes 2 and 3.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from recon.domain.settings_table import SETTINGS, Setting

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "recon" / "domain" / "settings_table.py"
BY_NAME = {row.name: row for row in SETTINGS}
# Words too common to name a setting alone: units, and what every server or retry has (a local
# SMTP sink binds 127.0.0.1 too, a lost connection waits 1 s too, without restating anything).
COMMON = {"seconds", "second", "days", "paise", "percent", "bytes", "size", "max", "min", "time", "utc",
          "wait", "timeout", "host", "port"}
READS = {"get", "getenv", "pop", "setdefault"}


def product_sources() -> list[Path]:
    paths = [*ROOT.glob("recon/**/*.py"), *ROOT.glob("activities/*.py"), *ROOT.glob("workflows/*.py"),
             ROOT / "worker.py", ROOT / "starter.py"]
    return sorted(p for p in paths if p != TABLE)


def _words(name: str) -> set[str]:
    return {w for w in name.lower().split("_") if w}


def _owners(name: str) -> list[Setting]:
    """The settings `name` names: its words all theirs, one of them more than a common word."""
    words = _words(name) - {"default"}
    if not words - COMMON:
        return []
    return [row for row in SETTINGS
            if words <= _words(row.name) - {"recon"} | _words(row.field or "")]


def _literal(node: ast.AST | None) -> object:
    """The node's value when it is a literal (a call's `default=` counts), else a marker."""
    if isinstance(node, ast.Call):
        node = next((k.value for k in node.keywords if k.arg == "default"), None)
    try:
        return ast.literal_eval(node) if node is not None else _NONE
    except ValueError:
        return _NONE


_NONE = object()


def _same(value: object, default: object) -> bool:
    if isinstance(value, bool) or isinstance(default, bool) or value is _NONE:
        return False
    if isinstance(value, int | float) and isinstance(default, int | float):
        return value == default
    return isinstance(value, str) and value == default


def _telling(default: object) -> bool:
    """A default worth looking for: not unset, 0 or empty."""
    return default not in (None, "", 0)


def _named_values(tree: ast.AST):
    """(name, value node, line) for everything the module gives a value under a name."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                name = getattr(target, "id", None) or getattr(target, "attr", None)
                if name:
                    yield name, node.value, node.lineno
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            name = getattr(node.target, "id", None) or getattr(node.target, "attr", None)
            if name:
                yield name, node.value, node.lineno
        elif isinstance(node, ast.keyword) and node.arg:
            yield node.arg, node.value, node.value.lineno
        elif isinstance(node, ast.arguments):
            positional = [*node.posonlyargs, *node.args]
            pairs = [*zip(positional[len(positional) - len(node.defaults):], node.defaults, strict=True),
                     *((a, d) for a, d in zip(node.kwonlyargs, node.kw_defaults, strict=True) if d)]
            for arg, default in pairs:
                yield arg.arg, default, default.lineno
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    yield key.value, value, value.lineno


def _env_read(node: ast.AST) -> tuple[str, ast.AST | None] | None:
    """(variable, literal fallback node or None) for `x.get("VAR", fallback)` and the like."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    first = node.args[0]
    if called in READS and isinstance(first, ast.Constant) and first.value in BY_NAME:
        return first.value, node.args[1] if len(node.args) > 1 else None
    return None


def fallbacks(tree: ast.AST) -> list[tuple[str, int, object]]:
    """Shape 1: (variable, line, literal) of each environment read with a literal fallback."""
    found = []
    for node in ast.walk(tree):
        read, fallback = None, None
        if (hit := _env_read(node)) is not None:
            read, fallback = hit
        elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and \
                (hit := _env_read(node.values[0])) is not None:
            read, fallback = hit[0], node.values[1]
        value = _literal(fallback)
        if read is None or value is _NONE:
            continue
        unset = BY_NAME[read].default in (None, "") and value in (None, "")
        if not unset:
            found.append((read, node.lineno, value))
    return found


def named_defaults(tree: ast.AST) -> list[tuple[str, int, str]]:
    """Shape 2: (name, line, variable) of each literal that is the default of the name's setting."""
    return [(name, line, row.name) for name, value, line in _named_values(tree)
            for row in _owners(name) if _telling(row.default) and _same(_literal(value), row.default)]


def _spelled(default: object) -> str:
    """A pattern for the default as code or prose may write it (1_00_000, 0.10, 1800.0)."""
    if isinstance(default, str):
        return rf"(?<!\w){re.escape(default)}(?!\w)"
    whole, _, fraction = f"{default:f}".rstrip("0").partition(".")
    digits = "_?".join(whole)
    number = digits + (rf"\.{fraction}0*" if fraction else r"(?:\.0+)?")
    return rf"(?<![\w.]){number}(?![\w.])"


def lines_beside(source: str) -> list[tuple[int, str]]:
    """Shape 3: (line, variable) of each line that names a variable and writes its default."""
    found = []
    for number, text in enumerate(source.splitlines(), 1):
        for name in set(re.findall(r"\b[A-Z][A-Z0-9_]+\b", text)) & set(BY_NAME):
            default = BY_NAME[name].default
            if _telling(default) and re.search(_spelled(default), text.replace(name, "")):
                found.append((number, name))
    return found


def restatements(path: Path) -> list[str]:
    source = path.read_text()
    tree = ast.parse(source)
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    return sorted({
        *(f"{where}:{line}: {name} falls back to {value!r}" for name, line, value in fallbacks(tree)),
        *(f"{where}:{line}: {name} = {BY_NAME[var].default!r} restates {var}"
          for name, line, var in named_defaults(tree)),
        *(f"{where}:{line}: {var}'s default {BY_NAME[var].default!r} written beside it"
          for line, var in lines_beside(source)),
    })


def test_no_default_is_restated_in_the_product() -> None:
    found = [hit for path in product_sources() for hit in restatements(path)]
    assert found == [], "read these from recon.domain.settings_table (default_of, run_input):\n" + \
        "\n".join(found)


@pytest.mark.parametrize("planted", [
    'import os\nwindow = float(os.environ.get("RECON_OUTAGE_WINDOW", 1800))\n',
    'import os\nlevel = os.environ.get("RECON_LOG_LEVEL") or "DEBUG"\n',
    "DEFAULT_GRACE_DAYS = 3\n",
    "class Config:\n    retry_seconds: float = 5.0\n",
    "from pydantic import Field\nclass Run:\n    extract_batch_size: int = Field(default=50, ge=1)\n",
    "def send(lanes: int = 4) -> None: ...\n",
    "start(post_batch_size=5_000)\n",
    "# the signature ages out after RECON_DECISION_MAX_AGE, 900 s by default\n",
])
def test_the_scan_catches_a_planted_restatement(tmp_path: Path, planted: str) -> None:
    path = tmp_path / "planted.py"
    path.write_text(planted)
    assert restatements(path), f"not caught: {planted!r}"


@pytest.mark.parametrize("innocent", [
    'import os\nraw = os.environ.get("RECON_FAILPOINTS", "")\n',  # unset by default: "" says so
    "RETRY = RetryPolicy(maximum_interval=timedelta(seconds=30))\n",  # a unit alone names nothing
    "MAX_RETRY_WAIT = 900.0\n",  # 900 is RECON_DECISION_MAX_AGE's, but this is not its name
    "def bind(host: str = '127.0.0.1') -> None: ...\n",  # a host alone names no setting
    "heartbeat_seconds: float = 3.0\n",  # its own value, not the default
])
def test_the_scan_lets_other_values_be(tmp_path: Path, innocent: str) -> None:
    path = tmp_path / "innocent.py"
    path.write_text(innocent)
    assert restatements(path) == []
