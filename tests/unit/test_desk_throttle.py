"""The desk's sign-in throttle (recon/desk/throttle.py): at most N attempts per client in any
window; other clients are not slowed; the window slides."""

from __future__ import annotations

from recon.desk.throttle import Throttle


def test_attempts_over_the_limit_wait_for_the_window() -> None:
    now = [0.0]
    throttle = Throttle(limit=3, window=60, clock=lambda: now[0])
    allowed = []
    for at in (0, 10, 20, 30):
        now[0] = at
        allowed.append(throttle.allow("10.0.0.1"))
    assert allowed == [True, True, True, False]
    assert throttle.allow("10.0.0.2"), "another client is not slowed"
    now[0] = 59.9
    assert not throttle.allow("10.0.0.1")
    now[0] = 60.0
    assert throttle.allow("10.0.0.1"), "the attempt at 0 left the window"
    assert not throttle.allow("10.0.0.1"), "those at 10, 20 and 60 are still in it"
