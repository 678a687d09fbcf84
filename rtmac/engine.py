"""Bridge between the Python TDMA configuration and the C engine's structs.

The C engine (csrc/rtn_tdma.c) takes ``struct rtn_tdma_cfg``; this module
builds it from a validated :class:`rtmac.tdma_config.TdmaConfig` and turns
the engine's counters back into plain Python values.
"""
from __future__ import annotations

import enum

from rtnet._lowlevel import ffi, lib
from rtnet.hist import Histogram
from rtnet.mac import format_mac

from .tdma_config import TdmaConfig, validate


class TdmaState(enum.StrEnum):
    """The engine's states (csrc/rtn_tdma_fsm.h); each compares equal to its display name."""
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
    def code(self) -> int:
        """The number the C engine uses (RTN_TDMA_ST_*)."""
        return getattr(lib, f"RTN_TDMA_ST_{self.name}")


STATES = {state.code: state for state in TdmaState}

COUNTERS = (
    "cycles", "sync_tx", "sync_rx", "sync_foreign", "sync_implausible", "sync_relocks",
    "sync_lost_events", "backup_takeovers",
    "cal_req_tx", "cal_req_rx", "cal_rpl_tx", "cal_rpl_rx", "cal_rpl_unexpected",
    "cal_overflow", "cal_rpl_late", "cal_implausible", "rx_bad", "rx_foreign_disc",
    "frames_tx", "bytes_tx", "queue_drops", "too_big", "no_slot", "missed_slots",
    "late_starts", "tx_errors", "config_applied", "cycles_skipped",
)
SLOT_COUNTERS = ("queue_depth", "occurrences", "frames", "bytes", "missed", "late_starts",
                 "deferred")


def to_c(config: TdmaConfig, *, listen_cycles: int = 3):
    """A ``struct rtn_tdma_cfg *`` for a validated ``config``."""
    config = validate(config)
    c = ffi.new("struct rtn_tdma_cfg *")
    role = lib.RTN_TDMA_ROLE_MASTER if config.role == "master" else lib.RTN_TDMA_ROLE_SLAVE
    lib.rtn_tdma_cfg_init(c, role)
    c.cycle_ns = (config.cycle_us or 0) * 1000
    c.backup_offset_ns = -1 if config.backup_offset_us is None else config.backup_offset_us * 1000
    c.cal_rounds = config.cal_rounds
    c.max_slot_id = config.max_slot_id
    c.max_cal_requests = config.max_cal_requests
    c.link_rate_mbps = config.link_rate_mbps
    c.guard_ns = config.guard_ns
    c.sync_loss_cycles = config.sync_loss_cycles
    c.listen_cycles = listen_cycles
    slots = sorted(config.slots.values(), key=lambda s: s.id)
    c.n_slots = len(slots)
    for i, s in enumerate(slots):
        cs = c.slots[i]
        cs.id = s.id
        cs.offset_ns = s.offset_us * 1000
        cs.phasing = s.phasing
        cs.period = s.period
        cs.size = s.size
        cs.joint = -1 if s.joint is None else s.joint
        cs.window_ns = s.window_us * 1000
    return c


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
            "rounds": st.cal_rounds, "done": st.cal_rounds_done,
            "delay_ns": st.master_delay_ns, "min_ns": st.cal_min_ns, "max_ns": st.cal_max_ns,
        },
        "master_mac": format_mac(st.master_mac),
    }
    for name in COUNTERS:
        out[name] = getattr(st, name)
    out["slots"] = {
        st.slot[i].id: {name: getattr(st.slot[i], name) for name in SLOT_COUNTERS}
        for i in range(lib.RTN_TDMA_MAX_SLOTS) if st.slot[i].id >= 0
    }
    out["slot_lateness"] = Histogram.from_c(ffi.addressof(st, "slot_lateness"))
    out["slot0_lateness"] = Histogram.from_c(ffi.addressof(st, "slot0_lateness"))
    out["sync_error"] = Histogram.from_c(ffi.addressof(st, "sync_error"))
    return out
