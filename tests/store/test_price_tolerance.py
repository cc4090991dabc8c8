"""One price rule, two readers of its one text (recon.domain.price_rule): `MatchPolicy.tolerates`
and the SQL step 6 applies (`weighing._PRICE_TOLERATED`) agree on every case of a grid, with each
tolerance set or not."""

from __future__ import annotations

import itertools
from decimal import Decimal

import asyncpg
import pytest

from recon.domain.match_policy import MatchPolicy
from recon.store.weighing import _PRICE_TOLERATED

PRICES = [(10_000, 10_000), (10_050, 10_000), (10_100, 10_000), (10_101, 10_000),
          (9_899, 10_000), (9_900, 10_000), (10_200, 10_000), (1, 0), (0, 5), (250, 249),
          # exact prices: a fraction of a paisa either side (issue 37)
          (Decimal("1000.4"), 1_000), (Decimal("10100.4"), 10_000), (Decimal("10100"), 10_000),
          (Decimal("1001.0001"), Decimal("1000.0001")), (Decimal("10050.25"), 10_000),
          (Decimal("999.4"), Decimal("1000.4"))]


@pytest.mark.parametrize("paise, percent", list(itertools.product([0, 1, 100, 150], [0, 0.5, 1, 2.5])))
async def test_python_and_sql_tolerate_the_same_prices(pool: asyncpg.Pool, paise: int,
                                                       percent: float) -> None:
    policy = MatchPolicy(receipt_grace_days=3, price_tolerance_paise=paise,
                         price_tolerance_percent=percent)
    # step 6's columns: the integer paise beside the exact price (NULL when it is whole)
    rows = await pool.fetch(
        "SELECT invoice_price_exact, po_price_exact, " + _PRICE_TOLERATED + " AS tolerated"
        " FROM (SELECT round(a)::bigint AS invoice_price_paise, round(b)::bigint AS po_price_paise,"
        "       nullif(a, round(a)) AS invoice_price_exact, nullif(b, round(b)) AS po_price_exact"
        "       FROM unnest($1::numeric[], $2::numeric[]) AS x(a, b)) c",
        [Decimal(a) for a, _ in PRICES], [Decimal(b) for _, b in PRICES], paise, percent)
    for row, (price, po_price) in zip(rows, PRICES, strict=True):
        assert row["tolerated"] == policy.tolerates(price, po_price), (price, po_price, dict(row))


def test_the_stated_rule() -> None:
    assert not MatchPolicy().tolerates(10_001, 10_000), "no tolerance by default"
    assert not MatchPolicy().tolerates(Decimal("1000.4"), 1_000), "a fraction of a paisa counts"
    assert MatchPolicy(price_tolerance_paise=1).tolerates(Decimal("1001.4"), Decimal("1000.4"))
    assert MatchPolicy(price_tolerance_paise=100).tolerates(10_100, 10_000)
    assert not MatchPolicy(price_tolerance_paise=100).tolerates(10_101, 10_000)
    assert MatchPolicy(price_tolerance_percent=1).tolerates(10_100, 10_000)
    both = MatchPolicy(price_tolerance_paise=50, price_tolerance_percent=1)
    assert both.tolerates(10_050, 10_000) and not both.tolerates(10_051, 10_000), "the stricter"
