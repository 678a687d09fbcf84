"""tools/rfc2544_search: RFC 2544's search, with and without ETSI GS NFV-TST 009's loss
verification (a lossy trial repeated at the same rate), the repeats of trials the VM
disturbed, and two searches in lockstep."""

import pytest

from tools import rfc2544_search


@pytest.fixture
def mod():
    return rfc2544_search


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
        return rate <= limit and not stalled, {
            "rate_seen": rate,
            "witness_slow_ms": 50.0 if stalled else 0.0,
        }

    return trial, calls


def test_without_verification_one_stalled_trial_sinks_the_rate(search):
    trial, _ = limit_trial(100, stalls={0})
    best, tried = search(trial, 100.0, 1.0, 8)
    assert best[0] < 100 and tried[0] == {
        "rate": 100.0,
        "ok": False,
        "repeat": 0,
        "disturbed": False,
        "rate_seen": 100.0,
        "witness_slow_ms": 50.0,
    }


def test_verification_repeats_a_lossy_trial_at_the_same_rate(search):
    trial, calls = limit_trial(100, stalls={0})
    best, tried = search(trial, 100.0, 1.0, 8, verify=1)
    assert best[0] == 100.0 and calls == [100.0, 100.0]
    assert [(t["rate"], t["ok"], t["repeat"]) for t in tried] == [
        (100.0, False, 0),
        (100.0, True, 1),
    ]


def test_a_rate_beyond_the_limit_fails_every_repeat(search):
    trial, calls = limit_trial(70)
    best, tried = search(trial, 100.0, 1.0, 8, verify=2)
    assert 69.0 <= best[0] <= 70.0
    for rate in {t["rate"] for t in tried if not t["ok"]}:
        assert calls.count(rate) == 3  # the first trial and two repeats
    assert all(calls.count(t["rate"]) == 1 for t in tried if t["ok"])


def test_max_trials_bounds_the_rates_not_the_repeats(search):
    trial, calls = limit_trial(0)  # nothing passes
    best, tried = search(trial, 100.0, 1.0, 3, verify=1)
    assert best is None and sorted(set(calls), reverse=True) == [100.0, 50.0, 25.0]
    assert len(tried) == 6


def test_a_disturbed_lossy_trial_is_repeated_without_using_up_the_verification(mod, search):
    trial, calls = limit_trial(100, stalls={0, 1})  # two trials in a row the VM stalls
    best, tried = search(
        trial, 100.0, 1.0, 8, verify=0, retry_disturbed=2, disturbed=mod.disturbed_by(10)
    )
    assert best[0] == 100.0 and calls == [100.0] * 3
    assert [(t["ok"], t.get("disturbed", False), t["repeat"]) for t in tried] == [
        (False, True, 0),
        (False, True, 1),
        (True, False, 2),
    ]


def test_an_undisturbed_lossy_trial_still_fails_the_rate(mod, search):
    trial, calls = limit_trial(70)  # losses, but the VM was quiet
    best, tried = search(trial, 100.0, 1.0, 8, retry_disturbed=3, disturbed=mod.disturbed_by(10))
    assert 69.0 <= best[0] <= 70.0 and not any(t.get("disturbed") for t in tried)
    assert all(calls.count(t["rate"]) == 1 for t in tried)


def test_a_rate_still_disturbed_after_its_repeats_fails(mod, search):
    trial, calls = limit_trial(100, stalls=set(range(3)))
    best, tried = search(trial, 100.0, 1.0, 8, retry_disturbed=2, disturbed=mod.disturbed_by(10))
    assert best[0] < 100.0 and calls[:3] == [100.0] * 3 and calls[3] == 50.0


def test_below_the_limit_a_spell_is_not_a_disturbance(mod):
    disturbed = mod.disturbed_by(10)
    assert not disturbed({"witness_slow_ms": 6.0, "witness_gap_ms": 3.9})
    assert disturbed({"witness_slow_ms": 6.0, "witness_gap_ms": 4.0})
    assert not disturbed({})  # no detector: never disturbed
    assert not mod.disturbed_by(0)({"witness_slow_ms": 1e6})


def limit_column(order, name, limit):
    """A column whose trials pass up to ``limit`` percent, each noting ``name`` in ``order``."""

    def trial(rate):
        order.append(name)
        return rate <= limit, {}

    return trial


def test_lockstep_alternates_the_searches_and_each_finds_its_own_limit(mod):
    order = []
    found = mod.lockstep(
        {1: limit_column(order, 1, 80), 2: limit_column(order, 2, 40)}, 100.0, 1.0, 8
    )
    assert 79.0 <= found[1][0][0] <= 80.0 and 39.0 <= found[2][0][0] <= 40.0
    assert order[:8] == [1, 2] * 4  # in turn while both go on
    assert len(found[1][1]) == order.count(1) and len(found[2][1]) == order.count(2)


def test_every_trial_records_whether_it_was_disturbed_passes_too(mod, search):
    calls = []

    def trial(rate):
        calls.append(rate)
        return True, {"witness_slow_ms": 50.0 if len(calls) == 1 else 0.0}

    best, tried = search(trial, 100.0, 1.0, 8, retry_disturbed=3, disturbed=mod.disturbed_by(10))
    # a disturbed pass is recorded as disturbed and stands: only failures are ever retried
    assert best[0] == 100.0 and calls == [100.0]
    assert tried[0]["ok"] and tried[0]["disturbed"]


def test_searches_without_a_disturbance_share_every_trial(mod):
    calls = []

    def trial(rate):
        calls.append(rate)
        return rate <= 70, {}

    found = mod.searches(
        {1: trial}, 100.0, 1.0, 8, verify=1, retry_disturbed=3, disturbed=mod.disturbed_by(10)
    )
    plain, retried = found[1]["plain"], found[1]["retried"]
    assert plain[0][0] == retried[0][0] and 69.0 <= plain[0][0] <= 70.0
    assert plain[1] == retried[1]  # the same trials, numbered once
    assert [t["trial"] for t in plain[1]] == list(range(1, len(calls) + 1))


def test_searches_headline_ignores_disturbance_and_the_second_column_retries(mod):
    """The VM disturbs the first two trials (losses at any rate): the plain search, RFC
    2544 with loss verification, fails 100% and goes on below; the retried one repeats
    the rate and finds 100%.  They share the trials while they ask for the same rate."""
    calls = []

    def trial(rate):
        calls.append(rate)
        stalled = len(calls) <= 2
        return rate <= 100 and not stalled, {"witness_slow_ms": 50.0 if stalled else 0.0}

    found = mod.searches(
        {1: trial}, 100.0, 1.0, 8, verify=1, retry_disturbed=3, disturbed=mod.disturbed_by(10)
    )
    (pbest, ptried), (rbest, rtried) = found[1]["plain"], found[1]["retried"]
    assert rbest[0] == 100.0 and pbest[0] < 100.0
    assert [t["trial"] for t in ptried[:2]] == [1, 2] == [t["trial"] for t in rtried[:2]]
    assert [t["disturbed"] for t in ptried[:2]] == [True, True]
    # after the two shared trials the retried search asked 100% again, the plain one 50%:
    # one trial each, at their own rates
    assert rtried[2]["rate"] == 100.0 and rtried[2]["ok"] and ptried[2]["rate"] == 50.0
    assert rtried[2]["trial"] != ptried[2]["trial"]
    assert len(calls) == len({t["trial"] for t in ptried + rtried})


def test_searches_columns_take_turns(mod):
    order = []
    found = mod.searches(
        {1: limit_column(order, 1, 80), 2: limit_column(order, 2, 40)}, 100.0, 1.0, 8
    )
    assert 79.0 <= found[1]["plain"][0][0] <= 80.0 and 39.0 <= found[2]["plain"][0][0] <= 40.0
    assert order[:8] == [1, 2] * 4


def test_found_rate_is_each_searchs_best_rate_or_none_found(mod):
    found = mod.searches({1: limit_column([], 1, 70), 2: limit_column([], 2, 0)}, 100.0, 1.0, 8)
    plain, retried = mod.found_rate(found[1])
    assert plain == found[1]["plain"][0][0] and retried == found[1]["retried"][0][0]
    assert 69.0 <= plain <= 70.0
    assert mod.found_rate(found[2]) == (0.0, 0.0)  # nothing passed: 0, not None


def test_latency_rounds_alternate_the_columns_and_keep_every_round(mod):
    order, n = [], [0]

    def column(name):
        def trial():
            order.append(name)
            n[0] += 1
            return True, {"witness_slow_ms": 50.0 if n[0] % 3 == 0 else 0.0}

        return trial

    rounds = mod.latency_rounds({1: column(1), 2: column(2)}, 20, mod.disturbed_by(10))
    assert len(rounds) == 20  # all of them, disturbed or not
    assert order[:6] == [1, 2, 2, 1, 1, 2]
    assert sum(r["disturbed"] for r in rounds) > 0 and all(
        set(r["trials"]) == {1, 2} for r in rounds
    )
    assert mod.latency_rounds({1: column(1)}, 0) == []
