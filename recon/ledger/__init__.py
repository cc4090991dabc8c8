"""The ledger port: where step 7's adjustments end up besides recon's own `ledger_entries`.

`ledger_entries` stays recon's record of what must be posted (keyed as ever); an outside ledger
is another system, reached after the built-in insert, entry by entry, under the run's fence
(recon/ledger/pusher.py, called once by step 7 and once by the undo), with each entry's state
there kept in `ledger_postings` (recon/store/ledger_postings.py): the outbox pattern of the
mail, applied to the books.

Two kinds of outside ledger, the two the field presents:
- one that only lets you look entries up (Tryton, most on-premise ERPs): `looks_up` is True and
  recon checks by key, then posts, only while it holds the fence;
- one that enforces a key (`Idempotency-Key`, QuickBooks' `requestid`): a repeat is harmless, a
  repeat with another body is refused by the ledger and recon stops on it.

The built-in ledger (the default, and the demo's) has no outside ledger at all: `outside_ledger`
returns None and step 7 is what it always was.
"""

from __future__ import annotations

from recon.ledger.port import (
    KINDS,
    LedgerSettingsRefused,
    OutsideLedger,
    read_secret,
)


def tax_accounts(text: str) -> dict[str, str]:
    """`cgst=CGST sgst=SGST ...` -> {"cgst": "CGST", ...}; a malformed pair is refused."""
    pairs: dict[str, str] = {}
    for item in text.replace(",", " ").split():
        part, sep, code = item.partition("=")
        if not sep or not part.strip() or not code.strip():
            raise LedgerSettingsRefused(
                f"RECON_LEDGER_TAX_ACCOUNTS takes part=code pairs, got {item!r}")
        pairs[part.strip().lower()] = code.strip()
    return pairs


PARTY_BY = ("code", "tax_identifier")


def party_by(text: str) -> str:
    """RECON_LEDGER_PARTY_BY: which field of a Tryton party names a recon supplier."""
    value = (text or "").strip().lower()
    if value not in PARTY_BY:
        raise LedgerSettingsRefused(
            f"RECON_LEDGER_PARTY_BY must be one of {', '.join(PARTY_BY)}, got {text!r}")
    return value


YES_NO = ("true", "false")


def create_parties(text: str) -> bool:
    """Whether a supplier with no Tryton party gets one (RECON_LEDGER_CREATE_PARTIES): one of
    YES_NO, nothing else (a typo must not create parties on a company's books)."""
    value = (text or "").strip().lower()
    if value not in YES_NO:
        raise LedgerSettingsRefused(f"RECON_LEDGER_CREATE_PARTIES must be {' or '.join(YES_NO)}, "
                                    f"got {text!r}")
    return value == YES_NO[0]


def outside_ledger(settings) -> OutsideLedger | None:
    """The outside ledger the settings name, or None for the built-in one."""
    kind = settings.ledger
    if kind not in KINDS:
        raise LedgerSettingsRefused(f"RECON_LEDGER must be one of {', '.join(KINDS)}, got {kind!r}")
    if kind == "builtin":
        return None
    if not settings.ledger_url:
        raise LedgerSettingsRefused(f"RECON_LEDGER={kind} needs RECON_LEDGER_URL")
    secret = read_secret(settings.ledger_secret, settings.ledger_secret_file)
    if kind == "tryton":
        from recon.ledger.tryton import TrytonLedger

        return TrytonLedger(settings.ledger_url, settings.ledger_user, secret or "",
                            payable=settings.ledger_payable, variance=settings.ledger_variance,
                            journal=settings.ledger_journal,
                            taxes=tax_accounts(settings.ledger_tax_accounts),
                            party_by=party_by(settings.ledger_party_by),
                            create_parties=create_parties(settings.ledger_create_parties),
                            batch=int(settings.ledger_batch))
    from recon.ledger.keyed_http import KeyedHttpLedger

    return KeyedHttpLedger(settings.ledger_url, secret)
