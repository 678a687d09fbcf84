"""What one window of a VNIC benchmark run cost and what the RT side saw in it
(vnic/bench.py runs the windows).

Both stations are Station objects in this process, so the stack's threads
are this process's threads other than the main Python thread (rtnet-rt and
the VNIC's pump, rtnet-vnic, of both stations): their CPU and context
switches, voluntary and involuntary apart, are read per thread from
/proc/self/task, which nothing else shares.

The CPU figure compared with the kernel path is the lab's own: this process
and every child it starts run in a cgroup v2 of their own (rtnet.cpuacct,
ACCT while a run measures), and the ksoftirqd threads are added.  Whole-machine
CPU, kept as a second figure, is the scheduler's own run time of every task
(the first field of /proc/PID/task/TID/schedstat, in ns), summed over the
tasks alive at both ends of the window, plus tasks that started within it,
plus the children that ended within it (RUSAGE_CHILDREN: iperf3 and its
wrapper).  The idle accounting of /proc/stat is not used: on this VM it
ticks, and read a tenth of what the stack's threads alone consumed.

With the stall detector as a witness (WITNESS), each window's slot misses
and slot 0 lateness are split into the VM's (within STALL_PAD_NS of a span
the hypervisor took a CPU) and the lab's, and the detector's own CPU is
taken off the lab's.
"""

from __future__ import annotations

import os
import resource
import threading
import time

import numpy as np

from rtnet.cpuacct import LabCpu, run_time_s
from rtnet.hist import Histogram
from rtnet.rtthread import THREAD_NAME as RT_THREAD_NAME
from rtnet.stall import STALL_PAD_NS, StallDetector, TakenSpans
from rtnet.stall import THREAD_NAME as WITNESS_THREAD

STACK_THREADS = (RT_THREAD_NAME, "rtnet-vnic")
CSW_KINDS = {"voluntary_ctxt_switches": "vol", "nonvoluntary_ctxt_switches": "invol"}
ACCT: LabCpu | None = None  # the lab's cgroup while vnic.bench.run() measures
WITNESS: StallDetector | None = None  # run(witness=True): the stall detector while it measures


def task_cpu_ns() -> dict:
    """{(pid, tid, start time): run time in ns} of every task on the machine."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    ns = int(f.read().split()[0])
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    started = f.read().rsplit(")", 1)[1].split()[19]
            except (OSError, ValueError, IndexError):
                continue  # ended in between
            out[(pid, tid, started)] = ns
    return out


def machine_snapshot():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return task_cpu_ns(), ru.ru_utime + ru.ru_stime


def machine_cpu_s(before, after) -> float:
    """CPU seconds of the whole machine between two machine_snapshot()s."""
    (t0, c0), (t1, c1) = before, after
    tasks = sum(ns - t0.get(key, 0) for key, ns in t1.items()) / 1e9
    return tasks + (c1 - c0)


def stack_threads() -> dict:
    """CPU seconds and context switches of this process's stack threads: in total, and
    by thread name with voluntary and involuntary switches apart (``by_name``)."""
    main = threading.main_thread().native_id
    cpu = csw = 0.0
    n = 0
    by_name = {name: {"cpu_s": 0.0, "vol": 0, "invol": 0} for name in STACK_THREADS}
    for tid in os.listdir("/proc/self/task"):
        if int(tid) == main:
            continue
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                name = f.read().strip()
            if name not in STACK_THREADS:
                continue
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                t_cpu = int(f.read().split()[0]) / 1e9
            t_csw = {}
            with open(f"/proc/self/task/{tid}/status") as f:
                for line in f:
                    key = line.split(":")[0]
                    if key in CSW_KINDS:
                        t_csw[CSW_KINDS[key]] = int(line.split()[1])
        except (OSError, ValueError):
            continue  # a thread that ended in between
        cpu += t_cpu
        csw += sum(t_csw.values())
        by_name[name]["cpu_s"] += t_cpu
        for kind, count in t_csw.items():
            by_name[name][kind] += count
        n += 1
    return {"cpu_s": cpu, "csw": csw, "threads": n, "by_name": by_name}


def csw_above_idle(r: dict, base: dict) -> dict:
    """The stack threads' context switches of window ``r`` above the idle window ``base``
    scaled to ``r``'s length, as counts: in all ("all") and by thread name and kind."""
    scale = r["wall_s"] / base["wall_s"]
    out = {"all": r["stack_csw"] - base["stack_csw"] * scale}
    for name, kinds in r["csw_by_thread"].items():
        out[name] = {k: n - base["csw_by_thread"][name][k] * scale for k, n in kinds.items()}
    return out


def witness_cpu_s() -> float:
    """CPU seconds of the stall detector's threads in this process (not the lab's work)."""
    return run_time_s("/proc/self/task", WITNESS_THREAD)


def witness_marks(stations) -> list:
    """Where each station's miss and slot 0 lateness records stand now."""
    return [(st.slot_misses()[1], st.slot0_lateness()[1]) for st in stations]


def outside_stalls(stations, marks: list, res: dict, t0_ns: int) -> dict:
    """Of the slot misses counted in ``res``, those within STALL_PAD_NS of a span the
    hypervisor took a CPU (the stall detector's cpu_taken records), and the rest,
    "outside", the lab's (a miss whose record was overwritten counts as outside); and the
    RT slot's lateness p99 over the occurrences outside those spans."""
    gaps = WITNESS.gaps()
    spans = TakenSpans(gaps, STALL_PAD_NS)
    slots = slot0 = 0
    late, in_stalls = [], 0
    for st, (m0, l0) in zip(stations, marks):
        for m in st.slot_misses(m0)[0]:
            if spans.covers(m.at_ns):
                slots += m.slots
                slot0 += m.slot0
        for at, ns in st.slot0_lateness(l0)[0]:
            if spans.covers(at):
                in_stalls += 1
            else:
                late.append(ns)
    return {
        # the detector's records of a CPU taken within this run
        "witness_spans": sum(1 for g in gaps if g.cpu_taken and g.woke_ns >= t0_ns),
        "missed_in_stalls": slots,
        "rt_slot_missed_in_stalls": slot0,
        "missed_outside": res["missed_slots"] - slots,
        "rt_slot_missed_outside": res["rt_slot_missed"] - slot0,
        "rt_lateness_in_stalls": in_stalls,
        "rt_lateness_outside_n": len(late),
        "rt_lateness_p99_outside_us": (
            float(np.percentile(late, 99, method="inverted_cdf")) / 1000 if late else None
        ),
    }


def rt_snapshot(stations) -> dict:
    out = []
    for st in stations:
        s = st.stats()
        out.append(
            {
                "wake_bins": s["wakeup"].bins.copy(),
                "wake_lo": s["wakeup"].lo_ns,
                "slot0": s["tdma"]["slot0_lateness"],
                "missed": s["tdma"]["missed_slots"],
                "rt_missed": s["tdma"]["slots"][0]["missed"],
                "miss_late_wake": s["miss_late_wake"],
                "miss_other": s["miss_other"],
                "vnic_pkts": s["vnic"]["tap_rx"] + s["vnic"]["tap_tx"],
                "vnic": dict(s["vnic"]),
                "timer_wakeups": s["timer_wakeups"],
                "frames_tx": s["tdma"]["frames_tx"],
            }
        )
    return out


def rt_impact(r0: list, r1: list) -> dict:
    """Real-time figures between two rt_snapshot()s, both stations together."""

    def delta(key):
        return sum(b[key] - a[key] for a, b in zip(r0, r1))

    bins = sum(b["wake_bins"] - a["wake_bins"] for a, b in zip(r0, r1))
    slot0 = Histogram.combine([b["slot0"].since(a["slot0"]) for a, b in zip(r0, r1)])
    return {
        "wake_p99_us": p99_us(bins, r1[0]["wake_lo"]),
        # lateness of the first frame of every slot 0 occurrence (the RT probe)
        "rt_lateness_p99_us": slot0.percentile_ns(99) / 1000,
        "rt_frames": int(slot0.count),
        "missed_slots": delta("missed"),
        "rt_slot_missed": delta("rt_missed"),
        "miss_late_wake": delta("miss_late_wake"),
        "miss_other": delta("miss_other"),
        "timer_wakeups": delta("timer_wakeups"),
        "vnic_packets": delta("vnic_pkts"),
        "vnic_wakeups": sum(b["vnic"]["wakeups"] - a["vnic"]["wakeups"] for a, b in zip(r0, r1)),
        "tx_dropped": sum(
            b["vnic"]["tx_dropped"] - a["vnic"]["tx_dropped"] for a, b in zip(r0, r1)
        ),
        # per station: timer wake-ups and the frames each one sent
        "wakeups_per_station": [b["timer_wakeups"] - a["timer_wakeups"] for a, b in zip(r0, r1)],
        "frames_per_station": [b["frames_tx"] - a["frames_tx"] for a, b in zip(r0, r1)],
        **tap_io(r0, r1),
    }


def tap_io(r0: list, r1: list) -> dict:
    """TAP syscalls and the wire frames (segments) they carried, both stations."""
    d = {
        k: sum(b["vnic"][k] - a["vnic"][k] for a, b in zip(r0, r1))
        for k in (
            "tap_reads",
            "tap_rx",
            "tap_writes",
            "tap_tx",
            "tap_rx_bytes",
            "tap_tx_bytes",
            "tx_copy_bytes",
            "rx_copy_bytes",
            "pump_wakeups",
            "pump_kicks",
            "ring_full",
            "pump_yields",
        )
    }

    def ratio(a, b):
        return d[a] / d[b] if d[b] else None

    return {
        **{k: d[k] for k in ("tap_reads", "tap_writes", "pump_wakeups", "pump_kicks", "ring_full")},
        # TAP writes held back for an RT thread's wake-up (rtn_wakeboard.h)
        "pump_yields": d["pump_yields"],
        "segs_per_read": ratio("tap_rx", "tap_reads"),
        "segs_per_write": ratio("tap_tx", "tap_writes"),
        # bytes copied along each direction (the kernel's TAP copies included) per byte carried
        "tx_copies_per_byte": ratio("tx_copy_bytes", "tap_rx_bytes"),
        "rx_copies_per_byte": ratio("rx_copy_bytes", "tap_tx_bytes"),
    }


def p99_us(bins: np.ndarray, lo_ns: int) -> float:
    n = int(bins.sum())
    if not n:
        return 0.0
    idx = int(np.searchsorted(np.cumsum(bins), int(np.ceil(n * 0.99))))
    return (lo_ns + (idx + 1) * 1000) / 1000


def measure(fn, stations=None) -> dict:
    t0, b0, k0 = time.monotonic(), machine_snapshot(), stack_threads()
    a0 = ACCT.sample() if ACCT else None
    r0 = rt_snapshot(stations) if stations else None
    w0 = witness_cpu_s() if WITNESS else 0.0
    m0 = witness_marks(stations) if WITNESS and stations else None
    t0_ns = time.monotonic_ns()  # CLOCK_MONOTONIC, the detector's clock
    res = fn()
    t1, b1, k1 = time.monotonic(), machine_snapshot(), stack_threads()
    a1 = ACCT.sample() if ACCT else None
    w1 = witness_cpu_s() if WITNESS else 0.0
    res = dict(res)
    res.update(
        wall_s=t1 - t0,
        machine_cpu_s=machine_cpu_s(b0, b1),
        stack_cpu_s=k1["cpu_s"] - k0["cpu_s"],
        stack_csw=k1["csw"] - k0["csw"],
        stack_threads=k1["threads"],
        csw_by_thread={
            name: {
                kind: k1["by_name"][name][kind] - k0["by_name"][name][kind]
                for kind in CSW_KINDS.values()
            }
            for name in STACK_THREADS
        },
        cpu_by_thread={
            name: k1["by_name"][name]["cpu_s"] - k0["by_name"][name]["cpu_s"]
            for name in STACK_THREADS
        },
    )
    if a0 is not None:
        res.update(LabCpu.between(a0, a1), cpu_method=ACCT.method)
    else:
        res.update(lab_total_cpu_s=res["machine_cpu_s"], cpu_method="machine")
    if WITNESS:  # the detector is the benchmark's, not the lab's work
        res["witness_cpu_s"] = w1 - w0
        res["lab_total_cpu_s"] -= res["witness_cpu_s"]
        res["machine_cpu_s"] -= res["witness_cpu_s"]
    if stations:
        res.update(rt_impact(r0, rt_snapshot(stations)))
        if m0 is not None:
            res.update(outside_stalls(stations, m0, res, t0_ns))
        res["wakeups_per_s"] = [w / res["wall_s"] for w in res["wakeups_per_station"]]
        res["frames_per_wakeup"] = [
            f / w if w else None
            for f, w in zip(res["frames_per_station"], res["wakeups_per_station"])
        ]
    gb = res.get("bytes", 0) / 1e9
    res["cpu_s_per_gb"] = res["lab_total_cpu_s"] / gb if gb else None
    res["machine_cpu_s_per_gb"] = res["machine_cpu_s"] / gb if gb else None
    return res


def idle(seconds: float):
    def fn():
        threading.Event().wait(seconds)  # the idle reference window
        return {}

    return fn
