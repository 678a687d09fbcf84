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
from tools import bench_section

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

BENCH = os.path.join(HERE, "csrc", "build", "bench")
AGREE_PCT = 1.0
GOAL_RATIO = 3.0


class CostError(Exception):
    """A failure reported as one line."""


# name: (binary, needs the veth namespace, what is counted, unit, counted once per)
STAGES = {
    "app_send": (
        "stages",
        False,
        "rtn_app_send(): a 64-byte frame built in the channel's TX ring",
        "frame",
    ),
    "chan_drain": (
        "stages",
        False,
        "rtn_chans_drain(): the station takes it from the TX ring (part of slot_run)",
        "frame",
    ),
    "slot_run": (
        "stages",
        False,
        "TDMA master: every RT-loop wake-up of one 1 ms cycle (Sync, "
        "slot 0 with the frame; drain, enqueue, send) and the flush",
        "frame",
    ),
    "rtn_xsk_send": (
        "xsk",
        True,
        "rtn_xsk_send_by() on a veth socket: UMEM copy, TX ring, sendto() kick, completions",
        "frame",
    ),
    "rtn_xsk_recv": (
        "xsk",
        True,
        "rtn_xsk_rx_peek() + rtn_xsk_rx_release() on a veth socket",
        "frame",
    ),
    "rx_dispatch": (
        "stages",
        False,
        "rtn_station_receive_all(): one frame classified, "
        "802.1CB check, delivered to the channel's RX ring",
        "frame",
    ),
    "chan_deliver": (
        "stages",
        False,
        "rtn_chans_rx(): header parse and copy into the RX ring (part of rx_dispatch)",
        "frame",
    ),
    "app_recv": ("stages", False, "rtn_app_recv(): the message taken from the RX ring", "frame"),
    "app_sendto": (
        "preload",
        False,
        "rtn_app_sendto(): a UDP datagram of a 64-byte payload built "
        "in a UDP socket's TX ring (neighbour lookup, IPv4 and UDP headers, checksums)",
        "frame",
    ),
    "preload_send": (
        "preload",
        False,
        "sendto() through the socket interposer on a real-time UDP "
        "socket: its checks, the lock, rtn_app_sendto()",
        "frame",
    ),
    "app_recvfrom": (
        "preload",
        False,
        "rtn_app_recvfrom(): a UDP datagram of a 64-byte payload taken from the RX ring",
        "frame",
    ),
    "preload_recv": (
        "preload",
        False,
        "recvfrom() through the socket interposer: one datagram "
        "taken from the RX ring, the sender's address, the notify eventfd re-armed",
        "frame",
    ),
    "frer_send": (
        "stages",
        False,
        "802.1CB: sequence number and R-TAG pushed, per copy (2 a frame)",
        "copy",
    ),
    "frer_recover": (
        "stages",
        False,
        "802.1CB: R-TAG stripped and vector recovery, per copy (one passed, one discarded)",
        "copy",
    ),
    "vnic_gso": (
        "stages",
        False,
        "VNIC: a 64,000-byte TCP super-packet cut into 1514-byte frames with checksums, "
        "copied out of the read buffer (a flow's first packet, or no room for a layout)",
        "KB",
    ),
    "vnic_gso_in_place": (
        "stages",
        False,
        "VNIC: the same super-packet as the TAP read scatters it into the frames its "
        "segments leave from, cut where it lies (headers and checksums, no payload copied)",
        "KB",
    ),
    "vnic_gro": ("stages", False, "VNIC: those 45 frames merged back into one TAP write", "KB"),
    "vnic_rt_tx": (
        "stages",
        False,
        "VNIC on the RT thread: 64 frames of 1510 bytes the pump queued, sent tunnelled "
        "in a 900 us window of a 1 ms master cycle at 1000 Mbit/s (the Sync included)",
        "KB",
    ),
    "vnic_rt_rx": (
        "stages",
        False,
        "VNIC on the RT thread: 64 received tunnel frames of 1514 bytes classified and "
        "handed to the pump (the loans of the round before given back)",
        "KB",
    ),
    "anchor": (
        "xsk",
        True,
        "minimal AF_XDP loop (libxdp rings): send + receive of one 64-byte "
        "frame, each with its copy",
        "frame",
    ),
    "stub_send": ("stages", False, "the socket stub's send inside slot_run (subtracted)", "frame"),
    "stub_rx": (
        "stages",
        False,
        "the socket stub's receive inside rx_dispatch (subtracted)",
        "frame",
    ),
}
# Stages a KB or a copy is the unit of are run this many times less.
ROUND_DIVISOR = {"KB": 50, "copy": 1, "frame": 1}
NETNS_STAGES = [s for s, v in STAGES.items() if v[1]]


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
    for side, pre, native, udp in (
        ("send", "preload_send", "app_send", "app_sendto"),
        ("recv", "preload_recv", "app_recv", "app_recvfrom"),
    ):
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


def print_interposer(ip: dict | None):
    if not ip:
        return
    print(
        "\ninterposer's own cost: preload_send - app_send, preload_recv - app_recv "
        "(instructions per datagram):"
    )
    for side, pre, native, udp in (
        ("send", "preload_send", "app_send", "app_sendto"),
        ("recv", "preload_recv", "app_recv", "app_recvfrom"),
    ):
        d = ip.get(side)
        if not d:
            continue
        parts = [f"{pre} {fmt(d['preload'])}"]
        if "minus_" + native in d:
            parts.append(
                f"- {native} = {fmt(d['minus_' + native])} (EtherType API: UDP/IPv4 work included)"
            )
        if "minus_" + udp in d:
            parts.append(f"- {udp} = {fmt(d['minus_' + udp])} (the same UDP socket)")
        print("  " + ", ".join(parts))


def agreement(passes: list[dict]) -> dict:
    """Per stage: the spread of instructions per unit across passes, in percent."""
    out = {}
    for s in passes[0]["stages"]:
        vals = [p["stages"][s]["per_unit"]["ir"] for p in passes]
        lo, hi = min(vals), max(vals)
        spread = (hi - lo) / lo * 100 if lo > 0 else float("inf")
        out[s] = {"values": vals, "spread_pct": spread, "agree": spread <= AGREE_PCT}
    return out


def fmt(v: float) -> str:
    return f"{v:,.1f}" if abs(v) < 100 else f"{v:,.0f}"


def print_table(res: dict, agree: dict | None):
    print(
        f"\n{'stage':<14} {'unit':<6} {'instr/unit':>11} {'repeat':>8}  "
        "counters per unit (the stack's and the harness's)"
    )
    for s, r in res["stages"].items():
        p = r["per_unit"]
        extra = ", ".join(f"{k} {v:g}" for k, v in p.items() if k != "ir")
        rep = f"{agree[s]['spread_pct']:.3f}%" if agree else "-"
        print(f"{s:<14} {r['unit']:<6} {fmt(p['ir']):>11} {rep:>8}  {extra}")
    print(f"(bracket cost subtracted: {res['empty_ir_per_region']:.1f} instructions per region)")


def print_rt(rt: dict | None):
    if not rt:
        print(
            "\nRT path per 64-byte frame: not computed (needs app_send, slot_run, stub_send, "
            "rtn_xsk_send, rtn_xsk_recv, rx_dispatch, stub_rx, app_recv)"
        )
        return
    print(
        "\nRT path instructions per 64-byte frame (send side plus receive side, "
        "application to application):"
    )
    print(
        f"  send side    {fmt(rt['send_side']):>9}  (app_send + slot_run - stub sends + "
        f"{rt['socket_sends_per_frame']:g} x rtn_xsk_send)"
    )
    print(
        f"  receive side {fmt(rt['receive_side']):>9}  (rtn_xsk_recv + rx_dispatch - stub_rx "
        "+ app_recv)"
    )
    print(f"  total        {fmt(rt['total']):>9}")
    print(
        f"  per frame from the counters: {rt['sendto_kicks_per_frame']:g} sendto() kicks "
        f"(rtn_xsk tx_kicks), {rt['rt_wakeups_per_frame']:g} RT-loop wake-ups (harness), "
        f"{rt['app_kicks_per_frame']:g} application kicks (eventfd; none under TDMA), "
        "0 futex wakes (the reader polls)"
    )
    if "anchor" in rt:
        verdict = "met" if rt["goal_met"] else "MISSED"
        print(
            f"  minimal AF_XDP loop {fmt(rt['anchor'])}: ratio {rt['ratio']:.1f}x "
            f"(goal <= {GOAL_RATIO:g}x: {verdict})"
        )
    else:
        print("  minimal AF_XDP loop: not run (--no-netns), no ratio")


def print_xdp(x: dict | None):
    if not x:
        return
    print("\nXDP program (xdp_rtnet.bpf.c; callgrind cannot see it):")
    print(
        f"  verifier's translated program: {x['xlated_insns']} BPF instructions "
        f"(static size, not instructions run per frame); JIT image {x['jited_bytes']} bytes"
    )
    print(
        f"  BPF_PROG_TEST_RUN, {x['rounds']} runs, kernel's mean run time (a timing): "
        f"real-time frame {x['rt_frame_ns']:.0f} ns, IPv4 frame passed to Linux "
        f"{x['ipv4_frame_ns']:.0f} ns"
    )


def compare(old: dict, new: dict):
    print("\nBefore/after, instructions per unit:")
    print(f"{'stage':<14} {'before':>11} {'after':>11} {'change':>8}")
    olds = old.get("stages", {})
    for s, r in new["stages"].items():
        a = r["ir_per_unit"]
        b = olds.get(s, {}).get("ir_per_unit")
        if b is None:
            print(f"{s:<14} {'-':>11} {fmt(a):>11} {'new':>8}")
        else:
            ch = (a - b) / b * 100 if b else float("inf")
            print(f"{s:<14} {fmt(b):>11} {fmt(a):>11} {ch:>+7.1f}%")
    for s in olds:
        if s not in new["stages"]:
            print(f"{s:<14} {fmt(olds[s]['ir_per_unit']):>11} {'-':>11} {'gone':>8}")
    ort, nrt = old.get("rt_path") or {}, new.get("rt_path") or {}
    if ort.get("total") and nrt.get("total"):
        ch = (nrt["total"] - ort["total"]) / ort["total"] * 100
        print(f"{'RT path':<14} {fmt(ort['total']):>11} {fmt(nrt['total']):>11} {ch:>+7.1f}%")


SECTION_BEGIN = "<!-- bench_cost: begin (tools/bench_cost.py --benchmarks writes this section) -->"
SECTION_END = "<!-- bench_cost: end -->"

# What each stage's figure includes, for the page (a stage's own line says the rest).
COPIES = [
    (
        "application -> channel TX ring",
        "rtn_app_send (memcpy of the payload; header built in place)",
    ),
    ("TX ring -> TDMA queue", "rtn_tdma_enqueue (the frame into the engine's pool)"),
    ("TDMA queue -> UMEM", "rtn_xsk_send_by (memcpy into the TX frame)"),
    ("UMEM -> skb -> peer's UMEM", "the kernel, copy mode on a veth (outside every figure)"),
    ("UMEM -> channel RX ring", "rtn_chan_deliver (memcpy of the whole frame)"),
    ("RX ring -> application buffer", "rtn_app_recv (memcpy of the payload)"),
]


def markdown_section(res: dict) -> str:
    """The "Cost per frame" section of BENCHMARKS.md from one result."""
    st, rt, x = res["stages"], res.get("rt_path"), res.get("xdp_prog")
    npass = res["repeat"]
    L = [
        SECTION_BEGIN,
        "## Cost per frame (instructions, callgrind)",
        "",
        "Generated by `python3 -m tools.bench_cost --benchmarks` from the run below; do not edit "
        "by hand, run it again (`python3 -m tools.bench_suite` keeps this section as it is).",
        "",
        f"- Run: {res['date']}, commit {res['commit']}, `flock /tmp/rtnet-lab.lock "
        f"{res['command']}` (as root, from the repository root); {res['frames']} frames per "
        f"stage (the VNIC stages {max(1, res['frames'] // ROUND_DIVISOR['KB'])} super-packets), "
        f"{npass} independent pass{'es' if npass > 1 else ''}.",
        "- Counter: valgrind's callgrind, instructions executed (Ir) in **user space only**: "
        "what the kernel does inside a system call (the sendto() that transmits, the veth, "
        "the XDP program, the copy-mode copies) is in no figure, the RT path's or the "
        "anchor's. `perf stat -e instructions` would count without valgrind, but on this VM "
        f"it reports the event as **{res.get('perf_stat_instructions', 'not supported')}** "
        "(no hardware counters in the guest).",
        "- Harnesses (`make -C csrc cost`, csrc/bench/): each stage runs on its own on fixed "
        "64-byte frames (as handed to the socket, FCS not included) and a fixed count, after "
        "a few uncounted warm-up rounds. The station is the station fuzz targets' "
        "(csrc/fuzz/station_harness.h): no NIC, no RT thread, a virtual clock, a socket stub; "
        "the application library runs in the same process on a virtual clock too, so no "
        "clock read is in these counts. Each measured step is bracketed by "
        "CALLGRIND_TOGGLE_COLLECT; building inputs and emptying rings are outside; the "
        f"bracket's own {res['empty_ir_per_region']:.0f} instructions are subtracted. The "
        "AF_XDP stages run on a veth pair in a namespace the tool makes and removes, with the "
        "station's own sockets (rtn_xsk_open: our XDP program, SKB mode, copy mode); waiting "
        "for a frame (poll()) is outside the count. Under valgrind, rtn_xsk's clock reads are "
        "system calls (valgrind does not run the vDSO), so those two stages count glibc's "
        "system-call path where a native run executes the vDSO's.",
        "",
        "| stage | unit | instructions per unit | "
        + " | ".join(f"pass {i + 1}" for i in range(npass))
        + " | spread | what is counted |",
        "|---|---|---:|" + "---:|" * npass + "---:|---|",
    ]
    for name, r in st.items():
        spread = "-" if r.get("spread_pct") is None else f"{r['spread_pct']:.3f}%"
        L.append(
            f"| {name} | {r['unit']} | {fmt(r['ir_per_unit'])} | "
            + " | ".join(fmt(v) for v in r["passes"])
            + f" | {spread} | {r['description']} |"
        )
    L.append("")
    if res.get("repeat_agrees") is True:
        worst = max(r["spread_pct"] for r in st.values())
        L.append(
            f"**Repeatability: every stage agrees within {AGREE_PCT:g}% across {npass} "
            f"passes** (largest spread {worst:.3f}%: the counts are exact)."
        )
    elif res.get("repeat_agrees") is False:
        bad = [n for n, r in st.items() if r["spread_pct"] > AGREE_PCT]
        L.append(f"**Repeatability: DISAGREEMENT beyond {AGREE_PCT:g}% in {', '.join(bad)}.**")
    else:
        L.append("Repeatability: one pass only, not checked (run with --repeat 2).")
    L.append("")
    if rt:
        L += [
            "### RT path per 64-byte frame, application to application",
            "",
            "| | instructions per frame |",
            "|---|---:|",
            f"| send side: app_send + slot_run - {rt['socket_sends_per_frame']:g} x stub_send "
            f"+ {rt['socket_sends_per_frame']:g} x rtn_xsk_send | {fmt(rt['send_side'])} |",
            f"| receive side: rtn_xsk_recv + rx_dispatch - stub_rx + app_recv | "
            f"{fmt(rt['receive_side'])} |",
            f"| **RT path total** | **{fmt(rt['total'])}** |",
        ]
        if "anchor" in rt:
            L += [
                f"| minimal AF_XDP send/receive loop (anchor) | {fmt(rt['anchor'])} |",
                f"| **ratio** | **{rt['ratio']:.1f}x** |",
                "",
                f"Goal (DESIGN.md): at most {GOAL_RATIO:g}x. "
                + (
                    "**Met.**"
                    if rt["goal_met"]
                    else f"**Missed: the RT path costs {rt['ratio']:.1f}x the anchor's user-space "
                    "instructions per frame.**"
                ),
            ]
        L += [
            "",
            "The send side is one 1 ms TDMA master cycle carrying the frame: the RT loop "
            f"wakes {rt['rt_wakeups_per_frame']:g} times (the cycle's Sync, the slot), sends "
            f"{rt['socket_sends_per_frame']:g} frames (the Sync and the message) and kicks "
            f"the socket {rt['sendto_kicks_per_frame']:g} times (rtn_xsk's tx_kicks: "
            "sendto()); at one message per cycle the Sync is part of each frame's cost. "
            "The socket stub's instructions inside slot_run and rx_dispatch are replaced by "
            "the real socket code's (rtn_xsk_send, rtn_xsk_recv). The receive side is the "
            "frame's own: a slave's reception of the Sync and its own slot run are not in it. "
            "Neither side has the RT loop's own bookkeeping around a wake-up (rtn_station.c: "
            "arming the timer, poll(), the look at an empty RX ring, the next deadline): the "
            "harness calls what the loop calls after waking. "
            "The anchor does only what every AF_XDP program must: reserve a descriptor, copy "
            "the frame into the UMEM, submit, sendto(), take back completions; on receive "
            "take the descriptor, copy the frame out, release it, refill the fill ring.",
            "",
            "System calls and wake-ups per frame, from the stack's counters and the harness: "
            f"{rt['sendto_kicks_per_frame']:g} sendto() kicks; "
            f"{rt['rt_wakeups_per_frame']:g} RT-loop wake-ups, each of which natively returns "
            "from poll() and reads the timer (not in the count: the harness calls what the "
            "loop calls after waking); "
            f"{rt['app_kicks_per_frame']:g} application kicks (an eventfd write, NoMAC only); "
            "0 futex wakes (the reading application polls the ring; a sleeping reader costs "
            "the station one FUTEX_WAKE per delivery). Callgrind's own system-call and call "
            "counts are not used: it counts both also while collection is off.",
            "",
            "Copies per frame (from the code, not counted: the stack has no copy counter):",
            "",
        ]
        L += [f"- {a}: {b}" for a, b in COPIES]
        L.append("")
    ip = res.get("interposer")
    if ip:
        L += [
            "### The socket interposer (rtnet-run), per datagram",
            "",
            "librtnet_preload.so's sendto() and recvfrom() on a real-time UDP socket, as an "
            "unmodified program calls them under `rtnet-run` (csrc/bench/cost_preload.c: the "
            "interposer's objects linked into the harness with the station above; the "
            "socket is an rsock in state RP_RT in the descriptor table under a duplicate of "
            "its channel's notify eventfd, as the interposer's take-over leaves it; a 64-byte "
            "payload, a 106-byte frame). app_sendto and app_recvfrom are the same socket "
            "through the application library's UDP calls, without the interposer.",
            "",
            "interposer's own cost: preload_send - app_send, preload_recv - app_recv",
            "",
            "| | instructions per datagram |",
            "|---|---:|",
        ]
        for side, pre, native, udp in (
            ("send", "preload_send", "app_send", "app_sendto"),
            ("recv", "preload_recv", "app_recv", "app_recvfrom"),
        ):
            d = ip.get(side)
            if not d:
                continue
            L.append(f"| {pre} | {fmt(d['preload'])} |")
            if "minus_" + native in d:
                L.append(
                    f"| {pre} - {native} (the EtherType API's 64-byte frame: the UDP/IPv4 "
                    f"work is in the difference) | {fmt(d['minus_' + native])} |"
                )
            if "minus_" + udp in d:
                L.append(
                    f"| **{pre} - {udp}** (the same UDP socket through the library) | "
                    f"**{fmt(d['minus_' + udp])}** |"
                )
        L += [
            "",
            "The UDP socket's rows are the interposer's own cost: on sending, its layer "
            "around rtn_app_sendto() (the call's checks, the msghdr, the descriptor lookup, "
            "the lock); on receiving, its own take from the RX ring (it does not call "
            "rtn_app_recvfrom(): it copies the frame before parsing it, fills in the sender's "
            "address and re-arms the notify eventfd, and keeps no stage statistics). "
            "Against app_send and app_recv, the EtherType API's 64-byte frame, the "
            "difference also holds what a UDP datagram costs the library (the neighbour "
            "lookup, the IPv4 and UDP headers and checksums).",
        ]
        if "recv" in ip:
            L += [
                "",
                "A datagram received through the interposer costs "
                f"{ip['recv']['rx_notifies_per_datagram']:g} write of the notify eventfd by "
                "the station (outside every figure: the delivery is not counted) and one "
                "read() of it by recvfrom() when it empties the ring and re-arms the fd "
                "(rtn_app_rx_arm(); its user-space part is in preload_recv), so that poll, "
                "select and epoll see the socket as the kernel's. Sending costs no system "
                "call under TDMA (no kick).",
            ]
        L.append("")
    tops = [
        (n, r["top_functions"])
        for n, r in st.items()
        if r.get("top_functions")
        and n
        in (
            "slot_run",
            "rx_dispatch",
            "app_recv",
            "app_send",
            "rtn_xsk_send",
            "rtn_xsk_recv",
            "preload_send",
            "preload_recv",
        )
    ]
    if tops:
        L += [
            "Where the instructions go (inclusive per unit as `callgrind_annotate "
            "--inclusive=yes` attributes them; nested calls are counted in their callers "
            "too, inlined code under the function it went into):",
            "",
        ]
        for n, top in tops:
            L.append(f"- {n}: " + ", ".join(f"{fn} {fmt(v)}" for fn, v in top))
        L.append("")
    if x:
        L += [
            "### The XDP program (xdp_rtnet.bpf.c)",
            "",
            "Callgrind cannot see a BPF program. Two honest figures instead: the verifier's "
            f"translated program has **{x['xlated_insns']} BPF instructions** (a static size, "
            "not the instructions one frame executes; the JIT image is "
            f"{x['jited_bytes']} bytes), and BPF_PROG_TEST_RUN with repeat {x['rounds']:,} "
            f"gives the kernel's mean run time: **{x['rt_frame_ns']:.0f} ns** for a real-time "
            f"frame (EtherType 0x88B5: lookup, counter, receive stamp, redirect; retval "
            f"{x['rt_frame_retval']}: XDP_PASS, as no socket is in the map during a test run) "
            f"and **{x['ipv4_frame_ns']:.0f} ns** for an IPv4 frame it leaves to Linux. These "
            "are timings on a shared VM and move from run to run; they are not part of the "
            "repeatability check.",
            "",
        ]
    L += [
        "The regression guard: `python3 -m tools.bench_cost --compare OLD.json` prints each "
        "stage before and after; a change that claims a speed-up shows it there.",
        SECTION_END,
    ]
    return "\n".join(L) + "\n"


def kept_section(path: str) -> str:
    """The cost section of an existing BENCHMARKS.md ("" if none), for a writer
    that regenerates the rest of the page (tools/bench_suite_report.py)."""
    return bench_section.kept(path, SECTION_BEGIN, SECTION_END)


def update_benchmarks(path: str, section: str):
    """Replace the cost section of @p path, or append it."""
    try:
        bench_section.replace(path, SECTION_BEGIN, SECTION_END, section)
    except OSError as e:
        raise CostError(f"--benchmarks {path}: {e.strerror}") from None


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
        except CostError as e:
            print(f"bench_cost: {e}", file=sys.stderr)
            return 2
        print(f'section "Cost per frame": {args.benchmarks}')
    if old:
        compare(old, result)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
