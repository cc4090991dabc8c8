"""The ledger port's words: what an outside ledger is told, what it answers, how it fails
(recon/ledger/__init__.py says why there are two kinds)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Protocol

from recon.domain.errors import Refusal

KINDS = ("builtin", "tryton", "http")


class LedgerRefused(Exception):
    """The outside ledger refused an entry (a closed period, an unknown account, ...): not
    temporary and not recon's to fix; the step hands over with the ledger's own words."""


class LedgerDisagrees(Exception):
    """The outside ledger holds the key with another amount or body: a bug, never a duplicate.
    The message names both."""


class LedgerSettingsRefused(Refusal, ValueError):
    """RECON_LEDGER and its companions do not name a usable ledger; one line."""


@dataclass(frozen=True)
class Entry:
    """One entry as an outside ledger is told it: the key is recon's reference."""

    key: str
    amount_paise: int  # > 0: the supplier owes us back (debit payable, credit variance)
    supplier_id: str
    invoice_no: str
    line_no: int | None
    memo: str
    business_date: date
    reverses: str | None = None  # the original's key: this entry cancels that one
    # A claim with tax (docs/books.md "Tax"): its taxable value and each tax part by name
    # (`cgst`, `sgst`, `igst`, `cess`, `vat`), adding up to `amount_paise`. None: no tax parts.
    taxable_paise: int | None = None
    taxes: tuple[tuple[str, int], ...] = ()
    # the amounts' currency (`ledger_entries.currency`, the supplier's), in its minor unit: an
    # outside ledger is told it, and one that books in ₹ alone refuses another (no rate assumed)
    currency: str = "INR"
    # Who the supplier is in recon's suppliers table: how the ledger finds its own party for it
    # (RECON_LEDGER_PARTY_BY) and names it when it has none. Not part of a keyed ledger's body.
    supplier_name: str = ""
    supplier_gstin: str | None = None


@dataclass(frozen=True)
class Found:
    """An entry the outside ledger holds under a key."""

    key: str
    outside_id: str
    amount_paise: int


class OutsideLedger(Protocol):
    name: str
    looks_up: bool  # True: check-then-post under the fence; False: the ledger enforces the key

    async def find(self, keys: list[str]) -> dict[str, list[Found]]:
        """What the ledger holds under each key (every key of `keys` is in the answer)."""

    async def post(self, entry: Entry) -> str:
        """Post one entry; returns the ledger's id for it."""

    async def cancel(self, entry: Entry, original_id: str) -> str:
        """Cancel the original (`entry.reverses`, its id there) the ledger's way, under
        `entry.key`; returns the cancelling entry's id."""

    async def close(self) -> None: ...


def read_secret(value: str | None, path: str | None) -> str | None:
    """The ledger's password or key: from its file (one line) when named, else the variable."""
    if path:
        try:
            return Path(path).expanduser().read_text().strip()
        except OSError as exc:
            raise LedgerSettingsRefused(f"RECON_LEDGER_SECRET_FILE {path}: {exc.strerror}") from None
    return value
