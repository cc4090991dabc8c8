"""A source as a person writes it (recon/sources/spec.py) and an ERP folder's files by name
(recon/sources/erp.py): canonical URLs, refusals in one line, no secret ever stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from recon.domain.errors import Refused
from recon.sources import erp
from recon.sources.secrets import shown
from recon.sources.spec import parse


def test_kinds_and_their_canonical_urls(tmp_path: Path) -> None:
    password = tmp_path / "pw"
    password.write_text("s3cret-password\n")
    imap = parse("imap://ap@Mail.Example/INBOX", password_file=password)
    assert (imap.kind, imap.url, imap.secret_ref) == ("imap", "imap://ap@mail.example:143/INBOX",
                                                      f"file:{password}")
    assert parse("imap://ap@127.0.0.1:1143", password_env="AP_PW").url == (
        "imap://ap@127.0.0.1:1143/INBOX")
    assert parse("imap://ap@mail.example:993/INBOX", password_env="AP_PW").url == (
        "imaps://ap@mail.example:993/INBOX"), "993 is IMAP over TLS"
    assert parse("imaps://ap@mail.example/Invoices", password_env="AP_PW").url == (
        "imaps://ap@mail.example:993/Invoices")
    assert parse("folder:/srv/drop/").url == "folder:/srv/drop"
    erp_source = parse("erp:/srv/erp-exports", date_format="dd-mm-yyyy", amount_format="Indian")
    assert (erp_source.kind, erp_source.settings) == (
        "erp", {"date_format": "DD-MM-YYYY", "amount_format": "indian"})


@pytest.mark.parametrize(("url", "kwargs", "why"), [
    ("imap://ap:hunter22@mail.example/INBOX", {"password_env": "X"}, "holds a password"),
    ("imap://ap@mail.example/INBOX", {}, "needs its password"),
    ("imap://ap@mail.example:port/INBOX", {"password_env": "X"}, "not a port number"),
    ("folder:srv/drop", {}, "absolute path"),
    ("ftp://x/y", {}, "not a source"),
    ("folder:/srv/drop", {"date_format": "DD-MM-YYYY"}, "settings of an erp source"),
    ("erp:/srv/x", {"date_format": "MM/DD/YYYY"}, "--date-format takes"),
    ("erp:/srv/x", {"amount_format": "swiss"}, "--amount-format takes"),
    ("folder:/srv/drop", {"password_env": "X"}, "takes no password"),
    ("imap://ap@mail.example/INBOX", {"password_env": "NOT A NAME"}, "variable's name"),
])
def test_refusals(url: str, kwargs: dict, why: str) -> None:
    with pytest.raises(Refused, match=why):
        parse(url, **kwargs)


def test_the_secret_is_shown_only_by_where_it_is_read() -> None:
    assert shown("env:AP_PW") == "env $AP_PW"
    assert shown("file:/etc/recon/pw") == "file /etc/recon/pw"
    assert shown(None) == "-"


def test_erp_files_load_in_dependency_order() -> None:
    names = ["receipts-2026-11-05.csv", "Orders.CSV", "hsn_tax_rates.csv", "notes.txt",
             "suppliers.csv", "unit_conversions.csv", "orders-extra.csv"]
    assert erp.load_order(names) == [
        ("suppliers", "suppliers.csv"), ("orders", "Orders.CSV"), ("orders", "orders-extra.csv"),
        ("receipts", "receipts-2026-11-05.csv"), ("conversions", "unit_conversions.csv"),
        ("hsn-rates", "hsn_tax_rates.csv")]
    assert erp.kind_of("notes.txt") is None


def test_file_to_is_a_mailbox_setting_with_a_plain_folder_name() -> None:
    source = parse("imaps://ap@mail.example/INBOX", password_env="AP_PW", file_to="recon-unreadable")
    assert source.settings == {"file_to": "recon-unreadable"}
    with pytest.raises(Refused, match="--file-to is a setting of a mailbox source"):
        parse("folder:/srv/drop", file_to="recon-unreadable")
    for bad in ("", 'a"b', "Unlesbar-ä", "a\nb"):
        with pytest.raises(Refused, match="--file-to takes a folder's name"):
            parse("imaps://ap@mail.example/INBOX", password_env="AP_PW", file_to=bad)
