"""The report of tools/bench_sockperf.py: one run's targets and flags (derive), the
median [min..max] of the runs whose baselines agree, its section of BENCHMARKS.md, and the
runs a manifest lists."""

from __future__ import annotations

import json
import os
import sys

from tools import bench_section
from tools.bench_runs import write_json
from tools.sockperf_run import (
    BASELINE_TOL,
    COLUMNS,
    CYCLE_US,
    FLOOD_LEN,
    FLOOD_MBPS,
    LAB_NAME,
    PP_SIZE,
    ROOT,
    TP_SIZES,
    log,
)

PCTS = ("p50", "p99", "p99.9", "max")
TARGETS = {
    "interposer_p50_us": (2.0, "abs_at_most", "us"),
    "nomac_over_kernel_p50": (2.0, "at_most", "x"),
    "tdma_flood_p999_us": (2.0 * CYCLE_US, "at_most", "us"),
}


def _get(d, *path):
    for k in path:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def derive(res: dict) -> None:
    """The targets' figures of one run, its baseline check and where the time goes."""
    cols, extra = res["columns"], res["extra"]
    d = {}
    k50 = _get(cols, "kernel", "idle", "pp", "p50")
    n50 = _get(cols, "nomac", "idle", "pp", "p50")
    v50 = _get(cols, "native", "idle", "pp", "p50")
    x50 = _get(extra, "posix_rt", "p50")
    if n50 is not None and v50 is not None:
        d["interposer_p50_us"] = round(n50 - v50, 3)
    if x50 is not None and v50 is not None:
        d["interposer_posix_p50_us"] = round(x50 - v50, 3)
    pk50 = _get(extra, "posix_kernel", "p50")
    if x50 is not None and pk50:
        d["posix_rt_over_kernel_p50"] = round(x50 / pk50, 3)
    if n50 is not None and k50:
        d["nomac_over_kernel_p50"] = round(n50 / k50, 3)
    t999 = _get(cols, "tdma", "flood", "pp", "p99.9")
    if t999 is not None:
        d["tdma_flood_p999_us"] = t999
    kf999 = _get(cols, "kernel", "flood", "pp", "p99.9")
    if kf999 is not None:
        d["kernel_flood_p999_us"] = kf999
    # wake-ups per datagram and direction, from the stations' counters over sockperf's
    # idle ping-pong through rtnet-run (its server's channel is still open when they are
    # read, so its notifies count; the client's has closed with it): a station's RT thread
    # wakes once to send (its loops less its receive wake-ups) and once to receive
    pp = _get(cols, "nomac", "idle", "pp") or _get(cols, "native", "idle", "pp")
    if pp and pp.get("counters"):
        c1, c2 = (pp["counters"].get(f"rtn-{LAB_NAME}-s{i}", {}) for i in (1, 2))
        if c1.get("rx_udp") and c2.get("rx_udp"):

            def per(v, n):
                return round(v / n, 2) if n else None

            w = {}
            for name, tx, rx, app in (
                ("request (s1 -> s2)", c1, c2, True),
                ("reply (s2 -> s1)", c2, c1, False),
            ):
                n = rx["rx_udp"]
                w[name] = {
                    "sender's RT thread": per(tx["loops"] - tx["rx_wakeups"], n),
                    "receiver's RT thread": per(rx["rx_wakeups"], n),
                    "receiving application": per(rx["app_notifies"], n) if app else None,
                }
            d["wakeups_per_datagram"] = w
    st = extra.get("stamped") or {}
    if st.get("stages_n") and (st.get("server") or {}).get("stages_n"):
        d["stages_p50_us"] = {
            "request (s1 -> s2)": st["server"]["stages_p50_us"],
            "reply (s2 -> s1)": st["stages_p50_us"],
        }
        d["stages_p99_us"] = {
            "request (s1 -> s2)": st["server"].get("stages_p99_us"),
            "reply (s2 -> s1)": st.get("stages_p99_us"),
        }
    # baselines: the kernel's idle ping-pong at the start and at the end of the run
    end50 = _get(extra, "kernel_idle_end", "p50")
    flags = []
    if k50 and end50:
        gap = abs(k50 - end50) / min(k50, end50)
        d["baseline_gap"] = round(gap, 3)
        if gap > BASELINE_TOL:
            flags.append(
                f"idle baselines disagree: kernel p50 {k50:.1f} us at the start, "
                f"{end50:.1f} us at the end"
            )
    elif k50 is None or end50 is None:
        flags.append("no idle kernel baseline at the start or the end")
    disturbed = []
    for col, loads in cols.items():
        for load, ms in loads.items():
            for name, m in ms.items():
                if isinstance(m, dict) and m.get("disturbed"):
                    disturbed.append(f"{col}/{load}/{name}")
    for name, m in extra.items():
        if isinstance(m, dict) and m.get("disturbed"):
            disturbed.append(f"extra/{name}")
    res["derived"] = d
    res["disturbed"] = disturbed
    res["flags"] = flags


# ---- the report --------------------------------------------------------------------------


def report(runs: list[dict], made: list[dict]) -> tuple[str, dict]:
    """The median [min..max] of the runs whose baselines agree (all runs if none does)."""
    from tools.bench_aggregate import merge, show, verdict

    good = [r for r in runs if not r.get("flags")]
    used = good or runs
    m = merge(
        [{"columns": r["columns"], "extra": r["extra"], "derived": r["derived"]} for r in used]
    )
    cols, der = m["columns"], m["derived"]
    out = []
    n = len(used)
    out.append(
        f"sockperf {runs[0]['settings'].get('seconds')} s per measurement, "
        f"{PP_SIZE}-byte ping-pong (round trips, --full-rtt), median [min..max] "
        f"over {n} run{'s' if n != 1 else ''}"
        + (
            f" ({len(runs) - len(good)} flagged run(s) left out)"
            if good and len(good) < len(runs)
            else ""
        )
        + (
            "; EVERY run is flagged (see below): figures of all runs, not to be trusted"
            if not good
            else ""
        )
    )
    present = [c for c in COLUMNS if c in cols]
    for load in ("idle", "flood"):
        if not any(load in cols[c] for c in present):
            continue
        out.append("")
        out.append(f"| {load} | " + " | ".join(present) + " |")
        out.append("|---|" + "---:|" * len(present))
        for p in PCTS:
            out.append(
                f"| round trip {p}, us | "
                + " | ".join(show(_get(cols, c, load, "pp", p), 1) for c in present)
                + " |"
            )
        for size in TP_SIZES:
            if any(_get(cols, c, load, f"tp{size}") for c in present):
                out.append(
                    f"| throughput {size} B, offered (--mps) | "
                    + " | ".join(show(_get(cols, c, load, f"tp{size}", "mps")) for c in present)
                    + " |"
                )
                out.append(
                    f"| throughput {size} B, msg/s | "
                    + " | ".join(
                        show(_get(cols, c, load, f"tp{size}", "msgs_per_s"), 0) for c in present
                    )
                    + " |"
                )
                out.append(
                    f"| throughput {size} B, Mbit/s | "
                    + " | ".join(show(_get(cols, c, load, f"tp{size}", "mbps"), 1) for c in present)
                    + " |"
                )
                out.append(
                    f"| throughput {size} B, lost % | "
                    + " | ".join(
                        show(_get(cols, c, load, f"tp{size}", "loss_pct"), 1) for c in present
                    )
                    + " |"
                )
        if load == "flood":
            out.append(
                "| flood delivered, Mbit/s | "
                + " | ".join(
                    show(_get(cols, c, load, "pp", "flood_delivered_mbps"), 1) for c in present
                )
                + " |"
            )
        dist = [
            sum(1 for r in used for k in r.get("disturbed", []) if k.startswith(f"{c}/{load}/"))
            for c in present
        ]
        out.append("| disturbed measurements | " + " | ".join(str(x) for x in dist) + " |")
    out.append("")
    ex = m["extra"]
    out.append(
        "The same C ping-pong (tools/sockperf_native.c) three ways, idle, p50 us: "
        f"POSIX sockets on kernel UDP {show(_get(ex, 'posix_kernel', 'p50'), 1)}, "
        f"POSIX sockets through rtnet-run {show(_get(ex, 'posix_rt', 'p50'), 1)}, "
        f"native API {show(_get(cols, 'native', 'idle', 'pp', 'p50'), 1)}."
    )
    out.append("")
    out.append("Targets (each against its same-run baseline):")
    lines = []

    def target(key, label, base):
        if key not in der:
            lines.append(f"- {label}: not measured")
            return
        t, kind, unit = TARGETS[key]
        v = verdict(der[key], t, kind)
        sym = {"abs_at_most": "|x| <= ", "at_most": "<= "}[kind]
        note = ""
        if kind == "abs_at_most" and float(der[key]) < -t:
            note = (
                " (negative: the native API's column was the slower one, so this "
                "measurement does not resolve a difference of this size)"
            )
        lines.append(
            f"- {label}: {show(der[key], 2)} {unit} (target {sym}{t:g} {unit}; "
            f"{base}): {v.upper() if v == 'missed' else v}{note}"
        )

    target(
        "interposer_p50_us",
        "interposer, sockperf through rtnet-run minus the native API at p50",
        f"nomac {show(_get(cols, 'nomac', 'idle', 'pp', 'p50'), 1)} us, native "
        f"{show(_get(cols, 'native', 'idle', 'pp', 'p50'), 1)} us",
    )
    if "interposer_posix_p50_us" in der:
        v = der["interposer_posix_p50_us"]
        vv = verdict(v, 2.0, "abs_at_most")
        lines.append(
            f"- interposer alone, the same C ping-pong over POSIX sockets through "
            f"rtnet-run minus the native API at p50: {show(v, 2)} us "
            f"(target |x| <= 2 us): {vv.upper() if vv == 'missed' else vv}"
            + (" (negative: the native API was the slower)" if float(v) < -2 else "")
        )
    target(
        "nomac_over_kernel_p50",
        "NoMAC over kernel UDP at p50, idle",
        f"nomac {show(_get(cols, 'nomac', 'idle', 'pp', 'p50'), 1)} us, kernel "
        f"{show(_get(cols, 'kernel', 'idle', 'pp', 'p50'), 1)} us",
    )
    target(
        "tdma_flood_p999_us",
        "TDMA p99.9 round trip under the flood",
        f"kernel UDP under the same flood: p99.9 "
        f"{show(_get(cols, 'kernel', 'flood', 'pp', 'p99.9'), 1)} us",
    )
    out += lines
    w = der.get("wakeups_per_datagram")
    if w:
        out.append("")
        out.append(
            "Wake-ups per datagram and direction (sockperf through rtnet-run, NoMAC, idle; "
            "the stations' counters; kernel UDP has one, the receiving application's; "
            "the client's own wake-ups are not counted, its channel closes with it):"
        )
        for dirn, items in w.items():
            out.append(
                f"- {dirn}: "
                + ", ".join(f"{k} {show(v, 2)}" for k, v in items.items() if v is not None)
            )
    s = der.get("stages_p50_us")
    if s:
        out.append("")
        out.append(
            "Where the time goes (stamped native datagrams, NoMAC, idle; per stage p50 "
            "[p99 in the first run] us: hand-over -> sender's RT thread (queue) -> TX "
            "(slot) -> receiver's XDP stamp (wire) -> receiver's RT thread (rx_rt) -> "
            "application (take)):"
        )
        for dirn, st in s.items():
            q = (runs[0]["derived"].get("stages_p99_us") or {}).get(dirn) or {}
            out.append(
                f"- {dirn}: "
                + ", ".join(
                    f"{k} {show(v, 1)}" + (f" [{q[k]:.0f}]" if k in q else "")
                    for k, v in st.items()
                )
            )
    flagged = [(r["run_index"], f) for r in runs for f in r.get("flags", [])]
    if flagged:
        out.append("")
        for k, f in flagged:
            out.append(f"Run {k} flagged: {f}")
    return "\n".join(out), m


# ---- BENCHMARKS.md -----------------------------------------------------------------------

SECTION_BEGIN = (
    "<!-- bench_sockperf: begin (tools/bench_sockperf.py --report MANIFEST "
    "--benchmarks writes this section) -->"
)
SECTION_END = "<!-- bench_sockperf: end -->"


def section(text: str, runs: list, man_path: str) -> str:
    """The section "Unmodified programs: sockperf" of BENCHMARKS.md from a report."""
    cmds = sorted({e for e in (r.get("command") for r in runs) if e})
    rel = os.path.relpath(man_path, ROOT) if man_path.startswith(ROOT + os.sep) else man_path
    codes = sorted({r.get("code", "?") for r in runs})
    st = runs[0]["settings"]
    return "\n".join(
        [
            SECTION_BEGIN,
            "## Unmodified programs: sockperf",
            "",
            "Debian's sockperf 3.7, unmodified, between the two stations of a lab: kernel UDP "
            "over rteth0 with no rtnetd (kernel), the real-time path under NoMAC through "
            "`rtnet-run` (nomac), the same path through the native API "
            "(`tools/sockperf_native.c`, a ping-pong in sockperf's manner on rtn_app.h; native) "
            f"and under TDMA at a {CYCLE_US} us cycle, master and slave with an RT slot and an "
            f"NRT window each, guard {st['tdma']['guard_us']} us, through `rtnet-run` (tdma). "
            f"Every run measures all four in turn on one fresh lab, {st['seconds']:g} s per "
            "measurement, and kernel UDP's idle ping-pong again at its end; a run whose two "
            f"idle baselines are more than {BASELINE_TOL:.0%} apart is flagged and left out. "
            "Ping-pong: 64-byte datagrams, round trips (`--full-rtt`). Throughput: what the "
            "server's station delivered to sockets over what sockperf sent, at `--mps max` (a "
            "rate sockperf fails at is retried at the next of a fixed ladder: max, 200k, 100k, "
            "50k, ...; the offered row says which). The flood is iperf3 UDP at "
            f"{FLOOD_MBPS} Mbit/s, {FLOOD_LEN}-byte datagrams, station 1 to station 2: over "
            "rteth0's kernel path for kernel UDP, through vnic0 (the stack's Linux path, "
            "RTmac frames on the same veths and bridge; under TDMA in the NRT windows) for "
            "the others; both share the lab's wire, the bridge. The stall detector runs on "
            "CPU 0; a measurement with 5 ms or more of gaps and slow spells is counted as "
            "disturbed (kept). The stations' RT threads are SCHED_FIFO and not pinned, the "
            "programs SCHED_OTHER (pinning both RT threads to CPU 1 put the application's "
            "wake-up p99 near 500 us).",
            "",
            "    "
            + (
                cmds[0]
                if len(cmds) == 1
                else "python3 -m tools.bench_sockperf --runs 1 --series S"
                " (one locked invocation per run)"
            ),
            f"    python3 -m tools.bench_sockperf --report {rel} --benchmarks",
            "",
            f"Code: {', '.join(codes)}. Raw runs: `{rel}` and the run directories beside it.",
            "",
            text.strip(),
            "",
            SECTION_END,
            "",
        ]
    )


def update_benchmarks(path: str, sec: str) -> None:
    """Replace this section of @p path, or append it."""
    bench_section.replace(path, SECTION_BEGIN, SECTION_END, sec)


def kept_section(path: str) -> str:
    """This section of an existing BENCHMARKS.md ("" if none), for a writer that
    regenerates the rest of the page (tools/bench_suite_report.py)."""
    return bench_section.kept(path, SECTION_BEGIN, SECTION_END)


# ---- runs, manifest ----------------------------------------------------------------------


def load_runs(man_path: str) -> tuple[list, list]:
    with open(man_path) as f:
        man = json.load(f)
    base = os.path.dirname(man_path)
    runs, made = [], []
    for e in man.get("runs", []):
        if e.get("status") != "ok":
            continue
        with open(os.path.join(base, e["dir"], "bench_sockperf.json")) as f:
            runs.append(json.load(f))
        made.append(e)
    return runs, made


def print_report(runs, made, out_dir: str, man_path: str, benchmarks: str | None = None) -> int:
    if not runs:
        print(f"bench_sockperf.py: no ok run in {man_path}", file=sys.stderr)
        return 1
    text, merged = report(runs, made)
    if benchmarks:
        for r, e in zip(runs, made):
            r.setdefault("command", e.get("command"))
        update_benchmarks(benchmarks, section(text, runs, os.path.abspath(man_path)))
        log(f'# section "Unmodified programs: sockperf" written to {benchmarks}')
    log("")
    log(text)
    path = os.path.join(out_dir, "bench_sockperf.json")
    write_json(
        path,
        {"manifest": man_path, "runs": [e["run"] for e in made], "report": text, "median": merged},
    )
    log(f"\n# saved {path}; raw runs listed in {man_path}")
    return 0
