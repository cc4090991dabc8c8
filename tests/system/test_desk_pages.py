"""The desk's *a night* and *suppliers and the month* pages (issue 46 §3, docs/desk.md), read over
plain HTTP (httpx against the desk's ASGI app in this process: no passkey is needed to read, so no
browser): a night held at the gate, resumed by a signed decision, shows its steps, its ledger
entries with their state in the outside ledger, what is parked and held, its debit notes with
delivery state, the summary, the model bill and who decided; the month shows its charts as inline
SVG with no script or style in the page, and a supplier's HTML and U+202E as escapes.

The session is signed in the way a passkey sign-in leaves it (`Sessions.rotate`); the sign-in
ceremony itself is tests/system/test_desk.py's.
"""

from __future__ import annotations

import asyncio

import asyncpg
import httpx
from temporalio.client import Client

from recon.desk.app import make_app
from recon.desk.sessions import COOKIE
from tests.approvers import signed
from tests.conftest import Stack
from tests.desk_reader import reading_session
from tests.helpers import inprocess_worker, settings_for, start, wait_awaiting_decision
from tests.system.test_across_nights import _bill, _order, _receive

EVIL = "<b>Evil</b> Traders \u202egnp.exe"
SHOWN = "&lt;b&gt;Evil&lt;/b&gt; Traders \\u202egnp.exe"


async def test_a_night_and_the_month_read_in_words_with_charts_and_escapes(
        stack: Stack, pool: asyncpg.Pool, client: Client, night) -> None:
    day, wh, queue = night
    supplier = f"SP{wh}"
    settings = settings_for(queue)
    async with inprocess_worker(settings):
        # ₹500 over-billed (held at the gate), a bill citing no order (parked), and goods billed
        # before they came (held until the grace days pass)
        await _order(pool, f"PO-{wh}", supplier, wh, day, {"SKU-PG": 10, "SKU-LATE": 4})
        await _receive(pool, f"PO-{wh}", "SKU-PG", wh, 10, day)
        await _bill(pool, f"INV-{wh}", supplier, wh, day, f"PO-{wh}",
                    [("SKU-PG", 10), ("SKU-LATE", 4)], price=15_000)
        await _bill(pool, f"INV-{wh}-X", supplier, wh, day, f"PO-NONE-{wh}", [("SKU-PG", 1)])
        await pool.execute("UPDATE suppliers SET name = $2 WHERE supplier_id = $1", supplier, EVIL)
        handle = await start(client, settings, day, wh)
        await wait_awaiting_decision(handle)
        await handle.execute_update("decide", await signed(pool, stack.state, handle.id, "resume",
                                                           note="agreed with the supplier"))
        await asyncio.wait_for(handle.result(), 120)

    app = make_app(pool, client, "http://localhost:8237", "localhost")
    session = await reading_session(app.state.desk, "asha")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://localhost:8237") as http:
        assert (await http.get("/month")).status_code == 303  # not signed in: to /signin
        http.cookies.set(COOKIE, session.id)
        listed = (await http.get(f"/nights?night={wh}")).text
        assert f'data-run="{handle.id}"' in listed and "completed" in _section(listed, "nights")
        page = (await http.get(f"/night/{handle.id}")).text
        steps = _section(page, "steps")
        assert "2 invoices read" in steps and "first try" in steps, steps
        assert "held for a person" in steps and "handed to a person" in steps, steps  # the gate
        entries = _section(page, "entries")
        assert "₹500" in entries and "recon's own ledger only" in entries, entries
        assert "no purchase order" in page and f"INV-{wh}-X" in page  # parked, with its reason
        held = _section(page, "held")
        assert "SKU-LATE" in held and "if the goods have not come by then" in held, held
        notes = _section(page, "notes")
        assert "debit-note" in notes and "waiting to be sent" in notes and SHOWN in notes, notes
        assert "summary-state" in page and '<pre class="mail" id="summary">' in page
        assert "Model bill:" in _section(page, "bill")
        assert "resume on handover #1 signed by asha with a key file" in _section(page, "signed")
        assert "\u202e" not in page and "<b>Evil" not in page

        month = (await http.get(f"/month?month={day[:7]}&warehouse={wh}")).text
        assert month.count("<svg") == 4 and "<style" not in month
        assert month.count("<script") == 1  # the desk's own /static/desk.js, nothing inline
        assert "\u202e" not in month and "<b>Evil" not in month
        row = _section(month, "suppliers")
        assert SHOWN in row and "₹500" in row and "50.0 %" in row, row
        assert SHOWN in _section(month, "chart-rate")  # the chart's label, escaped too
        assert "no purchase order …" in _section(month, "chart-parked")
        css = await http.get("/charts.css")
        assert css.status_code == 200 and ".pygal-chart" in css.text
        assert "Content-Security-Policy" in (await http.get("/month")).headers

        # filters: another supplier, another warehouse
        other = (await http.get(f"/month?month={day[:7]}&warehouse={wh}&supplier=NOBODY")).text
        assert 'id="suppliers"' not in other and "billed anything from NOBODY" in other
        assert f'data-supplier="{supplier}"' not in (
            await http.get(f"/month?month={day[:7]}&warehouse={wh}x")).text


def _section(page: str, element_id: str) -> str:
    """The element with this id, to its closing tag (tables, lists, figures and paragraphs here
    hold no element of their own kind)."""
    start = page.index(f'id="{element_id}"')
    tag = page[page.rindex("<", 0, start) + 1:start].strip()
    return page[start:page.index(f"</{tag}>", start)]
