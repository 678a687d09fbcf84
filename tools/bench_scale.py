#!/usr/bin/env python3
"""TDMA with many stations: sync error and slot lateness per station, next to cyclictest.

The lab runs N stations (default 16) on one bridge, each with its own SCHED_FIFO
thread, scheduled by the planner (the shortest cycle that fits them: 3 ms for 16);
every station sends a probe in its RT slot every cycle (rtnet.labsegment).  The
baseline is cyclictest with as many threads at the same priority, run before and
after the segment in the same run; when the two disagree (p99 more than 2x apart)
the run is flagged, because the machine changed under the measurement.

    python3 -m tools.bench_scale  # 16 stations, 10,000 cycles
    python3 -m tools.bench_scale --stations 8 --cycles 3000
"""

import argparse
import datetime
import json
import os
import shutil
import sys

from rtnet.argtypes import integer
from rtnet.benchkit import run_cyclictest, sysinfo
from rtnet.lab import MAX_STATIONS
from rtnet.labsegment import RT_PRIORITY, format_report, run_segment
from rtnet.sigterm import unwind_on_sigterm


def cyclictest(threads: int, seconds: int) -> dict:
    """Summary (us) of cyclictest with ``threads`` threads over all CPUs, at the stations'
    priority and a 1 ms period."""
    binary = shutil.which("cyclictest")
    if not binary:
        raise SystemExit("bench_scale: cyclictest not found (apt install rt-tests)")
    cpus = f"0-{(os.cpu_count() or 1) - 1}"
    acc, _cmd = run_cyclictest(
        binary, seconds=seconds, priority=RT_PRIORITY, cpus=cpus, threads=threads
    )
    return acc.histogram().summary_us()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--stations", type=integer("stations", 3, MAX_STATIONS), default=16)
    p.add_argument("--cycles", type=integer("cycles", 100, 10_000_000), default=10_000)
    p.add_argument("--baseline-s", type=integer("baseline seconds", 1, 600), default=10)
    p.add_argument("--output", default="results/bench_scale.json")
    a = p.parse_args(argv)

    print(f"# cyclictest baseline before: {a.stations} threads, {a.baseline_s} s")
    base_before = cyclictest(a.stations, a.baseline_s)
    report = run_segment("bs", a.stations, cycles=a.cycles, progress=lambda m: print(f"# {m}"))
    print(f"# cyclictest baseline after: {a.stations} threads, {a.baseline_s} s")
    base_after = cyclictest(a.stations, a.baseline_s)
    for line in format_report(report):
        print(line)
    for label, b in (("before", base_before), ("after", base_after)):
        print(
            f"cyclictest {label:6} ({a.stations} threads)  p50 {b['p50']:6.1f} p99 "
            f"{b['p99']:6.1f} max {b['max']:7.1f} us"
        )
    p99s = sorted((base_before["p99"], base_after["p99"]))
    flagged = p99s[0] > 0 and p99s[1] > 2 * p99s[0]
    if flagged:
        print(
            "# FLAGGED: the two baselines disagree (p99 more than 2x apart): the machine's "
            "load changed during the run; rerun on a quiet machine"
        )
    worst = max(s["slot_lateness_us"]["p99"] for s in report["stations"])
    print(
        f"# worst station slot lateness p99 {worst:.1f} us vs cyclictest p99 "
        f"{p99s[1]:.1f} us; stations all synchronised: "
        f"{all(s['state'] in ('active', 'stand-by', 'synchronised') for s in report['stations'])}"
    )
    os.makedirs(os.path.dirname(a.output) or ".", exist_ok=True)
    with open(a.output, "w") as f:
        json.dump(
            {
                "date": datetime.datetime.now().isoformat(timespec="seconds"),
                "system": sysinfo(),
                "segment": report,
                "cyclictest": {"before": base_before, "after": base_after},
                "flagged": flagged,
            },
            f,
            indent=1,
        )
    print(f"# saved {a.output}")
    return 0


if __name__ == "__main__":
    unwind_on_sigterm()  # stopped with SIGTERM, a run takes its lab down as on Ctrl-C
    sys.exit(main())
