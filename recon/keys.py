"""Key shapes that more than one module needs.

Every idempotency key starts with the workflow id of the night (never a Temporal run id), so a
reset or a redo collides with what the night already wrote. A redo after an undo needs fresh
keys: the generation (1 + undos the run has seen, issued by Postgres) is carried as a suffix.
The SQL function `recon_key` in migration 003 is the same rule; tests/unit holds them together.
"""

from __future__ import annotations


def generation_key(base: str, generation: int) -> str:
    """The key of `base` in a generation: generation 1 keeps the original shape."""
    return base if generation <= 1 else f"{base}:g{generation}"


def redo_workflow_id(run_workflow_id: str, supplier_id: str | None, generation: int) -> str:
    """A redo of a generation is one workflow: two `recon redo` at once attach to the same one."""
    scope = f"-supplier-{supplier_id}" if supplier_id else ""
    return f"redo-{run_workflow_id}{scope}-g{generation}"
