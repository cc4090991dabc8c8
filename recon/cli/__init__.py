"""The `recon` command. Every command gives one clear line and a non-zero exit on bad input, a
missing server or an unknown run; no traceback for a user mistake.

One module per command group (stack, data, load, sources, runs, decisions, undo, redo, approvers, mail,
schedules, codec; `intake_report` prints what `import` read), the shared checks and the pool/client
lifetimes in `common`. The commands are registered here, in the order `recon --help` lists them.
"""

from __future__ import annotations

import os
import sys

import typer

from recon.cli import (
    approvers,
    codec,
    data,
    decisions,
    desk,
    ledger,
    load,
    mail,
    redo,
    runs,
    schedules,
    sources,
    stack,
    undo,
)
from recon.cli.common import err, one_line

app = typer.Typer(
    help="recon: crash-proof nightly reconciliation of supplier invoices on Temporal.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command()(stack.dev)
app.command()(stack.worker)
app.command()(stack.sender)
app.command()(data.seed)
app.command("import")(data.import_)
app.add_typer(load.app, name="load")
app.add_typer(sources.app, name="source")
app.command()(data.supplier)
app.command()(runs.run)
app.command()(runs.status)
app.command()(runs.inspect)
app.command()(stack.demo)
app.command()(decisions.handovers)
app.command()(decisions.handover)
app.command()(decisions.approve)
app.command()(desk.desk)
app.add_typer(approvers.app, name="approvers")
app.command()(redo.redo)
app.add_typer(mail.app, name="mail")
app.command()(undo.undo)
app.command()(stack.chaos)
app.command("codec-server")(codec.codec_server)
app.add_typer(schedules.app, name="schedule")
app.add_typer(ledger.app, name="ledger")


def main() -> None:
    """Entry point: usage errors become one line too. The process leaves with `os._exit` once the
    command is done: a command that used a Temporal client can otherwise abort during interpreter
    finalisation (`Fatal Python error: PyGILState_Release`, exit 134/139, from the SDK's runtime
    threads), turning a success into a false failure for cron and scripts. Every command cleans up
    its own children (worker, servers, pools) before it returns, so nothing is left to finalise."""
    code = _run_command()
    import logging

    logging.shutdown()  # what atexit would have done for log handlers
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a closed pipe (`recon ... | head`) must not change the exit code
    os._exit(code)


def _run_command() -> int:
    from recon.runtime.logs import configure

    configure()
    try:
        result = app(standalone_mode=False)
    except (typer.Abort, KeyboardInterrupt):
        return _exit_line("interrupted", 130)
    except typer.TyperException as exc:
        return _exit_line(exc.format_message() or type(exc).__name__,
                          getattr(exc, "exit_code", 1) or 1)
    except typer.Exit as exc:
        return exc.exit_code
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # a bug, not a user mistake: keep the traceback for the report
        import traceback

        traceback.print_exc()
        return 1
    return result if isinstance(result, int) else 0


def _exit_line(message: str, code: int) -> int:
    err.print(f"error: {one_line(message)}", markup=False, highlight=False)
    return code


