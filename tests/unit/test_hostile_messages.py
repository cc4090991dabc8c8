"""The mail reader on hostile messages (recon/documents/inbox.py `read_message_bytes`, shared by
`recon import --maildir` and a mailbox source): each is filed with a one-line reason instead of
raising or reading without bound; an archive is never expanded. The same messages go through
Dovecot and a whole night in tests/system/test_hostile_mail.py."""

from __future__ import annotations

from recon.documents.inbox import clean_message_id, message_id_of, read_message_bytes
from tests.system.test_hostile_mail import BOMB_BYTES, _raw, _zip_bomb
from tests.system.test_inbox import _message


def test_parts_nested_past_the_parsers_recursion_are_filed_not_raised() -> None:
    nested = b"".join(b'--B%d\r\nContent-Type: multipart/mixed; boundary="B%d"\r\n\r\n' % (n, n + 1)
                      for n in range(2000))
    found = read_message_bytes(_raw("<n@x>", nested, b'multipart/mixed; boundary="B0"'), "uid 7")
    assert found.problem and found.problem.startswith("the message cannot be read (RecursionError")


def test_too_many_attachments_are_filed_before_any_is_read() -> None:
    raw = _message("a@b.example", "<m@x>", attachments=[
        (f"i{n}.csv", "text/csv", b"invoice_no,INV-1\n") for n in range(101)]).as_bytes()
    found = read_message_bytes(raw, "uid 1")
    assert found.documents == [] and found.problem == (
        "101 attachments, over the limit of 100 a message (RECON_MAIL_MAX_ATTACHMENTS)")
    assert read_message_bytes(raw, "uid 1", max_attachments=101).problem is None


def test_an_archive_is_one_file_of_its_own_size_never_expanded() -> None:
    bomb = _zip_bomb()
    found = read_message_bytes(_message("a@b.example", "<z@x>", attachments=[
        ("invoices.zip", "application/zip", bomb)]).as_bytes(), "uid 1")
    assert [d.file.format for d in found.documents] == ["binary"]
    assert len(bomb) < BOMB_BYTES // 500


def test_control_characters_never_reach_a_name_or_an_id() -> None:
    raw = _raw("<a\x00b@x>", b'--AAA\r\nContent-Type: text/csv\r\nContent-Disposition: attachment;'
                             b' filename="pa\r\n sswd\x00.csv"\r\n\r\ninvoice_no,INV-1\r\n--AAA--\r\n')
    found = read_message_bytes(raw, "uid\n1")
    assert found.message_id == message_id_of(raw) == "<a b@x>"
    assert found.name == "uid 1"
    assert all(ch.isprintable() for d in found.documents for ch in d.origin)
    long_id = "<" + "x" * 600 + "@x>"
    assert clean_message_id(long_id).startswith("sha256:")
    assert clean_message_id("<plain@x>") == "<plain@x>"


def test_a_message_over_the_limit_is_filed_by_its_size() -> None:
    found = read_message_bytes(b"x" * 101, "uid 1", max_bytes=100)
    assert found.problem == ("message of 101 bytes is over the 100-byte limit "
                             "(RECON_MAIL_MAX_MESSAGE_BYTES)")
