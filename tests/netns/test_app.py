"""Application channels between two in-process lab stations (root, namespaces, AF_XDP).

Station 1 is the TDMA master (slot 0 at 0 us), station 2 a slave (slot 0 at
500 us), 1 ms cycle; a second lab runs NoMAC.  Channels come from
Station.open_channel and are used through Channel.attach.
"""

import errno
import threading
import time

import numpy as np
import pytest
from conftest import wait_for

from rtmac.tdma_config import Slot, TdmaConfig
from rtnet.app import Channel, latencies_ns, publish_cyclic, subscribe
from rtnet.errors import ChannelError, ConfigError
from rtnet.lab import Lab
from rtnet.station import RtSettings, Station
from rtnet.tdma_stats import TdmaState

pytestmark = pytest.mark.netns

ET = 0x88B5
ET_OTHER = 0x88B6
CYCLE_NS = 1_000_000
SLAVE_SLOT_NS = 500_000
SLOT_WINDOW_NS = 300_000  # wire time of a full slot (~125 us) plus generous scheduling slack
LOOSE_NS = 100_000_000  # sanity bound for "arrived promptly" on a noisy VM
SYNC_TOL_NS = 100_000  # tx and rx stamps come from two clocks, synchronised to some us
RT = RtSettings(priority=80)


def open_stations(lab):
    s1, s2 = lab.station(1), lab.station(2)
    a = Station(s1.ifname, netns=s1.netns, mac=s1.mac, ethertypes=[ET, ET_OTHER], rt=RT)
    try:
        b = Station(s2.ifname, netns=s2.netns, mac=s2.mac, ethertypes=[ET, ET_OTHER], rt=RT)
    except BaseException:
        a.close()
        raise
    return a, b


def chan(station, ethertype=ET, **kw):
    _cid, memfd, kickfd = station.open_channel(ethertype, **kw)
    return Channel.attach(memfd, kickfd)


@pytest.fixture(scope="module")
def tdma():
    with Lab("a1", 2) as lab:
        master, slave = open_stations(lab)
        with master, slave:
            master.attach_tdma(
                TdmaConfig(role="master", cycle_us=1000, cal_rounds=10, slots={0: Slot(0, 0)})
            )
            slave.attach_tdma(
                TdmaConfig(role="slave", cal_rounds=10, slots={0: Slot(0, SLAVE_SLOT_NS // 1000)})
            )
            master.start()
            slave.start()
            wait_for(
                lambda: slave.stats()["tdma"]["state"] == TdmaState.SYNCED,
                10,
                "the slave to synchronise",
            )
            yield lab, master, slave


@pytest.fixture(scope="module")
def nomac():
    with Lab("a2", 2) as lab:
        a, b = open_stations(lab)
        with a, b:
            a.attach_nomac()
            b.attach_nomac()
            a.start()
            b.start()
            yield lab, a, b


@pytest.fixture
def pair(tdma):
    lab, master, slave = tdma
    with chan(master) as cm, chan(slave) as cs:
        yield lab, cm, cs


def test_round_trip_timestamps_present_and_ordered(pair):
    lab, cm, cs = pair
    seq = cs.send(lab.station(1).mac, b"ping")
    msg = cm.recv(timeout=2.0)
    assert msg is not None, "message not delivered"
    assert (msg.src, msg.seq, msg.payload, msg.ethertype) == (lab.station(2).mac, seq, b"ping", ET)
    assert 0 < msg.sched_ns <= msg.tx_ns <= msg.rx_ns + SYNC_TOL_NS
    assert msg.rx_ns - msg.sched_ns < LOOSE_NS
    # reply: the master's message carries the master's timestamps back
    cm.send(lab.station(2).mac, b"pong")
    back = cs.recv(timeout=2.0)
    assert back.payload == b"pong"
    assert 0 < back.sched_ns <= back.tx_ns <= back.rx_ns + SYNC_TOL_NS


def test_message_leaves_inside_its_slot(pair):
    lab, cm, cs = pair
    rel = []
    for i in range(20):
        cs.wait_cycle(timeout=1.0)
        cs.send(lab.station(1).mac, bytes([i]))
        msg = cm.recv(timeout=2.0)
        assert msg is not None and msg.payload == bytes([i])
        cyc = cm.cycle_info()  # the master's grid, global time
        rel.append((msg.tx_ns - cyc.cycle_start_ns) % cyc.cycle_ns)
    inside = [SLAVE_SLOT_NS <= r < SLAVE_SLOT_NS + SLOT_WINDOW_NS for r in rel]
    # a hypervisor stall can push one transmission late; the slot grid must hold otherwise
    assert sum(inside) >= 18, f"offsets in the cycle (us): {[r // 1000 for r in rel]}"


def test_blocking_recv_wakes_on_arrival(pair):
    lab, cm, cs = pair
    got = {}

    def reader():
        got["msg"] = cm.recv(timeout=10.0)
        got["t"] = time.monotonic_ns()

    t = threading.Thread(target=reader)
    t.start()
    wait_for(lambda: cm.stats()["rx_waiting"] == 1, 5, "the reader to block")
    assert "msg" not in got
    sent_at = time.monotonic_ns()
    cs.send(lab.station(1).mac, b"wake")
    t.join(timeout=10)
    assert not t.is_alive()
    assert got["msg"] is not None and got["msg"].payload == b"wake"
    assert got["t"] - sent_at < LOOSE_NS
    assert cm.stats()["rx_waiting"] == 0


def test_wait_cycle_returns_consecutive_cycles(pair):
    _lab, cm, cs = pair
    for ch in (cm, cs):
        infos = [ch.wait_cycle(timeout=1.0) for _ in range(20)]
        assert all(i is not None for i in infos)
        steps = np.diff([i.cycle_no for i in infos])
        assert (steps > 0).all()
        assert (steps == 1).sum() >= 15, f"cycle steps {steps.tolist()}"
        for a, b in zip(infos, infos[1:]):
            assert b.cycle_ns == CYCLE_NS
            span = b.cycle_start_ns - a.cycle_start_ns
            assert abs(span - (b.cycle_no - a.cycle_no) * CYCLE_NS) < SYNC_TOL_NS
        assert infos[-1].cycle_start_os_ns <= time.monotonic_ns()


def test_reader_that_stops_loses_only_its_own_messages(tdma):
    lab, master, slave = tdma
    cid, memfd, kickfd = master.open_channel(ET, depth=8)
    with (
        Channel.attach(memfd, kickfd) as idle,
        chan(master, ET_OTHER) as busy,
        chan(slave) as tx1,
        chan(slave, ET_OTHER) as tx2,
    ):
        dst = lab.station(1).mac
        for i in range(24):
            tx1.send(dst, b"x")
            tx2.send(dst, bytes([i]))
            tx1.wait_cycle(timeout=1.0)
        got = [busy.recv(timeout=2.0) for _ in range(24)]
        assert [m.payload for m in got] == [bytes([i]) for i in range(24)]
        wait_for(
            lambda: (lambda s: s["rx_msgs"] + s["rx_drops"])(master.channel_stats(cid)) == 24,
            5,
            "the idle channel's 24 messages to be accounted",
        )
        st = idle.stats()
        assert st["rx_queued"] == 8 and st["rx_drops"] == 16
        assert master.channel_stats(cid)["rx_drops"] == 16
        assert busy.stats()["rx_drops"] == 0
        master.close_channel(cid)


def test_a_channel_with_a_lifetime_drops_what_it_cannot_send_in_time(tdma):
    """400 messages all scheduled at one moment and worth sending for 5 ms, more than the
    master's slot carries in five cycles: those it reaches in time go, the rest are dropped
    and counted (at pick-up or in the slot's queue), and none leaves after it expired.
    Messages scheduled long ago expire at pick-up and never reach the wire."""
    lab, master, slave = tdma
    n, lifetime_ns = 400, 5_000_000
    cid, memfd, kickfd = master.open_channel(ET_OTHER, depth=512, lifetime_us=lifetime_ns // 1000)

    def expired():
        in_slot = master.stats()["tdma"]["slots"][0]["expired"]
        return master.channel_stats(cid)["tx_expired"] + in_slot

    before = expired()
    with Channel.attach(memfd, kickfd) as tx, chan(slave, ET_OTHER, depth=512) as rx:
        dst = lab.station(2).mac
        t0 = tx.global_now()
        for i in range(n):
            tx.send(dst, i.to_bytes(2, "big"), sched_ns=t0)
        # each one taken by the slot's queue or expired before, then sent or expired there
        wait_for(
            lambda: (
                (lambda c: c["tx_msgs"] + c["tx_expired"])(master.channel_stats(cid)) == n
                and master.stats()["tdma"]["slots"][0]["queue_depth"] == 0
            ),
            5,
            "every message to be sent or expired",
        )
        got = []
        while (m := rx.recv(timeout=0.5)) is not None:
            got.append(m)
        gone = expired() - before
        assert 0 < len(got) < n and len(got) + gone == n, (len(got), gone)
        assert all(m.sched_ns == t0 and m.tx_ns - t0 <= lifetime_ns for m in got)
        # long past: dropped before the slot sees them
        at_pickup = master.channel_stats(cid)["tx_expired"]
        for _ in range(10):
            tx.send(dst, b"old", sched_ns=tx.global_now() - 1_000_000_000)
        wait_for(
            lambda: master.channel_stats(cid)["tx_expired"] == at_pickup + 10,
            5,
            "the stale messages to be counted",
        )
        assert rx.recv(timeout=0.3) is None
    master.close_channel(cid)


def test_cyclic_publisher_anchored_to_the_cycle(pair):
    lab, cm, cs = pair
    n, offset_ns = 200, 300_000
    task = publish_cyclic(cs, lab.station(1).mac, n, offset_us=offset_ns // 1000, payload_size=16)
    samples = subscribe(cm, n, idle_timeout=2.0)
    assert task.wait(timeout=5)
    st = task.stop()
    assert st.runs == n and st.sent == n and st.rc == 0
    assert st.policy == "SCHED_FIFO" and st.mode == "rt"
    assert st.histogram.count == n
    assert len(samples) == n
    assert (np.diff(samples["seq"].astype(np.int64)) == 1).all()
    assert (samples["len"] == 16).all()
    assert (samples["sched_ns"] <= samples["tx_ns"]).all()
    assert (samples["tx_ns"] <= samples["rx_ns"] + SYNC_TOL_NS).all()
    # deadlines sit at the offset on the master's cycle grid (sync error: a few us)
    grid = cm.cycle_info()
    phase = (samples["sched_ns"] - grid.cycle_start_ns) % CYCLE_NS
    assert (np.abs(phase - offset_ns) < SYNC_TOL_NS).all(), phase[:10]
    lat = latencies_ns(samples)
    assert (lat["sched_to_rx"] < LOOSE_NS).all()


def test_automatic_lead_wakes_before_the_slot_and_adapts(pair):
    """The task hands over for the slave's slot; the lead starts at a quarter of the cycle
    and moves with what the runs needed (a quiet VM pulls it down, stalls push it up):
    every deadline sits the lead in force before the slot."""
    lab, cm, cs = pair
    n = 3 * 1024 + 100  # three updates of the automatic lead
    task = publish_cyclic(
        cs, lab.station(1).mac, n, handover_us=SLAVE_SLOT_NS // 1000, payload_size=16
    )
    samples = subscribe(cm, n, idle_timeout=2.0)
    assert task.wait(timeout=10)
    st = task.stop()
    assert st.runs == n and st.rc == 0 and len(samples) == n
    assert st.lead_auto and st.lead_updates == 3
    assert 10_000 <= st.lead_ns <= CYCLE_NS // 2
    grid = cm.cycle_info()
    lead = (SLAVE_SLOT_NS - (samples["sched_ns"] - grid.cycle_start_ns)) % CYCLE_NS
    # before the slot by a lead between the minimum and half a cycle (sync error: some us)
    assert ((lead >= 10_000 - SYNC_TOL_NS) & (lead <= CYCLE_NS // 2 + SYNC_TOL_NS)).all(), lead[:10]
    assert (samples["sched_ns"] <= samples["tx_ns"]).all()


def test_a_lead_that_cannot_be_met_is_one_clear_error(pair):
    lab, cm, cs = pair
    with pytest.raises(
        ConfigError,
        match=r"^a lead of 1500 us before a hand-over at 500 us "
        r"cannot be met in the 1000 us cycle$",
    ):
        # refused before it starts, even on a channel that has seen no cycle start yet
        task = publish_cyclic(cs, lab.station(1).mac, 10, handover_us=500, lead_us=1500)
        task.stop()  # only if it was not refused: nothing of it may outlive the test


def test_standard_mode_runs_unaligned_on_sched_other(pair):
    lab, cm, cs = pair
    task = publish_cyclic(cs, lab.station(1).mac, 30, standard=True, interval_us=1000)
    samples = subscribe(cm, 30, idle_timeout=2.0)
    st = task.stop()
    assert st.mode == "standard" and st.policy == "SCHED_OTHER"
    assert st.runs == 30 and len(samples) == 30 and st.histogram.count == 30


def test_nomac_delivers_promptly(nomac):
    lab, a, b = nomac
    with chan(a) as ca, chan(b) as cb:
        for i in range(20):
            ca.send(lab.station(2).mac, bytes([i]))
            msg = cb.recv(timeout=2.0)
            assert msg is not None, "NoMAC frame stalled: the kick did not wake the station"
            assert msg.payload == bytes([i])
            assert msg.sched_ns <= msg.tx_ns <= msg.rx_ns and msg.rx_ns - msg.sched_ns < LOOSE_NS
        assert ca.stats()["kicks"] == 20
        assert cb.wait_cycle(timeout=0.05) is None  # NoMAC has no cycles


def test_station_closing_the_channel_wakes_and_fails(nomac):
    _lab, a, _b = nomac
    cid, memfd, kickfd = a.open_channel(ET)
    with Channel.attach(memfd, kickfd) as ch:
        err = {}

        def reader():
            try:
                ch.recv(timeout=10.0)
            except ChannelError as exc:
                err["e"] = exc

        t = threading.Thread(target=reader)
        t.start()
        wait_for(lambda: ch.stats()["rx_waiting"] == 1, 5, "the reader to block")
        a.close_channel(cid)
        t.join(timeout=5)
        assert not t.is_alive() and err["e"].errno == errno.ENOTCONN
        with pytest.raises(ChannelError) as e:
            ch.send("02:52:54:00:00:02", b"")
        assert e.value.errno == errno.ENOTCONN
        assert not ch.stats()["alive"]
