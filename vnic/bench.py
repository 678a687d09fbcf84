"""VNIC benchmark: iperf3 through vnic0 (batched, per-packet) against the plain kernel path.

iperf3 runs in separate processes in the station namespaces; what each window
cost, and what the RT side saw in it, is vnic.bench_accounting's.  Each
mode's idle TDMA run is measured before and after its loaded runs; when the
two differ by more than 20% the after run is repeated, and a run whose idle
baselines still disagree is flagged.  The cost above idle is never printed
negative: a loaded run cheaper than its idle baseline is flagged instead.
The table and the chart are vnic.bench_report's.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import threading

from rtmac.tdma_config import MAX_LINK_RATE_MBPS
from rtnet import netns
from rtnet.argtypes import integer
from rtnet.benchkit import cpu_isolation, on_cpus, start_iperf_server, why_unwritable
from rtnet.config import XDP_MODES
from rtnet.cpuacct import LabCpu
from rtnet.errors import ConfigError, LabError
from rtnet.lab import Lab
from rtnet.stall import STALL_PAD_NS, StallDetector
from rtnet.station import RtSettings

from . import bench_accounting as accounting
from .bench_accounting import STACK_THREADS, idle, measure
from .bench_report import (
    SAME_RATE_KEY,
    chart,
    csw_split,
    fmt,
    pump_cost_per_kb,
    table,
    witnessed,
)
from .pair import NRT_SLOT_SIZE, SlotPlan, plan, tdma_pair
from .tap import OFFLOAD_BY_MODE, RTMAC_HLEN

IDLE_AGREE = 0.20  # idle baselines before and after may differ by this much
# a loaded run with this many times its idle run's records of a CPU taken (+ this many): flagged
WITNESS_SUSPECT_X, WITNESS_SUSPECT_MIN = 3, 20
TCP_IP_HLEN = 52  # IPv4 + TCP with the timestamp option Linux sends
MAX_SECONDS = 600
# the modelled link rate a command line may ask for (check_args holds calls to the same)
LINK_RATE_ARG = integer("link rate", 1, MAX_LINK_RATE_MBPS)
MIN_MTU = 68  # the smallest IPv4 link MTU (RFC 791)
MAX_MTU = NRT_SLOT_SIZE - RTMAC_HLEN  # the largest the NRT slot carries
OFFLOAD = ("on", "off", "both")


OFFERED_MBPS = 100  # what iperf3 offers; run() sets it to the modelled link rate
APP_CPUS: tuple[int, ...] | None = None  # where iperf3 runs; run() sets it (cpu_isolation)
PROBE_SLOT = 0  # the RT probe: one frame per occurrence of this slot, the slot timing measured
SAME_RATE_TOLERANCE = 0.03  # the same-rate kernel path carries the VNIC's goodput within this
SAME_RATE_AGREE = 0.20  # ... and its two runs' CPU per byte differ by at most this much


def run_iperf(
    lab, proto: str, dst_ip: str, seconds: int, mbps: float | None = None, cpus=None
) -> dict:
    """iperf3 from station 1 to ``dst_ip`` on station 2, offering ``mbps`` (OFFERED_MBPS if
    None), both ends on ``cpus`` (APP_CPUS if None)."""
    cpus = APP_CPUS if cpus is None else cpus
    srv = start_iperf_server(lab, lab.station(2), dst_ip, one_off=True, cpus=cpus)
    try:
        rate = f"{mbps if mbps is not None else OFFERED_MBPS:g}M"
        cmd = on_cpus(
            netns.command(
                lab.station(1).netns,
                ["iperf3", "-c", dst_ip, "-t", str(seconds), "-b", rate, "-J"],
            ),
            cpus,
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


def iperf_in_background(lab, dst_ip: str, seconds: int, warmup: float, mbps=None):
    """A TCP run_iperf() of ``seconds`` in a thread, returned once ``warmup`` has passed
    (past slow start: the flow at its rate), for a tool that watches the flow meanwhile.
    Returns (thread, result): ``result`` holds run_iperf()'s dict once the thread ends
    (empty if it failed)."""
    result: dict = {}
    t = threading.Thread(target=lambda: result.update(run_iperf(lab, "tcp", dst_ip, seconds, mbps)))
    t.start()
    threading.Event().wait(warmup)
    return t, result


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


def idle_without_probe(seconds: float, stations) -> dict:
    """An idle TDMA run with the stations' RT probe off: what the fixed cost is without
    the benchmark's own real-time frames (one per slot 0 occurrence and station, which
    the idle and the loaded runs carry alike and the kernel path has not)."""
    for st in stations:
        st.set_probe(None)
    try:
        return measure(idle(seconds), stations)
    finally:
        for st in stations:
            st.set_probe(PROBE_SLOT)


def derive(r: dict, base: dict, cap: float) -> None:
    """A loaded run's figures relative to its mode's idle TDMA baseline (and to the same
    idle without the RT probe, base["without_probe"], when the mode measured one)."""
    scale = r["wall_s"] / base["wall_s"]
    extra = accounting.csw_above_idle(r, base)
    pkts = r["vnic_packets"]
    r["fixed_csw_per_s"] = base["stack_csw"] / base["wall_s"]
    r["csw_per_packet"] = extra.pop("all") / pkts if pkts else None
    # the same split by thread, voluntary (it slept) and involuntary (it was preempted)
    r["csw_per_packet_by_thread"] = (
        {name: {kind: n / pkts for kind, n in kinds.items()} for name, kinds in extra.items()}
        if pkts
        else None
    )
    r["pump_wakeups_per_packet"] = r["pump_wakeups"] / pkts if pkts else None
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
    quiet = base.get("without_probe")
    if quiet and gb:
        # of the idle cost, the RT probe's frames: the benchmark's instrument, not the VNIC's
        # or TDMA's cost (context for the total; the targets are judged as before)
        probe = idle_cpu / r["wall_s"] - quiet["lab_total_cpu_s"] / quiet["wall_s"]
        r["rt_probe_cpu_s_per_gb"] = max(probe, 0.0) * r["wall_s"] / gb
    # where that goes: the RT threads and the pumps above their own idle CPU (schedstat),
    # and the rest, the applications and Linux's work in their name (TCP, softirqs)
    if gb and "cpu_by_thread" in base:
        part = {
            name: (r["cpu_by_thread"][name] - base["cpu_by_thread"][name] * scale) / gb
            for name in STACK_THREADS
        }
        part["rest"] = above / gb - sum(part.values())
        r["above_idle_s_per_gb_by_part"] = part


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
        results["runs"][f"kernel/{proto}"] = pooled_kernel_runs(results, proto + "/")


def pooled_kernel_runs(results: dict, prefix: str) -> dict:
    """The kernel runs kept under ``prefix`` in results["kernel_runs"] as one: CPU and
    bytes summed, so slow drift of the machine between them does not decide the ratios;
    each run's CPU per byte kept beside it, flagged if any was.  The latest run's other
    fields are kept."""
    both = [v for k, v in results["kernel_runs"].items() if k.startswith(prefix)]
    cpu, nbytes = sum(v["lab_total_cpu_s"] for v in both), sum(v["bytes"] for v in both)
    return {
        **both[-1],
        "lab_total_cpu_s": cpu / len(both),
        "bytes": nbytes / len(both),
        "machine_cpu_s": sum(v["machine_cpu_s"] for v in both) / len(both),
        "goodput_mbps": sum(v["goodput_mbps"] for v in both) / len(both),
        "loss_pct": sum(v["loss_pct"] for v in both) / len(both),
        "cpu_s_per_gb": cpu / (nbytes / 1e9),
        "runs": len(both),
        "cpu_s_per_gb_each": [v["cpu_s_per_gb"] for v in both],
        "rate_mismatch": any(v.get("rate_mismatch") for v in both),
    }


def kernel_offloads(lab, state: str) -> None:
    """TSO, GSO and GRO ``state`` ("on", "off") on both stations' rteth0: "off" makes the
    kernel path put MTU-sized frames on the wire, as a TDMA segment does."""
    for idx in (1, 2):
        subprocess.run(
            netns.command(
                lab.station(idx).netns,
                ["ethtool", "-K", "rteth0", "tso", state, "gso", state, "gro", state],
            ),
            capture_output=True,
            check=False,
        )


def kernel_mtu_path(
    lab, seconds: int, results: dict, log, mbps: float | None = None, when: str = ""
) -> None:
    """A second baseline: the same veth + bridge path with TSO, GSO and GRO off on
    rteth0, so that the wire carries MTU-sized frames as a TDMA segment does.

    The plain kernel path moves 64 KB super-packets through veth and bridge as one
    skb; the VNIC (like any real segment) puts every 1500-byte frame on the wire
    on its own.  This run shows how much of the VNIC's cost is that alone.

    With ``mbps`` (the batched VNIC's TCP goodput) iperf3 offers that rate instead of
    the whole link's, and the run is kept as SAME_RATE_KEY: the primary baseline of
    CPU per byte, since part of a flow's CPU does not grow with its rate (iperf3's
    pacing timer, TCP's timers), so a slower flow costs more per byte on any path.
    It runs twice, ``when`` right after the batched runs and at the end, and the two
    are kept together (CPU and bytes summed) as the kernel path's before and after
    are; a pair more than SAME_RATE_AGREE apart is flagged (baseline-disagree).
    """

    rate = "" if mbps is None else f" at {mbps:g} Mbit/s offered (the VNIC's goodput, {when})"
    log(f"kernel   tcp (MTU frames){rate}: iperf3 {seconds} s over veth+bridge, offloads off ...")
    kernel_offloads(lab, "off")
    try:
        r = measure(lambda: run_iperf(lab, "tcp", "198.18.0.2", seconds, mbps))
    finally:
        kernel_offloads(lab, "on")
    log(
        f"kernel   tcp (MTU frames){rate}: {r['goodput_mbps']:.1f} Mbit/s, "
        f"{r['cpu_s_per_gb']:.2f} CPU s/GB"
    )
    if mbps is None:
        results["runs"]["kernel-mtu/tcp"] = r
        return
    r["offered_mbps"] = mbps
    # a kernel path that could not carry the rate asked of it is no same-rate baseline
    r["rate_mismatch"] = abs(r["goodput_mbps"] - mbps) > SAME_RATE_TOLERANCE * mbps
    if r["rate_mismatch"]:
        log(
            f"FLAG {SAME_RATE_KEY} ({when}): {r['goodput_mbps']:.1f} Mbit/s carried of "
            f"{mbps:g} offered: not the VNIC's rate"
        )
    results.setdefault("kernel_runs", {})[f"mtu-same-rate/{when}"] = r
    same = pooled_kernel_runs(results, "mtu-same-rate/")
    each = same["cpu_s_per_gb_each"]
    same["baseline_disagree"] = max(each) - min(each) > SAME_RATE_AGREE * max(each)
    if same["baseline_disagree"]:
        log(
            f"FLAG {SAME_RATE_KEY}: its two runs differ by more than {SAME_RATE_AGREE:.0%} "
            f"({' vs '.join(f'{c:.2f}' for c in each)} CPU s/GB): the ratios against it are "
            "not trustworthy"
        )
    results["runs"][SAME_RATE_KEY] = same


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
    xdp_mode: str = "auto",
    rt_cpu="auto",
) -> SlotPlan:
    """The slot plan for these arguments, or ConfigError (one line) before anything is built.
    ``windows`` False: RTnet's NRT slots (one frame per occurrence) instead of NRT windows;
    ``rt_cpu``: cpu_isolation's."""

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
    if xdp_mode not in XDP_MODES:
        bad("--xdp-mode", f"{xdp_mode!r} is not one of {', '.join(XDP_MODES)}")
    cpu_isolation(rt_cpu)
    try:
        Lab(lab_name, 2)  # checks the name, builds nothing
    except LabError as exc:
        bad("--lab", exc.strerror)
    for opt, path in (("--json", out_json), ("--png", out_png)):
        why = why_unwritable(path)
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


def tcp_congestion_control(ns: str) -> str:
    """The congestion control a new TCP socket in ``ns`` gets (the machine's default unless
    the namespace set its own).  It is part of a result: a sender that sizes its window
    from the lowest round trip it saw (BBR) and one that fills the queues (CUBIC) meet the
    pump's batching differently."""
    try:
        with netns.entered(ns), open("/proc/sys/net/ipv4/tcp_congestion_control") as f:
            return f.read(64).strip() or "?"
    except OSError:
        return "?"


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
    xdp_mode: str = "auto",
    rt_cpu="auto",
    wake_early: bool = False,
) -> dict:
    """``offload``: the batched mode's TAP with TSO ("on"), without ("off", one frame per
    TAP read/write), or "both" (the run without is named ``batched-nooff``); the
    per-packet mode, the seed's baseline, always opens its TAP without (one read, one
    frame, one RT wake-up: vnic.tap.OFFLOAD_BY_MODE).  ``witness``: the stall detector
    runs on every CPU throughout, and each run's RT slot misses are split into those a
    span the hypervisor took a CPU explains and the rest, the lab's ("outside"); its
    threads' CPU is taken off the lab's, but its wake-ups (2,000 a second per CPU) still
    preempt the pump now and then, so the switches per packet are a witness run's.
    ``xdp_mode``: the stations' XDP attach mode (auto: SKB mode on a one-queue veth, else
    native where the driver has it).  ``rt_cpu``: the CPU kept for both stations' RT
    threads, iperf3 started on the others (cpu_isolation).  ``wake_early``: the stations'
    RT threads wake before their slots and spin to them (``[rt] wake_early``), in every
    mode and its idle run alike.
    Every argument is checked (check_args) before the lab is built."""
    p = check_args(
        seconds,
        cycle_us,
        link_rate_mbps,
        mtu,
        lab_name,
        out_json,
        out_png,
        offload,
        windows,
        xdp_mode,
        rt_cpu,
    )
    rt_cpu, app_cpus = cpu_isolation(rt_cpu)
    mtu = mtu or MAX_MTU
    variants = {"on": (True,), "off": (False,), "both": (True, False)}[offload]
    cap = p.master_capacity_mbps
    log(
        f"# TDMA cycle {cycle_us} us, link model {link_rate_mbps} Mbit/s, master {p.describe()} "
        f"-> NRT capacity {cap:.1f} Mbit/s, TCP {p.master_tcp_capacity_mbps:.1f} Mbit/s (slave "
        f"{p.slave_capacity_mbps:.1f} Mbit/s); VNIC MTU {mtu}; PM QoS held by the RT threads, "
        f"no busy polling"
    )
    global OFFERED_MBPS, APP_CPUS
    OFFERED_MBPS = link_rate_mbps  # the whole modelled link: the VNIC's share is the limit
    APP_CPUS = app_cpus
    if rt_cpu is None:
        log("# CPUs: nothing pinned (the RT threads, pumps and iperf3 go where Linux puts them)")
    else:
        log(
            f"# CPUs: both stations' RT threads on CPU {rt_cpu}, the pumps and iperf3 on "
            f"{','.join(map(str, app_cpus))}"
        )
    if wake_early:
        log("# the RT threads wake before their slots and spin to them ([rt] wake_early)")
    results = {
        "config": {
            **p.to_dict(),
            "seconds": seconds,
            "mtu": mtu,
            "offered_mbps": OFFERED_MBPS,
            "offload": offload,
            "witness": witness,
            "xdp_mode": xdp_mode,
            "rt_cpu": rt_cpu,
            "app_cpus": list(app_cpus) if app_cpus else None,
            "wake_early": wake_early,
        },
        "runs": {},
    }
    with contextlib.ExitStack() as stack:
        acct = stack.enter_context(LabCpu("rtn-vnic-bench"))
        lab = stack.enter_context(Lab(lab_name, 2))
        if witness:
            accounting.WITNESS = stack.enter_context(StallDetector(range(os.cpu_count() or 1)))
            stack.callback(setattr, accounting, "WITNESS", None)
            log(
                "# witness: the stall detector on every CPU; RT slot misses within "
                f"{STALL_PAD_NS / 1e6:g} ms of a span the hypervisor took a CPU "
                "are the VM's"
            )
        accounting.ACCT = acct
        stack.callback(setattr, accounting, "ACCT", None)
        results["config"]["cpu_method"] = acct.method
        log(f"# CPU: the lab's own tasks ({acct.method}) plus ksoftirqd")
        results["config"]["tcp_cc"] = tcp_congestion_control(lab.station(1).netns)
        log(f"# TCP congestion control of the stations: {results['config']['tcp_cc']}")
        kernel_path(lab, seconds, results, log, "before")
        runs = [("batched", o) for o in variants] + [("per-packet", OFFLOAD_BY_MODE["per-packet"])]
        vnic_tcp = None  # the batched VNIC's TCP goodput, the same-rate baseline's offer
        for mode, tso in runs:
            name = mode if tso == OFFLOAD_BY_MODE[mode] else f"{mode}-{'tso' if tso else 'nooff'}"
            with tdma_pair(
                lab,
                p,
                mode=mode,
                mtu=mtu,
                offload=tso,
                xdp_mode=xdp_mode,
                rt=RtSettings(priority=80, cpu=rt_cpu, wake_early=wake_early),
            ) as (stations, _taps):
                # the mode the stations' sockets ended up in (auto: the driver's best)
                results["config"]["xdp_mode_used"] = stations[0].xdp_mode
                for st in stations:
                    st.set_probe(PROBE_SLOT)
                log(f"{name:16s} idle {seconds} s ...")
                base = measure(idle(seconds), stations)
                results["runs"][f"{name}/idle"] = base
                per_wake = base["stack_cpu_s"] / base["timer_wakeups"] * 1e6
                log(
                    f"{name:16s} idle: {base['timer_wakeups'] / base['wall_s']:.0f} RT wake-ups/s, "
                    f"{per_wake:.1f} us of stack CPU each; RT slot lateness p99 "
                    f"{base['rt_lateness_p99_us']:.0f} us, RT slots missed {base['rt_slot_missed']}"
                )
                if mode == "batched":
                    quiet = base["without_probe"] = idle_without_probe(seconds, stations)
                    log(
                        f"{name:16s} idle without the RT probe: "
                        f"{quiet['lab_total_cpu_s'] / quiet['wall_s']:.3f} CPU s/s against "
                        f"{base['lab_total_cpu_s'] / base['wall_s']:.3f} with it"
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
                        f"ring full {r['ring_full']} times and held {r['pump_yields']} TAP "
                        f"writes for an RT wake-up{witnessed(r, base)}"
                    )
            if name == "batched" and results["runs"]["batched/tcp"].get("goodput_mbps"):
                # the same-rate baseline, now that the pair is down, and again at the end
                vnic_tcp = round(results["runs"]["batched/tcp"]["goodput_mbps"], 1)
                kernel_mtu_path(lab, seconds, results, log, vnic_tcp, "after the batched runs")
        kernel_path(lab, seconds, results, log, "after")
        kernel_mtu_path(lab, seconds, results, log)
        if vnic_tcp:
            kernel_mtu_path(lab, seconds, results, log, vnic_tcp, "at the end")
    results["cost_per_kb"] = pump_cost_per_kb(log)
    results["table"] = table(results)
    log(results["table"])
    os.makedirs(os.path.dirname(out_json) or ".", exist_ok=True)
    with open(out_json, "w") as f:
        json.dump(results, f, indent=1, default=float)
    chart(results, out_png)
    log(f"saved {out_json} and {out_png}")
    return results
