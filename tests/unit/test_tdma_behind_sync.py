"""A master's slot right behind its own Sync, on the simulated segment, where a run that
sends ends in a kick that keeps the thread (a copy-mode socket's send() carrying the frames
through a veth lab's whole wire inline).  The slot runs in the Sync's run, its frames go
in the Sync's kick, and the wire takes them at the slot's start: neither missed nor
stamped before the slot, however long the kick."""

import math
import struct

from rtmac.tdma_config import DEFAULT_GUARD_NS, Slot, TdmaConfig, wire_time_ns
from rtmac.testing.sim import Segment
from rtnet.tdma_stats import TdmaState

CYCLE_NS = 1_000_000
SYNC_WIRE_NS = wire_time_ns(60, 100)
SLOT_US = math.ceil(SYNC_WIRE_NS / 1000)  # the planner's offset: the Sync's wire time, rounded up
KICK_NS = DEFAULT_GUARD_NS + 30_000  # longer than the slot tolerates
ETH_DATA = 0x88B5
STAMP_AT = 14
FRAMES = 20
SIZE = 200
FRAME_WIRE_NS = wire_time_ns(SIZE + 14, 100)
SLOT_LEN_NS = FRAME_WIRE_NS + DEFAULT_GUARD_NS  # RTnet's slot: a full frame and the guard


def data_frame(seq: int) -> bytes:
    head = b"\xff" * 6 + bytes([2, 0, 0, 0, 0, 1]) + struct.pack("!H", ETH_DATA)
    return (head + bytes(8) + struct.pack("!I", seq)).ljust(SIZE + 14, b"\0")


def synced_pair(master_slots, kick_ns):
    seg = Segment(2, latency_ns=5000)  # no wake jitter: every run on time, as woken early
    seg.start(0, TdmaConfig(role="master", cycle_us=1000, slots=master_slots))
    seg.kick_cost(0, kick_ns)
    seg.run_for(100_000)
    seg.start(1, TdmaConfig(role="slave", cal_rounds=5, slots={1: Slot(1, 500)}))
    seg.run_for(60 * CYCLE_NS)
    assert seg.stats(1)["state"] == TdmaState.SYNCED
    return seg


def test_the_slot_behind_the_sync_goes_in_the_syncs_kick_on_time():
    seg = synced_pair({0: Slot(0, SLOT_US, size=SIZE)}, KICK_NS)
    before = seg.stats(0)
    for k in range(FRAMES):
        assert seg.enqueue(0, 0, data_frame(k), stamp_at=STAMP_AT) == 0
    seg.run_for((FRAMES + 5) * CYCLE_NS)
    st = seg.stats(0)
    slot = st["slots"][0]
    assert slot["frames"] - before["slots"][0]["frames"] == FRAMES
    assert slot["missed"] == before["slots"][0]["missed"]

    for start, r, first in behind_syncs(seg.received(1)):
        # the first on the wire right behind the Sync (the slot's offset is rounded up),
        # each inside the slot
        assert r.tx_true - start == SYNC_WIRE_NS if first else r.tx_true - start > SYNC_WIRE_NS
        assert r.tx_true - start + FRAME_WIRE_NS <= SLOT_US * 1000 + SLOT_LEN_NS
        stamp = struct.unpack("!q", r.head[STAMP_AT : STAMP_AT + 8])[0]
        assert stamp - start >= SLOT_US * 1000, (start, stamp)
        assert stamp - start < SLOT_US * 1000 + DEFAULT_GUARD_NS


def test_a_slot_the_sync_does_not_reach_waits_for_its_own_time():
    # 200 us behind the Sync: the wire is free by then, so the slot keeps its own run
    seg = synced_pair({0: Slot(0, 200, size=SIZE)}, KICK_NS)
    for k in range(FRAMES):
        assert seg.enqueue(0, 0, data_frame(k), stamp_at=STAMP_AT) == 0
    seg.run_for((FRAMES + 5) * CYCLE_NS)
    for start, r, first in behind_syncs(seg.received(1)):
        assert r.tx_true - start == 200_000 if first else r.tx_true - start > 200_000


def behind_syncs(rx):
    """(cycle start, frame, first in its cycle) of each data frame the master sent: the
    cycle start is its Sync's wire time (the master's clock is true time); all FRAMES are
    there, as many a cycle as fit in the slot."""
    out, start, first = [], None, False
    for r in rx:
        if r.head[12:14] == b"\x90\x21":
            start, first = r.tx_true, True
        elif r.head[12:14] == struct.pack("!H", ETH_DATA) and start is not None:
            out.append((start, r, first))
            first = False
    assert len(out) == FRAMES
    return out
