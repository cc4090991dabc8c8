"""Every numeric option has bounds, and every refusal is one line (exit code non-zero, no
traceback), with control characters shown escaped rather than cutting the line short."""

from __future__ import annotations

import asyncio

import pytest

from tests.helpers import recon_cli

HUGE = "1" + "0" * 30

BAD = [
    (("dev", "--port", "99999"), "--port"),
    (("dev", "--port", "-1"), "--port"),
    (("dev", "--port", "0"), "--port"),
    (("dev", "--ui-port", "65536"), "--ui-port"),
    (("dev", "--port", HUGE), "--port"),
    (("dev", "--port", "7300", "--ui-port", "7300"), "must differ"),
    (("seed", "--date", "2026-10-13", "--warehouse", "w", "--invoices", HUGE), "--invoices"),
    (("seed", "--date", "2026-10-13", "--warehouse", "w", "--invoices", "1000001"), "--invoices"),
    (("seed", "--date", "2026-10-13", "--warehouse", "w", "--invoices", "0"), "--invoices"),
    (("seed", "--date", "2026-10-13", "--warehouse", "w", "--invoices", "5",
      "--mismatches", "6"), "--mismatches 6 is more than --invoices 5"),
    (("seed", "--date", "2026-10-13", "--warehouse", "w", "--mismatches", "-1"), "--mismatches"),
    (("seed", "--date", "2026-10-13", "--warehouse", "w", "--seed", "-1"), "--seed"),
    (("seed", "--date", "2026-10-13", "--warehouse", "w", "--seed", HUGE), "--seed"),
    (("seed", "--date", "2026-10-13", "--warehouse", "w", "--invoices", "1e3"), "--invoices"),
    (("seed", "--date", "2026-10-13", "--warehouse", "w", "--format", "docx"),
     "--format must be one of text, ubl, gst, cii, facturx, pdf, mixed"),
    (("import", "--date", "2026-10-13", "--warehouse", "w"), "give a FOLDER or --maildir DIR"),
    (("import", "x", "--maildir", "y", "--date", "2026-10-13", "--warehouse", "w"),
     "give a FOLDER or --maildir DIR"),
    (("import", "--maildir", "/nowhere", "--date", "2026-10-13", "--warehouse", "w"),
     "/nowhere is not a Maildir"),
    (("supplier", "S001", "--gstin", "12345"), "--gstin must be a 15-character GSTIN"),
    (("supplier", "S001", "--gstin", "27AAPFU0939F1ZW"), "the GSTIN checksum gives V"),
    (("supplier", "S001", "--endpoint", "7300010000001"), "--endpoint must be scheme:id"),
]


@pytest.mark.parametrize(("args", "named"), BAD, ids=[" ".join(a[0][:1] + a[0][-2:]) for a in BAD])
async def test_numbers_out_of_bounds_are_one_line(stack, args, named) -> None:
    done = await asyncio.to_thread(recon_cli, stack.env(), *args)
    assert done.returncode in (1, 2), done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith("error: ") and named in lines[0]


async def test_dev_with_a_bad_port_starts_nothing(stack, tmp_path) -> None:
    home = tmp_path / "home"
    done = await asyncio.to_thread(recon_cli, stack.env(RECON_HOME=str(home)), "dev",
                                   "--port", "99999")
    assert done.returncode == 2
    assert not (home / "pgdata").exists(), "refused before any server was started"


@pytest.mark.parametrize(("args", "expected"), [
    # a refusal raised inside a command: user_errors -> _fail
    (("import", "/nowhere/in\nerror: forged", "--date", "2026-10-13", "--warehouse", "w"),
     "error: /nowhere/in\\nerror: forged is not a folder"),
    # a usage error: main -> _exit_line
    (("no-such\nerror: forged",), "error: No such command 'no-such\\nerror: forged'."),
    (("import", "/nowhere/a\r\x1b[2Jb", "--date", "2026-10-13", "--warehouse", "w"),
     "error: /nowhere/a\\r\\x1b[2Jb is not a folder"),
])
async def test_control_characters_are_escaped_in_error_lines(stack, args, expected) -> None:
    done = await asyncio.to_thread(recon_cli, stack.env(), *args)
    assert done.returncode != 0
    assert done.stderr == expected + "\n", "the whole message, on one line, escaped"
