"""`recon desk`: the finance desk, a web application on loopback (docs/desk.md)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Annotated

import typer

from recon.cli.common import console, database, user_errors


@user_errors
def desk(
    host: Annotated[str | None, typer.Option(help="Listen here (default RECON_DESK_HOST, "
                                                  "127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default RECON_DESK_PORT).")] = None,
) -> None:
    """Serve the finance desk: nights, handovers and passkey-signed decisions in a browser."""
    from recon.desk.server import serve
    from recon.runtime.config import load_settings

    settings = load_settings()
    settings = replace(settings, desk_host=host or settings.desk_host,
                       desk_port=port or settings.desk_port)

    async def go() -> None:
        async with database():  # migrated, and one line when Postgres is not up
            pass
        console.print(f"desk on http://{settings.desk_host}:{settings.desk_port}, for the origin "
                      f"{settings.desk_origin} (RP id {settings.desk_rp_id})",
                      markup=False, highlight=False)
        await serve(settings)

    asyncio.run(go())
