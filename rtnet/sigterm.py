"""SIGTERM ends a command the way Ctrl-C does.

Python's default for SIGTERM is to die at once, so a benchmark stopped by
``timeout``, a CI runner or ``kill`` left its lab behind: network namespaces,
veths, XDP programs and the processes it started.  :func:`unwind_on_sigterm`
turns the first SIGTERM or Ctrl-C (SIGINT) into KeyboardInterrupt in the main
thread instead, so every ``with`` block and ``finally`` unwinds and takes down
what it built.  Any further SIGTERM or SIGINT while that teardown runs is
ignored (a teardown cut short is what this is here to prevent); SIGKILL still
ends it.  A SIGINT ignored from the start stays ignored: a shell starts its
background jobs so, which is why a program that stops a child it started
sends it SIGTERM, not SIGINT.

A process forked from this one (inheriting the handler) exits at once with
128 + the signal instead of unwinding its parent's ``with`` blocks.

:func:`run_child` is the other side: a command that only starts such a program
(``rtnetctl bench`` starts the benchmark suite) waits for its teardown instead
of killing it halfway, as ``subprocess.call`` does a quarter of a second after
a KeyboardInterrupt.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading


def unwind_on_sigterm() -> None:
    """From now on, the first SIGTERM or SIGINT is KeyboardInterrupt in the main thread of
    this process, and the ones after it are ignored (call it from the main thread, before
    building anything; from another thread it changes nothing, as only the main thread
    may set a handler)."""
    if threading.current_thread() is not threading.main_thread():
        return
    me = os.getpid()
    signums = [signal.SIGTERM]
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signums.append(signal.SIGINT)

    def first_stops(signum, _frame):
        if os.getpid() != me:
            os._exit(128 + signum)
        for n in signums:
            signal.signal(n, signal.SIG_IGN)
        raise KeyboardInterrupt()

    for n in signums:
        signal.signal(n, first_stops)


def run_child(argv: list[str], cwd: str | None = None) -> int:
    """Run ``argv``, a program that takes down what it builds on Ctrl-C and on SIGTERM, to
    its end and return its exit status (128 + N for a signal N that ended it).  Ctrl-C at
    a terminal reaches the child itself (the terminal signals the whole foreground process
    group), so this process ignores it meanwhile; a SIGTERM sent to this process alone is
    passed on to the child.  Either way this process waits for the child's teardown."""
    proc = subprocess.Popen(argv, cwd=cwd)
    old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    old_term = signal.signal(signal.SIGTERM, lambda *_: proc.send_signal(signal.SIGTERM))
    try:
        rc = proc.wait()
    finally:
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)
    return 128 - rc if rc < 0 else rc
