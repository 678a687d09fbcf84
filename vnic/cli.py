"""``vnic bench``: the VNIC benchmark from the command line.

Every argument is checked before anything is built (vnic.bench.check_args);
errors are one line, ``vnic: <message>``: exit status 2 for a refused
command line, 1 when the benchmark itself fails.
"""

from __future__ import annotations

import sys

from rtmac.tdma_config import LIMITS
from rtnet.argtypes import OneLineParser, integer
from rtnet.benchkit import RT_CPU_HELP, rt_cpu_arg
from rtnet.config import XDP_MODES
from rtnet.errors import ConfigError, RtnetError
from rtnet.messages import bounded, one_line
from rtnet.sigterm import unwind_on_sigterm

from .bench import LINK_RATE_ARG, MAX_MTU, MAX_SECONDS, MIN_MTU, OFFLOAD


def build_parser() -> OneLineParser:
    ap = OneLineParser(prog="vnic", description="VNIC tools")
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser(
        "bench", help="iperf3 through vnic0 (batched, per-packet) vs the kernel path"
    )
    b.add_argument("--seconds", type=integer("seconds", 1, MAX_SECONDS), default=5)
    b.add_argument("--cycle-us", type=integer("cycle", *LIMITS["cycle_us"]), default=1000)
    b.add_argument(
        "--link-rate",
        type=LINK_RATE_ARG,
        default=100,
        help="TDMA link model, Mbit/s",
    )
    b.add_argument(
        "--mtu",
        type=integer("mtu", MIN_MTU, MAX_MTU),
        default=None,
        help="VNIC MTU (default: the NRT slot's limit, slot size - 4)",
    )
    b.add_argument("--lab", default="vb")
    b.add_argument("--json", default="results/vnic_bench.json")
    b.add_argument("--png", default="results/vnic_bench.png")
    b.add_argument(
        "--offload",
        choices=OFFLOAD,
        default="on",
        help="TAP with TSO/checksum offload (on), without (off), or both runs",
    )
    b.add_argument(
        "--no-offload",
        dest="offload",
        action="store_const",
        const="off",
        help="same as --offload off",
    )
    b.add_argument(
        "--xdp-mode",
        choices=XDP_MODES,
        default="auto",
        help="the stations' XDP attach mode (auto: SKB mode on a one-queue veth, else native "
        "where the driver has it)",
    )
    b.add_argument(
        "--slots",
        choices=("windows", "rtnet"),
        default="windows",
        help="NRT windows (default), or RTnet's NRT slots of one frame each",
    )
    b.add_argument(
        "--rt-cpu", type=rt_cpu_arg, default="auto", metavar="{auto,none,N}", help=RT_CPU_HELP
    )
    b.add_argument(
        "--wake-early",
        action="store_true",
        help="the stations' RT threads wake before their slots and spin to them "
        "([rt] wake_early), idle runs included",
    )
    b.add_argument(
        "--witness",
        action="store_true",
        help="run the stall detector on every CPU and report the RT slot misses outside "
        "the spans the hypervisor took one",
    )
    return ap


def main(argv=None) -> int:
    as_program = argv is None  # not a call from within another program (a test, a tool)
    ap = build_parser()
    try:
        args = ap.parse_args(argv)
    except SystemExit as exc:  # a refused command line (one line printed), or --help
        return int(exc.code or 0)
    from . import bench

    bench_args = (
        args.seconds,
        args.cycle_us,
        args.link_rate,
        args.mtu,
        args.lab,
        args.json,
        args.png,
        args.offload,
    )
    try:
        bench.check_args(
            *bench_args,
            windows=args.slots == "windows",
            xdp_mode=args.xdp_mode,
            rt_cpu=args.rt_cpu,
        )
    except ConfigError as exc:
        print(f"vnic: {bounded(one_line(str(exc)))}", file=sys.stderr)
        return 2
    if as_program:
        unwind_on_sigterm()  # stopped with SIGTERM, the bench takes its lab down as on Ctrl-C
    try:
        bench.run(
            *bench_args[:7],
            log=lambda s: print(s, flush=True),
            offload=args.offload,
            windows=args.slots == "windows",
            witness=args.witness,
            xdp_mode=args.xdp_mode,
            rt_cpu=args.rt_cpu,
            wake_early=args.wake_early,
        )
    except (RtnetError, ConfigError) as exc:
        msg = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        print(f"vnic: {bounded(one_line(msg))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"vnic: bench interrupted; lab {args.lab} taken down", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
