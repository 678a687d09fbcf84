#!/usr/bin/env python3
"""What an RT thread's wake-up waits for: a VNIC TCP flow with the scheduler traced.

The lab of ``vnic bench`` (two stations, 1 ms TDMA cycle, batched VNIC, an RT frame in
every slot 0) carries an iperf3 TCP flow through vnic0 at the link rate modelled, while
``perf sched record`` traces every context switch for ``--seconds``.  For each time a
station's RT thread (``rtnet-rt``) is switched in, the scheduling delay (from its wake-up
to running) is read with ``perf sched timehist``, and the task that left the CPU for it
is named: on a kernel without full preemption a woken SCHED_FIFO thread waits until that
task leaves the kernel.  Prints the delays' p50/p99/p99.9 and, for the wake-ups that
waited longer than ``--over-us``, which tasks held the CPU (csrc/core/rtn_wakeboard.h is
the VNIC pump's answer to its own share).

    python3 -m tools.bench_sched_delay                  # 1000 Mbit/s, 3 s traced
    python3 -m tools.bench_sched_delay --link-rate 100 --over-us 10

Needs root and perf; builds its own lab (--lab, default "sd").  The run is one sample:
compare two codes by running both, one after the other, and repeat.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

from rtnet.argtypes import number
from rtnet.lab import Lab
from rtnet.rtthread import THREAD_NAME as RT_THREAD_NAME
from rtnet.sigterm import unwind_on_sigterm
from vnic import bench
from vnic.pair import plan, tdma_pair

RT_NAME = RT_THREAD_NAME


def switch_ins(timehist: str) -> list[tuple[int, str, float]]:
    """(cpu, task that ran before, the RT thread's scheduling delay in us) for every switch-in
    of an RT thread, from ``perf sched timehist`` output (one row per task switched out)."""
    by_cpu: dict[int, list[tuple[str, float]]] = collections.defaultdict(list)
    for line in timehist.splitlines():
        f = line.split()
        if len(f) < 6 or not f[1].startswith("["):
            continue
        try:
            cpu, delay_ms = int(f[1].strip("[]")), float(f[4])
        except ValueError:
            continue
        by_cpu[cpu].append((re.sub(r"\[.*", "", f[2]), delay_ms * 1000.0))
    out = []
    for cpu, rows in by_cpu.items():
        for (prev, _), (task, delay_us) in zip(rows, rows[1:]):
            if task == RT_NAME:
                out.append((cpu, prev, delay_us))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--link-rate", type=bench.LINK_RATE_ARG, default=1000, help="Mbit/s modelled")
    ap.add_argument("--seconds", type=number("--seconds", 1, 30), default=3.0, help="traced")
    ap.add_argument("--over-us", type=number("--over-us", 1, 10000), default=15.0)
    ap.add_argument("--lab", default="sd")
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("bench_sched_delay: needs root (netns, AF_XDP, perf)", file=sys.stderr)
        return 2
    flow_s = int(a.seconds) + 3
    slot_plan = plan(1000, a.link_rate, windows=True)  # vnic bench's, 1 ms cycle
    bench.OFFERED_MBPS = a.link_rate
    with tempfile.TemporaryDirectory() as tmp, Lab(a.lab, 2) as lab:
        data = os.path.join(tmp, "sched.data")
        with tdma_pair(lab, slot_plan, mode="batched", mtu=bench.MAX_MTU, offload=True) as (st, _):
            for s in st:
                s.set_probe(0)
            t, flow = bench.iperf_in_background(lab, "198.19.0.2", flow_s, warmup=1.5)
            rec = subprocess.run(
                ["perf", "sched", "record", "-o", data, "--", "sleep", str(a.seconds)],
                capture_output=True,
                text=True,
            )
            t.join()
        if rec.returncode != 0:
            print(f"bench_sched_delay: perf sched record failed: {rec.stderr.strip()[-200:]}")
            return 2
        hist = subprocess.run(
            ["perf", "sched", "timehist", "-i", data], capture_output=True, text=True
        ).stdout
    rows = switch_ins(hist)
    if not rows:
        print("bench_sched_delay: no RT thread switch-in in the trace")
        return 2
    delays = sorted(d for _, _, d in rows)

    def q(p: float) -> float:
        return delays[min(len(delays) - 1, int(len(delays) * p))]

    late = collections.Counter(prev for _, prev, d in rows if d > a.over_us)
    print(
        f"TCP {flow.get('goodput_mbps', 0):.0f} Mbit/s through vnic0 at {a.link_rate} Mbit/s "
        f"modelled; {len(rows)} RT thread switch-ins in {a.seconds:g} s"
    )
    print(f"scheduling delay p50 {q(0.5):.1f} us, p99 {q(0.99):.1f} us, p99.9 {q(0.999):.1f} us")
    print(f"{sum(late.values())} waited more than {a.over_us:g} us; the task on the CPU before:")
    for name, n in late.most_common():
        print(f"  {name:24s} {n}")
    return 0


if __name__ == "__main__":
    unwind_on_sigterm()  # stopped with SIGTERM, a run takes its lab down as on Ctrl-C
    sys.exit(main())
