"""Where a message's latency went (csrc/core/rtn_stages.h): per-stage histograms, outlier counts
and the over-deadline records, read from the station or from an application channel.

A stage runs from one stamp to the next: the application's hand-over after the scheduled
time, the RT thread's pick-up at its slot, the TX hand-over, the receiver's XDP stamp, its
RT thread, the receiving application's take.  ``CAUSES`` names what a stage's lateness
means for a missed deadline.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._lowlevel import ffi, lib
from .errors import ConfigError
from .hist import Histogram

STAGES = ("app", "queue", "slot", "wire", "rx_rt", "take")
STAGE_TITLES = {
    "app": "scheduled -> hand-over (application)",
    "queue": "hand-over -> pick-up (RT thread at its slot)",
    "slot": "pick-up -> TX ring",
    "wire": "TX -> receiver's XDP stamp (two clocks)",
    "rx_rt": "XDP stamp -> receiver's RT thread",
    "take": "receiver's RT thread -> application",
}
# a missed deadline, by the stage that took the time
CAUSES = {
    "app": "application woke late",
    "queue": "RT thread woke late",
    "slot": "slot skipped",
    "wire": "wire",
    "rx_rt": "receiver late",
    "take": "receiver late",
}
DROPPED = "frame dropped"
assert len(STAGES) == lib.RTN_STAGE_N

_UNSTAMPED = -(1 << 63)


@dataclass(frozen=True)
class LateRecord:
    """One message over its deadline; times in ns."""

    seq: int
    stage: str | None  # the stage that took the time (None: no stage stamped)
    sched_ns: int
    total_ns: int
    excess_ns: int  # how far that stage ran above its running baseline
    stage_ns: dict  # every stamped stage's duration

    @property
    def cause(self) -> str:
        return CAUSES.get(self.stage, "unknown")

    def to_dict(self) -> dict:
        return {
            "seq": self.seq,
            "stage": self.stage,
            "cause": self.cause,
            "sched_ns": self.sched_ns,
            "total_us": self.total_ns / 1000,
            "excess_us": self.excess_ns / 1000,
            "stage_us": {k: v / 1000 for k, v in self.stage_ns.items()},
        }


def _record(r) -> LateRecord:
    stage = STAGES[r.stage] if 0 <= r.stage < len(STAGES) else None
    return LateRecord(
        r.seq,
        stage,
        r.sched_ns,
        r.total_ns,
        r.excess_ns,
        {STAGES[k]: r.stage_ns[k] for k in range(len(STAGES)) if r.stage_ns[k] != _UNSTAMPED},
    )


class LateReader:
    """Reads a live ``struct rtn_stages``' over-deadline records, each once, in order."""

    BATCH = 256

    def __init__(self, stages_ptr, start_now: bool = False):
        self._ptr = stages_ptr
        self._next = stages_ptr.late if start_now else 0
        self._buf = ffi.new("struct rtn_stage_late[]", self.BATCH)
        self._nxt = ffi.new("uint64_t *")

    def read(self) -> list[LateRecord]:
        out = []
        while True:
            got = lib.rtn_stages_late_read(self._ptr, self._next, self._buf, self.BATCH, self._nxt)
            out.extend(_record(self._buf[i]) for i in range(got))
            if self._nxt[0] == self._next:
                return out
            self._next = self._nxt[0]


def summary(stages_ptr, *, late: int | None = None) -> dict:
    """Histograms, outliers per stage and the newest ``late`` over-deadline records (None:
    every one kept)."""
    st = stages_ptr
    out = {
        "messages": int(st.msgs),
        "late": int(st.late),
        "outlier_us": st.outlier_ns / 1000,
        "deadline_us": st.deadline_ns / 1000,
        "stages": {
            name: {
                "title": STAGE_TITLES[name],
                "hist": Histogram.from_c(ffi.addressof(st.hist[k])),
                "outliers": int(st.outliers[k]),
            }
            for k, name in enumerate(STAGES)
        },
    }
    recs = LateReader(st).read() if late is None or late > 0 else []
    out["late_records"] = [r.to_dict() for r in recs[-late if late else 0 :]]
    return out


def check_thresholds(outlier_us: float | None, deadline_us: float | None) -> tuple[int, int]:
    """(outlier_ns, deadline_ns) for rtn_*_set_stages; None keeps one (0)."""
    vals = []
    for name, v in (("outlier", outlier_us), ("deadline", deadline_us)):
        if v is None:
            vals.append(0)
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 10_000_000:
            raise ConfigError(f"{name} {v!r} us: a number above 0, at most 10 s")
        vals.append(int(v * 1000))
    return vals[0], vals[1]


# ---- benchmark analysis: per-message stages and misses by cause ---------------------------

SAMPLE_STAMPS = ("sched_ns", "handover_ns", "pickup_ns", "tx_ns", "rx_ns", "rx_rt_ns", "app_ns")


def stage_breakdown_us(samples) -> dict:
    """p50/p99/p99.9/max (us) of each stage over a subscribe() array, stamped messages only."""
    import numpy as np

    out = {}
    for k, name in enumerate(STAGES):
        a, b = samples[SAMPLE_STAMPS[k]], samples[SAMPLE_STAMPS[k + 1]]
        d = (b - a)[(a != 0) & (b != 0)].astype(np.int64)
        if len(d):
            q = np.percentile(d, [50, 99, 99.9]) / 1000
            out[name] = {
                "n": int(len(d)),
                "p50": float(q[0]),
                "p99": float(q[1]),
                "p999": float(q[2]),
                "max": float(d.max()) / 1000,
            }
    return out


def attribute_misses(records: list, lost: int, stalls: list, slack_ns: int = 0) -> dict:
    """Misses by cause, each over-deadline record matched to the CPU stalls (gaps) and slow
    spells (rtnet.stall) overlapping its life (scheduled time to its last stamp, global time
    ~ CLOCK_MONOTONIC in the lab).  ``with_stall`` counts misses with a gap, ``in_slow``
    those with a slow spell and no gap: together, the misses the CPU explains."""
    by_cause: dict = {}
    listed = []
    for r in records:
        start, end = r.sched_ns - slack_ns, r.sched_ns + r.total_ns + slack_ns
        hit = [s for s in stalls if s.overlaps(start, end)]
        gaps = [s for s in hit if s.kind == "gap"]
        slow = [s for s in hit if s.kind == "slow"]
        c = by_cause.setdefault(
            r.cause, {"misses": 0, "with_stall": 0, "in_slow": 0, "excess_us": []}
        )
        c["misses"] += 1
        c["with_stall"] += bool(gaps)
        c["in_slow"] += bool(slow) and not gaps
        c["excess_us"].append(round(r.excess_ns / 1000, 1))
        listed.append(
            {
                **r.to_dict(),
                "stall_us": max((s.gap_ns for s in gaps), default=0) / 1000,
                "stall_cpus": sorted({s.cpu for s in gaps}),
                "slowdown": max((s.slowdown for s in slow), default=0.0),
                "slow_cpus": sorted({s.cpu for s in slow}),
            }
        )
    if lost:
        by_cause[DROPPED] = {
            "misses": int(lost),
            "with_stall": None,
            "in_slow": None,
            "excess_us": [],
        }
    return {"by_cause": by_cause, "misses": listed}


def cause_text(v: dict) -> str:
    """One cause's misses as the benchmarks print them: "14 (9 with a CPU stall, 3 in a
    slow spell)"."""
    if v["with_stall"] is None:
        return f"{v['misses']}"
    parts = [f"{v['with_stall']} with a CPU stall"]
    if v.get("in_slow"):
        parts.append(f"{v['in_slow']} in a slow spell")
    return f"{v['misses']} ({', '.join(parts)})"
