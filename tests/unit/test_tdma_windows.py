"""Transmit windows on the simulated segment: a slot that owns a stretch of wire time
and fills it with as many frames as fit, from one wake-up.

A slot without a window keeps RTnet's meaning (one full frame plus the guard),
which the other engine tests cover."""

import struct

import pytest

from rtmac.tdma_config import Slot, TdmaConfig, validate, wire_time_ns
from rtmac.testing.sim import Segment
from rtnet.errors import ConfigError
from rtnet.tdma_stats import TdmaState

CYCLE_NS = 1_000_000
ETH_DATA = 0x88B5
FULL = 1514  # a full frame of a 1500-byte slot
WT_FULL = wire_time_ns(FULL, 100)  # 123.04 us at 100 Mbit/s


def frame(seq, size=FULL, prio_tag=0):
    return (
        b"\xff" * 6 + bytes([2, 0x52, 0x54, 0, 0, 2]) + struct.pack("!HII", ETH_DATA, prio_tag, seq)
    ).ljust(size, b"\0")


def master():
    return TdmaConfig(role="master", cycle_us=1000, slots={0: Slot(0, 0, size=200)})


def segment(slave_slots, **slave_kw):
    seg = Segment(2, latency_ns=5000, wake_jitter_ns=3000)
    seg.start(0, master())
    seg.run_for(100_000)
    seg.start(1, TdmaConfig(role="slave", cal_rounds=5, slots=slave_slots, **slave_kw))
    seg.set_lazy_begin(1, True)
    seg.run_for(60 * CYCLE_NS)
    assert seg.stats(1)["state"] == TdmaState.SYNCED
    return seg


def data_at_master(seg):
    out = []
    for r in seg.received(0):
        if struct.unpack("!H", r.head[12:14])[0] == ETH_DATA:
            tag, seq = struct.unpack("!II", r.head[14:22])
            out.append((r.tx_true, r.length, tag, seq))
    return out


def test_a_window_sends_every_frame_that_fits_and_no_more():
    window_us = 700
    seg = segment({1: Slot(1, 250, window_us=window_us)})
    seg.clear_logs()
    for k in range(100):
        assert seg.enqueue(1, 1, frame(k)) == 0
    seg.run_for(5 * CYCLE_NS)
    per_cycle = {}
    for tx, length, _tag, _seq in data_at_master(seg):
        per_cycle.setdefault(tx // CYCLE_NS, []).append(length)
    fits = window_us * 1000 // WT_FULL  # 5 full frames in 700 us
    assert sorted(set(len(v) for v in per_cycle.values())) == [fits]
    for lengths in per_cycle.values():
        assert sum(wire_time_ns(n, 100) for n in lengths) <= window_us * 1000
    st = seg.stats(1)
    assert st["slots"][1]["deferred"] >= 5 and st["slots"][1]["missed"] == 0


def test_one_wakeup_serves_a_whole_window_and_a_chained_window_costs_none():
    rt_end_us = 400 + -(-(wire_time_ns(214, 100) + 50_000) // 1000)
    # RT slot 0 at 400 us, then the window right where slot 0's time ends
    chained = {0: Slot(0, 400, size=200), 1: Slot(1, rt_end_us, window_us=450)}
    apart = {0: Slot(0, 400, size=200), 1: Slot(1, rt_end_us + 20, window_us=430)}
    wake = {}
    for name, slots in (("chained", chained), ("apart", apart)):
        seg = segment(slots)
        for k in range(2000):
            seg.enqueue(1, 1, frame(k))
            if k % 4 == 0:
                seg.enqueue(1, 0, frame(k, size=64))
            if seg.stats(1)["slots"][1]["queue_depth"] > 200:
                seg.run_for(CYCLE_NS)
        w0, c0 = seg.wakeups(1), seg.stats(1)["cycles"]
        for k in range(100):
            for j in range(4):
                seg.enqueue(1, 1, frame(j))
            seg.run_for(CYCLE_NS)
        wake[name] = (seg.wakeups(1) - w0) / (seg.stats(1)["cycles"] - c0)
        assert seg.stats(1)["slots"][1]["frames"] > 0
    assert wake["chained"] <= 1.2  # the RT slot's wake-up serves the window
    assert wake["apart"] <= 2.2  # one for the RT slot, one for the window


def test_a_frame_that_would_end_past_the_window_waits_for_the_next_occurrence():
    # exactly two full frames fit
    window_us = -(-2 * WT_FULL // 1000)
    seg = segment({1: Slot(1, 250, window_us=window_us)})
    seg.clear_logs()
    for k in range(3):
        seg.enqueue(1, 1, frame(k))
    seg.run_for(CYCLE_NS)
    seqs = [seq for _tx, _n, _t, seq in data_at_master(seg)]
    assert seqs[:2] == [0, 1] and len(seqs) in (2, 3)
    seg.run_for(CYCLE_NS)
    assert [seq for _tx, _n, _t, seq in data_at_master(seg)] == [0, 1, 2]


def test_rt_frames_go_before_bulk_frames_queued_in_the_same_window():
    seg = segment({1: Slot(1, 250, window_us=700)})
    seg.clear_logs()
    for k in range(10):
        seg.enqueue(1, 1, frame(k, prio_tag=31), prio=31)
    for k in range(3):
        seg.enqueue(1, 1, frame(100 + k, size=128, prio_tag=0), prio=0)
    seg.run_for(CYCLE_NS)
    tags = [tag for _tx, _n, tag, _s in data_at_master(seg)]
    assert tags[:3] == [0, 0, 0] and set(tags[3:]) == {31}


@pytest.mark.parametrize(
    "slots, message",
    [
        ({1: Slot(1, 100, window_us=100)}, "shorter than one 1514-byte frame"),
        ({1: Slot(1, 500, window_us=600)}, "past the 1000 us cycle"),
        # into the RT slot's frame, and into another window
        ({0: Slot(0, 100, size=200), 1: Slot(1, 110, window_us=300)}, "overlap"),
        ({1: Slot(1, 100, window_us=300), 2: Slot(2, 399, window_us=300)}, "overlap"),
    ],
)
def test_windows_that_do_not_fit_are_refused_by_both_validators(slots, message):
    cfg = TdmaConfig(role="master", cycle_us=1000, slots=slots)
    with pytest.raises(ConfigError, match=message):
        validate(cfg)
    seg = Segment(1)
    import dataclasses

    from rtmac.engine import to_c
    from rtnet._lowlevel import lib
    from rtnet.errors import RtnetError

    # the C engine's own check, bypassing the Python one
    raw = to_c(dataclasses.replace(cfg, slots={}))
    for i, s in enumerate(sorted(slots.values(), key=lambda s: s.id)):
        cs = raw.slots[i]
        cs.id, cs.offset_ns, cs.phasing, cs.period = s.id, s.offset_us * 1000, 1, 1
        cs.size, cs.joint, cs.window_ns = s.size, -1, s.window_us * 1000
    raw.n_slots = len(slots)
    assert lib.rtn_tdma_cfg_check(raw) < 0
    del seg, RtnetError


def test_a_window_may_start_in_the_guard_of_the_stations_own_rt_slot():
    """The planner's layout: the NRT window right after the RT slot's frame."""
    frame_end_us = 100 + -(-wire_time_ns(214, 100) // 1000)
    cfg = TdmaConfig(
        role="master",
        cycle_us=1000,
        slots={0: Slot(0, 100, size=200), 1: Slot(1, frame_end_us, window_us=300)},
    )
    assert validate(cfg) is cfg
    seg = segment(cfg.slots)
    seg.clear_logs()
    seg.enqueue(1, 0, frame(1, size=200, prio_tag=7))
    for k in range(3):
        seg.enqueue(1, 1, frame(10 + k))
    seg.run_for(CYCLE_NS)
    got = data_at_master(seg)
    assert [tag for _tx, _n, tag, _s in got][:1] == [7]  # the RT frame first
    assert len(got) == 1 + 300_000 // WT_FULL
