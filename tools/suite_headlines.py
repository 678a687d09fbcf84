"""The headline figures of tools/bench_suite.py's report: each with its target and how it
is judged, one run's and several runs' side by side (bench_aggregate.headline_table)."""

from __future__ import annotations

from tools import bench_frer
from tools.suite_config import LOADS
from tools.suite_tables import LOAD_NAMES
from tools.suite_targets import (
    T_GATE_P999_US,
    T_SLOT_EXTRA_US,
    T_UDP_P99_US,
    T_VNIC_CPU_RATIO,
    T_VNIC_CSW,
    T_WAKE_RATIO,
)
from vnic.bench_report import tcp_baseline


def headline_values(results: dict) -> list[dict]:
    """One run's headline figures: label, value, target and how it is judged (kind None:
    a figure without a target), in the report's order."""
    out = []

    def add(label, value, target=None, kind=None, unit="", nd=1):
        if value is not None:
            out.append(
                {
                    "label": label,
                    "value": value,
                    "target": target,
                    "kind": kind,
                    "unit": unit,
                    "nd": nd,
                }
            )

    mx = results.get("matrix", {})
    for ld in LOADS:
        c = mx.get(f"rt/tdma/{ld}")
        if c:
            add(
                f"a: RT behind the TDMA gate, {LOAD_NAMES[ld]}: p99.9",
                c.get("p999"),
                T_GATE_P999_US,
                "at_most",
                "us",
                0,
            )
            add(
                f"a: RT behind the TDMA gate, {LOAD_NAMES[ld]}: missed cycles",
                c.get("missed"),
                0,
                "at_most",
                "",
                0,
            )
    for cell, v in results.get("udp_vs_raw", {}).items():
        add(
            f"a: UDP/IPv4 p99 minus raw EtherType p99, {cell}",
            v.get("p99_diff_us"),
            T_UDP_P99_US,
            "abs_at_most",
            "us",
        )
    for key, b in results.get("wakeup", {}).items():
        w, ct, sl = b["station_wakeup_us"], b["cyclictest_us"], b.get("slot_lateness_us")
        if w.get("count") and ct.get("p99"):
            add(
                f"b: RT thread wake-up p99 / cyclictest p99, {key}",
                w["p99"] / ct["p99"],
                T_WAKE_RATIO,
                "at_most",
                "x",
                2,
            )
        if sl and sl.get("count") and ct.get("p99") is not None:
            add(
                f"b: slot lateness p99 minus cyclictest p99, {key}",
                sl["p99"] - ct["p99"],
                T_SLOT_EXTRA_US,
                "at_most",
                "us",
                0,
            )
    rfc = results.get("rfc2544", {})
    for key in rt_path_keys(results):
        for size, r in sorted(rfc[key].items(), key=lambda x: int(x[0])):
            mbps = r.get("link_mbps", 100)
            name = f"c: RT path {size} B at {mbps} Mbit/s"
            at_line = mbps == 100
            add(
                f"{name}: zero-loss (% of line rate)",
                r.get("throughput_pct"),
                100 if at_line else None,
                "at_least" if at_line else None,
                "%",
            )
            add(f"{name}: zero-loss with disturbed retries (%)", r.get("throughput_pct_retried"))
            if not at_line:  # at the modelled 100 Mbit/s the link, not the path, limits
                add(f"{name}: zero-loss (% of the raw AF_XDP ceiling)", r.get("pct_of_xdp_ceiling"))
            add(
                f"{name}: frames lost in the confirmation trial",
                r.get("confirm", {}).get("lost"),
                0,
                "at_most",
                "",
                0,
            )
    for key, mbps in bench_frer.keys(results):
        for size, r in sorted(rfc[key].items(), key=lambda x: int(x[0])):
            name = f"c-frer {size} B at {mbps} Mbit/s"
            add(
                f"{name}: zero-loss 2 ports / 1 port",
                r.get("ratio"),
                bench_frer.TARGET_THROUGHPUT_RATIO,
                "at_least",
                "",
                3,
            )
            add(
                f"{name}: p99 2 ports minus 1 port",
                r.get("p99_extra_us"),
                bench_frer.TARGET_P99_EXTRA_US,
                "abs_at_most",
                "us",
            )
    wc = results.get("frer_wire_cut")
    if wc:
        add("c-frer wire cut: messages lost", wc.get("lost"), 0, "at_most", "", 0)
        add("c-frer wire cut: duplicates delivered", wc.get("duplicates"), 0, "at_most", "", 0)
    runs = results.get("vnic_cost", {}).get("runs", {})
    # TCP's primary baseline: the kernel path with MTU-sized frames on the wire, as a
    # TDMA segment carries them (vnic/bench.py kernel_mtu_path); older runs had only TSO's
    b = runs.get("batched/tcp", {})
    k_key, k_name = tcp_baseline(runs)
    k = runs.get(k_key, {})
    add(
        "d: batched VNIC TCP, context switches per packet",
        b.get("csw_per_packet"),
        T_VNIC_CSW,
        "at_most",
        "",
        3,
    )
    if b.get("cpu_s_per_gb") and k.get("cpu_s_per_gb"):
        add(
            f"d: batched VNIC TCP, lab CPU per byte / {k_name}",
            b["cpu_s_per_gb"] / k["cpu_s_per_gb"],
            T_VNIC_CPU_RATIO,
            "at_most",
            "x",
            2,
        )
    return out


def rt_path_keys(results: dict) -> list[str]:
    """The one-port RT path's results, one per modelled link rate: rt_path (100 Mbit/s),
    rt_path_<rate> (suite_rfc2544.rt_path_key)."""
    rfc = results.get("rfc2544", {})
    return sorted(
        (
            k
            for k in rfc
            if k == "rt_path" or k.startswith("rt_path_") and k[len("rt_path_") :].isdigit()
        ),
        key=lambda k: (k != "rt_path", len(k), k),
    )


def headline_rows(runs: list[dict]) -> list[dict]:
    """The headlines of several runs' results, each with every run's value (a run without
    the figure gives None), for bench_aggregate.headline_table."""
    rows = {}
    for i, res in enumerate(runs):
        for h in headline_values(res):
            row = rows.setdefault(
                h["label"],
                {**{k: v for k, v in h.items() if k != "value"}, "values": [None] * len(runs)},
            )
            row["values"][i] = h["value"]
    return list(rows.values())
