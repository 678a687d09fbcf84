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
import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from . import xdpfeatures
from ._lowlevel import lib
from .messages import bounded, one_line, shown
from .station import UMEM_FRAMES
from .sysfiles import SysFiles, Unreadable, format_cpu_list, parse_cpu_list

OK, WARN, FAIL, NA = "ok", "warn", "fail", "not-applicable"
STATUSES = (OK, WARN, FAIL, NA)
JSON_KEYS = ("name", "status", "current", "recommended", "explanation", "fixable", "opt_in",
             "changes")
UMEM_BYTES = UMEM_FRAMES * lib.RTN_XSK_FRAME_SIZE
CAP_IPC_LOCK = 14
CAP_SYS_NICE = 23
PM_QOS_NO_REQUEST = 2_000_000_000   # /dev/cpu_dma_latency's value while nobody holds one
DEEP_IDLE_US = 10                   # exit latency above which an idle state costs a slot
COMMAND_TIMEOUT_S = 10.0
PREEMPT_MODELS = ("none", "voluntary", "full", "lazy")


# -- results -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Change:
    """One write --apply makes: writing ``old`` back undoes it."""

    what: str                                   # the file (or command) written
    old: str
    new: str
    do: Callable[[], None] = field(compare=False, repr=False)


@dataclass
class CheckResult:
    name: str
    status: str
    current: str
    recommended: str
    explanation: str
    changes: tuple = ()            # Change, ...: what --apply would write
    opt_in: bool = False           # applied only when asked for by name (--unthrottle)
    applied: list = field(default_factory=list)   # outcomes of the writes, once applied

    @property
    def fixable(self) -> bool:
        return bool(self.changes)

    def to_json(self) -> dict:
        return {"name": self.name, "status": self.status, "current": self.current,
                "recommended": self.recommended, "explanation": self.explanation,
                "fixable": self.fixable, "opt_in": self.opt_in, "changes": list(self.applied)}


# -- where the checks look ---------------------------------------------------------------------

def run_command(argv: list[str]) -> tuple[int, str] | None:
    """(exit status, output) of a command, or None if it is not installed."""
    try:
        res = subprocess.run(argv, capture_output=True, timeout=COMMAND_TIMEOUT_S,
                             env={**os.environ, "LC_ALL": "C"}, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        return None
    except subprocess.TimeoutExpired:
        return 124, f"{argv[0]} did not answer within {COMMAND_TIMEOUT_S:g} s"
    out = (res.stdout + res.stderr)[:64 * 1024]
    return res.returncode, out.decode("utf-8", errors="replace")


@dataclass
class Machine:
    """The files, commands and kernel queries the checks read (fakes in tests)."""

    files: SysFiles
    run: Callable[[list[str]], tuple[int, str] | None] = run_command
    xdp_features: Callable[[int], int] = xdpfeatures.xdp_features


@dataclass(frozen=True)
class Target:
    """What the station will use: its device and its RT thread's CPU and priority."""

    dev: str = "rteth0"
    cpu: int | None = None          # rt.cpu of the configuration
    priority: int = 90
    config: str | None = None       # the configuration file, None if none was given


def target_for(dev: str | None, config: str | None) -> Target:
    """The target of a station: its configuration's device and RT settings, if one is given.

    ``dev`` (when given) wins over the configuration's device; ConfigError for a bad file.
    """
    if config is None:
        return Target(dev=dev or "rteth0")
    from .config import load
    cfg = load(config)
    return Target(dev=dev or cfg.device, cpu=cfg.rt.cpu, priority=cfg.rt.priority,
                  config=config)


class _Facts:
    """What several checks need, each read once; a read that fails raises Unreadable."""

    def __init__(self, machine: Machine, target: Target):
        self.m = machine
        self.f = machine.files
        self.t = target
        self._ethtool: dict[str, tuple[int, str] | None] = {}

    @cached_property
    def online(self) -> set[int]:
        cpus = self.f.read_cpus("/sys/devices/system/cpu/online")
        if not cpus:
            raise Unreadable("/sys/devices/system/cpu/online: no CPU online")
        return cpus

    @cached_property
    def rt_cpu(self) -> int:
        """The CPU the checks are about: rt.cpu, else the last CPU."""
        if self.t.cpu is not None:
            return self.t.cpu
        return max(self.online)

    @cached_property
    def params(self) -> dict[str, str]:
        return kernel_params(self.f.read("/proc/cmdline"))

    def param_cpus(self, name: str) -> set[int] | None:
        """CPUs of a CPU-list boot parameter (isolcpus=domain,2-3 too), None if not given."""
        if name not in self.params:
            return None
        value = self.params[name]
        if value == "all":
            return set(self.online)
        words = value.split(",")
        while words and re.fullmatch(r"[a-z_]+", words[0]):   # flags: nohz, domain, managed_irq
            words.pop(0)
        try:
            return parse_cpu_list(",".join(words))
        except ValueError as exc:
            raise Unreadable(f"/proc/cmdline: {name}= {exc}") from None

    @cached_property
    def kconfig(self) -> tuple[dict[str, str], str] | None:
        """The running kernel's build configuration and where it came from, if found."""
        try:
            release = self.f.read("/proc/sys/kernel/osrelease")
        except Unreadable:
            release = ""
        sources = []
        if re.fullmatch(r"[A-Za-z0-9._+~-]{1,64}", release):
            sources.append((f"/boot/config-{release}", self.f.read))
        sources.append(("/proc/config.gz", self.f.read_gzip))
        for path, read in sources:
            if self.f.exists(path):
                try:
                    return parse_kconfig(read(path, 4 * 1024 * 1024)), path
                except Unreadable:
                    continue
        return None

    def kopt(self, name: str) -> str | None:
        """CONFIG_<name> of the running kernel ("y", "n", a value), None if unknown."""
        return self.kconfig[0].get(name) if self.kconfig else None

    @cached_property
    def version(self) -> str:
        """What ``uname -v`` prints (#1 SMP PREEMPT_DYNAMIC ...)."""
        return self.f.read("/proc/sys/kernel/version")

    @cached_property
    def caps(self) -> int:
        status = self.f.read("/proc/self/status")
        m = re.search(r"^CapEff:\s*([0-9a-fA-F]{1,16})\s*$", status, re.M)
        if not m:
            raise Unreadable("/proc/self/status: no CapEff line")
        return int(m.group(1), 16)

    def has_cap(self, cap: int) -> bool:
        return bool(self.caps >> cap & 1)

    def limit(self, label: str) -> int | None:
        """Soft limit from /proc/self/limits, None for unlimited."""
        text = self.f.read("/proc/self/limits")
        m = re.search(rf"^{re.escape(label)}\s+(unlimited|[0-9]{{1,20}})\s", text, re.M)
        if not m:
            raise Unreadable(f"/proc/self/limits: no {label!r} line")
        return None if m.group(1) == "unlimited" else int(m.group(1))

    @cached_property
    def isolated(self) -> set[int]:
        """CPUs isolated from the scheduler: isolcpus= and /sys/devices/system/cpu/isolated."""
        cpus = self.param_cpus("isolcpus") or set()
        if self.f.exists("/sys/devices/system/cpu/isolated"):
            cpus |= self.f.read_cpus("/sys/devices/system/cpu/isolated")
        return cpus

    @cached_property
    def housekeeping(self) -> set[int]:
        """CPUs that may take what the RT CPU should not: online, not RT, not isolated."""
        others = self.online - {self.rt_cpu}
        return (others - self.isolated) or others

    @cached_property
    def nic(self) -> dict:
        """The device: exists, virtual, driver, kind."""
        base = f"/sys/class/net/{self.t.dev}"
        if not self.f.exists(base):
            return {"exists": False}
        virtual = not self.f.exists(f"{base}/device")
        driver = None
        if not virtual and self.f.exists(f"{base}/device/driver"):
            driver = self.f.link_name(f"{base}/device/driver")
        kind = None
        if virtual:
            if self.f.exists(f"{base}/bridge"):
                kind = "bridge"
            elif self.f.exists(f"{base}/tun_flags"):
                kind = "tun/tap"
        info = self.ethtool("-i")
        if info and info[0] == 0:
            m = re.search(r"^driver:\s*(\S+)", info[1], re.M)
            if m:
                driver = driver or m.group(1)
                kind = kind or m.group(1)
        return {"exists": True, "virtual": virtual, "driver": driver,
                "kind": kind or ("virtual" if virtual else driver or "unknown")}

    def ethtool(self, flag: str) -> tuple[int, str] | None:
        """(status, output) of ``ethtool <flag> <dev>``, None if ethtool is missing."""
        if flag not in self._ethtool:
            self._ethtool[flag] = self.m.run(["ethtool", flag, self.t.dev])
        return self._ethtool[flag]


def parse_kconfig(text: str) -> dict[str, str]:
    """CONFIG_X=value lines, and "# CONFIG_X is not set" as "n" (names without CONFIG_)."""
    out = {}
    for line in text.splitlines():
        m = re.fullmatch(r"CONFIG_([A-Za-z0-9_]+)=(.*)", line) or \
            re.fullmatch(r"# CONFIG_([A-Za-z0-9_]+) is not set()", line)
        if m:
            out[m.group(1)] = m.group(2) or "n"
    return out


def kernel_params(cmdline: str) -> dict[str, str]:
    """Boot parameters of /proc/cmdline (name -> value; the last one wins).

    Words after a lone ``--`` are the init process's arguments, not the kernel's.
    """
    params = {}
    for m in re.finditer(r'(?:[^\s"]+|"[^"]*")+', cmdline):
        word = m.group(0)
        if word == "--":
            break
        name, _, value = word.partition("=")
        params[name.replace('"', "")] = value.replace('"', "")
    return params


# -- small pieces of output --------------------------------------------------------------------

def _result(name, status, current, recommended, explanation, changes=(), opt_in=False):
    return CheckResult(name, status, one_line(str(current)), one_line(str(recommended)),
                       bounded(one_line(explanation)), tuple(changes), opt_in)


def _write(machine: Machine, path: str, old: str, new: str) -> Change:
    return Change(path, old, new, lambda: machine.files.write(path, new))


def _cpu_word(cpus: set[int]) -> str:
    return format_cpu_list(cpus) if cpus else "none"


# -- kernel ------------------------------------------------------------------------------------

def check_preempt_rt(fx: _Facts) -> CheckResult:
    name, rec = "preempt_rt", "PREEMPT_RT kernel"
    why_not = ("a stock kernel: non-preemptible sections and softirqs delay a SCHED_FIFO wake-up "
               "by up to milliseconds under load (Debian: linux-image-rt-amd64)")
    if fx.f.exists("/sys/kernel/realtime"):
        if fx.f.read("/sys/kernel/realtime") == "1":
            return _result(name, OK, "PREEMPT_RT (/sys/kernel/realtime)", rec,
                           "interrupts and softirqs run in threads a SCHED_FIFO thread preempts")
    if "PREEMPT_RT" in fx.version:
        return _result(name, OK, "PREEMPT_RT (uname -v)", rec,
                       "interrupts and softirqs run in threads a SCHED_FIFO thread preempts")
    if fx.kopt("PREEMPT_RT") == "y":
        return _result(name, OK, f"PREEMPT_RT ({fx.kconfig[1]})", rec,
                       "interrupts and softirqs run in threads a SCHED_FIFO thread preempts")
    return _result(name, WARN, f"not PREEMPT_RT ({shown(fx.version)})", rec, why_not)


def _preempt_model(fx: _Facts) -> tuple[str | None, str, list[str]]:
    """(model, where from, the models the running kernel can switch to)."""
    debugfs = "/sys/kernel/debug/sched/preempt"
    if fx.f.exists(debugfs):
        words = fx.f.read(debugfs).split()
        current = [w[1:-1] for w in words if w.startswith("(") and w.endswith(")")]
        offered = [w.strip("()") for w in words]
        if len(current) != 1 or not set(offered) <= set(PREEMPT_MODELS):
            raise Unreadable(f"{debugfs}: {shown(' '.join(words))} is not a list of "
                             f"preemption models with the current one in parentheses")
        return current[0], debugfs, offered
    dynamic = fx.kopt("PREEMPT_DYNAMIC") == "y" or "PREEMPT_DYNAMIC" in fx.version
    if dynamic and fx.params.get("preempt") in PREEMPT_MODELS:
        return fx.params["preempt"], "preempt= on the kernel command line", []
    if fx.kconfig:
        for opt, model in (("PREEMPT_RT", "full"), ("PREEMPT", "full"), ("PREEMPT_LAZY", "lazy"),
                           ("PREEMPT_VOLUNTARY", "voluntary"), ("PREEMPT_NONE", "none")):
            if fx.kopt(opt) == "y":
                return model, f"CONFIG_{opt}, {fx.kconfig[1]}", []
    if re.search(r"\bPREEMPT\b", fx.version):
        return "full", "uname -v", []
    return None, "no kernel configuration, no debugfs", []


def check_preemption(fx: _Facts) -> CheckResult:
    name = "preemption"
    model, source, offered = _preempt_model(fx)
    if model is None:
        return _result(name, WARN, f"unknown ({source})", "full",
                       "cannot tell the preemption model: mount debugfs or install the kernel's "
                       "config in /boot")
    current = f"{model} ({source})"
    if model in ("full", "lazy"):
        return _result(name, OK, current, "full",
                       "a waking SCHED_FIFO thread preempts kernel code at once")
    changes = []
    if "full" in offered:
        changes = [_write(fx.m, "/sys/kernel/debug/sched/preempt", model, "full")]
    how = ("--apply switches it until reboot" if changes else
           "preempt=full on the kernel command line (PREEMPT_DYNAMIC), or debugfs mounted "
           "for --apply")
    return _result(name, WARN, current, "full",
                   f"the kernel runs on to its next preemption point before a woken SCHED_FIFO "
                   f"thread gets the CPU; {how}", changes)


# -- scheduler ---------------------------------------------------------------------------------

def _cgroup_rt_runtime(fx: _Facts) -> tuple[str, int] | None:
    """(file, cpu.rt_runtime_us) of this process's cgroup-v1 cpu group, if it has one."""
    for line in fx.f.read("/proc/self/cgroup").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3 or "cpu" not in parts[1].split(","):
            continue
        rel = parts[2].strip("/")
        if not rel or any(p in ("", ".", "..") for p in rel.split("/")):
            return None          # the root group (RT time of the whole machine), or nonsense
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
        return _result(name, FAIL, f"refused (no CAP_SYS_NICE, RLIMIT_RTPRIO {rtprio})", rec,
                       f"rtnetd stops at start unless rt.allow_fallback; run it as root or raise "
                       f"rtprio to {prio} (limits.conf, LimitRTPRIO=)")
    cg = _cgroup_rt_runtime(fx)
    if cg is not None and cg[1] == 0:
        return _result(name, FAIL, f"refused ({cg[0]} is 0)", rec,
                       "the cgroup has no real-time time (CONFIG_RT_GROUP_SCHED): give it "
                       "cpu.rt_runtime_us or run rtnetd in the root cpu group")
    how = "CAP_SYS_NICE" if cap else f"RLIMIT_RTPRIO {'unlimited' if rtprio is None else rtprio}"
    return _result(name, OK, f"permitted ({how}, for this user)", rec,
                   "the RT thread can run SCHED_FIFO, ahead of every ordinary task")


def check_rt_throttling(fx: _Facts) -> CheckResult:
    name, path = "rt_throttling", "/proc/sys/kernel/sched_rt_runtime_us"
    if not fx.f.exists(path):
        return _result(name, NA, "no sched_rt_runtime_us", "-1",
                       "this kernel has no RT throttling knob")
    runtime = fx.f.read_int(path, -1, 2**31 - 1)
    if runtime == -1:
        return _result(name, OK, "-1 (off)", "-1",
                       "RT tasks are never throttled: a runaway RT thread can hold its CPU")
    period = fx.f.read_int("/proc/sys/kernel/sched_rt_period_us", 1, 2**31 - 1)
    return _result(name, WARN, f"{runtime} of {period} us", "-1 (dedicated RT CPU)",
                   f"RT tasks are stopped for the rest of each {period / 1000:g} ms once they used "
                   f"{runtime / 1000:g} ms; -1 lifts that, but then a spinning RT thread owns its "
                   f"CPU until it stops",
                   [_write(fx.m, path, str(runtime), "-1")], opt_in=True)


# -- the RT CPU --------------------------------------------------------------------------------

def check_rt_cpu(fx: _Facts) -> CheckResult:
    name = "rt_cpu"
    cpu, last = fx.rt_cpu, max(fx.online)
    if fx.t.cpu is not None:
        if cpu not in fx.online:
            return _result(name, FAIL, f"{cpu} (rt.cpu, offline)", f"one of {_cpu_word(fx.online)}",
                           f"{fx.t.config}: rt.cpu {cpu} is not online: rtnetd cannot pin to it")
        return _result(name, OK, f"{cpu} (rt.cpu of {fx.t.config})", "a CPU of its own",
                       "the checks below are for this CPU")
    if fx.t.config is not None:
        return _result(name, WARN, "not pinned (no rt.cpu)", f"rt.cpu = {last}",
                       f"{fx.t.config} pins no CPU, so the RT thread migrates; the checks below "
                       f"are for CPU {last}, the last one")
    return _result(name, OK, f"{cpu} (the last CPU; no configuration given)", "a CPU of its own",
                   "the checks below are for this CPU; -c names a configuration with rt.cpu")


def check_isolcpus(fx: _Facts) -> CheckResult:
    name, cpu = "isolcpus", fx.rt_cpu
    if len(fx.online) == 1:
        return _result(name, NA, "one CPU", "-", "one CPU: there is nothing to isolate it from")
    current = f"isolated {_cpu_word(fx.isolated)}"
    if cpu in fx.isolated:
        return _result(name, OK, current, f"isolcpus={cpu}",
                       f"the scheduler puts no other task on CPU {cpu}")
    return _result(name, WARN, current, f"isolcpus={cpu}",
                   f"other tasks are scheduled on CPU {cpu} and delay the RT thread's cache and "
                   f"wake-ups; boot with isolcpus={cpu} (not settable at run time)")


def check_nohz_full(fx: _Facts) -> CheckResult:
    name, cpu, path = "nohz_full", fx.rt_cpu, "/sys/devices/system/cpu/nohz_full"
    hz = fx.kopt("HZ")
    cpus = fx.param_cpus("nohz_full") or set()
    if fx.f.exists(path):
        # kernels before 5.x print "(null)" for an empty mask
        if fx.f.read(path) != "(null)":
            cpus |= fx.f.read_cpus(path)
    elif fx.kopt("NO_HZ_FULL") == "n":
        return _result(name, NA, "kernel without NO_HZ_FULL", f"nohz_full={cpu}",
                       f"this kernel ticks on every busy CPU ({hz or '?'} Hz); only a rebuild "
                       f"changes that")
    if cpu in cpus:
        return _result(name, OK, f"nohz_full {_cpu_word(cpus)}", f"nohz_full={cpu}",
                       f"no scheduler tick on CPU {cpu} while only the RT thread runs there")
    return _result(name, WARN, f"nohz_full {_cpu_word(cpus)}", f"nohz_full={cpu}",
                   f"the scheduler tick interrupts CPU {cpu} {hz + ' times a second' if hz else ''}"
                   f" while it is busy; boot with nohz_full={cpu}")


def check_rcu_nocbs(fx: _Facts) -> CheckResult:
    name, cpu = "rcu_nocbs", fx.rt_cpu
    if fx.kopt("RCU_NOCB_CPU") == "n":
        return _result(name, NA, "kernel without RCU_NOCB_CPU", f"rcu_nocbs={cpu}",
                       "this kernel runs RCU callbacks on every CPU; only a rebuild changes that")
    cpus = (fx.param_cpus("rcu_nocbs") or set()) | (fx.param_cpus("nohz_full") or set())
    if fx.kopt("RCU_NOCB_CPU_DEFAULT_ALL") == "y":
        cpus |= fx.online
    if cpu in cpus:
        return _result(name, OK, f"offloaded {_cpu_word(cpus)}", f"rcu_nocbs={cpu}",
                       f"RCU callbacks of CPU {cpu} run in kthreads elsewhere")
    return _result(name, WARN, f"offloaded {_cpu_word(cpus)}", f"rcu_nocbs={cpu}",
                   f"RCU callbacks run on CPU {cpu} in softirq, ahead of the RT thread; boot "
                   f"with rcu_nocbs={cpu} (nohz_full= implies it)")


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
                continue          # the process ended while we looked
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
        notes.append(f"irqbalance is running and moves them back: ban CPU {cpu} "
                     f"(IRQBALANCE_BANNED_CPULIST={cpu})")
    if not on_cpu:
        return _result(name, OK if not bad else WARN, current, rec,
                       "; ".join(notes) or f"no other device interrupts CPU {cpu}")
    ids = ",".join(str(i) for i, _p, _c in sorted(on_cpu)[:8]) + ("..." if len(on_cpu) > 8 else "")
    notes.insert(0, f"IRQs {ids} may interrupt the RT thread; --apply moves them to "
                    f"{_cpu_word(fx.housekeeping)} where they allow it (undo: the old lists)")
    return _result(name, WARN, current, rec, "; ".join(notes), changes)


def check_smt(fx: _Facts) -> CheckResult:
    name, cpu = "smt", fx.rt_cpu
    path = f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"
    if not fx.f.exists(path):
        return _result(name, NA, "no topology", "no sibling", f"{path} is missing: no SMT shown")
    siblings = fx.f.read_cpus(path) - {cpu}
    if not siblings:
        return _result(name, OK, "no sibling", "no sibling",
                       f"CPU {cpu} has its core to itself")
    return _result(name, WARN, f"sibling {_cpu_word(siblings)}", "no sibling (or an idle one)",
                   f"CPU {_cpu_word(siblings)} shares CPU {cpu}'s core and slows it when busy: "
                   f"isolate it too, or turn SMT off (/sys/devices/system/cpu/smt/control)")


def check_governor(fx: _Facts) -> CheckResult:
    name, cpu = "governor", fx.rt_cpu
    base = f"/sys/devices/system/cpu/cpu{cpu}/cpufreq"
    if not fx.f.exists(f"{base}/scaling_governor"):
        return _result(name, NA, "no cpufreq", "performance",
                       "no frequency scaling driver (in a VM the host sets the frequency)")
    gov = fx.f.read(f"{base}/scaling_governor")
    if gov == "performance":
        return _result(name, OK, gov, "performance", "the CPU stays at its highest frequency")
    offered = []
    if fx.f.exists(f"{base}/scaling_available_governors"):
        offered = fx.f.read(f"{base}/scaling_available_governors").split()
    changes = [_write(fx.m, f"{base}/scaling_governor", gov, "performance")] \
        if "performance" in offered else []
    return _result(name, WARN, shown(gov), "performance",
                   f"{shown(gov)} lowers the clock when idle and the RT thread's first "
                   f"microseconds after a wake-up run slow"
                   + ("" if changes else "; this driver offers no performance governor"), changes)


def check_idle_states(fx: _Facts) -> CheckResult:
    name, cpu = "idle_states", fx.rt_cpu
    base = f"/sys/devices/system/cpu/cpu{cpu}/cpuidle"
    rec = f"none deeper than {DEEP_IDLE_US} us while RT runs"
    if not fx.f.exists(base):
        return _result(name, NA, "no cpuidle", rec,
                       "no cpuidle driver: the CPU halts when idle (in a VM the host decides "
                       "how long waking takes; see pm_qos)")
    states, deep = [], []
    for entry in fx.f.listdir(base):
        if not re.fullmatch(r"state[0-9]{1,3}", entry):
            continue
        sname = one_line(fx.f.read(f"{base}/{entry}/name"))[:16]
        latency = fx.f.read_int(f"{base}/{entry}/latency", 0, 10**9)
        off = fx.f.read_int(f"{base}/{entry}/disable", 0, 1) == 1 \
            if fx.f.exists(f"{base}/{entry}/disable") else False
        states.append(f"{sname} {latency}us{' off' if off else ''}")
        if latency > DEEP_IDLE_US and not off:
            deep.append(f"{sname} ({latency} us)")
    current = ", ".join(states) or "none"
    if not deep:
        return _result(name, OK, current, rec, "no enabled idle state is slow to leave")
    qos = fx.f.exists("/dev/cpu_dma_latency")
    return _result(name, OK if qos else WARN, current, rec,
                   f"waking from {deep[-1]} costs a slot's margin; " +
                   ("rtnetd's PM QoS request (pm_qos) keeps the CPU out of them while it runs"
                    if qos else "and without /dev/cpu_dma_latency nothing keeps the CPU out"))


def check_pm_qos(fx: _Facts) -> CheckResult:
    name, path = "pm_qos", "/dev/cpu_dma_latency"
    rec = "0 us while rtnetd runs"
    if not fx.f.exists(path):
        return _result(name, WARN, "no /dev/cpu_dma_latency", rec,
                       "the kernel offers no PM QoS request: deep idle states cannot be held off")
    raw = fx.f.read_bytes(path, 4)
    if len(raw) != 4:
        raise Unreadable(f"{path}: {len(raw)} bytes, not a 32-bit latency")
    value = int.from_bytes(raw, "little", signed=True)
    held = value < PM_QOS_NO_REQUEST
    current = f"held at {value} us" if held else "no request held"
    return _result(name, OK, current, rec,
                   "rtnetd's RT thread holds 0 us while it runs (csrc/rtn_rt.c, as "
                   "rtnet/pmqos.py for the tools), so a wake-up never leaves a deep idle "
                   "state; " + ("a request is held now" if held else
                                "none is held now: no rtnetd is running"))


def check_timer_slack(fx: _Facts) -> CheckResult:
    name = "timer_slack"
    slack = fx.f.read_int("/proc/self/timerslack_ns", 0, 2**63 - 1)
    return _result(name, OK, f"{slack} ns here, 1 ns in the RT thread", "1 ns in the RT thread",
                   f"ordinary threads may wake up to {slack / 1000:g} us late to batch timers; "
                   "rtnetd's RT thread sets 1 ns (PR_SET_TIMERSLACK, csrc/rtn_rt.c), which also "
                   "covers a SCHED_OTHER fallback")


def check_memlock(fx: _Facts) -> CheckResult:
    name, need = "memlock", UMEM_BYTES
    rec = "unlimited (or CAP_IPC_LOCK)"
    limit = fx.limit("Max locked memory")
    shown_limit = "unlimited" if limit is None else f"{limit // 1024} KiB"
    if fx.has_cap(CAP_IPC_LOCK):
        return _result(name, OK, f"{shown_limit}, CAP_IPC_LOCK", rec,
                       "mlockall() may lock all of rtnetd: no page fault on the RT path")
    if limit is None:
        return _result(name, OK, shown_limit, rec,
                       "mlockall() may lock all of rtnetd: no page fault on the RT path")
    if limit < need:
        return _result(name, FAIL, shown_limit, rec,
                       f"below the {need >> 20} MiB UMEM alone: mlockall() fails and rtnetd "
                       f"stops at start; raise memlock (limits.conf, LimitMEMLOCK=infinity)")
    return _result(name, WARN, shown_limit, rec,
                   f"mlockall() locks all of rtnetd (Python, libraries, the {need >> 20} MiB "
                   f"UMEM), likely more than this; raise memlock to unlimited")


# -- the NIC -----------------------------------------------------------------------------------

def _no_device(fx: _Facts, name: str, rec: str) -> CheckResult | None:
    if not fx.nic["exists"]:
        return _result(name, NA, "no device", rec, f"{fx.t.dev} does not exist (see nic)")
    return None


def _virtual(fx: _Facts, name: str, rec: str, why: str) -> CheckResult | None:
    if fx.nic["virtual"]:
        return _result(name, NA, f"{fx.nic['kind']} (virtual)", rec,
                       f"a {fx.nic['kind']} has no hardware: {why}")
    return None


def _ethtool(fx: _Facts, name: str, flag: str, rec: str):
    """ethtool's output, or the result that says why there is none."""
    out = fx.ethtool(flag)
    if out is None:
        return _result(name, WARN, "ethtool missing", rec,
                       "ethtool is not installed (apt install ethtool): cannot tell")
    rc, text = out
    if rc != 0:
        first = (text.strip().splitlines() or ["no output"])[-1]
        return _result(name, NA, "not reported", rec,
                       f"ethtool {flag} {fx.t.dev}: {first[:120]}")
    return text


def check_nic(fx: _Facts) -> CheckResult:
    name, dev = "nic", fx.t.dev
    if not fx.nic["exists"]:
        return _result(name, FAIL, "no device", f"{dev} present",
                       f"{dev} does not exist in this network namespace (a lab station's is in "
                       f"its namespace: ip netns exec rtn-lab-s1 rtnetctl check)")
    if fx.nic["virtual"]:
        return _result(name, OK, f"{fx.nic['kind']} (virtual)", "a NIC of its own",
                       f"{dev} is virtual: the timing items of real hardware do not apply")
    driver = fx.nic["driver"] or "an unknown driver"
    return _result(name, OK, driver, "a NIC of its own", f"{dev} is a NIC driven by {driver}")


def _features(fx: _Facts) -> int:
    ifindex = fx.f.read_int(f"/sys/class/net/{fx.t.dev}/ifindex", 1, 2**31 - 1)
    try:
        return fx.m.xdp_features(ifindex)
    except xdpfeatures.XdpFeaturesError as exc:
        raise Unreadable(f"XDP features of {fx.t.dev}: {exc}") from None


def check_xdp_native(fx: _Facts) -> CheckResult:
    name, rec = "xdp_native", "native"
    if (res := _no_device(fx, name, rec)) is not None:
        return res
    mask = _features(fx)
    native = mask & xdpfeatures.BASIC and mask & xdpfeatures.REDIRECT
    current = f"{'native' if native else 'generic only'} ({xdpfeatures.describe(mask)})"
    if native:
        return _result(name, OK, current, rec,
                       "the driver runs the XDP program and redirects to AF_XDP itself")
    return _result(name, WARN, current, rec,
                   "only generic (SKB) XDP: every frame gets a socket buffer before it reaches "
                   "the AF_XDP socket, costing microseconds")


def check_xdp_zerocopy(fx: _Facts) -> CheckResult:
    name, rec = "xdp_zerocopy", "supported"
    if (res := _no_device(fx, name, rec)) is not None:
        return res
    if (res := _virtual(fx, name, rec, "AF_XDP copies frames, which is all it can do")):
        return res
    if _features(fx) & xdpfeatures.XSK_ZEROCOPY:
        return _result(name, OK, "supported", rec,
                       "AF_XDP could share the driver's rings; rtnetd binds in copy mode today")
    return _result(name, OK, "not supported", rec,
                   "copy mode only, which is how rtnetd binds today (one copy per frame)")


def _ethtool_field(text: str, label: str) -> str | None:
    m = re.search(rf"^{re.escape(label)}:?\s+(\S+)", text, re.M)
    return m.group(1) if m else None


def check_coalescing(fx: _Facts) -> CheckResult:
    name, dev = "coalescing", fx.t.dev
    rec = "adaptive-rx off, rx-usecs 0"
    if (res := _no_device(fx, name, rec)) is not None:
        return res
    if (res := _virtual(fx, name, rec, "no interrupt to delay")):
        return res
    text = _ethtool(fx, name, "-c", rec)
    if isinstance(text, CheckResult):
        return text
    adaptive = _ethtool_field(text, "Adaptive RX")
    usecs = _ethtool_field(text, "rx-usecs")
    if usecs is not None and not usecs.isdigit():
        usecs = None              # "n/a": the driver has no such setting
    if adaptive is None and usecs is None:
        return _result(name, NA, "not reported", rec, f"ethtool -c {dev} shows no RX coalescing")
    current = f"adaptive-rx {adaptive or 'n/a'}, rx-usecs {usecs or 'n/a'}"
    args, old = [], []
    if adaptive == "on":
        args += ["adaptive-rx", "off"]
        old += ["adaptive-rx", "on"]
    if usecs is not None and int(usecs) > 0:
        args += ["rx-usecs", "0"]
        old += ["rx-usecs", usecs]
    if not args:
        return _result(name, OK, current, rec, "the NIC interrupts as soon as a frame is in")
    return _result(name, WARN, current, rec,
                   f"the NIC holds its RX interrupt back to batch frames: each RT frame waits "
                   f"up to {usecs or 'an adaptive'} us (undo: ethtool -C {dev} {' '.join(old)})",
                   [_ethtool_change(fx, old, args)])


def _ethtool_change(fx: _Facts, old: list[str], new: list[str]) -> Change:
    dev = fx.t.dev

    def do():
        out = fx.m.run(["ethtool", "-C", dev, *new])
        if out is None:
            raise OSError(2, "ethtool is not installed")
        if out[0] != 0:
            raise OSError(0, one_line((out[1].strip().splitlines() or ["failed"])[-1][:120]))
    return Change(f"ethtool -C {dev}", " ".join(old), " ".join(new), do)


def check_hw_timestamps(fx: _Facts) -> CheckResult:
    name = "hw_timestamps"
    rec = "hardware transmit and receive"
    if (res := _no_device(fx, name, rec)) is not None:
        return res
    if (res := _virtual(fx, name, rec, "the stack stamps frames in software")):
        return res
    text = _ethtool(fx, name, "-T", rec)
    if isinstance(text, CheckResult):
        return text
    tx = re.search(r"^\s*hardware-transmit\b", text, re.M) is not None
    rx = re.search(r"^\s*hardware-receive\b", text, re.M) is not None
    phc = _ethtool_field(text, "PTP Hardware Clock") or "none"
    current = f"{'tx' if tx else ''}{'+' if tx and rx else ''}{'rx' if rx else ''}" or "none"
    current = f"hardware {current}, PHC {phc}"
    if tx and rx:
        return _result(name, OK, current, rec,
                       "the NIC can stamp frames on the wire (for PTP; rtnet stamps in software)")
    return _result(name, WARN, current, rec,
                   "software stamps only: TDMA sync and latency figures include the driver's "
                   "and the stack's jitter")


def check_queues(fx: _Facts) -> CheckResult:
    name, dev = "queues", fx.t.dev
    rec = "1 RX queue, or an ntuple rule steering 0x9021 to queue 0"
    if (res := _no_device(fx, name, rec)) is not None:
        return res
    base = f"/sys/class/net/{dev}/queues"
    rx = None
    if not fx.nic["virtual"]:
        out = fx.ethtool("-l")
        if out and out[0] == 0:
            current = re.split(r"Current hardware settings:", out[1])[-1]
            counts = [int(v) for v in re.findall(r"^(?:RX|Combined):\s+([0-9]{1,6})", current,
                                                 re.M)]
            rx = sum(counts) if counts else None
    if rx is None and fx.f.exists(base):
        rx = sum(1 for q in fx.f.listdir(base) if re.fullmatch(r"rx-[0-9]{1,6}", q))
    if rx is None:
        return _result(name, WARN, "unknown", rec, f"neither ethtool -l nor {base} tells")
    if rx <= 1:
        return _result(name, OK, f"{rx} RX queue", rec,
                       "every frame arrives on queue 0, where rtnetd's AF_XDP socket is")
    return _result(name, WARN, f"{rx} RX queues", rec,
                   f"rtnetd's socket is on queue 0: RT frames the NIC puts on another queue go "
                   f"to Linux, not to TDMA (ethtool -L {dev} combined 1)")


CHECKS = (check_preempt_rt, check_preemption, check_sched_fifo, check_rt_throttling,
          check_rt_cpu, check_isolcpus, check_nohz_full, check_rcu_nocbs, check_irq_affinity,
          check_smt, check_governor, check_idle_states, check_pm_qos, check_timer_slack,
          check_memlock, check_nic, check_xdp_native, check_xdp_zerocopy, check_coalescing,
          check_hw_timestamps, check_queues)


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


def apply_and_recheck(machine: Machine, target: Target, *,
                      unthrottle: bool = False) -> list[CheckResult]:
    """Apply the fixable items, then check again; each item carries its writes' outcomes."""
    before = run_checks(machine, target)
    apply(before, unthrottle=unthrottle)
    after = run_checks(machine, target)
    outcomes = {r.name: r.applied for r in before}
    for res in after:
        res.applied = outcomes.get(res.name, [])
    return after


def check_machine(target: Target, *, apply: bool = False, unthrottle: bool = False,
                  machine: Machine | None = None) -> list[CheckResult]:
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
        lines.append(f"{_MARK[r.status]:<5} {r.name:<13} {r.current:<{cur}}  "
                     f"{r.recommended:<{rec}}  {r.explanation}{fix}")
    return "\n".join(lines) + "\n"


def failed(results: list[CheckResult]) -> bool:
    """Whether an item failed or one of its writes did."""
    return any(r.status == FAIL or any(not c["ok"] for c in r.applied) for r in results)
