"""The README's Configuration table, `recon.runtime.config.DEFAULTS` and what the code reads agree.

Defaults live in one place, `DEFAULTS`. The README restates them for people and `RunRequest`
restates some of them for the workflow's history (a run started without settings must behave as
one started with the defaults), so both are checked against it here: a variable added, renamed
or given another default in one place and not the others fails this test.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from recon.domain.models import PostInput, RunRequest
from recon.domain.settings_table import SETTINGS
from recon.runtime.config import DEFAULTS, load_settings

ROOT = Path(__file__).resolve().parents[2]
NAME = re.compile(r"`([A-Z][A-Z0-9_]+)`")
# Read by temporalio.envconfig, not by recon: the README row that ends its list of names with "…".
SDK_ROW_MARK = "…"


def readme_table() -> dict[str, str | None]:
    """Variable -> the README's default as written (None where it says unset, auto, from ...)."""
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    assert rows, "no Configuration table in README.md"
    table: dict[str, str | None] = {}
    for row in rows:
        cells = [cell.strip() for cell in row.strip().strip("|").split(" | ")]
        names, default = NAME.findall(cells[0]), cells[-1]
        if SDK_ROW_MARK in cells[0]:
            continue
        # One default per name, comma-separated; commas inside parentheses are prose.
        pieces = [p.strip() for p in re.split(r",\s*(?![^()]*\))", default)]
        assert len(pieces) == len(names), f"README row {names}: {len(pieces)} defaults for " \
                                          f"{len(names)} variables: {default!r}"
        for name, piece in zip(names, pieces, strict=True):
            assert name not in table, f"{name} is in the README table twice"
            literal = re.match(r"`([^`]*)`", piece)
            table[name] = literal.group(1) if literal else None
    return table


def sdk_row_names() -> set[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    return {name for line in section.splitlines() if SDK_ROW_MARK in line.split(" | ")[0]
            for name in NAME.findall(line.split(" | ")[0])}


def test_every_variable_recon_reads_is_in_the_readme_and_nothing_else_is() -> None:
    documented = readme_table()
    assert sorted(set(DEFAULTS) - set(documented)) == [], "missing from the README table"
    assert sorted(set(documented) - set(DEFAULTS)) == [], "in the README but not in DEFAULTS"
    assert not sdk_row_names() & set(DEFAULTS), "the SDK's row names a variable recon reads"


@pytest.mark.parametrize("name", sorted(DEFAULTS))
def test_the_readme_states_the_default(name: str) -> None:
    default, written = DEFAULTS[name], readme_table()[name]
    if default in (None, ""):  # empty means unset (config.py)
        assert written is None, f"{name}: README gives `{written}`, the code has none"
        return
    assert written is not None, f"{name}: README gives no default, the code has {default!r}"
    assert type(default)(written) == default, f"{name}: README `{written}`, code {default!r}"


def _read_names(source: str) -> set[str]:
    """Environment variables a module reads by name (os.environ / getenv / the settings dict)."""
    found = set(re.findall(
        r"""(?:environ\.get|getenv|environ\[|values\.get|_(?:int|float|amount|clock|str|text)\(values,)"""
        r"""\s*\(?\s*["']([A-Z][A-Z0-9_]+)["']""", source))
    return found


def test_no_module_reads_a_variable_that_has_no_default_entry() -> None:
    sources = [*(ROOT / "recon").rglob("*.py"), *(ROOT / "activities").glob("*.py"),
               *(ROOT / "workflows").glob("*.py"), ROOT / "worker.py", ROOT / "starter.py"]
    read = {name: path.relative_to(ROOT) for path in sources
            for name in _read_names(path.read_text())}
    # load_settings reads one variable per row of the table (recon/runtime/config.py).
    read.update({row.name: Path("recon/runtime/config.py") for row in SETTINGS if row.field})
    unknown = {name: str(path) for name, path in read.items() if name not in DEFAULTS}
    assert unknown == {}, "add these to recon.runtime.config.DEFAULTS and the README table"
    assert {"RECON_POST_BATCH", "RECON_HOME", "RECON_LOG_LEVEL"} <= set(read), \
        "the scan no longer sees the reads it is meant to see"


def test_settings_take_their_defaults_from_the_table() -> None:
    s = load_settings()
    assert (s.warehouse, s.reminder_utc_time) == (DEFAULTS["RECON_WAREHOUSE"],
                                                  DEFAULTS["RECON_REMINDER_UTC"])
    assert (s.post_batch_size, s.metrics_refresh_seconds) == (DEFAULTS["RECON_POST_BATCH"],
                                                              DEFAULTS["RECON_METRICS_REFRESH"])


@pytest.mark.parametrize(("model", "field", "name"), [
    (RunRequest, "extract_batch_size", "RECON_EXTRACT_BATCH"),
    (RunRequest, "post_batch_size", "RECON_POST_BATCH"),
    (RunRequest, "heartbeat_seconds", "RECON_HEARTBEAT_SECONDS"),
    (RunRequest, "reminder_utc_time", "RECON_REMINDER_UTC"),
    (PostInput, "batch_size", "RECON_POST_BATCH"),
])
def test_the_workflow_inputs_default_to_the_same_values(model, field: str, name: str) -> None:
    assert model.model_fields[field].default == DEFAULTS[name]
