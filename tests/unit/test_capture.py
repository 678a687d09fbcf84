"""Capture inside the stack: the capture ring (csrc/station/rtn_capture.c) and the pcapng files
rtnetctl capture writes (rtnet.pcapng, rtnet.capture), read back by tshark."""

import errno
import struct
import subprocess
import threading

import pytest
from conftest import require_tool

from rtnet import pcapng
from rtnet._lowlevel import check, ffi, lib
from rtnet.capture import CapturedFrame, to_pcapng
from rtnet.errors import RtnetError

# -- the ring -------------------------------------------------------------------------------


@pytest.fixture
def ring():
    rings = []

    def make(snaplen=64, depth=4):
        out = ffi.new("struct rtn_capture **")
        check(lib.rtn_capture_create(snaplen, depth, out))
        rings.append(out[0])
        return out[0]

    yield make
    for r in rings:
        lib.rtn_capture_destroy(r)


def put(r, frame: bytes, *, tx=True, stamp=0, sched=0, stamp_off=-1, stamp_value=0) -> int:
    h = ffi.new("struct rtn_cap_hdr *")
    h.dir = lib.RTN_CAP_TX if tx else lib.RTN_CAP_RX
    h.flags = lib.RTN_CAP_F_SCHED if sched else 0
    h.sched_ns, h.stamp_ns, h.os_ns = sched, stamp, stamp + 5
    return lib.rtn_capture_put(r, h, frame, len(frame), stamp_off, stamp_value)


def read(r, max_frames=16) -> list[CapturedFrame]:
    recs = ffi.new("struct rtn_cap_rec[]", max_frames)
    n = lib.rtn_capture_read(r, recs, max_frames)
    return [CapturedFrame.from_c(recs[i]) for i in range(n)]


def counts(r) -> tuple[int, int]:
    frames, drops = ffi.new("uint64_t *"), ffi.new("uint64_t *")
    lib.rtn_capture_counts(r, frames, drops)
    return frames[0], drops[0]


def test_a_full_ring_should_drop_and_count_instead_of_overwriting(ring):
    r = ring(depth=4)
    assert [put(r, bytes([i]) * 20, stamp=i) for i in range(6)] == [0, 0, 0, 0, -1, -1]
    assert counts(r) == (4, 2)
    got = read(r, 3)
    assert [(f.data, f.stamp_ns, f.os_ns) for f in got] == [
        (bytes([i]) * 20, i, i + 5) for i in range(3)
    ]
    # room again: the ring wraps, oldest first
    assert put(r, b"\x07" * 20, stamp=7) == 0 and put(r, b"\x08" * 20, stamp=8) == 0
    assert [f.stamp_ns for f in read(r)] == [3, 7, 8]
    assert read(r) == [] and counts(r) == (6, 2)


def test_a_record_should_keep_the_snap_length_direction_and_stamps(ring):
    r = ring(snaplen=64, depth=2)
    frame = bytes(range(100))
    assert put(r, frame, tx=True, stamp=1_000, sched=900) == 0
    assert put(r, frame[:30], tx=False, stamp=2_000) == 0
    sent, received = read(r)
    assert sent.outbound and sent.data == frame[:64] and sent.orig_len == 100
    assert sent.sched_ns == 900 and sent.comment() == "rtnet tx handover=1000 sched=900"
    assert not received.outbound and received.data == frame[:30] and received.orig_len == 30
    assert received.sched_ns is None and received.comment() == "rtnet rx poll=2000"


def test_the_copy_should_carry_the_stamp_the_socket_wrote_into_the_frame(ring):
    r = ring(snaplen=64)
    frame = bytes(60)
    put(r, frame, stamp_off=30, stamp_value=0x0102030405060708)
    put(r, frame, stamp_off=60, stamp_value=1)  # beyond the frame: left alone
    patched, untouched = read(r)
    assert patched.data[30:38] == bytes(range(1, 9)) and patched.data[:30] == bytes(30)
    assert untouched.data == frame


@pytest.mark.parametrize(
    "snaplen, depth, why",
    [
        (32, 4, "snap length 32 outside 64..2048"),
        (4096, 4, "snap length 4096 outside"),
        (64, 3, "depth 3 is not a power of two"),
        (64, 1, "depth 1 is not a power of two"),
        (64, 1 << 17, "is not a power of two in 2..65536"),
    ],
)
def test_a_ring_of_impossible_size_should_be_refused_with_one_line(snaplen, depth, why):
    out = ffi.new("struct rtn_capture **")
    with pytest.raises(RtnetError) as exc:
        check(lib.rtn_capture_create(snaplen, depth, out))
    assert exc.value.errno == errno.EINVAL and why in exc.value.strerror
    assert out[0] == ffi.NULL


def test_producer_and_consumer_in_two_threads_should_lose_nothing_they_do_not_count(ring):
    r = ring(snaplen=64, depth=64)
    total = 20_000
    got: list[int] = []
    done = threading.Event()

    def consume():
        while True:
            finished = done.is_set()
            batch = read(r, 64)
            for f in batch:
                seq = struct.unpack_from("<I", f.data)[0]
                assert f.data == struct.pack("<I", seq) * 16 and f.stamp_ns == seq
                got.append(seq)
            if finished and not batch:
                return

    consumer = threading.Thread(target=consume)
    consumer.start()
    refused = sum(put(r, struct.pack("<I", i) * 16, stamp=i) != 0 for i in range(total))
    done.set()
    consumer.join(60)
    assert not consumer.is_alive()
    frames, drops = counts(r)
    assert drops == refused and frames == len(got) == total - refused
    assert got == sorted(set(got))  # in order, none twice


# -- pcapng, read back by tshark ----------------------------------------------------------


def _sync_frame() -> bytes:
    # an RTmac/TDMA Sync (RTnet's layout: RTmac header, TDMA header, cycle, stamps),
    # padded to the Ethernet minimum
    return (
        bytes.fromhex("ffffffffffff02525400000190210001020002010000")
        + struct.pack("!Iqq", 7, 1_000_000, 1_000_500)
        + bytes(18)
    )


def tshark_fields(path, *fields) -> list[list[str]]:
    exe = require_tool("tshark")
    args = [exe, "-r", str(path), "-T", "fields"]
    for f in fields:
        args += ["-e", f]
    res = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return [line.split("\t") for line in res.stdout.splitlines()]


def test_tshark_should_read_ns_time_stamps_direction_and_comments(tmp_path):
    base = 1_764_586_913_123_456_789  # ns since the epoch, every digit significant
    frame = _sync_frame()
    data = (
        pcapng.section_header()
        + pcapng.interface_description(2048, "rteth0")
        + pcapng.enhanced_packet(base, frame, outbound=True, comment="rtnet tx handover=5")
        + pcapng.enhanced_packet(base + 1, frame[:40], len(frame), outbound=False)
        + pcapng.enhanced_packet(base + 10**9 + 7, frame[:41])
    )
    path = tmp_path / "t.pcapng"
    path.write_bytes(data)
    rows = tshark_fields(
        path,
        "frame.time_epoch",
        "frame.len",
        "frame.cap_len",
        "frame.packet_flags_direction",
        "frame.comment",
    )
    assert rows == [
        ["1764586913.123456789", "60", "60", "0x00000002", "rtnet tx handover=5"],
        ["1764586913.123456790", "60", "40", "0x00000001", ""],
        ["1764586914.123456796", "41", "41", "", ""],
    ]


def test_a_capture_should_be_time_stamped_in_realtime_with_the_stack_stamps_in_the_comment(
    tmp_path,
):
    frame = _sync_frame()
    frames = [
        CapturedFrame(
            outbound=True,
            data=frame,
            orig_len=len(frame),
            stamp_ns=5_000_123,
            os_ns=1_000_000_001,
            sched_ns=5_000_000,
            xdp_stamp=False,
        ),
        CapturedFrame(
            outbound=False,
            data=frame[:20],
            orig_len=len(frame),
            stamp_ns=5_080_000,
            os_ns=1_000_080_000,
            sched_ns=None,
            xdp_stamp=True,
        ),
    ]
    path = tmp_path / "c.pcapng"
    path.write_bytes(
        to_pcapng(
            frames, realtime_minus_monotonic=1_700_000_000 * 10**9, snaplen=2048, ifname="rteth0"
        )
    )
    rows = tshark_fields(
        path,
        "frame.time_epoch",
        "frame.len",
        "frame.cap_len",
        "frame.packet_flags_direction",
        "frame.comment",
        "_ws.malformed",
    )
    assert rows == [
        [
            "1700000001.000000001",
            "60",
            "60",
            "0x00000002",
            "rtnet tx handover=5000123 sched=5000000",
            "",
        ],
        ["1700000001.000080000", "60", "20", "0x00000001", "rtnet rx xdp=5080000", ""],
    ]


def test_a_time_stamp_before_the_epoch_should_be_refused():
    with pytest.raises(ValueError, match="before the epoch"):
        pcapng.enhanced_packet(-1, b"x" * 14)


# -- rtnetctl capture's file ------------------------------------------------------------------


def _fake_daemon(monkeypatch, frames: list[CapturedFrame]):
    import base64

    from rtnet import stationctl

    data = to_pcapng(frames, realtime_minus_monotonic=0, snaplen=2048)

    def request(dev, req, **kw):
        assert req["cmd"] == "capture" and req["depth"] == 1024
        return {
            "ok": True,
            "frames": len(frames),
            "dropped": 3,
            "pcapng_b64": base64.b64encode(data).decode(),
        }

    monkeypatch.setattr(stationctl, "request", request)


def test_rtnetctl_capture_should_write_the_daemons_pcapng_and_say_what_was_dropped(
    monkeypatch, tmp_path, capsys
):
    from rtnet import cli

    frame = _sync_frame()
    _fake_daemon(monkeypatch, [CapturedFrame(True, frame, len(frame), 1, 10**18, 1, False)])
    path = tmp_path / "out.pcapng"
    assert cli.main(["capture", "-w", str(path), "-c", "1"]) == 0
    assert capsys.readouterr().out == f"1 frames written to {path} (3 dropped: capture ring full)\n"
    assert tshark_fields(path, "frame.time_epoch") == [["1000000000.000000000"]]


def test_rtnetctl_capture_into_a_file_that_fails_to_be_written_should_end_with_one_line(
    monkeypatch, capsys
):
    from rtnet import cli

    _fake_daemon(monkeypatch, [])
    assert cli.main(["capture", "-w", "/dev/full"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("rtnetctl: /dev/full: ")
