#!/usr/bin/env python3
"""sockperf, unmodified, on the real-time path, next to kernel UDP (issue 22, item 7).

Four columns, measured in the same run on the same two-station lab, each next to the
others:

  kernel   plain Linux UDP between the stations over rteth0: no rtnetd on the stations;
  nomac    the real-time path under NoMAC, sockperf through rtnet-run (the interposer,
           librtnet_preload.so);
  native   the same path through the native API (rtn_app.h: rtn_app_open with udp_port,
           rtn_app_sendto, rtn_app_recvfrom): tools/sockperf_native.c, a ping-pong in the
           manner of sockperf's; nomac - native is the interposer's cost (and sockperf's
           own, which the same C program over POSIX sockets under rtnet-run separates);
  tdma     the real-time path under TDMA (1 ms cycle, master and slave, an RT slot and an
           NRT window each, planned by rtmac's planner), sockperf through rtnet-run.

For each: sockperf ping-pong round trips (p50, p99, p99.9, max; --full-rtt) at 64 bytes and
sockperf throughput (messages/s and Mbit/s delivered, at 64 and 1024 bytes: what the
server's station handed to sockets, the stack's ipv4.rx_udp less its rings' drops or the
kernel's Udp InDatagrams, over what the client sent), idle and under an iperf3 UDP flood that
shares the wire.  The flood is iperf3 between the two stations' Linux paths: over rteth0's
kernel path for the kernel column (there is no stack), through vnic0 for the stack's
columns (the stack's own Linux path, carried in RTmac frames over the same veths and
bridge; under TDMA in the NRT windows).  Its delivered rate is the receiver's device
counters over each measurement.

Targets (issue 22): the interposer adds at most 2 us at p50 to the native API's round
trip (|nomac - native| <= 2 us, judged two-sided); under NoMAC on an idle lab the real-time
path's p50 is at most 2x kernel UDP's; under the flood TDMA's p99.9 stays within 2 cycles
(2 ms), kernel UDP's beside it.  The stations' counters give the wake-ups per datagram
and direction (RT threads, the receiving application) and stamped native datagrams where
the time goes, stage by stage, in each direction.

    python3 -m tools.bench_sockperf [--runs 3] [--seconds 5]  # under flock /tmp/rtnet-lab.lock
    python3 -m tools.bench_sockperf --report results/bench_sockperf/<sha>/manifest.json
    python3 -m tools.bench_sockperf --runs 1 --series S  # one locked invocation per run, then:
    python3 -m tools.bench_sockperf --report results/bench_sockperf/S/manifest.json

Each run builds its lab fresh and takes it down.  A run's raw JSON goes to
results/bench_sockperf/<git sha>/run-<k>/bench_sockperf.json, listed in that directory's
manifest.json (failed runs with their reason); the report is the median [min..max] of the
ok runs (tools/bench_aggregate.py), written to results/bench_sockperf.json.  --report
prints the report of every ok run a manifest lists, so runs made by separate invocations
(one locked invocation per run) are reported together.

Disturbed: the stall detector (rtnet/stall.py) runs on CPU 0 through every run; a
measurement during which it saw at least 5 ms of gaps and slow spells is marked disturbed
and counted beside the figures (kept, as the benchmark protocol keeps latency trials).
Kernel UDP's idle ping-pong is measured at the start and again at the end of the run; a
run whose two idle baselines disagree (p50 more than 30% apart) is flagged and left out of
the medians.

The modules: tools/sockperf_run.py measures a run (its CPU plan and its ladder of offered
rates are explained there), tools/sockperf_output.py reads what sockperf prints, and
tools/sockperf_report.py judges the runs and writes the report.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

from rtnet.sigterm import unwind_on_sigterm
from tools.bench_runs import code_version, open_manifest, recorded_run, write_json
from tools.sockperf_output import BenchError
from tools.sockperf_report import derive, load_runs, print_report
from tools.sockperf_run import COLUMNS, ROOT, RT_CPU, Run, build_native, log, missing_tools

# ---- command line ------------------------------------------------------------------------


def parse_args(argv):
    from rtnet.argtypes import OneLineParser, integer, number

    ap = OneLineParser(
        prog="bench_sockperf.py",
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "--runs",
        type=integer("runs", 1, 20),
        default=3,
        help="independent runs, each with a fresh lab (default 3)",
    )
    ap.add_argument(
        "--seconds",
        type=number("seconds", 0.5, 120),
        default=5.0,
        help="each measurement (default 5)",
    )
    ap.add_argument(
        "--columns",
        default=",".join(COLUMNS),
        help="comma-separated subset of kernel,nomac,native,tdma (default all)",
    )
    ap.add_argument(
        "--no-flood", dest="flood", action="store_false", help="idle only (no iperf3 flood)"
    )
    ap.add_argument(
        "--no-throughput", dest="throughput", action="store_false", help="ping-pong only"
    )
    ap.add_argument(
        "--guard-us",
        type=integer("guard-us", 20, 400),
        default=150,
        help="TDMA RT slots' guard (default 150: this VM wakes late)",
    )
    ap.add_argument(
        "--rt-cpu",
        type=integer("rt-cpu", -1, (os.cpu_count() or 1) - 1),
        default=RT_CPU,
        help=f"the stations' RT threads' CPU (default {RT_CPU}; -1: not pinned)",
    )
    ap.add_argument(
        "--out-dir",
        default=os.path.join(ROOT, "results"),
        help="where results/bench_sockperf/<sha>/ goes (default results/)",
    )
    ap.add_argument(
        "--series",
        metavar="NAME",
        help="collect the runs under results/bench_sockperf/NAME/ instead of the "
        "git sha's directory (runs made by separate invocations while the "
        "tree moves on; each run still records its code)",
    )
    ap.add_argument(
        "--benchmarks",
        nargs="?",
        const=os.path.join(ROOT, "BENCHMARKS.md"),
        metavar="MD",
        help='with --report: write the section "Unmodified '
        'programs: sockperf" into MD (default BENCHMARKS.md)',
    )
    ap.add_argument(
        "--report", metavar="MANIFEST", help="report the ok runs a manifest lists; measure nothing"
    )
    a = ap.parse_args(argv)
    cols = [c.strip() for c in a.columns.split(",") if c.strip()]
    bad = [c for c in cols if c not in COLUMNS]
    if bad or not cols:
        ap.error(f"--columns {a.columns!r}: choose from {','.join(COLUMNS)}")
    # kernel UDP is every run's baseline (its idle ping-pong at the start and the end)
    a.columns = [c for c in COLUMNS if c in cols or c == "kernel"]
    if a.series is not None and not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", a.series):
        ap.error(f"--series {a.series!r}: use 1-64 letters, digits, '.', '_' or '-'")
    if a.benchmarks and not a.report:
        ap.error("--benchmarks needs --report MANIFEST")
    if a.report and not os.path.isfile(a.report):
        ap.error(f"--report {a.report}: no such file")
    return a


def main(argv=None) -> int:
    a = parse_args(sys.argv[1:] if argv is None else argv)
    if a.report:
        runs, made = load_runs(a.report)
        return print_report(runs, made, a.out_dir, a.report, a.benchmarks)
    if os.geteuid() != 0:
        print("bench_sockperf.py: needs root (network namespaces, AF_XDP)", file=sys.stderr)
        return 2
    problem = missing_tools(a.columns)
    if problem:
        print(f"bench_sockperf.py: {problem}", file=sys.stderr)
        return 2
    # the stations' daemons keep their sockets in a run directory of this benchmark's own
    run_dir = tempfile.mkdtemp(prefix="rtn-spk-run-")
    os.chmod(run_dir, 0o755)
    os.environ["RTNET_RUN_DIR"] = run_dir
    version = code_version()
    man_path, man = open_manifest(
        os.path.join(a.out_dir, "bench_sockperf", a.series or version), version
    )
    command = " ".join(
        ["python3 -m tools.bench_sockperf", *(sys.argv[1:] if argv is None else argv)]
    )
    conf_dir = tempfile.mkdtemp(prefix="rtn-spk-conf-")
    runs, made = [], []
    try:
        exe = build_native(conf_dir)
        for i in range(a.runs):
            run = Run(a, exe, conf_dir)
            try:
                with recorded_run(
                    man, man_path, command, (BenchError, OSError, subprocess.SubprocessError)
                ) as (entry, rdir):
                    k = entry["run"]
                    log(f"# run {i + 1} of {a.runs}: {rdir}")
                    res = run.measure(k)
                    derive(res)
                    res["code"] = version
                    write_json(os.path.join(rdir, "bench_sockperf.json"), res)
            finally:
                run.close()
            if entry["status"] != "ok":
                log(f"# run {k} failed: {entry['reason']}")
                continue
            runs.append(res)
            made.append(entry)
            for f in res["flags"]:
                log(f"# run {k} flagged: {f}")
    except KeyboardInterrupt:
        print("bench_sockperf.py: interrupted, tearing down", file=sys.stderr)
        return 130
    except BenchError as exc:
        print(f"bench_sockperf.py: {exc}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(conf_dir, ignore_errors=True)
        shutil.rmtree(run_dir, ignore_errors=True)
    if not runs:
        print(
            f"bench_sockperf.py: no run of {a.runs} ended well; {man_path} lists why",
            file=sys.stderr,
        )
        return 1
    return print_report(runs, made, a.out_dir, man_path)


if __name__ == "__main__":
    unwind_on_sigterm()  # stopped with SIGTERM, a run takes its lab down as on Ctrl-C
    sys.exit(main())
