"""What bench/night.py prints of its measured nights: each night's table (seconds, steps with their
CPU per process, history size, counts checked against the seed, plain cost and the ratio), and
with more than one night the median, min and max of every number."""

from __future__ import annotations

import statistics

from bench.night_events import HISTORY_LIMIT, HISTORY_WARN, PAYLOAD_WARN
from bench.night_run import WAREHOUSE, Night
from recon.domain.keys import workflow_id_for
from recon.domain.steps import STEPS


def step_order(names) -> list[str]:
    known = [n for n in STEPS if n in names]
    return known + sorted(n for n in names if n not in STEPS)


def show_night(n: Night) -> None:
    h = n.history
    print(f"\nnight {n.day} ({workflow_id_for(n.day, WAREHOUSE)})")
    print(f"  invoices                 {n.invoices:>12,}")
    print(f"  seed seconds             {n.seed_seconds:>12.2f}")
    print(f"  run seconds (wall)       {n.run_seconds:>12.2f}")
    print(f"  postgres blocks          {n.blocks:>12,}  (read or hit during the run)")
    print(f"  invoices per second      {n.per_second:>12,.1f}")
    workers = "1 in the bench process" if n.workers == 0 else f"{n.workers} processes"
    print(f"  workers                  {workers:>12}")
    print(f"  {'step':<24}{'wall s':>10}{'share':>8}{'acts':>7}{'mean act s':>12}{'max try':>9}"
          f"{'cpu py':>9}{'cpu tmp':>9}{'cpu pg':>9}")
    for name in step_order(h.steps):
        s = h.steps[name]
        mean = s.busy / s.activities if s.activities else 0.0
        py, tmp, pg = n.cpu.between(s.first_scheduled or 0.0, s.last_completed or 0.0)
        print(f"  {name:<24}{s.wall:>10.2f}{s.wall / n.run_seconds:>8.1%}{s.activities:>7}"
              f"{mean:>12.2f}{s.attempts_max:>9}{py:>9.2f}{tmp:>9.2f}{pg:>9.2f}")
    py, tmp, pg = n.cpu.between(n.run_started, n.run_ended)
    print(f"  {'(whole run)':<24}{n.run_seconds:>10.2f}{'':>36}{py:>9.2f}{tmp:>9.2f}{pg:>9.2f}")
    steps_sum = sum(s.wall for s in h.steps.values())
    span = h.last_event - h.first_event
    print(f"  {'(sum of steps)':<24}{steps_sum:>10.2f}{steps_sum / n.run_seconds:>8.1%}")
    print(f"  {'(history first..last)':<24}{span:>10.2f}   between steps: {span - steps_sum:.2f} s")
    warn = "over the warning" if h.events > HISTORY_WARN else "under the warning"
    print(f"  history events           {h.events:>12,}  ({warn} of {HISTORY_WARN:,}; "
          f"limit {HISTORY_LIMIT:,})")
    print(f"  history bytes            {h.history_bytes:>12,}")
    flag = "over 256 KB warning" if h.largest_payload > PAYLOAD_WARN else "ok"
    print(f"  largest payload bytes    {h.largest_payload:>12,}  ({flag}; {h.largest_where})")
    for label, (got, want) in n.checks.items():
        verdict = "OK" if got == want else "MISMATCH"
        print(f"  {label:<24} {got:>12,}  expected {want:,}: {verdict}")
    print(f"  (mismatches flagged {n.counts['mismatches_flagged']:,}, parked items "
          f"{n.counts['parked']:,})")
    p = n.plain
    print(f"  plain: parse {p.documents:,} documents {p.parse_seconds:.2f} s, COPY {p.rows:,} rows "
          f"{p.copy_seconds:.2f} s, together {p.seconds:.2f} s")
    print(f"night/plain ratio: {n.ratio:.1f}")


def show_median(nights: list[Night]) -> None:
    def med(xs) -> float:
        return statistics.median(xs)

    print(f"\nmedian of {len(nights)} nights ({', '.join(n.day for n in nights)})")
    print(f"  {'':<24}{'median':>12}{'min':>12}{'max':>12}")
    for label, xs in (("history events", [n.history.events for n in nights]),
                      ("largest payload bytes", [n.history.largest_payload for n in nights])):
        print(f"  {label:<24}{med(xs):>12,.0f}{min(xs):>12,}{max(xs):>12,}")
    rows = [
        ("seed seconds", [n.seed_seconds for n in nights]),
        ("run seconds (wall)", [n.run_seconds for n in nights]),
        ("invoices per second", [n.per_second for n in nights]),
        ("plain seconds", [n.plain.seconds for n in nights]),
        ("night/plain ratio", [n.ratio for n in nights]),
    ]
    names = step_order({name for n in nights for name in n.history.steps})
    rows += [(f"step {name}", [n.history.steps[name].wall for n in nights
                               if name in n.history.steps]) for name in names]
    for label, xs in rows:
        print(f"  {label:<24}{med(xs):>12,.2f}{min(xs):>12,.2f}{max(xs):>12,.2f}")
    bad = [n.day for n in nights if not n.ok]
    print(f"  counts: {'OK on every night' if not bad else 'MISMATCH on ' + ', '.join(bad)}")

