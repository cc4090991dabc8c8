"""What each column of a master data file takes: one small parser per kind of value, each
returning the stored value or raising `BadField` with the reason a person can act on.

Pure code: no I/O. The rules are the contract an ERP export fills (README, "Master data in"):
ids are short codes without spaces, dates are ISO `YYYY-MM-DD` (or the format the load declares,
recon/domain/cell_formats.py), quantities are whole numbers,
prices are rupees with at most two decimals and become integer paise exactly (no floats ever
touch them; a PO's unit price may state four, as EN 16931 prices do), units are UN/ECE Rec 20 or
GST UQC codes (recon/domain/units.py), and a GSTIN carries a valid state code, PAN shape and check character.
"""

from __future__ import annotations

import re
from datetime import date
from decimal import ROUND_HALF_UP, Decimal

from recon.domain import units
from recon.domain.cell_formats import CellFormats
from recon.domain.errors import BadField

# Codes people and ERPs use for orders, lines and receipts (`PO/24-25/0001` is common in India).
_CODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_./-]{0,63}")
# A supplier id travels inside keys (`…:debit-note:S001`) and is read back from documents by the
# offline parser, so it is narrower: letters, digits, '-' and '_'.
_SUPPLIER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}")
# The same shape `recon run --warehouse` takes.
_WAREHOUSE = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_UNIT = re.compile(r"[A-Za-z0-9]{1,3}")
_DIGITS = re.compile(r"\d{1,10}")
_RUPEES = re.compile(r"(\d{1,12})(?:\.(\d+))?")
_HSN = re.compile(r"\d{2,8}")
_RATE = re.compile(r"(\d{1,3})(?:\.(\d{1,4}))?%?")
_EMAIL = re.compile(
    r"[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+"
)

DEFAULT_FORMATS = CellFormats()
MAX_INT = 2_147_483_647  # quantities are `integer` columns
# A unit above ₹1 crore is not a wholesale line; the cap keeps qty x price inside bigint paise.
MAX_UNIT_PRICE_PAISE = 1_000_000_000
MAX_TEXT = 200

# GSTIN: 2-digit state code, the holder's PAN (5 letters, 4 digits, 1 letter), the entity
# number (1-9, A-Z), 'Z', and a check character over the first 14.
_GSTIN = re.compile(r"(\d{2})([A-Z]{5}\d{4}[A-Z])([1-9A-Z])Z([0-9A-Z])")
_GSTIN_CHARS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
# States and union territories 01-38, 97 (other territory), 99 (centre jurisdiction).
_STATE_CODES = {f"{n:02d}" for n in range(1, 39)} | {"97", "99"}


def _shown(value: str) -> str:
    """The value as the message quotes it: in double quotes, cut short if long."""
    cut = value if len(value) <= 40 else value[:37] + "..."
    return '"' + cut.replace('"', '\\"') + '"'


def code(value: str) -> str:
    if not _CODE.fullmatch(value):
        raise BadField("must be a code of letters, digits, '-', '_', '.' or '/' (at most 64, no "
                       f"spaces), got {_shown(value)}")
    return value


def supplier_id(value: str) -> str:
    if not _SUPPLIER_ID.fullmatch(value):
        raise BadField("must be a supplier id of letters, digits, '-' or '_' (at most 32), got "
                       f"{_shown(value)}")
    return value


def warehouse(value: str) -> str:
    if not _WAREHOUSE.fullmatch(value):
        raise BadField("must be a warehouse code of a-z, 0-9, '-' or '_' (as `recon run "
                       f"--warehouse` takes), got {_shown(value)}")
    return value


def iso_date(value: str) -> date:
    if _ISO_DATE.fullmatch(value):
        try:
            return date.fromisoformat(value)
        except ValueError:
            pass
    raise BadField(f"must be a date YYYY-MM-DD, got {_shown(value)}")


def dated(value: str, *, formats: CellFormats = DEFAULT_FORMATS) -> date:
    """A date as the file declares it (ISO unless the load or the source says otherwise)."""
    return iso_date(formats.iso_date(value))


def whole_number(value: str, *, minimum: int) -> int:
    """A quantity: digits only (no sign, no decimals, no exponent), from `minimum` up."""
    words = "above 0" if minimum == 1 else f"of {minimum} or more"
    if _DIGITS.fullmatch(value):
        number = int(value)
        if minimum <= number <= MAX_INT:
            return number
    raise BadField(f"must be a whole number {words}, got {_shown(value)}")


def rupees_to_paise(value: str) -> int:
    """`1250.50` -> 125050, exactly: the digits are read as text, never as a float."""
    match = _RUPEES.fullmatch(value)
    if not match:
        raise BadField(f"must be rupees like 1250.50 (digits, a '.' and at most 2 decimals; no "
                       f"sign, commas or ₹), got {_shown(value)}")
    whole, fraction = match.group(1), match.group(2) or ""
    if len(fraction) > 2:
        raise BadField(f"must have at most 2 decimals (whole paise), got {_shown(value)}")
    paise = int(whole) * 100 + int((fraction + "00")[:2])
    if paise > MAX_UNIT_PRICE_PAISE:
        raise BadField(f"must be at most 10000000.00 rupees a unit, got {_shown(value)}")
    return paise


def tax_rate(value: str) -> Decimal | None:
    """Optional: the GST (or VAT) rate a PO line was ordered at, in percent (`18`, `0.25`,
    `5%`); an empty cell states none (the line's rate is then not checked, docs/master-data.md)."""
    if not value:
        return None
    match = _RATE.fullmatch(value)
    if not match or Decimal(value.rstrip("%")) > 100:
        raise BadField(f"must be a tax rate in percent from 0 to 100 with at most 4 decimals "
                       f"(18, 0.25, 5%), got {_shown(value)}")
    return Decimal(value.rstrip("%"))


PRICE_DECIMALS = 4  # EN 16931's net price precision


def unit_price(value: str) -> tuple[int, Decimal | None]:
    """A PO line's price per unit: (paise half up, the exact paise when it has a fraction of a
    paisa, else None). `10.004` -> (1000, 1000.4): the night compares the exact one."""
    match = _RUPEES.fullmatch(value)
    if not match or len(match.group(2) or "") > PRICE_DECIMALS:
        raise BadField(f"must be rupees like 1250.50 (digits, a '.' and at most {PRICE_DECIMALS} "
                       f"decimals; no sign, commas or ₹), got {_shown(value)}")
    exact = Decimal(value).scaleb(2)
    paise = int(exact.quantize(Decimal(1), rounding=ROUND_HALF_UP))
    if exact > MAX_UNIT_PRICE_PAISE:
        raise BadField(f"must be at most 10000000.00 rupees a unit, got {_shown(value)}")
    return paise, (None if exact == paise else units.plain(exact))


def priced(value: str, *, formats: CellFormats = DEFAULT_FORMATS) -> tuple[int, Decimal | None]:
    """A unit price as the file declares it (Indian grouping taken only when declared)."""
    return unit_price(formats.plain_amount(value))


def quantity_per(value: str) -> Decimal:
    """How many base units one pack holds: a positive number, decimals allowed (a bag of 2.5 KGM)."""
    if re.fullmatch(r"\d{1,9}(?:\.\d{1,6})?", value) and Decimal(value) > 0:
        return units.plain(Decimal(value))
    raise BadField(f"must be a number above 0 like 12 or 2.5, got {_shown(value)}")


def unit_code(value: str) -> str:
    """Optional: a unit code (UN/ECE Rec 20 or GST UQC), stored canonical; empty is pieces."""
    if not value:
        return units.PIECE
    if not _UNIT.fullmatch(value):
        raise BadField("must be a unit code of 1-3 letters or digits (UN/ECE Rec 20 like C62, "
                       f"DZN, KGM, BX or GST UQC like PCS, DOZ, KGS, BOX), got {_shown(value)}")
    return units.canonical(value) or units.PIECE


def required_tax_rate(value: str) -> Decimal:
    rate = tax_rate(value)
    if rate is None:
        raise BadField("must be a tax rate in percent (18, 0.25, 5%), got nothing")
    return rate


def hsn(value: str) -> str:
    """An HSN (or SAC) code: 2 to 8 digits, the chapter to the tariff item."""
    if not _HSN.fullmatch(value):
        raise BadField(f"must be an HSN code of 2 to 8 digits (1006, 10063020), got {_shown(value)}")
    return value


def text(value: str) -> str:
    if not value:
        raise BadField("must not be empty")
    if len(value) > MAX_TEXT:
        raise BadField(f"must be at most {MAX_TEXT} characters, got {len(value)}")
    return value


def email(value: str) -> str:
    if len(value) > 254 or not _EMAIL.fullmatch(value):
        raise BadField(f"must be one e-mail address like accounts@supplier.example, got "
                       f"{_shown(value)}")
    return value


def gstin_check_character(first14: str) -> str:
    """The GSTIN check character: over the first 14 characters, each character's value (0-9,
    A-Z = 10-35) times a factor alternating 1, 2; each product adds its quotient and remainder
    by 36; the check is the value that brings the sum to a multiple of 36."""
    total = 0
    for i, ch in enumerate(first14):
        product = _GSTIN_CHARS.index(ch) * (1 if i % 2 == 0 else 2)
        total += product // 36 + product % 36
    return _GSTIN_CHARS[(36 - total % 36) % 36]


def currency(value: str) -> str | None:
    """Optional: the ISO 4217 code a supplier bills in (amounts are kept in its minor unit, never
    converted). An empty cell is none given: a new supplier bills in ₹, a stored one keeps its."""
    if not value:
        return None
    upper = value.strip().upper()
    if not re.fullmatch(r"[A-Z]{3}", upper):
        raise BadField(f"must be an ISO currency code like INR or EUR, got {_shown(value)}")
    return upper


def gstin(value: str) -> str | None:
    """Optional: an empty cell is no GSTIN. Letters are taken in capitals."""
    if not value:
        return None
    upper = value.upper()
    match = _GSTIN.fullmatch(upper)
    if not match:
        raise BadField("must be a 15-character GSTIN (state code, PAN, entity number, 'Z', "
                       f"check character), got {_shown(value)}")
    if match.group(1) not in _STATE_CODES:
        raise BadField(f"state code {match.group(1)} is not an Indian state or territory, got "
                       f"{_shown(value)}")
    expected = gstin_check_character(upper[:14])
    if upper[14] != expected:
        raise BadField(f"check character is {upper[14]}, the GSTIN checksum gives {expected}: "
                       f"{_shown(value)} has a typing error")
    return upper


def shown(value: str) -> str:
    """How messages of the load quote a value the file gave."""
    return _shown(value)
