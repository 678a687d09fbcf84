"""A deterministic TDMA segment on a virtual clock (csrc/bench/rtn_tdma_sim.c).

The engine that runs on the real-time thread runs here against a simulated
wire, so the protocol can be tested exactly, without root and in
milliseconds of real time.  Station indexes start at 0.
"""

from __future__ import annotations

from dataclasses import dataclass

from rtmac.engine import stats_from_c, to_c
from rtmac.tdma_config import TdmaConfig
from rtnet._benchlib import check, ffi, lib


@dataclass(frozen=True)
class Received:
    tx_true: int
    rx_true: int
    src: int
    length: int
    head: bytes


class Segment:
    def __init__(
        self, stations: int, *, latency_ns=5000, wake_jitter_ns=0, seed=1, log_capacity=200000
    ):
        out = ffi.new("struct rtn_sim **")
        check(lib.rtn_sim_create(stations, latency_ns, wake_jitter_ns, seed, log_capacity, out))
        self._s = ffi.gc(out[0], lib.rtn_sim_destroy)
        self.n = stations
        self._cap = log_capacity

    def start(self, i: int, config: TdmaConfig, *, offset_ns=0, drift_ppm=0.0) -> None:
        check(lib.rtn_sim_start(self._s, i, to_c(config), offset_ns, drift_ppm))

    def set_config(self, i: int, config: TdmaConfig) -> None:
        check(lib.rtn_sim_set_config(self._s, i, to_c(config)))

    def set_alive(self, i: int, alive: bool) -> None:
        lib.rtn_sim_set_alive(self._s, i, int(alive))

    def set_lazy_begin(self, i: int, on: bool) -> None:
        """Start station ``i``'s cycles at their first job (as a station without applications)."""
        lib.rtn_sim_set_lazy_begin(self._s, i, int(on))

    def stall_frames(self, i: int, frames: int, stall_ns: int) -> None:
        """The next ``frames`` frames of station ``i`` leave ``stall_ns`` after their stamp."""
        lib.rtn_sim_stall_frames(self._s, i, frames, stall_ns)

    def stall_handover(self, i: int, frames: int, stall_ns: int) -> None:
        """The next ``frames`` frames of station ``i`` are handed over ``stall_ns`` after its
        engine decided to send them; one whose slot has passed by then is not sent."""
        lib.rtn_sim_stall_handover(self._s, i, frames, stall_ns)

    def wakeups(self, i: int) -> int:
        """How many times station ``i``'s engine ran: its thread's wake-ups."""
        return lib.rtn_sim_wakeups(self._s, i)

    def kick_cost(self, i: int, kick_ns: int) -> None:
        """Every run of station ``i`` that sends ends in a kick that keeps its thread
        ``kick_ns``: a copy-mode socket's send() carrying the frames through a veth lab."""
        lib.rtn_sim_kick_cost(self._s, i, kick_ns)

    def enqueue(
        self, i: int, slot: int, frame: bytes, prio: int = 15, stamp_at: int = -1, expires: int = 0
    ) -> int:
        """Queue a frame (its transmit stamp, 8 bytes big-endian, at ``stamp_at`` if that is
        0 or more; not on the wire after true time ``expires`` if that is set); returns 0 or
        the negative errno the engine gave (and counted)."""
        return lib.rtn_sim_enqueue(self._s, i, slot, prio, frame, len(frame), stamp_at, expires)

    def tail(self, i: int, frame: bytes, count: int) -> None:
        """Give station ``i`` ``count`` copies of ``frame`` to send last, from outside its
        queues (the engine's port tail, as a VNIC's ring)."""
        check(lib.rtn_sim_tail(self._s, i, frame, len(frame), count))

    def tail_stats(self, i: int) -> tuple[int, int]:
        """(tail frames sent, port calls out of turn) of station ``i``."""
        sent, bad = ffi.new("uint64_t *"), ffi.new("uint64_t *")
        lib.rtn_sim_tail_stats(self._s, i, sent, bad)
        return sent[0], bad[0]

    @property
    def now(self) -> int:
        return lib.rtn_sim_now(self._s)

    def run_for(self, ns: int) -> None:
        lib.rtn_sim_run_until(self._s, self.now + ns)

    def stats(self, i: int) -> dict:
        st = ffi.new("struct rtn_tdma_stats *")
        lib.rtn_sim_stats(self._s, i, st)
        return stats_from_c(st)

    def received(self, i: int) -> list[Received]:
        buf = ffi.new("struct rtn_sim_rx[]", self._cap)
        n = lib.rtn_sim_rx_log(self._s, i, buf, self._cap)
        return [
            Received(
                r.tx_true,
                r.rx_true,
                r.src,
                r.len,
                bytes(ffi.buffer(r.head, min(r.len, lib.RTN_SIM_HEAD))),
            )
            for r in buf[0:n]
        ]

    def inject(self, i: int, frame: bytes, *, age_ns: int = 0) -> int:
        """Hand a frame to station ``i`` now, stamped as received ``age_ns`` ago (it
        waited in the receive ring); returns the engine's verdict."""
        return lib.rtn_sim_inject_aged(self._s, i, frame, len(frame), age_ns)

    def clear_logs(self) -> None:
        lib.rtn_sim_clear_logs(self._s)
