"""Part c of tools/bench_suite.py on the real-time path: RFC 2544's zero-loss search
(tools/rfc2544_search.py) with its confirmation and latency trials, next to the raw AF_XDP
ceiling, at each modelled link rate, and with IEEE 802.1CB redundancy (tools/bench_frer.py)."""

from __future__ import annotations

import contextlib
import functools
import os
import time

from rtnet._lowlevel import lib
from rtnet.lab import Lab
from rtnet.stall import StallDetector
from rtnet.station import RtSettings
from tools import bench_frer, bench_xdp_flood
from tools.rfc2544_search import binary_search, disturbed_by, found_rate, latency_rounds, searches
from tools.suite_config import (
    ET,
    LINK_MBPS,
    RFC_RX_CPU,
    RFC_TX_CPU,
    RT_CPU,
    STATION_PRIO,
    WIRE_OVERHEAD,
)
from tools.suite_lab import log, stalls_between
from vnic.pair import nomac_pair


def line_rate_fps(frame: int, link_mbps: int = LINK_MBPS) -> float:
    return link_mbps * 1e6 / ((frame + WIRE_OVERHEAD) * 8)


def search(args, trial):
    """RFC 2544's search for one column as the protocol has it: loss verification, no
    disturbed-trial retries (the VNIC's trials have no stall detector to retry by)."""
    return binary_search(trial, 100.0, args.resolution_pct, args.max_trials, args.loss_verify)


def both_searches(args, trials: dict) -> dict:
    """For each column of ``trials`` the headline search (no disturbed retries) and the
    one with them, from shared trials, the columns' trials in turn (rfc2544_search)."""
    return searches(
        trials,
        100.0,
        args.resolution_pct,
        args.max_trials,
        args.loss_verify,
        args.retry_disturbed,
        disturbed_by(args.disturbed_ms),
    )


def confirmation(args, run_trial, disturbed) -> dict:
    """The found rate's confirmation: one trial of ``--confirm-s`` (``run_trial(seconds)``),
    its losses, whether the VM disturbed it, and the sender CPU's busy time per frame."""
    ok, info = run_trial(args.confirm_s)
    out = {
        "seconds": args.confirm_s,
        "ok": ok,
        "disturbed": bool(disturbed(info)),
        "lost": int(info["sent"] - info["received"] + info["drops"]),
        **{k: v for k, v in info.items() if k != "hist"},
    }
    if info.get("sent") and "wall_ms" in info:
        # the sender CPU's busy time (its RT thread and the kernel's network path it runs:
        # on a veth the frame's whole way to the receiver's socket) per frame offered
        out["sender_cpu_us_per_frame"] = (
            info["sender_cpu_busy_pct"] / 100 * info["wall_ms"] * 1000 / info["sent"]
        )
    return out


def pooled_latency(rounds: list, key) -> dict:
    """Column ``key``'s latency over every round of rfc2544_search.latency_rounds: all
    trials pooled, with how many there were, how many the VM disturbed and how many lost
    frames (their received frames count like the others')."""
    from rtnet.hist import Histogram

    infos = [r["trials"][key][1] for r in rounds]
    if not infos:
        return {"latency_us": {}, "latency_trials": 0}
    return {
        "latency_us": Histogram.combine([i["hist"] for i in infos]).summary_us(),
        "latency_trials": len(infos),
        "latency_trials_disturbed": sum(1 for r in rounds if r["disturbed"]),
        "latency_trials_lossy": sum(1 for r in rounds if not r["trials"][key][0]),
    }


def settled_probe_rx(rx, want: int, deadline: float, quiet_s: float = 0.3) -> dict:
    """The receiver's probe counters once ``want`` frames arrived, or once none arrived
    for ``quiet_s`` (the FIFO and the wire drained: what is missing is lost)."""
    last, last_change = rx.probe_rx(), time.monotonic()
    while last["frames"] < want and time.monotonic() < deadline:
        time.sleep(0.02)
        now = rx.probe_rx()
        if now["frames"] != last["frames"]:
            last, last_change = now, time.monotonic()
        elif time.monotonic() - last_change >= quiet_s:
            break
    return last


def tester_backlog_ns(args) -> int:
    """How far behind schedule the generator's frames may wait for room in the sender's
    FIFO (the tester holding what a stall kept it from offering): the search's resolution
    of the trial's length, so a sender that keeps up with less than (100 - resolution)%
    of the rate still fails, as a search at that resolution would see it anyway."""
    return min(int(args.resolution_pct / 100 * args.trial_s * 1e9), lib.RTN_RATE_BACKLOG_MAX_NS)


def cpu_times_ms(cpu: int) -> tuple[float, float]:
    """``cpu``'s busy time (user, nice, system, irq, softirq: the sender's RT thread and
    the kernel's network path it runs) and its steal time (the hypervisor ran something
    else while it had work), from /proc/stat."""
    with open("/proc/stat") as f:
        for line in f:
            fields = line.split()
            if fields[0] == f"cpu{cpu}":
                tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
                v = [int(x) for x in fields[1:9]]
                return (v[0] + v[1] + v[2] + v[5] + v[6]) * tick_ms, v[7] * tick_ms
    return 0.0, 0.0


@contextlib.contextmanager
def trial_witness(args):
    """The stall detector on the receiver's CPU while RFC 2544 trials run: slow spells
    slow both vCPUs at once (rtnet/stall.py), so this CPU shows the sender's too,
    without a detector thread taking time on the sender's CPU."""
    with StallDetector(
        [RFC_RX_CPU], period_us=args.stall_period_us, threshold_us=args.stall_threshold_us
    ) as det:
        yield det


def rt_path_trial(tx, rx, frame: int, fps: float, seconds: float, *, backlog_ns: int, witness=None):
    """One RFC 2544 trial; its info says what the sender's CPU lost during it: wake-ups
    of the sender's RT thread later than its histogram's 4 ms, the CPU's steal time,
    and the slow spells and gaps the ``witness`` (trial_witness) saw."""
    count = max(1, int(fps * seconds))
    b_rx = rx.probe_rx()
    b_tx = tx.stats()
    b_busy, b_steal = cpu_times_ms(RFC_TX_CPU)
    t0 = time.monotonic_ns()
    tx.generate(
        int(round(fps)), count, ethertype=ET, length=frame - 4, backlog_ns=backlog_ns, dst=rx.mac
    )
    deadline = time.monotonic() + seconds * 3 + 5
    while tx.probe_rx()["generator_left"] and time.monotonic() < deadline:
        time.sleep(0.05)
    a_rx = settled_probe_rx(rx, b_rx["frames"] + count, deadline)
    drops = tx.stats()["nomac_drops"] - b_tx["nomac_drops"]
    got = a_rx["frames"] - b_rx["frames"]
    hist = a_rx["latency"].since(b_rx["latency"])
    a_tx = tx.stats()
    wake = a_tx["wakeup"].since(b_tx["wakeup"])
    busy, steal = cpu_times_ms(RFC_TX_CPU)
    wall_ms = (time.monotonic_ns() - t0) / 1e6
    return got >= count and drops == 0, {
        "sent": count,
        "received": int(got),
        "drops": int(drops),
        "generator_lag_max_us": a_tx["generator_lag_max_ns"] / 1000,
        "sender_wakeups_over_4ms": int(wake.overflow),
        "sender_cpu_steal_ms": steal - b_steal,
        "sender_cpu_busy_pct": 100 * (busy - b_busy) / wall_ms if wall_ms > 0 else 0.0,
        "wall_ms": wall_ms,
        **stalls_between(witness, t0, time.monotonic_ns()),
        "hist": hist,
    }


def rt_path_key(link_mbps: int) -> str:
    """Where the RT path's results at ``link_mbps`` go in results["rfc2544"]."""
    return "rt_path" if link_mbps == LINK_MBPS else f"rt_path_{link_mbps}"


CEILING_SPREAD_FLAG = 0.25  # repeats of a flood further apart than this disagree


def measure_xdp_ceiling(args, lab, results: dict) -> None:
    """The raw AF_XDP flood per frame size: what the lab path carries without the stack.
    Each size is flooded ``--flood-repeats`` times and the ceiling is the best of them:
    a flood a slow spell of the VM fell on understates the ceiling, and the RT path's
    share of it would come out high (above 100% in one run).  Repeats further apart than
    CEILING_SPREAD_FLAG are flagged in the log and the results."""
    out = results["rfc2544"]["xdp_flood"] = {}
    for frame in args.sizes:
        runs = [
            bench_xdp_flood.flood(
                lab,
                frame,
                args.flood_s,
                tx_cpu=RFC_TX_CPU,
                rx_cpu=RFC_RX_CPU,
                priority=STATION_PRIO,
            )
            for _ in range(args.flood_repeats)
        ]
        r = out[str(frame)] = dict(max(runs, key=lambda x: x["rx_fps"]))
        fps = [x["rx_fps"] for x in runs]
        r["repeats_rx_fps"] = fps
        r["repeats_disagree"] = bool(
            max(fps) > 0 and (max(fps) - min(fps)) / max(fps) > CEILING_SPREAD_FLAG
        )
        log(
            f"c/ceiling {frame:5d} B: {bench_xdp_flood.describe(r)} (best of {len(runs)}: "
            + ", ".join(f"{x:.0f}" for x in fps)
            + ")"
            + (
                f"; FLAGGED: the repeats disagree by more than {CEILING_SPREAD_FLAG:.0%}"
                if r["repeats_disagree"]
                else ""
            )
        )


def measure_rfc2544_rt(args, lab, results: dict, link_mbps: int) -> None:
    """Per frame size: the zero-loss search without and with disturbed retries (shared
    trials), the headline rate confirmed by one ``--confirm-s`` trial, and latency from
    ``--latency-trials`` dedicated trials at that rate, all pooled."""
    rt = RtSettings(cpu=RFC_TX_CPU, priority=STATION_PRIO)
    rt2 = RtSettings(cpu=RFC_RX_CPU, priority=STATION_PRIO)
    out = results["rfc2544"][rt_path_key(link_mbps)] = {}
    disturbed = disturbed_by(args.disturbed_ms)
    with (
        nomac_pair(lab, mode=None, rt=rt, rt2=rt2, ethertypes=[ET], link_rate_mbps=link_mbps) as (
            stations,
            _,
        ),
        trial_witness(args) as witness,
    ):
        tx, rx = stations
        rx.count_probes(ET)
        trial = functools.partial(
            rt_path_trial, backlog_ns=tester_backlog_ns(args), witness=witness
        )
        for frame in args.sizes:
            full = line_rate_fps(frame, link_mbps)
            found = both_searches(
                args, {1: lambda pct: trial(tx, rx, frame, full * pct / 100, args.trial_s)}
            )[1]
            pct, pct_retried = found_rate(found)
            fps = full * pct / 100
            r = out[str(frame)] = {
                "throughput_pct": pct,
                "throughput_pct_retried": pct_retried,
                "fps": fps,
                "fps_retried": full * pct_retried / 100,
                "mbps": fps * frame * 8 / 1e6,
                "link_mbps": link_mbps,
                "line_rate_fps": full,
                "latency_rate_pct": pct,
                "trials": found["plain"][1],
                "trials_retried": found["retried"][1],
            }
            if pct > 0:
                r["confirm"] = confirmation(
                    args, lambda seconds: trial(tx, rx, frame, fps, seconds), disturbed
                )
                r.update(
                    pooled_latency(
                        latency_rounds(
                            {1: lambda: trial(tx, rx, frame, fps, args.latency_trial_s)},
                            args.latency_trials,
                            disturbed,
                        ),
                        1,
                    )
                )
            else:
                r.update(latency_us={}, latency_trials=0)
            lat = r["latency_us"]
            ceiling = results["rfc2544"].get("xdp_flood", {}).get(str(frame), {}).get("rx_fps")
            if ceiling:
                r["pct_of_xdp_ceiling"] = 100 * fps / ceiling
                r["pct_of_xdp_ceiling_retried"] = 100 * r["fps_retried"] / ceiling
            conf = r.get("confirm")
            log(
                f"c/rt-path {frame:5d} B: zero-loss {pct:6.2f}% of {link_mbps} Mbit/s "
                f"({fps:9.0f} fps"
                + (
                    f", {r['pct_of_xdp_ceiling']:5.1f}% of the raw AF_XDP ceiling {ceiling:.0f}"
                    if ceiling
                    else ""
                )
                + f"); with disturbed retries {pct_retried:6.2f}%; "
                + (
                    f"confirmed by {conf['seconds']:g} s: {'pass' if conf['ok'] else 'FAIL'} "
                    f"({conf['lost']} lost); "
                    if conf
                    else ""
                )
                + f"latency p50 {lat.get('p50', 0):.1f} p99 {lat.get('p99', 0):.1f} "
                f"p99.9 {lat.get('p99.9', 0):.1f} us over {r['latency_trials']} trials "
                f"({r.get('latency_trials_disturbed', 0)} disturbed); "
                f"{len({t['trial'] for t in r['trials'] + r['trials_retried']})} search trials"
            )
            for name, tried in bench_frer.trial_lists(r["trials"], r["trials_retried"]):
                if failed := bench_frer.failed_trials_text(tried):
                    log(f"c/rt-path {frame:5d} B{name}: failed trials: {failed}")


def frer_key(link_mbps: int) -> str:
    """Where c-frer's results at ``link_mbps`` go in results["rfc2544"]."""
    return "rt_path_redundant" if link_mbps == LINK_MBPS else f"rt_path_redundant_{link_mbps}"


def measure_redundancy(args, results: dict) -> None:
    """c-frer: the RT path's RFC 2544 with two ports against one (as measure_rfc2544_rt,
    at every modelled link rate, in a redundant lab of its own), then the wire-cut runs."""
    rt = RtSettings(cpu=RFC_TX_CPU, priority=STATION_PRIO)
    rt2 = RtSettings(cpu=RFC_RX_CPU, priority=STATION_PRIO)
    results["rfc2544"].setdefault("rt_path", {})
    with Lab(f"{args.lab}r", 2, redundant=True) as lab, trial_witness(args) as witness:
        trial = functools.partial(
            rt_path_trial, backlog_ns=tester_backlog_ns(args), witness=witness
        )
        for mbps in args.link_rates:
            bench_frer.measure_rfc2544(
                args,
                lab,
                results,
                rt=rt,
                rt2=rt2,
                et=ET,
                trial=trial,
                search=functools.partial(both_searches, args),
                line_rate=line_rate_fps,
                link_mbps=mbps,
                log=log,
                disturbed=disturbed_by(args.disturbed_ms),
                confirm=functools.partial(confirmation, args),
                pooled=pooled_latency,
                key=frer_key(mbps),
            )
        bench_frer.measure_wire_cut(
            args,
            lab,
            results,
            rt=RtSettings(cpu=RT_CPU, priority=STATION_PRIO),
            rt2=RtSettings(cpu=RT_CPU, priority=STATION_PRIO),
            log=log,
        )
