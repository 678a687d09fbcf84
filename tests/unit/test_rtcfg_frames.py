"""RTcfg frames (rtnet/rtcfg/frames.py) against byte strings written from RTcfg.spec's
layouts, the scapy layer, and Wireshark's own RTcfg dissector."""

import doctest
import os
import shutil
import struct
import subprocess

import pytest
from conftest import skip_or_fail
from scapy.layers.l2 import Ether

from rtmac.testing import scapy_rtcfg as sr
from rtnet.errors import RtcfgError
from rtnet.rtcfg import frames as fr

# byte 0: version 0 in bits 7-5, id in bits 4-0; then the fields of RTcfg.spec, big-endian
GOLDEN = [
    (fr.Stage1Cfg("10.0.0.2", "10.0.0.1", 4, b"ab"), "00010a0000020a0000010400026162"),
    (fr.Stage1Cfg(None, None, 2, b""), "0000020000"),
    (fr.AnnounceNew("10.0.0.2", 0x03, 4), "01010a0000020304"),
    (fr.AnnounceNew(None, 0x01, 1), "01000101"),
    (fr.AnnounceReply("192.168.1.7", 0x02), "0201c0a801070200"),
    (fr.Stage2Cfg(0x02, 3, 1000, 5, b"hello"), "03020000000303e80000000568656c6c6f"),
    (fr.Stage2Frag(0x01020304, b"xyz"), "040102030478797a"),
    (fr.AckCfg(0xA0B0C0D0), "05a0b0c0d0"),
    (fr.Ready(), "06"),
    (fr.Heartbeat(), "07"),
    (fr.DeadStation("10.0.0.9", "02:52:54:00:00:09"), "08010a000009025254000009" + "00" * 26),
    (fr.DeadStation(None, "02:52:54:00:00:09"), "0800025254000009" + "00" * 26),
]


@pytest.mark.parametrize("frame,hexbytes", GOLDEN, ids=lambda v: type(v).__name__)
def test_every_frame_encodes_to_the_spec_bytes_and_back(frame, hexbytes):
    raw = bytes.fromhex(hexbytes)
    assert frame.encode() == raw
    assert fr.decode(raw) == frame
    if not isinstance(frame, fr.Stage2Frag):  # a fragment keeps its tail
        assert fr.decode(raw + bytes(40)) == frame  # a NIC's padding is ignored


@pytest.mark.parametrize("frame,hexbytes", GOLDEN, ids=lambda v: type(v).__name__)
def test_the_scapy_layer_reads_and_writes_the_same_bytes(frame, hexbytes):
    wire = fr.ether_frame(fr.BROADCAST, "02:00:00:00:00:01", frame.encode())
    pkt = Ether(wire)
    assert pkt[sr.RTcfg].id == fr.frame_id(frame) and pkt[sr.RTcfg].version == 0
    assert bytes(pkt) == wire


@pytest.mark.parametrize(
    "raw,message",
    [
        (b"", "empty"),
        (bytes([0x20]), "version 1"),
        (bytes([0x09]), "unknown frame id 9"),
        (bytes.fromhex("0002"), "Stage 1 Config: unknown addr_type 2"),
        (bytes.fromhex("00010a000002"), "Stage 1 Config: truncated at server IP"),
        (bytes.fromhex("0000040010") + b"short", "Stage 1 Config: truncated at cfg_data"),
        (bytes.fromhex("0000000000"), "Stage 1 Config: burstrate 0"),
        (bytes.fromhex("0101"), "New Announcement: truncated at IP"),
        (bytes.fromhex("010001"), "New Announcement: truncated at burstrate"),
        (bytes.fromhex("020002"), "Reply Announcement: truncated at padding"),
        (bytes.fromhex("0302000000"), "Stage 2 Config: truncated at active_stations"),
        (bytes.fromhex("030200000003"), "Stage 2 Config: truncated at heartbeat_period"),
        (bytes.fromhex("0401"), "Stage 2 Fragment: truncated at frag_offset"),
        (bytes.fromhex("05000000"), "Acknowledge Config: truncated at ack_len"),
        (bytes.fromhex("0800") + bytes(31), "Dead Station: truncated at physical address"),
    ],
)
def test_truncated_or_lying_frames_are_one_error_naming_frame_and_field(raw, message):
    with pytest.raises(RtcfgError, match=message) as info:
        fr.decode(raw)
    assert "\n" not in str(info.value)


def test_the_encoder_refuses_what_the_fields_cannot_hold():
    with pytest.raises(RtcfgError, match="client and server IP"):
        fr.Stage1Cfg("10.0.0.2", None, 4, b"").encode()
    with pytest.raises(RtcfgError, match="at most 65535"):
        fr.Stage1Cfg(None, None, 4, bytes(70000)).encode()
    with pytest.raises(RtcfgError, match="burstrate 256"):
        fr.AnnounceNew(None, 0, 256).encode()


def test_wireshark_decodes_every_frame_type_without_complaint(tmp_path):
    tshark = shutil.which("tshark")
    if tshark is None:
        skip_or_fail("tshark is not installed (run tools/setup-system.sh)")
    pcap = tmp_path / "rtcfg.pcap"
    with open(pcap, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))  # Ethernet
        for i, (frame, _) in enumerate(GOLDEN):
            wire = fr.ether_frame("02:00:00:00:00:02", "02:00:00:00:00:01", frame.encode())
            f.write(struct.pack("<IIII", i, 0, len(wire), len(wire)) + wire)
    res = subprocess.run(
        [tshark, "-r", str(pcap), "-V"],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, LC_ALL="C"),
    )
    assert res.returncode == 0, res.stderr
    assert "Malformed" not in res.stdout and "Expert Info" not in res.stdout
    per_frame = res.stdout.split("\nFrame ")
    assert len(per_frame) == len(GOLDEN)
    for text, (frame, _) in zip(per_frame, GOLDEN):
        assert "[Protocols in frame: eth:ethertype:rtcfg]" in text
        assert f"ID: {fr.frame_name(frame).split()[0]}" in text or "Acknowledge" in text
    for line in (
        "Client IP Address: 10.0.0.2",
        "Server IP Address: 10.0.0.1",
        "Stage 1 Config Length: 2",
        "Active Stations: 3",
        "Heartbeat Period: 1000",
        "Stage 2 Config Length: 5",
        "Config Offset: 16909060",
        "Ack Length: 2695938256",
        "Client Hardware Address: 02:52:54:00:00:09",
        "Server Ready: 1",
        "Client Ready: 1",
    ):
        assert line in res.stdout, line


def test_the_doctests():
    assert doctest.testmod(fr).failed == 0
    assert doctest.testmod(sr).failed == 0
