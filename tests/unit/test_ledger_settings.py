"""RECON_LEDGER and its companions: the built-in ledger by default, the outside ones named with
their URL and a secret read from a file, a bad value refused in one line."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from recon.ledger import outside_ledger, tax_accounts
from recon.ledger.keyed_http import KeyedHttpLedger
from recon.ledger.port import LedgerSettingsRefused
from recon.ledger.tryton import TrytonLedger
from recon.runtime.config import load_settings


@pytest.fixture
def settings(monkeypatch):
    for name in ("RECON_LEDGER", "RECON_LEDGER_URL", "RECON_LEDGER_SECRET", "RECON_LEDGER_SECRET_FILE",
                 "RECON_LEDGER_PARTY_BY", "RECON_LEDGER_CREATE_PARTIES"):
        monkeypatch.delenv(name, raising=False)
    return load_settings()


def test_the_default_is_the_builtin_ledger_alone(settings) -> None:
    assert settings.ledger == "builtin" and outside_ledger(settings) is None


def test_tryton_takes_its_password_from_the_file(settings, tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("s3cret-from-file\n")
    ledger = outside_ledger(replace(settings, ledger="tryton", ledger_url="http://h:8000/db/",
                                    ledger_secret="from-env", ledger_secret_file=str(secret)))
    assert isinstance(ledger, TrytonLedger)
    assert ledger.password == "s3cret-from-file" and ledger.url == "http://h:8000/db/rpc/"
    assert ledger.tax_codes["igst"] == "IGST"


def test_http_posts_to_entries_with_its_token(settings) -> None:
    ledger = outside_ledger(replace(settings, ledger="http", ledger_url="http://h/api",
                                    ledger_secret="tok"))
    assert isinstance(ledger, KeyedHttpLedger)
    assert (ledger.url, ledger.token) == ("http://h/api/entries", "tok")


@pytest.mark.parametrize(("changes", "words"), [
    ({"ledger": "quickbooks"}, "RECON_LEDGER must be one of builtin, tryton, http"),
    ({"ledger": "tryton"}, "RECON_LEDGER=tryton needs RECON_LEDGER_URL"),
    ({"ledger": "http", "ledger_url": "http://h", "ledger_secret_file": "/nonexistent/secret"},
     "RECON_LEDGER_SECRET_FILE /nonexistent/secret"),
    ({"ledger": "tryton", "ledger_url": "http://h", "ledger_tax_accounts": "cgst"},
     "part=code pairs"),
    ({"ledger": "tryton", "ledger_url": "http://h", "ledger_party_by": "name"},
     "RECON_LEDGER_PARTY_BY must be one of code, tax_identifier, got 'name'"),
    ({"ledger": "tryton", "ledger_url": "http://h", "ledger_create_parties": "yes please"},
     "RECON_LEDGER_CREATE_PARTIES must be true or false"),
])
def test_a_bad_ledger_setting_is_one_line(settings, changes, words) -> None:
    with pytest.raises(LedgerSettingsRefused, match=words):
        outside_ledger(replace(settings, **changes))


def test_tax_accounts_are_part_code_pairs() -> None:
    assert tax_accounts("cgst=C1 sgst=S1,igst=I1") == {"cgst": "C1", "sgst": "S1", "igst": "I1"}


def test_a_supplier_is_its_tryton_party_by_code_and_none_is_created_by_default(settings) -> None:
    ledger = outside_ledger(replace(settings, ledger="tryton", ledger_url="http://h:8000/db"))
    assert (ledger.party_by, ledger.create_parties) == ("code", False)
    assert ledger.missing_party("S003", "Malabar Spices") == \
        "supplier S003 (Malabar Spices): no Tryton party with code S003"
    by_gstin = outside_ledger(replace(settings, ledger="tryton", ledger_url="http://h:8000/db",
                                      ledger_party_by="Tax_Identifier", ledger_create_parties="TRUE"))
    assert (by_gstin.party_by, by_gstin.create_parties) == ("tax_identifier", True)
    assert by_gstin.missing_party("S003", "Malabar Spices", "03AABAB0001K1ZO") == \
        "supplier S003 (Malabar Spices): no Tryton party with tax identifier 03AABAB0001K1ZO"
