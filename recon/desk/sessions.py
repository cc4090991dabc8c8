"""Desk sessions, held in the desk process's memory: a random id in an HttpOnly, SameSite=Strict
cookie (Secure when the origin is https), a CSRF token per session, and the WebAuthn challenge
the session is waiting on. A session says who is reading; it moves no money: every decision is a
fresh passkey assertion checked by the worker against Postgres.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field

COOKIE = "recon_desk"
IDLE_SECONDS = 30 * 60
MAX_SESSIONS = 10_000  # a flood of anonymous visits drops the oldest sessions, never grows forever


@dataclass
class Session:
    id: str
    csrf: str
    approver: str | None = None
    credential: bytes | None = None  # the passkey it signed in with: revoking it ends the session
    challenge: bytes | None = None  # what the next sign-in or enrollment must answer
    purpose: str = ""  # "sign-in" or "enroll"
    enroll_token: bytes | None = None  # the SHA-256 of the enrollment token being answered
    seen: float = field(default_factory=time.monotonic)


class Sessions:
    def __init__(self) -> None:
        self._by_id: dict[str, Session] = {}

    def get(self, session_id: str | None) -> Session | None:
        s = self._by_id.get(session_id or "")
        if s is None:
            return None
        if time.monotonic() - s.seen > IDLE_SECONDS:
            self._by_id.pop(s.id, None)
            return None
        s.seen = time.monotonic()
        return s

    def new(self) -> Session:
        if len(self._by_id) >= MAX_SESSIONS:  # the oldest made goes first (dicts keep order)
            self._by_id.pop(next(iter(self._by_id)), None)
        s = Session(id=secrets.token_urlsafe(32), csrf=secrets.token_urlsafe(32))
        self._by_id[s.id] = s
        return s

    def rotate(self, old: Session, approver: str | None,
               credential: bytes | None = None) -> Session:
        """A new id (and CSRF token) on signing in or out: an id seen before sign-in never
        carries a signed-in session (session fixation)."""
        self._by_id.pop(old.id, None)
        s = self.new()
        s.approver, s.credential = approver, credential
        return s

    def drop_approver(self, approver: str) -> None:
        for s in self._by_id.values():
            if s.approver == approver:
                s.approver = None
