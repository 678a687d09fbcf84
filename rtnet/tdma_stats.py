"""The TDMA engine's state and counters as plain Python values.

The station reports what its engine (csrc/tdma/rtn_tdma*.c) counts in a
``struct rtn_tdma_stats``; this decodes it.  It sits in the foundation
because the station wrapper returns it; rtmac re-exports it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ._lowlevel import ffi, lib
from .hist import Histogram
from .mac import format_mac

# The engine's state numbers, from the C enum itself (enum rtn_tdma_state in
# csrc/tdma/rtn_tdma_fsm.h): DOWN = 0, LISTEN = 1, ...
TdmaStateCode = enum.IntEnum(
    "TdmaStateCode",
    {
        name.removeprefix("RTN_TDMA_ST_"): value
        for value, name in sorted(ffi.typeof("enum rtn_tdma_state").elements.items())
    },
)


class TdmaState(enum.StrEnum):
    """The engine's states (csrc/tdma/rtn_tdma_fsm.h); each compares equal to its display name."""

    DOWN = "down"
    LISTEN = "listening"
    WAIT_SYNC = "waiting for sync"
    CALIBRATING = "calibrating"
    SYNCED = "synchronised"
    MASTER = "active"
    BACKUP_STANDBY = "stand-by"
    BACKUP_ACTIVE = "active (backup)"
    SYNC_LOST = "sync lost"

    @property
    def code(self) -> TdmaStateCode:
        """The number the C engine uses (enum rtn_tdma_state)."""
        return TdmaStateCode[self.name]


# state number -> display state; every number of the C enum has one
STATES = {state.code: state for state in TdmaState}
assert set(STATES) == set(TdmaStateCode), "TdmaState and enum rtn_tdma_state differ"

COUNTERS = (
    "cycles",
    "sync_tx",
    "sync_rx",
    "sync_foreign",
    "sync_implausible",
    "sync_learning",
    "sync_relocks",
    "sync_lost_events",
    "backup_takeovers",
    "cal_req_tx",
    "cal_req_rx",
    "cal_rpl_tx",
    "cal_rpl_rx",
    "cal_rpl_unexpected",
    "cal_overflow",
    "cal_rpl_late",
    "cal_implausible",
    "rx_bad",
    "rx_foreign_disc",
    "frames_tx",
    "bytes_tx",
    "queue_drops",
    "too_big",
    "no_slot",
    "missed_slots",
    "late_starts",
    "tx_errors",
    "config_applied",
    "cycles_skipped",
)
SLOT_COUNTERS = (
    "queue_depth",
    "occurrences",
    "frames",
    "bytes",
    "missed",
    "late_starts",
    "deferred",
    "expired",
)


def stats_from_c(st) -> dict:
    """Plain-Python view of a ``struct rtn_tdma_stats`` snapshot."""
    out = {
        "role": {1: "master", 2: "slave"}.get(st.role, "none"),
        "backup": bool(st.backup),
        "state": STATES.get(st.state, str(st.state)),
        "cycle_no": st.cycle_no,
        "cycle_ns": st.cycle_ns,
        "clock_offset_ns": st.clock_offset,
        "calibration": {
            "rounds": st.cal_rounds,
            "done": st.cal_rounds_done,
            "delay_ns": st.master_delay_ns,
            "min_ns": st.cal_min_ns,
            "max_ns": st.cal_max_ns,
        },
        "master_mac": format_mac(st.master_mac),
    }
    for name in COUNTERS:
        out[name] = getattr(st, name)
    out["slots"] = {
        st.slot[i].id: {name: getattr(st.slot[i], name) for name in SLOT_COUNTERS}
        for i in range(lib.RTN_TDMA_MAX_SLOTS)
        if st.slot[i].id >= 0
    }
    out["slot_lateness"] = Histogram.from_c(ffi.addressof(st, "slot_lateness"))
    out["slot0_lateness"] = Histogram.from_c(ffi.addressof(st, "slot0_lateness"))
    out["sync_error"] = Histogram.from_c(ffi.addressof(st, "sync_error"))
    out["sync_delay"] = Histogram.from_c(ffi.addressof(st, "sync_delay"))
    return out


@dataclass(frozen=True)
class SlotMiss:
    """Slot occurrences the engine found missed at one wake-up of the RT thread
    (``struct rtn_miss_rec``): at ``at_ns`` (CLOCK_MONOTONIC, the stall detector's clock),
    after a wake-up ``woke_late_ns`` late; ``slots`` of every slot, ``slot0`` of them slot
    0's (RTnet's real-time slot)."""

    at_ns: int
    woke_late_ns: int
    slots: int
    slot0: int

    @classmethod
    def from_c(cls, r) -> SlotMiss:
        return cls(int(r.at_ns), int(r.woke_late_ns), int(r.slots), int(r.slot0))
