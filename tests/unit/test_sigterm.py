"""rtnet/sigterm.py: SIGTERM unwinds a command as Ctrl-C does, so what it built is taken
down; a second SIGTERM does not cut that teardown short."""

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    from rtnet.sigterm import unwind_on_sigterm

    unwind_on_sigterm()
    try:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            print("not interrupted", flush=True)
        finally:
            os.kill(os.getpid(), signal.SIGTERM)  # while tearing down: ignored
            print("taken down", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(130)
    """
)


def test_the_first_sigterm_unwinds_and_a_second_one_leaves_the_teardown_alone():
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert r.returncode == 130, r.stderr
    assert r.stdout.split() == ["taken", "down", "interrupted"]


def test_without_it_sigterm_kills_at_once_and_nothing_unwinds():
    """The default the module exists to change (so the test above shows a difference)."""
    plain = SCRIPT.replace("unwind_on_sigterm()\n", "")
    r = subprocess.run([sys.executable, "-c", plain], capture_output=True, text=True, timeout=60)
    assert r.returncode == -15
    assert r.stdout == ""
