"""The rooms of docs/architecture.md hold: every SQL statement of the product is in recon/store, and
no module of the product or of bench/ grows past 500 lines (a smell detector: the rooms organise,
the cap only flags a file that outgrew its one idea)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = [*ROOT.glob("recon/**/*.py"), *ROOT.glob("activities/*.py"), *ROOT.glob("workflows/*.py"),
           ROOT / "worker.py", ROOT / "starter.py"]
# bench/ is held to the same size as the product (its SQL is its own: it measures the store).
SIZED = [*PRODUCT, *ROOT.glob("bench/*.py")]
SQL = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE)\b")


def test_no_sql_outside_the_store() -> None:
    outside = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in PRODUCT if "store" not in path.relative_to(ROOT).parts
        for n, line in enumerate(path.read_text().splitlines(), 1) if SQL.search(line)
    ]
    assert not outside, "SQL belongs in recon/store:\n" + "\n".join(outside)


def test_no_module_over_500_lines() -> None:
    long = {str(p.relative_to(ROOT)): n for p in SIZED
            if (n := len(p.read_text().splitlines())) > 500}
    assert not long, f"split these modules: {long}"
