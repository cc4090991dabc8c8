"""What a night took from each source, as `recon status RUN` says it: one line per source."""

from __future__ import annotations

import asyncpg

from recon.store import sources as store


async def night_lines(pool: asyncpg.Pool, workflow_id: str) -> list[str]:
    lines = []
    for r in await store.night_counts(pool, workflow_id):
        counts = [f"{r['imported']:,} imported ({r['documents']:,} documents)"
                  if r["kind"] != "erp" else f"{r['loaded']:,} file(s) loaded",
                  f"{r['filed']:,} filed"]
        if r["pending"]:
            counts.append(f"{r['pending']:,} not yet taken")
        lines.append(f"from source {r['id']} ({r['url']}): " + ", ".join(counts))
    for r in await store.night_filed(pool, workflow_id):
        moved = f" (moved to {r['moved_to']})" if r["moved_to"] else ""
        lines.append(f"  filed from source {r['source_id']}: {r['name']}: {r['reason'][:300]}{moved}")
    return lines
