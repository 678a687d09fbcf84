#!/usr/bin/env python3
"""The batched VNIC's context switches at several flow rates, by thread and kind.

``vnic bench`` reports one figure, switches per packet over an idle run, at one rate: a
TCP flow offering the modelled link's whole rate.  The pump changes its ways with the
traffic (event-driven while it is light, on its period, VNIC_PUMP_PERIOD_NS, under a
flow), and the RT thread wakes for received frames only while the pump is event-driven,
so what a packet costs depends on the rate.  Here one lab (the ``vnic bench`` pair: two
stations, 1 ms TDMA cycle, 100 Mbit/s modelled, batched VNIC, RT threads on a CPU of
their own) carries iperf3 TCP flows through vnic0 offering each of ``--rates`` in turn,
between two idle blocks of the same length.  For each flow block: the stack threads'
switches (rtnet-rt and rtnet-vnic, voluntary and involuntary, from /proc) above the idle
blocks' rate, per second and per wire frame the VNIC moved (both stations, both
directions), and the pump's wake-ups per second.

The rules, fixed before any run: the rates and their order are the same in every run
(not ascending, so a drift meets them mixed); the idle rate is the mean of the run's two
idle blocks, and a run whose two idle blocks differ by more than IDLE_AGREE of the larger
is flagged (kept); each figure is the median over runs with their minimum and maximum,
every run kept in the JSON.

    python3 -m tools.bench_vnic_csw [--runs 3] [--rates 60,10,100,30] [--block-s 5]
"""

from __future__ import annotations

import datetime
import os
import sys

from rtnet.argtypes import OneLineParser, integer, integer_list
from rtnet.benchkit import cpu_isolation, sysinfo
from rtnet.lab import Lab
from rtnet.sigterm import unwind_on_sigterm
from rtnet.station import RtSettings
from tools.bench_aggregate import show, spread
from tools.bench_runs import code_version, write_json
from vnic.bench import MAX_MTU, run_iperf
from vnic.bench_accounting import csw_above_idle, idle, measure
from vnic.pair import plan, tdma_pair

LAB = "vc"
DST = "198.19.0.2"  # station 2's vnic0
LINK_MBPS = 100  # the switches target is set at 100 Mbit/s modelled
RATES = (60, 10, 100, 30)  # offered TCP Mbit/s, in this order in every run
IDLE_AGREE = 0.10  # the two idle blocks' switch rates, at most this far apart


def pooled_idle(blocks: list[dict]) -> dict:
    """A run's idle blocks as one idle window (their lengths and switches summed)."""
    idles = [b for b in blocks if b["kind"] == "idle"]
    return {
        "wall_s": sum(b["wall_s"] for b in idles),
        "stack_csw": sum(b["stack_csw"] for b in idles),
        "csw_by_thread": {
            name: {k: sum(b["csw_by_thread"][name][k] for b in idles) for k in kinds}
            for name, kinds in idles[0]["csw_by_thread"].items()
        },
    }


def one_run(rates, block_s: int, log) -> dict:
    """One lab, one pair of stations: idle, the flows, idle; the blocks."""
    rt_cpu, app_cpus = cpu_isolation("auto")
    blocks = []
    with (
        Lab(LAB, 2) as lab,
        tdma_pair(
            lab,
            plan(1000, LINK_MBPS),
            mode="batched",
            mtu=MAX_MTU,
            rt=RtSettings(priority=80, cpu=rt_cpu),
        ) as (stations, _taps),
    ):
        for kind in ("idle", *rates, "idle"):
            if kind == "idle":
                b = measure(idle(block_s), stations)
            else:
                b = measure(
                    lambda r=kind: run_iperf(lab, "tcp", DST, block_s, r, cpus=app_cpus), stations
                )
            b["kind"] = kind
            blocks.append(b)
            pkts = b["vnic_packets"] / b["wall_s"]
            log(
                f"  {str(kind):>5}: {b.get('goodput_mbps', 0):6.1f} Mbit/s, {pkts:7.0f} packets/s, "
                f"{b['stack_csw'] / b['wall_s']:6.0f} switches/s, "
                f"pump wake-ups {b['pump_wakeups'] / b['wall_s']:.0f}/s"
            )
    out = {"blocks": blocks, "idle_disagree": idle_disagree(blocks)}
    if out["idle_disagree"]:
        log(f"  FLAG: the idle blocks' switch rates differ by more than {IDLE_AGREE:.0%}")
    out["per_rate"] = per_rate(out)
    return out


def idle_disagree(blocks: list[dict]) -> bool:
    """Whether a run's idle blocks' switch rates differ by more than IDLE_AGREE of the
    larger (the run is then flagged)."""
    rates = [b["stack_csw"] / b["wall_s"] for b in blocks if b["kind"] == "idle"]
    return max(rates) - min(rates) > IDLE_AGREE * max(rates)


def per_rate(run: dict) -> dict:
    """A run's flow blocks by offered rate: packets per second, and switches above the
    run's idle blocks (csw_above_idle), per second and per packet, in all and by thread
    and kind ("rtnet-vnic/vol", ...)."""
    base = pooled_idle(run["blocks"])
    out = {}
    for b in run["blocks"]:
        if b["kind"] == "idle":
            continue
        extra = csw_above_idle(b, base)
        counts = {"all": extra.pop("all")}
        counts.update({f"{n}/{k}": c for n, kinds in extra.items() for k, c in kinds.items()})
        pkts = b["vnic_packets"]
        row = {"goodput_mbps": b.get("goodput_mbps"), "packets_per_s": pkts / b["wall_s"]}
        for key, c in counts.items():
            row[key] = {"per_s": c / b["wall_s"], "per_packet": c / pkts if pkts else None}
        row["pump_wakeups_per_s"] = b["pump_wakeups"] / b["wall_s"]
        out[b["kind"]] = row
    return out


def report(runs: list[dict]) -> list[str]:
    tables = [r.get("per_rate") or per_rate(r) for r in runs]
    lines = [
        f"{len(runs)} run(s), {LINK_MBPS} Mbit/s modelled, median [min..max] over runs; "
        "switches above idle:",
        "offered  goodput  packets/s  switches/s  per packet  pump wake-ups/s  "
        "pump vol/invol per packet  rt vol per packet",
    ]
    for rate in sorted(tables[0]):

        def get(key, sub=None, rate=rate):
            return lambda t: t[rate][key] if sub is None else t[rate][key][sub]

        lines.append(
            f"{rate:>7}  {show(spread(map(get('goodput_mbps'), tables)), 1):>7}  "
            f"{show(spread(map(get('packets_per_s'), tables)), 0):>9}  "
            f"{show(spread(map(get('all', 'per_s'), tables)), 0):>10}  "
            f"{show(spread(map(get('all', 'per_packet'), tables)), 3):>10}  "
            f"{show(spread(map(get('pump_wakeups_per_s'), tables)), 0):>15}  "
            f"{show(spread(map(get('rtnet-vnic/vol', 'per_packet'), tables)), 3)}/"
            f"{show(spread(map(get('rtnet-vnic/invol', 'per_packet'), tables)), 3)}  "
            f"{show(spread(map(get('rtnet-rt/vol', 'per_packet'), tables)), 3)}"
        )
    flagged = sum(1 for r in runs if r.get("idle_disagree"))
    if flagged:
        lines.append(f"  {flagged} run(s) flagged: their idle blocks disagree (kept)")
    return lines


def main(argv=None) -> int:
    ap = OneLineParser(prog="bench_vnic_csw", description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=integer("runs", 1, 20), default=3)
    ap.add_argument(
        "--rates",
        type=integer_list("rate", 1, LINK_MBPS),
        default=list(RATES),
        help="offered TCP rates, Mbit/s, in this order (default 60,10,100,30)",
    )
    ap.add_argument("--block-s", type=integer("block seconds", 2, 60), default=5)
    ap.add_argument(
        "--output",
        default=os.path.join("results", "bench_vnic_csw", f"{code_version()}.json"),
        help="where every run goes (default results/bench_vnic_csw/<code>.json)",
    )
    a = ap.parse_args(argv)
    if len(a.rates) < 2 or len(set(a.rates)) != len(a.rates):
        ap.error("--rates: two or more rates, each once")
    if os.geteuid() != 0:
        print("bench_vnic_csw: needs root (namespaces, AF_XDP, TAP)", file=sys.stderr)
        return 1
    runs = []
    for i in range(a.runs):
        print(f"run {i + 1} of {a.runs}", flush=True)
        runs.append(one_run(a.rates, a.block_s, lambda s: print(s, flush=True)))
    lines = report(runs)
    print("\n".join(lines))
    os.makedirs(os.path.dirname(a.output) or ".", exist_ok=True)
    write_json(
        a.output,
        {
            "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "code": code_version(),
            "system": sysinfo(),
            "config": {"link_rate_mbps": LINK_MBPS, "rates": a.rates, "block_s": a.block_s},
            "runs": runs,
            "report": lines,
        },
    )
    print(f"saved {a.output}")
    return 0


if __name__ == "__main__":
    unwind_on_sigterm()  # stopped with SIGTERM, a run takes its lab down as on Ctrl-C
    sys.exit(main())
