"""The list of `workflow.patched` ids (workflows/patches.py) is the whole list: every
`workflow.patched(...)` or `workflow.deprecate_patch(...)` in workflows/ uses a listed id, every
listed id is used, and each is spelled in the list only. That kept histories still replay is
tests/workflows/test_histories.py."""

from __future__ import annotations

import ast
import importlib
import re
from datetime import date
from pathlib import Path

from workflows.patches import PATCHES

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / "workflows"
LIST = WORKFLOWS / "patches.py"
CALLS = ("patched", "deprecate_patch")


def _value(module: object, node: ast.expr) -> object:
    """What a call's argument names: a literal, a module-level name, or `module.NAME`."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return getattr(module, node.id, None)
    if isinstance(node, ast.Attribute):
        owner = _value(module, node.value)
        return getattr(owner, node.attr, None)
    return None


def patch_calls(path: Path) -> list[tuple[int, object]]:
    """(line, id) of every `workflow.patched(X)` / `workflow.deprecate_patch(X)` in a workflows
    module (a bare `patched(X)` too), X resolved against the imported module."""
    module = importlib.import_module(f"workflows.{path.stem}")
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name in CALLS:
            arg = node.args[0] if node.args else None
            found.append((node.lineno, _value(module, arg) if arg is not None else None))
    return found


def used_ids() -> dict[object, list[str]]:
    used: dict[object, list[str]] = {}
    for path in sorted(WORKFLOWS.glob("*.py")):
        for line, patch_id in patch_calls(path):
            used.setdefault(patch_id, []).append(f"{path.relative_to(ROOT)}:{line}")
    return used


def test_every_patch_the_workflows_use_is_listed() -> None:
    listed = {p.id for p in PATCHES}
    unlisted = {str(k): v for k, v in used_ids().items() if k not in listed}
    assert not unlisted, f"add these to workflows/patches.py (and use its constant): {unlisted}"


def test_every_listed_patch_is_used() -> None:
    unused = sorted({p.id for p in PATCHES} - set(used_ids()))
    assert not unused, f"listed in workflows/patches.py but never patched in workflows/: {unused}"


def test_each_patch_is_listed_once_with_its_date_and_what_it_keeps() -> None:
    ids = [p.id for p in PATCHES]
    assert len(ids) == len(set(ids)), f"listed twice: {sorted({i for i in ids if ids.count(i) > 1})}"
    for p in PATCHES:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", p.id), p.id
        assert date.fromisoformat(p.added) <= date.today(), p
        assert p.keeps and "\n" not in p.keeps, p
    assert [p.added for p in PATCHES] == sorted(p.added for p in PATCHES), "keep the list in date order"


def test_an_id_is_spelled_in_the_list_only() -> None:
    """The other workflows modules use the constants: no second copy of an id to drift."""
    ids = {p.id for p in PATCHES}
    copies = [f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}"
              for path in sorted(WORKFLOWS.glob("*.py")) if path != LIST
              for node in ast.walk(ast.parse(path.read_text()))
              if isinstance(node, ast.Constant) and node.value in ids]
    assert not copies, "use the constant from workflows/patches.py:\n" + "\n".join(copies)
