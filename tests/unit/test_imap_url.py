"""A mailbox source's URL: scheme, default ports, a %-encoded user, the folder; a password in
the URL, a missing user or a folder we cannot name are refused in one line."""

from __future__ import annotations

import pytest

from recon.domain.errors import SourceRefused
from recon.sources.imap import MailboxUrl, parse_url


def test_the_parts_of_a_mailbox_url() -> None:
    assert parse_url("imaps://ap%40acme.in@mail.acme.in/INBOX") == MailboxUrl(
        True, "mail.acme.in", 993, "ap@acme.in", "INBOX")
    assert parse_url("imap://ap@127.0.0.1:1143") == MailboxUrl(False, "127.0.0.1", 1143, "ap", "INBOX")
    assert parse_url("imap://ap@mail/Suppliers%20Bills").folder == "Suppliers Bills"
    assert parse_url("imap://ap@mail/INBOX").port == 143


@pytest.mark.parametrize(("url", "why"), [
    ("imaps://ap:secret@mail/INBOX", "holds a password"),
    ("imaps://mail/INBOX", "needs user@host"),
    ("pop3://ap@mail/INBOX", "must start imap:// or imaps://"),
    ("imaps://ap@mail:99999/INBOX", "not an IMAP URL"),
    ("imaps://ap:secret@mail:99999/INBOX", "not an IMAP URL"),
    ('imaps://ap@mail/a%22b', "only ASCII names"),
    ("imaps://ap@mail/Rechnungen%C3%BC", "only ASCII names"),
])
def test_bad_urls_are_refused_in_one_line(url: str, why: str) -> None:
    with pytest.raises(SourceRefused, match=why) as refused:
        parse_url(url)
    assert "\n" not in str(refused.value) and "secret" not in str(refused.value)
