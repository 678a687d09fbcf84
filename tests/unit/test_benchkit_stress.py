"""rtnet.benchkit's stress-ng load: stopped, workers and all, when the benchmark that
starts it is interrupted while the workers spin up (before it holds a handle to stop)."""

import os
import shutil
import signal

import pytest
from conftest import require_tool

from rtnet.benchkit import start_stress, stop_stress

TAG = "--timeout 97s"  # a stress-ng no one else starts


def ours_running() -> list[int]:
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "stress-ng" in cmd and TAG in cmd:
            pids.append(int(pid))
    return pids


def test_a_load_interrupted_while_it_spins_up_is_stopped():
    require_tool("stress-ng")
    assert ours_running() == []

    def interrupt(*_):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.5)  # within start_stress's spin-up wait
    try:
        with pytest.raises(KeyboardInterrupt):
            start_stress(shutil.which("stress-ng"), 97, ncpus=1)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert ours_running() == []


def test_a_load_started_whole_is_there_until_stopped():
    """The other side: what the test above finds gone is there when nothing interrupts."""
    require_tool("stress-ng")
    proc, _cmd = start_stress(shutil.which("stress-ng"), 97, ncpus=1)
    try:
        assert proc.pid in ours_running()
    finally:
        stop_stress(proc)
    assert ours_running() == []
