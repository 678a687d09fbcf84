#!/usr/bin/env python3
"""The ceiling of the lab's real-time path: a raw AF_XDP flood, nothing of the stack around it.

Station 1 of the lab sends copies of one frame, unicast to station 2, through rtnet's AF_XDP
socket and XDP program, but with no RT thread, no discipline and no link model
(csrc/bench/rtn_flood.c: --batch descriptors per submit and one sendto() per batch);
station 2 counts them, busy polling its RX ring.  Same path as the real-time
path's RFC 2544 trials: station -> veth -> bridge -> veth -> station, copy mode.
What station 2 receives per second is what the path can carry, the figure the
stack's zero-loss rate is compared with (tools/bench_suite.py, part c).

    python3 -m tools.bench_xdp_flood  # 64-byte frames, CPU 0 -> CPU 1, SCHED_FIFO 90
    python3 -m tools.bench_xdp_flood --frame 1518 --tx-cpu 1 --rx-cpu 1 --priority 0

Needs root; builds its own lab (--lab, default "fl") unless one of that name is up.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading

from rtnet._benchlib import check, ffi, lib
from rtnet.argtypes import integer, number
from rtnet.errors import XskError
from rtnet.lab import Lab
from rtnet.mac import parse_mac
from rtnet.sigterm import unwind_on_sigterm
from rtnet.xsk import RawSocket

ET = 0x88B5
BATCH = 64
RX_IDLE_S = 0.3  # the receiver stops this long after the last frame
PRIORITY = 90  # SCHED_FIFO, as the stations' RT threads in the RFC 2544 trials


def _frame(length: int, src: str, dst: str) -> bytes:
    """A frame of ``length`` bytes (FCS not included) from ``src`` to ``dst``, EtherType ET:
    unicast, as an RFC 2544 tester sends and as the RT path's trials are."""
    head = parse_mac(dst) + parse_mac(src) + ET.to_bytes(2, "big")
    return head + bytes(length - len(head))


def _run_pinned(cpu: int | None, priority: int, fn, *args):
    # both calls act on the calling thread only (Linux)
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    if priority:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
    return fn(*args)


def flood(
    lab: Lab,
    frame: int = 64,
    seconds: float = 2.0,
    batch: int = BATCH,
    tx_cpu: int | None = 0,
    rx_cpu: int | None = 1,
    priority: int = PRIORITY,
) -> dict:
    """Flood from station 1 to station 2 of ``lab`` (no station running on either).

    ``frame`` counts the FCS, as RFC 2544 does.  ``priority`` > 0 runs both
    ends SCHED_FIFO (as the stations' RT threads), which needs them on two
    different CPUs: a spinning FIFO thread never lets the other end run on
    its CPU.  Returns frames and frames/s sent and received, and the kicks
    each end made.
    """
    if priority and (tx_cpu is None or tx_cpu == rx_cpu):
        raise ValueError("flood: SCHED_FIFO ends need two different CPUs (or priority 0)")
    tx_res, rx_res = ffi.new("struct rtn_flood_result *"), ffi.new("struct rtn_flood_result *")
    s1, s2 = lab.station(1), lab.station(2)
    data = _frame(frame - 4, s1.mac, s2.mac)
    rcs = {}
    with (
        RawSocket(s2.ifname, netns=s2.netns, ethertypes=[ET], busy_poll=True) as rx,
        RawSocket(s1.ifname, netns=s1.netns, ethertypes=[ET], busy_poll=True) as tx,
    ):

        def receive():
            rcs["rx"] = _run_pinned(
                rx_cpu,
                priority,
                lib.rtn_flood_rx,
                rx._live(),
                ET,
                int(RX_IDLE_S * 1e9),
                int((seconds + 5) * 1e9),
                rx_res,
            )

        def send():
            rcs["tx"] = _run_pinned(
                tx_cpu,
                priority,
                lib.rtn_flood_tx,
                tx._live(),
                data,
                len(data),
                batch,
                int(seconds * 1e9),
                tx_res,
            )

        threads = [threading.Thread(target=receive), threading.Thread(target=send)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for end in ("rx", "tx"):
        check(rcs[end], XskError)

    def rate(r):
        span = (r.last_ns - r.first_ns) / 1e9
        return r.frames / span if span > 0 else 0.0

    return {
        "frame": frame,
        "batch": batch,
        "seconds": seconds,
        "tx_cpu": tx_cpu,
        "rx_cpu": rx_cpu,
        "priority": priority,
        "sent": int(tx_res.frames),
        "received": int(rx_res.frames),
        "tx_fps": rate(tx_res),
        "rx_fps": rate(rx_res),
        "tx_kicks": int(tx_res.kicks),
        "rx_polls": int(rx_res.kicks),
        "rx_other": int(rx_res.other),
    }


def describe(r: dict) -> str:
    lost = r["sent"] - r["received"]
    sched = f"SCHED_FIFO {r['priority']}" if r["priority"] else "SCHED_OTHER"
    return (
        f"raw AF_XDP flood {r['frame']:5d} B (batch {r['batch']}, CPUs tx {r['tx_cpu']} "
        f"rx {r['rx_cpu']}, {sched}): received {r['rx_fps']:9.0f} fps, sent {r['tx_fps']:9.0f} fps"
        f"{f', {lost} lost' if lost > 0 else ''}"
    )


def _cpu(text: str) -> int | None:
    return None if text == "any" else integer("CPU", 0, (os.cpu_count() or 1) - 1)(text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--frame",
        type=integer("frame size", 64, 1518),
        default=64,
        help="bytes, FCS included (RFC 2544)",
    )
    ap.add_argument("--seconds", type=number("seconds", 0.1, 600), default=2.0)
    ap.add_argument("--batch", type=integer("batch", 1, lib.RTN_FLOOD_BATCH_MAX), default=BATCH)
    ap.add_argument("--tx-cpu", type=_cpu, default=0, help="a CPU number, or any")
    ap.add_argument("--rx-cpu", type=_cpu, default=1, help="a CPU number, or any")
    ap.add_argument(
        "--priority",
        type=integer("priority", 0, 99),
        default=PRIORITY,
        help="SCHED_FIFO priority of both ends (0: SCHED_OTHER)",
    )
    ap.add_argument("--lab", default="fl", help="lab name (built and removed unless it is up)")
    args = ap.parse_args(argv)
    if args.priority and (args.tx_cpu is None or args.tx_cpu == args.rx_cpu):
        ap.error("--priority needs --tx-cpu and --rx-cpu on two different CPUs (or --priority 0)")
    if os.geteuid() != 0:
        ap.error("needs root (lab namespaces, AF_XDP)")
    lab = Lab(args.lab, 2)
    own = not lab.exists()
    if own:
        lab.up()
    try:
        print(
            describe(
                flood(
                    lab,
                    args.frame,
                    args.seconds,
                    args.batch,
                    args.tx_cpu,
                    args.rx_cpu,
                    args.priority,
                )
            ),
            flush=True,
        )
    finally:
        if own:
            lab.down()
    return 0


if __name__ == "__main__":
    unwind_on_sigterm()  # stopped with SIGTERM, a run takes its lab down as on Ctrl-C
    sys.exit(main())
