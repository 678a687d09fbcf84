"""[rt] wake_early with frames waiting in the ring: a station that nothing received wakes
(the VNIC pair: no application channel) finds the cycle's Sync and a peer's window in its
ring when it wakes for its slot.  Woken early, it takes them in the margin, so none of that
work lies between the slot's time and its send, with one port or two; without wake_early it
takes none early."""

import time

import pytest

from rtnet.lab import STATION_IF_B, Lab
from rtnet.station import RtSettings
from vnic.pair import plan, tdma_pair

pytestmark = pytest.mark.netns

# The margin is learnt from 1,024 wake-ups at a time (rtn_lead.h) and starts at 20 us,
# which a VM's timer often overruns: the first WARM_UP frames (two seconds of the master's
# Syncs, two updates or more) are left to it, the next FRAMES measured.
WARM_UP, FRAMES = 2000, 1000


def _received(slave, at_least: int) -> dict:
    """The slave's stats once it received ``at_least`` more frames (the master's Syncs
    arrive one a cycle)."""
    start = slave.stats()["rx_frames"]
    deadline = time.monotonic() + 30
    while (st := slave.stats())["rx_frames"] - start < at_least:
        assert time.monotonic() < deadline, "the slave received no Syncs"
        time.sleep(0.05)
    return st


def received_early(lab_name: str, wake_early: bool, two_ports: bool = False) -> tuple[int, int]:
    """(frames the slave took in a wake-early margin, frames it received) while FRAMES
    arrived, after WARM_UP; with ``two_ports`` over two wires (IEEE 802.1CB), where every
    frame arrives twice."""
    with (
        Lab(lab_name, 2, redundant=two_ports) as lab,
        tdma_pair(
            lab,
            plan(1000, 100),
            rt=RtSettings(priority=80, wake_early=wake_early),
            redundant_dev=STATION_IF_B if two_ports else None,
        ) as (stations, _taps),
    ):
        slave = stations[1]
        before = _received(slave, WARM_UP)
        after = _received(slave, FRAMES)
    return after["rx_early"] - before["rx_early"], after["rx_frames"] - before["rx_frames"]


def test_woken_early_the_slave_takes_its_ring_in_the_margin():
    early, received = received_early("wr", True)
    assert early >= received // 2, (early, received)


def test_with_two_ports_woken_early_the_slave_takes_both_rings_in_the_margin():
    early, received = received_early("wr2", True, two_ports=True)
    assert early >= received // 2, (early, received)


def test_without_wake_early_nothing_is_taken_early():
    early, received = received_early("wx", False)
    assert received >= FRAMES and early == 0
