#!/usr/bin/env python3
"""Cost per frame: instructions each stage of the real-time path executes,
counted by valgrind's callgrind, next to a minimal AF_XDP loop's.

Why instructions: on this shared 2-vCPU VM no timing repeats, but the
instructions a stage executes on fixed input do, so they are the regression
guard for performance work (issue 23).  ``perf stat -e instructions`` would
count them without valgrind's slowdown, but this VM has no hardware counters
(perf reports the event as "not supported"), so every figure comes from
callgrind.  Callgrind counts user space only: what the kernel does inside
a system call is in no figure.  System calls and wake-ups per frame come
from the stack's own counters (rtn_xsk's TX kicks, the application's
kicks) and the harness's (RT-loop wake-ups).

The harnesses (``make -C csrc cost``, csrc/bench/) run each stage on its
own on fixed frames, a fixed count and a virtual clock; each measured step
is bracketed by CALLGRIND_TOGGLE_COLLECT under ``--collect-atstart=no``, so
building inputs and emptying rings stay outside the count.  The bracket's own
cost (the "empty" stage) is subtracted.  The AF_XDP stages need root: the
tool makes a network namespace with a veth pair (no addresses; raw Ethernet
frames of EtherType 0x88B5 between the pair only) and removes it afterwards.

    python3 -m tools.bench_cost                     # every stage once
    python3 -m tools.bench_cost --repeat 2          # twice: each stage must agree within 1%
    python3 -m tools.bench_cost --compare old.json  # before/after per stage
    python3 -m tools.bench_cost --stages app_send,app_recv --frames 200 --no-netns
    python3 -m tools.bench_cost --stages slot_run --keep /tmp/cg  # then callgrind_annotate --inclusive=yes
    python3 -m tools.bench_cost --stages app_sendto,preload_send,app_recvfrom,preload_recv --no-netns

The socket interposer rtnet-run preloads (librtnet_preload.so) is measured
by its own harness (cost_preload): sendto() and recvfrom() on a real-time
UDP socket next to the application library's UDP calls on the same socket,
so the difference is the interposer's own cost per datagram.

Goal (DESIGN.md): the RT path's instructions per 64-byte frame, application
to application, at most 3x the minimal AF_XDP loop's.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from rtnet.argtypes import OneLineParser, integer
from rtnet.sigterm import unwind_on_sigterm
from tools.cost_report import (
    compare,
    markdown_section,
    print_interposer,
    print_rt,
    print_table,
    print_xdp,
    update_benchmarks,
)
from tools.cost_stages import (
    AGREE_PCT,
    GOAL_RATIO,
    INTERPOSER_CALLS,
    NETNS_STAGES,
    ROUND_DIVISOR,
    STAGES,
)

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

BENCH = os.path.join(HERE, "csrc", "build", "bench")


class CostError(Exception):
    """A failure reported as one line."""


def parse_callgrind(path: str) -> dict:
    """Instructions (Ir) collected, from the "totals:" line of a callgrind
    output file.  Neither its call counts nor --collect-systime's sysCount
    are used: callgrind counts both also while collection is off (the
    warm-up, the waits for a frame), so they say nothing about the measured
    frames; system calls and wake-ups come from the stack's own counters."""
    events, totals = [], []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("totals:"):
                totals = [int(v) for v in line.split()[1:]]
    if not events or not totals:
        raise CostError(f"callgrind wrote no totals to {path}")
    counts = dict(zip(events, totals + [0] * (len(events) - len(totals))))
    return {"ir": counts.get("Ir", 0)}


class Namespace:
    """A network namespace holding a veth pair, removed on exit."""

    def __init__(self):
        self.name = f"rtn-cost-{os.getpid()}"
        self.ifs = ("cost0", "cost1")

    def __enter__(self):
        if os.geteuid() != 0:
            raise CostError("the AF_XDP stages need root (or run with --no-netns)")
        if shutil.which("ip") is None:
            raise CostError("ip (iproute2) is not installed (run tools/setup-system.sh)")
        self.remove_leftovers()
        cmds = [
            ["ip", "netns", "add", self.name],
            [
                "ip",
                "-n",
                self.name,
                "link",
                "add",
                self.ifs[0],
                "type",
                "veth",
                "peer",
                "name",
                self.ifs[1],
            ],
            ["ip", "-n", self.name, "link", "set", self.ifs[0], "up"],
            ["ip", "-n", self.name, "link", "set", self.ifs[1], "up"],
        ]
        try:
            for c in cmds:
                r = subprocess.run(c, capture_output=True, text=True, timeout=30)
                if r.returncode:
                    raise CostError(f"{' '.join(c)}: {r.stderr.strip()}")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        # the veth pair and the XDP programs on it go with the namespace
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True, timeout=30)

    @staticmethod
    def remove_leftovers():
        """Namespaces of runs that were killed before they could clean up (their
        process is gone)."""
        r = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30)
        for line in r.stdout.splitlines():
            m = re.match(r"rtn-cost-(\d+)\b", line)
            if m and not os.path.exists(f"/proc/{m.group(1)}"):
                subprocess.run(["ip", "netns", "del", m.group(0)], capture_output=True, timeout=30)

    def prefix(self) -> list[str]:
        return ["ip", "netns", "exec", self.name]


def harness_result(r: subprocess.CompletedProcess, what: str) -> dict:
    """The last JSON line a harness printed; a failure as one line."""
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if r.returncode or not lines:
        err = (r.stderr.strip().splitlines() or ["no output"])[-1]
        raise CostError(f"{what} failed (exit {r.returncode}): {err}")
    return json.loads(lines[-1])


def callgrind(binary: str, stage: str, rounds: int, tmp: str, prefix=(), extra=()) -> dict:
    """One run of a harness under callgrind: its JSON line with the instructions
    collected ("ir") and the path of callgrind's output ("out")."""
    out = os.path.join(tmp, f"callgrind.{stage}")
    cmd = [
        *prefix,
        "valgrind",
        "--tool=callgrind",
        "--collect-atstart=no",
        f"--callgrind-out-file={out}",
        os.path.join(BENCH, f"cost_{binary}"),
        stage,
        str(rounds),
        *extra,
    ]
    # the interposer's constructor reads RTNET_*: none, so no rules and the same run everywhere
    env = {k: v for k, v in os.environ.items() if not k.startswith("RTNET_")}
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    res = harness_result(r, f"stage {stage}")
    res.update(parse_callgrind(out))
    res["out"] = out
    return res


def run_stage(stage: str, frames: int, ns: Namespace | None, tmp: str) -> dict:
    binary, netns, _, unit = STAGES[stage]
    rounds = max(1, frames // ROUND_DIVISOR[unit])
    prefix, extra = [], []
    if netns:
        if ns is None:
            raise CostError(f"stage {stage} needs the veth namespace")
        extra = [*ns.ifs, os.path.join(BENCH, "xdp_rtnet.bpf.o")]
        prefix = ns.prefix()
    res = callgrind(binary, stage, rounds, tmp, prefix, extra)
    res["top"] = top_functions(res["out"])
    return res


HARNESS_FN = re.compile(
    r"^(main|stage_\w+|run_\w+|slot_cycle|anchor_\w+|gso_all|gro_merge|"
    r"\(below main\)|__libc_start\w*|0x[0-9a-f]+)$"
)


def top_functions(path: str, n: int = 6) -> list[list]:
    """The stack's functions that hold most of a stage's instructions (inclusive,
    as callgrind_annotate reports them), the harness's own frames left out: where an
    optimisation would start.  Empty when callgrind_annotate is missing."""
    if shutil.which("callgrind_annotate") is None:
        return []
    r = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = []
    for line in r.stdout.splitlines():
        m = re.match(r"\s*([\d,]+) \([\d. ]+%\)\s+(\S+):(\S+) \[(\S+)\]$", line)
        if not m or "/bench/cost_" not in m.group(4) or HARNESS_FN.match(m.group(3)):
            continue
        if all(f != m.group(3) for f, _ in out):
            out.append([m.group(3), int(m.group(1).replace(",", ""))])
        if len(out) == n:
            break
    return out


def perf_instructions() -> str:
    """Whether ``perf stat -e instructions`` counts on this machine (it does not
    on this VM: no hardware counters in the guest)."""
    if shutil.which("perf") is None:
        return "perf not installed"
    r = subprocess.run(
        ["perf", "stat", "-x,", "-e", "instructions", "true"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    text = r.stderr + r.stdout
    if "not supported" in text:
        return "not supported"
    if r.returncode or "instructions" not in text:
        return "not usable: " + ((text.strip().splitlines() or ["no output"])[-1])
    return "supported"


def run_xdp_prog(repeat: int) -> dict:
    r = subprocess.run(
        [
            os.path.join(BENCH, "cost_xsk"),
            "xdp_prog",
            str(repeat),
            os.path.join(BENCH, "xdp_rtnet.bpf.o"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return harness_result(r, "xdp_prog")


def normalise(raw: dict, empty_per_region: float) -> dict:
    """Per-unit figures of one stage run: the brackets' own cost subtracted."""
    units = raw["units"]
    ir = raw["ir"] - raw["regions"] * empty_per_region
    per = {"ir": ir / units}
    for k, v in raw.get("counters", {}).items():
        if v:
            per[k] = v / raw["rounds"] if raw["unit"] != "copy" else v / units
    top = [[fn, ir / units] for fn, ir in raw.get("top", [])]
    return {
        "unit": raw["unit"],
        "units": units,
        "rounds": raw["rounds"],
        "regions": raw["regions"],
        "ir_raw": raw["ir"],
        "per_unit": per,
        "top": top,
    }


def one_pass(stages: list[str], frames: int, ns: Namespace | None, tmp: str) -> dict:
    raw_empty = callgrind("stages", "empty", frames, tmp)
    empty_per_region = raw_empty["ir"] / raw_empty["regions"]
    res = {"empty_ir_per_region": empty_per_region, "stages": {}}
    for s in stages:
        res["stages"][s] = normalise(run_stage(s, frames, ns, tmp), empty_per_region)
    return res


def rt_path(stages: dict) -> dict | None:
    """Application to application, per 64-byte frame, from the stages that make it up."""
    need = (
        "app_send",
        "slot_run",
        "stub_send",
        "rtn_xsk_send",
        "rtn_xsk_recv",
        "rx_dispatch",
        "stub_rx",
        "app_recv",
    )
    if any(s not in stages for s in need):
        return None
    ir = {s: stages[s]["per_unit"]["ir"] for s in need}
    sends = stages["slot_run"]["per_unit"].get("socket_sends", 1.0)
    send = ir["app_send"] + ir["slot_run"] - sends * ir["stub_send"] + sends * ir["rtn_xsk_send"]
    recv = ir["rx_dispatch"] - ir["stub_rx"] + ir["rtn_xsk_recv"] + ir["app_recv"]
    out = {
        "send_side": send,
        "receive_side": recv,
        "total": send + recv,
        "socket_sends_per_frame": sends,
        "rt_wakeups_per_frame": stages["slot_run"]["per_unit"].get("rt_wakeups", 0.0),
        "sendto_kicks_per_frame": sends
        * stages["rtn_xsk_send"]["per_unit"].get("sendto_kicks", 0.0),
        "app_kicks_per_frame": stages["app_send"]["per_unit"].get("app_kicks", 0.0),
    }
    if "anchor" in stages:
        out["anchor"] = stages["anchor"]["per_unit"]["ir"]
        out["ratio"] = out["total"] / out["anchor"]
        out["goal_ratio"] = GOAL_RATIO
        out["goal_met"] = out["ratio"] <= GOAL_RATIO
    return out


def interposer(stages: dict) -> dict | None:
    """The socket interposer's own cost per datagram (rtnet-run): its sendto() and
    recvfrom() less the native calls'.  Against app_send/app_recv (the EtherType
    API) as issue 23 asks, and against app_sendto/app_recvfrom (the same UDP socket
    through the application library), which leaves the interposer's share alone."""
    out = {}
    for side, pre, native, udp in INTERPOSER_CALLS:
        if pre not in stages:
            continue
        ir = stages[pre]["per_unit"]["ir"]
        d = {"preload": ir}
        if native in stages:
            d["minus_" + native] = ir - stages[native]["per_unit"]["ir"]
        if udp in stages:
            d["minus_" + udp] = ir - stages[udp]["per_unit"]["ir"]
        out[side] = d
    if "recv" in out:
        out["recv"]["rx_notifies_per_datagram"] = stages["preload_recv"]["per_unit"].get(
            "rx_notifies", 0.0
        )
    return out or None


def agreement(passes: list[dict]) -> dict:
    """Per stage: the spread of instructions per unit across passes, in percent."""
    out = {}
    for s in passes[0]["stages"]:
        vals = [p["stages"][s]["per_unit"]["ir"] for p in passes]
        lo, hi = min(vals), max(vals)
        spread = (hi - lo) / lo * 100 if lo > 0 else float("inf")
        out[s] = {"values": vals, "spread_pct": spread, "agree": spread <= AGREE_PCT}
    return out


def git_commit() -> str:
    r = subprocess.run(
        ["git", "-C", HERE, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return r.stdout.strip() or "unknown"


def build():
    r = subprocess.run(
        ["make", "-s", "-C", os.path.join(HERE, "csrc"), "cost"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if r.returncode:
        err = (r.stderr.strip().splitlines() or ["no output"])[-1]
        raise CostError(f"make -C csrc cost failed: {err}")


def load_old(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            old = json.load(f)
    except OSError as e:
        raise CostError(f"--compare {path}: {e.strerror}") from None
    except ValueError as e:
        raise CostError(f"--compare {path}: not JSON ({e})") from None
    if (
        not isinstance(old, dict)
        or not isinstance(old.get("stages"), dict)
        or not all(
            isinstance(v, dict) and isinstance(v.get("ir_per_unit"), (int, float))
            for v in old["stages"].values()
        )
    ):
        raise CostError(f"--compare {path}: not a bench_cost result")
    return old


def main(argv=None) -> int:
    p = OneLineParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--frames",
        type=integer("frames", 10, 100000),
        default=2000,
        help="frames (or copies) per stage; the VNIC stages run frames/50 "
        "super-packets (default 2000)",
    )
    p.add_argument(
        "--repeat",
        type=integer("repeat", 1, 10),
        default=1,
        help="independent passes over every stage; with 2 or more each stage's count "
        f"must agree within {AGREE_PCT:g}%% (default 1)",
    )
    p.add_argument(
        "--stages", default=",".join(STAGES), help="comma-separated stages (default: all)"
    )
    p.add_argument(
        "--no-netns",
        action="store_true",
        help="skip what needs root and a veth namespace (anchor, rtn_xsk_*, XDP)",
    )
    p.add_argument(
        "--xdp-repeat",
        type=integer("xdp repeat", 1, 10000000),
        default=1000000,
        help="BPF_PROG_TEST_RUN repeats per frame (default 1000000)",
    )
    p.add_argument(
        "--out",
        default=os.path.join(HERE, "results", "cost.json"),
        help="where to write the JSON results (default results/cost.json)",
    )
    p.add_argument("--compare", metavar="OLD.json", help="print before/after against OLD.json")
    p.add_argument(
        "--benchmarks",
        metavar="MD",
        nargs="?",
        const=os.path.join(HERE, "BENCHMARKS.md"),
        help='write the section "Cost per frame" into MD (default BENCHMARKS.md)',
    )
    p.add_argument(
        "--keep",
        metavar="DIR",
        help="keep callgrind's output files in DIR (callgrind_annotate shows where "
        "a stage's instructions go)",
    )
    p.add_argument("--no-build", action="store_true", help="use the harnesses as built")
    args = p.parse_args(argv)

    try:
        stages = [s.strip() for s in args.stages.split(",") if s.strip()]
        bad = [s for s in stages if s not in STAGES]
        if bad or not stages:
            raise CostError(
                f"unknown stage {', '.join(bad) or '(none)'} (stages: {', '.join(STAGES)})"
            )
        if args.no_netns:
            stages = [s for s in stages if s not in NETNS_STAGES]
            if not stages:
                raise CostError("every stage chosen needs the namespace, and --no-netns is given")
        old = load_old(args.compare) if args.compare else None
        if shutil.which("valgrind") is None:
            raise CostError("valgrind is not installed (run tools/setup-system.sh)")
        out_dir = os.path.dirname(os.path.abspath(args.out))
        try:
            os.makedirs(out_dir, exist_ok=True)
        except OSError as e:
            raise CostError(f"--out {args.out}: {e.strerror}") from None
        if not os.access(out_dir, os.W_OK):
            raise CostError(f"--out {args.out}: directory not writable")
        if not args.no_build:
            build()
        need_ns = any(s in NETNS_STAGES for s in stages)
        passes, xdp = [], None
        with tempfile.TemporaryDirectory(prefix="bench-cost-") as tmp:
            if args.keep:
                try:
                    os.makedirs(args.keep, exist_ok=True)
                except OSError as e:
                    raise CostError(f"--keep {args.keep}: {e.strerror}") from None
            for i in range(args.repeat):
                print(
                    f"pass {i + 1} of {args.repeat}: {len(stages)} stages, "
                    f"{args.frames} frames each",
                    flush=True,
                )
                work = os.path.join(args.keep, f"pass{i + 1}") if args.keep else tmp
                os.makedirs(work, exist_ok=True)
                if need_ns:
                    with Namespace() as ns:
                        passes.append(one_pass(stages, args.frames, ns, work))
                else:
                    passes.append(one_pass(stages, args.frames, None, work))
            if not args.no_netns:
                if os.geteuid() != 0:
                    raise CostError("the XDP program's test run needs root (or --no-netns)")
                xdp = run_xdp_prog(args.xdp_repeat)
    except CostError as e:
        print(f"bench_cost: {e}", file=sys.stderr)
        return 2
    except subprocess.TimeoutExpired as e:
        print(f"bench_cost: {e.cmd[0]} did not finish in {e.timeout:.0f} s", file=sys.stderr)
        return 2

    perf = perf_instructions()
    agree = agreement(passes) if len(passes) > 1 else None
    first = passes[0]
    print_table(first, agree)
    rt = rt_path(first["stages"])
    print_rt(rt)
    ip = interposer(first["stages"])
    print_interposer(ip)
    print_xdp(xdp)
    ok = True
    if agree:
        bad = [s for s, a in agree.items() if not a["agree"]]
        ok = not bad
        if ok:
            worst = max(a["spread_pct"] for a in agree.values())
            print(
                f"\nrepeat: all {len(agree)} stages agree within {AGREE_PCT:g}% across "
                f"{len(passes)} passes (largest spread {worst:.3f}%)"
            )
        else:
            print(
                f"\nrepeat: DISAGREEMENT beyond {AGREE_PCT:g}% in "
                + ", ".join(f"{s} ({agree[s]['spread_pct']:.2f}%)" for s in bad)
            )
    result = {
        "tool": "bench_cost",
        "version": 1,
        "commit": git_commit(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(
            ["python3 -m tools.bench_cost", *(argv if argv is not None else sys.argv[1:])]
        ),
        "frames": args.frames,
        "repeat": args.repeat,
        "frame_len": 64,
        "counter": "callgrind Ir (user space only)",
        "perf_stat_instructions": perf,
        "stages": {
            s: {
                "description": STAGES[s][2],
                "unit": r["unit"],
                "ir_per_unit": r["per_unit"]["ir"],
                "per_unit": r["per_unit"],
                "ir_collected": r["ir_raw"],
                "regions": r["regions"],
                "units": r["units"],
                "rounds": r["rounds"],
                "top_functions": r["top"],
                "spread_pct": agree[s]["spread_pct"] if agree else None,
                "passes": [p["stages"][s]["per_unit"]["ir"] for p in passes],
            }
            for s, r in first["stages"].items()
        },
        "empty_ir_per_region": first["empty_ir_per_region"],
        "rt_path": rt,
        "interposer": ip,
        "xdp_prog": xdp,
        "repeat_agrees": ok if agree else None,
    }
    try:
        with open(args.out + ".tmp", "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
        os.replace(args.out + ".tmp", args.out)
    except OSError as e:
        print(f"bench_cost: --out {args.out}: {e.strerror}", file=sys.stderr)
        return 2
    print(f"\nresults: {args.out}")
    if args.benchmarks:
        try:
            update_benchmarks(args.benchmarks, markdown_section(result))
        except OSError as e:
            print(f"bench_cost: --benchmarks {args.benchmarks}: {e.strerror}", file=sys.stderr)
            return 2
        print(f'section "Cost per frame": {args.benchmarks}')
    if old:
        compare(old, result)
    return 0 if ok else 1


if __name__ == "__main__":
    unwind_on_sigterm()  # stopped with SIGTERM, a run takes its lab down as on Ctrl-C
    sys.exit(main())
