#!/usr/bin/env python3
"""Linux traffic in the default lab: planned NRT windows against RTnet's slot model.

    python3 -m tools.bench_lab_vnic [--seconds 5] [--pings 500] [--stations 3]
                                    [--json results/bench_lab_vnic.json]

Brings up `rtnetctl lab up`'s segment twice in the same run, one rtnetd per
station: first with RTnet's slot model (the baseline: RT slots and one NRT
slot of one full frame shared by the stations by phasing, as the demo ran
before the planner), then with the planner's windows (rtmac/plan.py).  For
each it measures iperf3 TCP through vnic0 between every ordered pair of
stations, one pair at a time, and ping through vnic0 from the last station to
the first (--pings at 10 ms intervals: RTT p50/p99/max in cycles), and reads
each station's RT wake-ups per cycle from its status.  Nothing runs in
parallel with a measurement; other load on the machine shows in the wake-up
lateness both layouts report.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

from rtnet import labdemo, netns, paths, stationctl
from rtnet.argtypes import integer
from rtnet.benchkit import start_iperf_server
from rtnet.lab import Lab
from rtnet.sigterm import unwind_on_sigterm

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WANT = ["active", "stand-by"]


def status(st) -> dict:
    return stationctl.request("rteth0", {"cmd": "status"}, netns=st.netns, timeout=5)["status"]


def bring_up(lab, windows: bool) -> None:
    for st in lab.stations:
        conf = os.path.join(paths.station_dir(st.netns), "rtnet.toml")
        os.makedirs(os.path.dirname(conf), exist_ok=True)
        with open(conf, "w") as f:
            f.write(labdemo.station_toml(st.index, lab.n, windows=windows))
        stationctl.up(conf, netns=st.netns)
    want = WANT + ["synchronised"] * (lab.n - 2)
    deadline = time.monotonic() + 30
    while [(status(s).get("tdma") or {}).get("state") for s in lab.stations] != want:
        if time.monotonic() > deadline:
            raise SystemExit("bench_lab_vnic: the segment did not synchronise")
        time.sleep(0.1)  # other processes: poll


def tear_down(lab) -> None:
    for st in lab.stations:
        stationctl.down("rteth0", netns=st.netns)


def iperf_tcp(lab, src: int, dst: int, seconds: int) -> float:
    ip = f"198.19.0.{dst}"
    srv = start_iperf_server(lab, lab.station(dst), ip, one_off=True)
    try:
        r = subprocess.run(
            netns.command(lab.station(src).netns, ["iperf3", "-c", ip, "-t", str(seconds), "-J"]),
            capture_output=True,
            text=True,
            timeout=seconds + 40,
        )
        end = json.loads(r.stdout).get("end", {})
        return end.get("sum_received", {}).get("bits_per_second", 0.0) / 1e6
    except (ValueError, subprocess.TimeoutExpired):
        return 0.0
    finally:
        lab.stop(srv, timeout=10, terminate=False)


def ping_rtts_ms(lab, src: int, dst: int, count: int) -> np.ndarray:
    r = subprocess.run(
        netns.command(
            lab.station(src).netns,
            ["ping", "-c", str(count), "-i", "0.01", "-W", "1", f"198.19.0.{dst}"],
        ),
        capture_output=True,
        text=True,
        timeout=count * 0.05 + 30,
    )
    return np.array([float(x) for x in re.findall(r"time=([0-9.]+) ms", r.stdout)])


def measure(lab, windows: bool, seconds: int, pings: int) -> dict:
    name = "windows" if windows else "RTnet slots"
    bring_up(lab, windows)
    cycle_us = status(lab.station(1))["tdma"]["cycle_ns"] / 1000
    before = [status(st) for st in lab.stations]
    t0 = time.monotonic()
    tcp = {}
    for a, b in itertools.permutations(range(1, lab.n + 1), 2):
        tcp[f"{a}->{b}"] = round(iperf_tcp(lab, a, b, seconds), 2)
        print(f"  {name:<11} iperf3 TCP {a} -> {b}: {tcp[f'{a}->{b}']:.1f} Mbit/s", flush=True)
    rtt = ping_rtts_ms(lab, lab.n, 1, pings)
    wall = time.monotonic() - t0
    after = [status(st) for st in lab.stations]
    wake = [
        (b["timer_wakeups"] - a["timer_wakeups"] + b.get("rx_wakeups", 0) - a.get("rx_wakeups", 0))
        / (wall * 1e6 / cycle_us)
        for a, b in zip(before, after)
    ]
    tear_down(lab)
    cyc = cycle_us / 1000
    out = {
        "layout": name,
        "cycle_us": cycle_us,
        "tcp_mbps": tcp,
        "tcp_min_mbps": min(tcp.values()),
        "tcp_mean_mbps": float(np.mean(list(tcp.values()))),
        "ping": {
            "sent": pings,
            "received": int(len(rtt)),
            **(
                {
                    "p50_cycles": float(np.percentile(rtt, 50)) / cyc,
                    "p99_cycles": float(np.percentile(rtt, 99)) / cyc,
                    "max_cycles": float(rtt.max()) / cyc,
                }
                if len(rtt)
                else {}
            ),
        },
        "wakeups_per_cycle": [round(w, 2) for w in wake],
    }
    p = out["ping"]
    print(
        f"  {name:<11} ping {lab.n} -> 1: {p['received']}/{pings}, RTT p50 "
        f"{p.get('p50_cycles', float('nan')):.2f} p99 {p.get('p99_cycles', float('nan')):.2f} "
        f"max {p.get('max_cycles', float('nan')):.2f} cycles; RT wake-ups per cycle "
        f"{' '.join(f'{w:.2f}' for w in wake)}",
        flush=True,
    )
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=integer("seconds", 1, 120), default=5)
    ap.add_argument("--pings", type=integer("pings", 10, 10_000), default=500)
    ap.add_argument("--stations", type=integer("stations", 2, 7), default=3)
    ap.add_argument("--json", default=os.path.join(REPO, "results", "bench_lab_vnic.json"))
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("bench_lab_vnic: needs root (namespaces, AF_XDP)", file=sys.stderr)
        return 2
    lab = Lab("bv", a.stations)
    lab.down()
    lab.up()
    try:
        runs = [measure(lab, False, a.seconds, a.pings), measure(lab, True, a.seconds, a.pings)]
    finally:
        tear_down(lab)
        lab.down()
    base, win = runs
    print(
        f"\n{a.stations}-station lab, iperf3 TCP through vnic0 between every ordered pair "
        f"({a.seconds} s each), ping {a.stations} -> 1 ({a.pings} at 10 ms):"
    )
    print(
        f"{'layout':<12} {'TCP min':>8} {'TCP mean':>9} {'ping p50':>9} {'ping p99':>9} "
        f"{'wake-ups/cycle':>15}"
    )
    for r in runs:
        p = r["ping"]
        print(
            f"{r['layout']:<12} {r['tcp_min_mbps']:8.1f} {r['tcp_mean_mbps']:9.1f} "
            f"{p.get('p50_cycles', float('nan')):9.2f} {p.get('p99_cycles', float('nan')):9.2f} "
            f"{' '.join(f'{w:.2f}' for w in r['wakeups_per_cycle']):>15}"
        )
    print(
        f"(TCP in Mbit/s, ping RTT in cycles of {win['cycle_us']:.0f} us; targets: TCP >= 20 "
        f"between any two stations, ping p99 <= 2.5 cycles; baseline measured in the same run)"
    )
    os.makedirs(os.path.dirname(a.json), exist_ok=True)
    with open(a.json, "w") as f:
        json.dump({"baseline": base, "windows": win}, f, indent=1)
    print(f"written to {a.json}")
    return 0


if __name__ == "__main__":
    unwind_on_sigterm()  # stopped with SIGTERM, a run takes its lab down as on Ctrl-C
    sys.exit(main())
