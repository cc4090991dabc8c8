"""An ERP's export folder: which file is which master data, by its name, and in what order a
night loads them. Pure code.

`suppliers*.csv`, `orders*.csv`, `receipts*.csv`, `conversions*.csv` (or `unit_conversions*.csv`)
and `hsn*rates*.csv`, case ignored. They load in dependency order (a PO names its supplier, a
receipt its PO): suppliers, orders, receipts, conversions, HSN rates; files of one kind in name
order. A file whose name matches none is left where it is and named by `recon source test`.
"""

from __future__ import annotations

import fnmatch

# (kind as `recon load` names it, the loader in recon/documents/master_load.py, name patterns)
KINDS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("suppliers", "load_suppliers", ("suppliers*.csv",)),
    ("orders", "load_orders", ("orders*.csv",)),
    ("receipts", "load_receipts", ("receipts*.csv",)),
    ("conversions", "load_conversions", ("conversions*.csv", "unit_conversions*.csv")),
    ("hsn-rates", "load_hsn_rates", ("hsn*rates*.csv",)),
)
ORDER = {kind: n for n, (kind, _loader, _patterns) in enumerate(KINDS)}
LOADER = {kind: loader for kind, loader, _patterns in KINDS}


def kind_of(name: str) -> str | None:
    """The master data a file of this name holds, or None."""
    lower = name.lower()
    for kind, _loader, patterns in KINDS:
        if any(fnmatch.fnmatchcase(lower, p) for p in patterns):
            return kind
    return None


def load_order(names: list[str]) -> list[tuple[str, str]]:
    """(kind, name) of the files that hold master data, in the order they must load."""
    found = [(kind, name) for name in names if (kind := kind_of(name)) is not None]
    return sorted(found, key=lambda kn: (ORDER[kn[0]], kn[1]))
