"""One price rule, two readers of its one text (recon.domain.price_rule): `MatchPolicy.tolerates`
and the SQL step 6 applies (`weighing._PRICE_TOLERATED`) agree on every case of a grid, with each
tolerance set or not."""

from __future__ import annotations

import itertools

import asyncpg
import pytest

from recon.domain.match_policy import MatchPolicy
from recon.store.weighing import _PRICE_TOLERATED

PRICES = [(10_000, 10_000), (10_050, 10_000), (10_100, 10_000), (10_101, 10_000),
          (9_899, 10_000), (9_900, 10_000), (10_200, 10_000), (1, 0), (0, 5), (250, 249)]


@pytest.mark.parametrize("paise, percent", list(itertools.product([0, 1, 100, 150], [0, 0.5, 1, 2.5])))
async def test_python_and_sql_tolerate_the_same_prices(pool: asyncpg.Pool, paise: int,
                                                       percent: float) -> None:
    policy = MatchPolicy(receipt_grace_days=3, price_tolerance_paise=paise,
                         price_tolerance_percent=percent)
    rows = await pool.fetch(
        "SELECT invoice_price_paise, po_price_paise, "
        "  invoice_price_paise = po_price_paise OR " + _PRICE_TOLERATED + " AS tolerated"
        " FROM unnest($1::bigint[], $2::bigint[]) AS x(invoice_price_paise, po_price_paise)",
        [a for a, _ in PRICES], [b for _, b in PRICES], paise, percent)
    for row in rows:
        assert row["tolerated"] == policy.tolerates(row["invoice_price_paise"],
                                                    row["po_price_paise"]), dict(row)


def test_the_stated_rule() -> None:
    assert not MatchPolicy().tolerates(10_001, 10_000), "no tolerance by default"
    assert MatchPolicy(price_tolerance_paise=100).tolerates(10_100, 10_000)
    assert not MatchPolicy(price_tolerance_paise=100).tolerates(10_101, 10_000)
    assert MatchPolicy(price_tolerance_percent=1).tolerates(10_100, 10_000)
    both = MatchPolicy(price_tolerance_paise=50, price_tolerance_percent=1)
    assert both.tolerates(10_050, 10_000) and not both.tolerates(10_051, 10_000), "the stricter"
