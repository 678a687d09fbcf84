"""tools/bench_suite.binary_search: RFC 2544's search, with and without ETSI GS NFV-TST 009's
loss verification (a lossy trial repeated at the same rate)."""
import importlib
import os

import pytest

TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools")


@pytest.fixture
def search(monkeypatch):
    monkeypatch.syspath_prepend(TOOLS)
    return importlib.import_module("bench_suite").binary_search


def limit_trial(limit, stalls=()):
    """A stack that carries up to ``limit`` percent; the trials numbered in ``stalls`` (from 0)
    lose frames at any rate, as a trial the VM stalls does."""
    calls = []

    def trial(rate):
        calls.append(rate)
        ok = rate <= limit and len(calls) - 1 not in stalls
        return ok, {"rate_seen": rate}
    return trial, calls


def test_without_verification_one_stalled_trial_sinks_the_rate(search):
    trial, _ = limit_trial(100, stalls={0})
    best, tried = search(trial, 100.0, 1.0, 8)
    assert best[0] < 100 and tried[0] == {"rate": 100.0, "ok": False, "repeat": 0,
                                          "rate_seen": 100.0}


def test_verification_repeats_a_lossy_trial_at_the_same_rate(search):
    trial, calls = limit_trial(100, stalls={0})
    best, tried = search(trial, 100.0, 1.0, 8, verify=1)
    assert best[0] == 100.0 and calls == [100.0, 100.0]
    assert [(t["rate"], t["ok"], t["repeat"]) for t in tried] == [(100.0, False, 0),
                                                                  (100.0, True, 1)]


def test_a_rate_beyond_the_limit_fails_every_repeat(search):
    trial, calls = limit_trial(70)
    best, tried = search(trial, 100.0, 1.0, 8, verify=2)
    assert 69.0 <= best[0] <= 70.0
    for rate in {t["rate"] for t in tried if not t["ok"]}:
        assert calls.count(rate) == 3                  # the first trial and two repeats
    assert all(calls.count(t["rate"]) == 1 for t in tried if t["ok"])


def test_max_trials_bounds_the_rates_not_the_repeats(search):
    trial, calls = limit_trial(0)                      # nothing passes
    best, tried = search(trial, 100.0, 1.0, 3, verify=1)
    assert best is None and sorted(set(calls), reverse=True) == [100.0, 50.0, 25.0]
    assert len(tried) == 6
