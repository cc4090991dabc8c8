"""The desk's rules on every response and every POST, against the real app served by uvicorn on
loopback (no database is reached by these paths): the CSP allows no inline script, the session
cookie is HttpOnly and SameSite=Strict, and Secure when the origin is https; a POST without the
session's CSRF token, or from another Origin, is refused in one line."""

from __future__ import annotations

import asyncio
import contextlib
import re
import urllib.error
import urllib.request
from collections.abc import AsyncIterator

import uvicorn

from recon.desk.app import make_app
from recon.runtime.embedded import free_port


@contextlib.asynccontextmanager
async def _served(origin: str) -> AsyncIterator[str]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(make_app(None, None, origin, "desk.example"),  # type: ignore[arg-type]
                                           host="127.0.0.1", port=port, log_level="warning"))
    task = asyncio.create_task(server.serve())
    for _ in range(600):
        if server.started:
            break
        await asyncio.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 30)


def _fetch(url: str, *, data: bytes | None = None, headers: dict[str, str] | None = None):
    request = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read().decode()


async def test_every_page_carries_the_csp_and_a_strict_cookie_secure_behind_https() -> None:
    async with _served("https://desk.example") as base:
        status, headers, body = await asyncio.to_thread(_fetch, f"{base}/signin")
    assert status == 200
    assert headers["content-security-policy"].startswith("default-src 'self'")
    assert "unsafe-inline" not in headers["content-security-policy"]
    cookie = headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Secure" in cookie, cookie
    assert "<script>" not in body and 'src="/static/desk.js"' in body
    assert not re.search(r"<script(?![^>]*\bsrc=)", body), "no inline script"


async def test_a_post_without_the_csrf_token_or_from_another_site_is_refused() -> None:
    async with _served("http://localhost:8237") as base:
        status, headers, body = await asyncio.to_thread(_fetch, f"{base}/signin")
        assert "Secure" not in headers["set-cookie"], "plain http on localhost: not Secure"
        session = headers["set-cookie"].split(";")[0]
        csrf = re.search(r'name="csrf-token" content="([^"]+)"', body).group(1)
        no_token = await asyncio.to_thread(_fetch, f"{base}/signin/options", data=b"{}",
                                           headers={"Cookie": session})
        wrong_site = await asyncio.to_thread(
            _fetch, f"{base}/signin/options", data=b"{}",
            headers={"Cookie": session, "X-CSRF-Token": csrf, "Origin": "https://evil.example"})
        good = await asyncio.to_thread(
            _fetch, f"{base}/signin/options", data=b"{}",
            headers={"Cookie": session, "X-CSRF-Token": csrf, "Origin": "http://localhost:8237"})
    assert no_token[0] == 403 and no_token[2] == "refused: missing or wrong CSRF token"
    assert wrong_site[0] == 403 and wrong_site[2] == "refused: this request comes from another site"
    assert good[0] == 200 and '"challenge"' in good[2], good
