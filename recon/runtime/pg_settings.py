"""Postgres settings for a write-heavy night, for the embedded server (docker-compose.yml passes
the same values to production's).

initdb's defaults are sized for a small machine: 128 MB of buffers, 4 MB of WAL buffers, a
checkpoint every 1 GB of WAL. A 100,000-invoice night writes ~2.4 GB of WAL; with the defaults its
backends found the WAL buffers full ~120,000 times and checkpoints came every few seconds, each
making the next touch of every page log a full page image (data checksums are on). docs/design.md §8.
"""

from __future__ import annotations

from pathlib import Path

# Values that differ from initdb's defaults only.
PG_SETTINGS = {
    "shared_buffers": "512MB",
    "wal_buffers": "64MB",
    "max_wal_size": "8GB",
    "checkpoint_timeout": "15min",
    "wal_compression": "on",
}
INCLUDE = "include_if_exists = 'recon.conf'"


def configure_for_nights(datadir: Path) -> bool:
    """Write `recon.conf` beside initdb's `postgresql.conf` and include it. True when the include
    was just added: the server must restart once for the settings to take effect."""
    (datadir / "recon.conf").write_text("".join(f"{k} = '{v}'\n" for k, v in PG_SETTINGS.items()))
    conf = datadir / "postgresql.conf"
    if INCLUDE in conf.read_text():
        return False
    with conf.open("a") as out:
        out.write(f"\n# recon: settings for a write-heavy night\n{INCLUDE}\n")
    return True
