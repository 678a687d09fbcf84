#!/usr/bin/env python3
"""TDMA slot timing and synchronisation on the lab, next to cyclictest, same run.

Three stations (primary master, backup master, slave with a simulated 50 us
clock offset and 100 ppm drift), each with its own SCHED_FIFO thread, on a
1 ms cycle; every station sends one frame in its slot every cycle (made on its
RT thread).  For each load (idle, stress-ng on every CPU) it records:

- slot lateness: first transmission minus scheduled slot start, per station;
- missed slots: occurrences skipped because the thread woke too late;
- sync error: the slaves' estimate of global time minus true global time;

and then runs cyclictest for as long, with as many threads, on the same CPUs
and at the same priority, as the baseline.  Finally it searches the shortest
cycle that runs the given number of cycles with three stations and no missed
slot.

    python3 -m tools.bench_tdma          # 100,000 cycles per load, then the cycle search
    python3 -m tools.bench_tdma --quick  # 5,000 cycles, short search

Targets (issue): slot lateness p99 <= cyclictest p99 + 20 us; zero missed
slots except where cyclictest shows a stall of the same size in the same run;
shortest cycle with no missed slot, aiming for 250 us.
"""

import argparse
import datetime
import json
import os
import shutil
import sys
import time

from rtmac.tdma_config import LIMITS, Slot, TdmaConfig, wire_time_ns
from rtnet.argtypes import integer, integer_list
from rtnet.benchkit import run_cyclictest, start_stress, stop_stress, sysinfo
from rtnet.lab import Lab
from rtnet.sigterm import unwind_on_sigterm
from rtnet.station import RtSettings, Station

PRIORITY = 80
CPUS = (0, 1, 1)  # master, backup, slave
NAMES = ("master", "backup", "slave")
PROBE_LEN = 64


def configs(cycle_us: int, cal_rounds: int, size: int):
    """One slot per station, spread over the cycle.  The master's slot does not start
    at 0: there its Sync is still being sent, which would be counted as lateness."""
    third, lead = cycle_us // 3, cycle_us // 12
    return (
        TdmaConfig(
            role="master",
            cycle_us=cycle_us,
            cal_rounds=cal_rounds,
            slots={0: Slot(0, lead, size=size)},
        ),
        TdmaConfig(
            role="master",
            cycle_us=cycle_us,
            backup_offset_us=max(lead // 2, 10),
            cal_rounds=cal_rounds,
            slots={0: Slot(0, lead + third, size=size)},
        ),
        TdmaConfig(
            role="slave", cal_rounds=cal_rounds, slots={0: Slot(0, lead + 2 * third, size=size)}
        ),
    )


def wait_until(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise RuntimeError(f"timed out waiting for {what}")


class Segment:
    """The lab and its three stations, synchronised."""

    def __init__(self, cycle_us: int, cal_rounds: int = 50, size: int = 1500):
        self.lab = Lab("bt", 3)
        if self.lab.exists():
            self.lab.down()
        self.lab.up()
        self.stations = []
        try:
            for i, (st, cfg) in enumerate(
                zip(self.lab.stations, configs(cycle_us, cal_rounds, size))
            ):
                clock = {"clock_offset_ns": 50_000, "drift_ppm": 100.0} if i == 2 else {}
                s = Station(
                    st.ifname,
                    netns=st.netns,
                    rt=RtSettings(cpu=CPUS[i], priority=PRIORITY),
                    **clock,
                )
                s.attach_tdma(cfg)
                s.start()
                self.stations.append(s)
            want = ("active", "stand-by", "synchronised")
            wait_until(
                lambda: all(s.stats()["tdma"]["state"] == w for s, w in zip(self.stations, want)),
                30,
                "synchronisation",
            )
        except BaseException:
            self.close()
            raise

    def snapshot(self):
        return [s.stats() for s in self.stations]

    def run(self, cycles: int, label: str):
        before = self.snapshot()
        for s in self.stations:
            s.set_probe(0, length=PROBE_LEN)
        start_no = before[0]["tdma"]["cycle_no"]
        t0 = time.monotonic()
        last = t0
        while True:
            no = self.stations[0].stats()["tdma"]["cycle_no"]
            done = (no - start_no) & 0xFFFFFFFF
            if done >= cycles:
                break
            if time.monotonic() - last >= 5:
                last = time.monotonic()
                print(f"# {label}: {done}/{cycles} cycles", flush=True)
            time.sleep(0.2)
        for s in self.stations:
            s.set_probe(None)
        after = self.snapshot()
        out = {"cycles": cycles, "seconds": round(time.monotonic() - t0, 1), "stations": {}}
        for name, b, a in zip(NAMES, before, after):
            tb, ta = b["tdma"], a["tdma"]
            out["stations"][name] = {
                "state": ta["state"],
                "slot_lateness": ta["slot_lateness"].since(tb["slot_lateness"]),
                "sync_error": ta["sync_error"].since(tb["sync_error"]),
                "wakeup": a["wakeup"].since(b["wakeup"]),
                "missed_slots": ta["missed_slots"] - tb["missed_slots"],
                "occurrences": ta["slots"][0]["occurrences"] - tb["slots"][0]["occurrences"],
                "late_starts": ta["late_starts"] - tb["late_starts"],
                "frames": ta["frames_tx"] - tb["frames_tx"],
                "sync_lost_events": ta["sync_lost_events"] - tb["sync_lost_events"],
                "backup_takeovers": ta["backup_takeovers"] - tb["backup_takeovers"],
                "rt": a["rt"],
            }
        return out

    def close(self):
        for s in self.stations:
            s.close()
        self.stations = []
        self.lab.down()


def line(label, s):
    def v(x, w=7, d=1):
        return f"{x:{w}.{d}f}" if x is not None else " " * (w - 1) + "-"

    return (
        f"T:{label:<26} C:{s['count']:7d} Min:{v(s['min'])} Avg:{v(s['avg'])} "
        f"Max:{v(s['max'], 9)} p50:{v(s['p50'], 6)} p99:{v(s['p99'], 6)} "
        f"p99.9:{v(s['p99.9'], 7)}"
    )


def jsonable(run):
    out = dict(run)
    out["stations"] = {}
    for name, st in run["stations"].items():
        d = dict(st)
        for k in ("slot_lateness", "sync_error", "wakeup"):
            d[k] = {"summary_us": st[k].summary_us(), "histogram_us": st[k].nonzero_bins_us()}
        out["stations"][name] = d
    return out


def measure_load(args, load):
    seg = Segment(args.cycle_us)
    stress = None
    try:
        if load == "cpu":
            seconds = 2 * args.cycles * args.cycle_us / 1e6 + 60
            stress, _cmd = start_stress(args.stress_ng, seconds)
        run = seg.run(args.cycles, f"{load} tdma")
    finally:
        seg.close()
    try:
        seconds = max(1, int(round(args.cycles * args.cycle_us / 1e6)))
        print(f"# {load}: cyclictest for {seconds} s", flush=True)
        acc, cmd = run_cyclictest(
            args.cyclictest,
            seconds=seconds,
            priority=PRIORITY,
            cpus="0,1",
            threads=2,
            period_us=args.cycle_us,
        )
    finally:
        if stress is not None:
            stop_stress(stress)
    run["cyclictest"] = {
        "cmd": " ".join(cmd),
        "summary_us": acc.histogram().summary_us(),
        "histogram_us": acc.histogram().nonzero_bins_us(),
    }
    return run


SEARCH_SLOT_SIZE = 700  # a 61 us window: a wake-up p99 of ~30 us plus a veth send fits


def search_cycle(args, cycle_us):
    size = SEARCH_SLOT_SIZE
    seg = Segment(cycle_us, cal_rounds=20, size=size)
    try:
        run = seg.run(args.search_cycles, f"cycle {cycle_us} us")
    finally:
        seg.close()
    window_us = (wire_time_ns(size + 14, 100) + 2000) / 1000
    missed = sum(s["missed_slots"] for s in run["stations"].values())
    # a slot is missed when the thread wakes later than its window: count such wake-ups
    stalls = sum(
        int(s["wakeup"].bins[int(window_us) :].sum()) + s["wakeup"].overflow
        for s in run["stations"].values()
    )
    return {
        "cycle_us": cycle_us,
        "cycles": args.search_cycles,
        "missed_slots": missed,
        "wakeups_later_than_window": stalls,
        "slot_window_us": round(window_us, 1),
        "max_wakeup_us": max(
            s["wakeup"].summary_us()["max"] or 0 for s in run["stations"].values()
        ),
    }


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cycle = LIMITS["cycle_us"]
    p.add_argument(
        "--cycles",
        type=integer("cycles", 1, 100_000_000),
        default=100_000,
        help="cycles per load (default 100000)",
    )
    p.add_argument("--cycle-us", type=integer("cycle", *cycle), default=1000)
    p.add_argument("--loads", default="idle,cpu")
    p.add_argument(
        "--search",
        type=integer_list("cycle", *cycle),
        default=[1000, 500, 250],
        help="cycles (us) to try for the shortest cycle, '' to skip",
    )
    p.add_argument("--search-cycles", type=integer("cycles", 1, 100_000_000), default=100_000)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--output", default="results/bench_tdma.json")
    args = p.parse_args(argv)
    if args.quick:
        args.cycles, args.search_cycles, args.search = 5000, 5000, [500, 250]
    args.loads = [x for x in args.loads.split(",") if x]
    args.cyclictest = shutil.which("cyclictest")
    args.stress_ng = shutil.which("stress-ng")
    if not args.cyclictest or not args.stress_ng:
        p.error("cyclictest and stress-ng are needed (tools/setup-system.sh installs them)")
    if os.geteuid() != 0:
        p.error("needs root (lab namespaces, AF_XDP, SCHED_FIFO)")
    return args


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    started = datetime.datetime.now().astimezone()
    print(
        f"# bench_tdma: 3 stations, cycle {args.cycle_us} us, {args.cycles} cycles per load, "
        f"SCHED_FIFO {PRIORITY}, CPUs {CPUS}, PM QoS (cpu_dma_latency 0) held, "
        f"link model 100 Mbit/s, probe {PROBE_LEN} B per slot",
        flush=True,
    )
    results = {"loads": {}, "search": []}
    verdicts = []
    for load in args.loads:
        run = measure_load(args, load)
        results["loads"][load] = jsonable(run)
        ct = run["cyclictest"]["summary_us"]
        print(f"# unit: us; load: {load}; {run['cycles']} cycles in {run['seconds']} s")
        for name, st in run["stations"].items():
            print(
                line(f"{name} slot lateness", st["slot_lateness"].summary_us())
                + f" missed:{st['missed_slots']}/{st['occurrences']}"
            )
        for name in ("backup", "slave"):
            print(line(f"{name} sync error", run["stations"][name]["sync_error"].summary_us()))
        print(line("cyclictest (2 threads)", ct))
        for name, st in run["stations"].items():
            p99 = st["slot_lateness"].summary_us()["p99"]
            ok = p99 <= ct["p99"] + 20
            stall = (ct["max"] or 0) >= (wire_time_ns(1514, 100) / 1000)
            miss_ok = st["missed_slots"] == 0 or stall
            verdicts.append(ok and miss_ok)
            print(
                f"# {load} {name}: slot lateness p99 {p99:.0f} us vs cyclictest p99 "
                f"{ct['p99']:.0f} + 20 -> {'meets' if ok else 'MISSES'} target; missed slots "
                f"{st['missed_slots']} (cyclictest max {ct['max']:.0f} us"
                f"{', a stall longer than a slot' if stall else ''}) -> "
                f"{'ok' if miss_ok else 'MISSES'}"
            )
    for cycle in args.search:
        r = search_cycle(args, cycle)
        results["search"].append(r)
        print(
            f"# cycle {cycle:5d} us: {r['cycles']} cycles, missed slots {r['missed_slots']}, "
            f"wake-ups later than the {r['slot_window_us']} us slot window "
            f"{r['wakeups_later_than_window']}, max wake-up {r['max_wakeup_us']:.0f} us",
            flush=True,
        )
    clean = [r["cycle_us"] for r in results["search"] if r["missed_slots"] == 0]
    explained = [
        r["cycle_us"]
        for r in results["search"]
        if r["missed_slots"] <= r["wakeups_later_than_window"]
    ]
    if args.search:
        print(
            f"# shortest cycle with no missed slot: {min(clean) if clean else 'none'} us; "
            f"with every miss explained by a late wake-up: "
            f"{min(explained) if explained else 'none'} us"
        )
    results["envelope"] = {
        "cmdline": " ".join(sys.argv),
        "start_time": started.isoformat(),
        "end_time": datetime.datetime.now().astimezone().isoformat(),
        "sysinfo": sysinfo(),
        "priority": PRIORITY,
        "cpus": CPUS,
        "pm_qos": "cpu_dma_latency 0 held by every RT thread and cyclictest",
    }
    os.makedirs(os.path.dirname(args.output) or ".", exist_ok=True)
    with open(args.output, "w") as f:
        json.dump(results, f, indent=1)
    print(f"# saved {args.output}")
    return 0 if all(verdicts) else 1


if __name__ == "__main__":
    unwind_on_sigterm()  # stopped with SIGTERM, a run takes its lab down as on Ctrl-C
    sys.exit(main())
