"""Units of measure: which codes name the same unit, the conversions that are facts, and how an
invoice line billed in one unit is restated in its PO line's unit, exactly.

Codes are UN/ECE Recommendation 20 (what UBL `InvoicedQuantity@unitCode` and CII
`BilledQuantity@unitCode` carry) and the GST UQC list (what an e-invoice's `Unit` carries). Each
code is read through `SYNONYMS` to one canonical code (the table is stated in
docs/master-data.md). A conversion that is a fact (a dozen is 12, a kilogram 1000 grams) is
built in (`FACTS`); a box, case, pack, carton or bag is the supplier's packing, so how many it
holds is master data per supplier and SKU (`unit_conversions.csv`), never a constant.

Pure code: numbers are `Fraction` and `Decimal`, never floats.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

PIECE = "C62"  # "one": a PO line that names no unit counts pieces

# Spellings of one unit -> its canonical code. Rec 20 codes map to themselves unless listed.
SYNONYMS: Mapping[str, str] = {
    # pieces: Rec 20 one/piece/each, the retired PCE, GST numbers/pieces/units
    "C62": PIECE, "H87": PIECE, "PCE": PIECE, "EA": PIECE, "NAR": PIECE,
    "PCS": PIECE, "NOS": PIECE, "UNT": PIECE,
    "DZN": "DZN", "DOZ": "DZN", "DPC": "DZN",  # dozen (GST DOZ, Rec 20 dozen piece)
    "GRO": "GRO", "GRS": "GRO",  # gross
    "KGM": "KGM", "KGS": "KGM",  # kilogram
    "GRM": "GRM", "GMS": "GRM",  # gram
    "TNE": "TNE", "MTS": "TNE", "TON": "TNE",  # tonne (GST metric ton, tonnes)
    "DTN": "DTN", "QTL": "DTN",  # quintal = decitonne
    "LTR": "LTR", "MLT": "MLT",
    "MTR": "MTR", "CMT": "CMT", "CMS": "CMT", "MMT": "MMT", "KMT": "KMT", "KME": "KMT",
    "MTK": "MTK", "SQM": "MTK", "MTQ": "MTQ", "CBM": "MTQ",
    # the supplier's packing: how many one holds is master data
    "BX": "BX", "BOX": "BX", "CS": "CS", "CT": "CT", "CTN": "CT", "PK": "PK", "PAC": "PK",
    "BG": "BG", "BAG": "BG",
    # Rec 21 package types as Rec 20 writes them (X + code): a piece, a box, a carton...
    "XPP": PIECE, "XBX": "BX", "XCT": "CT", "XCS": "CS", "XPK": "PK", "XBG": "BG",
}

# A supplier's packing: how many one holds is master data, so one with no stated size is parked.
PACKS = frozenset({"BX", "CS", "CT", "PK", "BG"})

# Conversions that are facts: one of the first unit is `per` of the second.
FACTS: tuple[tuple[str, int, str], ...] = (
    ("DZN", 12, PIECE), ("GRO", 144, PIECE), ("GRO", 12, "DZN"),
    ("KGM", 1000, "GRM"), ("GRM", 1000, "MGM"), ("TNE", 1000, "KGM"), ("DTN", 100, "KGM"),
    ("LTR", 1000, "MLT"), ("MTQ", 1000, "LTR"),
    ("KMT", 1000, "MTR"), ("MTR", 100, "CMT"), ("MTR", 1000, "MMT"), ("CMT", 10, "MMT"),
)

# A price per PO unit that does not terminate (a box of 12 billed at ₹100 is ₹8.333... a piece)
# is kept to this many decimals of the minor unit, half up; every terminating one exactly.
PRICE_DECIMALS = 6


def canonical(code: str | None) -> str | None:
    """The canonical code of a stated unit (upper case, spaces trimmed); None for none stated."""
    if code is None or not code.strip():
        return None
    text = code.strip().upper()
    return SYNONYMS.get(text, text)


def canonical_sql(column: str) -> str:
    """`canonical` as one SQL expression over `column` (the store filters by it)."""
    cases = " ".join(f"WHEN '{k}' THEN '{v}'" for k, v in sorted(SYNONYMS.items()) if k != v)
    return f"(CASE upper(btrim({column})) {cases} ELSE upper(btrim({column})) END)"


def finer(code: str | None, qty: Decimal) -> tuple[str, int] | None:
    """A quantity with decimals (2.5 KGM) as a whole number of the first finer unit the facts
    give (2500 GRM): (that unit, how many of it one `code` is), or None when none does."""
    todo = [(canonical(code), 1)]
    while todo:
        unit, ratio = todo.pop(0)
        for big, per, small in FACTS:
            if big == unit:
                scaled = qty * ratio * per
                if scaled == scaled.to_integral_value():
                    return small, ratio * per
                todo.append((small, ratio * per))
    return None


@dataclass(frozen=True)
class Pack:
    """A supplier's packing of one SKU, from `unit_conversions.csv`: one `unit` holds `per`
    `base_unit`."""

    unit: str
    per: Decimal
    base_unit: str


def factor(billed: str, ordered: str, packs: Iterable[Pack] = ()) -> Fraction | None:
    """How many `ordered` units one `billed` unit is, through the facts and the supplier's packs
    (both ways: a piece is 1/12 of a dozen), or None when nothing connects them. Both codes
    canonical."""
    if billed == ordered:
        return Fraction(1)
    edges: dict[str, list[tuple[str, Fraction]]] = {}
    for unit, per, base in [*FACTS, *((p.unit, p.per, p.base_unit) for p in packs)]:
        ratio = Fraction(per)
        edges.setdefault(unit, []).append((base, ratio))
        edges.setdefault(base, []).append((unit, 1 / ratio))
    seen, todo = {billed: Fraction(1)}, [billed]
    while todo:
        here = todo.pop(0)
        for there, ratio in edges.get(here, ()):
            if there not in seen:
                seen[there] = seen[here] * ratio
                if there == ordered:
                    return seen[there]
                todo.append(there)
    return None


def taken_as_billed(billed: str, ordered: str, stated: bool, packs: Iterable[Pack] = ()) -> bool:
    """An order line that states no unit counts pieces, so a dozen, a gross or a supplier's pack
    is restated in pieces and a pack of no stated size is parked. A unit that measures rather
    than counts (KGM, LTR, HUR, DAY, a lump sum) connects to no piece: against such a line it is
    the order's unit as billed, compared as before units were read, since the order gave none to
    convert it to. A line that states its unit takes nothing as billed: convert or park."""
    return (not stated and ordered == PIECE and billed not in PACKS
            and factor(billed, PIECE, packs) is None)


@dataclass(frozen=True)
class Restated:
    """An invoice line in its PO line's unit: a whole quantity and the exact price per unit (in
    minor units), or why it cannot be (`problem`)."""

    qty: int = 0
    price: Decimal = Decimal(0)
    problem: str | None = None


def restate(qty: int, price: Decimal, billed: str, ordered: str,
            packs: Iterable[Pack] = ()) -> Restated:
    """`qty` of `billed` at `price` (minor units per billed unit) as a quantity of `ordered`: the
    amount stays what was billed, the price is that amount over the new quantity."""
    ratio = factor(billed, ordered, packs)
    if ratio is None:
        return Restated(problem=f"no conversion from {billed} to {ordered}")
    units = qty * ratio
    if units.denominator != 1:
        shown = f"{Decimal(units.numerator) / Decimal(units.denominator):.4f}".rstrip("0")
        return Restated(problem=f"{qty} {billed} is {shown.rstrip('.')} {ordered}, "
                                "not a whole number")
    new_qty = int(units)
    per_unit = Fraction(price) * qty / new_qty
    return Restated(qty=new_qty, price=exact_decimal(per_unit))


def exact_decimal(value: Fraction) -> Decimal:
    """A Fraction as a Decimal: exactly when it terminates within `PRICE_DECIMALS` places,
    otherwise half up to that many."""
    scaled = value * 10**PRICE_DECIMALS
    if scaled.denominator == 1:
        return plain(Decimal(scaled.numerator).scaleb(-PRICE_DECIMALS))
    quotient = Decimal(value.numerator) / Decimal(value.denominator)
    return plain(quotient.quantize(Decimal(1).scaleb(-PRICE_DECIMALS), rounding=ROUND_HALF_UP))


def plain(value: Decimal) -> Decimal:
    """Without trailing zeros and never in exponent form (1000.400 -> 1000.4, 1E+3 -> 1000)."""
    normal = value.normalize()
    return normal.quantize(Decimal(1)) if normal.as_tuple().exponent > 0 else normal
