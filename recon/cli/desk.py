"""`recon desk`: the finance desk, a web application on loopback (docs/desk.md)."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from recon.cli.common import console, database, temporal, user_errors


@user_errors
def desk(
    host: Annotated[str | None, typer.Option(help="Listen here (default RECON_DESK_HOST, "
                                                  "127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default RECON_DESK_PORT).")] = None,
) -> None:
    """Serve the finance desk: nights, handovers and passkey-signed decisions in a browser."""
    import uvicorn

    from recon.desk.app import make_app
    from recon.runtime.config import load_settings

    settings = load_settings()
    bind, listen = host or settings.desk_host, port or settings.desk_port

    async def go() -> None:
        async with database() as pool:
            client = await temporal()
            app = make_app(pool, client, settings.desk_origin, settings.desk_rp_id, settings)
            config = uvicorn.Config(app, host=bind, port=listen, log_level="warning",
                                    proxy_headers=False, server_header=False)
            console.print(f"desk on http://{bind}:{listen}, for the origin "
                          f"{settings.desk_origin} (RP id {settings.desk_rp_id})",
                          markup=False, highlight=False)
            await uvicorn.Server(config).serve()

    asyncio.run(go())
