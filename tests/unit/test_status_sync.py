"""`rtnetctl status`'s sync error line: the error and the Syncs' delay are measured
against this host's clock, which is global time only where the master runs on this host
(the lab).  With the master elsewhere the line says so instead of printing an average of
the two hosts' clocks' distance."""

from rtnet._lowlevel import ffi, lib
from rtnet.hist import Histogram
from rtnet.stationctl import _sync_error_line


def summary(lo_ns: int, samples: list[int]) -> dict:
    h = ffi.new("struct rtn_hist *")
    lib.rtn_hist_init(h, lo_ns)
    for v in samples:
        lib.rtn_hist_add_sample(h, v)
    return {"summary_us": Histogram.from_c(h).summary_us()}


def tdma(error: list[int], delay: list[int]) -> dict:
    return {"sync_error": summary(-2_000_000, error), "sync_delay": summary(0, delay)}


def test_in_the_lab_the_line_gives_the_error_and_the_syncs_delay():
    line = _sync_error_line(tdma([-20_000] * 99 + [-80_000], [25_200] * 100))
    assert "avg -20.6 us" in line and "(100 samples)" in line
    assert "the Syncs' delay p50 25.2 us" in line


def test_with_the_master_on_another_host_the_line_says_it_measured_nothing():
    apart = 3_600 * 10**9  # the two hosts' CLOCK_MONOTONIC an hour apart
    line = _sync_error_line(tdma([apart + 7] * 50, [apart] * 50))
    assert line == (
        "  sync error: - (measured against this host's clock, which is not the master's: "
        "50 samples outside the range)"
    )


def test_a_master_has_no_samples_to_show():
    line = _sync_error_line(tdma([], []))
    assert line == "  sync error: - (no samples: the master's own clock, or not calibrated yet)"
