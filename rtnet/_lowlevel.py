"""Thin layer over the cffi extension: load it, check its version, turn C errors into exceptions.

Everything above this module uses Python values only; cdata never leaves the
object that owns it.
"""

import errno as _errno

from . import __version__
from .errors import RtnetError

try:
    from ._core import ffi, lib
except ImportError as exc:  # pragma: no cover - only without a build
    raise ImportError(
        "rtnet._core is not built: run tools/setup-system.sh (or pip install -e .)"
    ) from exc


def require_version(name: str, ext_ffi, version_fn) -> str:
    """An extension's version (``version_fn()``), which must be the Python package's: a
    stale build is refused at import rather than misread later."""
    version = ext_ffi.string(version_fn()).decode()
    if version != __version__:
        raise ImportError(
            f"{name} is version {version} but the Python package is {__version__}: "
            "rebuild with pip install -e ."
        )
    return version


_core_version = require_version("rtnet._core", ffi, lib.rtn_version)


def core_version() -> str:
    return _core_version


def last_error() -> str:
    return ffi.string(lib.rtn_last_error()).decode(errors="replace")


def check(rc: int, exc: type = RtnetError, what: str = "") -> int:
    """Raise ``exc(errno, message)`` for a negative return code, else return it.

    The message is the one the failed call itself recorded: every C entry point
    that can fail clears it first, and it is cleared again once read, so an
    error without a message of its own gets its errno's name, never an earlier
    error's.
    """
    return check_with(rc, lib.rtn_last_error, lib.rtn_clear_error, exc, what)


def check_with(
    rc: int, last_error_fn, clear_error_fn, exc: type = RtnetError, what: str = ""
) -> int:
    """check() against one module's own error record (rtnet._bench keeps its own)."""
    if rc < 0:
        msg = ffi.string(last_error_fn()).decode(errors="replace")
        clear_error_fn()
        if not msg:
            msg = _errno.errorcode.get(-rc, str(-rc))
        if what and not msg.startswith(f"{what}: "):  # a context the message names already
            msg = f"{what}: {msg}"
        raise exc(-rc, msg)
    return rc
