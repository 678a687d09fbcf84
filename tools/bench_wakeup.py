#!/usr/bin/env python3
"""Wake-up latency of the rtnet RT thread next to cyclictest, same run.

Both tools wake every period (default 1 ms) on absolute deadlines, pinned to
the same CPU at the same SCHED_FIFO priority, with memory locked and
/dev/cpu_dma_latency held at 0 (cyclictest's default; ours too).  Their runs
are interleaved in chunks (ours, cyclictest, cyclictest, ours, ...) so drift
on a noisy VM hits both alike, first idle and then under stress-ng CPU load.
Both histograms have 1 us bins; percentiles for both come from
rtnet.hist.Histogram, so they are computed the same way.

    python3 -m tools.bench_wakeup          # 30 s per tool per load
    python3 -m tools.bench_wakeup --quick  # a few seconds, for a smoke run

Target (DESIGN.md): ours p99 <= 1.25 x cyclictest p99, per load.
"""

import argparse
import datetime
import json
import math
import os
import shutil
import sys
import time

from rtnet.argtypes import integer
from rtnet.benchkit import Accumulator, run_cyclictest, start_stress, stop_stress, sysinfo
from rtnet.rtthread import PERIOD_MAX_US, PRIO_MAX, PRIO_MIN, RtThread

TARGET_RATIO = 1.25
LOADS = ("idle", "cpu")
TOOLS = ("rtnet-rt", "cyclictest")


def run_ours_chunk(args, acc: Accumulator, applied: dict):
    rt = RtThread(
        period_us=args.period_us,
        cpu=args.cpu,
        priority=args.priority,
        allow_fallback=args.allow_fallback,
        hold_dma_latency=True,
    )
    with rt:
        time.sleep(args.chunk)
    s = rt.stats()
    h = s.histogram
    acc.add(h.bins, h.count, h.underflow, h.overflow, h.min_ns, h.max_ns, h.sum_ns)
    applied.update(
        policy=s.policy,
        priority=s.priority,
        cpu=s.cpu,
        pm_qos_dma_latency_us=0 if s.dma_latency_held else None,
        memory_locked=s.memory_locked,
    )
    applied["missed"] = applied.get("missed", 0) + s.missed


def run_cyclictest_chunk(args, acc: Accumulator):
    _acc, cmd = run_cyclictest(
        args.cyclictest,
        seconds=args.chunk,
        priority=args.priority,
        cpus=str(args.cpu),
        period_us=args.period_us,
        acc=acc,
    )
    return cmd


def summary(acc: Accumulator, tool: str) -> dict:
    s = acc.histogram().summary_us()
    if tool == "cyclictest" and acc.count:
        s["max"] = (acc.max_ns - 999) / 1000.0  # report cyclictest's own whole-us max
    return s


def fmt_line(load, tool, s, prio, period_us):
    def v(x, w=6, d=1):
        return f"{x:{w}.{d}f}" if x is not None else " " * (w - 1) + "-"

    return (
        f"T:{tool:<10} L:{load:<4} P:{prio:2d} I:{int(period_us)} C:{s['count']:7d} "
        f"Min:{v(s['min'])} Avg:{v(s['avg'])} Max:{v(s['max'], 8)} "
        f"p50:{v(s['p50'], 5, 0)} p99:{v(s['p99'], 5, 0)} p99.9:{v(s['p99.9'], 6, 0)} "
        f"Ovf:{s['overflow']:d}"
    )


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--duration",
        type=integer("duration", 1, 86_400),
        default=30,
        help="seconds per tool per load (default 30)",
    )
    p.add_argument(
        "--chunk",
        type=integer("chunk", 1, 3600),
        default=5,
        help="seconds per interleaved run (default 5)",
    )
    p.add_argument("--quick", action="store_true", help="4 s per tool per load, 2 s chunks")
    p.add_argument(
        "--cpu",
        type=integer("cpu", 0, max(os.sched_getaffinity(0))),
        default=max(os.sched_getaffinity(0)),
        help="CPU for both tools (default: the highest allowed)",
    )
    p.add_argument("--priority", type=integer("priority", PRIO_MIN, PRIO_MAX), default=90)
    p.add_argument("--period-us", type=integer("period", 1, PERIOD_MAX_US), default=1000)
    p.add_argument("--loads", default=",".join(LOADS), help="idle,cpu")
    p.add_argument(
        "--allow-fallback",
        action="store_true",
        help="let our thread run SCHED_OTHER if FIFO is refused",
    )
    p.add_argument("--output", default="results/bench_wakeup.json")
    args = p.parse_args(argv)
    if args.quick:
        args.duration, args.chunk = 4, 2
    args.chunk = max(1, min(args.chunk, args.duration))
    args.loads = [x for x in args.loads.split(",") if x]
    bad = set(args.loads) - set(LOADS)
    if bad:
        p.error(f"unknown load(s) {', '.join(sorted(bad))}: choose from {', '.join(LOADS)}")
    args.cyclictest = shutil.which("cyclictest")
    args.stress_ng = shutil.which("stress-ng")
    if args.cyclictest is None:
        p.error("cyclictest is not installed (apt-get install rt-tests)")
    if "cpu" in args.loads and args.stress_ng is None:
        p.error("stress-ng is not installed (apt-get install stress-ng)")
    return args


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    start = datetime.datetime.now().astimezone()
    nchunks = int(math.ceil(args.duration / args.chunk))
    applied: dict = {}
    results: dict = {}
    ct_cmd = stress_cmd = None

    for load in args.loads:
        accs = {tool: Accumulator() for tool in TOOLS}
        stress = None
        if load == "cpu":
            # Long enough for every chunk plus start-up of each run.
            stress, stress_cmd = start_stress(args.stress_ng, nchunks * (2 * args.chunk + 3) + 30)
        try:
            # ABBA order (ours, cyclictest, cyclictest, ours, ...): a drift in
            # the VM's noise or a start-up transient of the load falls on both
            # tools alike, not always on whichever runs first.
            for i in range(nchunks):
                order = ("ours", "ct") if i % 2 == 0 else ("ct", "ours")
                for tool in order:
                    if tool == "ours":
                        run_ours_chunk(args, accs["rtnet-rt"], applied)
                    else:
                        ct_cmd = run_cyclictest_chunk(args, accs["cyclictest"])
        finally:
            if stress is not None:
                stop_stress(stress)
        results[load] = {
            tool: {
                "summary_us": summary(acc, tool),
                "chunks": acc.chunks,
                "histogram_us": acc.histogram().nonzero_bins_us(),
                "overflow": int(acc.overflow),
                "per_chunk": acc.per_chunk,
            }
            for tool, acc in accs.items()
        }
        ours, theirs = (results[load][t]["summary_us"]["p99"] for t in TOOLS)
        ratio = ours / theirs if theirs else None
        results[load]["p99_ratio"] = ratio
        results[load]["meets_target"] = ratio is not None and ratio <= TARGET_RATIO

    end = datetime.datetime.now().astimezone()
    settings = {
        "period_us": args.period_us,
        "cpu": args.cpu,
        "priority": args.priority,
        "rtnet_rt_applied": applied,
        "cyclictest_cmd": ct_cmd,
        "stress_cmd": stress_cmd,
        "pm_qos": "/dev/cpu_dma_latency held at 0 by each tool while it runs",
        "duration_s_per_tool_per_load": nchunks * args.chunk,
        "chunk_s": args.chunk,
        "order": "interleaved ABBA: rtnet-rt, cyclictest, cyclictest, rtnet-rt, ...",
        "target_p99_ratio": TARGET_RATIO,
    }

    print(
        f"# bench_wakeup: period {args.period_us} us, CPU {args.cpu}, "
        f"{applied.get('policy')} priority {applied.get('priority')} (cyclictest: "
        f"SCHED_FIFO {args.priority}), mlockall "
        f"{'yes' if applied.get('memory_locked') else 'NO'} (both -m)"
    )
    print(
        f"# PM QoS: /dev/cpu_dma_latency = "
        f"{'0 us' if applied.get('pm_qos_dma_latency_us') == 0 else 'NOT held'} (ours), "
        f"0 us (cyclictest default)"
    )
    print(
        f"# {nchunks} x {args.chunk} s per tool per load, interleaved; "
        f"CPU load: {' '.join(stress_cmd) if stress_cmd else 'none'}"
    )
    print(f"# rtnet-rt periods skipped after stalls: {applied.get('missed', 0)}")
    print("# unit: us; p50/p99/p99.9 are upper bin edges (1 us bins), as cyclictest")
    for load in args.loads:
        for tool in TOOLS:
            print(
                fmt_line(
                    load, tool, results[load][tool]["summary_us"], args.priority, args.period_us
                )
            )
        ratio = results[load]["p99_ratio"]
        verdict = "meets" if results[load]["meets_target"] else "MISSES"
        ratio_txt = f"{ratio:.2f}" if ratio is not None else "-"
        print(
            f"# {load}: p99 rtnet-rt / cyclictest = {ratio_txt} "
            f"({verdict} target <= {TARGET_RATIO})"
        )

    doc = {
        "file_version": 1,
        "cmdline": " ".join([sys.executable] + sys.argv),
        "start_time": start.isoformat(),
        "end_time": end.isoformat(),
        "return_code": 0,
        "sysinfo": sysinfo(),
        "settings": settings,
        "results": results,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"# saved {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
