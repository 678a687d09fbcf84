"""Parts a and b of tools/bench_suite.py: the determinism matrix (standard and RT
application, no gate and TDMA gate, under each load; true end-to-end latency and its stages)
and, in the same phases, the wake-ups and slot lateness next to cyclictest."""

from __future__ import annotations

import contextlib
import os
import shutil

import numpy as np

from rtmac.tdma_config import DEFAULT_GUARD_NS
from rtnet.app import Channel, latencies_ns, publish_cyclic, subscribe
from rtnet.benchkit import Accumulator, run_cyclictest
from rtnet.preflight.measure import measure_wakeups, recommended_guard_us
from rtnet.stages import attribute_misses, cause_text, stage_breakdown_us
from rtnet.stall import StallDetector
from rtnet.station import RtSettings
from tools import bench_protocol
from tools.bench_tdma import line as ct_line
from tools.bench_wakeup import summary as acc_summary
from tools.suite_config import (
    APP_PRIO,
    APPS_BY_DISC,
    CYCLE_US,
    ET,
    LINK_MBPS,
    RT_CPU,
    STATION_PRIO,
    SUB_PRIO,
    UDP_P99_TARGET_US,
    UDP_PORT,
)
from tools.suite_lab import Load, log, station_snapshot
from vnic.pair import nomac_pair, plan, tdma_pair

DEFAULT_GUARD_US = DEFAULT_GUARD_NS // 1000
GUARD_MAX_US = bench_protocol.GUARD_MAX_US
GUARD_PROBE_S = 5


@contextlib.contextmanager
def rt_subscriber():
    """The calling thread as a real-time subscriber on the reserved CPU, then back."""
    aff = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {RT_CPU})
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(SUB_PRIO))
    try:
        yield
    finally:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        os.sched_setaffinity(0, aff)


def cell_summary(lat_ns: np.ndarray, sent: int, cycle_ns: int) -> dict:
    received = int(len(lat_ns))
    lost = max(0, sent - received)
    late = int((lat_ns > cycle_ns).sum())
    out = {
        "sent": int(sent),
        "received": received,
        "lost": lost,
        "late": late,
        "missed": late + lost,
    }
    if received:
        q = np.percentile(lat_ns, [50, 99, 99.9]) / 1000
        out.update(
            mean=float(lat_ns.mean()) / 1000,
            p50=float(q[0]),
            p99=float(q[1]),
            p999=float(q[2]),
            max=float(lat_ns.max()) / 1000,
            min=float(lat_ns.min()) / 1000,
        )
    else:
        out.update(mean=None, p50=None, p99=None, p999=None, max=None, min=None)
    return out


def cdf_points(lat_ns: np.ndarray, n: int = 400) -> list:
    """Quantiles of the latency (us) at n evenly spaced probabilities, for the CDF plots."""
    if not len(lat_ns):
        return []
    return [round(float(x), 2) for x in np.percentile(lat_ns / 1000, np.linspace(0, 100, n))]


def run_app_chunk(disc, app, ch_tx, ch_rx, dst, n, slot_us, lead_us, lead_start_us=None):
    """One chunk of ``n`` messages: (samples, task stats, the chunk's over-deadline records).
    Behind the TDMA gate the RT application hands over for its slot at ``slot_us`` with the
    fixed lead (``rt``) or the automatic one (``rt-auto``, starting where the previous
    chunk's ended, as one long-running task would)."""
    late = ch_rx.late_reader(start_now=True)
    if app == "standard":
        task = publish_cyclic(ch_tx, dst, n, standard=True, interval_us=CYCLE_US)
    elif disc == "tdma":
        lead = {"lead_us": lead_us} if app in ("rt", "rt-udp") else {"lead_start_us": lead_start_us}
        task = publish_cyclic(
            ch_tx, dst, n, handover_us=slot_us, cpu=RT_CPU, priority=APP_PRIO, **lead
        )
    else:
        task = publish_cyclic(
            ch_tx, dst, n, offset_us=0, interval_us=CYCLE_US, cpu=RT_CPU, priority=APP_PRIO
        )
    try:
        with rt_subscriber():
            samples = subscribe(ch_rx, n, idle_timeout=1.0)
        task.wait(timeout=5)
    finally:
        st = task.stop()
    return samples, st, late.read()


def udp_pair(lab, tx_st, rx_st):
    """Stamped UDP sockets on both stations (their lab addresses as the real-time ones, each
    other as neighbours), the sender's in slot 0 like the raw channel's: (tx, rx) Channels."""
    a, b = lab.station(1), lab.station(2)
    tx_st.set_ipv4(a.ip)
    rx_st.set_ipv4(b.ip)
    tx_st.set_neighbours({b.ip: b.mac})
    rx_st.set_neighbours({a.ip: a.mac})
    tx = Channel.attach(*tx_st.open_channel(0x0800, slot=0, udp_port=UDP_PORT, stamped=True)[1:])
    rx = Channel.attach(*rx_st.open_channel(0x0800, udp_port=UDP_PORT, stamped=True)[1:])
    return tx, rx


def log_udp_difference(results: dict, disc: str, load: str) -> None:
    """The p99 the UDP/IPv4 column adds to the raw EtherType one (same run, same cycle)."""
    raw = results["matrix"].get(f"rt/{disc}/{load}", {}).get("p99")
    udp = results["matrix"].get(f"rt-udp/{disc}/{load}", {}).get("p99")
    if raw is None or udp is None:
        return
    diff = udp - raw
    results.setdefault("udp_vs_raw", {})[f"{disc}/{load}"] = {
        "raw_p99_us": raw,
        "udp_p99_us": udp,
        "p99_diff_us": diff,
        "target_us": UDP_P99_TARGET_US,
        "within_target": abs(diff) <= UDP_P99_TARGET_US,
    }
    log(
        f"# {disc}/{load}: UDP/IPv4 p99 {udp:.1f} us - raw EtherType p99 {raw:.1f} us = "
        f"{diff:+.1f} us (target: |difference| <= {UDP_P99_TARGET_US:g} us)"
    )


def measured_guard_us() -> dict:
    """The guard for this machine as it is now (rtnetctl check --measure): how late a
    SCHED_FIFO thread on the RT CPU wakes, p99.99 over GUARD_PROBE_S seconds, plus a margin.
    Under TDMA a station whose RT thread wakes later than its slot's guard skips the slot
    and its messages wait for the next one, so on a VM whose vCPUs stall or slow down for
    milliseconds a 50 us guard turns each spell into a run of skipped slots."""
    m = measure_wakeups(RT_CPU, GUARD_PROBE_S, STATION_PRIO)
    return {
        "guard_us": min(GUARD_MAX_US, recommended_guard_us(m)),
        "probe_wakeups": m["wakeups"],
        "probe_p999_us": m["p999_us"],
        "probe_p9999_us": m["p9999_us"],
        "probe_max_us": m["max_us"],
    }


def measure_discipline(args, lab, disc: str, results: dict) -> None:
    rt = RtSettings(cpu=RT_CPU, priority=STATION_PRIO)
    if disc != "tdma":
        g = {"guard_us": DEFAULT_GUARD_US}  # no slots: the plan only places the messages
    elif args.guard_us == "auto":
        g = measured_guard_us()
        log(
            f"# a: TDMA guard {g['guard_us']} us from the RT CPU's wake-up lateness "
            f"(p99.9 {g['probe_p999_us']:.0f} us, p99.99 {g['probe_p9999_us']:.0f} us, "
            f"max {g['probe_max_us']:.0f} us over "
            f"{g['probe_wakeups']} wake-ups)"
        )
    else:
        g = {"guard_us": args.guard_us}
    if disc == "tdma":
        results["guard"] = g
    guard_us = g["guard_us"]
    p = plan(CYCLE_US, LINK_MBPS, guard_ns=guard_us * 1000)
    slot_us = p.master.slots[0].offset_us
    per_chunk = max(1, args.messages // args.chunks)
    cm = (
        tdma_pair(lab, p, mode="batched", rt=rt, ethertypes=[ET])
        if disc == "tdma"
        else nomac_pair(lab, mode="batched", rt=rt, ethertypes=[ET])
    )
    with cm as (stations, _taps):
        tx_st, rx_st = stations
        cid, *fds = tx_st.open_channel(ET, slot=0)
        udp = udp_pair(lab, tx_st, rx_st) if "rt-udp" in APPS_BY_DISC[disc] else None
        udp_tx, udp_rx = udp or (None, None)
        # every CPU watched for gaps while the matrix runs, so each miss can be matched to one
        with (
            Channel.attach(*fds) as ch_tx,
            Channel.attach(*rx_st.open_channel(ET)[1:]) as ch_rx,
            contextlib.ExitStack() as udp_chans,
            StallDetector(
                range(os.cpu_count()),
                period_us=args.stall_period_us,
                threshold_us=args.stall_threshold_us,
            ) as stalls,
        ):
            for c in udp or ():
                udp_chans.enter_context(c)
            ch_rx.set_stages(deadline_us=CYCLE_US)
            if udp_rx is not None:
                udp_rx.set_stages(deadline_us=CYCLE_US)
            # the automatic lead goes on from chunk to chunk and from load to load, as one
            # long-running task's would (it starts at a quarter of the cycle)
            learnt = {}
            for load in args.loads:
                seconds = (
                    2 * args.messages * CYCLE_US / 1e6 + 3 * args.chunks + args.ct_seconds + 20
                )
                log(f"# a/{disc}/{load}: starting load")
                ld = Load(lab, load, seconds)
                try:
                    before = station_snapshot(tx_st, cid)
                    apps = APPS_BY_DISC[disc]
                    got = {a: [] for a in apps}
                    stats = {a: [] for a in apps}
                    late = {a: [] for a in apps}
                    wake = {a: Accumulator() for a in apps}
                    for i in range(args.chunks):
                        order = apps if i % 2 == 0 else apps[::-1]
                        for app in order:
                            tx, rx, dst = (
                                (udp_tx, udp_rx, (lab.station(2).ip, UDP_PORT))
                                if app == "rt-udp"
                                else (ch_tx, ch_rx, lab.station(2).mac)
                            )
                            samples, st, recs = run_app_chunk(
                                disc,
                                app,
                                tx,
                                rx,
                                dst,
                                per_chunk,
                                slot_us,
                                args.lead_us,
                                learnt.get(app),
                            )
                            got[app].append(samples)
                            late[app].extend(recs)
                            stats[app].append(st)
                            if st.handover_ns is not None:
                                learnt[app] = st.lead_ns / 1000
                            h = st.histogram
                            wake[app].add(
                                h.bins,
                                h.count,
                                h.underflow,
                                h.overflow,
                                h.min_ns,
                                h.max_ns,
                                h.sum_ns,
                            )
                    after = station_snapshot(tx_st, cid)
                    log(
                        f"# a/{disc}/{load}: cyclictest {args.ct_seconds} s on CPU {RT_CPU}, "
                        f"same load"
                    )
                    acc, ct_cmd = run_cyclictest(
                        shutil.which("cyclictest"),
                        seconds=args.ct_seconds,
                        priority=STATION_PRIO,
                        cpus=str(RT_CPU),
                    )
                finally:
                    ld.stop()
                gaps = stalls.gaps()
                for app in apps:
                    samples = np.concatenate(got[app])
                    lat = latencies_ns(samples)
                    sent = sum(s.sent for s in stats[app])
                    key = f"{app}/{disc}/{load}"
                    cell = cell_summary(lat["sched_to_app"].astype(np.int64), sent, CYCLE_US * 1000)
                    cell["task_skipped_cycles"] = int(sum(s.missed for s in stats[app]))
                    cell["policy"] = stats[app][0].policy
                    cell["parts_p50_p99_us"] = {
                        k: [float(np.percentile(v, 50)) / 1000, float(np.percentile(v, 99)) / 1000]
                        for k, v in lat.items()
                        if k != "sched_to_app" and len(v)
                    }
                    cell["cdf_us"] = cdf_points(lat["sched_to_app"].astype(np.int64))
                    cell["app_wakeup_us"] = acc_summary(wake[app], "ours")
                    if stats[app][-1].handover_ns is not None:
                        cell["lead"] = {
                            "auto": stats[app][-1].lead_auto,
                            "final_us": stats[app][-1].lead_ns / 1000,
                            "per_chunk_us": [s.lead_ns / 1000 for s in stats[app]],
                            "late_handovers": int(sum(s.lead_late for s in stats[app])),
                            "stalls_beyond_half_cycle": int(sum(s.lead_beyond for s in stats[app])),
                            "need_max_us": max(s.lead_need_max_ns for s in stats[app]) / 1000,
                        }
                    cell["stages_us"] = stage_breakdown_us(samples)
                    att = attribute_misses(late[app], cell["lost"], gaps)
                    cell["misses_by_cause"] = att["by_cause"]
                    cell["miss_records"] = att["misses"]
                    results["matrix"][key] = cell
                    log(
                        f"{key:<22} n={cell['received']:6d}/{sent:<6d} mean {cell['mean'] or 0:9.1f} "
                        f"p50 {cell['p50'] or 0:9.1f} p99 {cell['p99'] or 0:9.1f} "
                        f"p99.9 {cell['p999'] or 0:9.1f} max {cell['max'] or 0:9.1f} us, "
                        f"missed {cell['missed']}"
                    )
                    if cell["misses_by_cause"]:
                        log(
                            f"{'':<22} misses by cause: "
                            + ", ".join(
                                f"{c} {cause_text(v)}" for c, v in cell["misses_by_cause"].items()
                            )
                        )
                log_udp_difference(results, disc, load)
                w = after["wakeup"].since(before["wakeup"]).summary_us()
                b = {
                    "station_wakeup_us": w,
                    "cyclictest_us": acc_summary(acc, "cyclictest"),
                    "cyclictest_cmd": " ".join(ct_cmd),
                    "rt_app_wakeup_us": results["matrix"][f"rt/{disc}/{load}"]["app_wakeup_us"],
                    "std_app_wakeup_us": results["matrix"][f"standard/{disc}/{load}"][
                        "app_wakeup_us"
                    ],
                    "load_cmds": ld.cmds,
                    "sender_per_s": {
                        k: (after["counters"][k] - before["counters"][k])
                        / (after["t"] - before["t"])
                        for k in after["counters"]
                    },
                }
                if "slot_lateness" in after:
                    b["slot_lateness_us"] = (
                        after["slot_lateness"].since(before["slot_lateness"]).summary_us()
                    )
                    b["missed_slots"] = int(after["missed_slots"] - before["missed_slots"])
                results["wakeup"][f"{disc}/{load}"] = b
                log(ct_line(f"{disc}/{load} RT thread wake", w))
                log(ct_line(f"{disc}/{load} RT app wake", b["rt_app_wakeup_us"]))
                if "slot_lateness_us" in b:
                    log(
                        ct_line(f"{disc}/{load} slot lateness", b["slot_lateness_us"])
                        + f" missed:{b['missed_slots']}"
                    )
                log(ct_line(f"{disc}/{load} cyclictest", b["cyclictest_us"]))
                log(
                    f"# {disc}/{load} sender per s: "
                    + ", ".join(f"{k} {v:.0f}" for k, v in b["sender_per_s"].items())
                )
            every = stalls.gaps()
            gaps = [g for g in every if g.kind == "gap"]
            slow = [g for g in every if g.kind == "slow"]
            results.setdefault("stalls", {})[disc] = {
                "period_us": args.stall_period_us,
                "threshold_us": args.stall_threshold_us,
                "gaps": len(gaps),
                "max_us": max((g.gap_ns for g in gaps), default=0) / 1000,
                "slow_records": len(slow),
                "slow_ms": sum(g.gap_ns for g in slow) / 1e6,
                "max_slowdown": max((g.slowdown for g in slow), default=0.0),
                "wakeups": {str(c): w["wakeups"] for c, w in stalls.wakeups().items()},
            }
    results["matrix_config"] = {
        "slot0_us": slot_us,
        "tdma_guard_us": results.get("guard", {}).get("guard_us"),
        "lead_us": args.lead_us,
        "per_chunk": per_chunk,
        "chunks": args.chunks,
    }
