"""The stall detector (csrc/core/rtn_stall.h): a SCHED_FIFO thread per CPU that records every
wake-up later than a threshold, so a gap of the (virtual) CPU is shown where it happened,
and every spell in which the CPU ran a fixed unit of work several times slower than usual.
A gap says how much of it the thread waited, runnable, for its CPU: ``Stall.cpu_taken``
tells a CPU the hypervisor took away from one the machine's own work kept busy.

>>> with StallDetector([0, 1]) as det:             # doctest: +SKIP
...     run_the_benchmark()
...     gaps = det.gaps()                          # [Stall(cpu, due_ns, woke_ns, kind), ...]
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from ._lowlevel import check, ffi, lib
from .closeable import Closeable
from .errors import RtThreadError
from .hist import Histogram

THREAD_NAME = "rtnet-stall"  # the detector threads' (csrc/core/rtn_stall.c), not "rtnet-rt"
# A slot miss or a late message within this of a span the hypervisor took a CPU is the VM's:
# at a 1 ms cycle, the wake-up due before the stall and the one catching up after it.
STALL_PAD_NS = 2_000_000


@dataclass(frozen=True)
class Stall:
    """A gap: the detector on ``cpu`` was due at ``due_ns`` and ran at ``woke_ns``; or a slow
    spell (``kind`` "slow") from ``due_ns`` to ``woke_ns`` in which its work unit took
    ``slowdown`` times the fastest one (CLOCK_MONOTONIC)."""

    cpu: int
    due_ns: int
    woke_ns: int
    kind: str = "gap"
    slowdown: float = 0.0
    queued_ns: int = -1  # a gap: of it, runnable but waiting for the CPU (-1: unknown)

    @property
    def gap_ns(self) -> int:
        return self.woke_ns - self.due_ns

    @property
    def cpu_taken(self) -> bool:
        """Whether the CPU was taken away (the hypervisor ran something else, or ran this
        vCPU slowly) rather than kept busy by the machine's own work: a slow spell, or a
        gap whose timer itself fired late (the thread was runnable for less than half of
        it).  Unknown counts as taken."""
        if self.kind != "gap" or self.queued_ns < 0:
            return True
        return 2 * self.queued_ns < self.gap_ns

    def overlaps(self, start_ns: int, end_ns: int) -> bool:
        return self.due_ns < end_ns and start_ns < self.woke_ns


def _stall(r) -> Stall:
    if r.kind == lib.RTN_STALL_SLOW:
        return Stall(r.cpu, r.due_ns, r.woke_ns, "slow", round(r.work_ns / max(1, r.base_ns), 1))
    return Stall(r.cpu, r.due_ns, r.woke_ns, queued_ns=r.queued_ns)


class StallDetector(Closeable):
    """One detector thread per CPU in ``cpus`` until closed; gaps are read incrementally."""

    BATCH = 512

    def __init__(
        self,
        cpus,
        *,
        period_us: float = lib.RTN_STALL_PERIOD_DEFAULT_NS / 1000,
        threshold_us: float = lib.RTN_STALL_THRESHOLD_DEFAULT_NS / 1000,
        priority: int = 99,
        allow_fallback: bool = False,
        slow_factor: int = lib.RTN_STALL_SLOW_FACTOR_DEFAULT,
        work_us: float = lib.RTN_STALL_WORK_DEFAULT_NS / 1000,
    ):
        self.cpus = [int(c) for c in cpus]
        o = ffi.new("struct rtn_stall_opts *")
        lib.rtn_stall_opts_init(o)
        o.period_ns, o.threshold_ns = int(period_us * 1000), int(threshold_us * 1000)
        o.priority, o.allow_fallback = priority, int(allow_fallback)
        o.slow_factor, o.work_ns = int(slow_factor), int(work_us * 1000)
        out = ffi.new("struct rtn_stall **")
        check(
            lib.rtn_stall_start(o, ffi.new("int[]", self.cpus), len(self.cpus), out),
            RtThreadError,
            "stall detector",
        )
        self._st = out[0]
        self._next = [0] * len(self.cpus)
        self._buf = ffi.new("struct rtn_stall_rec[]", self.BATCH)
        self._nxt = ffi.new("uint64_t *")
        self._gaps: list[Stall] = []

    def gaps(self) -> list[Stall]:
        """Every gap and slow spell recorded so far (oldest first per CPU; the newest
        RTN_STALL_RECS each)."""
        if self._st is not None:
            for i in range(len(self.cpus)):
                while True:
                    got = lib.rtn_stall_read(
                        self._st, i, self._next[i], self._buf, self.BATCH, self._nxt
                    )
                    if got < 0:
                        break
                    self._gaps.extend(_stall(r) for r in self._buf[0:got])
                    if self._nxt[0] == self._next[i]:
                        break
                    self._next[i] = self._nxt[0]
        return list(self._gaps)

    def wakeups(self) -> dict:
        """Per CPU: wake-ups so far and their lateness histogram."""
        out = {}
        n, h = ffi.new("uint64_t *"), ffi.new("struct rtn_hist *")
        for i, cpu in enumerate(self.cpus):
            if self._st is not None and lib.rtn_stall_hist(self._st, i, n, h) == 0:
                out[cpu] = {"wakeups": int(n[0]), "lateness": Histogram.from_c(h)}
        return out

    def close(self) -> None:
        if self._st is not None:
            self.gaps()
            lib.rtn_stall_stop(self._st)
            self._st = None


def merge_spans(spans) -> tuple[list[int], list[int]]:
    """(lo, hi) spans merged where they meet: their starts and ends, sorted and disjoint."""
    merged: list[list[int]] = []
    for lo, hi in sorted(spans):
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return [m[0] for m in merged], [m[1] for m in merged]


class TakenSpans:
    """The spans in which the CPU was taken from the machine (``Stall.cpu_taken``), each
    widened by ``pad_ns`` on both sides (a stall delays what was due shortly before it
    and what catches up after it), merged; ``covers(t)`` says whether time ``t`` lies in
    one.  Gaps the machine's own work caused are not in them: what the lab's load did
    stays counted."""

    def __init__(self, gaps, pad_ns: int):
        if pad_ns < 0:
            raise ValueError(f"pad_ns {pad_ns}: must be >= 0")
        self._starts, self._ends = merge_spans(
            (g.due_ns - pad_ns, g.woke_ns + pad_ns) for g in gaps if g.cpu_taken
        )

    def __len__(self) -> int:
        return len(self._starts)

    def covers(self, t_ns: int) -> bool:
        i = bisect.bisect_right(self._starts, t_ns) - 1
        return i >= 0 and t_ns <= self._ends[i]

    def overlaps(self, lo_ns: int, hi_ns: int) -> bool:
        """Whether some span meets [lo_ns, hi_ns] (a message's life, say)."""
        i = bisect.bisect_right(self._starts, hi_ns) - 1
        return i >= 0 and lo_ns <= self._ends[i]
