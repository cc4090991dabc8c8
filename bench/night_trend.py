"""Whether a history of nights makes a night dearer (bench/night.py --history K): each earlier
night in one line, the last against the first, and with ten or more the medians of the first and
last five and the least-squares line through every night, in seconds and in Postgres blocks."""

from __future__ import annotations

import statistics

from bench.night_report import step_order
from bench.night_run import Night

EDGE_NIGHTS = 5  # history nights at each end of a run whose medians are compared


def show_history(history: list[Night]) -> None:
    """The earlier nights, one line each, and how much dearer the last was than the first: the
    nights measured on top of them are only fair if history does not slow a night down."""
    print(f"\nhistory: {len(history)} nights of {history[0].invoices:,} invoices before the "
          f"measured night(s)")
    names = step_order({name for n in history for name in n.history.steps})
    # The CPU of each process over the whole run says which of them a dearer night spent it in.
    print(f"  {'night':<10}{'run s':>8}{'plain s':>8}{'ratio':>6}  "
          + "".join(f"{name[:7]:>8}" for name in names)
          + f"{'cpu py':>8}{'cpu tmp':>8}{'cpu pg':>8}{'pg kblk':>8}  counts")
    for n in history:
        verdict = "OK" if n.ok else "MISMATCH"
        walls = "".join(f"{n.history.steps[name].wall if name in n.history.steps else float('nan'):>8.2f}"
                        for name in names)
        cpu = "".join(f"{c:>8.2f}" for c in n.cpu.between(n.run_started, n.run_ended))
        print(f"  {n.day:<10}{n.run_seconds:>8.2f}{n.plain.seconds:>8.2f}{n.ratio:>6.1f}  {walls}"
              f"{cpu}{n.blocks / 1000:>8.0f}  {verdict}")
    first, last = history[0].run_seconds, history[-1].run_seconds
    print(f"  history seconds: {', '.join(f'{n.run_seconds:.2f}' for n in history)}")
    print(f"last vs first night: {(last - first) / first:+.0%} ({first:.2f} s -> {last:.2f} s)")
    if len(history) >= 2 * EDGE_NIGHTS:
        # One night swings by 15-30 % on a shared machine; five at each end say whether the
        # month made nights dearer, or one of them met a busy moment.
        head = statistics.median(n.run_seconds for n in history[:EDGE_NIGHTS])
        tail = statistics.median(n.run_seconds for n in history[-EDGE_NIGHTS:])
        print(f"last {EDGE_NIGHTS} vs first {EDGE_NIGHTS} nights (medians): "
              f"{(tail - head) / head:+.0%} ({head:.2f} s -> {tail:.2f} s)")
        # Every night counts in the fitted line, so one busy moment at either end moves it least.
        first_fit, last_fit = fitted_ends([n.run_seconds for n in history])
        print(f"fitted line, last vs first night: {(last_fit - first_fit) / first_fit:+.0%} "
              f"({first_fit:.2f} s -> {last_fit:.2f} s, least squares over all "
              f"{len(history)} nights)")
        # Seconds swing with the machine; the blocks a night reads do not.
        first_fit, last_fit = fitted_ends([n.blocks for n in history])
        print(f"Postgres blocks a night, fitted line, last vs first: "
              f"{(last_fit - first_fit) / first_fit:+.0%} ({first_fit:,.0f} -> {last_fit:,.0f})")


def fitted_ends(nightly: list[float]) -> tuple[float, float]:
    """The first and last night's values (seconds, blocks) on the least-squares line through
    all of them."""
    slope, intercept = statistics.linear_regression(range(len(nightly)), nightly)
    return intercept, intercept + slope * (len(nightly) - 1)

