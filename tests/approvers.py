"""Approvers of the test stack: every test that decides signs its decision like a person would.

The session's database gets two admins with no limit, `asha` and `ravi`, whose private keys are
files in the stack's state dir; `Stack.env()` points RECON_APPROVER_KEY at asha's, so a
`recon approve ... --by asha` in a test is signed by asha's key. Tests that send a decision
straight to Temporal sign it with `signed(...)`; an undo started straight on Temporal is signed
with `signed_undo(...)`, and `start_undo` / `start_redo` take `signed_as(...)`.
"""

from __future__ import annotations

from pathlib import Path

import asyncpg

from recon.domain.models import Decision, UndoRequest
from recon.domain.requests import UNDO, SignedRequest
from recon.ops.approvers import ensure_tool_approver, load_key, signed_decision, write_key_for_tools
from recon.ops.requests import signed_request

TEST_APPROVERS = ("asha", "ravi")


def key_path(state: Path, name: str) -> Path:
    return state / "keys" / f"{name}.pem"


def make_keys(state: Path) -> None:
    """The key files (no database needed): made when the stack starts."""
    for name in TEST_APPROVERS:
        write_key_for_tools(key_path(state, name))


async def register(pool: asyncpg.Pool, state: Path) -> None:
    """Put the test approvers on record (the first is the admin who adds the others)."""
    admin = None
    for name in TEST_APPROVERS:
        await ensure_tool_approver(pool, name, f"{name}@distributor.example",
                                   key_path(state, name), admin_key=admin)
        admin = admin or load_key(key_path(state, name))


async def signed(pool: asyncpg.Pool, state: Path, run: str, decision: str, *,
                 by: str = "asha", handover_no: int = 1, note: str = "",
                 park: list[str] | None = None) -> Decision:
    """A decision signed with `by`'s key, as `recon approve --print` would print it."""
    return await signed_decision(pool, load_key(key_path(state, by)), run=run,
                                 handover_no=handover_no, decision=decision, by=by, note=note,
                                 park=park or [])


async def signed_undo(pool: asyncpg.Pool, state: Path, run: str, *, by: str = "asha",
                      reason: str = "run was wrong", supplier: str | None = None,
                      references: list[str] | None = None,
                      heartbeat_seconds: float = 2.0) -> UndoRequest:
    """An undo request signed with `by`'s key, as `recon undo` starts it."""
    signed = await signed_request(pool, load_key(key_path(state, by)), UNDO, run=run,
                                  supplier=supplier, references=references or [],
                                  reason=reason, by=by)
    return UndoRequest(run_workflow_id=run, supplier_id=supplier, references=references or [],
                       reason=reason, by=signed.by, signed_at=signed.signed_at,
                       signature=signed.signature, heartbeat_seconds=heartbeat_seconds)


async def signed_as(pool: asyncpg.Pool, state: Path, purpose: str, run: str, *,
                    by: str = "asha", reason: str = "", supplier: str | None = None,
                    references: list[str] | None = None) -> SignedRequest:
    """The signature part of an undo or redo request, for `start_undo` / `start_redo`."""
    return await signed_request(pool, load_key(key_path(state, by)), purpose, run=run,
                                supplier=supplier, references=references or [], reason=reason,
                                by=by)
