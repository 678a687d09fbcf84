"""tools/rfc2544_search: RFC 2544's search, with and without ETSI GS NFV-TST 009's loss
verification (a lossy trial repeated at the same rate), the repeats of trials the VM
disturbed, and two searches in lockstep."""
import importlib
import os

import pytest

TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools")


@pytest.fixture
def mod(monkeypatch):
    monkeypatch.syspath_prepend(TOOLS)
    return importlib.import_module("rfc2544_search")


@pytest.fixture
def search(mod):
    return mod.binary_search


def limit_trial(limit, stalls=()):
    """A stack that carries up to ``limit`` percent; the trials numbered in ``stalls`` (from 0)
    lose frames at any rate, as a trial the VM stalls does."""
    calls = []

    def trial(rate):
        calls.append(rate)
        stalled = len(calls) - 1 in stalls
        return rate <= limit and not stalled, {"rate_seen": rate,
                                               "witness_slow_ms": 50.0 if stalled else 0.0}
    return trial, calls


def test_without_verification_one_stalled_trial_sinks_the_rate(search):
    trial, _ = limit_trial(100, stalls={0})
    best, tried = search(trial, 100.0, 1.0, 8)
    assert best[0] < 100 and tried[0] == {"rate": 100.0, "ok": False, "repeat": 0,
                                          "rate_seen": 100.0, "witness_slow_ms": 50.0}


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


def test_a_disturbed_lossy_trial_is_repeated_without_using_up_the_verification(mod, search):
    trial, calls = limit_trial(100, stalls={0, 1})     # two trials in a row the VM stalls
    best, tried = search(trial, 100.0, 1.0, 8, verify=0, retry_disturbed=2,
                         disturbed=mod.disturbed_by(10))
    assert best[0] == 100.0 and calls == [100.0] * 3
    assert [(t["ok"], t.get("disturbed", False), t["repeat"]) for t in tried] == [
        (False, True, 0), (False, True, 1), (True, False, 2)]


def test_an_undisturbed_lossy_trial_still_fails_the_rate(mod, search):
    trial, calls = limit_trial(70)                     # losses, but the VM was quiet
    best, tried = search(trial, 100.0, 1.0, 8, retry_disturbed=3,
                         disturbed=mod.disturbed_by(10))
    assert 69.0 <= best[0] <= 70.0 and not any(t.get("disturbed") for t in tried)
    assert all(calls.count(t["rate"]) == 1 for t in tried)


def test_a_rate_still_disturbed_after_its_repeats_fails(mod, search):
    trial, calls = limit_trial(100, stalls=set(range(3)))
    best, tried = search(trial, 100.0, 1.0, 8, retry_disturbed=2,
                         disturbed=mod.disturbed_by(10))
    assert best[0] < 100.0 and calls[:3] == [100.0] * 3 and calls[3] == 50.0


def test_below_the_limit_a_spell_is_not_a_disturbance(mod):
    disturbed = mod.disturbed_by(10)
    assert not disturbed({"witness_slow_ms": 6.0, "witness_gap_ms": 3.9})
    assert disturbed({"witness_slow_ms": 6.0, "witness_gap_ms": 4.0})
    assert not disturbed({})                           # no detector: never disturbed
    assert not mod.disturbed_by(0)({"witness_slow_ms": 1e6})


def test_lockstep_alternates_the_searches_and_each_finds_its_own_limit(mod):
    order = []

    def column(name, limit):
        def trial(rate):
            order.append(name)
            return rate <= limit, {}
        return trial
    found = mod.lockstep({1: column(1, 80), 2: column(2, 40)}, 100.0, 1.0, 8)
    assert 79.0 <= found[1][0][0] <= 80.0 and 39.0 <= found[2][0][0] <= 40.0
    assert order[:8] == [1, 2] * 4                     # in turn while both go on
    assert len(found[1][1]) == order.count(1) and len(found[2][1]) == order.count(2)


@pytest.fixture
def frer(monkeypatch):
    monkeypatch.syspath_prepend(TOOLS)
    return importlib.import_module("bench_frer")


def test_latency_pools_the_quiet_rounds_first_then_the_least_disturbed(frer):
    rounds = [{"disturbed": d, "vm_ms": ms, "n": i}
              for i, (d, ms) in enumerate([(True, 40.0), (False, 1.0), (True, 6.0),
                                           (False, 0.0), (True, 90.0)])]
    assert [r["n"] for r in frer.calmest(rounds, 3)] == [1, 2, 3]    # in the order they ran
    assert [r["n"] for r in frer.calmest(rounds, 9)] == [0, 1, 2, 3, 4]


def test_latency_rounds_stop_at_enough_quiet_ones_or_at_the_budget(frer, monkeypatch):
    import contextlib
    monkeypatch.setattr(frer, "redundant_stream", lambda *a, **k: contextlib.nullcontext())
    calls = []

    def trial(tx, rx, frame, fps, seconds, spell_every=None):
        calls.append(1)
        spell = spell_every is not None and len(calls) % spell_every == 0
        return True, {"hist": None, "witness_slow_ms": 50.0 if spell else 0.0}
    disturbed = importlib.import_module("rfc2544_search").disturbed_by(5)
    quiet = frer.latency_rounds(None, None, 0, 64, 1000.0, 0.1, trial, disturbed)
    assert len(quiet) == frer.LATENCY_ROUNDS and not any(r["disturbed"] for r in quiet)
    calls.clear()
    noisy = frer.latency_rounds(None, None, 0, 64, 1000.0, 0.1,
                                lambda *a: trial(*a, spell_every=1), disturbed)
    assert len(noisy) == frer.LATENCY_ROUNDS_BUDGET * frer.LATENCY_ROUNDS
    assert all(r["vm_ms"] == 50.0 for r in noisy)
    assert frer.latency_rounds(None, None, 0, 64, 0.0, 0.1, trial, disturbed) == []
