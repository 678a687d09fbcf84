#!/usr/bin/env python3
"""Cyclic application on a TDMA segment: cycle-anchored real-time task vs a standard one.

Two lab stations (master: slot 0 at 0 us; slave: slot 0 at 500 us, 1 ms
cycle).  The slave publishes one message per cycle through an application
channel and the master's channel collects them; both runs use the same
channels in the same process, interleaved in chunks (rt, standard, standard,
rt, ...) so VM noise hits both alike:

- rt:       rtn_cyclic on SCHED_FIFO, woken at --offset-us after every cycle
            start (anchored to the published cycle, re-anchored every cycle);
- standard: the baseline, SCHED_OTHER, relative sleeps of one cycle counted
            from its start, not aligned to the cycle.

Reported per run, cyclictest-like in us: the task's wake-up lateness, and
the end-to-end latency scheduled -> received (global time), which includes
the wait for the slot.  JSON goes to results/bench_app-<time>.json.

    python3 -m tools.bench_app          # 10 s per mode
    python3 -m tools.bench_app --quick  # 2 s per mode
"""

import argparse
import datetime
import json
import os
import sys
import time

import numpy as np

from rtmac.tdma_config import Slot, TdmaConfig
from rtnet.app import Channel, latencies_ns, publish_cyclic, subscribe
from rtnet.argtypes import integer, number
from rtnet.lab import Lab
from rtnet.sigterm import unwind_on_sigterm
from rtnet.station import RtSettings, Station

ET = 0x88B5
CYCLE_US = 1000
SLOT_US = 500


def pct_us(v: np.ndarray) -> dict:
    if not len(v):
        return {}
    q = np.percentile(v, [0, 50, 99, 99.9, 100]) / 1000.0
    return {
        "min": q[0],
        "p50": q[1],
        "p99": q[2],
        "p99.9": q[3],
        "max": q[4],
        "avg": float(v.mean()) / 1000.0,
        "count": int(len(v)),
    }


def line(name: str, s: dict) -> str:
    if not s:
        return f"{name:<34} no samples"
    return (
        f"{name:<34} C:{s['count']:7d} Min:{s['min']:8.1f} P50:{s['p50']:8.1f} "
        f"Avg:{s['avg']:8.1f} P99:{s['p99']:8.1f} Max:{s['max']:8.1f}"
    )


def run_chunk(cs, cm, dst, mode, n, offset_us, cpu):
    kw = (
        dict(standard=True, interval_us=CYCLE_US)
        if mode == "standard"
        else dict(offset_us=offset_us, cpu=cpu, priority=80)
    )
    task = publish_cyclic(cs, dst, n, **kw)
    samples = subscribe(cm, n, idle_timeout=2.0)
    task.wait(timeout=5)
    st = task.stop()
    lateness = np.repeat(
        np.arange(len(st.histogram.bins)) * 1000 + st.histogram.lo_ns,
        st.histogram.bins.astype(np.int64),
    )
    return samples, lateness, st


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=number("seconds", 0.1, 3600), default=10.0, help="per mode")
    ap.add_argument(
        "--chunks", type=integer("chunks", 1, 1000), default=4, help="interleaved chunks per mode"
    )
    ap.add_argument("--offset-us", type=integer("offset", 0, CYCLE_US - 1), default=300)
    ap.add_argument(
        "--cpu",
        type=integer("cpu", 0, (os.cpu_count() or 1) - 1),
        default=None,
        help="pin the RT task",
    )
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        args.seconds, args.chunks = 2.0, 2
    per_chunk = max(1, int(args.seconds * 1e6 / CYCLE_US / args.chunks))
    order = []
    for i in range(args.chunks):
        order += ["rt", "standard"] if i % 2 == 0 else ["standard", "rt"]

    res = {m: {"samples": [], "lateness": [], "stats": []} for m in ("rt", "standard")}
    with Lab("abench", 2) as lab:
        s1, s2 = lab.station(1), lab.station(2)
        rt = RtSettings(priority=90)
        with (
            Station(s1.ifname, netns=s1.netns, mac=s1.mac, ethertypes=[ET], rt=rt) as master,
            Station(s2.ifname, netns=s2.netns, mac=s2.mac, ethertypes=[ET], rt=rt) as slave,
        ):
            master.attach_tdma(
                TdmaConfig(role="master", cycle_us=CYCLE_US, cal_rounds=10, slots={0: Slot(0, 0)})
            )
            slave.attach_tdma(TdmaConfig(role="slave", cal_rounds=10, slots={0: Slot(0, SLOT_US)}))
            master.start()
            slave.start()
            deadline = time.monotonic() + 10
            while slave.stats()["tdma"]["state"] != "synchronised":
                if time.monotonic() > deadline:
                    print("slave did not synchronise", file=sys.stderr)
                    return 1
                time.sleep(0.01)
            with (
                Channel.attach(*master.open_channel(ET)[1:]) as cm,
                Channel.attach(*slave.open_channel(ET)[1:]) as cs,
            ):
                for mode in order:
                    samples, lateness, st = run_chunk(
                        cs, cm, s1.mac, mode, per_chunk, args.offset_us, args.cpu
                    )
                    res[mode]["samples"].append(samples)
                    res[mode]["lateness"].append(lateness)
                    res[mode]["stats"].append(
                        {"runs": st.runs, "sent": st.sent, "missed": st.missed, "policy": st.policy}
                    )
    out = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "cycle_us": CYCLE_US,
        "slot_us": SLOT_US,
        "offset_us": args.offset_us,
        "per_chunk": per_chunk,
        "order": order,
        "modes": {},
    }
    print(
        f"# 1 ms TDMA cycle, slave slot at {SLOT_US} us, RT task offset {args.offset_us} us, "
        f"{per_chunk} messages per chunk, order {' '.join(order)}"
    )
    for mode in ("rt", "standard"):
        samples = np.concatenate(res[mode]["samples"])
        lat = latencies_ns(samples)
        lateness = np.concatenate(res[mode]["lateness"])
        sent = sum(s["sent"] for s in res[mode]["stats"])
        summary = {
            "wake_lateness": pct_us(lateness),
            "sched_to_rx": pct_us(lat["sched_to_rx"]),
            "sched_to_tx": pct_us(lat["sched_to_tx"]),
            "tx_to_rx": pct_us(lat["tx_to_rx"]),
            "sent": sent,
            "received": int(len(samples)),
            "missed": sum(s["missed"] for s in res[mode]["stats"]),
            "policy": res[mode]["stats"][0]["policy"],
        }
        out["modes"][mode] = summary
        print(
            f"## {mode} ({summary['policy']}): sent {sent}, received {len(samples)}, "
            f"missed cycles {summary['missed']}"
        )
        print(line("  wake-up lateness", summary["wake_lateness"]))
        print(line("  scheduled -> received (e2e)", summary["sched_to_rx"]))
        print(line("  scheduled -> transmitted", summary["sched_to_tx"]))
        print(line("  transmitted -> received (wire)", summary["tx_to_rx"]))
    os.makedirs("results", exist_ok=True)
    path = f"results/bench_app-{datetime.datetime.now():%Y%m%d-%H%M%S}.json"
    with open(path, "w") as f:
        json.dump(out, f, indent=1, default=float)
    print(f"saved {path}")
    return 0


if __name__ == "__main__":
    unwind_on_sigterm()  # stopped with SIGTERM, a run takes its lab down as on Ctrl-C
    sys.exit(main())
