"""RT thread as root: the settings it reports are the ones the kernel applied."""

import os
import time

import pytest

from rtnet.rtthread import RtThread

pytestmark = pytest.mark.netns


def wait_for_wakeups(rt: RtThread, target: int, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while rt.stats().wakeups < target:
        if time.monotonic() > deadline:
            pytest.fail(f"RT thread reached only {rt.stats().wakeups} wakeups")
        time.sleep(0.01)


def dma_latency_fds() -> list[str]:
    fds = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == "/dev/cpu_dma_latency":
                fds.append(fd)
        except OSError:
            pass
    return fds


def vm_locked_kb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmLck:"):
                return int(line.split()[1])
    raise AssertionError("no VmLck in /proc/self/status")


def test_fifo_pinning_and_pm_qos_should_be_applied_and_reported():
    cpu = max(os.sched_getaffinity(0))
    assert not dma_latency_fds()
    with RtThread(period_us=1000, cpu=cpu, priority=71) as rt:
        s = rt.stats()
        assert (s.policy, s.priority, s.cpu, s.fallback) == ("SCHED_FIFO", 71, cpu, False)
        # What the kernel says about that thread, not what we asked for.
        assert os.sched_getscheduler(s.tid) == os.SCHED_FIFO
        assert os.sched_getparam(s.tid).sched_priority == 71
        assert os.sched_getaffinity(s.tid) == {cpu}
        with open(f"/proc/self/task/{s.tid}/comm") as f:
            assert f.read().strip() == "rtnet-rt"
        assert s.dma_latency_held and len(dma_latency_fds()) == 1
        assert s.memory_locked and vm_locked_kb() > 0
        wait_for_wakeups(rt, 50)
    assert not dma_latency_fds()
    assert vm_locked_kb() == 0


def test_memory_is_locked_before_the_thread_becomes_fifo():
    """mlockall() faults in every page of this (large, Python) process: at SCHED_FIFO that
    would keep every RT thread of lower or equal priority on the CPU waiting that long.  The
    thread locks memory and prefaults its stack first, so once FIFO it takes no fault."""
    ballast = bytearray(64 << 20)  # 64 MB more for mlockall to fault in, were it FIFO
    with RtThread(period_us=1000, priority=72) as rt:
        s = rt.stats()
        assert s.policy == "SCHED_FIFO" and s.memory_locked
        assert s.setup_faults < 64, s.setup_faults  # mlockall's share would be some 16,000
    del ballast


def test_without_pm_qos_should_not_hold_cpu_dma_latency():
    with RtThread(period_us=1000, hold_dma_latency=False) as rt:
        assert not rt.stats().dma_latency_held
        assert not dma_latency_fds()
        assert rt.stats().cpu is None
