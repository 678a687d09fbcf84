"""BENCHMARKS.md for tools/bench_suite.py (from its results dict): the page, its settings
and method in words, and the tables, figures, headlines and discussion of the modules
it puts together."""

from __future__ import annotations

import os

from tools import bench_frer, bench_section, bench_vnic, cost_report, sockperf_report
from tools.bench_aggregate import headline_table
from tools.suite_discussion import discussion
from tools.suite_figures import figures
from tools.suite_headlines import headline_rows
from tools.suite_tables import (
    COL_NAMES,
    COLUMNS,
    METRICS,
    fmt,
    matrix_table,
    misses_table,
    rfc_table,
    stage_table,
    tables,
    udp_table,
    vnic_table,
    wakeup_table,
)
from tools.suite_targets import T_UDP_P99_US, T_VNIC_CPU_RATIO
from vnic.bench_report import tcp_baseline

# Figures the page's method quotes: the stack's, and seed 003's
DEFAULT_GUARD_US = 50  # rtmac.tdma_config.DEFAULT_GUARD_NS, in us
UDP_HEADERS_BYTES = 86  # Ethernet, IPv4, UDP and RTNX headers (rtnet.app.UdpSocket)
HIST_RANGE_MS = 4  # the stations' wake-up histograms' range
VNIC_DATAGRAM_OVERHEAD = 46  # frame size minus the iperf3 datagram through the VNIC
VNIC_OFFERED_MBPS = 100  # what vnic/bench.py's iperf3 offers
SEED_003_KERNEL_CPU_PCT = 80  # seed 003: a vanilla kernel's CPU to NAT ...
SEED_003_KERNEL_MBPS = 100  # ... this many Mbit/s on an IXP465,
SEED_003_VNIC_CPU_PCT = 100  # RTnet's VNIC's CPU ...
SEED_003_VNIC_MBPS = 95  # ... at this rate,
SEED_003_RATIO = 1.25  # about this many times the kernel's

# what tools/bench_suite.py takes from the report
__all__ = ["figures", "headline_rows", "markdown", "tables"]


def _verify_text(st: dict) -> str:
    """The RFC 2544 search's rules, the confirmation and the latency sampling in words
    (rfc2544_search, docs/benchmark-protocol.md)."""
    out = ""
    repeats = st.get("loss_verify", 0)
    if repeats:
        out += (
            f"; a trial with loss is repeated at the same rate up to {repeats} time"
            f"{'s' if repeats > 1 else ''} and the rate fails only if every repeat loses "
            "frames too (ETSI GS NFV-TST 009's binary search with loss verification)"
        )
    if st.get("disturbed_ms"):
        out += (
            f"; a trial during which the stall detector saw at least "
            f"{st['disturbed_ms']:g} ms of the VM's slow spells and gaps is marked "
            "disturbed, passing or not. The headline zero-loss rate is the search without "
            "disturbed-trial retries (RFC 2544 with TST 009's verification, nothing else)"
            + (
                f"; the column labelled 'with disturbed retries' is the search that repeats "
                f"a disturbed lossy trial up to {st['retry_disturbed']} times per rate, run "
                "from the same trials while the two ask for the same rate"
                if st.get("retry_disturbed")
                else ""
            )
        )
    if "confirm_s" in st:
        out += (
            f". The headline rate is confirmed by one trial of {st['confirm_s']:g} s, and "
            f"latency comes from {st['latency_trials']} dedicated trials of "
            f"{st['latency_trial_s']:g} s at that rate, every one pooled (the same rule "
            "for every table)"
        )
    return out


def ceiling_text(st: dict, floods: dict) -> str:
    """How the raw AF_XDP ceiling was taken, and the sizes whose floods disagreed."""
    n = st.get("flood_repeats", 1)
    out = (
        "The raw AF_XDP ceiling is one flood per size"
        if n == 1
        else f"The raw AF_XDP ceiling is the best of {n} floods per size"
    )
    flagged = [f"{k} B" for k, v in floods.items() if v.get("repeats_disagree")]
    if flagged:
        out += (
            f" ({', '.join(flagged)}: FLAGGED, the floods disagree by more than "
            f"{st.get('ceiling_spread_flag', 0.25):.0%})"
        )
    return out


def floor_sentence(results: dict) -> str:
    """What RTnet's slot model would cost, from vnic/bench.py's cyclictest run, next to
    what the benchmark's plan does (vnic/pair.py: the master's NRT window)."""
    vc = results.get("vnic_cost", {})
    floor = vc.get("wakeup_floor", {})
    cfg = vc.get("config", {})
    k = vc.get("runs", {}).get("kernel/tcp", {}).get("cpu_s_per_gb")
    if not floor.get("per_segment_cpu_s_per_gb") or not k:
        return ""
    plan = (
        f"This run's plan gives the sending master an NRT transmit window of "
        f"{fmt(cfg.get('master_nrt_us'), 0)} us per cycle, which carries every queued "
        "frame that fits from one wake-up, so the VNIC does not pay a wake-up per segment. "
        if cfg.get("windows")
        else "This run's plan uses RTnet's NRT slots, one frame per occurrence. "
    )
    return (
        f"{plan}Under RTnet's slot model (one frame per NRT slot occurrence, "
        f"`vnic.pair.plan(windows=False)`) a saturated VNIC would pay at least one RT "
        f"wake-up per TCP segment: cyclictest at the stations' wake-up rate used "
        f"{fmt(floor['us_per_wakeup'], 1)} us of CPU per wake-up here, which alone would be "
        f"{fmt(floor['per_segment_cpu_s_per_gb'], 1)} CPU s/GB = "
        f"{fmt(floor['per_segment_cpu_s_per_gb'] / k, 1)}x the kernel path. "
    )


def cut_frames_text(sizes: dict) -> str:
    """The frame sizes the VNIC's MTU cut, as measured (bench_suite: the frame sent)."""
    cut = [(k, v["frame"]) for k, v in sizes.items() if v.get("frame") not in (None, int(k))]
    return "".join(
        f" * the {k}-byte frame does not fit the VNIC's MTU and is sent as {fmt(f, 0)} bytes."
        for k, f in cut
    )


def protocol_lines(env: dict, results: dict) -> list[str]:
    """The protocol the run followed, its overrides, and the runs behind the figures."""
    pr = env.get("protocol")
    out = []
    if pr:
        ov = pr.get("overrides") or {}
        out.append(
            f"- Protocol: `{pr['path']}` (sha256 {pr['sha256'][:12]}; "
            "docs/benchmark-protocol.md explains each rule)"
            + (
                ", its [quick] values: a smoke test, not a measurement under the protocol"
                if pr.get("quick")
                else ""
            )
            + (
                "; overridden on the command line: "
                + ", ".join(f"{k} {v['used']} (protocol: {v['protocol']})" for k, v in ov.items())
                if ov
                else "; no value overridden"
            )
            + "."
        )
    runs = results.get("runs")
    if runs:
        failed = runs.get("failed") or []
        out.append(
            f"- Runs: {runs['ok']} ok of {runs['made']} made"
            + (
                "; failed: " + "; ".join(f"run {f['run']} ({f['reason']})" for f in failed)
                if failed
                else ""
            )
            + f". Every run of this code is listed in `{runs['manifest']}`; the raw "
            "results: " + ", ".join(f"`{p}`" for p in runs["files"]) + "."
        )
    return out


def header_lines(results: dict) -> list[str]:
    """The page's title and the run's machine, settings, protocol and runs."""
    env = results["envelope"]
    m, st = env["machine"], env["settings"]
    L = []
    L += [
        "# Benchmarks",
        "",
        "Reproduces the measurements of the source documents (DESIGN.md, seeds/000-003) on the "
        "lab. Generated by `python3 -m tools.bench_suite`; do not edit by hand, run it again.",
        "",
        "## Machine and settings",
        "",
        f"- Date: {env['start_time']} to {env.get('end_time', '?')} ({env.get('seconds', 0):.0f} s)",
        f"- Command: `{env['command']}` (as root, from the repository root)",
        f"- Machine: {m['cpu']}, {m['ncpus']} vCPUs, {m['mem_gib']} GiB, {m['os']}. "
        "**A shared 2-vCPU VM**: other test runs may have been running at the same time, and "
        "the hypervisor stalls the vCPUs for a few ms now and then.",
        f"- Kernel: {m['kernel']} ({m['kernel_version']}), preemption: {m['preempt']}; "
        f"latency-related kernel parameters `{m['cmdline_rt']}`; cpufreq governor "
        f"{m['governor'] or 'n/a (none exposed in the VM)'}",
        f"- Real-time settings applied: CPU {st['rt_cpu']} reserved for real-time work (both "
        f"stations' RT threads SCHED_FIFO {st['station_priority']}, the RT application SCHED_FIFO "
        f"{st['app_priority']}, the subscriber SCHED_FIFO {st['subscriber_priority']}, cyclictest "
        f"SCHED_FIFO {st['station_priority']}), all pinned there with memory locked; "
        f"{st['pm_qos']}; no busy polling; no isolcpus/nohz_full. CPU load: stress-ng on CPU "
        f"{st['load_cpus']} only. Standard application: SCHED_OTHER, not pinned, relative sleeps.",
        *(
            [f"- Lab: the wire {st['lab_wire']}; the stations' sockets {st['xdp']}"]
            if "lab_wire" in st
            else []
        ),
        f"- Cycle {st['cycle_us']} us; link modelled at {st['link_rate_mbps']} Mbit/s; network "
        f"flood {st['flood']} through the sender's VNIC; {st['messages_per_cell']} messages per "
        f"cell in {st['chunks']} interleaved chunks (standard and RT alternate); RFC 2544 trials "
        f"{st['trial_s']} s, resolution {st['resolution_pct']}% of line rate, at most "
        f"{st['max_trials']} rates per size" + _verify_text(st) + ".",
        *protocol_lines(env, results),
        "",
    ]
    return L


def headline_lines(results: dict) -> list[str]:
    """The headline table: every target's median, min, max and verdict."""
    L = []
    rows = results.get("runs", {}).get("headlines") or headline_rows([results])
    L += [
        "## Headline figures",
        "",
        "Every figure in this report is the median of the ok runs, shown as median "
        "[min..max] where there were several. A target is met only when the median meets "
        "it, and a figure whose spread (max - min) is larger than the gap between its "
        "median and its target is 'not resolved on this machine'. Differences between two "
        "columns are judged two-sided (within +- the target). Per-trial details quoted "
        "below (failed trials, disturbed trials) are the first ok run's; every run's are in "
        "its JSON.",
        "",
        headline_table(rows),
        "",
    ]
    return L


def matrix_lines(results: dict, fig) -> list[str]:
    """Section a: the determinism matrix, UDP next to raw, its stages and missed cycles."""
    L = []
    mc = results.get("matrix_config", {})
    L += [
        "## a. Determinism matrix (seeds/000)",
        "",
        "Sender station 1 (TDMA master), receiver station 2. True end-to-end latency: from "
        "the message's scheduled send time (the RT application's absolute deadline, or the "
        "standard application's intended time start + k x 1 ms) to the moment the "
        "subscribing application takes it from its channel, both in global time. "
        f"Under TDMA the sender's RT slot is at {mc.get('slot0_us')} us in the cycle and the "
        f"RT application wakes {mc.get('lead_us')} us before it; under NoMAC the RT "
        "application runs on its own absolute 1 ms grid. Missed cycles = latency above one "
        "cycle, plus lost messages.",
        "",
    ]
    g = results.get("guard")
    if g:
        L += [
            f"The TDMA RT slots' guard (how late a station's RT thread may wake and still "
            f"send in its slot) is {g['guard_us']} us"
            + (
                f", chosen by the benchmark from the RT CPU's wake-up lateness just before "
                f"(p99.99 {g.get('probe_p9999_us', 0):.0f} us over {g['probe_wakeups']} "
                f"wake-ups, "
                f"plus a margin). With the default {DEFAULT_GUARD_US} us guard a vCPU that stalls or slows "
                f"down for milliseconds makes the station skip its slot in every cycle of "
                f"the spell, and the messages wait for its end."
                if "probe_p999_us" in g
                else ", set by hand (--guard-us)."
            )
            + " A station's window starts inside its RT slot's guard, so the guard costs "
            "the other stations no wire time.",
            "",
        ]
    for key, name in METRICS:
        L += [
            f"### {name} ({'count' if key == 'missed' else 'us'})",
            "",
            matrix_table(results, key),
            "",
        ]
    if results.get("udp_vs_raw"):
        L += [
            "### UDP/IPv4 next to the raw EtherType channel (p99, us)",
            "",
            "The RT application behind the TDMA gate sending over stamped UDP sockets "
            "(rtnet.app.UdpSocket: Ethernet, IPv4 and UDP headers and the RTNX header, "
            f"{UDP_HEADERS_BYTES} bytes) instead of its raw EtherType channel, in the same run on the same "
            "cycle and slot. Target (issue 13): UDP adds at most "
            f"{T_UDP_P99_US:g} us at p99. It is checked two-sided, UDP minus raw within "
            f"+-{T_UDP_P99_US:g} us: the two columns are measured alike, so a difference "
            "far below zero says the measurement does not resolve the target, not that "
            "UDP is faster.",
            "",
            udp_table(results),
            "",
        ]
    L += [fig("a", "CDF of true end-to-end latency per load"), ""]
    stage_rows = [(a, d, stage_table(results, a, d)) for a, d in COLUMNS]
    if any(t for _a, _d, t in stage_rows):
        L += [
            "### Stage breakdown (p50 / p99 / max, us)",
            "",
            "Every message carries its stamps (csrc/core/rtn_app_hdr.h): scheduled, the "
            "application's hand-over, the sending RT thread's pick-up at its slot, the TX "
            "hand-over, the receiver's XDP stamp, its RT thread, the subscriber's take. The "
            "wire stage spans two stations' clocks (their synchronisation error is in it).",
            "",
        ]
        for a, d, t in stage_rows:
            if t:
                L += [f"{COL_NAMES[(a, d)]}:", "", t, ""]
    mt = misses_table(results)
    if mt:
        sp = results.get("stalls", {})
        det = next(iter(sp.values()), {})
        L += [
            "### Missed cycles by cause",
            "",
            "Each message over its deadline (one cycle) is put down to the stage furthest "
            "above its own running baseline (csrc/core/rtn_stages.c); lost messages are "
            "'frame dropped'. In brackets: how many of them a vCPU gap overlapped, as a "
            f"stall detector on every CPU saw it (SCHED_FIFO 99, {det.get('period_us', '?')} us "
            f"period, a wake-up over {det.get('threshold_us', '?')} us late is a gap; "
            + ", ".join(
                f"{d}: {v['gaps']} gaps, longest {fmt(v['max_us'], 0)} us" for d, v in sp.items()
            )
            + "), and how many of the rest fell in a "
            "slow spell, in which the detector's fixed unit of work took several times "
            "its fastest time ("
            + ", ".join(
                f"{d}: {fmt(v.get('slow_ms', 0), 0)} ms slow, up to "
                f"{fmt(v.get('max_slowdown', 0), 0)} times slower"
                for d, v in sp.items()
            )
            + ").",
            "",
            mt,
            "",
        ]
    return L


def wakeup_lines(results: dict, fig) -> list[str]:
    """Section b: wake-ups and slot lateness next to cyclictest."""
    L = []
    L += [
        "## b. Wake-up latency and slot lateness next to cyclictest",
        "",
        "Per discipline and load, over the same phase as the matrix cells (us): the sending "
        "station's RT thread, the RT and standard applications (lateness against their own "
        "deadlines), the TDMA slot lateness of the sender, and cyclictest on the reserved CPU "
        "at the same priority, run right after the cells under the same load.",
        "",
        wakeup_table(results),
        "",
        f"A phase in which some wake-up went beyond the histogram's {HIST_RANGE_MS} ms range reports "
        "the "
        "station's lifetime maximum as its max.",
        "",
        fig("b", "wake-up p99 per load"),
        "",
    ]
    return L


def rfc2544_lines(results: dict, fig) -> list[str]:
    """Section c: RFC 2544 on the RT path, through the VNIC, and with 802.1CB."""
    st = results["envelope"]["settings"]
    L = []
    vn = results["rfc2544"].get("vnic", {})
    L += [
        "## c. RFC 2544 (seeds/001)",
        "",
        "Real-time path: two stations under NoMAC, the sender's RT thread generates frames at "
        f"a fixed rate paced at the modelled {st['link_rate_mbps']} Mbit/s, the receiver counts them and their "
        "one-way latency (generator's scheduled time to the receiver's XDP timestamp); "
        "zero loss = every frame received and none dropped at the sender's FIFO. "
        "The generator stands for the tester: a frame it could not hand to the FIFO on "
        "time (a stall of the sender's CPU) waits, with its scheduled time, up to the "
        "search's resolution of the trial's length "
        f"({st['resolution_pct']:g}% of {st['trial_s']:g} s: "
        f"{st['resolution_pct'] / 100 * st['trial_s'] * 1000:g} ms) behind schedule, "
        "and is dropped after that; so a sender that keeps up with less than "
        f"{100 - st['resolution_pct']:g}% of a rate fails it. Each failed trial records the generator's largest lag, the "
        f"sender RT thread's wake-ups later than {HIST_RANGE_MS} ms, the sender CPU's steal time and its "
        "busy share of the trial (results JSON, and the log). "
        + ceiling_text(st, results["rfc2544"].get("xdp_flood", {}))
        + ". VNIC: iperf3 UDP through vnic0 of the TDMA master (vnic/pair.py plan, NRT share "
        f"{fmt(vn.get('nrt_capacity_mbps'), 1)} Mbit/s), datagram size = frame size - "
        f"{VNIC_DATAGRAM_OVERHEAD}; "
        "latency is the ping round trip through the VNICs (both directions wait for NRT "
        "slots)." + cut_frames_text(vn.get("sizes", {})),
        "",
        rfc_table(results),
        "",
        fig("c", "RFC 2544 throughput and latency"),
        "",
    ]
    L += bench_frer.markdown(results, fig("c-frer", "RFC 2544 with and without redundancy"))
    return L


def vnic_lines(results: dict, fig) -> list[str]:
    """Section d: the VNIC's cost next to the kernel path."""
    L = []
    L += [
        "## d. VNIC cost (seeds/003)",
        "",
        f"vnic/bench.py: iperf3 at {VNIC_OFFERED_MBPS} Mbit/s offered through vnic0 (TDMA, batched and "
        "per-packet modes) against the plain veth kernel path; TCP's ratios are to the kernel "
        "path with MTU-sized frames on the wire (TSO, GSO and GRO off, as a TDMA segment "
        "carries frames) offered the batched VNIC's TCP goodput (kernel-mtu-same-rate/tcp; "
        "kernel-mtu/tcp, offered the whole link's rate, where a run has no such path), the "
        "TSO path is listed beside it. The VNIC's TAP work "
        "runs on its pump thread, not on the RT thread. Lab CPU is the CPU time of "
        "the lab's own tasks (this process and every child it starts, in a cgroup v2 of "
        f"their own: {results['vnic_cost'].get('config', {}).get('cpu_method', '?')}) "
        "plus every ksoftirqd thread of the machine (they carry the softirq work the "
        "kernel defers, the lab's when only the lab sends traffic; anything else the "
        "machine runs meanwhile is counted there too), total and above an idle TDMA run of "
        "the same length (the fixed cost of the RT threads' slot wake-ups); context "
        "switches of the stack's threads per tunnelled packet, above the idle run.",
        "",
        vnic_table(results),
        "",
        fig("d", "VNIC cost"),
        "",
    ]
    runs = results["vnic_cost"].get("runs", {})
    k, b, pp = (
        runs.get("kernel/udp", {}),
        runs.get("batched/udp", {}),
        runs.get("per-packet/udp", {}),
    )
    kt_key, kt_name = tcp_baseline(runs)
    kt = runs.get(kt_key, {})
    kt_name = "the " + kt_name.replace("path's", "path")
    tb = runs.get("batched/tcp", {})
    if k.get("cpu_s_per_gb") and b.get("cpu_s_per_gb"):
        L += [
            f"Seed 003 reports that a vanilla kernel used {SEED_003_KERNEL_CPU_PCT}% of an IXP465 to "
            f"NAT {SEED_003_KERNEL_MBPS} Mbit/s and RTnet's VNIC {SEED_003_VNIC_CPU_PCT}% at "
            f"{SEED_003_VNIC_MBPS} Mbit/s, about {SEED_003_RATIO:g}x, after removing the one context switch "
            f"per packet that waking the RT task for every frame cost. Here the batched VNIC "
            f"needs {fmt(b.get('csw_per_packet'), 3)} context switches per packet and the "
            f"per-packet mode, the design the seed started from, "
            f"{fmt(pp.get('csw_per_packet'), 2)}: batching removes that cost as the seed "
            f"says. CPU per byte: TCP through the batched VNIC costs "
            f"{fmt((tb.get('cpu_s_per_gb') or 0) / (kt.get('cpu_s_per_gb') or 1), 2)}x "
            f"{kt_name} (DESIGN.md target: {T_VNIC_CPU_RATIO:g}x; seed: ~{SEED_003_RATIO:g}x), "
            f"{fmt((tb.get('marginal_cpu_s_per_gb') or 0) / (kt.get('cpu_s_per_gb') or 1), 2)}x "
            f"above an idle TDMA run. {floor_sentence(results)}The UDP ratios are not "
            f"comparable: iperf3 offers {VNIC_OFFERED_MBPS} Mbit/s but the TDMA NRT share carries "
            f"{fmt(results['vnic_cost'].get('config', {}).get('master_nrt_capacity_mbps'), 0)} "
            f"Mbit/s, so most datagrams are made and dropped at the TAP and their CPU is "
            f"charged to the fewer bytes delivered; TCP adapts to the capacity and is the "
            f"fair comparison.",
            "",
        ]
    return L


def discussion_lines(results: dict) -> list[str]:
    """The discussion: each of the seeds' claims against this run."""
    L = []
    disc = discussion(results)
    if disc:
        L += ["## Discussion: agreement with the seeds", ""]
        for d in disc:
            L += [f"- {d}", ""]
    return L


def markdown(results: dict, report_path: str) -> str:
    base = os.path.dirname(os.path.abspath(report_path))

    def fig(key, alt):
        p = results.get("figures", {}).get(key)
        return f"![{alt}]({os.path.relpath(p, base)})" if p else ""

    L = header_lines(results) + headline_lines(results)
    if results["matrix"]:
        L += matrix_lines(results, fig)
    if results["wakeup"]:
        L += wakeup_lines(results, fig)
    if results["rfc2544"]:
        L += rfc2544_lines(results, fig)
    if results.get("vnic_cost"):
        L += vnic_lines(results, fig)
    L += discussion_lines(results)
    # tools/bench_cost.py's section comes from its own run: kept as the page had it
    kept = cost_report.kept_section(report_path)
    # and tools/bench_sockperf.py's and tools/bench_vnic.py's, likewise from their own runs
    kept += sockperf_report.kept_section(report_path)
    kept += bench_vnic.kept_section(report_path)
    kept += bench_section.kept_notes(report_path)  # and what was written by hand
    return "\n".join(L).rstrip() + "\n" + ("\n" + kept if kept else "")
