"""CPU time of exactly the lab's own tasks, for benchmarks that anything else running
on the machine must not distort.

:class:`LabCpu` moves this process into a cgroup v2 of its own; every thread it
has or starts (the stations' real-time and VNIC threads) and every child it
spawns (iperf3 in the station namespaces) is counted there, and nothing else
is.  The cgroup's ``cpu.stat`` is kept by the kernel whether or not the cpu
controller is enabled, so no scheduling policy changes.  Softirq work (veth,
bridge, TAP) is charged to the task it interrupted, which is a lab task when
the lab caused it, except what the kernel defers to ksoftirqd: those threads
serve whatever runs, are counted separately, and added to the lab's figure
only by the caller's choice (on this machine the lab's traffic is all there
is).  Without cgroup v2 the figure is the sum of this process's threads and
its waited-for children, which misses children still running.
"""

from __future__ import annotations

import os
import resource
import time

CGROUP_ROOTS = ("/sys/fs/cgroup/unified", "/sys/fs/cgroup")


def _cgroup2_root() -> str | None:
    try:
        with open("/proc/self/mounts") as f:
            mounts = [line.split()[1] for line in f if line.split()[2:3] == ["cgroup2"]]
    except OSError:
        return None
    for root in CGROUP_ROOTS:
        if root in mounts:
            return root
    return mounts[0] if mounts else None


def _own_cgroup() -> str:
    with open("/proc/self/cgroup") as f:
        for line in f:
            if line.startswith("0::"):
                return line[3:].strip()
    return "/"


def run_time_s(tasks_dir: str, name_prefix: str) -> float:
    """Run time (s) of the tasks under ``tasks_dir`` (/proc, /proc/self/task) whose name
    starts with ``name_prefix``; one that ends in between is left out."""
    total = 0
    for tid in os.listdir(tasks_dir):
        if not tid.isdigit():
            continue
        try:
            with open(f"{tasks_dir}/{tid}/comm") as f:
                if not f.read().startswith(name_prefix):
                    continue
            with open(f"{tasks_dir}/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError):
            continue
    return total / 1e9


def ksoftirqd_cpu_s() -> float:
    """Run time of every ksoftirqd thread (s)."""
    return run_time_s("/proc", "ksoftirqd/")


def _self_cpu_s() -> float:
    ru_self = resource.getrusage(resource.RUSAGE_SELF)
    ru_kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru_self.ru_utime + ru_self.ru_stime + ru_kids.ru_utime + ru_kids.ru_stime


class LabCpu:
    """Use as a context manager around the whole benchmark; read with :meth:`sample`."""

    def __init__(self, name: str = "rtnet-bench"):
        self.name = name
        self.path: str | None = None
        self._home: str | None = None
        self.method = "process"

    def __enter__(self) -> "LabCpu":
        root = _cgroup2_root()
        if root is not None:
            path = os.path.join(root, f"{self.name}-{os.getpid()}")
            try:
                os.makedirs(path, exist_ok=True)
                self._home = os.path.join(root, _own_cgroup().lstrip("/"))
                with open(os.path.join(path, "cgroup.procs"), "w") as f:
                    f.write(str(os.getpid()))
                self.path, self.method = path, "cgroup2"
            except OSError:
                self.path = None
                try:
                    os.rmdir(path)
                except OSError:
                    pass
        return self

    def __exit__(self, *exc) -> None:
        if self.path is None:
            return
        try:
            with open(os.path.join(self._home, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        except OSError:
            pass
        for _ in range(50):  # children reaped a moment ago may still be listed
            try:
                os.rmdir(self.path)
                break
            except OSError:
                time.sleep(0.02)
        self.path = None

    def lab_cpu_s(self) -> float:
        """CPU seconds the lab's tasks used so far."""
        if self.path is None:
            return _self_cpu_s()
        with open(os.path.join(self.path, "cpu.stat")) as f:
            for line in f:
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) / 1e6
        return 0.0

    def sample(self) -> dict:
        return {
            "lab_cpu_s": self.lab_cpu_s(),
            "ksoftirqd_cpu_s": ksoftirqd_cpu_s(),
            "t": time.monotonic(),
        }

    @staticmethod
    def between(a: dict, b: dict) -> dict:
        lab = b["lab_cpu_s"] - a["lab_cpu_s"]
        soft = b["ksoftirqd_cpu_s"] - a["ksoftirqd_cpu_s"]
        return {"lab_cpu_s": lab, "ksoftirqd_cpu_s": soft, "lab_total_cpu_s": lab + soft}
