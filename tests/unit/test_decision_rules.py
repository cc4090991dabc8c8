"""The pure rules of signed decisions and of terminal output (recon/domain/decisions.py,
signing.py, printable.py): what is signed, what verifies, what is stale, what needs four eyes,
and what a terminal line may carry."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from recon.domain import decisions
from recon.domain.decisions import DecisionCheck, canonical_decision, four_eyes, staleness
from recon.domain.models import Decision
from recon.domain.printable import neutral, printable
from recon.domain.signing import (
    new_private_key,
    private_pem,
    raw_public,
    read_private_pem,
    sign,
    verifies,
)
from workflows.decisions import out_of_bounds

SIGNED_AT = "2026-10-14T03:00:00+00:00"


def _payload(**change) -> bytes:
    fields = dict(run="recon-2026-10-13-ldh", handover_no=1, decision="resume", by="asha",
                  note="checked", park=["INV-2", "INV-1", "INV-2"], signed_at=SIGNED_AT)
    fields.update(change)
    return canonical_decision(**fields)


def test_the_canonical_json_is_sorted_compact_ascii_and_names_its_purpose() -> None:
    text = _payload(note="naïve ₹").decode()
    assert text == ('{"by":"asha","decision":"resume","handover_no":1,"note":"na\\u00efve '
                    '\\u20b9","park":["INV-1","INV-2"],"purpose":"recon-decision/1",'
                    '"run":"recon-2026-10-13-ldh","signed_at":"2026-10-14T03:00:00+00:00"}')
    assert json.loads(text)["park"] == ["INV-1", "INV-2"]


def test_a_signature_verifies_only_for_its_own_key_and_bytes() -> None:
    key, other = new_private_key(), new_private_key()
    signature = sign(key, _payload())
    assert verifies(raw_public(key), _payload(), signature)
    assert not verifies(raw_public(other), _payload(), signature), "another key"
    for changed in (dict(decision="undo"), dict(handover_no=2), dict(run="recon-x"),
                    dict(by="ravi"), dict(note="x"), dict(park=["INV-1"]),
                    dict(signed_at="2026-10-14T03:00:01+00:00")):
        assert not verifies(raw_public(key), _payload(**changed), signature), changed
    for junk in ("", "not base64!", "AAAA", signature[:-4] + "AAAA"):
        assert not verifies(raw_public(key), _payload(), junk)
    assert read_private_pem(private_pem(key)).sign(b"x") == key.sign(b"x")


def test_staleness_is_judged_against_the_time_the_run_received_it() -> None:
    received = datetime(2026, 10, 14, 3, 10, tzinfo=UTC)
    age = timedelta(minutes=15)
    assert staleness(SIGNED_AT, received, age) is None
    assert "stale" in staleness(SIGNED_AT, received + timedelta(minutes=6), age)
    assert "ahead" in staleness(SIGNED_AT, received - timedelta(minutes=12), age)
    assert "time zone" in staleness("2026-10-14T03:00:00", received, age)
    assert "not an ISO" in staleness("yesterday", received, age)


def _check(**change) -> DecisionCheck:
    fields = dict(check_id="c", workflow_id="w", night="w", handover_no=1, via="update",
                  received_at=SIGNED_AT, decision="resume", by="ravi")
    fields.update(change)
    return DecisionCheck(**fields)


def test_four_eyes_needs_a_second_different_approver_of_the_same_decision() -> None:
    assert decisions.needs_four_eyes("resume", [], 10_001, 10_000)
    assert decisions.needs_four_eyes("retry", ["INV-1"], 10_001, 10_000), "parking needs two"
    assert not decisions.needs_four_eyes("retry", [], 10_001, 10_000), "retry sends nothing"
    assert not decisions.needs_four_eyes("resume", [], 10_000, 10_000), "at the amount: one"
    assert not decisions.needs_four_eyes("resume", [], 10**12, 0), "off by default"

    assert four_eyes(_check(), "ravi", 20_000).first_of_two
    same = four_eyes(_check(first_approver="ravi", first_decision="resume"), "ravi", 20_000)
    assert "already approved" in same.refused
    other = four_eyes(_check(decision="undo", first_approver="asha", first_decision="resume"),
                      "ravi", 20_000)
    assert "same decision" in other.refused
    parks = four_eyes(_check(park=["INV-1"], first_approver="asha", first_decision="resume"),
                      "ravi", 20_000)
    assert "same decision" in parks.refused
    ok = four_eyes(_check(first_approver="asha", first_decision="resume"), "ravi", 20_000)
    assert (ok.refused, ok.confirms, ok.approver) == ("", "asha", "ravi")


def test_the_validator_bounds_every_field_of_a_decision() -> None:
    good = Decision(decision="resume", by="asha", note="line one\nline two", park=["INV-1"],
                    handover_no=1, signed_at=SIGNED_AT, signature="A" * 88)
    assert out_of_bounds(good) is None
    for bad, word in [
        (dict(by="a" * 65), "--by"), (dict(by="eve\x1b[2J"), "--by"),
        (dict(note="x" * 501), "--note"), (dict(note="a\rb"), "--note"),
        (dict(park=[f"INV-{n}" for n in range(101)]), "--park"),
        (dict(park=["I" * 65]), "--park"), (dict(park=[" "]), "--park"),
        (dict(signature="A" * 101), "signature"), (dict(signed_at="2" * 41), "signature"),
    ]:
        assert word in (out_of_bounds(good.model_copy(update=bad)) or ""), bad


def test_printable_shows_control_characters_as_escapes() -> None:
    assert printable("asha") == "asha"
    assert printable("₹2,71,500 · naïve") == "₹2,71,500 · naïve"
    assert printable("eve\x1b[2J") == "eve\\x1b[2J"
    assert printable("a\r\nb\tc\x00\x7f\x9b") == "a\\r\\nb\\tc\\x00\\x7f\\x9b"
    assert printable("abc\u202edcba") == "abc\\u202edcba", "a bidi override turns text around"
    assert printable("line 1\nline 2\r", keep_newlines=True) == "line 1\nline 2\\r"
    assert printable(42) == "42"


def test_a_stake_in_another_currency_is_over_every_rupee_limit_and_needs_four_eyes() -> None:
    """Limits and the four-eyes amount are ₹; €8.00 is not 800 paise and no rate is assumed."""
    assert not decisions.over_limit({"INR": 100}, 100) and decisions.over_limit({"INR": 101}, 100)
    assert decisions.over_limit({"EUR": 800}, 10**12) and not decisions.over_limit({"EUR": 1}, None)
    assert decisions.stake_needs_four_eyes("resume", [], {"EUR": 1}, 10_000)
    assert not decisions.stake_needs_four_eyes("resume", [], {"EUR": 1}, 0), "off stays off"
    assert not decisions.stake_needs_four_eyes("retry", [], {"EUR": 10**9}, 10_000)
    assert decisions.stake_needs_four_eyes("resume", [], {"INR": 10_001}, 10_000)
    assert not decisions.stake_needs_four_eyes("resume", [], {"INR": 10_000}, 10_000)


def test_neutral_escapes_every_control_character_and_keeps_the_layout() -> None:
    body = "Dear supplier,\n\tDN-1 ₹2,71,500\n"
    assert neutral(body) is body, "a many-line body with nothing to escape is left as it is"
    assert neutral("a\x1b[2J\nb\u202e\tc\u2028d\x00") == "a\\x1b[2J\nb\\u202e\tc\\u2028d\\x00"
    # unprintable but no control (a non-breaking space, an unassigned code point): kept as sent
    assert neutral("1\xa0000\n\U000e0fff") == "1\xa0000\n\U000e0fff"
    assert neutral("a\r\nb") == "a\\r\nb"
