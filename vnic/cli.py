"""``vnic bench``: the VNIC benchmark from the command line."""
from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="vnic", description="VNIC tools")
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("bench", help="iperf3 through vnic0 (batched, per-packet) vs the kernel path")
    b.add_argument("--seconds", type=int, default=5)
    b.add_argument("--cycle-us", type=int, default=1000)
    b.add_argument("--link-rate", type=int, default=100, help="TDMA link model, Mbit/s")
    b.add_argument("--mtu", type=int, default=None,
                   help="VNIC MTU (default: the NRT slot's limit, slot size - 4)")
    b.add_argument("--lab", default="vb")
    b.add_argument("--json", default="results/vnic_bench.json")
    b.add_argument("--png", default="results/vnic_bench.png")
    b.add_argument("--offload", choices=("on", "off", "both"), default="on",
                   help="TAP with TSO/checksum offload (on), without (off), or both runs")
    b.add_argument("--no-offload", dest="offload", action="store_const", const="off",
                   help="same as --offload off")
    args = ap.parse_args(argv)
    if not 1 <= args.seconds <= 600:
        ap.error("--seconds: 1..600")
    from .bench import run
    run(args.seconds, args.cycle_us, args.link_rate, args.mtu, args.lab, args.json, args.png,
        log=lambda s: print(s, flush=True), offload=args.offload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
