"""``rtnetctl check``: what decides real-time timing on this machine, and what to set.

A TDMA slot only helps a thread that is on time for it (DESIGN.md, seeds/000):
the kernel's preemption model, the scheduler's permission and throttling,
what else runs or interrupts on the real-time CPU, idle states, timer slack,
locked memory and the NIC decide that, and nothing warns about a default
that is right for a desktop and wrong for a control task.  Each check is a
small function returning a :class:`CheckResult`: a name, the current and
the recommended value, a status (ok, warn, fail, not-applicable), one line
of explanation and the writes ``--apply`` would make.

Checks only read.  :func:`apply` makes the planned writes of the fixable
items, each of which is undone by writing the old value back (both are in
the result), and reports every write that failed on its own line.  Lifting
RT throttling is risky, so it needs an explicit ``unthrottle``.

All files are read through :class:`rtnet.sysfiles.SysFiles` (tests give it
a fake tree), ethtool through ``Machine.run`` and the driver's XDP features
through ``Machine.xdp_features``; nothing here starts a real-time task.

>>> results = run_checks(Machine(SysFiles("/")), Target())   # doctest: +SKIP
>>> print(format_table(results))                             # doctest: +SKIP
"""

from __future__ import annotations

import errno

from rtnet.messages import one_line
from rtnet.sysfiles import SysFiles, Unreadable

from .facts import (
    FAIL,
    JSON_KEYS,
    NA,
    OK,
    STATUSES,
    UMEM_BYTES,
    WARN,
    Change,
    CheckResult,
    Machine,
    Target,
    _Facts,
    _result,
    kernel_params,
    parse_kconfig,
    target_for,
)
from .nic import (
    check_coalescing,
    check_hw_timestamps,
    check_nic,
    check_queues,
    check_xdp_native,
    check_xdp_zerocopy,
)
from .system import (
    check_governor,
    check_idle_states,
    check_irq_affinity,
    check_isolcpus,
    check_memlock,
    check_nohz_full,
    check_pm_qos,
    check_preempt_rt,
    check_preemption,
    check_rcu_nocbs,
    check_rt_cpu,
    check_rt_throttling,
    check_sched_fifo,
    check_smt,
    check_timer_slack,
)

CHECKS = (
    check_preempt_rt,
    check_preemption,
    check_sched_fifo,
    check_rt_throttling,
    check_rt_cpu,
    check_isolcpus,
    check_nohz_full,
    check_rcu_nocbs,
    check_irq_affinity,
    check_smt,
    check_governor,
    check_idle_states,
    check_pm_qos,
    check_timer_slack,
    check_memlock,
    check_nic,
    check_xdp_native,
    check_xdp_zerocopy,
    check_coalescing,
    check_hw_timestamps,
    check_queues,
)

# the API of rtnetctl check and its tests
__all__ = [
    "CHECKS",
    "FAIL",
    "JSON_KEYS",
    "NA",
    "OK",
    "STATUSES",
    "UMEM_BYTES",
    "WARN",
    "Change",
    "CheckResult",
    "Machine",
    "Target",
    "apply",
    "apply_and_recheck",
    "check_machine",
    "check_name",
    "failed",
    "format_change",
    "format_table",
    "kernel_params",
    "measured_rt_cpu",
    "parse_kconfig",
    "run_checks",
    "target_for",
]


def measured_rt_cpu(target: Target, machine: Machine | None = None) -> int:
    """The CPU the checks are for (rt.cpu, else the last online CPU): where --measure runs."""
    return _Facts(machine or Machine(SysFiles("/")), target).rt_cpu


def check_name(check) -> str:
    return check.__name__.removeprefix("check_")


def run_checks(machine: Machine, target: Target) -> list[CheckResult]:
    """Every check, in order; one that cannot read what it needs says so on its line."""
    fx = _Facts(machine, target)
    out = []
    for check in CHECKS:
        try:
            out.append(check(fx))
        except Unreadable as exc:
            out.append(_result(check_name(check), WARN, "unknown", "-", str(exc)))
    return out


def apply(results: list[CheckResult], *, unthrottle: bool = False) -> list[dict]:
    """Make the writes of the fixable items; every outcome recorded on its item and returned."""
    done = []
    for res in results:
        if res.opt_in and not unthrottle:
            continue
        for ch in res.changes:
            outcome = {"what": ch.what, "old": ch.old, "new": ch.new, "ok": True, "error": None}
            try:
                ch.do()
            except OSError as exc:
                error = exc.strerror or str(exc)
                if exc.errno == errno.EIO and ch.what.startswith("/proc/irq/"):
                    error += " (the kernel manages this IRQ's affinity itself)"
                outcome.update(ok=False, error=one_line(error))
            res.applied.append(outcome)
            done.append({"name": res.name, **outcome})
    return done


def apply_and_recheck(
    machine: Machine, target: Target, *, unthrottle: bool = False
) -> list[CheckResult]:
    """Apply the fixable items, then check again; each item carries its writes' outcomes."""
    before = run_checks(machine, target)
    apply(before, unthrottle=unthrottle)
    after = run_checks(machine, target)
    outcomes = {r.name: r.applied for r in before}
    for res in after:
        res.applied = outcomes.get(res.name, [])
    return after


def check_machine(
    target: Target, *, apply: bool = False, unthrottle: bool = False, machine: Machine | None = None
) -> list[CheckResult]:
    """Check this machine (or ``machine``) for ``target``; with ``apply``, fix and check again."""
    machine = machine or Machine(SysFiles("/"))
    if apply:
        return apply_and_recheck(machine, target, unthrottle=unthrottle)
    return run_checks(machine, target)


# -- output ------------------------------------------------------------------------------------

_MARK = {OK: "ok", WARN: "warn", FAIL: "FAIL", NA: "n/a"}


def format_change(name: str, ch: dict) -> str:
    line = f"{name}: {ch['what']}: {ch['old']} -> {ch['new']}"
    return line if ch["ok"] else f"{line} FAILED: {ch['error']}"


def format_table(results: list[CheckResult]) -> str:
    """One line per item: status, name, current, recommended, explanation (+ how to fix)."""
    cur = min(max((len(r.current) for r in results), default=0), 40)
    rec = min(max((len(r.recommended) for r in results), default=0), 32)
    lines = [f"{'STATUS':<5} {'ITEM':<13} {'CURRENT':<{cur}}  {'RECOMMENDED':<{rec}}  WHY"]
    for r in results:
        fix = ""
        if r.fixable:
            fix = " [--apply --unthrottle]" if r.opt_in else " [--apply]"
        lines.append(
            f"{_MARK[r.status]:<5} {r.name:<13} {r.current:<{cur}}  "
            f"{r.recommended:<{rec}}  {r.explanation}{fix}"
        )
    return "\n".join(lines) + "\n"


def failed(results: list[CheckResult]) -> bool:
    """Whether an item failed or one of its writes did."""
    return any(r.status == FAIL or any(not c["ok"] for c in r.applied) for r in results)
