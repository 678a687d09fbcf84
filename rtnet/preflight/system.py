"""The checks of the kernel, the scheduler and the real-time CPU."""

from __future__ import annotations

import re

from rtnet.messages import one_line, shown
from rtnet.sysfiles import Unreadable, format_cpu_list

from .facts import (
    CAP_IPC_LOCK,
    CAP_SYS_NICE,
    DEEP_IDLE_US,
    FAIL,
    NA,
    OK,
    PM_QOS_NO_REQUEST,
    PREEMPT_MODELS,
    UMEM_BYTES,
    WARN,
    CheckResult,
    _cpu_word,
    _Facts,
    _result,
    _write,
)

# -- kernel ------------------------------------------------------------------------------------


def check_preempt_rt(fx: _Facts) -> CheckResult:
    name, rec = "preempt_rt", "PREEMPT_RT kernel"
    why_not = (
        "a stock kernel: non-preemptible sections and softirqs delay a SCHED_FIFO wake-up "
        "by up to milliseconds under load (Debian: linux-image-rt-amd64)"
    )
    if fx.f.exists("/sys/kernel/realtime"):
        if fx.f.read("/sys/kernel/realtime") == "1":
            return _result(
                name,
                OK,
                "PREEMPT_RT (/sys/kernel/realtime)",
                rec,
                "interrupts and softirqs run in threads a SCHED_FIFO thread preempts",
            )
    if "PREEMPT_RT" in fx.version:
        return _result(
            name,
            OK,
            "PREEMPT_RT (uname -v)",
            rec,
            "interrupts and softirqs run in threads a SCHED_FIFO thread preempts",
        )
    if fx.kopt("PREEMPT_RT") == "y":
        return _result(
            name,
            OK,
            f"PREEMPT_RT ({fx.kconfig[1]})",
            rec,
            "interrupts and softirqs run in threads a SCHED_FIFO thread preempts",
        )
    return _result(name, WARN, f"not PREEMPT_RT ({shown(fx.version)})", rec, why_not)


def _preempt_model(fx: _Facts) -> tuple[str | None, str, list[str]]:
    """(model, where from, the models the running kernel can switch to)."""
    debugfs = "/sys/kernel/debug/sched/preempt"
    if fx.f.exists(debugfs):
        words = fx.f.read(debugfs).split()
        current = [w[1:-1] for w in words if w.startswith("(") and w.endswith(")")]
        offered = [w.strip("()") for w in words]
        if len(current) != 1 or not set(offered) <= set(PREEMPT_MODELS):
            raise Unreadable(
                f"{debugfs}: {shown(' '.join(words))} is not a list of "
                f"preemption models with the current one in parentheses"
            )
        return current[0], debugfs, offered
    dynamic = fx.kopt("PREEMPT_DYNAMIC") == "y" or "PREEMPT_DYNAMIC" in fx.version
    if dynamic and fx.params.get("preempt") in PREEMPT_MODELS:
        return fx.params["preempt"], "preempt= on the kernel command line", []
    if fx.kconfig:
        for opt, model in (
            ("PREEMPT_RT", "full"),
            ("PREEMPT", "full"),
            ("PREEMPT_LAZY", "lazy"),
            ("PREEMPT_VOLUNTARY", "voluntary"),
            ("PREEMPT_NONE", "none"),
        ):
            if fx.kopt(opt) == "y":
                return model, f"CONFIG_{opt}, {fx.kconfig[1]}", []
    if re.search(r"\bPREEMPT\b", fx.version):
        return "full", "uname -v", []
    return None, "no kernel configuration, no debugfs", []


def check_preemption(fx: _Facts) -> CheckResult:
    name = "preemption"
    model, source, offered = _preempt_model(fx)
    if model is None:
        return _result(
            name,
            WARN,
            f"unknown ({source})",
            "full",
            "cannot tell the preemption model: mount debugfs or install the kernel's "
            "config in /boot",
        )
    current = f"{model} ({source})"
    if model in ("full", "lazy"):
        return _result(
            name, OK, current, "full", "a waking SCHED_FIFO thread preempts kernel code at once"
        )
    changes = []
    if "full" in offered:
        changes = [_write(fx.m, "/sys/kernel/debug/sched/preempt", model, "full")]
    how = (
        "--apply switches it until reboot"
        if changes
        else "preempt=full on the kernel command line (PREEMPT_DYNAMIC), or debugfs mounted "
        "for --apply"
    )
    return _result(
        name,
        WARN,
        current,
        "full",
        f"the kernel runs on to its next preemption point before a woken SCHED_FIFO "
        f"thread gets the CPU; {how}",
        changes,
    )


# -- scheduler ---------------------------------------------------------------------------------


def _cgroup_rt_runtime(fx: _Facts) -> tuple[str, int] | None:
    """(file, cpu.rt_runtime_us) of this process's cgroup-v1 cpu group, if it has one."""
    for line in fx.f.read("/proc/self/cgroup").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3 or "cpu" not in parts[1].split(","):
            continue
        rel = parts[2].strip("/")
        if not rel or any(p in ("", ".", "..") for p in rel.split("/")):
            return None  # the root group (RT time of the whole machine), or nonsense
        for mount in ("/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"):
            path = f"{mount}/{rel}/cpu.rt_runtime_us"
            if fx.f.exists(path):
                return path, fx.f.read_int(path, -1, 2**62)
    return None


def check_sched_fifo(fx: _Facts) -> CheckResult:
    # Deduced from what the kernel checks (capability, RLIMIT_RTPRIO, the cgroup's RT time),
    # not tried: a probe would put a real-time task on a machine that may be measuring.
    name, prio = "sched_fifo", fx.t.priority
    rec = f"permitted at priority {prio}"
    cap = fx.has_cap(CAP_SYS_NICE)
    rtprio = fx.limit("Max realtime priority")
    by_limit = rtprio is None or rtprio >= prio
    if not cap and not by_limit:
        return _result(
            name,
            FAIL,
            f"refused (no CAP_SYS_NICE, RLIMIT_RTPRIO {rtprio})",
            rec,
            f"rtnetd stops at start unless rt.allow_fallback; run it as root or raise "
            f"rtprio to {prio} (limits.conf, LimitRTPRIO=)",
        )
    cg = _cgroup_rt_runtime(fx)
    if cg is not None and cg[1] == 0:
        return _result(
            name,
            FAIL,
            f"refused ({cg[0]} is 0)",
            rec,
            "the cgroup has no real-time time (CONFIG_RT_GROUP_SCHED): give it "
            "cpu.rt_runtime_us or run rtnetd in the root cpu group",
        )
    how = "CAP_SYS_NICE" if cap else f"RLIMIT_RTPRIO {'unlimited' if rtprio is None else rtprio}"
    return _result(
        name,
        OK,
        f"permitted ({how}, for this user)",
        rec,
        "the RT thread can run SCHED_FIFO, ahead of every ordinary task",
    )


def check_rt_throttling(fx: _Facts) -> CheckResult:
    name, path = "rt_throttling", "/proc/sys/kernel/sched_rt_runtime_us"
    if not fx.f.exists(path):
        return _result(
            name, NA, "no sched_rt_runtime_us", "-1", "this kernel has no RT throttling knob"
        )
    runtime = fx.f.read_int(path, -1, 2**31 - 1)
    if runtime == -1:
        return _result(
            name,
            OK,
            "-1 (off)",
            "-1",
            "RT tasks are never throttled: a runaway RT thread can hold its CPU",
        )
    period = fx.f.read_int("/proc/sys/kernel/sched_rt_period_us", 1, 2**31 - 1)
    return _result(
        name,
        WARN,
        f"{runtime} of {period} us",
        "-1 (dedicated RT CPU)",
        f"RT tasks are stopped for the rest of each {period / 1000:g} ms once they used "
        f"{runtime / 1000:g} ms; -1 lifts that, but then a spinning RT thread owns its "
        f"CPU until it stops",
        [_write(fx.m, path, str(runtime), "-1")],
        opt_in=True,
    )


# -- the RT CPU --------------------------------------------------------------------------------


def check_rt_cpu(fx: _Facts) -> CheckResult:
    name = "rt_cpu"
    cpu, last = fx.rt_cpu, max(fx.online)
    if fx.t.cpu is not None:
        if cpu not in fx.online:
            return _result(
                name,
                FAIL,
                f"{cpu} (rt.cpu, offline)",
                f"one of {_cpu_word(fx.online)}",
                f"{fx.t.config}: rt.cpu {cpu} is not online: rtnetd cannot pin to it",
            )
        return _result(
            name,
            OK,
            f"{cpu} (rt.cpu of {fx.t.config})",
            "a CPU of its own",
            "the checks below are for this CPU",
        )
    if fx.t.config is not None:
        return _result(
            name,
            WARN,
            "not pinned (no rt.cpu)",
            f"rt.cpu = {last}",
            f"{fx.t.config} pins no CPU, so the RT thread migrates; the checks below "
            f"are for CPU {last}, the last one",
        )
    return _result(
        name,
        OK,
        f"{cpu} (the last CPU; no configuration given)",
        "a CPU of its own",
        "the checks below are for this CPU; -c names a configuration with rt.cpu",
    )


def check_isolcpus(fx: _Facts) -> CheckResult:
    name, cpu = "isolcpus", fx.rt_cpu
    if len(fx.online) == 1:
        return _result(name, NA, "one CPU", "-", "one CPU: there is nothing to isolate it from")
    current = f"isolated {_cpu_word(fx.isolated)}"
    if cpu in fx.isolated:
        return _result(
            name, OK, current, f"isolcpus={cpu}", f"the scheduler puts no other task on CPU {cpu}"
        )
    return _result(
        name,
        WARN,
        current,
        f"isolcpus={cpu}",
        f"other tasks are scheduled on CPU {cpu} and delay the RT thread's cache and "
        f"wake-ups; boot with isolcpus={cpu} (not settable at run time)",
    )


def check_nohz_full(fx: _Facts) -> CheckResult:
    name, cpu, path = "nohz_full", fx.rt_cpu, "/sys/devices/system/cpu/nohz_full"
    hz = fx.kopt("HZ")
    cpus = fx.param_cpus("nohz_full") or set()
    if fx.f.exists(path):
        # kernels before 5.x print "(null)" for an empty mask
        if fx.f.read(path) != "(null)":
            cpus |= fx.f.read_cpus(path)
    elif fx.kopt("NO_HZ_FULL") == "n":
        return _result(
            name,
            NA,
            "kernel without NO_HZ_FULL",
            f"nohz_full={cpu}",
            f"this kernel ticks on every busy CPU ({hz or '?'} Hz); only a rebuild changes that",
        )
    if cpu in cpus:
        return _result(
            name,
            OK,
            f"nohz_full {_cpu_word(cpus)}",
            f"nohz_full={cpu}",
            f"no scheduler tick on CPU {cpu} while only the RT thread runs there",
        )
    return _result(
        name,
        WARN,
        f"nohz_full {_cpu_word(cpus)}",
        f"nohz_full={cpu}",
        f"the scheduler tick interrupts CPU {cpu} {hz + ' times a second' if hz else ''}"
        f" while it is busy; boot with nohz_full={cpu}",
    )


def check_rcu_nocbs(fx: _Facts) -> CheckResult:
    name, cpu = "rcu_nocbs", fx.rt_cpu
    if fx.kopt("RCU_NOCB_CPU") == "n":
        return _result(
            name,
            NA,
            "kernel without RCU_NOCB_CPU",
            f"rcu_nocbs={cpu}",
            "this kernel runs RCU callbacks on every CPU; only a rebuild changes that",
        )
    cpus = (fx.param_cpus("rcu_nocbs") or set()) | (fx.param_cpus("nohz_full") or set())
    if fx.kopt("RCU_NOCB_CPU_DEFAULT_ALL") == "y":
        cpus |= fx.online
    if cpu in cpus:
        return _result(
            name,
            OK,
            f"offloaded {_cpu_word(cpus)}",
            f"rcu_nocbs={cpu}",
            f"RCU callbacks of CPU {cpu} run in kthreads elsewhere",
        )
    return _result(
        name,
        WARN,
        f"offloaded {_cpu_word(cpus)}",
        f"rcu_nocbs={cpu}",
        f"RCU callbacks run on CPU {cpu} in softirq, ahead of the RT thread; boot "
        f"with rcu_nocbs={cpu} (nohz_full= implies it)",
    )


def _nic_irqs(fx: _Facts) -> set[int]:
    """The IRQs of the station's device: its MSI vectors and /proc/interrupts lines named for it."""
    irqs = set()
    msi = f"/sys/class/net/{fx.t.dev}/device/msi_irqs"
    if fx.f.exists(msi):
        irqs |= {int(n) for n in fx.f.listdir(msi) if re.fullmatch(r"[0-9]{1,9}", n)}
    if fx.f.exists("/proc/interrupts"):
        named = re.compile(rf"(?:^|[\s,]){re.escape(fx.t.dev)}(?:[-:@,]\S*)?\s*$")
        for line in fx.f.read("/proc/interrupts", 1 << 20).splitlines():
            m = re.match(r"\s*([0-9]{1,9}):(.*)$", line)
            if m and named.search(m.group(2)):
                irqs.add(int(m.group(1)))
    return irqs


def _irqbalance_running(fx: _Facts) -> bool:
    for pid in fx.f.listdir("/proc"):
        if pid.isdigit():
            try:
                if fx.f.read(f"/proc/{pid}/comm") == "irqbalance":
                    return True
            except Unreadable:
                continue  # the process ended while we looked
    return False


def check_irq_affinity(fx: _Facts) -> CheckResult:
    name, cpu = "irq_affinity", fx.rt_cpu
    rec = f"no IRQ on CPU {cpu} but the NIC's own"
    if not fx.f.exists("/proc/irq"):
        return _result(name, NA, "no /proc/irq", rec, "this kernel shows no IRQ affinity")
    if len(fx.online) == 1:
        return _result(name, NA, "one CPU", rec, "one CPU: every IRQ lands on it")
    nic = _nic_irqs(fx)
    on_cpu, own, bad = [], [], []
    for entry in fx.f.listdir("/proc/irq"):
        if not re.fullmatch(r"[0-9]{1,9}", entry):
            continue
        path = f"/proc/irq/{entry}/smp_affinity_list"
        try:
            cpus = fx.f.read_cpus(path)
        except Unreadable as exc:
            bad.append(str(exc))
            continue
        if cpu in cpus:
            (own if int(entry) in nic else on_cpu).append((int(entry), path, cpus))
    changes = []
    for _irq, path, cpus in sorted(on_cpu):
        new = (cpus - {cpu}) or fx.housekeeping
        changes.append(_write(fx.m, path, format_cpu_list(cpus), format_cpu_list(new)))
    current = f"{len(on_cpu)} IRQs may land on CPU {cpu}"
    if own:
        current += f" (+{len(own)} of {fx.t.dev}, left there)"
    notes = []
    if bad:
        notes.append(f"{len(bad)} unreadable ({bad[0]})")
    if on_cpu and _irqbalance_running(fx):
        notes.append(
            f"irqbalance is running and moves them back: ban CPU {cpu} "
            f"(IRQBALANCE_BANNED_CPULIST={cpu})"
        )
    if not on_cpu:
        return _result(
            name,
            OK if not bad else WARN,
            current,
            rec,
            "; ".join(notes) or f"no other device interrupts CPU {cpu}",
        )
    ids = ",".join(str(i) for i, _p, _c in sorted(on_cpu)[:8]) + ("..." if len(on_cpu) > 8 else "")
    notes.insert(
        0,
        f"IRQs {ids} may interrupt the RT thread; --apply moves them to "
        f"{_cpu_word(fx.housekeeping)} where they allow it (undo: the old lists)",
    )
    return _result(name, WARN, current, rec, "; ".join(notes), changes)


def check_smt(fx: _Facts) -> CheckResult:
    name, cpu = "smt", fx.rt_cpu
    path = f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"
    if not fx.f.exists(path):
        return _result(name, NA, "no topology", "no sibling", f"{path} is missing: no SMT shown")
    siblings = fx.f.read_cpus(path) - {cpu}
    if not siblings:
        return _result(name, OK, "no sibling", "no sibling", f"CPU {cpu} has its core to itself")
    return _result(
        name,
        WARN,
        f"sibling {_cpu_word(siblings)}",
        "no sibling (or an idle one)",
        f"CPU {_cpu_word(siblings)} shares CPU {cpu}'s core and slows it when busy: "
        f"isolate it too, or turn SMT off (/sys/devices/system/cpu/smt/control)",
    )


def check_governor(fx: _Facts) -> CheckResult:
    name, cpu = "governor", fx.rt_cpu
    base = f"/sys/devices/system/cpu/cpu{cpu}/cpufreq"
    if not fx.f.exists(f"{base}/scaling_governor"):
        return _result(
            name,
            NA,
            "no cpufreq",
            "performance",
            "no frequency scaling driver (in a VM the host sets the frequency)",
        )
    gov = fx.f.read(f"{base}/scaling_governor")
    if gov == "performance":
        return _result(name, OK, gov, "performance", "the CPU stays at its highest frequency")
    offered = []
    if fx.f.exists(f"{base}/scaling_available_governors"):
        offered = fx.f.read(f"{base}/scaling_available_governors").split()
    changes = (
        [_write(fx.m, f"{base}/scaling_governor", gov, "performance")]
        if "performance" in offered
        else []
    )
    return _result(
        name,
        WARN,
        shown(gov),
        "performance",
        f"{shown(gov)} lowers the clock when idle and the RT thread's first "
        f"microseconds after a wake-up run slow"
        + ("" if changes else "; this driver offers no performance governor"),
        changes,
    )


def check_idle_states(fx: _Facts) -> CheckResult:
    name, cpu = "idle_states", fx.rt_cpu
    base = f"/sys/devices/system/cpu/cpu{cpu}/cpuidle"
    rec = f"none deeper than {DEEP_IDLE_US} us while RT runs"
    if not fx.f.exists(base):
        return _result(
            name,
            NA,
            "no cpuidle",
            rec,
            "no cpuidle driver: the CPU halts when idle (in a VM the host decides "
            "how long waking takes; see pm_qos)",
        )
    states, deep = [], []
    for entry in fx.f.listdir(base):
        if not re.fullmatch(r"state[0-9]{1,3}", entry):
            continue
        sname = one_line(fx.f.read(f"{base}/{entry}/name"))[:16]
        latency = fx.f.read_int(f"{base}/{entry}/latency", 0, 10**9)
        off = (
            fx.f.read_int(f"{base}/{entry}/disable", 0, 1) == 1
            if fx.f.exists(f"{base}/{entry}/disable")
            else False
        )
        states.append(f"{sname} {latency}us{' off' if off else ''}")
        if latency > DEEP_IDLE_US and not off:
            deep.append(f"{sname} ({latency} us)")
    current = ", ".join(states) or "none"
    if not deep:
        return _result(name, OK, current, rec, "no enabled idle state is slow to leave")
    qos = fx.f.exists("/dev/cpu_dma_latency")
    return _result(
        name,
        OK if qos else WARN,
        current,
        rec,
        f"waking from {deep[-1]} costs a slot's margin; "
        + (
            "rtnetd's PM QoS request (pm_qos) keeps the CPU out of them while it runs"
            if qos
            else "and without /dev/cpu_dma_latency nothing keeps the CPU out"
        ),
    )


def check_pm_qos(fx: _Facts) -> CheckResult:
    name, path = "pm_qos", "/dev/cpu_dma_latency"
    rec = "0 us while rtnetd runs"
    if not fx.f.exists(path):
        return _result(
            name,
            WARN,
            "no /dev/cpu_dma_latency",
            rec,
            "the kernel offers no PM QoS request: deep idle states cannot be held off",
        )
    raw = fx.f.read_bytes(path, 4)
    if len(raw) != 4:
        raise Unreadable(f"{path}: {len(raw)} bytes, not a 32-bit latency")
    value = int.from_bytes(raw, "little", signed=True)
    held = value < PM_QOS_NO_REQUEST
    current = f"held at {value} us" if held else "no request held"
    return _result(
        name,
        OK,
        current,
        rec,
        "rtnetd's RT thread holds 0 us while it runs (csrc/core/rtn_rt.c, as "
        "rtnet/pmqos.py for the tools), so a wake-up never leaves a deep idle "
        "state; " + ("a request is held now" if held else "none is held now: no rtnetd is running"),
    )


def check_timer_slack(fx: _Facts) -> CheckResult:
    name = "timer_slack"
    slack = fx.f.read_int("/proc/self/timerslack_ns", 0, 2**63 - 1)
    return _result(
        name,
        OK,
        f"{slack} ns here, 1 ns in the RT thread",
        "1 ns in the RT thread",
        f"ordinary threads may wake up to {slack / 1000:g} us late to batch timers; "
        "rtnetd's RT thread sets 1 ns (PR_SET_TIMERSLACK, csrc/core/rtn_rt.c), which also "
        "covers a SCHED_OTHER fallback",
    )


def check_memlock(fx: _Facts) -> CheckResult:
    name, need = "memlock", UMEM_BYTES
    rec = "unlimited (or CAP_IPC_LOCK)"
    limit = fx.limit("Max locked memory")
    shown_limit = "unlimited" if limit is None else f"{limit // 1024} KiB"
    if fx.has_cap(CAP_IPC_LOCK):
        return _result(
            name,
            OK,
            f"{shown_limit}, CAP_IPC_LOCK",
            rec,
            "mlockall() may lock all of rtnetd: no page fault on the RT path",
        )
    if limit is None:
        return _result(
            name,
            OK,
            shown_limit,
            rec,
            "mlockall() may lock all of rtnetd: no page fault on the RT path",
        )
    if limit < need:
        return _result(
            name,
            FAIL,
            shown_limit,
            rec,
            f"below the {need >> 20} MiB UMEM alone: mlockall() fails and rtnetd "
            f"stops at start; raise memlock (limits.conf, LimitMEMLOCK=infinity)",
        )
    return _result(
        name,
        WARN,
        shown_limit,
        rec,
        f"mlockall() locks all of rtnetd (Python, libraries, the {need >> 20} MiB "
        f"UMEM), likely more than this; raise memlock to unlimited",
    )
