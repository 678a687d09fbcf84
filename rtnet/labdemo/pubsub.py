"""The demo's cyclic real-time publisher and its subscriber: the messages' end-to-end
latency and stages, and the accounting of each message sent (received, expired at the
publisher's station, or lost)."""

from __future__ import annotations

import threading
import time

import numpy as np

from rtnet.lab import Lab
from rtnet.stages import SAMPLE_STAMPS, stage_breakdown_us
from rtnet.vm_witness import VmWitness

from .segment import APP_ETHERTYPE
from .stations import station_status


class Subscriber(threading.Thread):
    """Receives the publisher's messages and keeps their end-to-end latency and sequence
    numbers, when each arrived (time.monotonic()), and each one's life (scheduled send,
    receipt; global time) for putting next to the VM's stalls."""

    def __init__(self, channel):
        super().__init__(name="demo-subscriber", daemon=True)
        self.channel = channel
        self.latency_ns: list[int] = []
        self.seqs: list[int] = []
        self.arrivals: list[float] = []
        self.lives: list[tuple[int, int]] = []
        self.stamps: list[tuple[int, ...]] = []  # each one's stamps, as stages.SAMPLE_STAMPS
        self.stop_event = threading.Event()

    def run(self):
        while not self.stop_event.is_set():
            msg = self.channel.recv(timeout=0.2)
            if msg is not None:
                self.latency_ns.append(msg.rx_ns - msg.sched_ns)
                self.seqs.append(msg.seq)
                self.arrivals.append(time.monotonic())
                self.lives.append((msg.sched_ns, msg.rx_ns))
                self.stamps.append(
                    (msg.sched_ns, msg.handover_ns, msg.pickup_ns, msg.tx_ns, msg.rx_ns)
                    + (msg.rx_rt_ns, msg.take_ns)
                )


def stages_p50(stamps) -> dict | None:
    """The median of each of the message's stages (rtnet.stages.STAGES) in us: a queue shows
    in the stage it is in, a clock that disagrees in "wire" (the one across two stations)."""
    if not stamps:
        return None
    samples = np.array(stamps, dtype=[(k, "<i8") for k in SAMPLE_STAMPS])
    return {k: v["p50"] for k, v in stage_breakdown_us(samples).items()}


def pct(values_ns, q) -> float:
    return float(np.percentile(np.asarray(values_ns, dtype=np.int64), q)) / 1000.0


def expired_of(status: dict, chan_id: int) -> int:
    """The messages of channel ``chan_id`` its station dropped past their lifetime: at
    pick-up (the channel's tx_expired) and in the queue of its slot (the slot's expired;
    in the demo only the publisher's messages have a lifetime)."""
    chan = next((c for c in status.get("channels", []) if c["id"] == chan_id), None)
    if chan is None:
        return 0
    slot = ((status.get("tdma") or {}).get("slots") or {}).get(str(chan["slot"])) or {}
    return chan.get("tx_expired", 0) + slot.get("expired", 0)


def stop_pubsub(task, sub: Subscriber, pub_ch, sub_ch, pub_st, before: dict) -> tuple[int, int]:
    """Stop the publisher, give its last messages (bounded) time to arrive or expire, and
    close both channels.  Returns the messages the publisher sent and how many of them its
    station dropped past their lifetime since status ``before`` (read while the channel is
    still open)."""
    pub_id = pub_ch.id
    sent = task.stop().sent
    try:
        deadline = time.monotonic() + 2.0
        while True:
            expired = expired_of(station_status(pub_st.netns), pub_id) - expired_of(before, pub_id)
            if len(set(sub.seqs)) + expired >= sent or time.monotonic() > deadline:
                return sent, expired
            time.sleep(0.05)  # the last messages are crossing the wire: poll, bounded
    finally:
        sub.stop_event.set()
        sub.join()
        pub_ch.close()
        sub_ch.close()


def missing_seqs(seqs) -> int:
    """Sequence numbers missing between the lowest and the highest received."""
    return (max(seqs) - min(seqs) + 1 - len(set(seqs))) if seqs else 0


def latency_summary(lat) -> dict | None:
    if not lat:
        return None
    return {k: pct(lat, q) for k, q in (("p50", 50), ("p99", 99), ("p99.9", 99.9))} | {
        "max": max(lat) / 1000.0
    }


def open_pubsub(lab: Lab, plan):
    """The subscriber on station 1, the publisher's cyclic task on the last station."""
    from rtnet.app import Channel
    from rtnet.cyclic import CyclicTask

    pub_st, sub_st = lab.stations[-1], lab.stations[0]
    sub_ch = Channel.open(netns=sub_st.netns, ethertype=APP_ETHERTYPE)
    try:
        # a cycle's message is stale once the next one is due (runs.py's note)
        pub_ch = Channel.open(
            netns=pub_st.netns, ethertype=APP_ETHERTYPE, lifetime_us=plan.cycle_us
        )
    except BaseException:
        sub_ch.close()
        raise
    sub = Subscriber(sub_ch)
    task = CyclicTask(
        pub_ch,
        sub_st.mac,
        payload_size=32,
        offset_us=max(0, plan.station(pub_st.index).rt.offset_us - 50),
        priority=70,
        allow_fallback=True,
    )
    return pub_st, sub_st, pub_ch, sub_ch, sub, task


def cycles_between(t0_s: float, t1_s: float, cycle_us: int) -> list[tuple[int, int]]:
    """The whole cycles from ``t0_s`` to ``t1_s`` (time.monotonic() seconds, the clock the
    stall detector keeps) as (start_ns, end_ns) spans, for VmWitness.lives()."""
    cycle = cycle_us * 1000
    start, end = int(t0_s * 1e9), int(t1_s * 1e9)
    return [(t, t + cycle) for t in range(start, end - cycle + 1, cycle)]


def late_messages(sub: Subscriber, plan, witness: VmWitness) -> dict:
    """The messages that took longer than a cycle, and of them those the VM's stalls
    explain: a stall in the cycle after the message's scheduled time, when it was to go
    out.  A message that waited longer behind others in a queue is not explained by a
    stall that merely fell somewhere in its long life."""
    cycle = plan.cycle_us * 1000
    late = [(t0, t0 + cycle) for t0, t1 in sub.lives if t1 - t0 > cycle]
    return {"over_a_cycle": len(late), "over_a_cycle_in_vm_stalls": witness.lives(late)}


def late_said(summary: dict) -> str:
    n, vm = summary["over_a_cycle"], summary["over_a_cycle_in_vm_stalls"]
    if not n:
        return "; none took longer than a cycle"
    return f"; {n} took longer than a cycle" + (
        f", {vm} of them in VM stalls" if vm is not None else ""
    )
