"""`recon dev`: the whole embedded stack in one command, stopped cleanly on Ctrl-C or SIGTERM.

Temporal dev server (Web UI), embedded Postgres (data under `.recon/`), the schema, a loopback
mail server keeping every message in `.recon/mail/` (Maildir), a loopback IMAP mailbox holding the
example invoices (recon/runtime/dev_mailbox.py; Dovecot, when installed), a worker (which also
delivers the outbox), the finance desk (recon/desk), and `.recon/env` so every other command
finds them. It watches its servers: one that dies is started again on the same data and ports,
with one line saying so. A previous `recon dev` that was killed leaves servers behind; starting
again stops those first.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import socket
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from recon.mail.smtp_sink import MailSink
from recon.runtime.codec_server import CodecServerThread, CodecService, origins_from
from recon.runtime.config import (
    ENV_FILE_NAME,
    Settings,
    load_settings,
    read_env_file,
    write_env_file,
)
from recon.runtime.dev_mailbox import DevMailbox, loopback_imap
from recon.runtime.embedded import EmbeddedPostgres, StackError, TemporalDevServer, port_open
from recon.runtime.keyring import new_key_line, write_key_file
from recon.store.db import connect_pool, migrate

MAIL_PORT = 1025
KEY_FILE_NAME = "payload-keys"


# The worker's entry point: `worker.run_worker(settings, stop=event)`.
RunWorker = Callable[..., Awaitable[None]]
# The desk's: `recon.desk.server.serve(settings, sock, stop)`, handed in by the CLI like the worker.
ServeDesk = Callable[[Settings, socket.socket, asyncio.Event], Awaitable[None]]


@dataclass
class RunningStack:
    temporal: TemporalDevServer
    postgres: EmbeddedPostgres
    mail: MailSink | None = None  # the loopback mail server, when this process runs one
    imap: DevMailbox | None = None  # the loopback IMAP mailbox with the example mails
    codec: CodecServerThread | None = None  # the Web UI's codec server, with a keyring
    desk: socket.socket | None = None  # the finance desk's listening socket (recon/desk)
    serve_desk: ServeDesk | None = None
    desk_origin: str = ""  # where people open it: what passkeys are bound to

    @property
    def desk_url(self) -> str:
        return self.desk_origin

    @property
    def ui_url(self) -> str:
        return f"http://localhost:{self.temporal.ui_port}"

    def settings(self, base: Settings | None = None) -> Settings:
        settings = replace(base or load_settings(), temporal_address=self.temporal.address,
                           database_url=self.postgres.url)
        if self.desk is not None:  # the worker checks passkeys against the desk's origin
            settings = replace(settings, desk_origin=self.desk_origin,
                               desk_port=self.desk.getsockname()[1])
        return settings


@contextlib.contextmanager
def embedded_stack(state: Path, port: int, ui_port: int, persistent: bool,
                   settings: Settings | None = None, fairness: bool = False) -> Iterator[RunningStack]:
    """Postgres and the Temporal dev server; with a keyring in `settings` (default: the
    environment's) also the codec server, and the Web UI pointed at it."""
    postgres = EmbeddedPostgres(state)
    with ui_codec(settings or load_settings(), ui_port) as codec:
        temporal = TemporalDevServer(state, port=port, ui_port=ui_port, persistent=persistent,
                                     ui_codec_endpoint=codec.url(with_token=True) if codec else None,
                                     fairness=fairness)
        postgres.start()
        try:
            temporal.start()
            try:
                yield RunningStack(temporal, postgres, codec=codec)
            finally:
                temporal.stop()
        finally:
            postgres.stop()


@contextlib.contextmanager
def ui_codec(settings: Settings, ui_port: int) -> Iterator[CodecServerThread | None]:
    """The codec server for the dev Web UI, on loopback, when there is a keyring. The dev UI can
    send no header, so its endpoint carries the token as the first path segment: whoever can
    open this Web UI (this machine only: it is bound to 127.0.0.1) reads decoded payloads, as
    the person running `recon dev` does."""
    if settings.payload_keyring is None:
        yield None
        return
    token = settings.codec_token or secrets.token_urlsafe(24)
    origins = origins_from(settings.codec_origins) | {
        f"http://localhost:{ui_port}", f"http://127.0.0.1:{ui_port}"}
    port = settings.codec_port if not port_open(settings.codec_port) else 0
    server = CodecServerThread(CodecService(settings.payload_keyring, token, origins,
                                            settings.temporal_namespace), "127.0.0.1", port)
    try:
        server.start()
    except OSError:  # taken between the check and the bind
        server.port = 0
        server.start()
    try:
        yield server
    finally:
        server.stop()


def dev_keys(state: Path, encrypt: bool) -> Path | None:
    """`recon dev --encrypt` makes a key file once (0600); every later `recon dev` on this data
    keeps using it, since its histories were written with it. None: no key file here."""
    path = state / KEY_FILE_NAME
    if encrypt and not path.exists():
        write_key_file(path, [new_key_line("dev-1")])
    return path if path.exists() else None


async def prepare_database(url: str) -> None:
    pool = await connect_pool(url)
    try:
        await migrate(pool)
    finally:
        await pool.close()


@contextlib.contextmanager
def loopback_mail(maildir: Path) -> Iterator[MailSink | None]:
    """The embedded mail server (port 1025, else any free port), unless SMTP_URL is set in the
    environment: then mail goes there and nothing is started."""
    if os.environ.get("SMTP_URL"):
        yield None
        return
    try:
        sink = MailSink(maildir, port=0 if port_open(MAIL_PORT) else MAIL_PORT).start()
    except OSError:  # 1025 was taken between the check and the bind
        sink = MailSink(maildir).start()
    try:
        yield sink
    finally:
        sink.stop()


def _listening(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


@contextlib.contextmanager
def desk_socket(desk: bool) -> Iterator[tuple[socket.socket | None, str]]:
    """The desk's socket on RECON_DESK_HOST:RECON_DESK_PORT (another free port when that one is
    taken) and its origin: RECON_DESK_ORIGIN when set, else http://localhost:PORT (passkeys are
    bound to it, and the worker checks them against it). Bound before anything is announced, so
    the URL printed is the one that answers."""
    if not desk:
        yield None, ""
        return
    settings = load_settings()
    try:
        sock = _listening(settings.desk_host, settings.desk_port)
    except OSError:
        sock = _listening(settings.desk_host, 0)
    origin = os.environ.get("RECON_DESK_ORIGIN") or f"http://localhost:{sock.getsockname()[1]}"
    try:
        yield sock, origin
    finally:
        sock.close()


def run_dev(state: Path, port: int, ui_port: int, worker: RunWorker | None, announce,
            say: Callable[[str], None] = print, encrypt: bool = False, imap: bool = True,
            desk: ServeDesk | None = None) -> None:
    """Blocks until Ctrl-C or SIGTERM, then stops everything it started. `worker` is the worker's
    entry point (`worker.run_worker`) and `desk` the desk's (`recon.desk.server.serve`), handed in
    by the CLI: the runtime never imports the worker or the desk."""
    # The outside ledger `recon ledger init --start` wrote there stays (docs/ledger.md).
    env: dict[str, str] = {k: v for k, v in read_env_file(state / ENV_FILE_NAME).items()
                           if k.startswith("RECON_LEDGER")}
    own_keys = not (os.environ.get("RECON_PAYLOAD_KEYS") or os.environ.get("RECON_PAYLOAD_KEYS_FILE"))
    key_file = dev_keys(state, encrypt) if own_keys else None
    if key_file is not None:
        # This process's worker and every command after it (through .recon/env) use the key.
        env["RECON_PAYLOAD_KEYS_FILE"] = os.environ["RECON_PAYLOAD_KEYS_FILE"] = str(key_file)
    with embedded_stack(state, port, ui_port, persistent=True) as stack, \
            loopback_mail(state / "mail") as mail, loopback_imap(state, say, imap) as mailbox, \
            desk_socket(desk is not None) as (desk_sock, desk_origin):
        stack.mail, stack.imap = mail, mailbox
        stack.desk, stack.desk_origin, stack.serve_desk = desk_sock, desk_origin, desk
        asyncio.run(prepare_database(stack.postgres.url))
        env.update({
            "TEMPORAL_ADDRESS": stack.temporal.address,
            "DATABASE_URL": stack.postgres.url,
            "RECON_TEMPORAL_UI": stack.ui_url,
        })
        if mail is not None:
            env["SMTP_URL"] = mail.url
        if desk_sock is not None:
            env["RECON_DESK_ORIGIN"] = desk_origin
        if stack.codec is not None:
            env["RECON_CODEC_TOKEN"] = stack.codec.service.token
            env["RECON_CODEC_URL"] = stack.codec.url()
        write_env_file(state / ENV_FILE_NAME, env)
        announce(stack)
        asyncio.run(_serve(stack, worker, say))
    (state / ENV_FILE_NAME).unlink(missing_ok=True)


async def _serve(stack: RunningStack, worker: RunWorker | None, say: Callable[[str], None]) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    tasks = [asyncio.ensure_future(supervise(stack, stop, say))]
    if worker is not None:
        tasks.append(asyncio.ensure_future(_keep_worker(worker, stack.settings(), stop, say)))
    if stack.desk is not None and stack.serve_desk is not None:
        tasks.append(asyncio.ensure_future(_keep_desk(stack, stop, say)))
    await stop.wait()
    await asyncio.gather(*tasks, return_exceptions=True)


async def supervise(stack: RunningStack, stop: asyncio.Event, say: Callable[[str], None],
                    every: float = 0.5) -> None:
    """Notice when a server of ours dies and start it again on the same data and port: a
    developer's runs wait for it instead of the whole stack silently going away."""
    while not stop.is_set():
        code = stack.temporal.exit_code()
        if code is not None:
            say(f"Temporal dev server exited (code {code}); restarting on the same data")
            try:
                stack.temporal.start()  # in this thread: the server is tied to it (PDEATHSIG)
            except StackError as exc:
                say(f"Temporal dev server did not start again: {exc}; trying again")
        if stack.postgres.postmaster_pid() is None and not stop.is_set():
            say("Postgres exited; restarting on the same data")
            try:
                await asyncio.to_thread(stack.postgres.start_again)
            except StackError as exc:
                say(f"Postgres did not start again: {exc}; trying again")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every)


async def _keep_worker(run_worker: RunWorker, settings: Settings, stop: asyncio.Event,
                       say: Callable[[str], None]) -> None:
    """The dev stack's worker; if it stops on its own (a server was down when it started, or it
    lost one for good) it starts again a moment later."""
    while not stop.is_set():
        try:
            await run_worker(settings, stop=stop)
        except Exception as exc:  # noqa: BLE001 - any reason: say it and start again
            if stop.is_set():
                return
            say(f"worker stopped: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}; "
                "starting it again")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 1.0)


async def _keep_desk(stack: RunningStack, stop: asyncio.Event, say: Callable[[str], None]) -> None:
    """The dev stack's desk, on the socket announced; started again when it stops on its own."""
    while not stop.is_set():
        try:
            assert stack.serve_desk is not None and stack.desk is not None
            await stack.serve_desk(stack.settings(), stack.desk, stop)
        except Exception as exc:  # noqa: BLE001 - any reason: say it and start again
            if stop.is_set():
                return
            say(f"desk stopped: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}; "
                "starting it again")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 1.0)
