"""The demo lab's station configurations (rtnet.labdemo.station_toml) pass rtnetd's own
checks: each station has its real-time address and, on a redundant lab, its second port
and the application channel on both wires."""

import os

import pytest

from rtnet.config import parse_toml
from rtnet.labdemo import APP_ETHERTYPE, MAX_DEMO_STATIONS, station_ip, station_toml
from rtnet.labdemo.segment import station_cpu


@pytest.mark.parametrize("n", [2, 3, MAX_DEMO_STATIONS])
@pytest.mark.parametrize("redundant", [False, True])
def test_every_demo_station_has_its_address_and_redundancy_as_asked(n, redundant):
    for i in range(1, n + 1):
        cfg = parse_toml(station_toml(i, n, redundant=redundant), f"s{i}.toml")
        assert cfg.ip == station_ip(i) == f"198.18.0.{i}"
        assert cfg.device == "rteth0"
        assert cfg.redundant_dev == ("rteth1" if redundant else None)
        (chan,) = [c for c in cfg.channels if c.ethertype == APP_ETHERTYPE]
        assert chan.redundant is redundant
        assert cfg.tdma.role == ("slave" if i > 2 else "master")


@pytest.mark.parametrize("ncpu", [1, 2, 3, 8])
@pytest.mark.parametrize("n", [2, 3, MAX_DEMO_STATIONS])
def test_the_publishers_station_never_shares_the_subscribers_cpu_where_there_are_two(ncpu, n):
    cpus = [station_cpu(i, ncpu) for i in range(1, n + 1)]
    if ncpu == 1:
        assert set(cpus) == {0}
        return
    # station 1 (the subscriber, sockperf's client) alone on CPU 0, the rest in turn
    assert cpus[0] == 0 and 0 not in cpus[1:]
    counts = [cpus[1:].count(c) for c in range(1, ncpu)]
    assert max(counts) - min(counts) <= 1
    # and each station's rtnet.toml carries its CPU
    for i in range(1, n + 1):
        cfg = parse_toml(station_toml(i, n), f"s{i}.toml")
        assert cfg.rt.cpu == station_cpu(i, os.cpu_count() or 1)


def test_the_cycles_of_a_span_are_whole_cycles_in_the_stall_detectors_clock():
    from rtnet.labdemo.pubsub import cycles_between

    spans = cycles_between(2.0, 2.0035, 1000)  # 3.5 cycles of 1 ms: the three whole ones
    assert spans == [
        (2_000_000_000 + k * 1_000_000, 2_001_000_000 + k * 1_000_000) for k in (0, 1, 2)
    ]
    assert cycles_between(2.0, 2.0005, 1000) == []
    assert cycles_between(3.0, 2.0, 1000) == []  # a span the wrong way round has none
