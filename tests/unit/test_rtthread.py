"""RT thread without root: argument checks, the histogram it fills, and
refusal/fallback of SCHED_FIFO in an unprivileged child process."""

import errno
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from rtnet._lowlevel import ffi, lib
from rtnet.errors import ConfigError, RtThreadError
from rtnet.hist import Histogram
from rtnet.rtthread import RtThread

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WAIT_TIMEOUT_S = 20.0  # generous: the VM stalls, the count is what matters


def wait_for_wakeups(rt: RtThread, target: int, timeout: float = WAIT_TIMEOUT_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = rt.stats()
        if s.wakeups >= target:
            return s
        time.sleep(0.01)
    pytest.fail(f"RT thread reached only {rt.stats().wakeups} of {target} wakeups in {timeout} s")


def unavailable_cpu() -> int:
    return max(os.sched_getaffinity(0)) + 1


# --- argument validation (Python, before any C call) -------------------------


@pytest.mark.parametrize("priority", [0, 100, -1, 1.5, True])
def test_bad_priority_should_raise_config_error(priority):
    with pytest.raises(ConfigError, match="priority"):
        RtThread(priority=priority)


@pytest.mark.parametrize("period_us", [0, -1000, 10_000_001, "1000"])
def test_bad_period_should_raise_config_error(period_us):
    with pytest.raises(ConfigError, match="period_us"):
        RtThread(period_us=period_us)


def test_unavailable_cpu_should_raise_config_error_naming_allowed_cpus():
    allowed = ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))
    with pytest.raises(
        ConfigError, match=f"CPU {unavailable_cpu()} is not available: allowed CPUs are {allowed}"
    ):
        RtThread(cpu=unavailable_cpu())
    with pytest.raises(ConfigError, match="CPU -1"):
        RtThread(cpu=-1)


# --- the same checks in C, for C callers ------------------------------------


def c_start(**fields):
    opts = ffi.new("struct rtn_rt_opts *")
    lib.rtn_rt_opts_init(opts)
    for name, value in fields.items():
        setattr(opts, name, value)
    out = ffi.new("struct rtn_rt **")
    rc = lib.rtn_rt_start(opts, ffi.NULL, ffi.NULL, out)
    if rc == 0:
        lib.rtn_rt_stop(out[0], ffi.NULL)
    return rc, ffi.string(lib.rtn_last_error()).decode(), out[0]


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"priority": 0}, "priority 0 out of range 1..99"),
        ({"priority": 100}, "priority 100 out of range 1..99"),
        ({"period_ns": 0}, "period 0 ns out of range"),
        ({"period_ns": lib.RTN_RT_PERIOD_MAX_NS + 1}, "out of range"),
        ({"cpu": 1023}, "CPU 1023 is not available: allowed CPUs are "),
        ({"cpu": -5}, "CPU -5 is not available"),
    ],
)
def test_c_start_should_reject_bad_options_with_message(fields, message):
    rc, msg, rt = c_start(**fields)
    assert rc == -errno.EINVAL
    assert message in msg
    assert rt == ffi.NULL


# --- lifecycle ----------------------------------------------------------------


def test_stop_and_close_should_be_idempotent():
    rt = RtThread(period_us=1000, allow_fallback=True)
    with pytest.raises(RtThreadError, match="never started"):
        rt.stats()
    rt.stop()
    with rt:
        assert rt.running
        wait_for_wakeups(rt, 5)
    assert not rt.running
    rt.stop()
    rt.close()
    final = rt.stats()
    assert not final.running
    assert final.wakeups >= 5


# --- the histogram the thread fills -------------------------------------------


def assert_histogram_consistent(h: Histogram):
    assert h.count == int(h.bins.sum()) + h.underflow + h.overflow
    assert h.min_ns <= h.avg_ns <= h.max_ns
    filled = np.nonzero(h.bins)[0]
    assert len(filled) > 0
    lowest_edge = h.lo_ns + int(filled[0]) * 1000
    highest_edge = h.lo_ns + (int(filled[-1]) + 1) * 1000
    if not h.underflow:
        assert lowest_edge <= h.min_ns < lowest_edge + 1000
    if not h.overflow:
        assert highest_edge - 1000 <= h.max_ns < highest_edge
    p50, p99, p999 = (h.percentile_ns(p) for p in (50, 99, 99.9))
    assert h.min_ns <= p50 <= p99 <= p999 <= h.max_ns


def test_histogram_should_fill_consistently_while_running():
    with RtThread(period_us=1000, allow_fallback=True) as rt:
        live = wait_for_wakeups(rt, 200)
        assert live.running
        # Snapshots taken while the thread writes are self-consistent.
        assert_histogram_consistent(live.histogram)
        assert live.histogram.count >= live.wakeups
        assert_histogram_consistent(rt.histogram())
    final = rt.stats()
    assert_histogram_consistent(final.histogram)
    assert final.wakeups == final.histogram.count >= 200
    # A wake-up is never early: lateness is never negative.
    assert final.histogram.underflow == 0 and final.histogram.min_ns >= 0
    assert final.period_us == 1000
    # Absolute deadlines: every period is either a wake-up or counted as missed.
    summary = final.summary_us()
    assert summary["count"] == final.wakeups
    assert summary["min"] <= summary["p50"] <= summary["p99"] <= summary["max"]


def test_histogram_percentiles_from_known_samples():
    h = ffi.new("struct rtn_hist *")
    lib.rtn_hist_init(h, 0)
    samples = [10_200] * 90 + [20_500] * 9 + [5_000_000] + [-3_000]
    for v in samples:
        lib.rtn_hist_add_sample(h, v)
    hist = Histogram.from_c(h)
    assert (hist.count, hist.underflow, hist.overflow) == (101, 1, 1)
    assert (hist.min_ns, hist.max_ns, hist.sum_ns) == (-3_000, 5_000_000, sum(samples))
    assert hist.bins[10] == 90 and hist.bins[20] == 9 and hist.bins.sum() == 99
    assert hist.percentile_ns(0.5) == -3_000  # rank 1 is the underflow: min
    assert hist.percentile_ns(50) == 11_000  # upper edge of the 10 us bin
    assert hist.percentile_ns(99) == 21_000  # rank 100: last in-range sample
    assert hist.percentile_ns(99.9) == 5_000_000  # rank 101 is the overflow: max
    assert hist.nonzero_bins_us() == {10: 90, 20: 9}


def test_histograms_of_two_stations_should_combine_into_one():
    def filled(samples):
        h = ffi.new("struct rtn_hist *")
        lib.rtn_hist_init(h, 0)
        for v in samples:
            lib.rtn_hist_add_sample(h, v)
        return Histogram.from_c(h)

    a = filled([10_200] * 98 + [5_000_000])
    b = filled([30_100] * 2 + [-3_000])
    both = Histogram.combine([a, b])
    assert (both.count, both.underflow, both.overflow) == (102, 1, 1)
    assert (both.min_ns, both.max_ns) == (-3_000, 5_000_000)
    assert both.bins[10] == 98 and both.bins[30] == 2
    assert both.percentile_ns(99) == 31_000  # rank 101 of 102: the second station's 30 us bin
    with pytest.raises(ValueError):
        Histogram.combine([])


# --- SCHED_FIFO refused in an unprivileged child --------------------------------

CHILD = r"""
import json, os, resource, sys, time
# Import everything first: the interpreter may live where uid 65534 cannot read.
from rtnet.rtthread import RtThread
resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0))
if os.geteuid() == 0:
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)
rt = RtThread(period_us=1000, priority=90, allow_fallback=sys.argv[1] == "fallback")
with rt:
    deadline = time.monotonic() + 20
    while rt.stats().wakeups < 20 and time.monotonic() < deadline:
        time.sleep(0.01)
s = rt.stats()
print(json.dumps({"policy": s.policy, "priority": s.priority, "fallback": s.fallback,
                  "wakeups": s.wakeups, "uid": os.getuid()}))
"""


def run_unprivileged(mode: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=REPO, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run(
        [sys.executable, "-c", CHILD, mode],
        env=env,
        cwd="/",
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_unprivileged_start_should_refuse_fifo_with_clear_message():
    proc = run_unprivileged("strict")
    assert proc.returncode != 0, proc.stdout
    assert (
        "RtThreadError: [Errno 1] SCHED_FIFO priority 90 refused: Operation not "
        "permitted (run as root or set allow_fallback)"
    ) in proc.stderr


def test_unprivileged_start_with_fallback_should_run_sched_other():
    proc = run_unprivileged("fallback")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["policy"] == "SCHED_OTHER"
    assert result["priority"] == 0
    assert result["fallback"] is True
    assert result["wakeups"] >= 20
    assert result["uid"] != 0
