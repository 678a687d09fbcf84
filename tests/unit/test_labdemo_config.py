"""The demo lab's station configurations (rtnet.labdemo.station_toml) pass rtnetd's own
checks: each station has its real-time address and, on a redundant lab, its second port
and the application channel on both wires."""

import pytest

from rtnet.config import parse_toml
from rtnet.labdemo import APP_ETHERTYPE, MAX_DEMO_STATIONS, station_ip, station_toml


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
