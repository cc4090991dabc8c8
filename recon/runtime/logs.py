"""Logging, configured once for every process (CLI, worker, sender): structlog in front of the
standard library, so our own lines and the Temporal SDK's `activity.logger` / `workflow.logger`
lines come out in one format.

- In a terminal: readable console lines. Not a terminal, or RECON_LOG_FORMAT=json: one JSON
  object per line (for the log shipper). RECON_LOG_LEVEL picks the level (docs/settings.md).
- Lines from an activity or a workflow carry workflow_id, run_id, step (the activity type or the
  workflow type), attempt, activity_id: taken from the `temporal_activity` / `temporal_workflow`
  dicts the SDK puts in `extra`. Workflow lines are not written during replay (SDK default).
- No secrets: fields whose names look like credentials are masked, and URLs lose their password.
  Activities log ids and counts only, never document text (see activities/observe.py).
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import structlog

from recon.domain.redaction import mask_value
from recon.runtime.config import DEFAULTS

_configured = False
_FROM_SDK = (("temporal_activity", "activity_type"), ("temporal_workflow", "workflow_type"))


def wants_json(stream: Any = None) -> bool:
    choice = os.environ.get("RECON_LOG_FORMAT", "").strip().lower()
    if choice in ("json", "console"):
        return choice == "json"
    stream = stream or sys.stderr
    return not (hasattr(stream, "isatty") and stream.isatty())


def _temporal_context(_: Any, __: str, event: dict[str, Any]) -> dict[str, Any]:
    """Lift the SDK's `extra` dicts into flat fields: workflow_id, run_id, step, attempt."""
    for attr, step_key in _FROM_SDK:
        details = event.pop(attr, None)
        if not isinstance(details, dict):
            continue
        event.setdefault("workflow_id", details.get("workflow_id"))
        event.setdefault("run_id", details.get("run_id") or details.get("workflow_run_id"))
        event.setdefault("step", details.get(step_key))
        event.setdefault("attempt", details.get("attempt"))
        if "activity_id" in details:
            event.setdefault("activity_id", details["activity_id"])
    return event


def _mask_secrets(_: Any, __: str, event: dict[str, Any]) -> dict[str, Any]:
    """recon.domain.redaction: secret-named fields whole, URL passwords and `password=`-style
    parameters inside any text (the message itself included)."""
    for key, value in list(event.items()):
        event[key] = mask_value(key, value)
    return event


class _CurrentStderr(logging.StreamHandler):
    """Writes to whatever sys.stderr is now (test runners and daemons swap it), never to a closed
    stream left over from when logging was configured."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


_SHARED = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.ExtraAdder(),
    structlog.stdlib.add_log_level,
    structlog.stdlib.add_logger_name,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
    _temporal_context,
    _mask_secrets,
]


def _formatter(as_json: bool) -> logging.Formatter:
    renderer = (structlog.processors.JSONRenderer() if as_json
                else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty()))
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=_SHARED,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            # tracebacks as text, then masked too: an exception's message is text that leaves
            structlog.processors.format_exc_info,
            _mask_secrets,
            renderer,
        ],
    )


def to_file(path: os.PathLike | str) -> None:
    """Send this process's log lines to `path`, one JSON object per line, instead of stderr: a
    command that tells a story on the terminal (`recon demo`) keeps its logs, masked as always,
    in a file it names."""
    configure()
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(_formatter(True))
    logging.getLogger().handlers[:] = [handler]


def configure(json_lines: bool | None = None, level: str | None = None) -> None:
    """Idempotent: the first call wins, later calls (worker inside `recon dev`) change nothing."""
    global _configured
    if _configured:
        return
    _configured = True
    as_json = wants_json() if json_lines is None else json_lines
    level_name = (level or os.environ.get("RECON_LOG_LEVEL") or str(DEFAULTS["RECON_LOG_LEVEL"])).upper()
    handler = _CurrentStderr()
    handler.setFormatter(_formatter(as_json))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level_name)
    structlog.configure(
        processors=[*_SHARED, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    _structured_sdk_loggers()


def _structured_sdk_loggers() -> None:
    """The SDK also appends its info dict to the message text; our fields carry it already."""
    from temporalio import activity, workflow

    activity.logger.activity_info_on_message = False
    workflow.logger.workflow_info_on_message = False
