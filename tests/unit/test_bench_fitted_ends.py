"""The bench's fitted line over a run of nights (bench/night_trend.py `fitted_ends`): one slow night at
either end must not read as a month that made nights dearer."""

from __future__ import annotations

import pytest

from bench.night_trend import fitted_ends


def test_a_steady_climb_is_read_end_to_end() -> None:
    first, last = fitted_ends([2.0, 2.1, 2.2, 2.3, 2.4])
    assert first == pytest.approx(2.0)
    assert last == pytest.approx(2.4)


def test_one_busy_night_at_the_end_moves_the_line_less_than_the_last_night() -> None:
    seconds = [2.0] * 29 + [3.0]  # +50 % last against first
    first, last = fitted_ends(seconds)
    assert (last - first) / first < 0.15
    assert last > first  # but it still counts
