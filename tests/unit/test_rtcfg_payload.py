"""The whitelisted RTcfg configuration payload (rtnet/rtcfg/payload.py)."""

import doctest

import pytest

from rtnet.errors import RtcfgError
from rtnet.rtcfg import payload


def test_the_doctests():
    assert doctest.testmod(payload).failed == 0


def test_the_project_form_becomes_the_daemon_requests():
    reqs = payload.parse(
        b"# slave 2\ntdma slot 0 400 -p 1/2 -s 200 -j 1 -w 50\n\n"
        b"vnic address 10.0.0.2/24\nip 10.0.0.2\nvnic up\n",
        "rt0",
    )
    assert [r["cmd"] for r in reqs] == ["tdma.slot", "vnic.address", "station.ip", "vnic.up"]
    slot = reqs[0]
    assert (
        slot["dev"],
        slot["id"],
        slot["offset_us"],
        slot["phasing"],
        slot["period"],
        slot["size"],
        slot["joint"],
        slot["window_us"],
    ) == ("rt0", 0, 400, 1, 2, 200, 1, 50)


def test_rtnets_shell_form_maps_onto_the_same_requests():
    text = (
        "$TDMACFG rteth0 detach;$TDMACFG rteth0 master 5000 -b 100;"
        "$TDMACFG rteth0 slot 0 200;ifconfig vnic0 up 10.0.0.3 netmask 255.255.255.0\n"
        "/usr/sbin/tdmacfg rteth0 slot 1 600\nifconfig vnic0 up 172.16.0.3\n"
        "ifconfig vnic0 up $IPADDR $NETMASK_OPT\n"
    )
    reqs = payload.parse(text, "rt0")
    assert [r["cmd"] for r in reqs] == [
        "tdma.detach",
        "tdma.master",
        "tdma.slot",
        "vnic.address",
        "tdma.slot",
        "vnic.address",
        "vnic.up",
    ]
    assert reqs[1]["backup_offset_us"] == 100 and reqs[1]["dev"] == "rt0"
    assert reqs[3]["cidr"] == "10.0.0.3/24" and reqs[5]["cidr"] == "172.16.0.3/16"  # classful


@pytest.mark.parametrize(
    "text,message",
    [
        ("tdma slot 0 400\nsh -c reboot", "line 2: 'sh' is not an allowed command"),
        ("tdma slot 0 400 -l /etc/passwd", "line 1: tdma slot: option '-l' is not allowed"),
        ("tdma slot 0 400 --help", "option '--help' is not allowed"),
        ("tdma show", "line 1: tdma 'show': allowed are"),
        ("tdma slot 99 400", "line 1: tdma slot: slot id: 99 above maximum 63"),
        ("tdma slot 0 400 -p 3/2", "line 1: tdma slot: slot 0: phasing 3/2 outside 1..2"),
        ("tdma slot x 400", "line 1: tdma slot: argument id: invalid slot id"),
        ("vnic address 10.0.0.2", "the prefix is missing"),
        ("vnic address 10.0.0.300/24", "use a.b.c.d/prefix"),
        ("ip 10.0.0.2 10.0.0.3", "one address expected"),
        ("ifconfig eth0 up 10.0.0.2", "only 'ifconfig vnicN up"),
        ("ifconfig vnic0 up 10.0.0.2 netmask 255.0.255.0", "invalid netmask"),
        ("$TDMACFG", "the device is missing"),
        ("vnic up\n\nvnic up; eval $X", "line 3: 'eval' is not"),
        ("tdma slot 0 400\x00", "line 1: control character"),
        (b"vnic up\n\xc3\xa9", "line 2: a byte that is not ASCII"),
    ],
)
def test_one_bad_line_refuses_the_whole_payload_naming_it(text, message):
    with pytest.raises(RtcfgError, match=message) as info:
        payload.parse(text, "rt0")
    assert "\n" not in str(info.value)
