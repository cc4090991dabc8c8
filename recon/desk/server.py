"""Serving the desk with uvicorn: `recon desk` on its own, and `recon dev` beside its other
servers, in its event loop, on a socket it bound before (so the URL is printed with the others).

uvicorn answers SIGINT and SIGTERM itself; inside `recon dev`, whose loop already stops
everything on them, it must not (`_Inside`): the dev stack tells it to stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator

import uvicorn

from recon.runtime.config import Settings
from recon.store.db import connect_pool


class _Inside(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def serve(settings: Settings, sock: socket.socket | None = None,
                stop: asyncio.Event | None = None) -> None:
    """Serve the desk until stopped: by `stop` when given (inside `recon dev`), else by a signal.
    Its pool and Temporal client stay in this process; no page reaches them."""
    from recon.desk.app import make_app
    from recon.runtime.temporal_client import connect

    pool = await connect_pool(settings.database_url)
    try:
        client = await connect(settings)
        app = make_app(pool, client, settings.desk_origin, settings.desk_rp_id, settings)
        config = uvicorn.Config(app, host=settings.desk_host, port=settings.desk_port,
                                log_level="warning", proxy_headers=False, server_header=False)
        server = (_Inside if stop is not None else uvicorn.Server)(config)
        if stop is None:
            await server.serve(sockets=[sock] if sock else None)
            return
        serving = asyncio.ensure_future(server.serve(sockets=[sock] if sock else None))
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait({serving, stopping}, return_when=asyncio.FIRST_COMPLETED)
        server.should_exit = True
        stopping.cancel()
        await serving
    finally:
        await pool.close()
