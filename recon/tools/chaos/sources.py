"""`recon chaos --sources`: the chaos night's documents and master data arrive through sources.

Instead of seeding the night straight into the tables, each of the two nights (control, under
faults) gets the same seeded night as the outside world would hand it over (docs/sources.md):

- the ERP's exports (suppliers, then the orders and the receipts, each in a few files) in an
  `erp:` folder, loaded by step 1 through `recon load`'s rules;
- every `MAIL_EVERY`-th invoice as a supplier's mail in a Dovecot mailbox of the night's own (an
  `imap://` source on loopback), the rest as files in a `folder:` drop folder.

Stock levels are the warehouse's count before the night, written directly as the seed writes
them. The faults then land during the fetch too (a share of them is dealt into the fetch's work,
see `schedule_sources`), and optionally the mail server goes away for `MAIL_DOWN_SECONDS`.
The nights are then compared as always, plus every document, message and master-data row.
"""

from __future__ import annotations

import csv
import io
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path

import asyncpg

from recon.domain.errors import Refused
from recon.runtime.imap_server import DovecotServer, deliver, dovecot_path
from recon.sources.spec import parse
from recon.store import seeding
from recon.store import sources as source_store
from recon.tools.chaos.plan import WAREHOUSE, ChaosPlan, Fault
from recon.tools.seed import night_chunks, plan_night, stock_rows
from recon.tools.seed_plan import NightPlan

MAIL_EVERY = 3  # every third invoice comes by mail, the rest through the drop folder
EXPORT_FILES = 4  # the orders and the receipts each in this many files: more loads to crash into
SETTLED_AGO_SECONDS = 60  # the files were written during the day: settled when the night looks


def refuse_without_dovecot(plan: ChaosPlan) -> None:
    """One line, before anything starts, when `--sources` cannot run here."""
    if dovecot_path() is None:
        raise Refused("recon chaos --sources needs Dovecot for its mailbox, and it is not installed "
                      "(Debian: apt-get install dovecot-imapd)")
    if plan.nights > 1 or plan.ledger is not None or plan.documents != "text":
        raise Refused("recon chaos --sources runs one night (--nights 1) of text documents "
                      "(--format text) on the built-in ledger")


@dataclass(frozen=True)
class NightSources:
    """Where one night's world lives."""

    root: Path

    @property
    def exports(self) -> Path:
        return self.root / "erp-exports"

    @property
    def drop(self) -> Path:
        return self.root / "drop"


def start_mail_server(root: Path) -> DovecotServer:
    """The scratch stack's mail server (plain IMAP on loopback), one mailbox owner per night."""
    return DovecotServer(root / "dovecot").start()


async def seed_sources(pool: asyncpg.Pool, plan: ChaosPlan, night: str, root: Path,
                       mail: DovecotServer) -> dict[str, int]:
    """The night's world: exports and drop folder written, mail delivered, sources added to
    `night`'s database. Returns what went where (the same for both nights)."""
    where = NightSources(root / f"sources-{night}")
    where.exports.mkdir(parents=True)
    where.drop.mkdir()
    seeded = plan_night(plan.business_date, WAREHOUSE, plan.invoices, plan.mismatches, plan.seed)
    mails: list[EmailMessage] = []
    orders: list[list[str]] = []
    receipts: list[list[str]] = []
    for n, chunk in enumerate(night_chunks(seeded, fmt="text")):
        heads = {r[0]: r for r in chunk.purchase_orders}  # po -> (po, supplier, warehouse, on)
        orders += [[po, heads[po][1], WAREHOUSE, heads[po][3].isoformat(), sku, desc, str(qty),
                    _rupees(price)] for po, sku, desc, qty, price in chunk.po_lines]
        receipts += [[f"GRN-{n}-{k:07d}", po, sku, wh, str(qty), on.isoformat()]
                     for k, (po, sku, wh, qty, on) in enumerate(chunk.goods_receipts)]
        for invoice_no, supplier_id, _day, _wh, text in chunk.invoices:
            name = f"{invoice_no}.txt"
            if _by_mail(invoice_no):
                mails.append(_mail(seeded, supplier_id, invoice_no, name, text))
            else:
                (where.drop / name).write_text(text)
    _write_exports(where.exports, seeded, orders, receipts)
    async with pool.acquire() as conn, conn.transaction():
        await seeding.write_stock_levels(conn, stock_rows(seeded))
    account = mail.add_account(user=f"ap-{night}")
    delivered = await deliver(account, mails)
    secret = root / f"imap-{night}.password"
    secret.write_text(account.password)
    secret.chmod(0o600)
    settled = os.path.getmtime(where.root) - SETTLED_AGO_SECONDS
    for path in (*where.exports.iterdir(), *where.drop.iterdir()):
        os.utime(path, (settled, settled))
    for spec in (parse(f"erp:{where.exports}"), parse(f"folder:{where.drop}"),
                 parse(account.url(), password_file=secret)):
        await source_store.add(pool, WAREHOUSE, spec.kind, spec.url, spec.settings, spec.secret_ref)
    return {"mails": delivered, "files": len(list(where.drop.iterdir())),
            "exports": len(list(where.exports.iterdir()))}


def _by_mail(invoice_no: str) -> bool:
    return int(invoice_no.rsplit("-", 1)[1]) % MAIL_EVERY == 0


def _rupees(paise: int) -> str:
    return f"{paise // 100}.{paise % 100:02d}"


def _mail(seeded: NightPlan, supplier_id: str, invoice_no: str, name: str, text: str) -> EmailMessage:
    """A supplier's mail with its invoice attached, from the supplier's own address."""
    email = next(s[2] for s in seeded.suppliers if s[0] == supplier_id)
    msg = EmailMessage()
    msg["From"] = email
    msg["To"] = "ap@distributor.example"
    msg["Subject"] = f"Invoice {invoice_no}"
    msg["Message-ID"] = f"<{invoice_no.lower()}@{supplier_id.lower()}.chaos.example>"
    msg.set_content(f"Please find invoice {invoice_no} attached.\n")
    msg.add_attachment(text.encode(), maintype="text", subtype="plain", filename=name)
    return msg


def _write_exports(folder: Path, seeded: NightPlan, orders: list[list[str]],
                   receipts: list[list[str]]) -> None:
    (folder / "suppliers.csv").write_text(_csv(
        ["supplier_id", "name", "email"], [list(s[:3]) for s in seeded.suppliers]))
    head = ["po_number", "supplier_id", "warehouse", "ordered_on", "sku", "description",
            "qty_ordered", "unit_price"]
    for k, part in enumerate(_parts(orders, key=lambda row: row[0]), start=1):
        (folder / f"orders-{k}.csv").write_text(_csv(head, part))
    head = ["receipt_id", "po_number", "sku", "warehouse", "qty_received", "received_on"]
    for k, part in enumerate(_parts(receipts, key=lambda row: row[1]), start=1):
        (folder / f"receipts-{k}.csv").write_text(_csv(head, part))


def _parts(rows: list[list[str]], key) -> Iterator[list[list[str]]]:
    """EXPORT_FILES parts, never splitting one order's lines across two files."""
    size = max(1, -(-len(rows) // EXPORT_FILES))
    part: list[list[str]] = []
    for row in rows:
        if len(part) >= size and key(row) != key(part[-1]):
            yield part
            part = []
        part.append(row)
    if part:
        yield part


def _csv(head: list[str], rows: list[list[str]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(head)
    writer.writerows(rows)
    return out.getvalue()


def schedule_sources(plan: ChaosPlan, control_work: int, fetch_work: int,
                     mail_outage: bool) -> list[Fault]:
    """The night's faults with half of them (at least one) dealt into the fetch: at random
    (seeded) moments within the work the control night's fetch did; the rest between 2 % and
    60 % of the whole night's work. A mail-server outage, when asked for, comes first."""
    rng = random.Random(f"{plan.seed}:sources")
    kinds = (["kill"] * plan.kills + ["freeze"] * plan.freezes
             + ["temporal"] * plan.restarts + ["postgres"] * plan.restarts)
    rng.shuffle(kinds)
    in_fetch = max(1, len(kinds) // 2) if kinds else 0
    fetch_top = max(2, int(0.9 * fetch_work))
    moments = [rng.randint(1, fetch_top) for _ in kinds[:in_fetch]]
    moments += [int(rng.uniform(0.02, 0.6) * control_work) for _ in kinds[in_fetch:]]
    faults = sorted((Fault(due, kind) for due, kind in zip(moments, kinds, strict=True)),
                    key=lambda f: f.due)
    return ([Fault(0, "mail")] if mail_outage else []) + faults
