"""rtnet.stall.TakenSpans: the spans the hypervisor took a CPU, widened and merged, that a
benchmark (vnic bench --witness) holds its RT slot misses against."""

import pytest

from rtnet.stall import Stall, TakenSpans


def gap(due, woke, queued=0):
    return Stall(0, due, woke, queued_ns=queued)


def test_only_a_cpu_taken_away_makes_a_span():
    spans = TakenSpans(
        [
            gap(1000, 2000, queued=0),  # the timer itself fired late: taken
            gap(5000, 6000, queued=900),  # runnable most of it: the machine's own work
            Stall(1, 9000, 9500, "slow", 8.0),  # a slow spell: taken
        ],
        pad_ns=0,
    )
    assert len(spans) == 2
    assert spans.covers(1500) and spans.covers(9200)
    assert not spans.covers(5500)  # what the lab's load did stays counted


def test_the_pad_widens_both_sides_and_merges_what_then_touches():
    spans = TakenSpans([gap(1000, 2000), gap(2500, 3000), gap(10000, 11000)], pad_ns=300)
    assert len(spans) == 2  # the first two meet once widened
    assert spans.covers(700) and spans.covers(2200) and spans.covers(3300)
    assert not spans.covers(699) and not spans.covers(3301)
    assert spans.covers(9700) and not spans.covers(9699)


def test_no_records_cover_nothing_and_a_negative_pad_is_refused():
    assert not TakenSpans([], pad_ns=10**9).covers(0)
    with pytest.raises(ValueError):
        TakenSpans([], pad_ns=-1)


def test_a_life_overlaps_a_span_it_meets_and_no_other():
    spans = TakenSpans([gap(1000, 2000), gap(5000, 6000)], pad_ns=100)  # 900..2100, 4900..6100
    assert spans.overlaps(0, 900) and spans.overlaps(2100, 3000)  # touching an edge
    assert spans.overlaps(1500, 1500) and spans.overlaps(0, 10**9)
    assert spans.overlaps(3000, 5000)  # ends inside the second
    assert not spans.overlaps(0, 899) and not spans.overlaps(2101, 4899)
    assert not spans.overlaps(6101, 10**9)
    assert not TakenSpans([], pad_ns=0).overlaps(0, 10**18)
