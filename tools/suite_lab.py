"""What the parts of tools/bench_suite.py share on the lab: the console log, the loads, a
station's counters, what the stall detector saw in a span, and the machine's record."""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import time

from rtnet.benchkit import iperf_udp_flood, start_iperf_server, start_stress, stop_stress
from tools.suite_config import FLOOD_LEN, FLOOD_MBPS, LOAD_CPUS
from vnic.pair import vnic_address


def log(msg: str) -> None:
    print(msg, flush=True)


# ---- loads ------------------------------------------------------------------------------


class Load:
    """stress-ng on the non-reserved CPU and/or an iperf3 UDP flood through station 1's vnic0."""

    def __init__(self, lab, name: str, seconds: float):
        self.lab, self.name, self.procs, self.stress = lab, name, [], None
        self.cmds = []
        try:
            if name in ("cpu", "both"):
                self.stress, cmd = start_stress(
                    shutil.which("stress-ng"), seconds, ncpus=1, taskset=LOAD_CPUS
                )
                self.cmds.append(" ".join(cmd))
            if name in ("net", "both"):
                dst = vnic_address(2).split("/")[0]
                self.procs.append(start_iperf_server(lab, lab.station(2), dst))
                cmd = iperf_udp_flood(dst, FLOOD_MBPS, FLOOD_LEN, int(seconds) + 5)
                self.procs.append(
                    lab.spawn(
                        lab.station(1), cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                    )
                )
                self.cmds.append(" ".join(cmd) + " (through vnic0 of the sender)")
                time.sleep(1.0)  # let the flood fill the queues before measuring
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        if self.stress is not None:
            stop_stress(self.stress)
            self.stress = None
        for p in reversed(self.procs):
            self.lab.stop(p)
        self.procs = []


COUNTERS = ("nomac_tx", "nomac_drops", "timer_wakeups", "loops")
VNIC_COUNTERS = ("tap_rx", "tx_dropped")


def station_snapshot(st, cid=None) -> dict:
    s = st.stats()
    out = {
        "wakeup": s["wakeup"],
        "t": time.monotonic(),
        "counters": {
            **{k: s[k] for k in COUNTERS},
            **{f"vnic_{k}": s["vnic"][k] for k in VNIC_COUNTERS},
        },
    }
    if cid is not None:
        c = st.channel_stats(cid)
        out["counters"].update(chan_tx_msgs=c["tx_msgs"], chan_tx_drops=c["tx_drops"])
    if s.get("tdma"):
        out.update(slot_lateness=s["tdma"]["slot_lateness"], missed_slots=s["tdma"]["missed_slots"])
    return out


def stalls_between(det, t0: int, t1: int) -> dict:
    """Milliseconds of slow spells and of gaps the detector saw in [t0, t1)."""
    out = {"slow": 0, "gap": 0}
    for g in det.gaps() if det is not None else ():
        if g.overlaps(t0, t1):
            out[g.kind] += min(g.woke_ns, t1) - max(g.due_ns, t0)
    return {"witness_slow_ms": out["slow"] / 1e6, "witness_gap_ms": out["gap"] / 1e6}


# kernel parameters that bear on latency (the rest of the command line is not reported)
RT_CMDLINE = {
    "isolcpus",
    "nohz_full",
    "rcu_nocbs",
    "idle",
    "processor",
    "intel_idle",
    "cpuidle_haltpoll",
    "haltpoll",
    "threadirqs",
    "preempt",
    "nosmt",
    "mitigations",
    "irqaffinity",
    "skew_tick",
    "tsc",
    "clocksource",
    "nohz",
}


def machine() -> dict:
    def read(path):
        try:
            with open(path) as f:
                return f.read().strip()
        except OSError:
            return None

    cpuinfo = read("/proc/cpuinfo") or ""
    m = re.search(r"model name\s*:\s*(.+)", cpuinfo)
    mem = re.search(r"MemTotal:\s+(\d+)", read("/proc/meminfo") or "")
    os_rel = re.search(r'PRETTY_NAME="([^"]+)"', read("/etc/os-release") or "")
    return {
        "cpu": m.group(1) if m else platform.processor(),
        "ncpus": os.cpu_count(),
        "mem_gib": round(int(mem.group(1)) / 2**20, 1) if mem else None,
        "os": os_rel.group(1) if os_rel else None,
        "kernel": platform.release(),
        "kernel_version": platform.version(),
        "cmdline_rt": " ".join(
            t
            for t in (read("/proc/cmdline") or "").split()
            if t.split("=")[0].split(".")[0] in RT_CMDLINE
        )
        or "none",
        "preempt": read("/sys/kernel/realtime")
        and "PREEMPT_RT"
        or (
            "PREEMPT_DYNAMIC"
            if "PREEMPT_DYNAMIC" in platform.version()
            else "PREEMPT"
            if "PREEMPT" in platform.version()
            else "none"
        ),
        "governor": read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        "python": platform.python_version(),
    }
