"""Real-time UDP sockets sharing a port, at the station (root, namespaces, AF_XDP): who
may join a port another socket holds, and that the port is free again once they all left.
What the sharing sockets receive is tested through unmodified programs (test_preload.py)."""

import errno
import os

import pytest

from rtnet._core import lib
from rtnet.errors import RtnetError
from rtnet.lab import Lab
from rtnet.station import Station

pytestmark = pytest.mark.netns

ADDR, PORT = lib.RTN_UDP_SHARE_ADDR, lib.RTN_UDP_SHARE_PORT


@pytest.fixture(scope="module")
def station():
    with Lab("ushare", 1) as lab:
        ls = lab.station(1)
        with Station(ls.ifname, netns=ls.netns, mac=ls.mac) as st:
            st.attach_nomac()
            st.start()
            st.set_ipv4(ls.ip)
            yield st


def open_udp(st, port, share, owner):
    """A UDP socket's channel on ``port``: its id, or the errno the station refused it with."""
    try:
        cid, memfd, kickfd = st.open_channel(
            lib.RTN_ETH_P_IPV4, udp_port=port, udp_share=share, udp_owner=owner
        )
    except RtnetError as e:
        return -e.errno
    os.close(memfd)
    os.close(kickfd)
    return cid


def test_a_port_should_be_shared_only_as_linux_shares_it_and_by_one_owner(station):
    first = open_udp(station, 6100, ADDR, 5)
    assert first >= 0
    assert open_udp(station, 6100, ADDR, 6) == -errno.EADDRINUSE  # another owner
    assert open_udp(station, 6100, ADDR, 0) == -errno.EADDRINUSE  # no owner shares
    assert open_udp(station, 6100, 0, 5) == -errno.EADDRINUSE  # did not set SO_REUSEADDR
    assert open_udp(station, 6100, PORT, 5) == -errno.EADDRINUSE  # set the other option
    second = open_udp(station, 6100, ADDR | PORT, 5)
    assert second >= 0
    # each joining socket must suit every socket already there: `second` would share by
    # SO_REUSEPORT, `first` did not set it
    assert open_udp(station, 6100, PORT, 5) == -errno.EADDRINUSE
    assert open_udp(station, 6101, 4, 5) == -errno.EINVAL  # not a sharing option
    station.close_channel(first)
    third = open_udp(station, 6100, PORT, 5)  # now only `second` holds it
    assert third >= 0
    for cid in (second, third):
        station.close_channel(cid)
    last = open_udp(station, 6100, 0, 9)  # the port is free again
    assert last >= 0
    station.close_channel(last)
