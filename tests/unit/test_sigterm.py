"""rtnet/sigterm.py: SIGTERM unwinds a command as Ctrl-C does, so what it built is taken
down; a second SIGTERM does not cut that teardown short."""

import signal
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    from rtnet.sigterm import unwind_on_sigterm

    first, second = (getattr(signal, name) for name in sys.argv[1:3])
    unwind_on_sigterm()
    try:
        try:
            os.kill(os.getpid(), first)
            print("not interrupted", flush=True)
        finally:
            os.kill(os.getpid(), second)  # while tearing down: ignored
            print("taken down", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(130)
    """
)


@pytest.mark.parametrize(
    "first, second",
    [("SIGTERM", "SIGTERM"), ("SIGTERM", "SIGINT"), ("SIGINT", "SIGTERM")],
)
def test_the_first_signal_unwinds_and_a_second_one_leaves_the_teardown_alone(first, second):
    r = subprocess.run(
        [sys.executable, "-c", SCRIPT, first, second], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 130, r.stderr
    assert r.stdout.split() == ["taken", "down", "interrupted"]


def test_a_sigint_ignored_from_the_start_stays_ignored():
    """As a shell starts its background jobs: such a program is stopped with SIGTERM."""
    script = SCRIPT.replace(
        "unwind_on_sigterm()\n", "unwind_on_sigterm()\nos.kill(os.getpid(), signal.SIGINT)\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", script, "SIGTERM", "SIGTERM"],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    assert r.returncode == 130, r.stderr
    assert r.stdout.split() == ["taken", "down", "interrupted"]


def test_without_it_sigterm_kills_at_once_and_nothing_unwinds():
    """The default the module exists to change (so the test above shows a difference)."""
    plain = SCRIPT.replace("unwind_on_sigterm()\n", "")
    r = subprocess.run(
        [sys.executable, "-c", plain, "SIGTERM", "SIGTERM"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == -15
    assert r.stdout == ""


CHILD = textwrap.dedent(
    """
    import signal, sys
    from rtnet.sigterm import unwind_on_sigterm

    unwind_on_sigterm()
    try:
        try:
            print("ready", flush=True)
            signal.pause()
        finally:
            print("taken down", flush=True)
    except KeyboardInterrupt:
        sys.exit(130)
    """
)
PARENT = (
    "import sys\n"
    "from rtnet.sigterm import run_child\n"
    f"sys.exit(run_child([sys.executable, '-c', {CHILD!r}]))\n"
)


def test_a_command_that_runs_a_child_passes_sigterm_on_and_waits_for_its_teardown():
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert parent.stdout.readline() == "ready\n"  # the child is up, its handler set
        parent.terminate()
        out, err = parent.communicate(timeout=60)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
    assert parent.returncode == 130, err
    assert out == "taken down\n"
