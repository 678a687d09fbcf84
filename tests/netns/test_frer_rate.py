"""IEEE 802.1CB at a frame rate where the RT thread sends many frames per wake-up.

A two-port NoMAC sender's rate generator queues a batch of redundant frames per
wake-up on both ports' TX rings; a batch on one ring leaving before the other's puts
that many frames between a frame's two copies at the receiver.  The sender keeps the
two rings within half its history of each other, so with wire A losing frames at
random every lost copy is recovered from wire B and no copy is ever rogue.
"""
import os
import time

import pytest
from conftest import require_tool

from rtmac.testing import wire_faults
from rtnet.lab import STATION_IF_B, Lab
from rtnet.station import RtSettings, Station

pytestmark = pytest.mark.netns

ET = 0x88B5
HISTORY = 4            # copies more than 4 apart are rogue: a small window on purpose
FPS = 10_000           # about 10 pairs per 1 ms wake-up of the generator
COUNT = 10_000
LOSS_PERCENT = 10


def wait_for(cond, timeout: float, what: str) -> None:
    """Poll the stations' counters (no event tells us)."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_a_copy_lost_on_one_wire_is_recovered_from_the_other_at_rate():
    require_tool("nft")
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
            wire_faults.nft_drop(lab, "a", ET, f"numgen random mod 100 < {LOSS_PERCENT}")
            try:
                tx.generate(FPS, COUNT, ethertype=ET, dst=rx_ls.mac, backlog_ns=1_000_000_000)
                wait_for(lambda: tx.probe_rx()["generator_left"] == 0, 10, "the generator")
                wait_for(lambda: rx.probe_rx()["frames"] >= tx.probe_rx()["sent"], 5,
                         f"the last frames: {rx.stats()['frer']}")
            finally:
                wire_faults.nft_clear(lab, "a")
            sent, got = tx.probe_rx()["sent"], rx.probe_rx()["frames"]
            frer = rx.stats()["frer"]
            sender = tx.stats()
    assert sent == COUNT and got == COUNT
    [stream] = [s for s in frer["streams"] if s["src"] == tx_ls.mac]
    port_a, port_b = stream["port"]
    # wire A lost about a tenth: those frames passed from wire B's copies
    assert 0 < port_b["passed"] < COUNT * LOSS_PERCENT * 2 / 100
    assert port_a["passed"] + port_b["passed"] == COUNT
    assert stream["total"]["rogue"] == 0 and stream["lost"] == 0
    # many frames per wake-up: without the bound every batch would skew the copies
    assert sender["loops"] < COUNT / HISTORY
