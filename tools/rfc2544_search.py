"""RFC 2544's zero-loss throughput search, with ETSI GS NFV-TST 009's loss verification,
repeats of trials the VM disturbed, and two searches run in lockstep.

A search is a generator (``search_steps``) that yields the rate of its next trial and is
sent the trial's outcome, so ``binary_search`` can drive one search and ``lockstep``
several, alternating their trials: the columns of a comparison then meet the VM's noisy
spells alike, where one search after the other gives a spell to one column only.

>>> best, tried = binary_search(trial, 100.0, 1.0, 8, verify=1)     # doctest: +SKIP
>>> found = lockstep({1: one_port, 2: two_ports}, 100.0, 1.0, 8)     # doctest: +SKIP
"""
from __future__ import annotations


def disturbed_by(limit_ms: float):
    """A trial is disturbed when the stall detector saw at least ``limit_ms`` of slow spells
    and gaps of the VM during it (bench_suite.stalls_between: ``witness_slow_ms``,
    ``witness_gap_ms``); a trial without the detector's figures never is.  0: none is."""
    def disturbed(info: dict) -> bool:
        seen = info.get("witness_slow_ms", 0.0) + info.get("witness_gap_ms", 0.0)
        return limit_ms > 0 and seen >= limit_ms
    return disturbed


def search_steps(hi: float, resolution: float, max_trials: int, verify: int = 0,
                 retry_disturbed: int = 0, disturbed=None):
    """Largest rate in (0, hi] whose trial passes; RFC 2544's binary search, first at hi.

    ``verify``: ETSI GS NFV-TST 009's binary search with loss verification.  A trial
    that loses frames is repeated at the same rate up to ``verify`` times, and the rate
    fails only if every repeat loses frames too.  On a VM whose vCPUs stall for tens of
    milliseconds a single lossy trial says as much about the hypervisor as about the
    stack; a rate beyond what the stack carries loses frames in every repeat.

    ``disturbed(info)``: a lossy trial during which the VM was seen slow or stalled
    (disturbed_by) is repeated besides, up to ``retry_disturbed`` times per rate, without
    using up a verification repeat: it measured the hypervisor.  An undisturbed lossy
    trial, or a rate still disturbed after those repeats, fails as before.

    Yields each trial's rate and is sent ``(ok, info)``; returns ``(best, tried)``: the
    best rate with its passing trial's info (None if none passed), and every trial
    (``repeat`` counts the repeats at a rate, ``disturbed`` marks those the VM disturbed).
    ``max_trials`` bounds the rates tried."""
    lo, best, tried = 0.0, None, []
    rate = hi
    for _ in range(max_trials):
        repeats = excused = 0
        while True:
            ok, info = yield rate
            dist = bool(not ok and disturbed is not None and disturbed(info))
            tried.append({"rate": rate, "ok": ok, "repeat": repeats + excused,
                          **({"disturbed": True} if dist else {}),
                          **{k: v for k, v in info.items() if k != "hist"}})
            if ok:
                break
            if dist and excused < retry_disturbed:
                excused += 1
            elif repeats < verify:
                repeats += 1
            else:
                break
        if ok:
            lo, best = rate, (rate, info)
        else:
            hi = rate
        if hi - lo <= resolution:
            break
        rate = (lo + hi) / 2
    return best, tried


def binary_search(trial, hi: float, resolution: float, max_trials: int, verify: int = 0,
                  retry_disturbed: int = 0, disturbed=None):
    """search_steps driven by ``trial(rate) -> (ok, info)``; returns ``(best, tried)``."""
    return lockstep({None: trial}, hi, resolution, max_trials, verify, retry_disturbed,
                    disturbed)[None]


def lockstep(trials: dict, hi: float, resolution: float, max_trials: int, verify: int = 0,
             retry_disturbed: int = 0, disturbed=None) -> dict:
    """One search per ``trials[key]`` (as binary_search), their trials taken in turn, one
    of each search while both go on; returns ``{key: (best, tried)}``."""
    steps = {k: search_steps(hi, resolution, max_trials, verify, retry_disturbed, disturbed)
             for k in trials}
    rates = {k: next(s) for k, s in steps.items()}
    out = {}
    while rates:
        for k in list(rates):
            try:
                rates[k] = steps[k].send(trials[k](rates[k]))
            except StopIteration as done:
                out[k] = done.value
                del rates[k]
    return out
