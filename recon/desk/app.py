"""The desk's web application (Starlette, server-rendered Jinja2 pages): routes, sessions, CSRF
and the security headers (docs/desk.md, "Security rules").

Rules every response keeps: `Content-Security-Policy: default-src 'self'` (no inline script; the
only script is static/desk.js, for the WebAuthn calls), no caching, no framing, no Referer. Every
POST carries the session's CSRF token in `X-CSRF-Token` and, when the browser says where it comes
from, the desk's own Origin. Every string a page shows is escaped by Jinja and then has its control
and bidirectional characters written as escapes (`printable`), so a supplier's `<b>` or U+202E is
shown, never obeyed.
"""

from __future__ import annotations

import base64
import hmac
import json
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
from jinja2 import Environment, FileSystemLoader
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from temporalio.client import Client

from recon.desk import ceremonies, month, night_details, nights
from recon.desk import requests as signed_requests
from recon.desk.sessions import COOKIE, Session, Sessions
from recon.desk.throttle import Throttle
from recon.domain.decisions import MAX_NOTE, MAX_PARK, canonical_decision, signing_time
from recon.domain.errors import DecisionRefused, Refusal
from recon.domain.models import DECISIONS, Decision
from recon.domain.money import amount, rupees
from recon.domain.passkeys import RelyingParty, challenge_of
from recon.domain.printable import printable
from recon.ops.decisions import park_refs, send_decision
from recon.runtime.config import Settings, load_settings
from recon.store import bounces, mail_deliveries, passkeys

HERE = Path(__file__).parent
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
       "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")
OPEN = ("/signin", "/enroll", "/static/")  # pages and calls before signing in
THROTTLED = ("/signin/options", "/enroll/options")  # each starts a ceremony


def _shown(value: object) -> object:
    """Every `{{ }}` of a page: strings with control and bidi characters as escapes (Jinja's
    autoescape then escapes HTML)."""
    if isinstance(value, Markup):  # built escaped by the desk itself (the charts' SVG)
        return value
    return printable(value, keep_newlines=True) if isinstance(value, str) else value


def templates() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True,
                      finalize=_shown)
    env.filters["rupees"] = rupees
    env.filters["amount"] = amount
    return env


class Desk:
    """The desk process's state: its clients (never reachable from a page) and sessions."""

    def __init__(self, pool: asyncpg.Pool, client: Client, origin: str, rp_id: str,
                 settings: Settings | None = None) -> None:
        self.pool, self.client = pool, client
        self.origin, self.rp_id = origin.rstrip("/"), rp_id
        self.settings = settings or load_settings()  # a request's task queue, max age
        self.secure = self.origin.startswith("https://")
        self.sessions = Sessions()
        self.throttle = Throttle()
        self.env = templates()

    def page(self, request: Request, name: str, status: int = 200, **context) -> HTMLResponse:
        session: Session = request.state.session
        html = self.env.get_template(name).render(csrf=session.csrf, approver=session.approver,
                                                  **context)
        return HTMLResponse(html, status_code=status)


class Guard(BaseHTTPMiddleware):
    """Session, sign-in, CSRF and Origin on the way in; cookie and security headers on the way out."""

    def __init__(self, app, desk: Desk) -> None:
        super().__init__(app)
        self.desk = desk

    async def dispatch(self, request: Request, call_next) -> Response:
        desk = self.desk
        session = desk.sessions.get(request.cookies.get(COOKIE)) or desk.sessions.new()
        request.state.session = session
        response = await self._checked(request, session, call_next)
        session = request.state.session  # rotated by sign-in or sign-out
        response.set_cookie(COOKIE, session.id, httponly=True, samesite="strict",
                            secure=desk.secure, path="/")
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["Cache-Control"] = "no-store"
        return response

    async def _checked(self, request: Request, session: Session, call_next) -> Response:
        if request.method == "POST":
            origin = request.headers.get("origin")
            if origin is not None and origin != self.desk.origin:
                return PlainTextResponse("refused: this request comes from another site", 403)
            token = request.headers.get("x-csrf-token", "")
            if not hmac.compare_digest(token.encode(), session.csrf.encode()):
                return PlainTextResponse("refused: missing or wrong CSRF token", 403)
            if request.url.path in THROTTLED and not self.desk.throttle.allow(
                    request.client.host if request.client else ""):
                return JSONResponse({"ok": False, "line": "too many sign-in attempts from here: "
                                                         "wait a minute"}, 429)
        if not request.url.path.startswith(OPEN):
            if session.approver is not None:
                if session.credential is None or not await passkeys.still_signed_in(
                        self.desk.pool, session.approver, session.credential):
                    request.state.session = self.desk.sessions.rotate(session, None)
                    session = request.state.session
            if session.approver is None:
                if request.method == "POST":
                    return JSONResponse({"ok": False, "line": "sign in first"}, 401)
                return RedirectResponse("/signin", 303)
        return await call_next(request)


MAX_BODY = 64 * 1024  # an assertion and a decision are a few kilobytes


async def _json(request: Request) -> dict:
    """The POST's JSON object, or {} (refused by the caller) when it is not one or too big; read
    no further than MAX_BODY."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            return {}
    try:
        value = json.loads(body)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _refused(line: str, status: int = 400) -> JSONResponse:
    return JSONResponse({"ok": False, "line": line}, status)


def routes(desk: Desk) -> list:
    async def home(request: Request) -> Response:
        return RedirectResponse("/nights", 303)

    async def signin_page(request: Request) -> Response:
        return desk.page(request, "signin.html.j2")

    async def signin_options(request: Request) -> Response:
        options, challenge = ceremonies.sign_in_options(desk.rp_id)
        session: Session = request.state.session
        session.challenge, session.purpose = challenge, "sign-in"
        return JSONResponse({"ok": True, "options": json.loads(options)})

    async def signin_verify(request: Request) -> Response:
        session: Session = request.state.session
        challenge, session.challenge = session.challenge, None  # one answer per challenge
        if challenge is None or session.purpose != "sign-in":
            return _refused("sign-in refused: ask for a new challenge (reload the page)")
        try:
            name, credential = await ceremonies.sign_in(desk.pool, await _json(request), challenge=challenge,
                                            rp_id=desk.rp_id, origin=desk.origin)
        except ceremonies.CeremonyRefused as exc:
            return _refused(str(exc), 403)
        request.state.session = desk.sessions.rotate(session, name, credential)
        return JSONResponse({"ok": True, "line": f"signed in as {name}", "next": "/nights"})

    async def signout(request: Request) -> Response:
        request.state.session = desk.sessions.rotate(request.state.session, None)
        return JSONResponse({"ok": True, "line": "signed out", "next": "/signin"})

    async def enroll_page(request: Request) -> Response:
        return desk.page(request, "enroll.html.j2")

    async def enroll_options(request: Request) -> Response:
        token = str((await _json(request)).get("token", ""))[:200]
        try:
            options, challenge, digest = await ceremonies.enrollment_options(desk.pool, token,
                                                                             desk.rp_id)
        except ceremonies.CeremonyRefused as exc:
            return _refused(str(exc), 403)
        session: Session = request.state.session
        session.challenge, session.purpose, session.enroll_token = challenge, "enroll", digest
        return JSONResponse({"ok": True, "options": json.loads(options)})

    async def enroll_verify(request: Request) -> Response:
        session: Session = request.state.session
        challenge, session.challenge = session.challenge, None
        if challenge is None or session.purpose != "enroll" or session.enroll_token is None:
            return _refused("enrollment refused: open the link again")
        try:
            name = await ceremonies.enroll(desk.pool, await _json(request), challenge=challenge,
                                           token_sha256=session.enroll_token, rp_id=desk.rp_id,
                                           origin=desk.origin)
        except ceremonies.CeremonyRefused as exc:
            return _refused(str(exc), 403)
        return JSONResponse({"ok": True, "line": f"passkey registered for {name}: sign in with it",
                             "next": "/signin"})

    async def nights_page(request: Request) -> Response:
        """Every night, or those in one state and whose name holds a text (a warehouse, a
        date): a plain GET form, no script needed."""
        lines = await nights.listed(desk.pool, desk.client)
        state = request.query_params.get("state", "")
        text = request.query_params.get("night", "")[:100]
        shown = [n for n in lines if (not state or n.state == state) and text in n.workflow_id]
        return desk.page(request, "nights.html.j2", nights=shown, states=nights.STATES,
                         state=state, text=text, total=len(lines))

    async def night_page(request: Request) -> Response:
        run = request.path_params["run"]
        night = await nights.night(desk.pool, desk.client, run)
        if night is None:
            return desk.page(request, "missing.html.j2", 404, run=run)
        return desk.page(request, "night.html.j2", run=run, **night,
                         **await night_details.details(desk.pool, run))

    async def handover_page(request: Request) -> Response:
        run = request.path_params["run"]
        night = await nights.night(desk.pool, desk.client, run)
        if night is None:
            return desk.page(request, "missing.html.j2", 404, run=run)
        pending = [h for h in night["handovers"] if h["decision"] is None]
        return desk.page(request, "handover.html.j2", run=run, pending=pending[-1] if pending
                         else None, decisions=DECISIONS, **night)

    async def decide_options(request: Request) -> Response:
        session: Session = request.state.session
        body = await _json(request)
        try:
            fields = await _decision_fields(desk, body)
        except DecisionRefused as exc:
            return _refused(str(exc))
        canonical = canonical_decision(by=session.approver or "", **fields)
        try:
            options = await ceremonies.decision_options(desk.pool, session.approver or "",
                                                        challenge_of(canonical), desk.rp_id)
        except ceremonies.CeremonyRefused as exc:
            return _refused(str(exc), 403)
        return JSONResponse({"ok": True, "options": json.loads(options), "fields": fields})

    async def decide(request: Request) -> Response:
        """Send the signed decision the way `recon approve` does; the worker's check (against
        Postgres) takes or refuses it, and its one line is the page's answer."""
        session: Session = request.state.session
        body = await _json(request)
        fields = body.get("fields")
        if not isinstance(fields, dict):
            return _refused("refused: no decision")
        try:
            proof, signature = ceremonies.proof_of(body.get("assertion") or {})
            decision = Decision(
                decision=str(fields.get("decision", "")), by=session.approver or "",
                note=str(fields.get("note", ""))[:MAX_NOTE + 1],
                handover_no=int(fields.get("handover_no", 0)),
                park=[str(p) for p in (fields.get("park") or [])][:MAX_PARK + 1],
                signed_at=str(fields.get("signed_at", ""))[:64],
                signature=base64.b64encode(signature).decode(), passkey=proof)
            run = str(fields.get("run", ""))[:200]
            line = await send_decision(desk.client, run, decision)
        except (ceremonies.CeremonyRefused, DecisionRefused) as exc:
            return _refused(str(exc), 409)
        except (TypeError, ValueError):
            return _refused("refused: not a decision the desk makes")
        return JSONResponse({"ok": True, "line": line})

    async def requests_page(request: Request) -> Response:
        """Undo the night or one supplier, redo what an undo took back, answer a refused
        message: each form signed on submit by a fresh assertion (recon/desk/requests.py)."""
        run = request.path_params["run"]
        night = await nights.night(desk.pool, desk.client, run)
        if night is None:
            return desk.page(request, "missing.html.j2", 404, run=run)
        return desk.page(request, "requests.html.j2", run=run, line=night["line"],
                         **await signed_requests.facts(desk.pool, run))

    async def message_page(request: Request) -> Response:
        key = request.path_params["key"]
        row = await mail_deliveries.get_message(desk.pool, key)
        if row is None:
            return desk.page(request, "missing.html.j2", 404, run=key)
        return desk.page(request, "message.html.j2", message=row,
                         open=await bounces.is_open(desk.pool, key))

    async def request_options(request: Request) -> Response:
        """The request as it will be signed, and the options of an assertion over its hash; asked
        first what the CLI refuses before anyone signs."""
        session: Session = request.state.session
        try:
            fields = signed_requests.fields_of(await _json(request))
            await signed_requests.ask(desk.pool, desk.client, fields)
            canonical = signed_requests.canonical_of(fields, session.approver or "")
            options = await ceremonies.decision_options(desk.pool, session.approver or "",
                                                        challenge_of(canonical), desk.rp_id)
        except ceremonies.CeremonyRefused as exc:
            return _refused(str(exc), 403)
        except (Refusal, LookupError, ValueError) as exc:
            return _refused(_refusal_line(exc))
        return JSONResponse({"ok": True, "options": json.loads(options), "fields": fields})

    async def signed_request(request: Request) -> Response:
        """Hand the signed request to where the CLI's goes (the workflow's check, the mail
        transaction), which takes or refuses it against Postgres; its one line is the answer."""
        session: Session = request.state.session
        body = await _json(request)
        posted = body.get("fields")
        if not isinstance(posted, dict):
            return _refused("refused: no request")
        try:
            fields = signed_requests.fields_of(posted, str(posted.get("signed_at", ""))[:64])
            proof, signature = ceremonies.proof_of(body.get("assertion") or {})
            line = await signed_requests.act(
                desk.pool, desk.client, desk.settings, RelyingParty(desk.rp_id, desk.origin),
                fields, session.approver or "", base64.b64encode(signature).decode(), proof)
        except ceremonies.CeremonyRefused as exc:
            return _refused(_refusal_line(exc), 409)
        except (Refusal, LookupError, ValueError) as exc:
            return _refused(_refusal_line(exc), 409)
        return JSONResponse({"ok": True, "line": printable(line)})

    return [
        Route("/", home), Route("/signin", signin_page),
        Route("/signin/options", signin_options, methods=["POST"]),
        Route("/signin/verify", signin_verify, methods=["POST"]),
        Route("/signout", signout, methods=["POST"]),
        Route("/enroll", enroll_page),
        Route("/enroll/options", enroll_options, methods=["POST"]),
        Route("/enroll/verify", enroll_verify, methods=["POST"]),
        Route("/nights", nights_page),
        Route("/night/{run}", night_page),
        Route("/night/{run}/handover", handover_page),
        Route("/decide/options", decide_options, methods=["POST"]),
        Route("/decide", decide, methods=["POST"]),
        *month.routes(desk),
        Route("/night/{run}/requests", requests_page),
        Route("/message/{key:path}", message_page),
        Route("/request/options", request_options, methods=["POST"]),
        Route("/request", signed_request, methods=["POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]


async def _decision_fields(desk: Desk, body: dict) -> dict:
    """The decision as it will be signed: the park list as the run's references (as `recon
    approve --park` sends it), sorted, and the time it is signed at."""
    decision = str(body.get("decision", ""))
    if decision not in DECISIONS:
        raise DecisionRefused(f"choose one of {', '.join(DECISIONS)}")
    note = str(body.get("note", ""))
    if len(note) > MAX_NOTE:
        raise DecisionRefused(f"the note is at most {MAX_NOTE} characters")
    park = [str(p) for p in (body.get("park") or []) if str(p).strip()]
    if len(park) > MAX_PARK:
        raise DecisionRefused(f"at most {MAX_PARK} invoices in one decision")
    run = str(body.get("run", ""))[:200]
    try:
        handover_no = int(body.get("handover_no", 0))
    except (TypeError, ValueError):
        raise DecisionRefused("which handover?") from None
    park = sorted(set(await park_refs(desk.pool, run, park)))
    return {"run": run, "handover_no": handover_no, "decision": decision, "note": note,
            "park": park, "signed_at": signing_time(datetime.now(UTC))}


def _refusal_line(exc: Exception) -> str:
    """A refusal as the page's one line, starting "refused:"."""
    line = " ".join(printable(str(exc)).split())
    return line if line.startswith("refused") else f"refused: {line}"


def make_app(pool: asyncpg.Pool, client: Client, origin: str, rp_id: str,
             settings: Settings | None = None) -> Starlette:
    desk = Desk(pool, client, origin, rp_id, settings)
    app = Starlette(routes=routes(desk), middleware=[Middleware(Guard, desk=desk)])
    app.state.desk = desk  # for tests and benches that sign a session in without a browser
    return app
