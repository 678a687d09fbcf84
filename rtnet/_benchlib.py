"""The benchmark-only extension rtnet._bench: the flood generator, ping-pong loops and
TDMA simulator (csrc/bench/), kept out of the production module rtnet._core.

Its cdef includes _core's, so the types are shared: a struct made with
rtnet._core's ffi (rtnet._lowlevel) passes to a function of this lib.  It
carries its own copy of the production code it calls, so its errors are
recorded apart from _core's: check() here reads them.
"""

from ._lowlevel import check_with, require_version
from .errors import RtnetError

try:
    from ._bench import ffi, lib
except ImportError as exc:  # pragma: no cover - only without a build
    raise ImportError(
        "rtnet._bench is not built: run tools/setup-system.sh (or pip install -e .)"
    ) from exc

require_version("rtnet._bench", ffi, lib.rtn_bench_version)


def last_error() -> str:
    return ffi.string(lib.rtn_bench_last_error()).decode(errors="replace")


def check(rc: int, exc: type = RtnetError, what: str = "") -> int:
    """rtnet._lowlevel.check() for a call into rtnet._bench."""
    return check_with(rc, lib.rtn_bench_last_error, lib.rtn_bench_clear_error, exc, what)
