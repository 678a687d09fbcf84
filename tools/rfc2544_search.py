"""RFC 2544's zero-loss throughput search, with ETSI GS NFV-TST 009's loss verification,
optional repeats of trials the VM disturbed, and searches run in lockstep.

A search is a generator (``search_steps``) that yields the rate of its next trial and is
sent the trial's outcome, so ``binary_search`` can drive one search and ``lockstep``
several, alternating their trials: the columns of a comparison then meet the VM's noisy
spells alike, where one search after the other gives a spell to one column only.

``searches`` runs, for every column, the search as RFC 2544 and TST 009 describe it
("plain": loss verification, no disturbed-trial retries; the headline) and the one with
disturbed-trial retries ("retried": a second, labelled column) from shared trials: one
trial answers every search of the column asking for that rate at that step, so while the
VM stays quiet the two cost one search, and each still sees an ordinary sequence of
trials at the rates it asked for (docs/benchmark-protocol.md).

>>> best, tried = binary_search(trial, 100.0, 1.0, 8, verify=1)     # doctest: +SKIP
>>> found = searches({1: one_port, 2: two_ports}, 100.0, 1.0, 8, 1, 3, disturbed)
>>> plain_best, plain_tried = found[1]["plain"]                     # doctest: +SKIP
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


def search_steps(
    hi: float,
    resolution: float,
    max_trials: int,
    verify: int = 0,
    retry_disturbed: int = 0,
    disturbed=None,
):
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
    (``repeat`` counts the repeats at a rate, ``disturbed`` says whether the VM disturbed
    it, for passing trials too: a pass is recorded as disturbed, never questioned).
    ``max_trials`` bounds the rates tried."""
    lo, best, tried = 0.0, None, []
    rate = hi
    for _ in range(max_trials):
        repeats = excused = 0
        while True:
            ok, info = yield rate
            dist = bool(disturbed is not None and disturbed(info))
            tried.append(
                {
                    "rate": rate,
                    "ok": ok,
                    "repeat": repeats + excused,
                    "disturbed": dist,
                    **{k: v for k, v in info.items() if k != "hist"},
                }
            )
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


def binary_search(
    trial,
    hi: float,
    resolution: float,
    max_trials: int,
    verify: int = 0,
    retry_disturbed: int = 0,
    disturbed=None,
):
    """search_steps driven by ``trial(rate) -> (ok, info)``; returns ``(best, tried)``."""
    return lockstep({None: trial}, hi, resolution, max_trials, verify, retry_disturbed, disturbed)[
        None
    ]


def lockstep(
    trials: dict,
    hi: float,
    resolution: float,
    max_trials: int,
    verify: int = 0,
    retry_disturbed: int = 0,
    disturbed=None,
) -> dict:
    """One search per ``trials[key]`` (as binary_search), their trials taken in turn, one
    of each search while both go on; returns ``{key: (best, tried)}``."""
    steps = {
        k: search_steps(hi, resolution, max_trials, verify, retry_disturbed, disturbed)
        for k in trials
    }
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


VARIANTS = ("plain", "retried")


def searches(
    trials: dict,
    hi: float,
    resolution: float,
    max_trials: int,
    verify: int = 0,
    retry_disturbed: int = 0,
    disturbed=None,
) -> dict:
    """For each column ``trials[key]`` two searches from shared trials: "plain", without
    disturbed-trial retries (RFC 2544 with TST 009's loss verification: the headline), and
    "retried", with up to ``retry_disturbed`` repeats of a disturbed lossy trial per rate.
    The columns take their turns as in ``lockstep``; in its turn a column runs one trial
    per distinct rate its searches ask for, and each outcome goes to every search of the
    column that asked for that rate.  Each trial's info gets ``trial``, its number in the
    order run, so a shared trial shows in both lists.  Returns
    ``{key: {"plain": (best, tried), "retried": (best, tried)}}``."""
    steps = {
        (k, v): search_steps(
            hi, resolution, max_trials, verify, retry_disturbed if v == "retried" else 0, disturbed
        )
        for k in trials
        for v in VARIANTS
    }
    want = {key: next(gen) for key, gen in steps.items()}
    out = {k: {} for k in trials}
    n = 0
    while want:
        for col in trials:
            asking = {key: rate for key, rate in want.items() if key[0] == col}
            for rate in sorted(set(asking.values()), reverse=True):
                n += 1
                ok, info = trials[col](rate)
                info = {**info, "trial": n}
                for key in [key for key, r in asking.items() if r == rate]:
                    try:
                        want[key] = steps[key].send((ok, info))
                    except StopIteration as done:
                        out[col][key[1]] = done.value
                        del want[key]
    return out


def found_rate(found: dict) -> tuple[float, float]:
    """A column's zero-loss rate (``searches(...)[key]``) without and with disturbed
    retries: each search's best rate, 0.0 where no trial passed."""
    return tuple(found[v][0][0] if found[v][0] else 0.0 for v in VARIANTS)


def latency_rounds(trials: dict, rounds: int, disturbed=None) -> list[dict]:
    """Dedicated latency trials at the found rate: ``rounds`` rounds of one trial per
    column (``trials[key]() -> (ok, info)``), the columns' order alternating from round to
    round (1, 2, 2, 1, ...) so a spell of the VM falls on every column alike.  Every round
    is kept and pooled by the caller: none is chosen or dropped.  Each round: every
    column's ``(ok, info)`` by key, and ``disturbed``, whether ``disturbed(info)`` held for
    any of its trials (shown beside the figures, nothing more)."""
    keys = list(trials)
    out = []
    for k in range(rounds):
        got = {key: trials[key]() for key in (keys if k % 2 == 0 else keys[::-1])}
        out.append(
            {
                "trials": {key: got[key] for key in keys},
                "disturbed": disturbed is not None
                and any(disturbed(info) for _ok, info in got.values()),
            }
        )
    return out
