"""The real-time thread (csrc/core/rtn_rt.c) as a Python object.

``RtThread`` starts a SCHED_FIFO, pinned, memory-locked thread that wakes up
every period on absolute deadlines and records how late each wake-up was.
Python only starts, stops and reads it; the thread never calls into Python.

    >>> with RtThread(period_us=1000, cpu=1, priority=90) as rt:   # doctest: +SKIP
    ...     time.sleep(1)
    ...     print(rt.stats().summary_us())
"""

import errno
import os
from dataclasses import dataclass

from ._lowlevel import check, ffi, lib
from .errors import ConfigError, RtThreadError
from .hist import Histogram

PRIO_MIN = lib.RTN_RT_PRIO_MIN
PRIO_MAX = lib.RTN_RT_PRIO_MAX
PERIOD_MAX_US = lib.RTN_RT_PERIOD_MAX_NS // 1000
PREFAULT_MAX_KB = lib.RTN_RT_PREFAULT_MAX_KB

_POLICY_NAMES = {lib.RTN_RT_POLICY_FIFO: "SCHED_FIFO", lib.RTN_RT_POLICY_OTHER: "SCHED_OTHER"}

THREAD_NAME = "rtnet-rt"  # every RT thread's name (csrc/core/rtn_rt.c, RT_THREAD_NAME)


@dataclass(frozen=True)
class RtThreadStats:
    policy: str  # "SCHED_FIFO" or "SCHED_OTHER", as applied
    priority: int  # applied priority, 0 under SCHED_OTHER
    cpu: int | None  # pinned CPU, None if not pinned
    tid: int  # kernel thread id (/proc/<pid>/task/<tid>)
    period_us: float
    wakeups: int
    missed: int  # periods skipped after a stall longer than a period
    fallback: bool  # SCHED_FIFO was refused and allow_fallback was set
    dma_latency_held: bool  # /dev/cpu_dma_latency held at 0
    memory_locked: bool
    setup_faults: int  # page faults taken at SCHED_FIFO before the loop: 0 expected
    running: bool
    histogram: Histogram  # lateness of each wake-up

    def summary_us(self) -> dict:
        return self.histogram.summary_us()


def _allowed_cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def _format_cpus(cpus: list[int]) -> str:
    return ",".join(str(c) for c in cpus)


def validate(period_us, cpu, priority, prefault_stack_kb) -> None:
    """Raise ConfigError for a bad argument, before anything reaches C."""
    if isinstance(period_us, bool) or not isinstance(period_us, (int, float)):
        raise ConfigError(f"period_us must be a number, not {period_us!r}")
    if not 0 < period_us <= PERIOD_MAX_US or int(period_us * 1000) <= 0:
        raise ConfigError(f"period_us {period_us} out of range (0, {PERIOD_MAX_US}]")
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise ConfigError(f"priority must be an integer, not {priority!r}")
    if not PRIO_MIN <= priority <= PRIO_MAX:
        raise ConfigError(f"priority {priority} out of range {PRIO_MIN}..{PRIO_MAX}")
    if cpu is not None:
        if isinstance(cpu, bool) or not isinstance(cpu, int):
            raise ConfigError(f"cpu must be an integer or None, not {cpu!r}")
        allowed = _allowed_cpus()
        if cpu not in allowed:
            raise ConfigError(
                f"CPU {cpu} is not available: allowed CPUs are {_format_cpus(allowed)}"
            )
    if not isinstance(prefault_stack_kb, int) or not 0 < prefault_stack_kb <= PREFAULT_MAX_KB:
        raise ConfigError(
            f"prefault_stack_kb {prefault_stack_kb!r} out of range 1..{PREFAULT_MAX_KB}"
        )


def fill_rt_opts(
    opts,
    *,
    period_us=1000,
    cpu=None,
    priority=90,
    allow_fallback=False,
    hold_dma_latency=True,
    prefault_stack_kb=lib.RTN_RT_PREFAULT_DEFAULT_KB,
):
    """Fill a ``struct rtn_rt_opts`` (validated first)."""
    validate(period_us, cpu, priority, prefault_stack_kb)
    lib.rtn_rt_opts_init(opts)
    opts.cpu = -1 if cpu is None else cpu
    opts.priority = priority
    opts.period_ns = int(period_us * 1000)
    opts.allow_fallback = int(allow_fallback)
    opts.hold_dma_latency = int(hold_dma_latency)
    opts.prefault_stack_kb = prefault_stack_kb


class RtThread:
    """A periodic real-time thread measuring its own wake-up latency.

    ``allow_fallback`` lets it run SCHED_OTHER (reported in ``stats()``)
    where SCHED_FIFO is refused; without it, start() raises RtThreadError.
    """

    def __init__(
        self,
        period_us: float = 1000,
        cpu: int | None = None,
        priority: int = 90,
        allow_fallback: bool = False,
        hold_dma_latency: bool = True,
        prefault_stack_kb: int = lib.RTN_RT_PREFAULT_DEFAULT_KB,
    ):
        validate(period_us, cpu, priority, prefault_stack_kb)
        self.period_us = period_us
        self.cpu = cpu
        self.priority = priority
        self.allow_fallback = bool(allow_fallback)
        self.hold_dma_latency = bool(hold_dma_latency)
        self.prefault_stack_kb = prefault_stack_kb
        self._rt = None
        self._final: RtThreadStats | None = None

    def _opts(self):
        opts = ffi.new("struct rtn_rt_opts *")
        fill_rt_opts(
            opts,
            period_us=self.period_us,
            cpu=self.cpu,
            priority=self.priority,
            allow_fallback=self.allow_fallback,
            hold_dma_latency=self.hold_dma_latency,
            prefault_stack_kb=self.prefault_stack_kb,
        )
        return opts

    @property
    def running(self) -> bool:
        return self._rt is not None

    def start(self) -> "RtThread":
        """Start the thread; returns once its settings are applied.  No-op if running."""
        if self._rt is not None:
            return self
        out = ffi.new("struct rtn_rt **")
        check(lib.rtn_rt_start(self._opts(), ffi.NULL, ffi.NULL, out), RtThreadError)
        self._rt = out[0]
        self._final = None
        return self

    def stop(self) -> None:
        """Stop and join the thread, release PM QoS.  Can be called multiple times.

        The stats of the finished run stay available through stats().
        """
        if self._rt is None:
            return
        final = ffi.new("struct rtn_rt_stats *")
        rt, self._rt = self._rt, None
        rc = lib.rtn_rt_stop(rt, final)
        self._final = _to_stats(final)
        check(rc, RtThreadError, "RT thread body")

    close = stop

    def stats(self) -> RtThreadStats:
        """Snapshot while running (never blocks the thread), or the final stats."""
        if self._rt is None:
            if self._final is None:
                raise RtThreadError(errno.ESRCH, "the RT thread was never started")
            return self._final
        out = ffi.new("struct rtn_rt_stats *")
        lib.rtn_rt_read_stats(self._rt, out)
        return _to_stats(out)

    def histogram(self) -> Histogram:
        """Snapshot of the live wake-up histogram (cheaper than stats())."""
        if self._rt is None:
            return self.stats().histogram
        return Histogram.from_c(lib.rtn_rt_hist(self._rt))

    def __enter__(self) -> "RtThread":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __del__(self):
        if getattr(self, "_rt", None) is not None:
            lib.rtn_rt_stop(self._rt, ffi.NULL)
            self._rt = None


def _to_stats(s) -> RtThreadStats:
    return RtThreadStats(
        policy=_POLICY_NAMES.get(s.policy, str(s.policy)),
        priority=s.priority,
        cpu=None if s.cpu < 0 else s.cpu,
        tid=s.tid,
        period_us=s.period_ns / 1000,
        wakeups=s.wakeups,
        missed=s.missed,
        fallback=bool(s.fallback),
        dma_latency_held=bool(s.dma_latency_held),
        memory_locked=bool(s.memory_locked),
        setup_faults=int(s.setup_faults),
        running=bool(s.running),
        histogram=Histogram.from_c(ffi.addressof(s.hist)),
    )
