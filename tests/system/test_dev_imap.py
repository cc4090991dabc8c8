"""`recon dev` serves a loopback IMAP mailbox holding the example invoices: its URL and password
file are printed with the other servers, a second start keeps the mail (no doubles), and without
Dovecot one line says so and the stack goes on."""

from __future__ import annotations

import re
import shutil
import signal
from pathlib import Path

import pytest

from recon.runtime import dev_mailbox
from recon.runtime.embedded import free_port
from recon.sources.imap import probe, read_new
from tests.fakes.dovecot import scratch_root
from tests.system.test_cli_dev import _start_dev

pytestmark = pytest.mark.slow


def _imap_line(log: Path) -> re.Match[str]:
    found = re.search(r"^IMAP +(imap://ap@127\.0\.0\.1:\d+/INBOX) +password in (\S+); (.*)$",
                      log.read_text(), re.M)
    assert found, log.read_text()
    return found


async def test_recon_dev_serves_the_example_mails_over_imap(imap_server) -> None:  # dovecot or skip
    home = scratch_root() / "home"  # Dovecot's own user must enter it (root's tmp dirs are 0700)
    home.mkdir()
    try:
        await _start_twice(home)
    finally:
        shutil.rmtree(home.parent, ignore_errors=True)


async def _start_twice(home: Path) -> None:
    for start in (1, 2):
        dev = _start_dev(home, free_port(), free_port())
        try:
            log = max(home.glob("dev-*.log"), key=lambda p: p.stat().st_mtime)
            url, password_file, held = _imap_line(log).groups()
            first = "3 example invoices delivered"
            assert held == (first if start == 1 else "its mail kept from the last start")
            password = Path(password_file).read_text().strip()
            assert Path(password_file).stat().st_mode & 0o077 == 0
            assert "3 messages (3 unseen)" in await probe(url, password)
            read = await read_new(url, password, uidvalidity=None, after_uid=0)
            assert sorted(i.message_id.split(".")[1].split("@")[0] for i in read.items) == [
                "KA-3001", "MS-0042", "SFP-7001"]
            assert all(i.raw and b"Invoice" in i.raw for i in read.items)
        finally:
            dev.send_signal(signal.SIGTERM)
            assert dev.wait(60) == 0


def test_without_dovecot_one_line_and_the_stack_goes_on(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dev_mailbox, "dovecot_path", lambda: None)
    said: list[str] = []
    with dev_mailbox.loopback_imap(tmp_path, said.append) as mailbox:
        assert mailbox is None
    assert len(said) == 1 and "dovecot is not installed" in said[0] and "Maildir" in said[0]
