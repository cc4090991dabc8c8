"""The codec server on loopback, spoken to as the Web UI speaks to it (JSON payloads, X-Namespace,
CORS preflight), with and without its token."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from recon.runtime.codec import PayloadCipher
from recon.runtime.codec_server import CodecServerThread, CodecService, origins_from
from recon.runtime.keyring import parse_keyring

K1 = "k1:" + base64.b64encode(b"\x01" * 32).decode()
KEYRING = parse_keyring(["k2:" + base64.b64encode(b"\x02" * 32).decode(), K1], "test")
TOKEN = "s3cret-token"
UI = "http://localhost:8233"
NOTE = {"note": "prices agreed with Sharma Traders", "amount_paise": 27150000}


@pytest.fixture
def server() -> Iterator[CodecServerThread]:
    service = CodecService(KEYRING, TOKEN, origins_from(UI), namespace="default")
    running = CodecServerThread(service).start()
    yield running
    running.stop()


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _call(server: CodecServerThread, path: str, body: dict | None = None, method: str = "POST",
          **headers: str) -> tuple[int, dict, dict]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"{server.url()}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            raw = response.read()
            return response.status, dict(response.headers), json.loads(raw) if raw else {}
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        return exc.code, dict(exc.headers), json.loads(raw) if raw else {}


def _plain_payloads() -> dict:
    return {"payloads": [{"metadata": {"encoding": _b64(b"json/plain")},
                          "data": _b64(json.dumps(NOTE).encode())}]}


def test_encode_then_decode_round_trips_with_the_bearer_token(server: CodecServerThread) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}", "X-Namespace": "default"}
    status, _, sealed = _call(server, "/encode", _plain_payloads(), **auth)
    assert status == 200
    metadata = sealed["payloads"][0]["metadata"]
    assert base64.b64decode(metadata["encoding"]) == b"binary/encrypted"
    assert base64.b64decode(metadata["encryption-key-id"]) == b"k2"
    assert b"Sharma" not in base64.b64decode(sealed["payloads"][0]["data"])
    status, _, opened = _call(server, "/decode", sealed, **auth)
    assert status == 200
    assert json.loads(base64.b64decode(opened["payloads"][0]["data"])) == NOTE


def test_a_payload_sealed_by_a_worker_under_the_old_key_decodes(server: CodecServerThread) -> None:
    old = PayloadCipher(parse_keyring([K1], "test"), "billing")
    from google.protobuf import json_format
    from temporalio.api.common.v1 import Payload, Payloads

    sealed = old.seal(Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(NOTE).encode()))
    body = json.loads(json_format.MessageToJson(Payloads(payloads=[sealed])))
    status, _, opened = _call(server, "/decode", body, Authorization=f"Bearer {TOKEN}",
                              **{"X-Namespace": "billing"})
    assert status == 200 and json.loads(base64.b64decode(opened["payloads"][0]["data"])) == NOTE
    status, _, refused = _call(server, "/decode", body, Authorization=f"Bearer {TOKEN}")
    assert status == 422 and "does not open in namespace 'default'" in refused["error"]


def test_the_token_may_be_the_first_path_segment_for_a_ui_that_sends_no_header(
        server: CodecServerThread) -> None:
    status, headers, _ = _call(server, f"/{TOKEN}/encode", _plain_payloads(), Origin=UI)
    assert status == 200 and headers["Access-Control-Allow-Origin"] == UI


@pytest.mark.parametrize("auth", [{}, {"Authorization": "Bearer wrong"},
                                  {"Authorization": f"Basic {TOKEN}"}])
def test_no_token_or_a_wrong_one_is_refused(server: CodecServerThread, auth: dict) -> None:
    status, _, body = _call(server, "/decode", _plain_payloads(), **auth)
    assert status == 401 and body == {"error": "a valid codec token is required"}
    status, _, _ = _call(server, "/wrong/decode", _plain_payloads())
    assert status == 401


def test_cors_answers_the_ui_origin_only(server: CodecServerThread) -> None:
    status, headers, _ = _call(server, "/decode", None, method="OPTIONS", Origin=UI,
                               **{"Access-Control-Request-Method": "POST",
                                  "Access-Control-Request-Headers": "content-type,x-namespace"})
    assert status == 204
    assert headers["Access-Control-Allow-Origin"] == UI
    assert "POST" in headers["Access-Control-Allow-Methods"]
    assert "X-Namespace" in headers["Access-Control-Allow-Headers"]
    status, headers, _ = _call(server, "/decode", None, method="OPTIONS",
                               Origin="http://evil.example")
    assert status == 403 and "Access-Control-Allow-Origin" not in headers
    status, headers, _ = _call(server, "/decode", _plain_payloads(), Origin="http://evil.example",
                               Authorization=f"Bearer {TOKEN}")
    assert status == 403 and "Access-Control-Allow-Origin" not in headers


def test_bad_bodies_and_paths_get_a_clear_answer(server: CodecServerThread) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert _call(server, "/decode", {"payloads": "nope"}, **auth)[0] == 400
    assert _call(server, "/other", _plain_payloads(), **auth)[0] == 404
    unknown = {"payloads": [{"metadata": {"encoding": _b64(b"binary/encrypted"),
                                          "encryption-key-id": _b64(b"k0")}, "data": _b64(b"x" * 40)}]}
    status, _, body = _call(server, "/decode", unknown, **auth)
    assert status == 422 and "key 'k0', which is not in the keyring" in body["error"]


def test_it_binds_to_loopback_by_default(server: CodecServerThread) -> None:
    assert server.server is not None and server.server.server_address[0] == "127.0.0.1"
