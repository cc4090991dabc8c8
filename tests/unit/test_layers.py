"""The rooms of `recon/` and the arrows between them (docs/architecture.md "Rooms and layers").

Every import of the product counts, late ones inside functions included: a circle hidden by a
late import is still a circle. The rule, read as "may import":

- `recon.domain`: nothing else of the product (pure rules, safe in workflow code);
- `recon.store`, `recon.documents`, `recon.mail`, `recon.runtime`, `recon.sources`: each other and
  `domain`, never
  `workflows`, `activities`, `worker`, `starter`, `ops`, `cli` or `tools`;
- `workflows`: `recon.domain`, each other, and `activities` (by reference, for their names);
- `activities`, `worker`, `starter`: anything but `ops`, `cli`, `tools` (and never `worker` or
  `starter` from `activities`);
- `recon.ops`: anything but `cli`, `tools` and `desk`;
- `recon.desk` (the finance team's web pages, an interface like the command line): anything but
  `cli` and `tools`; only `recon.cli` (which starts it) imports it;
- nothing imports `recon.cli` or `recon.tools` but themselves (and `recon.tools` may use `ops`).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOP = ("recon", "workflows", "activities", "worker", "starter")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def product_modules() -> dict[str, Path]:
    paths = [*ROOT.glob("recon/**/*.py"), *ROOT.glob("workflows/*.py"), *ROOT.glob("activities/*.py"),
             ROOT / "worker.py", ROOT / "starter.py"]
    return {module_name(p): p for p in paths}


def imports_of(path: Path, modules: dict[str, Path]) -> set[str]:
    """The product modules a file imports, anywhere in it (TYPE_CHECKING blocks included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from recon.store import ledger` imports the module recon.store.ledger;
            # `from recon.store.ledger import post_entries` imports recon.store.ledger.
            names = [f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules
                     else node.module for alias in node.names]
        for name in names:
            if name.split(".")[0] not in TOP:
                continue
            # The longest prefix that is a module: `from recon.store import ledger` names a module,
            # `from recon.store.ledger import post_entries` a function of one.
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    return found


def room_of(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "recon" and len(parts) > 1:
        return f"recon.{parts[1]}"
    return parts[0]


LOWER = {"recon.store", "recon.documents", "recon.mail", "recon.runtime", "recon.sources"}
ABOVE_LOWER = {"workflows", "activities", "worker", "starter", "recon.ops", "recon.cli", "recon.tools",
               "recon.desk"}


def broken_rule(importer: str, imported: str) -> str | None:
    """Why `importer` may not import `imported`, or None when it may."""
    src, dst = room_of(importer), room_of(imported)
    if src == dst or dst == "recon":  # within a room, or the bare package
        return None
    if src == "recon.domain":
        return "recon.domain imports nothing else of the product"
    if src in LOWER and dst in ABOVE_LOWER:
        return f"{src} never imports {dst}"
    if src == "workflows" and dst not in ("recon.domain", "activities"):
        return "workflows import only recon.domain (and activities by reference)"
    if dst in ("recon.cli", "recon.tools") and not (src == "recon.cli" and dst == "recon.tools"):
        return f"nothing imports {dst}"
    if dst in ("starter", "worker", "workflows") and src not in ("recon.ops", "recon.cli", "recon.tools",
                                                                 "worker", "starter"):
        return f"only recon.ops, recon.cli and recon.tools import {dst}"
    if dst == "recon.desk" and src != "recon.cli":
        return "only recon.cli imports recon.desk"
    if dst == "recon.ops" and src not in ("recon.cli", "recon.tools", "recon.desk"):
        return "only recon.cli, recon.tools and recon.desk import recon.ops"
    return None


def graph() -> dict[str, set[str]]:
    modules = product_modules()
    return {name: imports_of(path, modules) - {name} for name, path in modules.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_every_import_follows_the_layer_rule() -> None:
    broken = [f"{a} -> {b}: {why}" for a, deps in sorted(graph().items()) for b in sorted(deps)
              if (why := broken_rule(a, b))]
    assert not broken, "imports against the layer rule:\n" + "\n".join(broken)


def test_no_import_circle_late_imports_included() -> None:
    found = circles(graph())
    assert not found, f"import circles: {found}"


def test_recon_has_no_module_at_its_top_level() -> None:
    loose = sorted(p.name for p in (ROOT / "recon").glob("*.py") if p.name != "__init__.py")
    assert not loose, f"put these in a room of recon/: {loose}"


@pytest.mark.parametrize(("importer", "imported"), [
    ("recon.domain.keys", "recon.store.ledger"),
    ("recon.store.ledger", "workflows.nightly"),
    ("recon.runtime.devstack", "worker"),
    ("workflows.nightly", "recon.store.ledger"),
    ("recon.ops.status", "recon.cli.common"),
    ("activities.posting", "starter"),
    ("recon.mail.sender", "recon.ops.decisions"),
])
def test_the_rule_refuses_stray_imports(importer: str, imported: str) -> None:
    """The rule is not vacuous: each of these arrows would be reported."""
    assert broken_rule(importer, imported) is not None


def test_circles_are_found_through_late_imports(tmp_path: Path) -> None:
    """A late import inside a function counts as an edge."""
    a = tmp_path / "a.py"
    a.write_text("def f():\n    from recon.domain import keys\n")
    assert imports_of(a, {"recon.domain.keys": a, "recon.domain": a}) == {"recon.domain.keys"}
    assert circles({"x": {"y"}, "y": {"x"}, "z": {"x"}}) == [["x", "y"]]
