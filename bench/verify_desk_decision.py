"""Verify passkey-signed decisions and requests from their stored evidence alone (docs/desk.md).

    uv run python bench/verify_desk_decision.py [--approver NAME]   # DATABASE_URL from the env

For each row of `passkey_assertions` (newest first) it checks, with the `webauthn` package and
hashlib only (recon's code only reads the rows), that the credential's public key on record signed
`authenticatorData || SHA-256(clientDataJSON)`, that the challenge in clientDataJSON is the SHA-256
of the stored canonical decision (or request: undo, redo, mail resend or dismiss), and prints what
was decided or asked. Origin and RP id are taken from the
evidence itself (clientDataJSON names the origin; the RP id hash is in authenticatorData and is
checked against RECON_DESK_RP_ID). Exit 1 if any row fails.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import sys

import asyncpg
from webauthn import verify_authentication_response
from webauthn.helpers import bytes_to_base64url
from webauthn.helpers.exceptions import WebAuthnException


def verify_row(row: dict, rp_id: str) -> str:
    """One line: what the decision says, or why its evidence does not verify."""
    canonical = bytes(row["canonical"])
    client_data = json.loads(bytes(row["client_data_json"]))
    credential = {
        "id": bytes_to_base64url(bytes(row["credential_id"])),
        "rawId": bytes_to_base64url(bytes(row["credential_id"])), "type": "public-key",
        "response": {"authenticatorData": bytes_to_base64url(bytes(row["authenticator_data"])),
                     "clientDataJSON": bytes_to_base64url(bytes(row["client_data_json"])),
                     "signature": bytes_to_base64url(bytes(row["signature"]))},
    }
    try:
        verified = verify_authentication_response(
            credential=credential, expected_challenge=hashlib.sha256(canonical).digest(),
            expected_rp_id=rp_id, expected_origin=client_data.get("origin", ""),
            credential_public_key=bytes(row["public_key"]), credential_current_sign_count=0,
            require_user_verification=True)
    except WebAuthnException as exc:
        return f"DOES NOT VERIFY ({row['approver']}): {exc}"
    d = json.loads(canonical)
    how = f"counter {verified.new_sign_count}; origin {client_data.get('origin')}"
    if "decision" not in d:  # a signed request: undo, redo, mail resend or dismiss
        target = d.get("run") or d.get("key")
        scope = f" supplier {d['supplier']}" if d.get("supplier") else ""
        return (f"verifies: {d['by']} signed {d['purpose']} of {target}{scope} at "
                f"{d['signed_at']} ({d.get('reason') or d.get('note') or 'no note'}; {how})")
    return (f"verifies: {d['by']} decided {d['decision']} on handover #{d['handover_no']} of "
            f"{d['run']} at {d['signed_at']} (park {d['park'] or 'nothing'}; {how})")


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--approver")
    parser.add_argument("--rp-id", default=os.environ.get("RECON_DESK_RP_ID", "localhost"))
    args = parser.parse_args()
    from recon.store.passkeys import latest_evidence  # reads the rows; verifies nothing

    conn = await asyncpg.connect(os.environ["DATABASE_URL"])
    try:
        rows = await latest_evidence(conn, args.approver)
    finally:
        await conn.close()
    if not rows:
        print("no passkey-signed decision on record")
        return 1
    lines = [verify_row(dict(r), args.rp_id) for r in rows]
    print("\n".join(lines))
    return 1 if any(line.startswith("DOES NOT") for line in lines) else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
