"""The VNIC's cost over repeated runs: ``vnic bench`` at each link rate, ``--runs`` times,
every run kept, the headlines as the median with the runs' minimum and maximum, judged
against their targets by the median (docs/benchmark-protocol.md, "Runs and what a figure
is"; a spread larger than the gap to the target is "not resolved on this machine").

    python3 -m tools.bench_vnic [--runs 3] [--link-rates 100,1000] [--seconds 5]
                                [--series NAME] [--out-dir results] [--benchmarks]
                                [--xdp-mode auto|native|skb] [--wake-early]
    python3 -m tools.bench_vnic --report results/bench_vnic/NAME/manifest.json [...] [--benchmarks]

Each run writes ``run-k/vnic_<rate>.json`` and ``.log`` under
``--out-dir/bench_vnic/<series or code>/``, listed in the manifest there (a run that
fails or is interrupted stays listed, marked failed).  ``--benchmarks`` puts the report
in its own section of BENCHMARKS.md.

The targets are those of the VNIC cost (DESIGN.md, and the figures the TAP work off the
RT thread was to reach): at 100 Mbit/s modelled, batched TCP at least 90% of the
window's TCP capacity, at most 2x the CPU per byte of the kernel path with MTU-sized
frames on the wire in total and 1.5x above an idle TDMA run, at most 0.01 context
switches per packet, and the per-packet mode at least 1; at 1000 Mbit/s modelled at least
600 Mbit/s with the RT slots missed at most the idle run's plus 10%; and at both, the RT
slot's lateness p99 under the flow within the idle run's p99 + 5 us.

The runs above 100 Mbit/s have the stall detector as a witness (``vnic bench --witness``):
the misses and lateness targets are judged on the slot occurrences outside the spans the
hypervisor took a CPU, the raw figures shown beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

from rtnet.argtypes import OneLineParser, integer
from rtnet.benchkit import RT_CPU_HELP, rt_cpu_arg
from rtnet.config import XDP_MODES
from rtnet.sigterm import unwind_on_sigterm
from tools import bench_section
from tools.bench_aggregate import headline_table
from tools.bench_runs import code_version, open_manifest, recorded_run
from vnic.bench_report import SAME_RATE_KEY, tcp_baseline

MAX_RUNS = 20
DEFAULT_RATES = (100, 1000)
T_GOODPUT_PCT = 90.0  # batched TCP, % of the window's TCP capacity (100 Mbit/s)
T_CPU_X_MTU = 2.0  # lab CPU per byte / the MTU-frame kernel path's
T_CPU_ABOVE_IDLE_X_MTU = 1.5  # the same above an idle TDMA run
T_CSW_BATCHED = 0.01  # context switches per packet, batched
T_CSW_PER_PACKET = 1.0  # ... per-packet mode: the seed's design, at least one
T_GOODPUT_1000 = 600.0  # Mbit/s, batched TCP at 1000 Mbit/s modelled
T_MISSED_X_IDLE = 1.1  # RT slots missed under the flow / the idle run's
T_LATENESS_EXTRA_US = 5.0  # RT slot lateness p99 under the flow minus idle p99
SECTION_BEGIN = (
    "<!-- bench_vnic: begin (python3 -m tools.bench_vnic --benchmarks writes this section) -->"
)
SECTION_END = "<!-- bench_vnic: end -->"


class VnicBenchError(Exception):
    """One clear line for the command line."""


def _ratio(a, b):
    return a / b if a is not None and b else None


def headlines(run: dict) -> list[dict]:
    """One run's headline figures at one link rate: dicts of label, value, target, kind,
    unit (target and kind None for a figure shown without a target)."""
    runs, cfg = run["runs"], run["config"]
    rate = cfg["link_rate_mbps"]
    b, pp = runs.get("batched/tcp", {}), runs.get("per-packet/tcp", {})
    base_key, base_name = tcp_baseline(runs)
    kbase, ktso = runs.get(base_key, {}), runs.get("kernel/tcp", {})
    rows = []

    def add(label, value, target=None, kind=None, unit="", nd=2):
        rows.append(
            {
                "label": f"{rate} Mbit/s: {label}",
                "value": value,
                "target": target,
                "kind": kind,
                "unit": unit,
                "nd": nd,
            }
        )

    late = (
        b["rt_lateness_p99_us"] - b["idle_rt_lateness_p99_us"]
        if b.get("rt_lateness_p99_us") is not None
        else None
    )
    # a witness run judges the RT targets on what the VM's stalls did not disturb
    witnessed = b.get("rt_lateness_p99_outside_us") is not None
    late_outside = (
        b["rt_lateness_p99_outside_us"] - b["idle_rt_lateness_p99_outside_us"]
        if witnessed and b.get("idle_rt_lateness_p99_outside_us") is not None
        else None
    )
    if rate <= 100:
        add(
            "batched TCP goodput, % of the window's TCP capacity",
            _ratio(100 * (b.get("goodput_mbps") or 0), cfg.get("master_tcp_capacity_mbps")),
            T_GOODPUT_PCT,
            "at_least",
            "%",
            1,
        )
    else:
        add("batched TCP goodput", b.get("goodput_mbps"), T_GOODPUT_1000, "at_least", "Mbit/s", 1)
    add(
        f"batched TCP lab CPU per byte / {base_name}",
        _ratio(b.get("cpu_s_per_gb"), kbase.get("cpu_s_per_gb")),
        T_CPU_X_MTU if rate <= 100 else None,
        "at_most" if rate <= 100 else None,
        "x",
    )
    probe = b.get("rt_probe_cpu_s_per_gb")
    if probe is not None and b.get("cpu_s_per_gb") is not None:
        # beside the total, the same without the benchmark's own RT frames (vnic/bench.py's
        # RT probe, which the kernel path has not): context for the target, not a verdict
        add(
            f"batched TCP lab CPU per byte without the RT probe's frames / {base_name}",
            _ratio(b["cpu_s_per_gb"] - probe, kbase.get("cpu_s_per_gb")),
            unit="x",
        )
    add(
        f"batched TCP lab CPU per byte above idle / {base_name}",
        _ratio(b.get("marginal_cpu_s_per_gb"), kbase.get("cpu_s_per_gb")),
        T_CPU_ABOVE_IDLE_X_MTU if rate <= 100 else None,
        "at_most" if rate <= 100 else None,
        "x",
    )
    if base_key == SAME_RATE_KEY and runs.get("kernel-mtu/tcp", {}).get("cpu_s_per_gb"):
        # beside it, the baseline earlier runs were judged against: the whole link's rate
        add(
            "batched TCP lab CPU per byte / MTU-frame kernel path's at the offered rate",
            _ratio(b.get("cpu_s_per_gb"), runs["kernel-mtu/tcp"]["cpu_s_per_gb"]),
            unit="x",
        )
    # the CPU above idle by where it goes, next to the whole of the baseline's
    by_part = b.get("above_idle_s_per_gb_by_part") or {}
    for part, who in (
        ("rtnet-rt", "RT threads"),
        ("rtnet-vnic", "VNIC pumps"),
        ("rest", "applications and Linux in their name"),
    ):
        if part in by_part:
            add(f"batched TCP CPU s/GB above idle: {who}", by_part[part])
    if by_part:
        path = base_name.replace("path's", "path")
        add(f"CPU s/GB of the {path}, all of it", kbase.get("cpu_s_per_gb"))
    add(
        "batched TCP lab CPU per byte / TSO kernel path's",
        _ratio(b.get("cpu_s_per_gb"), ktso.get("cpu_s_per_gb")),
        unit="x",
    )
    add(
        "batched TCP context switches per packet (over idle)",
        b.get("csw_per_packet"),
        T_CSW_BATCHED if rate <= 100 else None,
        "at_most" if rate <= 100 else None,
        nd=3,
    )
    add("batched TCP pump wake-ups per packet", b.get("pump_wakeups_per_packet"), nd=3)
    add("batched TCP copies per byte, to the wire", b.get("tx_copies_per_byte"))
    add("batched TCP copies per byte, to Linux", b.get("rx_copies_per_byte"))
    add(
        "per-packet TCP context switches per packet (over idle)",
        pp.get("csw_per_packet"),
        T_CSW_PER_PACKET if rate <= 100 else None,
        "at_least" if rate <= 100 else None,
        nd=3,
    )
    add(
        "batched TCP RT slot lateness p99 minus idle p99",
        late,
        None if witnessed else T_LATENESS_EXTRA_US,
        None if witnessed else "at_most",
        "us",
        1,
    )
    if witnessed:
        add(
            "batched TCP RT slot lateness p99 outside VM stalls minus idle's",
            late_outside,
            T_LATENESS_EXTRA_US,
            "at_most",
            "us",
            1,
        )
    if rate > 100:
        add(
            "batched TCP RT slots missed / idle run's",
            _ratio(b.get("rt_slot_missed"), b.get("idle_rt_slot_missed")),
            None if witnessed else T_MISSED_X_IDLE,
            None if witnessed else "at_most",
            "x",
        )
        if witnessed:
            # the target on the misses the lab caused: those outside the VM's stalls, as a
            # difference (the idle run's are often none, where a ratio says nothing)
            add(
                f"batched TCP RT slots missed outside VM stalls minus {T_MISSED_X_IDLE:g}x "
                "the idle run's",
                b["rt_slot_missed_outside"] - T_MISSED_X_IDLE * b["idle_rt_slot_missed_outside"],
                0.0,
                "at_most",
                "",
                1,
            )
            add(
                "batched TCP RT slots missed in VM stalls (idle run's)",
                b.get("rt_slot_missed_in_stalls"),
                nd=0,
            )
    return rows


def report(runs_by_rate: dict, made: list, where: str, code: str) -> str:
    """Markdown: the headlines over every kept run, each run's table, and where they are.
    A headline is matched by its label across the runs: a run without it (made before
    that figure existed) is left out of that headline's median."""
    L = [
        "## VNIC cost over repeated runs",
        "",
        f"`python3 -m tools.bench_vnic` ({where}): `vnic bench` at each link rate, "
        f"{len(made)} run(s) that ended well of code {code}, every run made listed in the "
        f"manifest{'s' if ', ' in where else ''}; a headline is "
        "the median with the runs' minimum and maximum, and its verdict is the median's "
        '("not resolved on this machine" when the spread is larger than the gap to the '
        "target). TCP's primary baseline is the kernel path with MTU-sized frames on the "
        "wire (TSO, GSO and GRO off on the veths), as a TDMA segment carries them, offered "
        "the batched VNIC's TCP goodput in the same run (runs before that baseline existed: "
        "offered the whole link's rate). CPU per byte is compared at the same rate because "
        "part of a flow's CPU does not grow with its rate (iperf3's pacing timer, TCP's "
        "timers): a slower flow costs more per byte on any path. Each run's heading says "
        "where its threads ran: a run that kept a CPU for the RT threads started iperf3 on "
        "the others, for the kernel paths as for the VNIC.",
        "",
    ]
    rows = {}
    for rate in sorted(runs_by_rate):
        per_run = [{h["label"]: h for h in headlines(r)} for r in runs_by_rate[rate]]
        for run in per_run:
            for label, h in run.items():
                rows.setdefault(
                    label,
                    {**h, "values": [p[label]["value"] if label in p else None for p in per_run]},
                )
    L += [headline_table(list(rows.values())), ""]
    for rate in sorted(runs_by_rate):
        for entry, r in zip(made, runs_by_rate[rate]):
            series = f" of {entry['series']}" if "series" in entry else ""
            xdp = r["config"].get("xdp_mode_used")
            cc = r["config"].get("tcp_cc")
            L += [
                f"Run {entry['run']}{series}, {rate} Mbit/s modelled "
                f"({r['config'].get('cpu_method', '?')}{f', XDP {xdp}' if xdp else ''}"
                f"{f', TCP {cc}' if cc else ''}{cpus_said(r['config'])}"
                f"{', RT threads waking early' if r['config'].get('wake_early') else ''}):",
                "",
                "```",
                r["table"],
                "```",
                "",
            ]
    return "\n".join(L)


def load_runs(man_path: str) -> tuple[dict, list, str]:
    """The kept runs of a manifest: {rate: [results]}, their manifest entries, and the
    code they measured."""
    try:
        with open(man_path) as f:
            man = json.load(f)
    except (OSError, ValueError) as exc:
        raise VnicBenchError(f"--report {man_path}: {exc}") from None
    base = os.path.dirname(man_path)
    runs_by_rate, made = {}, []
    for entry in man.get("runs", []):
        if entry.get("status") != "ok":
            continue
        got = {}
        for rate in entry.get("link_rates", []):
            path = os.path.join(base, entry["dir"], f"vnic_{rate}.json")
            try:
                with open(path) as f:
                    got[rate] = json.load(f)
            except (OSError, ValueError) as exc:
                raise VnicBenchError(f"run {entry['run']}: {path}: {exc}") from None
        for rate, res in got.items():
            runs_by_rate.setdefault(rate, []).append(res)
        made.append(entry)
    if not made:
        raise VnicBenchError(f"{man_path}: no run ended well")
    return runs_by_rate, made, str(man.get("code", "?"))


def load_series(man_paths: list) -> tuple[dict, list, str, str]:
    """The kept runs of one or more manifests pooled: {rate: [results]}, their manifest
    entries (named by series when there are several), where they are and the codes they
    measured (pooling is for series of the same code: the report names each)."""
    if len(man_paths) == 1:
        runs_by_rate, made, code = load_runs(man_paths[0])
        return runs_by_rate, made, man_paths[0], code
    runs_by_rate, made, codes = {}, [], []
    for path in man_paths:
        by_rate, entries, code = load_runs(path)
        series = os.path.basename(os.path.dirname(os.path.abspath(path)))
        for rate in by_rate:
            if len(by_rate[rate]) != len(entries):
                raise VnicBenchError(f"{path}: not every run has {rate} Mbit/s")
        if made and set(by_rate) != set(runs_by_rate):
            raise VnicBenchError(f"{path}: link rates {sorted(by_rate)} differ from the others'")
        for rate, res in by_rate.items():
            runs_by_rate.setdefault(rate, []).extend(res)
        made += [{**e, "series": series} for e in entries]
        codes.append(code)
    return runs_by_rate, made, ", ".join(man_paths), ", ".join(dict.fromkeys(codes))


def cpus_said(config: dict) -> str:
    """Where a run's RT threads and applications ran, for its heading ("" for runs from
    before vnic bench recorded it, when nothing was pinned)."""
    if "rt_cpu" not in config:
        return ""
    if config["rt_cpu"] is None:
        return ", nothing pinned"
    apps = ",".join(map(str, config.get("app_cpus") or []))
    return f", RT threads on CPU {config['rt_cpu']}, iperf3 and pumps on {apps}"


def one_run(
    rdir: str, rates, seconds: int, xdp_mode: str = "auto", rt_cpu="auto", wake_early=False
) -> dict:
    """``vnic bench`` at each of ``rates``, its JSON and log in ``rdir``."""
    from vnic import bench

    out = {}
    with tempfile.TemporaryDirectory(prefix="rtn-vnic-png-") as png_dir:
        for rate in rates:
            log_path = os.path.join(rdir, f"vnic_{rate}.log")
            with open(log_path, "w") as logf:

                def log(line, logf=logf):
                    print(line, flush=True)
                    print(line, file=logf, flush=True)

                out[rate] = bench.run(
                    seconds=seconds,
                    link_rate_mbps=rate,
                    out_json=os.path.join(rdir, f"vnic_{rate}.json"),
                    out_png=os.path.join(png_dir, f"vnic_{rate}.png"),
                    log=log,
                    # where RT slot misses are a target, the stall detector tells the VM's
                    witness=rate > 100,
                    xdp_mode=xdp_mode,
                    rt_cpu=rt_cpu,
                    wake_early=wake_early,
                )
    return out


def rates_arg(text: str) -> tuple[int, ...]:
    from rtmac.tdma_config import MAX_LINK_RATE_MBPS

    try:
        rates = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"link rates {text!r}: comma-separated integers") from None
    if not rates or any(not 1 <= r <= MAX_LINK_RATE_MBPS for r in rates):
        raise argparse.ArgumentTypeError(f"link rates {text!r}: each 1..{MAX_LINK_RATE_MBPS}")
    return rates


def parse_args(argv):
    ap = OneLineParser(prog="bench_vnic", description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=integer("runs", 1, MAX_RUNS), default=3)
    ap.add_argument("--link-rates", type=rates_arg, default=DEFAULT_RATES)
    ap.add_argument("--seconds", type=integer("seconds", 1, 600), default=5)
    ap.add_argument(
        "--series",
        default="",
        help="directory name (default: the code's sha, and the XDP mode when not auto)",
    )
    ap.add_argument(
        "--xdp-mode",
        choices=XDP_MODES,
        default="auto",
        help="the stations' XDP attach mode (vnic bench --xdp-mode)",
    )
    ap.add_argument(
        "--rt-cpu", type=rt_cpu_arg, default="auto", metavar="{auto,none,N}", help=RT_CPU_HELP
    )
    ap.add_argument(
        "--wake-early",
        action="store_true",
        help="the stations' RT threads wake before their slots (vnic bench --wake-early)",
    )
    ap.add_argument("--out-dir", default="results")
    ap.add_argument(
        "--report",
        metavar="MANIFEST",
        nargs="+",
        help="report the runs of a manifest, or of several pooled (series of the same code)",
    )
    ap.add_argument("--benchmarks", nargs="?", const="BENCHMARKS.md", default=None)
    a = ap.parse_args(argv)
    if a.series and (os.sep in a.series or a.series in (".", "..")):
        ap.error(f"--series {a.series!r}: a plain directory name")
    return a


def series_name(version: str, a) -> str:
    """A series' default directory: the code's sha, and the XDP mode and the RT CPU when
    not auto, and -wake-early when the RT threads wake early."""
    name = version if a.xdp_mode == "auto" else f"{version}-xdp-{a.xdp_mode}"
    name = name if a.rt_cpu == "auto" else f"{name}-rtcpu-{a.rt_cpu}"
    return f"{name}-wake-early" if a.wake_early else name


def write_report(text: str, benchmarks: str | None) -> None:
    print(text)
    if benchmarks:
        try:
            bench_section.replace(
                benchmarks, SECTION_BEGIN, SECTION_END, f"{SECTION_BEGIN}\n{text}\n{SECTION_END}\n"
            )
        except OSError as exc:
            raise VnicBenchError(f"--benchmarks {benchmarks}: {exc.strerror}") from None


def kept_section(path: str) -> str:
    """This section of an existing BENCHMARKS.md ("" if none), for a writer that
    regenerates the rest of the page (tools/bench_suite_report.py)."""
    return bench_section.kept(path, SECTION_BEGIN, SECTION_END)


def main(argv=None) -> int:
    try:
        a = parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        if a.report:
            runs_by_rate, made, where, code = load_series(a.report)
            write_report(report(runs_by_rate, made, where, code), a.benchmarks)
            return 0
        if os.geteuid() != 0:
            raise VnicBenchError("needs root (network namespaces, AF_XDP, TAP)")
        version = code_version()
        try:
            man_path, man = open_manifest(
                os.path.join(a.out_dir, "bench_vnic", a.series or series_name(version, a)),
                version,
            )
        except OSError as exc:
            raise VnicBenchError(f"--out-dir {a.out_dir}: {exc.strerror}") from None
        command = " ".join(
            ["python3 -m tools.bench_vnic", *(sys.argv[1:] if argv is None else argv)]
        )
        runs_by_rate, made = {}, []
        for i in range(a.runs):
            # a lab that would not build, iperf3 gone: the run is kept, marked failed
            with recorded_run(man, man_path, command, link_rates=list(a.link_rates)) as (
                entry,
                rdir,
            ):
                print(f"# run {i + 1} of {a.runs}: {rdir}", flush=True)
                got = one_run(rdir, a.link_rates, a.seconds, a.xdp_mode, a.rt_cpu, a.wake_early)
            if entry["status"] != "ok":
                print(f"# run {entry['run']} failed: {entry['reason']}", file=sys.stderr)
                continue
            for rate, res in got.items():
                runs_by_rate.setdefault(rate, []).append(res)
            made.append(entry)
        if not made:
            raise VnicBenchError(f"no run of {a.runs} ended well; {man_path} lists why")
        write_report(report(runs_by_rate, made, man_path, version), a.benchmarks)
        return 0
    except VnicBenchError as exc:
        print(f"bench_vnic: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bench_vnic: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    unwind_on_sigterm()  # stopped with SIGTERM, a run takes its lab down as on Ctrl-C
    sys.exit(main())
