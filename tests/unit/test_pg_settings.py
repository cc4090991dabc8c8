"""The embedded Postgres is set for a write-heavy night: recon.conf beside initdb's file, included
once, so the first start restarts once and later starts do not."""

from pathlib import Path

from recon.runtime.pg_settings import INCLUDE, PG_SETTINGS, configure_for_nights


def test_settings_are_written_and_included_once(tmp_path: Path) -> None:
    (tmp_path / "postgresql.conf").write_text("# initdb's file\n")
    assert configure_for_nights(tmp_path) is True, "just included: the server must restart"
    assert configure_for_nights(tmp_path) is False, "already included: no second restart"
    assert (tmp_path / "postgresql.conf").read_text().count(INCLUDE) == 1
    written = (tmp_path / "recon.conf").read_text()
    assert "wal_buffers = '64MB'" in written
    assert all(f"{k} = '{v}'" in written for k, v in PG_SETTINGS.items())
