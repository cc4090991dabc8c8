"""recon's suppliers and the Tryton parties the accountant keeps for them: the map
`recon ledger check` shows before a night posts anything.

A supplier's adjustments belong on the party the accountant reconciles and pays from, found by
the field RECON_LEDGER_PARTY_BY names:
the party's code is the supplier id, or the party's tax identifier is the supplier's GSTIN.
A supplier with no party is listed with the words the night would hand over with
(`TrytonLedger._party`), so the accountant can add the parties first.
"""

from __future__ import annotations

from dataclasses import dataclass

from recon.ledger.port import LedgerRefused
from recon.ledger.tryton import TrytonLedger


@dataclass(frozen=True)
class PartyOf:
    """One supplier and its Tryton party, or why it has none."""

    supplier_id: str
    name: str
    party: dict | None  # {id, name, code}
    missing: str = ""  # the refusal a night would hand over with

    def line(self) -> str:
        if self.party is None:
            return f"  {self.missing}"
        code = self.party.get("code") or "no code"
        return (f"  {self.supplier_id} ({self.name}) -> party {self.party['id']} "
                f"\"{self.party['name']}\" ({code})")


async def map_parties(ledger: TrytonLedger, suppliers: list) -> list[PartyOf]:
    """Each of `suppliers` ((supplier_id, name, gstin) rows) with its Tryton party."""
    mapped = []
    for row in suppliers:
        sid, name, gstin = row["supplier_id"], row["name"] or "", row["gstin"] or None
        try:
            party = await ledger.party_of(sid, name, gstin)
            missing = "" if party else ledger.missing_party(sid, name, gstin)
        except LedgerRefused as exc:  # no GSTIN to look by, or two parties for one supplier
            party, missing = None, str(exc)
        mapped.append(PartyOf(sid, name, party, missing))
    return mapped
