"""Step 1 names invoices by reference, Postgres builds them byte for byte as Python does, and a
person's `--park INV-7001` finds the one reference it means (both shapes)."""

from __future__ import annotations

import uuid
from datetime import date

import asyncpg
import pytest

from recon.domain.errors import DecisionRefused
from recon.domain.keys import invoice_ref
from recon.ops.decisions import park_refs
from recon.store.invoices import copy_night


async def _two_suppliers_one_number(pool: asyncpg.Pool) -> tuple[str, str, str, date, str]:
    tag = uuid.uuid4().hex[:8].upper()
    s1, s2, wh, day = f"S1{tag}", f"S2{tag}", f"w{tag.lower()}", date(2026, 10, 13)
    for sid in (s1, s2):
        await pool.execute("INSERT INTO suppliers (supplier_id, name, email) VALUES"
                           " ($1, $1, 'a@b.example')", sid)
    await pool.executemany(
        "INSERT INTO invoices (invoice_no, supplier_id, business_date, warehouse, document)"
        " VALUES ($1, $2, $3, $4, $5)",
        [("INV-7001", s2, day, wh, "b"), ("INV-7001", s1, day, wh, "a"),
         ("INV-6000:A", s1, day, wh, "c")])
    return s1, s2, wh, day, f"recon-{day}-{wh}"


async def test_step_one_names_each_invoice_by_its_reference(pool: asyncpg.Pool) -> None:
    s1, s2, wh, day, wf = await _two_suppliers_one_number(pool)
    assert await copy_night(pool, wf, day, wh) == 3
    rows = await pool.fetch("SELECT seq, invoice_no, supplier_id, document FROM run_invoices"
                            " WHERE workflow_id = $1 ORDER BY seq", wf)
    # by the supplier's number, then the supplier; Postgres's text is Python's invoice_ref
    assert [(r["invoice_no"], r["document"]) for r in rows] == [
        (invoice_ref(s1, "INV-6000:A"), "c"), (invoice_ref(s1, "INV-7001"), "a"),
        (invoice_ref(s2, "INV-7001"), "b")]
    reads = await pool.fetch("SELECT invoice_no FROM invoice_reads WHERE workflow_id = $1", wf)
    assert sorted(r["invoice_no"] for r in reads) == sorted(r["invoice_no"] for r in rows)


async def test_park_finds_the_reference_a_person_means(pool: asyncpg.Pool) -> None:
    s1, s2, wh, day, wf = await _two_suppliers_one_number(pool)
    await copy_night(pool, wf, day, wh)
    assert await park_refs(pool, wf, ["INV-6000:A"]) == [f"{s1}:INV-6000:A"]
    assert await park_refs(pool, wf, [f"{s2}:INV-7001"]) == [f"{s2}:INV-7001"]
    assert await park_refs(pool, wf, ["INV-NOPE"]) == ["INV-NOPE"], "the check refuses it later"
    with pytest.raises(DecisionRefused) as refused:
        await park_refs(pool, wf, ["INV-7001"])
    assert f"{s1}:INV-7001" in str(refused.value) and f"{s2}:INV-7001" in str(refused.value)


async def test_park_takes_a_bare_number_of_a_night_posted_before_references(
        pool: asyncpg.Pool) -> None:
    wf = f"recon-2026-01-01-old{uuid.uuid4().hex[:6]}"
    await pool.execute("INSERT INTO run_invoices (workflow_id, invoice_no, seq, supplier_id,"
                       " document) VALUES ($1, 'INV-42', 1, 'S001', 'x')", wf)
    assert await park_refs(pool, wf, ["INV-42"]) == ["INV-42"]
