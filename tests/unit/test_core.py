"""The C core builds, loads and agrees with the Python package about its version."""

import errno
import subprocess
import sys

import rtnet
from rtnet import _lowlevel
from rtnet.errors import RtnetError


def test_core_loads_and_reports_the_package_version():
    assert _lowlevel.core_version() == rtnet.__version__


def test_check_turns_negative_errno_into_an_exception_with_the_c_message():
    # rtn_tdma_cfg_check records a one-line cause before returning -EINVAL
    cfg = _lowlevel.ffi.new("struct rtn_tdma_cfg *")
    _lowlevel.lib.rtn_tdma_cfg_init(cfg, 1)
    cfg.cycle_ns = 50_000
    rc = _lowlevel.lib.rtn_tdma_cfg_check(cfg)
    try:
        _lowlevel.check(rc)
    except RtnetError as exc:
        assert exc.errno == errno.EINVAL
        assert "cycle_us: 50 outside the supported range 100..1000000" in exc.strerror
    else:
        raise AssertionError("a 50 us cycle must be refused")


def _refuse_a_short_cycle():
    cfg = _lowlevel.ffi.new("struct rtn_tdma_cfg *")
    _lowlevel.lib.rtn_tdma_cfg_init(cfg, 1)
    cfg.cycle_ns = 50_000
    rc = _lowlevel.lib.rtn_tdma_cfg_check(cfg)
    assert (
        rc < 0 and "cycle_us: 50 outside the supported range 100..1000000" in _lowlevel.last_error()
    )
    return cfg


def test_a_later_call_clears_an_earlier_calls_message():
    cfg = _refuse_a_short_cycle()
    cfg.cycle_ns = 1_000_000
    assert _lowlevel.lib.rtn_tdma_cfg_check(cfg) == 0
    assert _lowlevel.last_error() == ""


def test_an_error_without_a_message_never_reports_an_earlier_ones():
    _refuse_a_short_cycle()  # its message is never read through check()
    seg = _lowlevel.ffi.new("struct rtn_gso_seg *")
    buf = _lowlevel.ffi.new("uint8_t[]", 4)
    rc = _lowlevel.lib.rtn_gso_begin(seg, buf, 4, 1514)  # too short: -EINVAL, no message
    try:
        _lowlevel.check(rc)
    except RtnetError as exc:
        assert exc.errno == 22
        assert exc.strerror == "EINVAL"
    else:
        raise AssertionError("a 4-byte super-packet must be refused")


def test_check_reads_a_message_once():
    rc = _lowlevel.lib.rtn_tdma_cfg_check(_refuse_a_short_cycle())
    try:
        _lowlevel.check(rc)
    except RtnetError:
        pass
    assert _lowlevel.last_error() == ""


def test_rtnetctl_version_names_both_versions():
    out = subprocess.run(
        [sys.executable, "-m", "rtnet.cli", "version"], capture_output=True, text=True, check=True
    ).stdout
    assert rtnet.__version__ in out and "C core" in out
