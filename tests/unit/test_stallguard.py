"""tests/stallguard.py: the overlap test, the exclusion counts and the twice-in-a-row rule
that the lab tests use to leave out what a stall of the VM overlapped."""

import itertools
from dataclasses import dataclass

import pytest
from stallguard import (
    Stalls,
    Tally,
    TooDisturbed,
    Windows,
    describe,
    global_minus_monotonic_ns,
    split,
    twice,
)


@dataclass(frozen=True)
class Rec:  # the fields of rtnet.stall.Stall that matter here
    due_ns: int
    woke_ns: int


def test_a_sample_overlaps_a_stall_it_touches_and_no_other():
    s = Stalls([Rec(100, 200), Rec(500, 600)])
    assert s.overlaps(150, 160)  # inside
    assert s.overlaps(50, 100)  # ends where the stall starts
    assert s.overlaps(200, 300)  # starts where it ends
    assert s.overlaps(0, 1000)  # spans both
    assert s.overlaps(550, 550)  # an instant inside
    assert s.overlaps(160, 150)  # given the wrong way round
    assert not s.overlaps(0, 99)
    assert not s.overlaps(201, 499)
    assert not s.overlaps(601, 10**12)
    assert not Stalls([]).overlaps(0, 10**12)


def test_the_margin_widens_each_stall_on_both_sides():
    s = Stalls([Rec(1000, 2000)], pad_ns=100)
    assert s.overlaps(2050, 2100) and s.overlaps(850, 900)
    assert not s.overlaps(2101, 3000) and not s.overlaps(0, 899)
    with pytest.raises(ValueError, match="pad_ns"):
        Stalls([], pad_ns=-1)


def test_overlapping_and_nested_records_merge_and_any_order_is_taken():
    recs = [Rec(500, 520), Rec(100, 300), Rec(150, 200), Rec(290, 400), Rec(2000, 2001)]
    s = Stalls(iter(recs))  # a generator is read once
    assert len(s) == 3 and s.records == 5
    assert s.covered_ns() == 300 + 20 + 1
    # a nested record must not hide the longer one it is inside: 350 is in 100..400
    assert s.overlaps(350, 360)
    assert not s.overlaps(401, 499)


def test_overlap_agrees_with_rtnet_stall_for_every_small_case():
    # Stall.overlaps is half-open (due < end and start < woke); ours is closed so a sample
    # touching a stall is excluded too: they differ only at the edges
    recs = [Rec(3, 5), Rec(9, 9), Rec(12, 15)]
    s = Stalls(recs)
    for a, b in itertools.combinations_with_replacement(range(18), 2):
        closed = any(r.due_ns <= b and a <= r.woke_ns for r in recs)
        assert s.overlaps(a, b) == closed, (a, b)


def test_split_keeps_the_undisturbed_and_counts_the_rest():
    s = Stalls([Rec(100, 200)])
    items = [(0, 50), (90, 110), (150, 150), (210, 300), (199, 250)]
    kept, t = split(items, lambda x: x, s, "probes")
    assert kept == [(0, 50), (210, 300)]
    assert (t.total, t.excluded, t.kept) == (5, 3, 2)
    assert t.too_disturbed
    assert str(t) == "probes: 3 of 5 excluded (a stall overlapped them)"


def test_exactly_half_excluded_is_not_too_disturbed():
    assert not Tally("x", 10, 5).too_disturbed
    assert Tally("x", 10, 6).too_disturbed
    assert not Tally("x", 0, 0).too_disturbed
    t = Tally("x")
    assert t.count(False) and not t.count(True) and (t.total, t.excluded) == (2, 1)


def _runs(*tallies):
    """A measurement that returns the given tallies in turn, with the run number."""
    it = iter(tallies)
    calls = []

    def measure():
        calls.append(1)
        t = next(it)
        if isinstance(t, Exception):
            raise t
        return len(calls), t

    return measure, calls


def test_a_calm_first_run_is_taken_and_not_repeated():
    measure, calls = _runs(Tally("cycles", 100, 50))
    said = []
    assert twice(measure, "10,000 cycles", give_up=pytest.fail, say=said.append) == 1
    assert calls == [1]
    assert said == ["10,000 cycles, run 1: cycles: 50 of 100 excluded (a stall overlapped them)"]


def test_a_disturbed_first_run_is_repeated_once_and_a_calm_repeat_taken():
    measure, calls = _runs(
        [Tally("a", 10, 1), Tally("b", 10, 6)], [Tally("a", 10, 0), Tally("b", 10, 5)]
    )
    said = []
    assert twice(measure, "m", give_up=pytest.fail, say=said.append) == 2
    assert len(calls) == 2 and len(said) == 2


def test_disturbed_twice_in_a_row_gives_up_with_both_counts():
    measure, calls = _runs(Tally("probes", 300, 200), TooDisturbed([Tally("probes", 280, 141)]))
    reasons = []
    assert twice(measure, "forged Syncs", give_up=reasons.append, say=lambda _: None) is None
    assert len(calls) == 2
    [r] = reasons
    assert r.startswith("VM too disturbed: forged Syncs")
    assert "200 of 300" in r and "141 of 280" in r


def test_disturbed_twice_skips_locally_and_fails_under_ci(monkeypatch):
    import conftest

    measure, _ = _runs(Tally("x", 4, 3), Tally("x", 4, 3))
    monkeypatch.setattr(conftest, "IN_CI", False)
    with pytest.raises(pytest.skip.Exception, match="VM too disturbed"):
        twice(measure, "m", say=lambda _: None)
    measure, _ = _runs(Tally("x", 4, 3), Tally("x", 4, 3))
    monkeypatch.setattr(conftest, "IN_CI", True)
    with pytest.raises(pytest.fail.Exception, match="CI=true but VM too disturbed"):
        twice(measure, "m", say=lambda _: None)


def test_the_global_clock_offset_comes_from_the_narrowest_bracket():
    # brackets of width 10, 2 (a stall-free read) and 50; global = monotonic + 1000
    ticks = iter([0, 10, 100, 102, 200, 250])
    reads = iter([1005 + 7, 1101, 1225 + 40])  # the wide brackets' reads are skewed
    off = global_minus_monotonic_ns(lambda: next(reads), tries=3, monotonic=lambda: next(ticks))
    assert off == 1000


def test_windows_time_what_a_cumulative_statistic_gained():
    clock = iter(range(0, 100, 10))
    values = iter([1, 4, 9])
    w = Windows(lambda: next(values), monotonic=lambda: next(clock))
    w.take(), w.take(), w.take()
    # each window from before the earlier read to after the later one
    assert w.windows() == [(0, 30, 1, 4), (20, 50, 4, 9)]


@dataclass(frozen=True)
class Kind:
    due_ns: int
    woke_ns: int
    kind: str


def test_describe_sums_gaps_and_slow_spells():
    recs = [Kind(0, 200_000, "gap"), Kind(0, 6_000_000, "slow"), Kind(10, 300_010, "gap")]
    assert describe(recs) == (
        "stall detector: 2 gaps with the CPU taken away (0.5 ms), 0 with it busy with the "
        "machine's own work (0.0 ms), 1 slow spells (6.0 ms)"
    )
    assert describe([]).startswith("stall detector: 0 gaps with the CPU taken away (0.0 ms)")


def test_describe_tells_a_busy_cpu_from_one_taken_away():
    from rtnet.stall import Stall

    recs = [
        Stall(0, 0, 1_000_000, queued_ns=900_000),  # runnable nearly all of it: busy
        Stall(0, 0, 2_000_000, queued_ns=10_000),  # the timer itself was late: taken
        Stall(1, 0, 3_000_000),  # unknown: counted as taken
    ]
    assert [r.cpu_taken for r in recs] == [False, True, True]
    assert describe(recs) == (
        "stall detector: 2 gaps with the CPU taken away (5.0 ms), 1 with it busy with the "
        "machine's own work (1.0 ms), 0 slow spells (0.0 ms)"
    )


def test_the_catch_up_margin_after_a_stall_grows_with_its_length():
    s = Stalls([Rec(1000, 2000), Rec(10_000, 10_100)], pad_ns=50, catch_up=2.0)
    assert s.overlaps(3990, 4000) and not s.overlaps(4001, 4100)  # 2 x 1000 after the first
    assert s.overlaps(10_150, 10_160) and not s.overlaps(10_301, 10_400)  # 2 x 100
    assert s.overlaps(950, 960) and not s.overlaps(900, 949)  # before: the plain margin
    with pytest.raises(ValueError, match="catch_up"):
        Stalls([], catch_up=-1)
