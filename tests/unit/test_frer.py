"""IEEE 802.1CB FRER (csrc/frer/rtn_frer.c): the vector recovery algorithm, sequence
generation and the R-TAG helpers, against cases written out here, a property
over random loss, duplication and reordering, and Wireshark's dissector."""

import doctest
import errno
import os
import shutil
import struct
import subprocess

import pytest
from conftest import skip_or_fail
from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.layers.l2 import Ether

from rtmac import frames
from rtmac.testing import scapy_rtag
from rtmac.testing.scapy_layers import RTmac, TdmaSync
from rtmac.testing.scapy_rtag import RTag
from rtnet._lowlevel import ffi, lib

MS = 1_000_000
NONE = lib.RTN_RTAG_NONE
PORT_FIELDS = ("passed", "discarded", "out_of_order", "rogue", "tagless")


class Stream:
    """One stream's recovery, fed (port, seq) arrivals; seq None is an untagged packet."""

    def __init__(self, history=8, reset_ms=0, take_no_sequence=False):
        self.r = ffi.new("struct rtn_frer_rcvy *")
        assert lib.rtn_frer_rcvy_init(self.r, history, reset_ms, take_no_sequence) == 0
        self.now = 0

    def feed(self, port, seq, at=None):
        self.now = self.now if at is None else at
        rc = lib.rtn_frer_recover(self.r, port, NONE if seq is None else seq, self.now)
        assert rc in (0, 1)
        return bool(rc)

    def both(self, seqs):
        """Each sequence number on port 0, then its copy on port 1: what passed."""
        return [(s, p) for s in seqs for p in (0, 1) if self.feed(p, s)]

    def count(self, port=None):
        c = self.r.total if port is None else self.r.port[port]
        out = {f: getattr(c, f) for f in PORT_FIELDS}
        if port is None:
            out.update(lost=self.r.lost, resets=self.r.resets)
        return out


def counters(**kw):
    base = {f: 0 for f in PORT_FIELDS} | {"lost": 0, "resets": 1}  # BEGIN is a reset
    return base | kw


# -- the cases ------------------------------------------------------------------------------


def test_in_order_on_two_ports_passes_each_once_and_discards_the_copies():
    s = Stream()
    assert s.both(range(10)) == [(i, 0) for i in range(10)]
    assert s.count() == counters(passed=10, discarded=10)
    assert s.count(0) == dict.fromkeys(PORT_FIELDS, 0) | {"passed": 10}
    assert s.count(1) == dict.fromkeys(PORT_FIELDS, 0) | {"discarded": 10}


def test_one_port_losing_frames_loses_nothing():
    s = Stream(history=4)
    for seq in range(10):
        if seq not in (3, 4):
            s.feed(0, seq)
        s.feed(1, seq)
    assert s.count() == counters(passed=10, discarded=8)
    assert (s.r.port[0].passed, s.r.port[1].passed) == (8, 2)


def test_a_sequence_lost_on_both_ports_counts_once_it_leaves_the_history():
    s = Stream(history=4)
    passed = s.both([0, 1, 2, 3, 4, 6, 7, 8])
    assert [p[0] for p in passed] == [0, 1, 2, 3, 4, 6, 7, 8]
    assert s.r.lost == 0  # 5 is still inside the window (6..9 would push it)
    s.both([9])
    assert s.count() == counters(passed=9, discarded=9, out_of_order=1, lost=1)  # 4 -> 6 jumped


def test_reordering_inside_the_history_passes_each_once_and_counts_out_of_order():
    s = Stream(history=8)
    order = [0, 1, 3, 2, 5, 4, 6]
    assert [s.feed(0, q) for q in order] == [True] * 7
    assert [s.feed(1, q) for q in order] == [False] * 7
    # 3 and 5 jump ahead, 2 and 4 arrive behind RecovSeqNum: four out of order, none lost
    assert s.count() == counters(passed=7, discarded=7, out_of_order=4)


def test_sequences_far_outside_the_history_are_rogue():
    s = Stream(history=8)
    s.both([10, 11, 12])
    assert not s.feed(0, 12 + 8)  # delta == history length: rogue
    assert not s.feed(1, 12 - 8)
    assert not s.feed(0, 40000)
    assert s.feed(0, 12 + 7)  # the edge of the window still passes
    assert s.count() == counters(passed=4, discarded=6, rogue=3, out_of_order=1)
    assert s.r.port[0].rogue == 2 and s.r.port[1].rogue == 1


def test_untagged_packets_are_counted_and_passed_only_when_configured():
    s = Stream()
    assert not s.feed(1, None)
    assert s.count() == counters(discarded=1, tagless=1) and s.r.port[1].tagless == 1
    t = Stream(take_no_sequence=True)
    assert t.feed(0, None) and t.feed(0, 5) and t.feed(0, None)
    assert t.count() == counters(passed=3, tagless=2)


def test_the_reset_timer_takes_any_sequence_after_a_silence():
    s = Stream(history=4, reset_ms=10)
    assert s.feed(0, 100, at=0) and s.feed(0, 101, at=5 * MS)
    assert not s.feed(0, 7, at=14 * MS)  # rogue, and rogues do not restart the timer
    assert lib.rtn_frer_tick(s.r, 15 * MS - 1) == 0
    assert lib.rtn_frer_tick(s.r, 15 * MS) == 1 and s.r.take_any == 1
    assert lib.rtn_frer_tick(s.r, 99 * MS) == 0  # one reset per silence
    assert s.feed(1, 7, at=99 * MS)  # TakeAny: the restarted sender is accepted
    assert not s.feed(0, 7) and s.feed(0, 8)
    assert s.count() == counters(passed=4, discarded=2, rogue=1, resets=2)


def test_the_reset_timer_also_runs_out_inside_recover():
    s = Stream(history=4, reset_ms=1)
    assert s.feed(0, 5, at=0)
    assert s.feed(0, 30000, at=MS)  # the timer ran out first: TakeAny
    assert s.r.resets == 2 and s.r.total.rogue == 0 and s.r.recov_seq == 30000


def test_a_clock_going_back_resets_nothing():
    s = Stream(history=4, reset_ms=1)
    s.feed(0, 1, at=10 * MS)
    assert lib.rtn_frer_tick(s.r, -(2**63)) == 0 and lib.rtn_frer_tick(s.r, 0) == 0
    assert s.r.resets == 1


def test_sequence_numbers_wrap_from_65535_to_0():
    s = Stream(history=4)
    seqs = [65533, 65534, 65535, 0, 1, 2]
    assert [p[0] for p in s.both(seqs)] == seqs
    assert s.count() == counters(passed=6, discarded=6)
    assert not s.feed(0, 65535) and s.r.total.rogue == 0  # a late copy across the wrap


def test_at_the_start_an_older_copy_passes_and_nothing_before_is_counted_lost():
    """Wire A lost the stream's first frame (49) and its second (50) came before B's 49."""
    s = Stream(history=4)
    assert s.feed(0, 50) and s.feed(1, 49) and not s.feed(0, 49)
    s.both([51, 52, 53, 54, 55])  # 47 and 48 leave the history unseen
    assert s.count() == counters(passed=7, discarded=6, out_of_order=1)


def test_after_the_reset_timer_older_copies_are_discarded_and_not_counted_lost():
    """An older copy after a silence may be the twin of one passed before it."""
    s = Stream(history=4, reset_ms=10)
    assert s.feed(0, 49, at=0) and lib.rtn_frer_tick(s.r, 20 * MS) == 1
    assert s.feed(0, 50) and not s.feed(1, 49)
    s.both([51, 52, 53, 54, 55])
    assert s.count() == counters(passed=7, discarded=6, resets=2)


def test_bad_configuration_and_arguments_are_refused():
    r = ffi.new("struct rtn_frer_rcvy *")
    for hist, reset in ((1, 0), (lib.RTN_FRER_HISTORY_MAX + 1, 0), (2, 3_600_001)):
        assert lib.rtn_frer_rcvy_init(r, hist, reset, 0) == -errno.EINVAL
    assert lib.rtn_frer_rcvy_init(r, lib.RTN_FRER_HISTORY_MAX, 3_600_000, 0) == 0
    for port, seq in ((2, 0), (0, 65536), (0, -2)):
        assert lib.rtn_frer_recover(r, port, seq, 0) == -errno.EINVAL
    assert r.total.passed == r.total.discarded == 0 and r.take_any == 1


def test_sequence_generation_counts_and_wraps():
    g = ffi.new("struct rtn_frer_seqgen *")
    lib.rtn_frer_seqgen_init(g)
    assert [lib.rtn_frer_seqgen_next(g) for _ in range(3)] == [0, 1, 2]
    g.next = 65534
    assert [lib.rtn_frer_seqgen_next(g) for _ in range(3)] == [65534, 65535, 0]


# -- the property ----------------------------------------------------------------------------


@st.composite
def arrivals(draw):
    """A stream with a history length, a start that may wrap, and per sequence number
    which ports deliver a copy and how late.  Lateness stays below J and runs of
    sequence numbers lost on both ports below L with J + L <= history - 2, so no
    arrival is outside the window (no rogue)."""
    hist = draw(st.sampled_from([2, 3, 4, 8, 33, 1024]))
    late_max = (hist - 2) // 2
    run_max = hist - 2 - late_max
    n = draw(st.integers(1, 120))
    base = draw(st.integers(0, 65535))
    fates = draw(
        st.lists(
            st.tuples(
                st.booleans(), st.booleans(), st.integers(0, late_max), st.integers(0, late_max)
            ),
            min_size=n,
            max_size=n,
        )
    )
    run = 0
    for i, (a, b, la, lb) in enumerate(fates):
        run = run + 1 if not (a or b) else 0
        if run > run_max:  # keep the runs short: port 0 delivers it
            fates[i], run = (True, b, la, lb), 0
    copies = [
        (i + late, i, port)
        for i, (a, b, la, lb) in enumerate(fates)
        for port, there, late in ((0, a, la), (1, b, lb))
        if there
    ]
    dup = draw(st.lists(st.integers(0, max(len(copies) - 1, 0)), max_size=5))
    copies += [copies[k] for k in dup if copies]  # a wire that duplicates a frame
    copies.sort()
    return hist, base, n, copies


@settings(max_examples=200, deadline=None)
@given(arrivals())
def test_every_sequence_that_arrived_passes_exactly_once(case):
    hist, base, n, copies = case
    s = Stream(history=hist)
    passed = [0] * n
    for _key, i, port in copies:
        passed[i] += s.feed(port, (base + i) % 65536)
    assert max(passed, default=0) <= 1
    if not copies:
        return
    first = copies[0][1]  # TakeAny accepted it; older ones pass late
    arrived = {i for _k, i, _p in copies}
    assert all(passed[i] == (i in arrived) for i in range(n))
    assert s.r.total.rogue == 0
    # lost: what never arrived, once RecovSeqNum is a history length past it
    top = max(arrived)
    assert s.r.lost == sum(1 for i in range(first, top - hist + 1) if i not in arrived)
    for p in (0, 1):
        got = sum(1 for c in copies if c[2] == p)
        assert s.r.port[p].passed + s.r.port[p].discarded == got
    for f in PORT_FIELDS:
        assert getattr(s.r.total, f) == getattr(s.r.port[0], f) + getattr(s.r.port[1], f)


# -- the R-TAG -----------------------------------------------------------------------------


def _insert(frame: bytes, seq: int, room: int = 6) -> bytes:
    buf = ffi.new("uint8_t[]", len(frame) + room)
    ffi.memmove(buf, frame, len(frame))
    n = lib.rtn_rtag_insert(buf, len(frame) + room, len(frame), seq)
    if n < 0:
        return n
    return bytes(ffi.buffer(buf, n))


def _strip(frame: bytes):
    buf = ffi.new("uint8_t[]", frame or b"\0")
    seq = ffi.new("int32_t *")
    n = lib.rtn_rtag_strip(buf, len(frame), seq)
    return (n, seq[0]) if n < 0 else (bytes(ffi.buffer(buf, n)), seq[0])


SYNC = frames.encode_sync("02:52:54:00:00:01", cycle_no=5, xmit_stamp=1000, sched_xmit_stamp=900)
APP = bytes.fromhex("ffffffffffff025254000002") + struct.pack("!H", 0x88B5) + b"hello" + bytes(41)


def test_insert_pushes_the_tag_after_the_macs_and_strip_takes_it_off():
    tagged = _insert(SYNC, 0x1234)
    assert tagged == SYNC[:12] + bytes.fromhex("f1c1 0000 1234") + SYNC[12:]
    assert _strip(tagged) == (SYNC, 0x1234)
    assert _strip(SYNC) == (SYNC, NONE)  # no tag: unchanged
    p = Ether(tagged)  # the scapy layer agrees
    assert (p[RTag].seq, p[RTag].type, p[TdmaSync].cycle_no) == (0x1234, 0x9021, 5)
    assert bytes(Ether(src=p.src, dst=p.dst) / RTag(seq=0x1234) / p[RTmac]) == tagged


def test_the_helpers_refuse_short_frames_and_full_buffers():
    assert _insert(SYNC[:13], 1) == -errno.EINVAL
    assert _insert(SYNC, 1, room=5) == -errno.ENOSPC
    assert _strip(SYNC[:13]) == (-errno.EINVAL, NONE)
    tagged = _insert(SYNC, 9)
    assert _strip(tagged[:19]) == (-errno.EBADMSG, NONE)  # the tag without its EtherType
    assert _strip(tagged[:20]) == (SYNC[:14], 9)


def test_the_scapy_layer_doctest():
    assert doctest.testmod(scapy_rtag).failed == 0


def test_wireshark_decodes_tagged_sync_and_application_frames(tmp_path):
    tshark = shutil.which("tshark")
    if tshark is None:
        skip_or_fail("tshark is not installed (run tools/setup-system.sh)")
    pcap = tmp_path / "rtag.pcap"
    with open(pcap, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))  # Ethernet
        for i, frame in enumerate((_insert(SYNC, 7), _insert(APP, 65535))):
            f.write(struct.pack("<IIII", i, 0, len(frame), len(frame)) + frame)
    res = subprocess.run(
        [tshark, "-r", str(pcap), "-V"],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, LC_ALL="C"),
    )
    assert res.returncode == 0, res.stderr
    sync, app = res.stdout.split("\nFrame 2:")
    assert "Malformed" not in res.stdout and "Expert Info" not in res.stdout
    assert "[Protocols in frame: eth:ethertype:ieee8021cb:ethertype:rtmac]" in sync
    for line in (
        "802.1CB Redundancy Tag, SEQ: 7",
        "Type: Real-Time Media Access Control (0x9021)",
        "Message ID: Synchronisation (0x0000)",
        "Cycle Number: 5",
        "Scheduled Transmission Time: 900",
    ):
        assert line in sync, line
    assert "802.1CB Redundancy Tag, SEQ: 65535" in app and "(0x88b5)" in app
    assert "68656c6c6f" in app  # the payload, where it belongs


@pytest.mark.parametrize("seq", [0, 1, 0x7FFF, 0x8000, 65535])
def test_insert_then_strip_is_the_identity(seq):
    assert _strip(_insert(APP, seq)) == (APP, seq)
