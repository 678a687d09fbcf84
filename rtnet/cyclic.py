"""Cyclic tasks on a channel (csrc/app/rtn_cyclic.c), driven from Python.

Python cannot run on the real-time thread, so the task is the built-in C
publisher: one timestamped message per TDMA cycle at ``offset_us`` after the
cycle start.  ``subscribe`` collects messages in C into an array of
(seq, len, sched_ns, tx_ns, rx_ns, app_ns) and ``latencies_ns`` turns it
into latency arrays (rx_ns: the station received the frame; app_ns: the
subscriber took it, both in global time).  ``standard=True`` runs the baseline a benchmark compares
against: SCHED_OTHER, relative sleeps every ``interval_us`` from the task's
start, ignoring the cycle.  ``interval_us`` without ``standard`` runs the
real-time task on its own absolute grid of that period (whole multiples of
it on the shared clock, plus ``offset_us``): a real-time task where no TDMA
cycle is published, e.g. under NoMAC.

``handover_us`` instead of ``offset_us`` says when in the cycle the message
must be handed over (the sending slot); the task then wakes ``lead_us``
before it.  Without ``lead_us`` the lead is automatic (csrc/core/rtn_lead.h):
it starts at a quarter of the cycle and follows p99.9 of what the task's
own runs needed from wake-up to hand-over, plus 20 us, rising at once and
falling slowly; CyclicStats reports the lead in force.
"""

from __future__ import annotations

import errno
import socket
from dataclasses import dataclass

import numpy as np

from ._lowlevel import check, ffi, lib
from .app_limits import MAX_PAYLOAD
from .errors import ChannelError, ConfigError
from .hist import Histogram
from .mac import parse_mac
from .rtthread import fill_rt_opts

SAMPLE_DTYPE = np.dtype(
    [
        ("seq", "<u4"),
        ("len", "<u4"),
        ("sched_ns", "<i8"),
        ("tx_ns", "<i8"),
        ("rx_ns", "<i8"),
        ("app_ns", "<i8"),
        ("handover_ns", "<i8"),
        ("pickup_ns", "<i8"),
        ("rx_rt_ns", "<i8"),
    ]
)
assert SAMPLE_DTYPE.itemsize == ffi.sizeof("struct rtn_app_sample")

_POLICY = {lib.RTN_RT_POLICY_FIFO: "SCHED_FIFO", lib.RTN_RT_POLICY_OTHER: "SCHED_OTHER"}


@dataclass(frozen=True)
class CyclicStats:
    mode: str  # "rt" or "standard"
    policy: str
    priority: int
    cpu: int | None
    memory_locked: bool
    running: bool
    rc: int  # the loop's result (0, or a negative errno)
    runs: int
    missed: int
    interval_ns: int
    handover_ns: int | None  # None: the task wakes at its offset
    lead_ns: int  # the hand-over lead in force
    lead_auto: bool
    lead_updates: int
    lead_late: int  # hand-overs after the lead in force had run out
    lead_beyond: int  # runs that needed more than half a cycle: stalls
    lead_need_max_ns: int
    sent: int
    refused: int  # TX ring full
    histogram: Histogram  # lateness of each wake-up

    def summary_us(self) -> dict:
        return self.histogram.summary_us()


class CyclicTask:
    """The built-in publisher running on ``channel``; start() it or use publish_cyclic()."""

    def __init__(
        self,
        channel,
        dst,
        *,
        payload_size: int = 0,
        offset_us: float = 0,
        cycles: int = 0,
        standard: bool = False,
        interval_us: float | None = None,
        cpu: int | None = None,
        priority: int = 80,
        allow_fallback: bool = False,
        hold_dma_latency: bool = True,
        first_cycle_timeout: float = 2.0,
        handover_us: float | None = None,
        lead_us: float | None = None,
        lead_start_us: float | None = None,
    ):
        if not isinstance(payload_size, int) or not 0 <= payload_size <= MAX_PAYLOAD:
            raise ConfigError(f"payload_size {payload_size!r}: 0..{MAX_PAYLOAD}")
        if not isinstance(cycles, int) or cycles < 0:
            raise ConfigError(f"cycles {cycles!r}: an integer >= 0 (0: until stopped)")
        if offset_us < 0:
            raise ConfigError(f"offset_us {offset_us}: must not be negative")
        if interval_us is not None and interval_us <= 0:
            raise ConfigError(f"interval_us {interval_us}: must be positive")
        if first_cycle_timeout <= 0:
            raise ConfigError(f"first_cycle_timeout {first_cycle_timeout}: must be positive")
        _check_handover(channel, handover_us, lead_us, standard or interval_us is not None)
        self.channel = channel
        self._opts = ffi.new("struct rtn_cyclic_opts *")
        lib.rtn_cyclic_opts_init(self._opts)
        fill_rt_opts(
            ffi.addressof(self._opts, "rt"),
            cpu=cpu,
            priority=priority,
            allow_fallback=allow_fallback,
            hold_dma_latency=hold_dma_latency,
        )
        self._opts.offset_ns = int(offset_us * 1000)
        self._opts.cycles = cycles
        self._opts.mode = lib.RTN_CYCLIC_MODE_STANDARD if standard else lib.RTN_CYCLIC_MODE_RT
        self._opts.interval_ns = int(interval_us * 1000) if interval_us else 0
        self._opts.first_cycle_timeout_ns = int(first_cycle_timeout * 1e9)
        if handover_us is not None:
            self._opts.handover_ns = int(handover_us * 1000)
            self._opts.lead_ns = int(lead_us * 1000) if lead_us else 0
            self._opts.lead_start_ns = int(lead_start_us * 1000) if lead_start_us else 0
        self._pub = ffi.new("struct rtn_cyclic_pub *")
        if isinstance(dst, tuple):  # (ip, port): the channel is a UDP socket's
            try:
                ip, port = dst
                self._pub.dst_ip = int.from_bytes(socket.inet_aton(ip), "big")
            except (TypeError, ValueError, OSError):
                raise ConfigError(f"destination {dst!r}: (IPv4, port) or a MAC") from None
            if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 0xFFFF:
                raise ConfigError(f"UDP port {port!r}: must be 1..65535")
            self._pub.dst_port = port
        else:
            self._pub.dst = parse_mac(dst)
        self._pub.payload_len = payload_size
        self._c = None
        self._final: CyclicStats | None = None

    def start(self) -> "CyclicTask":
        if self._c is not None:
            return self
        self._pub.ch = self.channel._live()
        out = ffi.new("struct rtn_cyclic **")
        check(
            lib.rtn_cyclic_start(
                self._pub.ch, self._opts, lib.rtn_cyclic_publisher_fn(), self._pub, out
            ),
            ChannelError,
            "cyclic task",
        )
        self._c = out[0]
        self._final = None
        self.channel._tasks.add(self)
        return self

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the task ends by itself (its cycles are done); False on timeout."""
        if self._c is None:
            return True
        t = -1 if timeout is None else int(timeout * 1e9)
        return lib.rtn_cyclic_wait(self._c, t) == 0

    def _convert(self, st) -> CyclicStats:
        return CyclicStats(
            "standard" if st.mode == lib.RTN_CYCLIC_MODE_STANDARD else "rt",
            _POLICY.get(st.policy, "SCHED_OTHER"),
            st.priority,
            None if st.cpu < 0 else st.cpu,
            bool(st.memory_locked),
            bool(st.running),
            st.rc,
            st.runs,
            st.missed,
            st.interval_ns,
            None if st.handover_ns < 0 else st.handover_ns,
            st.lead_ns,
            bool(st.lead_auto),
            st.lead_updates,
            st.lead_late,
            st.lead_beyond,
            st.lead_need_max_ns,
            self._pub.sent,
            self._pub.refused,
            Histogram.from_c(ffi.addressof(st, "hist")),
        )

    def stats(self) -> CyclicStats:
        if self._c is None:
            if self._final is None:
                raise ChannelError(errno.ESRCH, "cyclic task was never started")
            return self._final
        st = ffi.new("struct rtn_cyclic_stats *")
        lib.rtn_cyclic_read_stats(self._c, st)
        return self._convert(st)

    def stop(self) -> CyclicStats:
        """Stop and join the task; raises if it ended with an error.  Idempotent."""
        if self._c is not None:
            st = ffi.new("struct rtn_cyclic_stats *")
            lib.rtn_cyclic_stop(self._c, st)
            self._c = None
            self._final = self._convert(st)
            self.channel._tasks.discard(self)
            if st.rc < 0:
                check(st.rc, ChannelError, "cyclic task")
        if self._final is None:
            raise ChannelError(errno.ESRCH, "cyclic task was never started")
        return self._final

    def __enter__(self) -> "CyclicTask":
        return self.start()

    def __exit__(self, *exc) -> None:
        if self._c is not None:
            self.stop()


def _check_handover(channel, handover_us, lead_us, own_grid: bool) -> None:
    """A hand-over deadline and lead that cannot be met are refused here, in one line,
    before the task's thread starts (the C loop refuses them too, with -ERANGE)."""
    if handover_us is None:
        if lead_us is not None:
            raise ConfigError("lead_us needs handover_us (the slot to hand over for)")
        return
    if own_grid:
        raise ConfigError(
            "handover_us needs the real-time task on the TDMA cycle "
            "(not standard=True or interval_us)"
        )
    if handover_us < 0 or (lead_us is not None and lead_us <= 0):
        raise ConfigError(
            f"handover_us {handover_us} must not be negative and lead_us "
            f"{lead_us} must be positive (None: automatic)"
        )
    # a channel opened a moment ago has seen no cycle start yet: the next one tells the
    # cycle (the task waits for cycles anyway); with none in a second the station is not
    # on a cycle yet, and the C loop checks once it is
    info = channel.cycle_info() or channel.wait_cycle(timeout=1.0)
    cycle_us = info.cycle_ns / 1000 if info is not None and info.cycle_ns > 0 else None
    if cycle_us is not None and (handover_us >= cycle_us or (lead_us or 0) >= cycle_us):
        raise ConfigError(
            f"a lead of {lead_us} us before a hand-over at {handover_us} us "
            f"cannot be met in the {cycle_us:g} us cycle"
        )


def publish_cyclic(channel, dst, count: int = 0, **kw) -> CyclicTask:
    """Start the C publisher: ``count`` messages (0: until stop()), one per cycle."""
    return CyclicTask(channel, dst, cycles=count, **kw).start()


def subscribe(channel, count: int, idle_timeout: float = 1.0) -> np.ndarray:
    """Receive up to ``count`` messages in C; stops after ``idle_timeout`` s without one.

    Returns a structured array with fields seq, len, sched_ns, tx_ns, rx_ns, app_ns and
    the other stage stamps handover_ns, pickup_ns, rx_rt_ns (csrc/core/rtn_app_hdr.h).
    """
    if not isinstance(count, int) or count <= 0:
        raise ConfigError(f"count {count!r}: a positive integer")
    if idle_timeout <= 0:
        raise ConfigError(f"idle_timeout {idle_timeout}: must be positive")
    arr = np.zeros(count, dtype=SAMPLE_DTYPE)
    ptr = ffi.from_buffer("struct rtn_app_sample[]", arr, require_writable=True)
    n = check(
        lib.rtn_app_subscribe(channel._live(), ptr, count, int(idle_timeout * 1e9)),
        ChannelError,
        "subscribe",
    )
    return arr[:n].copy()


def latencies_ns(samples: np.ndarray) -> dict:
    """Per-message latencies in ns: scheduled -> transmitted -> received -> taken by the
    application (global time); sched_to_app is the true end-to-end latency."""
    s = samples
    return {
        "sched_to_tx": s["tx_ns"] - s["sched_ns"],
        "tx_to_rx": s["rx_ns"] - s["tx_ns"],
        "sched_to_rx": s["rx_ns"] - s["sched_ns"],
        "rx_to_app": s["app_ns"] - s["rx_ns"],
        "sched_to_app": s["app_ns"] - s["sched_ns"],
    }
