"""What activities share inside one worker process: the Postgres pool and the extractor.

The worker sets these once at start; activities read them. Workflows never touch them.
"""

from __future__ import annotations

import asyncpg

from recon.config import Settings
from recon.extraction import Extractor

_pool: asyncpg.Pool | None = None
_extractor: Extractor | None = None
_settings: Settings | None = None


def install(pool: asyncpg.Pool, extractor: Extractor, settings: Settings) -> None:
    global _pool, _extractor, _settings
    _pool, _extractor, _settings = pool, extractor, settings


def pool() -> asyncpg.Pool:
    if _pool is None:
        raise RuntimeError("activities used outside a worker: call resources.install() first")
    return _pool


def extractor() -> Extractor:
    if _extractor is None:
        raise RuntimeError("activities used outside a worker: call resources.install() first")
    return _extractor


def settings() -> Settings:
    if _settings is None:
        raise RuntimeError("activities used outside a worker: call resources.install() first")
    return _settings
