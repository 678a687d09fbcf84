"""The benchmark-only C (csrc/bench/) is its own extension, rtnet._bench: rtnet._core
exports none of its functions, rtnet._bench has them all, and structs pass between the two.
"""

import importlib.util
import os

import pytest
from cffi import FFI

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CSRC = os.path.join(ROOT, "csrc")


def _load_build_core():
    spec = importlib.util.spec_from_file_location("build_core", os.path.join(CSRC, "build_core.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


build_core = _load_build_core()


def _functions(header: str) -> list[str]:
    """The functions ``header`` declares, as cffi reads it."""
    ffi = FFI()
    for dep in build_core.dependencies(header):
        ffi.cdef(build_core.cdef_source(dep))
    before = set(ffi._parser._declarations)
    ffi.cdef(build_core.cdef_source(header))
    return sorted(
        k.split(" ", 1)[1]
        for k in set(ffi._parser._declarations) - before
        if k.startswith("function ")
    )


BENCH_FUNCTIONS = sorted(f for h in build_core.BENCH_HEADERS for f in _functions(h))


def test_the_bench_headers_are_the_bench_folders():
    assert sorted(build_core.BENCH_HEADERS) == ["rtn_flood.h", "rtn_pingpong.h", "rtn_tdma_sim.h"]
    assert "bench" not in build_core.FOLDERS and "bench" in build_core.BENCH_FOLDERS
    assert not set(build_core.BENCH_HEADERS) & set(build_core.CORE_HEADERS)
    assert {"rtn_sim_create", "rtn_flood_tx", "rtn_pp_udp_client"} <= set(BENCH_FUNCTIONS)


@pytest.mark.parametrize("name", BENCH_FUNCTIONS)
def test_core_has_no_bench_function_and_bench_has_it(name):
    from rtnet._bench import lib as bench_lib
    from rtnet._core import lib as core_lib

    assert not hasattr(core_lib, name), f"rtnet._core exports {name}"
    assert callable(getattr(bench_lib, name))


def test_a_struct_of_the_core_passes_to_the_bench_and_errors_are_its_own():
    from rtnet import _benchlib, _lowlevel
    from rtnet.errors import RtnetError

    cfg = _lowlevel.ffi.new("struct rtn_tdma_cfg *")
    _lowlevel.lib.rtn_tdma_cfg_init(cfg, 1)
    out = _benchlib.ffi.new("struct rtn_sim **")
    _benchlib.check(_benchlib.lib.rtn_sim_create(2, 1000, 0, 1, 16, out))
    sim = _benchlib.ffi.gc(out[0], _benchlib.lib.rtn_sim_destroy)
    _benchlib.check(_benchlib.lib.rtn_sim_start(sim, 0, cfg, 0, 0.0))
    stats = _lowlevel.ffi.new("struct rtn_tdma_stats *")
    _benchlib.lib.rtn_sim_stats(sim, 0, stats)
    cfg.cycle_ns = 50_000
    with pytest.raises(RtnetError, match="cycle_us"):
        _benchlib.check(_benchlib.lib.rtn_sim_set_config(sim, 0, cfg))
    assert _benchlib.last_error() == ""
    assert _benchlib.ffi.typeof("struct rtn_tdma_cfg *") is _lowlevel.ffi.typeof(
        "struct rtn_tdma_cfg *"
    )
