#!/usr/bin/env python3
"""What this machine charges for the primitives the stack's threads are made of.

Much of the VNIC's CPU per byte on a VM is what its threads' wake-ups cost there: a timer
interrupt or a wake-up across CPUs goes through the hypervisor.  This measures, with tools/vm_costs.c, in CPU microseconds
charged to the thread that pays them (its own CPU clock, as the lab's CPU accounting
charges it):

  syscall_ns           a system call that does nothing (the floor of a TAP read or write)
  timer_arm_earliest   arming a timer that expires before every other on its CPU: the
                       kernel programs the CPU's timer device
  timer_arm_behind     arming one behind another: no programming
  timer_wakeup_1ms     a thread sleeping to an absolute time and waking, every 1 ms (an RT
                       thread's TDMA cycle) ...
  timer_wakeup_4ms     ... and every 4 ms (the VNIC pump's period under a flow)
  handoff_same_cpu     one thread waking another on its own CPU and sleeping (a pump's TAP
                       write waking the application)
  handoff_cross_cpu    the same across CPUs, both threads busy passing a token
  kick_waker           what waking a thread asleep on the other CPU costs the waker (the
                       RT thread's kick of the pump) ...
  kick_woken           ... and the thread it woke

Each figure is the median of --runs runs of the program with [min..max]; a figure whose
runs differ by more than DISAGREE times is flagged, as the VM's noise then decides it.
/dev/cpu_dma_latency is held at 0 throughout, as the stations' RT threads hold it (unless
--no-pm-qos).  Run it alone: it keeps both CPUs busy for a few seconds.

    python3 -m tools.bench_vm_costs [--runs 3] [--quick] [--no-pm-qos] [--json PATH]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from rtnet.argtypes import OneLineParser, integer
from rtnet.benchkit import why_unwritable
from rtnet.pmqos import cpu_latency
from tools.bench_aggregate import show, spread
from tools.bench_runs import write_json

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "vm_costs.c")
DISAGREE = 1.5  # a figure's largest run over its smallest beyond this: flagged
# the figures the program prints, in its order, with what each is in the stack
FIGURES = {
    "syscall_ns": "a system call, ns",
    "timer_arm_earliest": "arming the earliest timer",
    "timer_arm_behind": "arming a timer behind another",
    "timer_wakeup_1ms": "a timer wake-up every 1 ms (an RT thread's cycle)",
    "timer_wakeup_4ms": "a timer wake-up every 4 ms (the pump's period)",
    "handoff_same_cpu": "a hand-off to a thread on the same CPU",
    "handoff_cross_cpu": "a hand-off across CPUs, both busy",
    "kick_waker": "a kick of a thread asleep on the other CPU, the waker's",
    "kick_woken": "... the woken thread's",
}


class CostError(Exception):
    """The program could not be built or run, or printed what it should not."""


def build(out_dir: str) -> str:
    """tools/vm_costs.c built into ``out_dir``; its path."""
    exe = os.path.join(out_dir, "vm_costs")
    r = subprocess.run(
        ["gcc", "-O2", "-Wall", "-pthread", "-o", exe, SOURCE],
        capture_output=True,
        text=True,
        check=False,
    )
    if r.returncode != 0:
        raise CostError(f"building {SOURCE} failed: {r.stderr.strip()[-300:]}")
    return exe


def parse(text: str) -> dict[str, float]:
    """The program's "name value" lines as a dict; a line of another form, an unknown
    name, a name twice or a value that is no finite non-negative number is an error."""
    out: dict[str, float] = {}
    for n, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 2 or fields[0] not in FIGURES or fields[0] in out:
            raise CostError(f"vm_costs line {n}: unexpected {line[:80]!r}")
        try:
            value = float(fields[1])
        except ValueError:
            raise CostError(f"vm_costs line {n}: {fields[1][:20]!r} is no number") from None
        if not 0 <= value < float("inf"):
            raise CostError(f"vm_costs line {n}: {fields[1][:20]!r} is out of range")
        out[fields[0]] = value
    if not out:
        raise CostError("vm_costs printed nothing")
    return out


def run_once(exe: str, quick: bool) -> dict[str, float]:
    r = subprocess.run(
        [exe] + (["--quick"] if quick else []),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if r.returncode != 0:
        raise CostError(f"vm_costs exited {r.returncode}: {r.stderr.strip()[-200:]}")
    return parse(r.stdout)


def summarize(runs: list[dict[str, float]]) -> dict:
    """Per figure: its median [min..max] over the runs, and whether the runs disagree."""
    out = {}
    for name in FIGURES:
        values = [r[name] for r in runs if name in r]
        fig = spread(values)
        if fig is None:
            continue
        out[name] = {
            "figure": fig,
            "runs": values,
            "disagree": fig.hi > DISAGREE * fig.lo,
        }
    return out


def report(summary: dict, held: bool) -> str:
    lines = [
        f"# CPU us charged to the thread that pays (median [min..max]); "
        f"cpu_dma_latency {'held at 0' if held else 'not held'}"
    ]
    for name, what in FIGURES.items():
        if name not in summary:
            continue
        s = summary[name]
        flag = "  FLAG: runs disagree" if s["disagree"] else ""
        lines.append(f"{what:58s} {show(s['figure'], 2)}{flag}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = OneLineParser(prog="bench_vm_costs", description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=integer("--runs", 1, 20), default=3)
    ap.add_argument("--quick", action="store_true", help="a tenth of the repetitions")
    ap.add_argument("--no-pm-qos", action="store_true", help="leave cpu_dma_latency alone")
    ap.add_argument("--json", metavar="PATH", help="write the runs and the summary here")
    a = ap.parse_args(argv)
    if a.json and (why := why_unwritable(a.json)):
        ap.error(f"--json {a.json}: {why}")  # before any measuring, not after it
    try:
        with tempfile.TemporaryDirectory() as tmp:
            exe = build(tmp)
            with cpu_latency(None if a.no_pm_qos else 0) as held:
                runs = [run_once(exe, a.quick) for _ in range(a.runs)]
    except (CostError, OSError, subprocess.TimeoutExpired) as e:
        print(f"bench_vm_costs: {e}", file=sys.stderr)
        return 2
    summary = summarize(runs)
    print(report(summary, held))
    if a.json:
        doc = {
            "pm_qos_held": held,
            "runs": runs,
            "summary": {
                k: {
                    "median": float(v["figure"]),
                    "min": v["figure"].lo,
                    "max": v["figure"].hi,
                    "disagree": v["disagree"],
                }
                for k, v in summary.items()
            },
        }
        try:
            write_json(a.json, doc)
        except OSError as e:
            print(f"bench_vm_costs: --json {a.json}: {e.strerror}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
