"""What the checks look at: the results' shape, the machine (files, commands, the
driver's XDP features), the target station, and the facts read once per run."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from rtnet import xdpfeatures
from rtnet._lowlevel import lib
from rtnet.messages import bounded, one_line
from rtnet.station import UMEM_FRAMES
from rtnet.sysfiles import SysFiles, Unreadable, format_cpu_list, parse_cpu_list

OK, WARN, FAIL, NA = "ok", "warn", "fail", "not-applicable"
STATUSES = (OK, WARN, FAIL, NA)
JSON_KEYS = (
    "name",
    "status",
    "current",
    "recommended",
    "explanation",
    "fixable",
    "opt_in",
    "changes",
)
UMEM_BYTES = UMEM_FRAMES * lib.RTN_XSK_FRAME_SIZE
CAP_IPC_LOCK = 14
CAP_SYS_NICE = 23
PM_QOS_NO_REQUEST = 2_000_000_000  # /dev/cpu_dma_latency's value while nobody holds one
DEEP_IDLE_US = 10  # exit latency above which an idle state costs a slot
COMMAND_TIMEOUT_S = 10.0
PREEMPT_MODELS = ("none", "voluntary", "full", "lazy")


# -- results -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One write --apply makes: writing ``old`` back undoes it."""

    what: str  # the file (or command) written
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
    changes: tuple = ()  # Change, ...: what --apply would write
    opt_in: bool = False  # applied only when asked for by name (--unthrottle)
    applied: list = field(default_factory=list)  # outcomes of the writes, once applied

    @property
    def fixable(self) -> bool:
        return bool(self.changes)

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "status": self.status,
            "current": self.current,
            "recommended": self.recommended,
            "explanation": self.explanation,
            "fixable": self.fixable,
            "opt_in": self.opt_in,
            "changes": list(self.applied),
        }


# -- where the checks look ---------------------------------------------------------------------


def run_command(argv: list[str]) -> tuple[int, str] | None:
    """(exit status, output) of a command, or None if it is not installed."""
    try:
        res = subprocess.run(
            argv,
            capture_output=True,
            timeout=COMMAND_TIMEOUT_S,
            env={**os.environ, "LC_ALL": "C"},
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        return None
    except subprocess.TimeoutExpired:
        return 124, f"{argv[0]} did not answer within {COMMAND_TIMEOUT_S:g} s"
    out = (res.stdout + res.stderr)[: 64 * 1024]
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
    cpu: int | None = None  # rt.cpu of the configuration
    priority: int = 90
    config: str | None = None  # the configuration file, None if none was given


def target_for(dev: str | None, config: str | None) -> Target:
    """The target of a station: its configuration's device and RT settings, if one is given.

    ``dev`` (when given) wins over the configuration's device; ConfigError for a bad file.
    """
    if config is None:
        return Target(dev=dev or "rteth0")
    from rtnet.configfile import load

    cfg = load(config)
    return Target(dev=dev or cfg.device, cpu=cfg.rt.cpu, priority=cfg.rt.priority, config=config)


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
        while words and re.fullmatch(r"[a-z_]+", words[0]):  # flags: nohz, domain, managed_irq
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
        return {
            "exists": True,
            "virtual": virtual,
            "driver": driver,
            "kind": kind or ("virtual" if virtual else driver or "unknown"),
        }

    def ethtool(self, flag: str) -> tuple[int, str] | None:
        """(status, output) of ``ethtool <flag> <dev>``, None if ethtool is missing."""
        if flag not in self._ethtool:
            self._ethtool[flag] = self.m.run(["ethtool", flag, self.t.dev])
        return self._ethtool[flag]


def parse_kconfig(text: str) -> dict[str, str]:
    """CONFIG_X=value lines, and "# CONFIG_X is not set" as "n" (names without CONFIG_)."""
    out = {}
    for line in text.splitlines():
        m = re.fullmatch(r"CONFIG_([A-Za-z0-9_]+)=(.*)", line) or re.fullmatch(
            r"# CONFIG_([A-Za-z0-9_]+) is not set()", line
        )
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
    return CheckResult(
        name,
        status,
        one_line(str(current)),
        one_line(str(recommended)),
        bounded(one_line(explanation)),
        tuple(changes),
        opt_in,
    )


def _write(machine: Machine, path: str, old: str, new: str) -> Change:
    return Change(path, old, new, lambda: machine.files.write(path, new))


def _cpu_word(cpus: set[int]) -> str:
    return format_cpu_list(cpus) if cpus else "none"
