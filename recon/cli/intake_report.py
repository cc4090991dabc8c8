"""What `recon import` prints, and `recon supplier`'s reads and writes of a supplier's ids."""

from __future__ import annotations

import re

import asyncpg

from recon.documents import master_fields
from recon.documents.importer import ImportResult
from recon.documents.inbox import InboxResult
from recon.domain.errors import BadField, Refused
from recon.domain.wording import count
from recon.store import supplier_ids

_CURRENCY = re.compile(r"[A-Z]{3}")


def report(result: ImportResult | InboxResult, day: str, warehouse: str) -> list[str]:
    intake = result.intake
    assert intake is not None
    # `formats` counts every document read (credit notes too), so it is said as documents
    formats = ", ".join(f"{name} {n}" for name, n in intake.formats.items())
    lines = [f"imported {count(intake.imported, 'invoice')} for {day} at {warehouse}"
             + (f"; {intake.skipped_existing} already there" if intake.skipped_existing else "")
             + (f" (documents read by format: {formats})" if formats else "")]
    if intake.replaced:
        lines.append(f"replaced {len(intake.replaced)} (another document under the same number, "
                     "--replace): " + "; ".join(intake.replaced[:5])
                     + (" ..." if len(intake.replaced) > 5 else ""))
    if intake.credit_notes or intake.credit_notes_existing:
        lines.append(f"credit notes kept apart (not reconciled): {intake.credit_notes}"
                     + (f"; {intake.credit_notes_existing} already there"
                        if intake.credit_notes_existing else ""))
    if intake.to_park:
        lines.append(f"{len(intake.to_park)} will be parked by the run as unreadable: "
                     + "; ".join(intake.to_park[:5]) + (" ..." if len(intake.to_park) > 5 else ""))
    if isinstance(result, InboxResult):
        lines.append(f"messages: {result.messages} imported, {result.already_seen} seen before, "
                     f"{len(result.unreadable)} filed under .Unreadable")
        lines += [f"unreadable: {u}" for u in result.unreadable]
    elif result.skipped_files:
        lines.append(f"skipped {len(result.skipped_files)} not invoice files: "
                     + ", ".join(result.skipped_files))
    return lines


async def set_supplier(pool: asyncpg.Pool, supplier_id: str, gstin: str | None,
                       vat_id: str | None, endpoint: str | None, currency: str | None) -> str:
    gstin = gstin.strip().upper() if gstin else None
    vat_id = vat_id.replace(" ", "").upper() if vat_id else None
    endpoint = endpoint.strip().lower() if endpoint else None
    currency = currency.strip().upper() if currency else None
    if gstin:
        try:
            gstin = master_fields.gstin(gstin)  # the same rule as `recon load suppliers`
        except BadField as exc:
            raise Refused(f"--gstin {exc}") from None
    if currency and not _CURRENCY.fullmatch(currency):
        raise Refused(f"--currency must be an ISO code like INR or EUR, got {currency!r}")
    if endpoint and ":" not in endpoint:
        raise Refused(f"--endpoint must be scheme:id, e.g. 0088:7300010000001, got {endpoint!r}")
    async with pool.acquire() as conn, conn.transaction():
        for column, value in (("gstin", gstin), ("vat_id", vat_id), ("peppol_endpoint", endpoint)):
            holder = await supplier_ids.holder_of(conn, column, value) if value else None
            if holder and holder != supplier_id:
                raise Refused(f"{value} is already {holder}'s {column}")
        row = await supplier_ids.set_supplier_ids(conn, supplier_id, gstin, vat_id, endpoint,
                                                  currency)
    if row is None:
        raise Refused(f"unknown supplier {supplier_id}")
    return (f"{row['supplier_id']} {row['name']}: GSTIN {row['gstin'] or '-'}, VAT id "
            f"{row['vat_id'] or '-'}, endpoint {row['peppol_endpoint'] or '-'}, bills in "
            f"{row['currency']}")
