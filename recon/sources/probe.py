"""`recon source test ID`: what a source holds now, said without importing or loading anything."""

from __future__ import annotations

import asyncpg

from recon.domain.errors import Refused
from recon.domain.redaction import mask_known
from recon.sources import erp
from recon.sources.fetch import imap_module
from recon.sources.files import settled_files
from recon.sources.secrets import read_secret
from recon.sources.spec import SourceSpec
from recon.store import sources as store


def _folder_of(source: asyncpg.Record) -> SourceSpec:
    spec = SourceSpec(source["kind"], source["url"])
    if not spec.folder.is_dir():
        raise Refused(f"{spec.folder} is not a folder (or this user cannot read it)")
    return spec


async def probe(pool: asyncpg.Pool, source: asyncpg.Record) -> list[str]:
    """Lines that say what the source holds; a source that cannot be read is one refusal."""
    kind = source["kind"]
    if kind == "imap":
        imap = imap_module()
        try:
            line = await imap.probe(source["url"], read_secret(source["secret_ref"]))
        except (OSError, TimeoutError) as exc:  # unreachable: the server's words, one line
            words = getattr(exc, "outage_words", None) or f"{type(exc).__name__}: {exc}"
            raise Refused(f"{source['url']}: {mask_known(str(words))}") from None
        return [mask_known(str(line))]
    spec = _folder_of(source)
    try:
        files = await settled_files(spec.folder)
    except OSError as exc:
        raise Refused(f"{spec.folder} cannot be read: {exc.strerror}") from None
    async with pool.acquire() as conn:
        known = {name for _sha, name in await store.known_files(conn, source["id"])}
    if kind == "folder":
        new = [f.name for f in files if f.name not in known]
        return [f"{spec.folder}: {len(files)} file(s), {len(new)} new (a night would take them)"]
    names = [f.name for f in files]
    ordered = erp.load_order(names)
    lines = [f"{spec.folder}: {len(names)} file(s), {len(ordered)} of them master data"]
    lines += [f"  {name} -> recon load {kind}" + ("" if name not in known else " (taken before)")
              for kind, name in ordered]
    matched = {name for _kind, name in ordered}
    lines += [f"  {name} -> not loaded (no pattern matches: suppliers*.csv, orders*.csv, "
              "receipts*.csv, conversions*.csv, hsn*rates*.csv)" for name in names if name not in matched]
    return lines
