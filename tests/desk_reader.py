"""A signed-in reading session on the desk without a browser, for tests, benches and screenshots.

A desk session is good only while the passkey it signed in with is on record and not revoked
(every page asks Postgres). A reader that never went through a browser gets a passkey of its
own through the ordinary one-time enrollment (a token spent in the same statement that registers
the credential), with a public key nobody holds: it reads pages and can sign nothing.
"""

import hashlib
import secrets
from datetime import UTC, datetime, timedelta

from recon.desk.sessions import Session
from recon.store import passkeys


async def reading_session(desk, approver: str) -> Session:
    """A session for `approver` signed in with a freshly enrolled passkey that can sign nothing."""
    token = hashlib.sha256(secrets.token_bytes(32)).digest()
    credential = secrets.token_bytes(16)
    await passkeys.add_enrollment(desk.pool, token, approver, datetime.now(UTC) + timedelta(minutes=5))
    enrolled = await passkeys.enroll(desk.pool, token, credential, secrets.token_bytes(77), 0, [])
    if enrolled != approver:
        raise RuntimeError(f"{approver} could not be given a reading passkey (not an active approver?)")
    return desk.sessions.rotate(desk.sessions.new(), approver, credential)
