"""`recon codec-server`: opens payloads for the Web UI (and `temporal --codec-endpoint`) with the
keyring of this process, for callers that hold the codec token."""

from __future__ import annotations

import signal
import threading
from typing import Annotated

import typer

from recon.cli.common import MAX_PORT, console, user_errors
from recon.domain.errors import Refused
from recon.domain.settings_table import default_of
from recon.runtime.config import load_settings


@user_errors
def codec_server(
    host: Annotated[str | None, typer.Option(
        help=f"Address to bind (default RECON_CODEC_HOST, {default_of('RECON_CODEC_HOST')}: "
             "this machine only).")] = None,
    port: Annotated[int | None, typer.Option(
        help="Port (default RECON_CODEC_PORT).", min=1, max=MAX_PORT)] = None,
    origin: Annotated[list[str] | None, typer.Option(
        help="Web UI origin allowed by CORS (repeatable; default RECON_CODEC_ORIGINS).")] = None,
) -> None:
    """Serve POST /encode and /decode (Temporal's remote codec protocol) until Ctrl-C or SIGTERM."""
    from recon.runtime.codec_server import CodecServerThread, CodecService, origins_from

    settings = load_settings()
    if settings.payload_keyring is None:
        raise Refused("no payload keys: set RECON_PAYLOAD_KEYS or RECON_PAYLOAD_KEYS_FILE")
    if not settings.codec_token:
        raise Refused("set RECON_CODEC_TOKEN: the codec server opens payloads only for its holders")
    origins = origins_from(",".join(origin or []), origins_from(settings.codec_origins))
    service = CodecService(settings.payload_keyring, settings.codec_token, origins,
                           namespace=settings.temporal_namespace)
    server = CodecServerThread(service, host or settings.codec_host, port or settings.codec_port)
    try:
        server.start()
    except OSError as exc:
        raise Refused(f"cannot listen on {server.host}:{server.port}: {exc.strerror}") from None
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    keys = settings.payload_keyring.ids
    console.print(f"codec server on {server.url()} (POST /encode, /decode; token required); "
                  f"keys {', '.join(keys)} ({keys[0]} current); CORS for {', '.join(sorted(origins))}",
                  markup=False, highlight=False, soft_wrap=True)
    stop.wait()
    server.stop()
    console.print("stopped")
