#!/usr/bin/env python3
"""What waking early costs and buys: slot lateness, missed slots and the RT threads' CPU of
a TDMA segment with ``[rt] wake_early`` off and on, in turn.

Each run brings up N stations on the lab's wire (rtnet.labsegment: the planner's schedule,
one probe per cycle in every station's RT slot, the wire captured), first with the RT
threads sleeping until each deadline, then with them waking a learnt margin before the
deadlines at which a frame may leave and spinning to them.  The runs alternate off, on,
off, on..., so the machine's drift meets both alike; cyclictest at the stations'
priority runs before and after, and a run whose two baselines disagree (p99 more than 2x
apart) is flagged.  Every run is kept in the JSON; the figures are medians [min..max]
over the runs, per mode:

- slot lateness p50 and p99 of the slaves, and the master's apart (its RT slot follows
  its own Sync and runs with the Sync's wake-up, in the same kick);
- missed slots of all stations, per 1,000 cycles;
- the RT threads' CPU in seconds per second, spinning included.

    python3 -m tools.bench_wake_early [--stations 3] [--cycles 5000] [--runs 3]
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import sys

from rtnet.argtypes import integer
from rtnet.benchkit import sysinfo
from rtnet.labsegment import run_segment
from rtnet.sigterm import unwind_on_sigterm
from tools.bench_aggregate import show, spread
from tools.bench_runs import code_version, write_json
from tools.bench_scale import cyclictest

MAX_RUNS = 20
BASELINE_S = 5


def figures(report: dict) -> dict:
    """One run's figures (see the module's docstring)."""
    slaves = [s for s in report["stations"] if s["role"] != "master"]
    master = next(s for s in report["stations"] if s["role"] == "master")
    return {
        "slave_lateness_p50_us": statistics.median(s["slot_lateness_us"]["p50"] for s in slaves),
        "slave_lateness_p99_us": max(s["slot_lateness_us"]["p99"] for s in slaves),
        "master_lateness_p50_us": master["slot_lateness_us"]["p50"],
        "missed_per_1000_cycles": 1000
        * sum(s["missed_slots"] for s in report["stations"])
        / report["cycles"],
        "rt_cpu_s_per_s": report["rt_cpu_s_per_s"],
        "wake_early_us": max(s["wake_early_us"] for s in report["stations"]),
    }


LABELS = {
    "slave_lateness_p50_us": ("slaves' slot lateness p50 (median of stations), us", 1),
    "slave_lateness_p99_us": ("slaves' slot lateness p99 (worst station), us", 1),
    "master_lateness_p50_us": ("master's slot lateness p50 (after its own Sync), us", 1),
    "missed_per_1000_cycles": ("missed slots per 1,000 cycles, all stations", 1),
    "rt_cpu_s_per_s": ("RT threads' CPU, s/s", 3),
    "wake_early_us": ("margin learnt (largest station), us", 0),
}


def table(runs: list[dict]) -> list[str]:
    lines = ["| figure | wake_early off | wake_early on |", "|---|---|---|"]
    for key, (label, nd) in LABELS.items():
        cells = [
            show(spread([r["figures"][key] for r in runs if r["wake_early"] is on]), nd)
            for on in (False, True)
        ]
        lines.append(f"| {label} | {cells[0]} | {cells[1]} |")
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--stations", type=integer("stations", 3, 16), default=3)
    p.add_argument("--cycles", type=integer("cycles", 500, 1_000_000), default=5000)
    p.add_argument("--runs", type=integer("runs", 1, MAX_RUNS), default=3)
    p.add_argument("--output", default=None, help="default results/bench_wake_early/<code>.json")
    a = p.parse_args(argv)
    code = code_version()
    out = a.output or os.path.join("results", "bench_wake_early", f"{code}.json")
    runs = []
    for k in range(a.runs):
        for on in (False, True):
            before = cyclictest(a.stations, BASELINE_S)
            report = run_segment("we", a.stations, cycles=a.cycles, wake_early=on)
            after = cyclictest(a.stations, BASELINE_S)
            p99s = sorted((before["p99"], after["p99"]))
            run = {
                "run": k + 1,
                "wake_early": on,
                "segment": report,
                "figures": figures(report),
                "cyclictest": {"before": before, "after": after},
                "flagged": p99s[0] > 0 and p99s[1] > 2 * p99s[0],
            }
            runs.append(run)
            f = run["figures"]
            print(
                f"run {k + 1} wake_early {'on ' if on else 'off'}: slaves' lateness p50 "
                f"{f['slave_lateness_p50_us']:.1f} p99 {f['slave_lateness_p99_us']:.1f} us, "
                f"missed {f['missed_per_1000_cycles']:.1f}/1000 cycles, RT CPU "
                f"{f['rt_cpu_s_per_s']:.3f} s/s, margin {f['wake_early_us']:.0f} us; "
                f"cyclictest p99 {before['p99']:.0f}/{after['p99']:.0f} us"
                + ("  FLAGGED: baselines disagree" if run["flagged"] else "")
            )
            os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
            write_json(
                out,
                {
                    "date": datetime.datetime.now().isoformat(timespec="seconds"),
                    "code": code,
                    "system": sysinfo(),
                    "stations": a.stations,
                    "cycles": a.cycles,
                    "runs": runs,
                },
            )
    print(f"# {a.stations} stations, {a.cycles} cycles a run, {a.runs} run(s) each way, {code}")
    print("\n".join(table(runs)))
    print(f"# every run: {out}")
    return 0


if __name__ == "__main__":
    unwind_on_sigterm()  # stopped with SIGTERM, a run takes its lab down as on Ctrl-C
    sys.exit(main())
