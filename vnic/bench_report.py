"""A VNIC benchmark run's results as text and a chart: the table, one row per loaded run,
and the log line's parts (vnic/bench.py)."""

from __future__ import annotations

import json

import numpy as np

from .bench_accounting import STACK_THREADS

COST_JSON = "results/cost.json"  # the cost benchmark's instructions per KB (tools/bench_cost.py)
# the kernel path with MTU frames offered the batched VNIC's TCP goodput (vnic/bench.py)
SAME_RATE_KEY = "kernel-mtu-same-rate/tcp"
# TCP's baselines, the first a run has being its primary: the MTU-frame kernel path at the
# VNIC's rate, at the whole link's offered rate (runs before the same-rate one existed),
# and the kernel path with TSO (runs before either)
TCP_BASELINES = (
    (SAME_RATE_KEY, "MTU-frame kernel path's at the same rate"),
    ("kernel-mtu/tcp", "MTU-frame kernel path's"),
    ("kernel/tcp", "kernel path's"),
)


def tcp_baseline(runs: dict) -> tuple[str, str]:
    """The key and the name of a run's primary TCP baseline (TCP_BASELINES)."""
    for key, name in TCP_BASELINES:
        if runs.get(key, {}).get("cpu_s_per_gb"):
            return key, name
    return TCP_BASELINES[-1]


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
            for name in ("vnic_gso_in_place", "vnic_gso", "vnic_gro")
            if name in cost["stages"] and cost["stages"][name]["unit"] == "KB"
        }
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log(f"pump cost: {COST_JSON} unreadable ({exc}); run tools.bench_cost for it")
        return None
    in_place = out.get("vnic_gso_in_place")
    log(
        f"pump cost ({COST_JSON}, commit {cost.get('commit', '?')}): segmentation "
        + (f"{in_place:,.0f} in place, " if in_place is not None else "")
        + f"{out.get('vnic_gso', 0):,.0f} copying, and merging "
        f"{out.get('vnic_gro', 0):,.0f} instructions per KB"
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
    the wire, as a TDMA segment carries them, offered the batched VNIC's rate
    (tcp_baseline); the kernel path with TSO beside it.  UDP is compared with kernel UDP."""
    rows = [
        "path/proto                goodput  %cap  loss%   labCPU  CPUs/GB  xMTU  xTSO  "
        "marg/GB  marg-xMTU  marg rt/pump/rest  csw/pkt (rt vol/invol, pump vol/invol)  pump-wake/pkt  "
        "seg/rd  seg/wr  copies tx/rx  RTlate-p99(idle) us  RTmissed(idle)  "
        "missed:late-wake/other  frames/wake  flags"
    ]
    runs = results["runs"]
    for key, r in runs.items():
        if key.endswith("/idle"):
            continue
        proto = key.split("/")[1]
        mtu_base, tso_base = (
            (tcp_baseline(runs)[0], "kernel/tcp") if proto == "tcp" else ("kernel/udp", None)
        )
        split = r.get("csw_per_packet_by_thread") or {}
        csw = " ".join(
            f"{fmt(split[n]['vol'], '.3f')}/{fmt(split[n]['invol'], '.3f')}"
            for n in STACK_THREADS
            if n in split
        )
        per_wake = "/".join(fmt(x) for x in r.get("frames_per_wakeup") or [] if x is not None)
        by_part = r.get("above_idle_s_per_gb_by_part") or {}
        parts = "/".join(fmt(by_part.get(n)) for n in (*STACK_THREADS, "rest")) if by_part else ""
        flags = (
            " ".join(
                name
                for name, on in (
                    ("below-idle", r.get("below_idle")),
                    ("idle-disagree", r.get("idle_disagree")),
                    ("witness-suspect", r.get("witness_suspect")),
                    ("rate-mismatch", r.get("rate_mismatch")),
                    ("baseline-disagree", r.get("baseline_disagree")),
                )
                if on
            )
            or "-"
        )
        rows.append(
            f"{key:24s} {r['goodput_mbps']:7.1f} {fmt(r.get('goodput_pct_of_capacity'), '5.0f')} "
            f"{r['loss_pct']:6.2f} {r['lab_total_cpu_s']:8.2f} {fmt(r['cpu_s_per_gb'], '8.2f')} "
            f"{fmt(kernel_ratio(r, runs, 'cpu_s_per_gb', mtu_base), '5.2f')} "
            f"{fmt(kernel_ratio(r, runs, 'cpu_s_per_gb', tso_base) if tso_base else None, '5.2f')} "
            f"{fmt(r.get('marginal_cpu_s_per_gb'), '8.2f')} "
            f"{fmt(kernel_ratio(r, runs, 'marginal_cpu_s_per_gb', mtu_base), '9.2f')} "
            f"{parts or '-':>17s} "
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
