"""Stage stamps (csrc/core/rtn_app_hdr.c) and stage statistics (csrc/core/rtn_stages.c) without a
station: the header parse on good, short and lying frames, the histograms, outlier counts
and over-deadline records, and the application library's take stamp."""

import struct

import pytest
from fake_channel import ET, STATION_MAC, FakeChannelMemory

from rtnet import stages
from rtnet._lowlevel import ffi, lib
from rtnet.app import Channel
from rtnet.daemon import json_safe
from rtnet.errors import ConfigError
from rtnet.stationctl import format_stages

ETH = STATION_MAC + bytes.fromhex("025254000009") + struct.pack("!H", ET)


def xhdr(
    seq=7, sched=1000, tx=4000, hlen=lib.RTN_APP_XHDR_LEN, handover=2000, pickup=3000, extra=b""
):
    return (
        struct.pack("!IIqqHHqq", lib.RTN_APP_MAGIC_X, seq, sched, tx, hlen, 0, handover, pickup)
        + extra
    )


def parse(frame: bytes):
    st = ffi.new("struct rtn_app_stamps *")
    rc = lib.rtn_app_hdr_parse(frame, len(frame), st)
    return rc, st


def test_an_extended_header_gives_every_sender_stamp_and_the_payload_start():
    rc, st = parse(ETH + xhdr() + b"payload")
    assert rc == 1 and st.seq == 7 and st.hdr_len == lib.RTN_APP_OVERHEAD
    assert [st.t[i] for i in range(lib.RTN_STAMP_N)] == [1000, 2000, 3000, 4000, 0, 0, 0]


def test_the_short_header_of_probes_still_parses():
    rc, st = parse(ETH + struct.pack("!IIqq", lib.RTN_APP_MAGIC, 3, 10, 20) + b"x")
    assert rc == 1 and st.hdr_len == 14 + lib.RTN_APP_HDR_LEN
    assert (st.seq, st.t[lib.RTN_STAMP_SCHED], st.t[lib.RTN_STAMP_TX]) == (3, 10, 20)
    assert st.t[lib.RTN_STAMP_HANDOVER] == st.t[lib.RTN_STAMP_PICKUP] == 0


def test_a_longer_header_is_skipped_whole():
    """A later version may append stamps: the payload starts where the length says."""
    rc, st = parse(ETH + xhdr(hlen=lib.RTN_APP_XHDR_LEN + 8, extra=b"\1" * 8) + b"p")
    assert rc == 1 and st.hdr_len == lib.RTN_APP_OVERHEAD + 8


@pytest.mark.parametrize("frame", [ETH, ETH + b"RTN", ETH + b"\0" * 40, b"\xff" * 13])
def test_a_frame_without_an_application_header_is_raw(frame):
    rc, st = parse(frame)
    assert rc == 0 and st.hdr_len == 14 and st.seq == 0 and st.t[lib.RTN_STAMP_SCHED] == 0


@pytest.mark.parametrize(
    "frame",
    [
        ETH + xhdr()[: lib.RTN_APP_XHDR_LEN - 1],  # short extended header
        ETH + struct.pack("!IIq", lib.RTN_APP_MAGIC, 1, 2),  # short probe header
        ETH + xhdr(hlen=lib.RTN_APP_XHDR_LEN - 2),  # claims less than its form
        ETH + xhdr(hlen=0),
        ETH + xhdr(hlen=lib.RTN_APP_XHDR_LEN + 1),  # claims more than the frame
        ETH + xhdr(hlen=0xFFFF) + b"x" * 100,
    ],
)
def test_a_short_or_lying_header_is_refused_with_nothing_half_read(frame):
    rc, st = parse(frame)
    assert rc == -1 and st.seq == 0 and all(st.t[i] == 0 for i in range(lib.RTN_STAMP_N))


def test_put_and_the_pickup_stamp_round_trip_and_leave_other_headers_alone():
    buf = bytearray(ETH + bytes(lib.RTN_APP_XHDR_LEN) + b"abc")
    cbuf = ffi.from_buffer("uint8_t[]", buf)
    lib.rtn_app_hdr_put(cbuf, 9, 100, 150)
    lib.rtn_app_hdr_stamp_pickup(cbuf, len(buf), 170)
    rc, st = parse(bytes(buf))
    assert rc == 1 and st.seq == 9
    assert [st.t[i] for i in range(4)] == [100, 150, 170, 0]
    probe = bytearray(ETH + struct.pack("!IIqq", lib.RTN_APP_MAGIC, 1, 2, 3) + bytes(30))
    before = bytes(probe)
    lib.rtn_app_hdr_stamp_pickup(ffi.from_buffer("uint8_t[]", probe), len(probe), 170)
    assert bytes(probe) == before


# ---- stage statistics ------------------------------------------------------------------


@pytest.fixture
def st():
    s = ffi.new("struct rtn_stages *")
    lib.rtn_stages_init(s)
    return s


def add(s, seq, deltas_us, t0=1_000_000_000, missing=()):
    """A message whose stages last ``deltas_us``; the stamps in ``missing`` left 0."""
    t = [t0]
    for d in deltas_us:
        t.append(t[-1] + int(d * 1000))
    for i in missing:
        t[i] = 0
    lib.rtn_stages_add(s, seq, ffi.new("int64_t[]", t))


ON_TIME = [5, 240, 10, 20, 2, 8]  # 285 us, the lab's usual breakdown


def test_every_stage_gets_its_histogram_and_outliers_are_counted(st):
    lib.rtn_stages_set(st, 100_000, 0)
    for i in range(10):
        add(st, i, ON_TIME)
    add(st, 10, [5, 240, 150, 20, 2, 8])
    sm = stages.summary(st)
    assert sm["messages"] == 11 and sm["late"] == 0 and sm["late_records"] == []
    assert [sm["stages"][n]["hist"].count for n in stages.STAGES] == [11] * 6
    assert {n: g["outliers"] for n, g in sm["stages"].items()} == {
        "app": 0,
        "queue": 11,
        "slot": 1,
        "wire": 0,
        "rx_rt": 0,
        "take": 0,
    }
    assert sm["stages"]["slot"]["hist"].max_ns == 150_000


def test_an_unstamped_stage_is_not_counted(st):
    add(st, 1, ON_TIME, missing=(lib.RTN_STAMP_HANDOVER, lib.RTN_STAMP_TAKE))
    sm = stages.summary(st)
    counts = {n: sm["stages"][n]["hist"].count for n in stages.STAGES}
    assert counts == {"app": 0, "queue": 0, "slot": 1, "wire": 1, "rx_rt": 1, "take": 0}


def test_a_message_over_its_deadline_names_the_stage_that_took_the_time(st):
    for i in range(50):
        add(st, i, ON_TIME)
    add(st, 100, [5, 240, 1010, 20, 2, 8])  # the slot skipped a cycle
    add(st, 101, [800, 240, 10, 20, 2, 8])  # the application woke late
    add(st, 102, [5, 240, 10, 20, 2, 900])  # the receiving application was late
    late = stages.LateReader(st).read()
    assert [(r.seq, r.stage, r.cause) for r in late] == [
        (100, "slot", "slot skipped"),
        (101, "app", "application woke late"),
        (102, "take", "receiver late"),
    ]
    assert late[0].total_ns == 1_285_000 and late[0].excess_ns == 1_000_000
    assert late[1].stage_ns["queue"] == 240_000 and set(late[1].stage_ns) == set(stages.STAGES)


def test_late_messages_do_not_move_the_baseline(st):
    for i in range(20):
        add(st, i, ON_TIME)
    for i in range(20):
        add(st, 100 + i, [5, 240, 1010, 20, 2, 8])
    excess = [r.excess_ns for r in stages.LateReader(st).read()]
    assert excess == [1_000_000] * 20


def test_the_record_ring_keeps_the_newest_and_a_reader_sees_each_once(st):
    lib.rtn_stages_set(st, 0, 1000)  # 1 us: every message is late
    reader = stages.LateReader(st)
    n = lib.RTN_STAGES_LATE_MAX + 10
    for i in range(n):
        add(st, i, ON_TIME)
    first = reader.read()
    assert [r.seq for r in first] == list(range(10, n))
    add(st, n, ON_TIME)
    assert [r.seq for r in reader.read()] == [n] and reader.read() == []
    assert [r.seq for r in stages.LateReader(st, start_now=True).read()] == []


def test_thresholds_are_checked(st):
    assert lib.rtn_stages_set(st, -1, 0) < 0 and lib.rtn_stages_set(st, 0, -5) < 0
    assert st.outlier_ns == lib.RTN_STAGES_OUTLIER_DEFAULT_NS
    assert st.deadline_ns == lib.RTN_STAGES_DEADLINE_DEFAULT_NS
    for bad in (0, -3, True, "1", 1e9):
        with pytest.raises(ConfigError):
            stages.check_thresholds(bad, None)
    assert stages.check_thresholds(None, 2.5) == (0, 2500)


def test_status_lists_the_stages_and_the_late_messages(st):
    for i in range(5):
        add(st, i, ON_TIME)
    add(st, 9, [5, 240, 1010, 20, 2, 8])
    text = "\n".join(format_stages(json_safe(stages.summary(st))))
    assert "6 messages, 1 over the 1000 us deadline" in text
    assert "pick-up -> TX ring" in text
    assert "late: seq 9 1285.0 us, slot +1000.0 us (slot skipped)" in text
    assert format_stages(None) == [] and format_stages({"messages": 0}) == []


# ---- the application library's side -----------------------------------------------------


@pytest.fixture
def mem():
    m = FakeChannelMemory()
    yield m
    m.close()


def test_recv_gives_every_stamp_and_counts_the_take(mem):
    with Channel.attach(*mem.fds()) as ch:
        t0 = ch.global_now()
        mem.deliver(
            ETH
            + xhdr(
                seq=5,
                sched=t0 - 900_000,
                handover=t0 - 895_000,
                pickup=t0 - 655_000,
                tx=t0 - 645_000,
            )
            + b"hi",
            rx_ns=t0 - 625_000,
            rx_rt_ns=t0 - 623_000,
        )
        msg = ch.recv(timeout=0)
        assert msg.payload == b"hi" and msg.seq == 5
        stamps = [
            msg.sched_ns,
            msg.handover_ns,
            msg.pickup_ns,
            msg.tx_ns,
            msg.rx_ns,
            msg.rx_rt_ns,
            msg.take_ns,
        ]
        assert stamps == sorted(stamps) and msg.take_ns >= t0
        sm = ch.stages()
        assert sm["messages"] == 1
        assert sm["stages"]["queue"]["hist"].max_ns == 240_000
        assert sm["stages"]["take"]["hist"].min_ns >= 623_000


def test_a_header_rewritten_to_lie_in_the_ring_is_counted_and_read_as_raw(mem):
    frame = ETH + xhdr() + b"tail"
    mem.deliver(frame)
    m = mem.rx(0)
    m.frame[lib.RTN_APP_HLEN_OFF] = 0xFF  # after the station's check
    with Channel.attach(*mem.fds()) as ch:
        msg = ch.recv(timeout=0)
        assert len(msg.payload) == len(frame) - 14 and msg.payload.endswith(b"tail")
        assert ch.stats()["rx_bad_hdr"] == 1


def test_the_tx_stamp_goes_into_either_header_form_and_never_into_a_raw_frame():
    probe = ETH + struct.pack("!IIqq", lib.RTN_APP_MAGIC, 1, 2, 3)
    for frame, off in (
        (ETH + xhdr(), lib.RTN_APP_TX_OFF),
        (probe, lib.RTN_APP_TX_OFF),
        (probe[:-1], -1),
        (ETH + b"\0" * 40, -1),
    ):
        assert lib.rtn_app_hdr_tx_off(frame, len(frame)) == off


# ---- misses matched to the stall detector's gaps and slow spells --------------------------


def _late(seq, sched_ns, total_ns, stage="pickup"):
    return stages.LateRecord(
        seq=seq,
        stage=stage,
        sched_ns=sched_ns,
        total_ns=total_ns,
        excess_ns=total_ns // 2,
        stage_ns={stage: total_ns},
    )


def test_misses_are_matched_to_the_gaps_and_slow_spells_their_life_overlaps():
    from rtnet.stall import Stall

    records = [
        _late(1, 1_000_000, 1_500_000),  # a gap inside its life
        _late(2, 10_000_000, 1_200_000),  # a slow spell only
        _late(3, 20_000_000, 1_100_000),  # both: counted as a stall
        _late(4, 30_000_000, 1_100_000),
    ]  # nothing the CPU explains
    stalls = [
        Stall(1, 1_500_000, 1_800_000),
        Stall(0, 9_000_000, 10_500_000, "slow", 12.0),
        Stall(1, 20_100_000, 20_300_000),
        Stall(0, 20_000_000, 21_000_000, "slow", 5.0),
        Stall(1, 40_000_000, 40_500_000),
    ]  # after every record's life
    att = stages.attribute_misses(records, lost=2, stalls=stalls)
    c = att["by_cause"][records[0].cause]
    assert (c["misses"], c["with_stall"], c["in_slow"]) == (4, 2, 1)
    assert att["by_cause"][stages.DROPPED] == {
        "misses": 2,
        "with_stall": None,
        "in_slow": None,
        "excess_us": [],
    }
    by_seq = {m["seq"]: m for m in att["misses"]}
    assert by_seq[1]["stall_us"] == 300 and by_seq[1]["stall_cpus"] == [1]
    assert by_seq[2]["stall_us"] == 0 and by_seq[2]["slowdown"] == 12.0
    assert by_seq[3]["slow_cpus"] == [0] and by_seq[4]["stall_cpus"] == by_seq[4]["slow_cpus"] == []
    assert stages.cause_text(c) == "4 (2 with a CPU stall, 1 in a slow spell)"
    assert stages.cause_text(att["by_cause"][stages.DROPPED]) == "2"


@pytest.mark.parametrize(
    "factor,work_us,period_us",
    [(1, 2, 500), (-1, 2, 500), (1001, 2, 500), (4, 0.05, 500), (4, 200, 5000), (4, 60, 500)],
)
def test_a_slow_spell_detector_that_cannot_work_is_refused_before_any_thread_starts(
    factor, work_us, period_us
):
    from rtnet.errors import RtThreadError
    from rtnet.stall import StallDetector

    with pytest.raises(RtThreadError, match="slow factor"):
        StallDetector([0], period_us=period_us, slow_factor=factor, work_us=work_us)
