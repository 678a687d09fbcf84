"""The realtime-monotonic offset: stable across reads, and not skewed by a stall."""

import time

from rtnet import clocks


def test_the_offset_is_stable_across_reads():
    a = clocks.realtime_minus_monotonic_ns()
    b = clocks.realtime_minus_monotonic_ns()
    # both clocks run at the same rate; only a clock step (never in a test run) moves it
    assert abs(a - b) < 1_000_000


def test_a_stall_between_two_reads_does_not_skew_the_offset(monkeypatch):
    """The first bracket is stalled 5 ms between its reads; the narrowest wins."""
    real_mono = time.monotonic_ns
    calls = {"n": 0}

    def stalled_mono():
        calls["n"] += 1
        t = real_mono()
        return t + 5_000_000 if calls["n"] == 2 else t  # the first bracket's end read

    monkeypatch.setattr(clocks.time, "monotonic_ns", stalled_mono)
    skewed = clocks.realtime_minus_monotonic_ns()
    monkeypatch.setattr(clocks.time, "monotonic_ns", real_mono)
    assert abs(skewed - clocks.realtime_minus_monotonic_ns()) < 1_000_000
