"""NoMAC pieces the benchmark suite relies on.

- A real-time cyclic task under NoMAC (no TDMA cycle published) runs on its
  own absolute grid: whole periods on the shared clock plus the offset.
- Samples carry the subscriber's take time after the station's receive time.
- A flood through the batched VNIC above the link rate keeps the transmit
  FIFO full without spinning the RT thread (it sleeps until the link frees
  a frame instead of polling a readable TAP).
"""

import subprocess
import time

import numpy as np
import pytest
from conftest import require_tool

from rtnet.app import Channel, latencies_ns, publish_cyclic, subscribe
from rtnet.benchkit import start_iperf_server
from rtnet.lab import Lab
from rtnet.station import RtSettings
from vnic.pair import nomac_pair, vnic_address

ET = 0x88B5
PERIOD_NS = 1_000_000
OFFSET_US = 300


@pytest.fixture(scope="module")
def lab():
    with Lab("bn", 2) as lab:
        yield lab


@pytest.mark.netns
def test_rt_task_under_nomac_runs_on_its_own_absolute_grid(lab):
    with nomac_pair(lab, mode=None, rt=RtSettings(priority=80), ethertypes=[ET]) as (st, _):
        with (
            Channel.attach(*st[0].open_channel(ET)[1:]) as tx,
            Channel.attach(*st[1].open_channel(ET)[1:]) as rx,
        ):
            task = publish_cyclic(
                tx,
                lab.station(2).mac,
                200,
                offset_us=OFFSET_US,
                interval_us=PERIOD_NS // 1000,
                priority=70,
            )
            samples = subscribe(rx, 200, idle_timeout=1.0)
            task.wait(timeout=5)
            stats = task.stop()
    assert stats.policy == "SCHED_FIFO" and stats.interval_ns == PERIOD_NS
    assert len(samples) == 200
    sched = samples["sched_ns"]
    assert (sched % PERIOD_NS == OFFSET_US * 1000).all()
    steps = np.diff(sched)
    assert (steps > 0).all() and (steps % PERIOD_NS == 0).all()
    lat = latencies_ns(samples)
    assert (lat["rx_to_app"] >= 0).all() and (lat["sched_to_app"] >= lat["sched_to_rx"]).all()


@pytest.mark.netns
def test_flood_above_link_rate_does_not_spin_the_rt_thread(lab):
    require_tool("iperf3")
    dst = vnic_address(2).split("/")[0]
    with nomac_pair(lab, mode="batched", rt=RtSettings(priority=80)) as (st, _):
        srv = start_iperf_server(lab, lab.station(2), dst, one_off=True)
        try:
            cli = lab.spawn(
                lab.station(1),
                ["iperf3", "-c", dst, "-u", "-b", "150M", "-l", "1200", "-t", "4"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            time.sleep(1.5)  # the flood fills the VNIC's ring to the wire
            a = st[0].stats()
            time.sleep(1.5)
            b = st[0].stats()
            cli.wait(15)
            lab.forget(cli)
        finally:
            if srv.poll() is None:
                srv.terminate()
            srv.wait(10)
            lab.forget(srv)
    sent = b["nomac_tx"] - a["nomac_tx"]
    loops = b["loops"] - a["loops"]
    assert sent > 1000, "the flood did not reach the link"
    # a saturated link: about one wake-up to send a frame and one to refill the FIFO;
    # a spinning thread loops orders of magnitude more often
    assert loops < 5 * sent, f"{loops} loops for {sent} frames: the RT thread spins"
    # the VNIC's frames leave in place from the UMEM frames the TAP read put them in, once the
    # FIFO is empty, even with the ring to the wire near full: the TAP read is the one copy
    v = b["vnic"]
    assert v["tx_bad"] == 0 and round(v["tx_copy_bytes"] / v["tap_rx_bytes"]) == 1
