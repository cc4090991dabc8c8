"""One noun per feature in every room (docs/architecture.md, "One noun per feature").

The feature table is the source: each module it names must exist and hold its noun in its file
name, and no module of the product, its tools or its tests may be named with a retired synonym.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "docs" / "architecture.md"
ROOMS = ("recon", "workflows", "activities", "tests", "bench")


def feature_table(text: str) -> dict[str, list[str]]:
    """noun -> the modules the table names for it."""
    section = text.split("## One noun per feature", 1)[1]
    table: dict[str, list[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] not in ("noun", "---"):
            table[cells[0]] = re.findall(r"`([^`]+\.py)`", cells[2])
    return table


def retired_synonyms(text: str) -> list[str]:
    paragraph = text.split("Retired synonyms", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"`([a-z_]+)`", paragraph.split(" outside ", 1)[0]) + ["reading"]


def stray_modules(paths: list[Path], synonyms: list[str]) -> list[str]:
    """Modules whose name holds a retired synonym (`reading` is a format reader's word only)."""
    stray = []
    for path in paths:
        rel = path.relative_to(ROOT).as_posix()
        for word in synonyms:
            if word in path.stem.lower() and not (word == "reading" and
                                                  rel.startswith("recon/documents/formats/")):
                stray.append(f"{rel} ({word})")
    return stray


def all_modules() -> list[Path]:
    return [p for room in ROOMS for p in (ROOT / room).rglob("*.py")]


def test_the_table_names_the_features() -> None:
    table = feature_table(TABLE.read_text())
    assert {"undo", "decisions", "bounces", "weighing", "handovers"} <= set(table)
    assert all(table.values()), "every noun names at least one module"


def test_every_module_of_the_table_exists_and_holds_its_noun() -> None:
    wrong = []
    for noun, modules in feature_table(TABLE.read_text()).items():
        stem = noun.replace(" ", "_").rstrip("s")  # "decisions" holds "decision", "seed" "seed"
        for module in modules:
            path = ROOT / module
            if not path.is_file():
                wrong.append(f"{noun}: {module} is missing")
            elif stem not in path.relative_to(ROOT).as_posix().lower():
                wrong.append(f"{noun}: {module} does not hold its noun")
    assert not wrong, "\n".join(wrong)


def test_no_module_is_named_with_a_retired_synonym() -> None:
    stray = stray_modules(all_modules(), retired_synonyms(TABLE.read_text()))
    assert not stray, "one noun per feature: rename these\n" + "\n".join(stray)


def test_a_stray_synonym_is_found(tmp_path: Path) -> None:
    """The check is not vacuous: a store module named the old way would be reported."""
    synonyms = retired_synonyms(TABLE.read_text())
    assert {"reversal", "approval", "comparing", "mail_handover", "reading"} <= set(synonyms)
    stray = ROOT / "recon" / "store" / "reversals.py"
    fine = ROOT / "recon" / "documents" / "formats" / "reading.py"
    assert stray_modules([stray, fine], synonyms) == ["recon/store/reversals.py (reversal)"]
