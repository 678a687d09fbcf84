"""Shared pieces of the benchmarks: cyclictest as a baseline, stress-ng as a load,
histogram accumulation and the JSON envelope.

Benchmarks print their figures next to a baseline measured in the same run;
these helpers make the baseline side identical for every tool.
"""

import argparse
import math
import os
import platform
import re
import signal
import subprocess
import tempfile
import time

import numpy as np

from .errors import ConfigError
from .hist import Histogram

NBINS = 4000


class Accumulator:
    """Sum of several 1 us histograms (chunks of one tool under one load)."""

    def __init__(self):
        self.bins = np.zeros(NBINS, dtype=np.uint64)
        self.count = self.underflow = self.overflow = self.sum_ns = 0
        self.min_ns = self.max_ns = None
        self.chunks = 0
        self.per_chunk = []  # (p99 us, max us, count) of each chunk, to spot drift

    def add(self, bins, count, underflow, overflow, min_ns, max_ns, sum_ns):
        self.bins += np.asarray(bins, dtype=np.uint64)[:NBINS]
        self.count += count
        self.underflow += underflow
        self.overflow += overflow
        self.sum_ns += sum_ns
        if count:
            self.min_ns = min_ns if self.min_ns is None else min(self.min_ns, min_ns)
            self.max_ns = max_ns if self.max_ns is None else max(self.max_ns, max_ns)
        self.chunks += 1
        one = Histogram(
            0,
            np.asarray(bins, dtype=np.uint64)[:NBINS],
            count,
            underflow,
            overflow,
            min_ns,
            max_ns,
            sum_ns,
        )
        self.per_chunk.append(
            {"count": int(count), "p99": one.percentile_ns(99) / 1000, "max": max_ns / 1000}
        )

    def histogram(self) -> Histogram:
        return Histogram(
            0,
            self.bins,
            self.count,
            self.underflow,
            self.overflow,
            self.min_ns or 0,
            self.max_ns or 0,
            self.sum_ns,
        )


def parse_cyclictest(text: str):
    """Bins, min/avg/max and overflows from ``cyclictest -q -h N`` output.

    With several threads each row has one column per thread: bins and totals
    are summed, the minimum and maximum taken across threads.
    """
    bins = np.zeros(NBINS, dtype=np.uint64)
    fields = {}
    combine = {
        "Total": sum,
        "Min Latencies": min,
        "Avg Latencies": lambda v: sum(v) // len(v),
        "Max Latencies": max,
        "Histogram Overflows": sum,
    }
    for line in text.splitlines():
        m = re.match(r"^(\d+)((?:\s+\d+)+)\s*$", line)
        if m:
            idx = int(m.group(1))
            if idx < NBINS:
                bins[idx] = sum(int(x) for x in m.group(2).split())
            continue
        m = re.match(
            r"^# (Total|Min Latencies|Avg Latencies|Max Latencies|"
            r"Histogram Overflows):((?:\s+\d+)+)",
            line,
        )
        if m:
            fields[m.group(1)] = combine[m.group(1)]([int(x) for x in m.group(2).split()])
    missing = {"Total", "Min Latencies", "Max Latencies", "Histogram Overflows"} - set(fields)
    if missing:
        raise RuntimeError(f"cyclictest output lacks {', '.join(sorted(missing))}")
    if fields["Total"] != int(bins.sum()):
        raise RuntimeError(
            f"cyclictest histogram sums to {int(bins.sum())}, Total says {fields['Total']}"
        )
    return bins, fields


def run_cyclictest(
    cyclictest: str,
    *,
    seconds: int,
    priority: int,
    cpus: str,
    threads: int = 1,
    period_us: int = 1000,
    acc=None,
):
    """Run cyclictest and add its histogram (all threads summed) to ``acc``."""
    acc = acc if acc is not None else Accumulator()
    cmd = [
        cyclictest,
        "-m",
        "-p",
        str(priority),
        "-a",
        cpus,
        "-t",
        str(threads),
        "-i",
        str(int(period_us)),
        "-d",
        "0",
        "-q",
        "-D",
        str(int(seconds)),
        "-h",
        str(NBINS),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()}")
    bins, f = parse_cyclictest(proc.stdout)
    overflow = f["Histogram Overflows"]
    count = int(bins.sum()) + overflow
    # cyclictest truncates to whole us: a sample in bin i lies in [i, i+1) us.
    # Estimate the sum from bin midpoints and give the max its upper bound, so
    # percentiles are conservative for both tools alike.
    idx = np.arange(NBINS)
    sum_ns = int(((idx + 0.5) * 1000 * bins).sum()) + overflow * f["Max Latencies"] * 1000
    acc.add(
        bins, count, 0, overflow, f["Min Latencies"] * 1000, f["Max Latencies"] * 1000 + 999, sum_ns
    )
    return acc, cmd


def start_stress(
    stress_ng: str, seconds: float, ncpus: int | None = None, taskset: str | None = None
):
    """stress-ng CPU workers (``ncpus``, default one per CPU), on ``taskset`` CPUs if given."""
    ncpus = ncpus or os.cpu_count() or 1
    cmd = [stress_ng, "--cpu", str(ncpus), "--timeout", f"{int(math.ceil(seconds))}s", "--quiet"]
    if taskset is not None:
        cmd += ["--taskset", taskset]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        time.sleep(2.0)  # let the workers spin up before measuring
    except BaseException:  # stopped meanwhile (Ctrl-C, SIGTERM): the caller has no handle yet
        stop_stress(proc)
        raise
    if proc.poll() is not None:
        raise RuntimeError(f"{' '.join(cmd)} exited early with {proc.returncode}")
    return proc, cmd


def stop_stress(proc):
    """Stop the stress-ng we started: its own process group, by its PID."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


IPERF_PORT = 5201


def listening(pid: int, port: int) -> bool:
    """Whether a TCP socket listens on ``port`` in the network namespace of process ``pid``
    (/proc/PID/net is that namespace's)."""
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{table}") as f:
                next(f, None)
                for line in f:
                    local, state = line.split()[1], line.split()[3]
                    if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                        return True
        except (OSError, ValueError, IndexError):
            continue
    return False


RT_CPU_CHOICES = "auto, none or a CPU number"
RT_CPU_HELP = (
    "the CPU both stations' RT threads are pinned to, iperf3 and the pumps kept off it "
    "(auto: the highest CPU when there are two or more; none: nothing pinned)"
)


def cpu_isolation(rt_cpu, allowed=None) -> tuple[int | None, tuple[int, ...] | None]:
    """Where the RT threads and the applications run: (the CPU both stations' RT threads are
    pinned to, the CPUs iperf3 runs on), or (None, None) when nothing is pinned.

    ``rt_cpu`` "auto" keeps the highest CPU this process may use for the RT threads when it
    may use two or more, as a real-time deployment does (isolcpus, a cpuset); the pumps stay
    off it by themselves (csrc/vnic/rtn_vnic_pump.c) and iperf3 is started on the others.  On this
    kernel (no full preemption) an RT thread waking where an application is inside a system
    call waits for it to leave, so with the CPU kept, what the VNIC adds to the RT threads'
    lateness is the VNIC's own.  The placement also sets the idle TDMA's cost, and costs the
    pump preemptions by the application it wakes (BENCHMARKS.md, VNIC cost).  "none":
    everything floats, as the series before b13a1da.  ConfigError for a CPU this process
    may not use, or one that leaves no CPU for the applications."""
    allowed = sorted(os.sched_getaffinity(0) if allowed is None else allowed)
    if rt_cpu == "none":
        return None, None
    if rt_cpu == "auto":
        if len(allowed) < 2:
            return None, None
        rt_cpu = allowed[-1]
    if isinstance(rt_cpu, str):
        try:
            rt_cpu = int(rt_cpu, 10)
        except ValueError:
            raise ConfigError(f"--rt-cpu: {rt_cpu!r} is not {RT_CPU_CHOICES}") from None
    if isinstance(rt_cpu, bool) or not isinstance(rt_cpu, int):
        raise ConfigError(f"--rt-cpu: {rt_cpu!r} is not {RT_CPU_CHOICES}")
    if rt_cpu not in allowed:
        raise ConfigError(f"--rt-cpu: CPU {rt_cpu} is not one this process may use {allowed}")
    apps = tuple(c for c in allowed if c != rt_cpu)
    if not apps:
        raise ConfigError(f"--rt-cpu: CPU {rt_cpu} is the only one: none left for iperf3")
    return rt_cpu, apps


def rt_cpu_arg(text: str) -> str:
    """argparse type of --rt-cpu (vnic bench, tools.bench_vnic): ``text`` if cpu_isolation
    takes it, else the one line it gave."""
    try:
        cpu_isolation(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--rt-cpu: ")) from None
    return text


def on_cpus(argv: list[str], cpus) -> list[str]:
    """``argv`` started on the CPUs ``cpus`` (taskset; the affinity outlives the execs of
    ``ip netns exec``), or as it is when ``cpus`` is empty or None."""
    if not cpus:
        return list(argv)
    return ["taskset", "-c", ",".join(str(int(c)) for c in cpus)] + list(argv)


def iperf_udp_flood(dst: str, mbps: float, length: int, seconds: int) -> list[str]:
    """iperf3's UDP client: ``length``-byte datagrams to ``dst`` (IPERF_PORT) at ``mbps``
    Mbit/s for ``seconds``."""
    return [
        "iperf3",
        "-c",
        dst,
        "-p",
        str(IPERF_PORT),
        "-u",
        "-b",
        f"{mbps:g}M",
        "-l",
        str(length),
        "-t",
        str(int(seconds)),
    ]


def start_iperf_server(
    lab,
    station,
    bind_ip: str,
    *,
    one_off: bool = False,
    timeout: float = 10.0,
    cpus=None,
) -> subprocess.Popen:
    """iperf3 -s in ``station``'s namespace (on ``cpus``, on_cpus), returned once it listens:
    a client started before that fails to connect, and iperf3 gives no readiness signal of
    its own."""
    argv = on_cpus(["iperf3", "-s"] + (["-1"] if one_off else []) + ["-B", bind_ip], cpus)
    srv = lab.spawn(station, argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    while not listening(srv.pid, IPERF_PORT):
        if srv.poll() is not None or time.monotonic() > deadline:
            lab.stop(srv)
            raise RuntimeError(f"iperf3 -s in {station.netns} did not start listening")
        time.sleep(0.01)  # another process's socket: poll its table
    return srv


def sysinfo() -> dict:
    rt = None
    try:
        with open("/sys/kernel/realtime") as f:
            rt = f.read().strip()
    except OSError:
        pass
    u = platform.uname()
    return {
        "uname": " ".join([u.system, u.node, u.release, u.version, u.machine]),
        "realtime": rt,
        "ncpus": os.cpu_count(),
    }


def why_unwritable(path: str) -> str | None:
    """Why ``path`` could not be written at the end of a run, or None.

    Tried for real (directory created, a scratch file made and removed there):
    permission bits say nothing for root, who still cannot write into /proc.
    """
    if os.path.isdir(path):
        return "is a directory"
    parent = os.path.dirname(path) or "."
    try:
        os.makedirs(parent, exist_ok=True)
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as exc:
        return f"cannot write into {parent}: {exc.strerror}"
    return None
