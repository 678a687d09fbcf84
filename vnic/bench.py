"""VNIC benchmark: iperf3 through vnic0 (batched, per-packet) against the plain kernel path.

Both stations are Station objects in this process, so the stack's threads
are this process's threads other than the main Python thread (rtnet-rt and
the VNIC's pump, rtnet-vnic, of both stations): their CPU and context
switches, voluntary and involuntary apart, are read per thread from
/proc/self/task, which nothing else shares.  iperf3 runs in separate processes in the station namespaces.

The CPU figure compared with the kernel path is the lab's own: this process
and every child it starts run in a cgroup v2 of their own (rtnet.cpuacct),
and the ksoftirqd threads are added (they carry the softirq work the kernel
defers; on a machine where only the lab sends traffic, that is the lab's).
Anything else running on the machine is not counted.  Each mode's idle TDMA
run is measured before and after its loaded runs; when the two differ by
more than 20% the after run is repeated, and a run whose idle baselines
still disagree is flagged.  The cost above idle is never printed negative:
a loaded run cheaper than its idle baseline is flagged instead.

Whole-machine CPU, kept as a second figure, is the scheduler's own run time of every task (the first
field of /proc/PID/task/TID/schedstat, in ns), summed over the tasks alive at
both ends of the window, plus tasks that started within it, plus the
children that ended within it (RUSAGE_CHILDREN: iperf3 and its wrapper).
Softirq work (veth, bridge, TAP) is charged to the task it ran in, or to
ksoftirqd.  The idle accounting of /proc/stat is not used: on this VM it
ticks, and read a tenth of what the stack's threads alone consumed.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import subprocess
import tempfile
import threading
import time

import numpy as np

from rtmac.tdma_config import MAX_LINK_RATE_MBPS
from rtnet import netns
from rtnet.benchkit import start_iperf_server
from rtnet.cpuacct import LabCpu, run_time_s
from rtnet.errors import ConfigError, LabError
from rtnet.hist import Histogram
from rtnet.lab import Lab
from rtnet.stall import THREAD_NAME as WITNESS_THREAD
from rtnet.stall import StallDetector, TakenSpans

from .pair import NRT_SLOT_SIZE, SlotPlan, plan, tdma_pair
from .tap import OFFLOAD_BY_MODE, RTMAC_HLEN

STACK_THREADS = ("rtnet-rt", "rtnet-vnic")
CSW_KINDS = {"voluntary_ctxt_switches": "vol", "nonvoluntary_ctxt_switches": "invol"}
COST_JSON = "results/cost.json"  # the cost benchmark's instructions per KB (tools/bench_cost.py)
IDLE_AGREE = 0.20  # idle baselines before and after may differ by this much
ACCT: LabCpu | None = None  # the lab's cgroup while run() measures
WITNESS: StallDetector | None = None  # run(witness=True): the stall detector while it measures
# a slot miss within this of a span the hypervisor took the CPU is the VM's (a 1 ms cycle:
# the wake-up due before the stall and the one catching up after it)
WITNESS_PAD_NS = 2_000_000
# a loaded run with this many times its idle run's records of a CPU taken (+ this many): flagged
WITNESS_SUSPECT_X, WITNESS_SUSPECT_MIN = 3, 20
TCP_IP_HLEN = 52  # IPv4 + TCP with the timestamp option Linux sends
MAX_SECONDS = 600
MIN_MTU = 68  # the smallest IPv4 link MTU (RFC 791)
MAX_MTU = NRT_SLOT_SIZE - RTMAC_HLEN  # the largest the NRT slot carries
OFFLOAD = ("on", "off", "both")


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


def witness_cpu_s() -> float:
    """CPU seconds of the stall detector's threads in this process (not the lab's work)."""
    return run_time_s("/proc/self/task", WITNESS_THREAD)


def witness_marks(stations) -> list:
    """Where each station's miss and slot 0 lateness records stand now."""
    return [(st.slot_misses()[1], st.slot0_lateness()[1]) for st in stations]


def outside_stalls(stations, marks: list, res: dict, t0_ns: int) -> dict:
    """Of the slot misses counted in ``res``, those within WITNESS_PAD_NS of a span the
    hypervisor took a CPU (the stall detector's cpu_taken records), and the rest,
    "outside", the lab's (a miss whose record was overwritten counts as outside); and the
    RT slot's lateness p99 over the occurrences outside those spans."""
    gaps = WITNESS.gaps()
    spans = TakenSpans(gaps, WITNESS_PAD_NS)
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


OFFERED_MBPS = 100  # what iperf3 offers; run() sets it to the modelled link rate


def run_iperf(lab, proto: str, dst_ip: str, seconds: int) -> dict:
    srv = start_iperf_server(lab, lab.station(2), dst_ip, one_off=True)
    try:
        cmd = netns.command(
            lab.station(1).netns,
            ["iperf3", "-c", dst_ip, "-t", str(seconds), "-b", f"{OFFERED_MBPS}M", "-J"],
        )
        if proto == "udp":
            cmd += ["-u", "-l", "1100"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 30)
        j = json.loads(r.stdout)
        if "error" in j:
            raise RuntimeError(f"iperf3: {j['error']}")
        end = j["end"]
        if proto == "udp":
            s = end["sum"]
            return {
                "goodput_mbps": s["bits_per_second"] * (1 - s["lost_percent"] / 100) / 1e6,
                "bytes": s["bytes"] * (1 - s["lost_percent"] / 100),
                "loss_pct": s["lost_percent"],
                "packets": s["packets"],
            }
        s = end["sum_received"]
        return {
            "goodput_mbps": s["bits_per_second"] / 1e6,
            "bytes": s["bytes"],
            "loss_pct": 0.0,
            "retransmits": end["sum_sent"].get("retransmits", 0),
        }
    finally:
        lab.stop(srv, timeout=10, terminate=False)  # iperf3 -s -1 ends after one test


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
        )
    }

    def ratio(a, b):
        return d[a] / d[b] if d[b] else None

    return {
        **{k: d[k] for k in ("tap_reads", "tap_writes", "pump_wakeups", "pump_kicks", "ring_full")},
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


def idle_baseline(name: str, seconds: float, stations, log, before: dict | None = None) -> dict:
    """An idle TDMA run; given the one from before the loaded runs, check they agree
    (repeated once if not) and return both combined, flagged if they still differ."""
    r = measure(idle(seconds), stations)
    if before is None:
        return r
    rate = [x["lab_total_cpu_s"] / x["wall_s"] for x in (before, r)]
    if abs(rate[0] - rate[1]) > IDLE_AGREE * max(rate):
        log(f"{name:16s} idle baselines differ ({rate[0]:.3f} vs {rate[1]:.3f} CPU s/s): again")
        r = measure(idle(seconds), stations)
        rate[1] = r["lab_total_cpu_s"] / r["wall_s"]
    out = dict(before)
    out["idle_cpu_per_s"] = rate
    out["idle_cpu_per_s_mean"] = (rate[0] + rate[1]) / 2
    out["idle_disagree"] = abs(rate[0] - rate[1]) > IDLE_AGREE * max(rate)
    if out["idle_disagree"]:
        log(
            f"FLAG {name}: idle baselines before and after differ by more than "
            f"{IDLE_AGREE:.0%} ({rate[0]:.3f} vs {rate[1]:.3f} CPU s/s): its above-idle "
            f"figures are not trustworthy"
        )
    return out


def derive(r: dict, base: dict, cap: float) -> None:
    """A loaded run's figures relative to its mode's idle TDMA baseline."""
    scale = r["wall_s"] / base["wall_s"]
    extra = r["stack_csw"] - base["stack_csw"] * scale
    r["fixed_csw_per_s"] = base["stack_csw"] / base["wall_s"]
    r["csw_per_packet"] = extra / r["vnic_packets"] if r["vnic_packets"] else None
    # the same split by thread, voluntary (it slept) and involuntary (it was preempted)
    r["csw_per_packet_by_thread"] = (
        {
            name: {
                kind: (n - base["csw_by_thread"][name][kind] * scale) / r["vnic_packets"]
                for kind, n in kinds.items()
            }
            for name, kinds in r["csw_by_thread"].items()
        }
        if r["vnic_packets"]
        else None
    )
    r["pump_wakeups_per_packet"] = (
        r["pump_wakeups"] / r["vnic_packets"] if r["vnic_packets"] else None
    )
    r["idle_wake_p99_us"] = base["wake_p99_us"]
    r["idle_rt_lateness_p99_us"] = base["rt_lateness_p99_us"]
    r["idle_missed_slots"] = base["missed_slots"] * scale
    r["idle_rt_slot_missed"] = base["rt_slot_missed"] * scale
    if "rt_slot_missed_outside" in base:
        r["idle_rt_slot_missed_outside"] = base["rt_slot_missed_outside"] * scale
        r["idle_rt_lateness_p99_outside_us"] = base["rt_lateness_p99_outside_us"]
        # the detector cannot tell a hypervisor from the guest's own kernel holding timer
        # interrupts off: records that grow with the load may be the load's, not the VM's
        r["witness_suspect"] = (
            r["witness_spans"]
            > WITNESS_SUSPECT_X * base["witness_spans"] * scale + WITNESS_SUSPECT_MIN
        )
    r["goodput_pct_of_capacity"] = 100 * r["goodput_mbps"] / cap
    # the VNIC's own cost: the lab's CPU above an idle TDMA run of the same length
    idle_cpu = (
        base.get("idle_cpu_per_s_mean", base["lab_total_cpu_s"] / base["wall_s"]) * r["wall_s"]
    )
    above = r["lab_total_cpu_s"] - idle_cpu
    gb = r.get("bytes", 0) / 1e9
    r["below_idle"] = above < 0
    r["idle_disagree"] = bool(base.get("idle_disagree"))
    r["marginal_cpu_s_per_gb"] = max(above, 0.0) / gb if gb else None


def idle(seconds: float):
    def fn():
        threading.Event().wait(seconds)  # the idle reference window
        return {}

    return fn


def wakeup_floor(base: dict, seconds: int, log) -> dict:
    """What a bare timer wake-up costs here: cyclictest at the stations' wake-up rate.

    The TDMA stations' fixed cost is their RT threads' slot wake-ups; cyclictest
    (one SCHED_FIFO thread, clock_nanosleep, PM QoS held) at the same rate, run
    right after, is the floor any design that wakes per slot pays on this machine.
    """
    rate = base["timer_wakeups"] / base["wall_s"]
    interval_us = max(50, int(round(1e6 / rate)))
    proc = subprocess.Popen(
        ["cyclictest", "-q", "-m", "-t1", "-p80", "-i", str(interval_us), "-D", str(seconds)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _pid, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    loops = seconds * 1e6 / interval_us
    out = {
        "interval_us": interval_us,
        "cpu_s": ru.ru_utime + ru.ru_stime,
        "us_per_wakeup": (ru.ru_utime + ru.ru_stime) / loops * 1e6,
        "stack_us_per_wakeup": base["stack_cpu_s"] / base["timer_wakeups"] * 1e6,
        "exit": proc.returncode,
    }
    log(
        f"wake-up floor: cyclictest -i {interval_us} for {seconds} s used {out['cpu_s']:.2f} CPU s "
        f"= {out['us_per_wakeup']:.1f} us per wake-up (stations idle: "
        f"{out['stack_us_per_wakeup']:.1f} us per wake-up)"
    )
    return out


def kernel_path(lab, seconds: int, results: dict, log, when: str) -> None:
    """The baseline: iperf3 over the plain veth + bridge path, no rtnet.

    Run before and after the VNIC runs; ``runs["kernel/<proto>"]`` holds both
    together (CPU and bytes summed), so slow drift of the machine between the
    first and the last run does not decide the ratios.
    """
    for proto in ("tcp", "udp"):
        log(f"kernel   {proto} ({when}): iperf3 {seconds} s over veth+bridge ...")
        r = measure(lambda: run_iperf(lab, proto, "198.18.0.2", seconds))
        results.setdefault("kernel_runs", {})[f"{proto}/{when}"] = r
        log(
            f"kernel   {proto} ({when}): {r['goodput_mbps']:.1f} Mbit/s, loss {r['loss_pct']:.2f}%, "
            f"{r['cpu_s_per_gb']:.2f} CPU s/GB"
        )
        both = [v for k, v in results["kernel_runs"].items() if k.startswith(proto + "/")]
        cpu, nbytes = sum(v["lab_total_cpu_s"] for v in both), sum(v["bytes"] for v in both)
        results["runs"][f"kernel/{proto}"] = {
            **r,
            "lab_total_cpu_s": cpu / len(both),
            "bytes": nbytes / len(both),
            "machine_cpu_s": sum(v["machine_cpu_s"] for v in both) / len(both),
            "goodput_mbps": sum(v["goodput_mbps"] for v in both) / len(both),
            "loss_pct": sum(v["loss_pct"] for v in both) / len(both),
            "cpu_s_per_gb": cpu / (nbytes / 1e9),
            "runs": len(both),
            "cpu_s_per_gb_each": [v["cpu_s_per_gb"] for v in both],
        }


def kernel_mtu_path(lab, seconds: int, results: dict, log) -> None:
    """A second baseline: the same veth + bridge path with TSO, GSO and GRO off on
    rteth0, so that the wire carries MTU-sized frames as a TDMA segment does.

    The plain kernel path moves 64 KB super-packets through veth and bridge as one
    skb; the VNIC (like any real segment) puts every 1500-byte frame on the wire
    on its own.  This run shows how much of the VNIC's cost is that alone.
    """

    def offloads(state: str) -> None:
        for idx in (1, 2):
            subprocess.run(
                netns.command(
                    lab.station(idx).netns,
                    ["ethtool", "-K", "rteth0", "tso", state, "gso", state, "gro", state],
                ),
                capture_output=True,
                check=False,
            )

    log(f"kernel   tcp (MTU frames): iperf3 {seconds} s over veth+bridge, offloads off ...")
    offloads("off")
    try:
        r = measure(lambda: run_iperf(lab, "tcp", "198.18.0.2", seconds))
    finally:
        offloads("on")
    results["runs"]["kernel-mtu/tcp"] = r
    log(
        f"kernel   tcp (MTU frames): {r['goodput_mbps']:.1f} Mbit/s, {r['cpu_s_per_gb']:.2f} CPU s/GB"
    )


def _writable(path: str) -> str | None:
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


def check_args(
    seconds: int,
    cycle_us: int,
    link_rate_mbps: int,
    mtu: int | None,
    lab_name: str,
    out_json: str,
    out_png: str,
    offload: str,
    windows: bool = True,
) -> SlotPlan:
    """The slot plan for these arguments, or ConfigError (one line) before anything is built.
    ``windows`` False: RTnet's NRT slots (one frame per occurrence) instead of NRT windows."""

    def bad(what, why):
        raise ConfigError(f"{what}: {why}")

    if isinstance(seconds, bool) or not isinstance(seconds, int) or not 1 <= seconds <= MAX_SECONDS:
        bad("--seconds", f"{seconds!r} outside 1..{MAX_SECONDS}")
    if (
        isinstance(link_rate_mbps, bool)
        or not isinstance(link_rate_mbps, int)
        or not 1 <= link_rate_mbps <= MAX_LINK_RATE_MBPS
    ):
        # the NRT capacity is the link rate's share: an unpaced link (0) has none to compare
        bad("--link-rate", f"{link_rate_mbps!r} outside 1..{MAX_LINK_RATE_MBPS} Mbit/s")
    if mtu is not None and (
        isinstance(mtu, bool) or not isinstance(mtu, int) or not MIN_MTU <= mtu <= MAX_MTU
    ):
        bad("--mtu", f"{mtu!r} outside {MIN_MTU}..{MAX_MTU} (the NRT slot's limit)")
    if offload not in OFFLOAD:
        bad("--offload", f"{offload!r} is not one of {', '.join(OFFLOAD)}")
    try:
        Lab(lab_name, 2)  # checks the name, builds nothing
    except LabError as exc:
        bad("--lab", exc.strerror)
    for opt, path in (("--json", out_json), ("--png", out_png)):
        why = _writable(path)
        if why:
            bad(opt, f"{path}: {why}")
    try:
        p = plan(cycle_us, link_rate_mbps, windows=windows)
    except ConfigError as exc:
        bad("--cycle-us", f"{cycle_us} us at {link_rate_mbps} Mbit/s: {exc}")
    if p.master_nrt_ns <= 0:
        bad(
            "--cycle-us",
            f"{cycle_us} us at {link_rate_mbps} Mbit/s leaves no NRT time for the master's VNIC",
        )
    return p


def run(
    seconds: int = 5,
    cycle_us: int = 1000,
    link_rate_mbps: int = 100,
    mtu: int | None = None,
    lab_name: str = "vb",
    out_json: str = "results/vnic_bench.json",
    out_png: str = "results/vnic_bench.png",
    log=print,
    offload: str = "on",
    windows: bool = True,
    witness: bool = False,
) -> dict:
    """``offload``: the batched mode's TAP with TSO ("on"), without ("off", one frame per
    TAP read/write), or "both" (the run without is named ``batched-nooff``); the
    per-packet mode, the seed's baseline, always opens its TAP without (one read, one
    frame, one RT wake-up: vnic.tap.OFFLOAD_BY_MODE).  ``witness``: the stall detector
    runs on every CPU throughout, and each run's RT slot misses are split into those a
    span the hypervisor took a CPU explains and the rest, the lab's ("outside"); its
    threads' CPU is taken off the lab's, but its wake-ups (2,000 a second per CPU) still
    preempt the pump now and then, so the switches per packet are a witness run's.
    Every argument is checked (check_args) before the lab is built."""
    p = check_args(
        seconds, cycle_us, link_rate_mbps, mtu, lab_name, out_json, out_png, offload, windows
    )
    mtu = mtu or MAX_MTU
    variants = {"on": (True,), "off": (False,), "both": (True, False)}[offload]
    cap = p.master_capacity_mbps
    log(
        f"# TDMA cycle {cycle_us} us, link model {link_rate_mbps} Mbit/s, master {p.describe()} "
        f"-> NRT capacity {cap:.1f} Mbit/s, TCP {p.master_tcp_capacity_mbps:.1f} Mbit/s (slave "
        f"{p.slave_capacity_mbps:.1f} Mbit/s); VNIC MTU {mtu}; PM QoS held by the RT threads, "
        f"no busy polling"
    )
    global OFFERED_MBPS
    OFFERED_MBPS = link_rate_mbps  # the whole modelled link: the VNIC's share is the limit
    results = {
        "config": {
            **p.to_dict(),
            "seconds": seconds,
            "mtu": mtu,
            "offered_mbps": OFFERED_MBPS,
            "offload": offload,
            "witness": witness,
        },
        "runs": {},
    }
    global ACCT, WITNESS
    with contextlib.ExitStack() as stack:
        acct = stack.enter_context(LabCpu("rtn-vnic-bench"))
        lab = stack.enter_context(Lab(lab_name, 2))
        if witness:
            WITNESS = stack.enter_context(StallDetector(range(os.cpu_count() or 1)))
            stack.callback(globals().__setitem__, "WITNESS", None)
            log(
                "# witness: the stall detector on every CPU; RT slot misses within "
                f"{WITNESS_PAD_NS / 1e6:g} ms of a span the hypervisor took a CPU are the VM's"
            )
        ACCT = acct
        results["config"]["cpu_method"] = acct.method
        log(f"# CPU: the lab's own tasks ({acct.method}) plus ksoftirqd")
        kernel_path(lab, seconds, results, log, "before")
        runs = [("batched", o) for o in variants] + [("per-packet", OFFLOAD_BY_MODE["per-packet"])]
        for mode, tso in runs:
            name = mode if tso == OFFLOAD_BY_MODE[mode] else f"{mode}-{'tso' if tso else 'nooff'}"
            with tdma_pair(lab, p, mode=mode, mtu=mtu, offload=tso) as (stations, _taps):
                for st in stations:
                    st.set_probe(0)  # one RT frame per slot 0 occurrence: the slot timing measured
                log(f"{name:16s} idle {seconds} s ...")
                base = measure(idle(seconds), stations)
                results["runs"][f"{name}/idle"] = base
                per_wake = base["stack_cpu_s"] / base["timer_wakeups"] * 1e6
                log(
                    f"{name:16s} idle: {base['timer_wakeups'] / base['wall_s']:.0f} RT wake-ups/s, "
                    f"{per_wake:.1f} us of stack CPU each; RT slot lateness p99 "
                    f"{base['rt_lateness_p99_us']:.0f} us, RT slots missed {base['rt_slot_missed']}"
                )
                if "wakeup_floor" not in results:
                    floor = results["wakeup_floor"] = wakeup_floor(base, seconds, log)
                    # RTnet's slot model: an NRT slot occurrence carries one full frame, so a
                    # saturated VNIC pays at least one timer wake-up per TCP segment
                    mss = mtu - TCP_IP_HLEN
                    floor["per_segment_cpu_s_per_gb"] = floor["us_per_wakeup"] * 1e-6 / mss * 1e9
                    k = results["runs"]["kernel/tcp"]["cpu_s_per_gb"]
                    log(
                        f"floor: one wake-up per {mss}-byte segment = "
                        f"{floor['per_segment_cpu_s_per_gb']:.1f} CPU s/GB = "
                        f"{floor['per_segment_cpu_s_per_gb'] / k:.1f}x the kernel path's TCP, "
                        f"before any packet is touched"
                    )
                loaded = {}
                for proto in ("tcp", "udp"):
                    log(f"{name:16s} {proto}: iperf3 {seconds} s through vnic0 ...")
                    loaded[proto] = measure(
                        lambda: run_iperf(lab, proto, "198.19.0.2", seconds), stations
                    )
                base = idle_baseline(name, seconds, stations, log, before=base)
                results["runs"][f"{name}/idle"] = base
                for proto, r in loaded.items():
                    derive(r, base, cap)
                    results["runs"][f"{name}/{proto}"] = r
                    log(
                        f"{name:16s} {proto}: {r['goodput_mbps']:.1f} Mbit/s "
                        f"({r['goodput_pct_of_capacity']:.0f}% of NRT capacity), loss {r['loss_pct']:.2f}%, "
                        f"{r['csw_per_packet']:.3f} csw/pkt ({csw_split(r)}), pump wake-ups/pkt "
                        f"{r['pump_wakeups_per_packet']:.3f}, copies/byte tx {fmt(r['tx_copies_per_byte'])} "
                        f"rx {fmt(r['rx_copies_per_byte'])}; lab CPU {r['cpu_s_per_gb']:.2f} s/GB "
                        f"({r['marginal_cpu_s_per_gb']:.2f} above idle"
                        f"{', FLAGGED: below idle' if r['below_idle'] else ''}); "
                        f"wake-ups/s per station {' '.join(f'{w:.0f}' for w in r['wakeups_per_s'])}, "
                        f"frames per wake-up {' '.join(f'{f:.2f}' for f in r['frames_per_wakeup'] if f is not None)}; "
                        f"RT slot lateness p99 "
                        f"{r['rt_lateness_p99_us']:.0f} us (idle {base['rt_lateness_p99_us']:.0f}), "
                        f"RT slots missed {r['rt_slot_missed']} (idle {base['rt_slot_missed']}); "
                        f"all missed slots {r['missed_slots']} (idle {base['missed_slots']}): "
                        f"{r['miss_late_wake']} after a late wake-up (idle {base['miss_late_wake']}), "
                        f"{r['miss_other']} other (idle {base['miss_other']}); pump found the "
                        f"ring full {r['ring_full']} times{witnessed(r, base)}"
                    )
        kernel_path(lab, seconds, results, log, "after")
        kernel_mtu_path(lab, seconds, results, log)
        ACCT = None
    results["cost_per_kb"] = pump_cost_per_kb(log)
    results["table"] = table(results)
    log(results["table"])
    os.makedirs(os.path.dirname(out_json) or ".", exist_ok=True)
    with open(out_json, "w") as f:
        json.dump(results, f, indent=1, default=float)
    chart(results, out_png)
    log(f"saved {out_json} and {out_png}")
    return results


def witnessed(r: dict, base: dict) -> str:
    """The RT slot misses outside the VM's stalls, when the witness ran."""
    if "rt_slot_missed_outside" not in r:
        return ""
    return (
        f"; outside VM stalls: RT slots missed {r['rt_slot_missed_outside']} (idle "
        f"{base['rt_slot_missed_outside']}), all {r['missed_outside']} (idle "
        f"{base['missed_outside']}), RT slot lateness p99 "
        f"{fmt(r['rt_lateness_p99_outside_us'], '.0f')} us (idle "
        f"{fmt(base['rt_lateness_p99_outside_us'], '.0f')}; {r['rt_lateness_in_stalls']} of "
        f"{r['rt_lateness_in_stalls'] + r['rt_lateness_outside_n']} occurrences in stalls; "
        f"{r['witness_spans']} records of a CPU taken, idle {base['witness_spans']}"
        f"{', FLAGGED: the load may be holding timers off' if r['witness_suspect'] else ''})"
    )


def fmt(v, spec=".2f") -> str:
    return "-" if v is None else format(v, spec)


def csw_split(r: dict) -> str:
    """Context switches per packet by thread, voluntary/involuntary (over idle)."""
    split = r.get("csw_per_packet_by_thread") or {}
    return ", ".join(
        f"{name} {fmt(k['vol'], '.3f')}/{fmt(k['invol'], '.3f')}" for name, k in split.items()
    )


def pump_cost_per_kb(log) -> dict | None:
    """The pump's segmentation and merging in instructions per KB, from the cost benchmark's
    last committed results (tools/bench_cost.py measures them under callgrind)."""
    try:
        with open(COST_JSON) as f:
            cost = json.load(f)
        out = {
            name: cost["stages"][name]["ir_per_unit"]
            for name in ("vnic_gso", "vnic_gro")
            if cost["stages"][name]["unit"] == "KB"
        }
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log(f"pump cost: {COST_JSON} unreadable ({exc}); run tools.bench_cost for it")
        return None
    log(
        f"pump cost ({COST_JSON}, commit {cost.get('commit', '?')}): segmentation "
        f"{out.get('vnic_gso', 0):,.0f} and merging {out.get('vnic_gro', 0):,.0f} instructions per KB"
    )
    return out


def kernel_ratio(r: dict, runs: dict, key: str, baseline: str) -> float | None:
    """``r[key]`` (CPU s per GB) over the ``baseline`` kernel run's CPU s per GB."""
    k = runs.get(baseline) or {}
    if r.get(key) is None or not k.get("cpu_s_per_gb"):
        return None
    return r[key] / k["cpu_s_per_gb"]


def table(results: dict) -> str:
    """One row per run.  TCP's primary baseline is the kernel path with MTU-sized frames on
    the wire (kernel-mtu/tcp), as a TDMA segment carries them; the kernel path with TSO
    beside it.  UDP is compared with kernel UDP."""
    rows = [
        "path/proto            goodput  %cap  loss%   labCPU  CPUs/GB  xMTU  xTSO  "
        "marg/GB  marg-xMTU  csw/pkt (rt vol/invol, pump vol/invol)  pump-wake/pkt  "
        "seg/rd  seg/wr  copies tx/rx  RTlate-p99(idle) us  RTmissed(idle)  "
        "missed:late-wake/other  frames/wake  flags"
    ]
    runs = results["runs"]
    for key, r in runs.items():
        if key.endswith("/idle"):
            continue
        proto = key.split("/")[1]
        mtu_base, tso_base = (
            ("kernel-mtu/tcp", "kernel/tcp") if proto == "tcp" else ("kernel/udp", None)
        )
        split = r.get("csw_per_packet_by_thread") or {}
        csw = " ".join(
            f"{fmt(split[n]['vol'], '.3f')}/{fmt(split[n]['invol'], '.3f')}"
            for n in STACK_THREADS
            if n in split
        )
        per_wake = "/".join(fmt(x) for x in r.get("frames_per_wakeup") or [] if x is not None)
        flags = (
            " ".join(
                name
                for name, on in (
                    ("below-idle", r.get("below_idle")),
                    ("idle-disagree", r.get("idle_disagree")),
                    ("witness-suspect", r.get("witness_suspect")),
                )
                if on
            )
            or "-"
        )
        rows.append(
            f"{key:20s} {r['goodput_mbps']:7.1f} {fmt(r.get('goodput_pct_of_capacity'), '5.0f')} "
            f"{r['loss_pct']:6.2f} {r['lab_total_cpu_s']:8.2f} {fmt(r['cpu_s_per_gb'], '8.2f')} "
            f"{fmt(kernel_ratio(r, runs, 'cpu_s_per_gb', mtu_base), '5.2f')} "
            f"{fmt(kernel_ratio(r, runs, 'cpu_s_per_gb', tso_base) if tso_base else None, '5.2f')} "
            f"{fmt(r.get('marginal_cpu_s_per_gb'), '8.2f')} "
            f"{fmt(kernel_ratio(r, runs, 'marginal_cpu_s_per_gb', mtu_base), '9.2f')} "
            f"{fmt(r.get('csw_per_packet'), '7.3f')} ({csw or '-'}) "
            f"{fmt(r.get('pump_wakeups_per_packet'), '.3f')} "
            f"{fmt(r.get('segs_per_read'), '6.2f')} {fmt(r.get('segs_per_write'), '6.2f')} "
            f"{fmt(r.get('tx_copies_per_byte'))}/{fmt(r.get('rx_copies_per_byte'))} "
            f"{fmt(r.get('rt_lateness_p99_us'), '8.0f')}({fmt(r.get('idle_rt_lateness_p99_us'), '.0f')}) "
            f"{fmt(r.get('rt_slot_missed'), '10d')}({fmt(r.get('idle_rt_slot_missed'), '.0f')}) "
            f"{fmt(r.get('miss_late_wake'), '12d')}/{fmt(r.get('miss_other'), 'd')} "
            f"{per_wake or '-'}  {flags}"
        )
    return "\n".join(rows)


def chart(results: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = {k: v for k, v in results["runs"].items() if not k.endswith("/idle")}
    keys = list(runs)
    x = np.arange(len(keys))
    fig, ax = plt.subplots(1, 4, figsize=(18, 4.5))
    ax[0].bar(x, [runs[k]["goodput_mbps"] for k in keys])
    ax[0].set_title("goodput (Mbit/s)")
    ax[1].bar(x - 0.2, [runs[k]["cpu_s_per_gb"] or 0 for k in keys], 0.4, label="total")
    ax[1].bar(
        x + 0.2,
        [runs[k].get("marginal_cpu_s_per_gb") or 0 for k in keys],
        0.4,
        label="above idle TDMA",
    )
    ax[1].set_title("lab CPU s per GB")
    ax[1].legend(fontsize=8)
    ax[2].bar(x, [runs[k].get("csw_per_packet") or 0 for k in keys])
    ax[2].set_title("context switches per packet (over idle)")
    rt = [k for k in keys if "rt_lateness_p99_us" in runs[k]]
    xr = np.arange(len(rt))
    ax[3].bar(xr - 0.2, [runs[k]["idle_rt_lateness_p99_us"] for k in rt], 0.4, label="idle")
    ax[3].bar(xr + 0.2, [runs[k]["rt_lateness_p99_us"] for k in rt], 0.4, label="VNIC load")
    ax[3].set_title("RT slot 0 lateness p99 (us)")
    ax[3].legend(fontsize=8)
    for a, names in zip(ax, (keys, keys, keys, rt)):
        a.set_xticks(np.arange(len(names)), names)
    for a in ax:
        a.tick_params(axis="x", rotation=45, labelsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
