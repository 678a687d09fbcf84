"""The tables of tools/bench_suite.py's report, from its results dict: the matrix and its
stages and misses, the wake-ups, RFC 2544, the VNIC's cost, UDP next to the raw channel."""

from __future__ import annotations

from tools import bench_frer
from tools.bench_aggregate import show, verdict
from tools.suite_config import LOADS
from tools.suite_targets import T_UDP_P99_US
from vnic.bench_report import tcp_baseline

LOAD_NAMES = {"idle": "idle", "cpu": "CPU load", "net": "network flood", "both": "CPU + network"}
COLUMNS = (
    ("standard", "nomac"),
    ("standard", "tdma"),
    ("rt", "nomac"),
    ("rt", "tdma"),
    ("rt-auto", "tdma"),
    ("rt-udp", "tdma"),
)
COL_NAMES = {
    ("standard", "nomac"): "standard, no gate",
    ("standard", "tdma"): "standard, TDMA",
    ("rt", "nomac"): "RT, no gate",
    ("rt", "tdma"): "RT, TDMA",
    ("rt-auto", "tdma"): "RT, TDMA, automatic lead",
    ("rt-udp", "tdma"): "RT, TDMA, UDP/IPv4",
}
METRICS = (
    ("mean", "mean"),
    ("p50", "p50"),
    ("p99", "p99"),
    ("p999", "p99.9"),
    ("max", "max"),
    ("missed", "missed cycles"),
)


def fmt(v, nd=0) -> str:
    """A figure: over several runs the median with [min..max] (bench_aggregate.show)."""
    return show(v, nd)


def matrix_table(results: dict, metric: str) -> str:
    mx = results["matrix"]
    rows = [
        "| load | " + " | ".join(COL_NAMES[c] for c in COLUMNS) + " |",
        "|---|" + "---:|" * len(COLUMNS),
    ]
    for load in LOADS:
        cells = [mx.get(f"{a}/{d}/{load}", {}).get(metric) for a, d in COLUMNS]
        if all(c is None for c in cells) and not any(f"/{load}" in k for k in mx):
            continue
        rows.append(
            f"| {LOAD_NAMES[load]} | "
            + " | ".join(fmt(c, 0 if metric == "missed" else 1) for c in cells)
            + " |"
        )
    return "\n".join(rows)


STAGE_NAMES = {
    "app": "scheduled -> hand-over",
    "queue": "hand-over -> pick-up",
    "slot": "pick-up -> TX",
    "wire": "TX -> receiver XDP",
    "rx_rt": "XDP -> receiver RT",
    "take": "receiver RT -> take",
}
CAUSE_ORDER = (
    "application woke late",
    "RT thread woke late",
    "slot skipped",
    "frame dropped",
    "receiver late",
    "wire",
    "unknown",
)


def stage_table(results: dict, app: str, disc: str) -> str:
    """Stage breakdown (p50 / p99 / max, us) of one column of the matrix, one row per load."""
    mx = results["matrix"]
    rows = [
        "| load | " + " | ".join(STAGE_NAMES.values()) + " |",
        "|---|" + "---:|" * len(STAGE_NAMES),
    ]
    for load in LOADS:
        st = mx.get(f"{app}/{disc}/{load}", {}).get("stages_us")
        if not st:
            continue
        rows.append(
            f"| {LOAD_NAMES[load]} | "
            + " | ".join(
                " / ".join(fmt(st[k][q], 0) for q in ("p50", "p99", "max")) if k in st else "-"
                for k in STAGE_NAMES
            )
            + " |"
        )
    return "\n".join(rows) if len(rows) > 2 else ""


def misses_table(results: dict) -> str:
    """Every missed cycle of the matrix by cause, with how many a CPU stall overlapped."""
    mx = results["matrix"]
    rows = [
        "| cell | missed | " + " | ".join(CAUSE_ORDER) + " | automatic lead |",
        "|---|---:|" + "---:|" * len(CAUSE_ORDER) + "---|",
    ]
    for key, cell in mx.items():
        by = cell.get("misses_by_cause")
        if by is None:
            continue

        def one(cause):
            v = by.get(cause)
            if not v:
                return "0"
            if v["with_stall"] is None:
                return f"{v['misses']}"
            slow = f", {v['in_slow']} slow" if v.get("in_slow") else ""
            return f"{v['misses']} ({v['with_stall']} stall{slow})"

        # the automatic hand-over lead's column is filled by its own measurement
        rows.append(
            f"| {key} | {cell.get('missed', 0)} | "
            + " | ".join(one(c) for c in CAUSE_ORDER)
            + " | - |"
        )
    return "\n".join(rows) if len(rows) > 2 else ""


def wakeup_table(results: dict) -> str:
    rows = [
        "| discipline / load | RT thread wake p50 / p99 / max | RT app wake p50 / p99 / max | "
        "standard app wake p50 / p99 / max | TDMA slot lateness p50 / p99 / max (missed) | "
        "cyclictest p50 / p99 / max |",
        "|---|---|---|---|---|---|",
    ]

    def trio(s):
        if not s or not s.get("count"):
            return "-"
        return f"{fmt(s['p50'], 0)} / {fmt(s['p99'], 0)} / {fmt(s['max'], 0)}"

    for key, b in results["wakeup"].items():
        slot = trio(b.get("slot_lateness_us"))
        if "missed_slots" in b:
            slot += f" ({b['missed_slots']})"
        rows.append(
            f"| {key} | {trio(b['station_wakeup_us'])} | {trio(b['rt_app_wakeup_us'])} | "
            f"{trio(b['std_app_wakeup_us'])} | {slot if 'slot_lateness_us' in b else '-'} | "
            f"{trio(b['cyclictest_us'])} |"
        )
    return "\n".join(rows)


def rfc_table(results: dict) -> str:
    rt = results["rfc2544"].get("rt_path", {})
    gig = results["rfc2544"].get("rt_path_1000", {})
    ceil = results["rfc2544"].get("xdp_flood", {})
    vn = results["rfc2544"].get("vnic", {}).get("sizes", {})
    rows = [
        "| frame (B) | RT path zero-loss (% of 100 Mbit/s) | with disturbed retries (%) | "
        "frames lost in the confirmation trial | RT path fps | RT one-way latency "
        "p50 / p99 / p99.9 / max (us) | at 1000 Mbit/s modelled: zero-loss fps | with "
        "disturbed retries fps | % of the raw AF_XDP ceiling | raw AF_XDP ceiling fps | "
        "VNIC zero-loss (Mbit/s) | VNIC % of NRT share | VNIC ping RTT p50 / p99 / max (us) |",
        "|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for size in sorted({int(k) for k in list(rt) + list(vn) + list(gig)}):
        r, v = rt.get(str(size), {}), vn.get(str(size), {})
        g, c = gig.get(str(size), {}), ceil.get(str(size), {})
        lat, rtt = r.get("latency_us", {}), v.get("rtt_us", {})
        star = "*" if v and v.get("frame") != size else ""
        rows.append(
            f"| {size}{star} | {fmt(r.get('throughput_pct'), 1)} | "
            f"{fmt(r.get('throughput_pct_retried'), 1)} | "
            f"{fmt(r.get('confirm', {}).get('lost'), 0)} | {fmt(r.get('fps'), 0)} | "
            f"{fmt(lat.get('p50'), 0)} / {fmt(lat.get('p99'), 0)} / {fmt(lat.get('p99.9'), 0)} / "
            f"{fmt(lat.get('max'), 0)} | {fmt(g.get('fps'), 0)} | {fmt(g.get('fps_retried'), 0)} | "
            f"{fmt(g.get('pct_of_xdp_ceiling'), 1)} | {fmt(c.get('rx_fps'), 0)} | "
            f"{fmt(v.get('mbps'), 1)} | "
            f"{fmt(v.get('pct_of_nrt_capacity'), 0)} | {fmt(rtt.get('p50'), 0)} / "
            f"{fmt(rtt.get('p99'), 0)} / {fmt(rtt.get('max'), 0)} |"
        )
    return "\n".join(rows)


def vnic_table(results: dict) -> str:
    runs = results.get("vnic_cost", {}).get("runs", {})
    rows = [
        "| path / protocol | goodput (Mbit/s) | lab CPU s per GB | x kernel path | "
        "lab CPU above idle TDMA: s per GB | x kernel path | "
        "stack threads CPU s | context switches per packet (over idle) | "
        "pump wake-ups per packet | copies per byte (to the wire / to Linux) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for key, r in runs.items():
        if key.endswith("/idle"):
            continue
        proto = key.split("/")[1]
        # TCP against its primary baseline (the MTU-frame kernel path at the same rate
        # where the run has it), UDP against kernel UDP
        k = runs.get(tcp_baseline(runs)[0] if proto == "tcp" else f"kernel/{proto}", {})
        ratio = (
            (r["cpu_s_per_gb"] / k["cpu_s_per_gb"])
            if r.get("cpu_s_per_gb") and k.get("cpu_s_per_gb")
            else None
        )
        marg = r.get("marginal_cpu_s_per_gb")
        mratio = marg / k["cpu_s_per_gb"] if marg is not None and k.get("cpu_s_per_gb") else None
        rows.append(
            f"| {key} | {fmt(r.get('goodput_mbps'), 1)} | {fmt(r.get('cpu_s_per_gb'), 2)} | "
            f"{fmt(ratio, 2)} | {fmt(marg, 2)} | {fmt(mratio, 2)} | "
            f"{fmt(r.get('stack_cpu_s'), 3)} | "
            f"{fmt(r.get('csw_per_packet'), 3)} | {fmt(r.get('pump_wakeups_per_packet'), 3)} | "
            f"{fmt(r.get('tx_copies_per_byte'), 2)} / {fmt(r.get('rx_copies_per_byte'), 2)} |"
        )
    return "\n".join(rows)


def udp_table(results: dict) -> str:
    """The RT application behind the TDMA gate over stamped UDP sockets minus the raw
    EtherType channel, same run and cycle; two-sided: |difference| <= the target."""
    rows = [
        "| cell | raw EtherType p99 | UDP/IPv4 p99 | UDP minus raw | verdict "
        f"(within +-{T_UDP_P99_US:g}) |",
        "|---|---:|---:|---:|---|",
    ]
    for key, v in results["udp_vs_raw"].items():
        d = v["p99_diff_us"]
        rows.append(
            f"| {key} | {fmt(v['raw_p99_us'], 1)} | {fmt(v['udp_p99_us'], 1)} | "
            f"{'+' if d >= 0 else ''}{fmt(d, 1)} | "
            f"{verdict(d, T_UDP_P99_US, 'abs_at_most')} |"
        )
    return "\n".join(rows)


def tables(results: dict) -> str:
    out = []
    if results["matrix"]:
        for key, name in METRICS:
            out.append(
                f"## a. true end-to-end latency, {name} ({'count' if key == 'missed' else 'us'})"
            )
            out.append(matrix_table(results, key))
        if results.get("udp_vs_raw"):
            out.append("## a. what UDP/IPv4 adds to the raw EtherType channel at p99 (us)")
            out.append(udp_table(results))
    if results["wakeup"]:
        out.append("## b. wake-up latency and slot lateness next to cyclictest (us)")
        out.append(wakeup_table(results))
    if results["rfc2544"]:
        out.append("## c. RFC 2544")
        out.append(rfc_table(results))
        for key, mbps in bench_frer.keys(results):
            out.append(f"## c. RFC 2544, 1 port against 2 ports (IEEE 802.1CB), {mbps} Mbit/s")
            out.append(bench_frer.table(results, key))
        if bench_frer.keys(results):
            out.append(bench_frer.cut_summary(results))
    if results.get("vnic_cost"):
        out.append("## d. VNIC cost at 100 Mbit/s offered")
        out.append(vnic_table(results))
    return "\n\n".join(out)
