"""``rtnetctl check --measure``: how late a real-time thread actually wakes on this machine.

The other checks read settings; this one runs a SCHED_FIFO thread on the RT CPU for a few
seconds (the stall detector, rtnet.stall, at the station's priority, 1 ms period) and
reports its wake-up lateness, the vCPU gaps and the slow spells it saw.  The figure that
matters for TDMA is the p99.99: a station's RT thread that wakes later than its slot's guard
skips the slot and its messages wait a whole cycle, and on a VM the late wake-ups come in
spells of milliseconds (every slot of the spell skipped), so the recommended guard is that
lateness plus a margin.
"""

from __future__ import annotations

import time

from rtnet.options import OPTIONS

from .facts import OK, WARN, CheckResult, _result

PERIOD_US = 1000
GUARD_MARGIN_US = 20
DEFAULT_GUARD_US = OPTIONS["tdma.guard_ns"].default // 1000  # what a plan gets by default


def measure_wakeups(cpu: int, seconds: float, priority: int = 90) -> dict:
    """Wake-up lateness (us) of a SCHED_FIFO thread on ``cpu`` over ``seconds``, with the
    gaps (wake-ups over 100 us late) and slow spells the detector recorded meanwhile."""
    from rtnet.stall import StallDetector

    with StallDetector([cpu], period_us=PERIOD_US, priority=priority) as det:
        time.sleep(seconds)
        w = det.wakeups()[cpu]
        recs = det.gaps()
    h = w["lateness"]
    slow = [r for r in recs if r.kind == "slow"]
    return {
        "cpu": cpu,
        "seconds": seconds,
        "wakeups": w["wakeups"],
        "p99_us": h.percentile_ns(99) / 1000,
        "p999_us": h.percentile_ns(99.9) / 1000,
        "p9999_us": h.percentile_ns(99.99) / 1000,
        "max_us": h.max_ns / 1000,
        "gaps": sum(r.kind == "gap" for r in recs),
        "slow_ms": sum(r.gap_ns for r in slow) / 1e6,
        "max_slowdown": max((r.slowdown for r in slow), default=0.0),
    }


def recommended_guard_us(m: dict) -> int:
    """A TDMA guard that covers the measured p99.99 lateness: plus a margin, in 10 us steps,
    never below the default."""
    return max(DEFAULT_GUARD_US, -(-int(m["p9999_us"] + GUARD_MARGIN_US) // 10) * 10)


def check_wakeup(m: dict) -> CheckResult:
    guard = recommended_guard_us(m)
    current = (
        f"p99.9 {m['p999_us']:.0f} us, p99.99 {m['p9999_us']:.0f} us, "
        f"max {m['max_us']:.0f} us on CPU {m['cpu']} "
        f"({m['wakeups']} wake-ups)"
    )
    spells = ""
    if m["gaps"] or m["slow_ms"]:
        spells = (
            f"; the vCPU stopped {m['gaps']} times for over 100 us and ran up to "
            f"{m['max_slowdown']:.0f} times slower for {m['slow_ms']:.0f} ms"
        )
    status = OK if guard <= DEFAULT_GUARD_US else WARN
    return _result(
        "wakeup",
        status,
        current,
        f"tdma guard >= {guard} us",
        "a station's RT thread that wakes later than its slot's guard skips the slot "
        "and its messages wait a cycle: give the RT slots this guard (rtmac plan "
        "--guard-ns, tdma.guard_ns) and cyclic tasks at least this lead" + spells,
    )
