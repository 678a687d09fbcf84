"""Unmodified programs through rtnet-run behind the TDMA gate (root, namespaces, AF_XDP):
sockperf's ping-pong and throughput between a master and a slave on a 1 ms cycle, their
datagrams counted by the stations' real-time path, the round trips bounded by cycles."""

import re

import pytest
from conftest import tdma_ipv4_pair
from test_preload import sent_by_throughput, sockperf, udp_stats

pytestmark = pytest.mark.netns

CYCLE_US = 1000


@pytest.fixture(scope="module")
def lab():
    yield from tdma_ipv4_pair("pt", CYCLE_US)


def test_sockperf_ping_pong_should_cross_the_tdma_gate(lab):
    s1, s2 = lab.station(1), lab.station(2)
    before = udp_stats(s1.netns)["rx_udp"]
    out = sockperf(s1, s2, 11211, "ping-pong", "-t", "2")
    got = int(re.search(r"ReceivedMessages=(\d+)", out).group(1))
    # one request and one reply per cycle at most, each in its station's slot
    assert 0 < got <= 2 * 1_000_000 // CYCLE_US + 10, out
    assert udp_stats(s1.netns)["rx_udp"] - before >= got
    p50 = float(re.search(r"percentile 50\.000 = +([\d.]+)", out).group(1))
    # a round trip takes the two slots of one cycle or the next: never less than the gap
    # between them (a sanity bound, not a timing target: the benchmark measures that)
    assert p50 >= 100, out


def test_sockperf_throughput_should_be_carried_in_the_slots(lab):
    s1, s2 = lab.station(1), lab.station(2)
    before = udp_stats(s1.netns)["rx_udp"]
    sent = sent_by_throughput(
        sockperf(s1, s2, 11212, "throughput", "-t", "2", "-m", "200", "--mps", "500")
    )
    arrived = udp_stats(s1.netns)["rx_udp"] - before
    # 500 a second fit the slot: what sockperf sent arrived through the station
    assert sent >= 500 and arrived >= sent, (sent, arrived)
