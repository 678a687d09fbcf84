"""SIGTERM ends a command the way Ctrl-C does.

Python's default for SIGTERM is to die at once, so a benchmark stopped by
``timeout``, a CI runner or ``kill`` left its lab behind: network namespaces,
veths, XDP programs and the processes it started.  :func:`unwind_on_sigterm`
turns the first SIGTERM into KeyboardInterrupt in the main thread instead, so
every ``with`` block and ``finally`` unwinds and takes down what it built, as it
does on Ctrl-C.  Further SIGTERMs while that teardown runs are ignored (a
teardown cut short is what this is here to prevent); SIGKILL still ends it.

A process forked from this one (inheriting the handler) exits at once with
128 + SIGTERM instead of unwinding its parent's ``with`` blocks.
"""

from __future__ import annotations

import os
import signal


def unwind_on_sigterm() -> None:
    """From now on, the first SIGTERM is KeyboardInterrupt in the main thread of this
    process (call it from the main thread, before building anything)."""
    me = os.getpid()

    def on_term(signum, _frame):
        if os.getpid() != me:
            os._exit(128 + signum)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise KeyboardInterrupt()

    signal.signal(signal.SIGTERM, on_term)
