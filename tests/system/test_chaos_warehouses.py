"""`recon chaos --warehouses N` as a user runs it, small: several warehouses' nights together on
one fleet, workers killed and frozen and both servers restarted while they run, each night equal
to its own control. It must leave nothing behind."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.system.test_chaos import _chaos, _scratch_dirs


@pytest.mark.slow
def test_warehouses_under_faults_each_equal_their_control_and_clean_up() -> None:
    before = _scratch_dirs()
    done = _chaos("--warehouses", "3", "--invoices", "100", "--kills", "2", "--freezes", "1",
                  "--restarts", "1", "--seed", "5", "--timeout", "400", timeout=480)
    out = done.stdout
    lines = out.strip().splitlines()
    assert lines and lines[-1] == "PASS", out[-4000:] + done.stderr[-2000:]
    assert done.returncode == 0
    assert re.search(r"^control: 3 nights Completed", out, re.M), out[-4000:]
    # Every fault landed while the three nights ran (they wait before their last step for it).
    assert int(re.search(r"^(\d+) faults applied", out, re.M).group(1)) == 5, out[-4000:]
    assert "not (the run finished first" not in out
    assert len(re.findall(r"^\[\s*[\d.]+s\] kill worker-\d+ \(pid \d+\): SIGKILL", out, re.M)) == 2
    assert re.search(r"kill Temporal dev server .*SIGKILL", out)
    assert re.search(r"stop Postgres \(immediate\)", out)
    # Each warehouse compared with its own control: the head office's 100 invoices, the
    # branches' 10 each (a tenth), every model request once.
    equal = re.findall(r"^(chaos\d\d): .*model requests (\d+): equal to its control$", out, re.M)
    assert equal == [("chaos01", "100"), ("chaos02", "10"), ("chaos03", "10")], out[-4000:]
    assert _scratch_dirs() <= before, "the scratch stack's temp dir was removed"
    # Nothing of its own left running (its processes name its scratch dir; the machine may run
    # other scratch stacks meanwhile).
    scratch = re.search(r"^scratch stack in (\S+):", out, re.M).group(1)
    left = subprocess.run(["pgrep", "-f", scratch], capture_output=True, text=True).stdout.split()
    assert not [pid for pid in left if not _defunct(pid)], left


def _defunct(pid: str) -> bool:
    """An exited process its parent has not reaped yet is not left running."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_warehouses_refuses_bad_input_in_one_line() -> None:
    for args in (("--warehouses", "21"), ("--warehouses", "2", "--nights", "2")):
        done = _chaos(*args, timeout=60)
        assert done.returncode != 0, args
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr, args
