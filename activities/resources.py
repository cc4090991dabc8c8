"""What activities share inside one worker process: the Postgres pool and the extractor.

The worker sets these once at start; activities read them. Workflows never touch them.
"""

from __future__ import annotations

import asyncpg
from temporalio.client import Client

from recon.config import Settings
from recon.documents.extraction import Extractor

_pool: asyncpg.Pool | None = None
_extractor: Extractor | None = None
_settings: Settings | None = None
_client: Client | None = None


def install(
    pool: asyncpg.Pool, extractor: Extractor, settings: Settings, client: Client | None = None
) -> None:
    global _pool, _extractor, _settings, _client
    _pool, _extractor, _settings, _client = pool, extractor, settings, client


def client() -> Client | None:
    """The worker's Temporal client: an attempt asks it whether it is still the live one."""
    return _client


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
