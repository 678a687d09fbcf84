"""IEEE 802.1CB at a frame rate where the RT thread sends many frames per wake-up.

A two-port NoMAC sender's rate generator queues a batch of redundant frames per
wake-up on both ports' TX rings; a batch on one ring leaving before the other's puts
that many frames between a frame's two copies at the receiver.  The sender keeps the
two rings within half its history of each other, so with wire A losing frames at
random every lost copy is recovered from wire B and no copy is ever rogue.  Without
that bound the receiver found 3,148 of 10,000 copies rogue and lost 313 frames.  A stall
of the VM can still reorder the wires by more than this test's short history (after it
the two ports' NAPI polls take their backlogs in turn; a fresh CI run saw 7 rogue
copies): the receiver's counters are read in short windows while the stall detector runs,
and no copy may be rogue and no frame lost in the windows no stall overlapped
(tests/stallguard.py).
"""
import os
import time

import pytest
from conftest import require_tool
from stallguard import Stalls, Tally, Windows, describe, detector, twice

from rtmac.testing import wire_faults
from rtnet.lab import STATION_IF_B, Lab
from rtnet.station import RtSettings, Station

pytestmark = pytest.mark.netns

ET = 0x88B5
HISTORY = 4            # copies more than 4 apart are rogue: a small window on purpose
FPS = 10_000           # about 10 pairs per 1 ms wake-up of the generator
COUNT = 10_000
LOSS_PERCENT = 10
STALL_MARGIN_NS = 5_000_000


def settle(count, want: int, timeout: float) -> None:
    """Poll ``count`` until it reaches ``want`` or stops moving for 0.5 s (frames lost on
    both wires never come; no event says so)."""
    deadline, last, since = time.monotonic() + timeout, -1, time.monotonic()
    while time.monotonic() < deadline:
        now = count()
        if now >= want:
            return
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= 0.5:
            return
        time.sleep(0.02)


def wait_for(cond, timeout: float, what: str) -> None:
    """Poll the stations' counters (no event tells us)."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_a_copy_lost_on_one_wire_is_recovered_from_the_other_at_rate():
    require_tool("nft")
    r = twice(_run, "802.1CB at rate")
    sent, got, stream, sender = r["sent"], r["got"], r["stream"], r["sender"]
    print(f"frames {got} of {sent}; rogue {stream['total']['rogue']}, lost {stream['lost']} "
          f"in all; in the windows a stall overlapped: rogue {r['rogue_disturbed']}, lost "
          f"{r['lost_disturbed']}")
    assert sent == COUNT
    port_a, port_b = stream["port"]
    # wire A lost about a tenth: those frames passed from wire B's copies
    assert 0 < port_b["passed"] < COUNT * LOSS_PERCENT * 2 / 100
    assert port_a["passed"] + port_b["passed"] == got
    # where no stall came, no copy was rogue and no frame lost
    assert r["rogue_calm"] == 0 and r["lost_calm"] == 0, r
    # every frame that did not arrive was lost where a stall came (a frame is counted lost
    # when it leaves the history unseen; the last history's frames never leave it)
    assert COUNT - got <= r["lost_disturbed"] + (HISTORY - 1) * r["end_disturbed"], r
    # many frames per wake-up: without the bound every batch would skew the copies
    assert sender["loops"] < COUNT / HISTORY


def _run():
    """One run at rate with the receiver's counters in timed windows; what the windows no
    stall overlapped counted, and the tally of windows."""
    with Lab("frr", 2, redundant=True) as lab:
        tx_ls, rx_ls = lab.station(1), lab.station(2)
        with Station(tx_ls.ifname, netns=tx_ls.netns, mac=tx_ls.mac, ethertypes=[ET],
                     rt=RtSettings(priority=80), redundant_dev=STATION_IF_B,
                     frer_history_len=HISTORY) as tx, \
             Station(rx_ls.ifname, netns=rx_ls.netns, mac=rx_ls.mac, ethertypes=[ET],
                     rt=RtSettings(priority=80), redundant_dev=STATION_IF_B,
                     frer_history_len=HISTORY) as rx:
            for st in (tx, rx):
                st.attach_nomac()
                st.start()
            _cid, memfd, kickfd = tx.open_channel(ET, redundant=True, cycles=False)
            os.close(memfd)
            os.close(kickfd)
            rx.count_probes(ET)

            def counters():
                streams = [s for s in rx.stats()["frer"]["streams"] if s["src"] == tx_ls.mac]
                return (streams[0]["total"]["rogue"], streams[0]["lost"]) if streams else (0, 0)

            windows = Windows(counters)

            def timed(read):
                """A window of the receiver's counters at each poll of the run."""
                windows.take()
                return read()

            wire_faults.nft_drop(lab, "a", ET, f"numgen random mod 100 < {LOSS_PERCENT}")
            try:
                with detector() as det:
                    windows.take()
                    tx.generate(FPS, COUNT, ethertype=ET, dst=rx_ls.mac,
                                backlog_ns=1_000_000_000)
                    wait_for(lambda: timed(tx.probe_rx)["generator_left"] == 0, 10,
                             "the generator")
                    settle(lambda: timed(rx.probe_rx)["frames"], COUNT, 5)
                    windows.take()
                    records = det.gaps()
            finally:
                wire_faults.nft_clear(lab, "a")
            sent, got = tx.probe_rx()["sent"], rx.probe_rx()["frames"]
            frer = rx.stats()["frer"]
            sender = tx.stats()
    [stream] = [s for s in frer["streams"] if s["src"] == tx_ls.mac]
    # after a stall the receiver takes both ports' backlogs: a few ms of margin
    stalls = Stalls(records, pad_ns=STALL_MARGIN_NS)
    tally = Tally("counter windows")
    out = {"rogue_calm": 0, "lost_calm": 0, "rogue_disturbed": 0, "lost_disturbed": 0,
           "end_disturbed": False}
    for t0, t1, (rogue0, lost0), (rogue1, lost1) in windows.windows():
        calm = tally.count(stalls.overlaps(t0, t1))
        which = "calm" if calm else "disturbed"
        out[f"rogue_{which}"] += rogue1 - rogue0
        out[f"lost_{which}"] += lost1 - lost0
        out["end_disturbed"] = not calm
    print(describe(records))
    out.update(sent=sent, got=got, stream=stream, sender=sender)
    return out, [tally]
