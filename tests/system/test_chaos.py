"""`recon chaos` as a user runs it, short: a real scratch stack, real worker processes killed and
frozen, both servers restarted, and the verdict it prints. It must leave nothing behind."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.helpers import ROOT


def _chaos(*args: str, timeout: float) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RECON_", "OPENAI_"))
           and k not in ("DATABASE_URL", "TEMPORAL_ADDRESS")}
    env["PYTHONUNBUFFERED"] = "1"
    return subprocess.run([sys.executable, "-m", "recon.cli", "chaos", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def _scratch_dirs() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("recon-chaos-*")}


@pytest.mark.slow
def test_chaos_night_equals_the_control_night_and_cleans_up() -> None:
    before = _scratch_dirs()
    # The night under faults waits before its last step until every planned fault has landed
    # (recon/tools/chaos/plan.py HELD_STEP), so all eight land on a fast machine as on a slow one.
    done = _chaos("--invoices", "2000", "--kills", "5", "--freezes", "1", "--restarts", "1",
                  "--seed", "11", "--timeout", "400", timeout=480)
    out = done.stdout
    lines = out.strip().splitlines()
    assert lines and lines[-1] == "PASS", out[-4000:] + done.stderr[-2000:]
    assert done.returncode == 0
    # Every fault was really done and printed with its moment and target, and measured.
    applied = int(re.search(r"^(\d+) faults applied", out, re.M).group(1))
    assert applied == 8, out[-4000:]
    assert "not (the run finished first" not in out
    assert len(re.findall(r"crash → progress +[\d.]+ s, crash → finished +[\d.]+ s", out)) == applied
    kills = len(re.findall(r"^\[\s*[\d.]+s\] kill worker-\d+ \(pid \d+\): SIGKILL", out, re.M))
    assert kills == 5
    assert re.search(r"kill Temporal dev server .*SIGKILL", out), "the Temporal restart landed"
    assert re.search(r"start Temporal dev server again on the same data", out)
    assert re.search(r"stop Postgres \(immediate\)", out), "the Postgres restart landed"
    assert re.search(r"start Postgres again on the same data", out)
    if re.search(r"^\[\s*[\d.]+s\] freeze worker-\d+ \(pid \d+\): SIGSTOP", out, re.M):
        assert re.search(r"^\[\s*[\d.]+s\] thaw worker-\d+", out, re.M)
    control = re.search(r"^control: +(.*)$", out, re.M).group(1)
    faults = re.search(r"^under faults: +(.*)$", out, re.M).group(1)
    assert control == faults and "ledger_entries 200" in control and "model requests 2000" in control
    assert _scratch_dirs() <= before, "the scratch stack's temp dir was removed"
    assert not subprocess.run(["pgrep", "-f", "recon-chaos-"], capture_output=True).stdout


@pytest.mark.slow
def test_chaos_on_tryton_leaves_the_control_nights_moves_once_and_cleans_up() -> None:
    """`--ledger tryton`: both nights post into a Tryton of their own while the faults land; the
    books under faults hold the control night's moves, each key once, posted."""
    before = _scratch_dirs()
    done = _chaos("--invoices", "300", "--kills", "3", "--freezes", "1", "--restarts", "1",
                  "--seed", "5", "--ledger", "tryton", "--timeout", "600", timeout=700)
    out = done.stdout
    assert out.strip().splitlines()[-1:] == ["PASS"], out[-4000:] + done.stderr[-2000:]
    assert re.search(r"^Tryton: 30 moves in each night's books, each key once, posted, equal$",
                     out, re.M), out[-4000:]
    assert _scratch_dirs() <= before
    assert not subprocess.run(["pgrep", "-f", "recon-chaos-"], capture_output=True).stdout


def test_chaos_refuses_bad_input_in_one_line() -> None:
    for args in (("--invoices", "0"), ("--kills", "-1"), ("--date", "2026-13-01"),
                 ("--invoices", "10", "--mismatches", "999"), ("--ledger", "sap"),
                 ("--ledger", "tryton", "--nights", "2"), ("--mail-outage",),
                 ("--sources", "--format", "ubl"), ("--sources", "--nights", "2")):
        done = _chaos(*args, timeout=60)
        assert done.returncode != 0, args
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr, args


@pytest.mark.slow
def test_chaos_through_the_sources_takes_every_item_once_and_equals_the_control() -> None:
    """`--sources`: the night's invoices come by mail (Dovecot) and through a drop folder, its
    orders and receipts as ERP exports; half the faults land while step 1 fetches them."""
    from recon.runtime.imap_server import dovecot_path

    if dovecot_path() is None:
        pytest.skip("dovecot is not installed (.ci/run installs dovecot-imapd)")
    before = _scratch_dirs()
    done = _chaos("--sources", "--invoices", "150", "--kills", "3", "--freezes", "1",
                  "--restarts", "1", "--seed", "3", "--timeout", "200", timeout=260)
    out = done.stdout
    assert out.strip().splitlines()[-1:] == ["PASS"], out[-4000:] + done.stderr[-2000:]
    seeded = re.search(r"as each night's sources: (\d+) ERP export files, (\d+) files in a drop "
                       r"folder, (\d+) mails in a Dovecot mailbox", out)
    exports, files, mails = (int(n) for n in seeded.groups())
    assert files + mails == 150 and mails == 50 and exports == 9, out[-4000:]
    # Faults dealt into the fetch landed while it ran (the work done was below the fetch's).
    early = int(re.search(r"^(\d+) faults landed during the fetch", out, re.M).group(1))
    assert early >= 1, out[-4000:]
    assert re.search(rf"^under faults: {exports + 150} of {exports + 150} items settled, 0 pending,"
                     r" (\d+) documents imported, \1 invoices held$", out, re.M), out[-4000:]
    control = re.search(r"^control: +(.*)$", out, re.M).group(1)
    faults = re.search(r"^under faults: +(ledger_entries.*)$", out, re.M).group(1)
    assert control == faults, out[-4000:]
    assert f"source_items {exports + 150}" in control and "mail_messages 50" in control
    assert _scratch_dirs() <= before, "the scratch stack's temp dir was removed"
    assert not subprocess.run(["pgrep", "-f", "recon-chaos-"], capture_output=True).stdout, \
        "no worker, server or mail server left behind"


def test_chaos_sources_refuses_in_one_line_without_dovecot(monkeypatch: pytest.MonkeyPatch) -> None:
    from recon.domain.errors import Refused
    from recon.tools.chaos import sources
    from recon.tools.chaos.plan import ChaosPlan

    monkeypatch.setattr(sources, "dovecot_path", lambda: None)
    with pytest.raises(Refused) as refused:
        sources.refuse_without_dovecot(ChaosPlan(sources=True))
    assert "needs Dovecot" in str(refused.value) and "\n" not in str(refused.value)


def test_first_difference_names_the_row_and_column() -> None:
    from recon.tools.chaos.compare import first_difference

    control = {"ledger_entries": {("{run}:INV-1:1:qty",): {"amount_paise": 500, "kind": "qty"}},
               "model_calls": {("INV-1",): {"requests": 1}}}
    same = {k: {kk: dict(vv) for kk, vv in v.items()} for k, v in control.items()}
    assert first_difference(control, same) is None
    paid_twice = {**same, "model_calls": {("INV-1",): {"requests": 2}}}
    assert first_difference(control, paid_twice) == (
        "model_calls: INV-1 requests is 2 under faults, 1 in the control night")
    missing = {**same, "ledger_entries": {}}
    assert "missing under faults" in first_difference(control, missing)
    extra = {**same, "ledger_entries": {**same["ledger_entries"], ("{run}:INV-1:1:price",): {
        "amount_paise": 9, "kind": "price"}}}
    assert "{run}:INV-1:1:price is extra under faults" in first_difference(control, extra)


@pytest.mark.slow
def test_ctrl_c_stops_every_process_and_deletes_the_scratch_dir(tmp_path: Path) -> None:
    import signal
    import time

    env = {k: v for k, v in os.environ.items() if not k.startswith(("RECON_", "OPENAI_"))
           and k not in ("DATABASE_URL", "TEMPORAL_ADDRESS")}
    env["PYTHONUNBUFFERED"] = "1"
    log = tmp_path / "chaos.log"
    chaos = subprocess.Popen(
        [sys.executable, "-m", "recon.cli", "chaos", "--invoices", "300", "--kills", "3",
         "--freezes", "1", "--restarts", "1", "--seed", "5"],
        cwd=ROOT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 180
    while not re.search(r"\] (kill|freeze|stop) ", log.read_text()):
        assert chaos.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.1)
    chaos.send_signal(signal.SIGINT)
    assert chaos.wait(60) == 130
    out = log.read_text()
    root = re.search(r"scratch stack in (\S+):", out).group(1)
    assert not Path(root).exists()
    assert not subprocess.run(["pgrep", "-f", root], capture_output=True).stdout
    for pid in map(int, re.findall(r"pid (\d+)\)", out)):
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()


@pytest.mark.slow
def test_a_chaos_month_equals_its_control_month_and_cleans_up() -> None:
    """Three seeded nights whose orders span them (bills held on one night and claimed or cleared
    on a later one), run in order clean and under faults dealt over the nights: the month's books
    must be equal. Needs no particular matching rule: both databases run the same code."""
    before = _scratch_dirs()
    done = _chaos("--nights", "3", "--invoices", "200", "--mismatches", "20", "--kills", "3",
                  "--freezes", "0", "--restarts", "1", "--seed", "4", "--timeout", "500",
                  timeout=600)
    out = done.stdout
    lines = out.strip().splitlines()
    assert lines and lines[-1] == "PASS", out[-4000:] + done.stderr[-2000:]
    assert done.returncode == 0
    assert re.search(r"^seeded 3 nights from 2026-11-02 ", out, re.M)
    days = re.findall(r"^night (\d{4}-\d\d-\d\d) under faults: Completed", out, re.M)
    assert days == ["2026-11-02", "2026-11-03", "2026-11-04"]
    assert len(re.findall(r"^control night \d{4}-\d\d-\d\d: Completed", out, re.M)) == 3
    applied = [int(n) for n in re.findall(r"^(\d+) faults applied", out, re.M)]
    assert sum(applied) == 5 and len(applied) == 3 and min(applied) >= 1, out[-4000:]
    assert "not (the run finished first" not in out
    control = re.search(r"^control: +(.*)$", out, re.M).group(1)
    faults = re.search(r"^under faults: +(.*)$", out, re.M).group(1)
    assert control == faults and "stock_levels 30" in control
    # Every night's invoices were read once: three nights of 200, plus the month's stories.
    assert int(re.search(r"model requests (\d+)", control).group(1)) > 600
    assert _scratch_dirs() <= before, "the scratch stack's temp dir was removed"
    assert not subprocess.run(["pgrep", "-f", "recon-chaos-"], capture_output=True).stdout


def test_chaos_refuses_a_month_out_of_bounds_in_one_line() -> None:
    for args in (("--nights", "0"), ("--nights", "32"), ("--nights", "3", "--date", "9999-12-30")):
        done = _chaos(*args, timeout=60)
        assert done.returncode != 0, args
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr, args


@pytest.mark.slow
def test_chaos_in_batch_mode_makes_one_batch_a_night_and_equals_the_control() -> None:
    """`--model batch`: both nights extract through a loopback Batch API; workers are killed
    and frozen and both servers restarted while the night submits, waits for and reads its
    batch. The night under faults equals the control, and each night's provider made one batch
    and billed no request twice."""
    before = _scratch_dirs()
    done = _chaos("--model", "batch", "--invoices", "200", "--kills", "3", "--freezes", "1",
                  "--restarts", "1", "--seed", "3", "--timeout", "400", timeout=480)
    out = done.stdout
    lines = out.strip().splitlines()
    assert lines and lines[-1] == "PASS", out[-4000:] + done.stderr[-2000:]
    applied = int(re.search(r"^(\d+) faults applied", out, re.M).group(1))
    assert applied == 6, out[-4000:]
    # Beside the planned faults, the workers serving the night are killed in the batch's wait.
    assert re.search(r"^\[\s*[\d.]+s\] kill worker-\d+ \(pid \d+\): SIGKILL while the night waits "
                     r"for its batch$", out, re.M), out[-4000:]
    for night in ("control", "chaos"):
        assert re.search(rf"^{night} night's model batches: 1 planned, 1 created, 200 requests "
                         r"billed \(0 interactively\), 0 billed twice$", out, re.M), out[-4000:]
    control = re.search(r"^control: +(.*)$", out, re.M).group(1)
    faults = re.search(r"^under faults: +(.*)$", out, re.M).group(1)
    assert control == faults and "model requests 200" in control
    assert _scratch_dirs() <= before, "the scratch stack's temp dir was removed"


def test_chaos_refuses_a_bad_model_mode_in_one_line() -> None:
    for args in (("--model", "online"), ("--model", "batch", "--nights", "2")):
        done = _chaos(*args, timeout=60)
        assert done.returncode != 0, args
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr, args
        assert "--model" in done.stderr, args
