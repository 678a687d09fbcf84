#!/usr/bin/env python3
"""The source documents' measurements in one command, on the lab.

a. Determinism matrix (seeds/000): {standard, RT application} x {no gate
   (NoMAC), TDMA gate} under {idle, CPU load, network flood, both}; true
   end-to-end latency from the scheduled send time to the subscriber taking
   the message, on a 1 ms cycle.  Behind the TDMA gate the RT application
   also sends over stamped UDP/IPv4 sockets in the same run (column rt-udp),
   and the p99 it adds to the raw EtherType channel is printed (target: within
   5 us either way).
b. Wake-up latency of the RT thread and the RT application, TDMA slot
   lateness, next to cyclictest under the same load in the same run.
c. RFC 2544 (seeds/001): zero-loss throughput by binary search and latency
   per frame size, on the real-time path (NoMAC, the RT thread's generator;
   modelled at 100 and 1000 Mbit/s, --link-rates) next to the path's ceiling
   in the same run (a raw AF_XDP flood, tools/bench_xdp_flood.py), and
   through the VNIC (TDMA, iperf3 UDP; ping for latency).  --parts c-rt or
   c-vnic runs one half; c-frer the RT path again with IEEE 802.1CB redundancy
   (two ports, two wires; tools/bench_frer.py) and the wire-cut runs.
d. VNIC CPU and context-switch cost at 100 Mbit/s next to the kernel path
   (seeds/003), by vnic/bench.py.

    python3 -m tools.bench_suite          # the protocol's runs (3), each about an hour; BENCHMARKS.md
    python3 -m tools.bench_suite --quick  # one run of a few minutes, a smoke test for CI

The rules (trial lengths, rates, repeats, what counts as disturbed, how latency is
sampled, how many runs) are the protocol's, tools/bench_protocol.toml, explained in
docs/benchmark-protocol.md; a flag that overrides one is recorded in the results.

Every run is a process of its own with fresh labs; its JSON and log go to
--out-dir/<git sha>/run-<k>/ (results/ by default), and --out-dir/<git sha>/manifest.json
lists every run made with that code, failed ones with the reason.  The report
(BENCHMARKS.md at the repository root, its figures in docs/figures/; --quick: in
--out-dir) shows every figure as the median of the ok runs with the min and max, and
--out-dir/bench_suite.json holds those medians.

CPU plan on this 2-vCPU machine: CPU 1 is reserved for real-time work (both
stations' RT threads, the RT application, the subscriber, cyclictest);
the CPU load is stress-ng on CPU 0 only.  Standard applications are not
pinned and run SCHED_OTHER.  RFC 2544 on the RT path (no load runs then) puts
the receiving station on CPU 0, like the receiver of its ceiling.

This module is the command and its runs (each a process of its own, the manifest, the
median of the ok runs); the rest is split by job: suite_args (the command line and the
protocol's defaults), suite_measure (one run), suite_matrix (parts a and b), suite_rfc2544
and suite_vnic (part c), suite_lab and suite_config (what the parts share), and
bench_suite_report with suite_tables, suite_headlines, suite_figures and suite_discussion
(the report).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys

from rtnet.sigterm import unwind_on_sigterm
from tools import bench_suite_report as report
from tools.bench_aggregate import merge
from tools.bench_runs import code_version, open_manifest, recorded_run, write_json
from tools.suite_args import parse_args
from tools.suite_config import ROOT
from tools.suite_lab import log
from tools.suite_measure import measure

CHILD = [sys.executable, "-m", "tools.bench_suite"]  # what a run is: this module, --one-run


class RunFailed(Exception):
    """A run that ended without complete results (its reason, for the manifest)."""


def run_once(args, argv, run_dir: str) -> tuple[str, str]:
    """One run in a process of its own (``--one-run``), its output to the console and to
    run_dir/log.txt: ("ok", "") or ("failed", the reason)."""
    cmd = [*CHILD, *argv, "--one-run", run_dir]
    out_json = os.path.join(run_dir, "bench_suite.json")
    last = ""
    with open(os.path.join(run_dir, "log.txt"), "w") as logf:
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT
        )
        try:
            for line in proc.stdout:
                sys.stdout.write(line)
                sys.stdout.flush()
                logf.write(line)
                if line.strip():
                    last = line.strip()
            rc = proc.wait()
        except BaseException:
            # Ctrl-C or a signal: the run stops and takes its labs down (SIGTERM, which
            # a child started from a shell's background job hears; SIGINT it may ignore)
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=120)
            raise
    if rc != 0:
        return "failed", f"exit status {rc}: {last[:300]}"
    try:
        with open(out_json) as f:
            json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        return "failed", f"no complete results file: {e}"
    return "ok", ""


def run_suite(args, argv) -> int:
    """``--runs`` runs, each listed in the manifest of this code, then the report from
    the ok ones."""
    version = code_version()
    base = os.path.join(args.out_dir, version)
    man_path, man = open_manifest(base, version)
    command = " ".join(["python3 -m tools.bench_suite", *argv])
    made = []
    for _ in range(args.runs):
        with recorded_run(man, man_path, command, (RunFailed,), protocol=args.protocol_info) as (
            entry,
            run_dir,
        ):
            log(f"# run {len(made) + 1} of {args.runs}: {run_dir}")
            status, reason = run_once(args, argv, run_dir)
            if status != "ok":
                raise RunFailed(reason)
        made.append(entry)
        reason = entry.get("reason")
        log(f"# run {entry['run']}: {entry['status']}{': ' + reason if reason else ''}")
    ok = [os.path.join(base, e["dir"], "bench_suite.json") for e in made if e["status"] == "ok"]
    if not ok:
        print(
            f"bench_suite.py: no run of {args.runs} ended well; the manifest {man_path} lists why",
            file=sys.stderr,
        )
        return 1
    results = combine(ok, command, man_path, made)
    return write_outputs(
        args,
        results,
        os.path.join(args.out_dir, "bench_suite.json"),
        vnic_png=os.path.join(os.path.dirname(ok[0]), "bench_suite_vnic.png"),
    )


def combine(paths: list, command: str, manifest: str, made: list) -> dict:
    """The report's results from the ok runs' files: every number the median of the runs'
    (bench_aggregate.merge), the headlines with every run's value."""
    runs = []
    for p in paths:
        with open(p) as f:
            runs.append(json.load(f))
    out = merge(runs)
    env = out["envelope"] = dict(runs[0]["envelope"])
    env.update(
        command=command,
        start_time=min(r["envelope"]["start_time"] for r in runs),
        end_time=max(r["envelope"].get("end_time", "") for r in runs),
        seconds=sum(r["envelope"].get("seconds", 0) for r in runs),
    )
    out["runs"] = {
        "manifest": os.path.relpath(manifest, ROOT)
        if manifest.startswith(ROOT + os.sep)
        else manifest,
        "made": len(made),
        "ok": len(runs),
        "failed": [
            {"run": e["run"], "reason": e.get("reason", "")} for e in made if e["status"] != "ok"
        ],
        "files": [os.path.relpath(p, ROOT) if p.startswith(ROOT + os.sep) else p for p in paths],
        "headlines": report.headline_rows(runs),
    }
    return out


def from_manifest(path: str) -> tuple[list, list]:
    """The ok runs a manifest lists: their results files, and the entries."""
    with open(path) as f:
        man = json.load(f)
    base = os.path.dirname(os.path.abspath(path))
    made = man["runs"]
    return [
        os.path.join(base, e["dir"], "bench_suite.json") for e in made if e["status"] == "ok"
    ], made


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.from_json:
        try:
            with open(args.from_json) as f:
                doc = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            print(f"bench_suite.py: {args.from_json}: {e}", file=sys.stderr)
            return 2
        if "runs" in doc and "code" in doc:  # a manifest: every ok run it lists
            paths, made = from_manifest(args.from_json)
            if not paths:
                print(f"bench_suite.py: {args.from_json} lists no ok run", file=sys.stderr)
                return 2
            doc = combine(paths, doc["runs"][-1]["command"], args.from_json, made)
            return write_outputs(
                args,
                doc,
                os.path.join(args.out_dir, "bench_suite.json"),
                vnic_png=os.path.join(os.path.dirname(paths[0]), "bench_suite_vnic.png"),
            )
        return write_outputs(args, doc, args.from_json)
    try:
        if args.one_run:
            args.out_dir = args.one_run
            results = measure(args, [a for a in argv])
            write_json(os.path.join(args.one_run, "bench_suite.json"), results)
            log(
                f"# saved {os.path.join(args.one_run, 'bench_suite.json')} "
                f"({results['envelope']['seconds']:.0f} s)"
            )
            return 0
        return run_suite(args, argv)
    except KeyboardInterrupt:
        print("bench_suite.py: interrupted", file=sys.stderr)
        return 130


def write_outputs(args, results: dict, path: str, vnic_png: str | None = None) -> int:
    """Figures, the report and the tables from ``results``; saves them to ``path``."""
    figures = report.figures(results, args.figures_dir)
    src = vnic_png or os.path.join(args.out_dir, "bench_suite_vnic.png")
    if results.get("vnic_cost") and os.path.exists(src):
        dst = os.path.join(args.figures_dir, "d_vnic_cost.png")
        shutil.copyfile(src, dst)
        figures["d"] = dst
    results["figures"] = figures
    write_json(path, results)
    text = report.markdown(results, args.report)
    tmp = f"{args.report}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, args.report)
    log(report.tables(results))
    log(
        f"# saved {path}, {args.report} and {len(figures)} figures in {args.figures_dir} "
        f"({results['envelope']['seconds']:.0f} s of measurement)"
    )
    return 0


if __name__ == "__main__":
    unwind_on_sigterm()  # stopped with SIGTERM, a run takes its lab down as on Ctrl-C
    sys.exit(main())
