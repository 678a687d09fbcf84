"""The NoMAC rate generator and transmit path at high frame rates.

- Frames go to the TX ring in batches: at 100,000 frames/s one sendto() and one
  wake-up of the RT thread carry many frames, not one each.
- The link model still holds: offered twice the modelled 100 Mbit/s, no more
  frames are handed over than the link carries in the time plus the model's
  hand-over horizon; the rest wait in the generator (the tester) behind their
  schedule, and past the backlog bound the caller gave are counted as drops.
"""

import pytest
from conftest import wait_for

from rtnet._lowlevel import lib
from rtnet.lab import Lab
from rtnet.station import RtSettings
from vnic.pair import nomac_pair

ET = 0x88B5
LEN = 60  # a 64-byte frame with its FCS


@pytest.fixture(scope="module")
def lab():
    with Lab("br", 2) as lab:
        yield lab


def run_generator(tx, fps: int, count: int, timeout: float) -> None:
    tx.generate(fps, count, ethertype=ET, length=LEN)
    # the generator publishes what it has left; there is no event for "done"
    wait_for(lambda: tx.probe_rx()["generator_left"] == 0, timeout, "the generator to finish")


@pytest.mark.netns
def test_generator_hands_frames_over_in_batches(lab):
    count = 50_000
    with nomac_pair(
        lab, mode=None, rt=RtSettings(priority=80), ethertypes=[ET], link_rate_mbps=1000
    ) as (st, _):
        tx, rx = st
        rx.count_probes(ET)
        a = tx.stats()
        run_generator(tx, 100_000, count, timeout=10)
        b = tx.stats()
    frames = b["xsk"]["tx_frames"] - a["xsk"]["tx_frames"]
    kicks = b["xsk"]["tx_kicks"] - a["xsk"]["tx_kicks"]
    loops = b["loops"] - a["loops"]
    assert frames + (b["nomac_drops"] - a["nomac_drops"]) == count
    assert frames > count // 2, "most frames should make it at 7% of the modelled link"
    assert kicks > 0 and frames / kicks >= 8, f"{frames} frames in {kicks} kicks"
    assert frames / loops >= 8, f"{frames} frames in {loops} wake-ups of the RT thread"


@pytest.mark.netns
def test_link_model_limits_what_is_handed_over(lab):
    wire_ns = lib.rtn_wire_time_ns(LEN, 100)
    line_fps = 1e9 / wire_ns
    backlog_ns = 100_000_000
    backlog_s = backlog_ns / 1e9
    offered_s = 2 * backlog_s + 0.3  # at twice the link rate: a backlog past the bound
    count = int(line_fps * 2 * offered_s)
    with nomac_pair(
        lab, mode=None, rt=RtSettings(priority=80), ethertypes=[ET], link_rate_mbps=100
    ) as (st, _):
        tx = st[0]
        a = tx.stats()
        t0 = tx.local_now()
        tx.generate(int(line_fps * 2), count, ethertype=ET, length=LEN, backlog_ns=backlog_ns)
        # the bound holds at any instant; the backlog grows by the link's rate, and its
        # frames only start to drop once they are backlog_ns behind schedule
        wait_for(
            lambda: tx.stats()["nomac_drops"] > a["nomac_drops"],
            2 * offered_s + 5,
            "frames past the backlog bound to be dropped",
        )
        b = tx.stats()
        t1 = tx.local_now()
        tx.generate(1, 0, ethertype=ET, length=LEN)  # stop the rest
    sent = b["nomac_tx"] - a["nomac_tx"]
    ceiling = (t1 - t0 + lib.RTN_NOMAC_PACE_AHEAD_NS) / wire_ns + 1
    assert sent <= ceiling, f"{sent} frames handed over, the link carries {ceiling:.0f}"
    assert sent > ceiling / 4, f"only {sent} of {ceiling:.0f} frames: the sender stalled"
    # at twice the link rate the head frame falls behind by half the time offered: the
    # first drop came no earlier than twice the bound
    assert (t1 - t0) >= 2 * backlog_ns - lib.RTN_NOMAC_PACE_AHEAD_NS
    # frames were handed over late, by about the bound: one the FIFO had room for when the
    # thread next ran goes, however late (a stall of the thread adds to it)
    lag = b["generator_lag_max_ns"]
    assert backlog_ns / 2 < lag < backlog_ns + 50_000_000, lag
