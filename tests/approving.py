"""Approvers of the test stack: every test that decides signs its decision like a person would.

The session's database gets two admins with no limit, `asha` and `ravi`, whose private keys are
files in the stack's state dir; `Stack.env()` points RECON_APPROVER_KEY at asha's, so a
`recon approve ... --by asha` in a test is signed by asha's key. Tests that send a decision
straight to Temporal sign it with `signed(...)`.
"""

from __future__ import annotations

from pathlib import Path

import asyncpg

from recon.domain.models import Decision
from recon.ops.approvers import ensure_tool_approver, load_key, signed_decision, write_key_for_tools

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
