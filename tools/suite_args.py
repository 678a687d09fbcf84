"""The command line of tools/bench_suite.py: the protocol file's values as the defaults
(tools/bench_protocol.toml), a flag that overrides one recorded, and what is refused
before any lab is made."""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile

from rtnet.argtypes import OneLineParser
from tools import bench_protocol
from tools.suite_config import LOADS, PARTS, ROOT

DESCRIPTION = "The source documents' measurements in one command, on the lab."


# flags whose defaults come from the protocol (tools/bench_protocol.toml): dest -> key
PROTOCOL_FLAGS = {
    "runs": ("runs", "independent runs, each with fresh labs; headlines are their median"),
    "messages": ("messages", "per matrix cell"),
    "chunks": ("chunks", "interleaved chunks per cell (standard/RT alternate)"),
    "stall_period_us": ("stall_period_us", "the stall detector's period per CPU"),
    "stall_threshold_us": ("stall_threshold_us", "a detector wake-up later than this is a gap"),
    "lead_us": ("lead_us", "TDMA: the RT application wakes this long before its slot"),
    "guard_us": (
        "guard_us",
        "the TDMA RT slots' guard in the matrix, in us, or 'auto': the "
        "p99.99 wake-up lateness measured on the RT CPU just before, plus a margin",
    ),
    "ct_seconds": ("ct_seconds", "cyclictest per load"),
    "sizes": ("sizes", "RFC 2544 frame sizes, comma-separated"),
    "link_rates": ("link_rates_mbps", "RFC 2544 on the RT path: modelled link rates (Mbit/s)"),
    "trial_s": ("trial_s", "RFC 2544 search trial length (s)"),
    "resolution_pct": ("resolution_pct", "RFC 2544 search resolution, percent of line rate"),
    "max_trials": ("max_trials", "rates tried per frame size"),
    "loss_verify": (
        "loss_verify",
        "a lossy trial is repeated at the same rate this many times "
        "before the rate fails (ETSI GS NFV-TST 009)",
    ),
    "disturbed_ms": (
        "disturbed_ms",
        "a trial during which the stall detector saw this many ms "
        "of the VM's slow spells and gaps is disturbed (0: none is)",
    ),
    "retry_disturbed": (
        "retry_disturbed",
        "the second column only: a disturbed lossy trial "
        "is repeated at the same rate up to this many times",
    ),
    "confirm_s": ("confirm_s", "the found rate is confirmed by one trial this long (s)"),
    "latency_trials": ("latency_trials", "dedicated latency trials at the found rate"),
    "latency_trial_s": ("latency_trial_s", "length of each latency trial (s)"),
    "flood_s": ("flood_s", "raw AF_XDP flood per frame size (the RT path's ceiling)"),
    "flood_repeats": ("flood_repeats", "raw AF_XDP floods per size; the ceiling is the best"),
    "cut_runs": ("cut_runs", "c-frer: runs with wire A cut for the middle third"),
    "cut_messages": ("cut_messages", "c-frer: messages (one a cycle) per wire-cut run"),
    "ping_count": ("ping_count", "ICMP round trips through the VNICs per frame size"),
    "vnic_seconds": ("vnic_seconds", "part d, per run"),
}


def load_protocol(argv) -> bench_protocol.Protocol:
    """The protocol file named by ``--protocol`` (default tools/bench_protocol.toml), read
    before the rest of the command line, whose defaults it gives."""
    pre = OneLineParser(prog="bench_suite.py", add_help=False)
    pre.add_argument("--protocol", default=bench_protocol.DEFAULT_PATH)
    known, _rest = pre.parse_known_args(argv)
    try:
        return bench_protocol.load(known.protocol)
    except bench_protocol.ProtocolError as e:
        pre.error(f"protocol: {e}")
        raise  # not reached: error() exits


def writable_dir(path: str) -> str | None:
    """Why ``path`` cannot take the results (None if it can): made if missing, then a
    file created and removed in it."""
    try:
        os.makedirs(path, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-probe-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        return e.strerror or str(e)
    return None


def parse_args(argv, *, need_lab: bool = True):
    protocol = load_protocol(argv)
    ap = OneLineParser(prog="bench_suite.py", description=DESCRIPTION)
    ap.add_argument(
        "--protocol",
        default=bench_protocol.DEFAULT_PATH,
        help="the benchmark protocol whose values are the defaults (docs/benchmark-protocol.md)",
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="the protocol's [quick] values: a smoke test for CI, not a measurement",
    )
    ap.add_argument("--loads", default=",".join(LOADS))
    for dest, (key, text) in PROTOCOL_FLAGS.items():
        ap.add_argument(
            "--" + dest.replace("_", "-"),
            dest=dest,
            default=None,
            type=bench_protocol.argtype(key),
            help=f"{text} (protocol: {key})",
        )
    ap.add_argument(
        "--parts",
        default="a,c,d",
        help="a (with b), c (= c-rt, c-vnic and c-frer: RFC 2544 on the RT path, "
        "through the VNIC, with 802.1CB), d",
    )
    ap.add_argument("--lab", default="bs", help="lab name prefix")
    ap.add_argument(
        "--from-json",
        metavar="PATH",
        help="measure nothing: redo the figures and the report from a results file "
        "or from a manifest.json (every ok run it lists)",
    )
    ap.add_argument("--one-run", metavar="DIR", help=argparse.SUPPRESS)
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "results"))
    ap.add_argument(
        "--report",
        default=None,
        help="markdown report (default: BENCHMARKS.md at the root; --quick: in --out-dir)",
    )
    ap.add_argument(
        "--figures-dir",
        default=None,
        help="PNGs linked from the report (default: docs/figures; --quick: --out-dir/figures)",
    )
    args = ap.parse_args(argv)
    defaults = protocol.defaults(args.quick)
    args.protocol_info = {
        "path": os.path.relpath(protocol.path, ROOT)
        if protocol.path.startswith(ROOT + os.sep)
        else protocol.path,
        "sha256": protocol.sha256,
        "quick": args.quick,
        "overrides": {},
    }
    for dest, (key, _text) in PROTOCOL_FLAGS.items():
        given = getattr(args, dest)
        if given is None:
            setattr(args, dest, defaults[key])
        elif given != defaults[key]:
            args.protocol_info["overrides"][key] = {"protocol": defaults[key], "used": given}
    args.loads = [x for x in args.loads.split(",") if x]
    args.parts = set(args.parts.split(","))
    if args.parts - set(PARTS):
        ap.error(f"parts: choose from {', '.join(PARTS)}")
    if "c" in args.parts:
        args.parts |= {"c-rt", "c-vnic", "c-frer"}
    if set(args.loads) - set(LOADS):
        ap.error(f"loads: choose from {', '.join(LOADS)}")
    if args.report is None:
        args.report = (
            os.path.join(args.out_dir, "BENCHMARKS.md")
            if args.quick
            else os.path.join(ROOT, "BENCHMARKS.md")
        )
    if args.figures_dir is None:
        args.figures_dir = (
            os.path.join(args.out_dir, "figures")
            if args.quick
            else os.path.join(ROOT, "docs", "figures")
        )
    where = args.one_run or args.out_dir
    for what, path in (
        ("results directory", where),
        ("figures directory", args.figures_dir),
        ("report directory", os.path.dirname(os.path.abspath(args.report))),
    ):
        if args.one_run and what != "results directory":
            continue
        if why := writable_dir(path):
            ap.error(f"{what} {path} cannot be written: {why}")
    if not need_lab or args.from_json:
        return args
    for tool in ("cyclictest", "stress-ng", "iperf3", "ping"):
        if not shutil.which(tool):
            ap.error(f"{tool} is not installed (tools/setup-system.sh installs it)")
    if os.geteuid() != 0:
        ap.error("needs root (lab namespaces, AF_XDP, SCHED_FIFO)")
    if (os.cpu_count() or 1) < 2:
        ap.error("needs two CPUs: one for the load, one reserved for real-time work")
    return args
