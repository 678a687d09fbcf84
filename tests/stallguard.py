"""Timing bounds that hold where the VM let the stack run: samples a stall overlapped are
left out, counted and shown, and the rest must meet the bound.

On this shared VM the hypervisor takes a vCPU for milliseconds, or runs both several times
slower in spells of 6 to 21 ms (rtnet/stall.py).  A test that loosened its bound until
such spells fit under it no longer catches a stack that delays half its frames.  Instead
the stall detector runs during the measurement; every cycle, frame or sample whose time
overlaps one of its records (a gap or a slow spell, widened by a margin) is excluded and
counted, and the original bound applies to the rest.

A measurement that had to exclude more than half of its samples says little: the VM was
too disturbed.  It is made once more; if the repeat is as disturbed, the test skips
locally and fails under CI=true (conftest.skip_or_fail) with both exclusion counts.

Times are CLOCK_MONOTONIC nanoseconds, the detector's clock.  In the lab, global (TDMA)
time is the master's clock, which is the host's CLOCK_MONOTONIC (csrc/station/rtn_station_tdma.c,
port_truth: a master without offset or drift); global_minus_monotonic_ns measures the
difference instead of assuming it, and WireCapture's stamps are already converted from
CLOCK_REALTIME (rtnet/clocks.py).

>>> with detector() as det:                                     # doctest: +SKIP
...     run_the_measurement()
>>> stalls = Stalls(det.gaps(), pad_ns=1_000_000)               # doctest: +SKIP
>>> kept, tally = split(probes, lambda p: (p.start, p.end), stalls, "probes")  # doctest: +SKIP
"""

from __future__ import annotations

import bisect
import contextlib
import os
import time
from dataclasses import dataclass

from rtnet.stall import merge_spans


class Stalls:
    """The detector's records (anything with ``due_ns`` and ``woke_ns``) as merged intervals,
    each widened by ``pad_ns`` on both sides: a stall delays what was due shortly before it
    and what the stack does shortly after it catches up.  With ``catch_up`` the margin after
    a record is at least ``catch_up`` times its length: the backlog a stall leaves takes
    time in proportion to it."""

    def __init__(self, records, pad_ns: int = 0, catch_up: float = 0.0):
        if pad_ns < 0 or catch_up < 0:
            raise ValueError(f"pad_ns {pad_ns}, catch_up {catch_up}: must be >= 0")
        records = list(records)
        self.records = len(records)
        self._starts, self._ends = merge_spans(
            (r.due_ns - pad_ns, r.woke_ns + max(pad_ns, int(catch_up * (r.woke_ns - r.due_ns))))
            for r in records
        )

    def __len__(self) -> int:
        return len(self._starts)

    def overlaps(self, start_ns: int, end_ns: int) -> bool:
        """Whether [start_ns, end_ns] meets a (widened) stall; a single instant if equal."""
        if end_ns < start_ns:
            start_ns, end_ns = end_ns, start_ns
        # merged intervals are disjoint and sorted, so the last one starting at or before
        # end_ns has the latest end of all that could reach back to start_ns
        i = bisect.bisect_right(self._starts, end_ns) - 1
        return i >= 0 and self._ends[i] >= start_ns

    def covered_ns(self) -> int:
        return sum(e - s for s, e in zip(self._starts, self._ends))


def describe(records) -> str:
    """What the detector saw: its gaps (the CPU taken away, or kept busy by the machine's own
    work: rtnet.stall.Stall.cpu_taken) and slow spells, how many and how long in all."""
    seen = {"gap": [0, 0], "slow": [0, 0], "busy": [0, 0]}
    for r in records:
        kind = getattr(r, "kind", "gap")
        if kind == "gap" and not getattr(r, "cpu_taken", True):
            kind = "busy"
        tally = seen.setdefault(kind, [0, 0])
        tally[0] += 1
        tally[1] += r.woke_ns - r.due_ns
    return (
        f"stall detector: {seen['gap'][0]} gaps with the CPU taken away "
        f"({seen['gap'][1] / 1e6:.1f} ms), {seen['busy'][0]} with it busy with the machine's "
        f"own work ({seen['busy'][1] / 1e6:.1f} ms), "
        f"{seen['slow'][0]} slow spells ({seen['slow'][1] / 1e6:.1f} ms)"
    )


@dataclass
class Tally:
    """How many samples of one kind were measured and how many a stall overlapped."""

    what: str
    total: int = 0
    excluded: int = 0

    @property
    def kept(self) -> int:
        return self.total - self.excluded

    @property
    def too_disturbed(self) -> bool:
        """More than half of the samples excluded."""
        return 2 * self.excluded > self.total

    def count(self, disturbed: bool) -> bool:
        """Count one sample; True if it is kept."""
        self.total += 1
        self.excluded += bool(disturbed)
        return not disturbed

    def __str__(self) -> str:
        return f"{self.what}: {self.excluded} of {self.total} excluded (a stall overlapped them)"


def split(items, span, stalls: Stalls, what: str):
    """``items`` whose ``span(item) -> (start_ns, end_ns)`` no stall overlaps, and the tally."""
    tally, kept = Tally(what), []
    for it in items:
        if tally.count(stalls.overlaps(*span(it))):
            kept.append(it)
    return kept, tally


class TooDisturbed(Exception):
    """Raised inside a measurement that already knows it excluded more than half."""

    def __init__(self, tallies):
        super().__init__("; ".join(map(str, tallies)))
        self.tallies = list(tallies)


def _as_list(tallies) -> list[Tally]:
    return [tallies] if isinstance(tallies, Tally) else list(tallies)


def twice(measure, what: str, *, give_up=None, say=print):
    """Run ``measure() -> (result, tallies)``; if any tally excluded more than half its
    samples, run it once more; if the repeat is as disturbed, ``give_up`` (conftest's
    skip_or_fail: skip locally, fail under CI) with both runs' counts.  Every run's tallies
    are printed.  Returns the result of the run that was not too disturbed, whose bounds
    the caller then asserts."""
    if give_up is None:
        from conftest import skip_or_fail as give_up
    runs = []
    for attempt in (1, 2):
        try:
            result, tallies = measure()
        except TooDisturbed as exc:
            result, tallies = None, exc.tallies
        tallies = _as_list(tallies)
        say(f"{what}, run {attempt}: " + "; ".join(map(str, tallies)))
        if not any(t.too_disturbed for t in tallies):
            return result
        runs.append(tallies)
    give_up(
        f"VM too disturbed: {what}: more than half excluded twice in a row "
        f"(first run: {'; '.join(map(str, runs[0]))}; "
        f"repeat: {'; '.join(map(str, runs[1]))})"
    )
    return None


def global_minus_monotonic_ns(global_now, tries: int = 20, monotonic=time.monotonic_ns) -> int:
    """``global_now()`` (a station's global time, e.g. ``master.local_now``) minus
    CLOCK_MONOTONIC, from the narrowest of ``tries`` monotonic-global-monotonic brackets,
    so that a stall between two reads cannot skew it (as rtnet.clocks)."""
    best_width, best = None, 0
    for _ in range(tries):
        a = monotonic()
        g = global_now()
        b = monotonic()
        if best_width is None or b - a < best_width:
            best_width, best = b - a, g - (a + b) // 2
    return best


@contextlib.contextmanager
def detector(cpus=None, period_us=None):
    """The stall detector (rtnet.stall, its default period, threshold and priority, as
    tools/bench_suite.py runs it) on ``cpus`` (every CPU) while the block runs.
    ``period_us``: a shorter period, for a bound that tolerates less than the default
    period: a stall shorter than the period is seen only if the detector was due in it."""
    from rtnet.stall import StallDetector

    kw = {} if period_us is None else {"period_us": period_us}
    with StallDetector(range(os.cpu_count() or 1) if cpus is None else cpus, **kw) as det:
        yield det


class Windows:
    """Snapshots of a cumulative statistic (a Histogram of a station's counters), each
    between two CLOCK_MONOTONIC reads, so that what it gained between two snapshots is a
    sample whose time is known: from before the earlier read to after the later one.
    For statistics that the stack keeps without per-sample times (sync error)."""

    def __init__(self, read, monotonic=time.monotonic_ns):
        self._read, self._mono = read, monotonic
        self.snaps: list[tuple[int, object, int]] = []

    def take(self):
        a = self._mono()
        v = self._read()
        self.snaps.append((a, v, self._mono()))
        return v

    def windows(self):
        """(start_ns, end_ns, earlier, later) for each pair of consecutive snapshots."""
        return [
            (a0, b1, v0, v1) for (a0, v0, _b0), (_a1, v1, b1) in zip(self.snaps, self.snaps[1:])
        ]
