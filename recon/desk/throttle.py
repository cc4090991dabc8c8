"""Sign-in and enrollment attempts per client, at most `limit` in any `window` seconds: a guesser
of enrollment tokens or a flood of challenges is slowed, a person never notices. Behind a proxy
every client is the proxy (the desk reads no forwarded headers), so the limit is then the desk's
as a whole, which is still a limit."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

ATTEMPTS = 30
WINDOW_SECONDS = 60.0
MAX_CLIENTS = 10_000


class Throttle:
    def __init__(self, limit: int = ATTEMPTS, window: float = WINDOW_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.limit, self.window, self.clock = limit, window, clock
        self._seen: dict[str, deque[float]] = {}

    def allow(self, client: str) -> bool:
        """Count one attempt of `client`; False when it is over the limit (not counted then)."""
        now = self.clock()
        times = self._seen.get(client)
        if times is None:
            if len(self._seen) >= MAX_CLIENTS:
                self._seen.clear()  # a flood of addresses resets the book rather than grow it
            times = self._seen[client] = deque()
        while times and now - times[0] >= self.window:
            times.popleft()
        if len(times) >= self.limit:
            return False
        times.append(now)
        return True
