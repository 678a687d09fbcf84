"""What the VM did to a running segment: the stall detector (rtnet.stall) on every CPU
while the demo shows the segment, and each station's records of missed slots (rtnetd's
``tdma.misses``) and the late messages put next to the spans in which the hypervisor took
a CPU.  On a noisy VM a first run otherwise shows the hypervisor's stalls as the stack's
missed slots and millisecond latencies, with nothing to tell them apart.

A miss or a message within STALL_PAD_NS of such a span is the VM's; the rest, and a miss
whose record was overwritten before it was read, stay the stack's.  Every station and the
detector read CLOCK_MONOTONIC (the lab's global time is the master's CLOCK_MONOTONIC, on
this same machine).
"""

from __future__ import annotations

import os
import time

from . import stationctl
from .closeable import Closeable
from .errors import RtnetError
from .stall import STALL_PAD_NS, StallDetector, TakenSpans
from .tdma_stats import SlotMiss


def misses_in_spans(records, spans: TakenSpans) -> int:
    """Slot occurrences of ``records`` (SlotMiss) missed within ``spans``."""
    return sum(m.slots for m in records if spans.covers(m.at_ns))


def lives_in_spans(lives, spans: TakenSpans) -> int:
    """How many (start_ns, end_ns) lives (a message's scheduled send to its receipt) meet
    ``spans``."""
    return sum(1 for lo, hi in lives if spans.overlaps(lo, hi))


def _misses(netns: str, first: int) -> tuple[list[SlotMiss], int]:
    reply = stationctl.request("rteth0", {"cmd": "tdma.misses", "from": first}, netns=netns)
    return [SlotMiss(**m) for m in reply["misses"]], int(reply["next"])


class VmWitness(Closeable):
    """The detector on every CPU from construction to close(), and where each station's
    miss records stood at construction.  ``why_not``: the one line saying why there is no
    detector (it needs SCHED_FIFO); the demo then runs without it.  begin() and end() mark
    the span whose misses are counted: after the reading the caller's own count starts
    from and before the one it ends with, so what the VM explains is a share of that
    count."""

    def __init__(self, netnss: list[str]):
        self.netnss = list(netnss)
        self.why_not: str | None = None
        self._det: StallDetector | None = None
        self.spans: TakenSpans | None = None
        self.stalls: list = []
        self.wake_p99_us: dict[int, float] = {}
        try:
            self._det = StallDetector(range(os.cpu_count() or 1))
        except RtnetError as exc:
            self.why_not = f"no stall detector: {exc}"
        self._marks = [_misses(ns, 0)[1] for ns in self.netnss]
        self._from_ns, self._to_ns = time.monotonic_ns(), None

    def begin(self) -> None:
        self._from_ns = time.monotonic_ns()

    @property
    def begun_ns(self) -> int:
        """When begin() was called (CLOCK_MONOTONIC, ns)."""
        return self._from_ns

    def end(self) -> None:
        self._to_ns = time.monotonic_ns()

    def close(self) -> None:
        """Stop the detector and keep what it saw (idempotent)."""
        if self._det is not None:
            self.stalls = [g for g in self._det.gaps() if g.cpu_taken]
            self.wake_p99_us = {
                cpu: w["lateness"].summary_us()["p99"] for cpu, w in self._det.wakeups().items()
            }
            self._det.close()
            self._det = None
            self.spans = TakenSpans(self.stalls, STALL_PAD_NS)

    def station_records(self, i: int) -> list[SlotMiss]:
        """Station ``i``'s (its index in ``netnss``) miss records between begin() and
        end() (the newest RTN_MISS_RECS of them)."""
        hi = self._to_ns if self._to_ns is not None else time.monotonic_ns()
        records = _misses(self.netnss[i], self._marks[i])[0]
        return [m for m in records if self._from_ns <= m.at_ns <= hi]

    def station_misses(self, i: int, records: list[SlotMiss] | None = None) -> int | None:
        """Slot occurrences station ``i`` missed within the VM's stalls between begin()
        and end() (of ``records``, its station_records() when not given); None without
        a detector."""
        if self.spans is None:
            return None
        return misses_in_spans(self.station_records(i) if records is None else records, self.spans)

    def lives(self, lives) -> int | None:
        """Of ``lives`` ((start_ns, end_ns) each), those meeting the VM's stalls."""
        return None if self.spans is None else lives_in_spans(lives, self.spans)

    def summary(self) -> dict | None:
        """How often the hypervisor took a CPU while the detector ran, and the longest."""
        if self.spans is None:
            return None
        return {
            "stalls": len(self.stalls),
            "longest_ms": max((g.gap_ns for g in self.stalls), default=0) / 1e6,
            "pad_ms": STALL_PAD_NS / 1e6,
            "wake_p99_us": self.wake_p99_us,
        }

    def line(self) -> str:
        """The summary's line about the VM: its stalls, and how late the machine itself
        woke a thread of the highest priority (the detector's wake-ups, cyclictest's
        measure), next to which the stations' own wake-up p99 can be read."""
        s = self.summary()
        if s is None:
            return f"  the VM: {self.why_not or 'not watched'}"
        said = (
            f"the stall detector saw the hypervisor take a CPU {s['stalls']} times "
            f"(longest {s['longest_ms']:.1f} ms); a miss or message within {s['pad_ms']:g} ms "
            "of one is counted as the VM's, not the stack's"
            if s["stalls"]
            else "the stall detector saw no CPU taken by the hypervisor"
        )
        wake = ", ".join(f"CPU {c} {p:.0f} us" for c, p in sorted(s["wake_p99_us"].items()))
        if wake:
            said += f"; its own wake-ups at SCHED_FIFO 99 (as cyclictest's) p99 {wake}"
        return f"  the VM: {said}"
