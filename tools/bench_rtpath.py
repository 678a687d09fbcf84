#!/usr/bin/env python3
"""Round-trip time of the real-time path: raw AF_XDP ping-pong against kernel UDP.

Builds a two-station lab, runs a responder in station 2 and a client in
station 1 (separate processes pinned to different CPUs, SCHED_FIFO where
permitted), first over AF_XDP with rtnet's XDP program, then over kernel UDP
on the same veths with the same settings, and prints both side by side.

    python3 -m tools.bench_rtpath [--count 20000] [--mode auto|native|skb] [--no-pmqos]

Results go to results/bench_rtpath.json.  Everything is torn down on exit,
Ctrl-C or error.
"""

import argparse
import json
import os
import selectors
import subprocess
import sys
import tempfile
import time

import numpy as np

from rtnet.argtypes import integer
from rtnet.lab import Lab
from rtnet.pingpong import UDP_HEADERS
from rtnet.sigterm import unwind_on_sigterm

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

LAB_NAME = "rtnxbench"
PCTS = (("min", 0), ("p50", 50), ("p99", 99), ("p99.9", 99.9), ("max", 100))


def wait_ready(proc: subprocess.Popen, timeout: float) -> None:
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sel.select(timeout=deadline - time.monotonic()):
            line = proc.stdout.readline()
            if line.strip() == "ready":
                return
            if not line:
                break
    raise RuntimeError(
        f"responder did not get ready (exit code {proc.poll()}): "
        f"{proc.stderr.read() if proc.poll() is not None else ''}"
    )


def run_path(lab: Lab, path: str, a, procs: list) -> dict:
    s1, s2 = lab.station(1), lab.station(2)
    common = [
        "--count",
        str(a.count),
        "--warmup",
        str(a.warmup),
        "--size",
        str(a.size),
        "--fifo",
        str(a.fifo),
        "--mode",
        a.mode,
    ]
    if a.pmqos:
        common.append("--pmqos")
    if a.so_busy_poll:
        common.append("--so-busy-poll")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    py = [sys.executable, "-m", "rtnet.pingpong", path]
    resp_args = py + ["responder", "--cpu", str(a.responder_cpu), *common]
    cli_args = py + ["client", "--cpu", str(a.client_cpu), *common]
    if path == "xsk":
        cli_args += ["--local-mac", s1.mac, "--peer-mac", s2.mac]
    else:
        resp_args += ["--local-ip", s2.ip, "--peer-ip", s1.ip]
        cli_args += ["--local-ip", s1.ip, "--peer-ip", s2.ip]

    with tempfile.NamedTemporaryFile("r", suffix=".json", prefix="rtnx-") as out:
        resp = lab.spawn(
            s2, resp_args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        procs.append(resp)
        wait_ready(resp, 20)
        cli = lab.spawn(
            s1,
            cli_args + ["--out", out.name],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        procs.append(cli)
        budget = 60 + a.count * a.timeout_budget
        if cli.wait(timeout=budget) != 0:
            raise RuntimeError(f"{path} client failed: {cli.stderr.read().strip()}")
        rout, rerr = resp.communicate(timeout=30)
        if resp.returncode != 0:
            raise RuntimeError(f"{path} responder failed: {rerr.strip()}")
        for p in (resp, cli):
            lab.forget(p)
        client = json.load(out)
    responder = json.loads(rout.strip().splitlines()[-1])
    rtt = np.array(client.pop("rtt_ns"), dtype=np.int64)
    ok = rtt[rtt >= 0]
    summary = {name: float(np.percentile(ok, p)) / 1000.0 for name, p in PCTS} if ok.size else {}
    summary["avg"] = float(ok.mean()) / 1000.0 if ok.size else None
    return {
        "client": client,
        "responder": responder,
        "rtt_us": summary,
        "samples": int(ok.size),
        "lost": int((rtt < 0).sum()),
    }


def print_table(res: dict, a) -> None:
    x, u = res["xsk"], res["udp"]
    print()
    print(
        f"# rtnet AF_XDP vs kernel UDP ping-pong over veth, {a.count} round trips, "
        f"{a.size}-byte frames"
    )
    print(
        f"# AF_XDP XDP mode: {x['client'].get('xdp_mode')}"
        + (
            f" (fallback: {x['client']['fallback_reason']})"
            if x["client"].get("fallback_reason")
            else ""
        )
    )
    print(
        f"# PM QoS /dev/cpu_dma_latency=0: {'held' if x['client']['pmqos'] else 'not held'}; "
        "busy polling: user-space spin on non-blocking receive on both paths"
        + ("; SO_BUSY_POLL set" if a.so_busy_poll else "; SO_BUSY_POLL not set")
    )
    print(f"# client: {x['client']['scheduling']}; responder: {x['responder']['scheduling']}")
    print(f"{'path':<8}" + "".join(f"{n:>9}" for n, _ in PCTS) + f"{'avg':>9}{'lost':>7}  (us)")
    for name, r in (("AF_XDP", x), ("UDP", u)):
        s = r["rtt_us"]
        print(
            f"{name:<8}"
            + "".join(f"{s.get(n, float('nan')):9.1f}" for n, _ in PCTS)
            + f"{s.get('avg') or float('nan'):9.1f}{r['lost']:7d}"
        )
    for p in ("p50", "p99"):
        verdict = "yes" if res["xsk_beats_udp"][p] else "NO"
        print(
            f"# AF_XDP below UDP at {p}: {verdict} "
            f"({x['rtt_us'][p]:.1f} vs {u['rtt_us'][p]:.1f} us)"
        )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    cpu = integer("cpu", 0, (os.cpu_count() or 1) - 1)
    p.add_argument("--count", type=integer("count", 1, 10_000_000), default=20000)
    p.add_argument("--warmup", type=integer("warmup", 0, 1_000_000), default=500)
    # rtnet.pingpong's frame sizes: a UDP datagram with a 4-byte payload up to 1514 bytes
    p.add_argument("--size", type=integer("size", UDP_HEADERS + 4, 1514), default=64)
    p.add_argument("--mode", default="auto", choices=("auto", "native", "skb"))
    p.add_argument(
        "--fifo",
        type=integer("priority", 0, 99),
        default=50,
        help="SCHED_FIFO priority (0: SCHED_OTHER)",
    )
    p.add_argument("--no-pmqos", dest="pmqos", action="store_false")
    p.add_argument("--so-busy-poll", action="store_true")
    p.add_argument("--client-cpu", type=cpu, default=0)
    p.add_argument("--responder-cpu", type=cpu, default=1 if (os.cpu_count() or 1) > 1 else 0)
    p.add_argument("--out", default=os.path.join(ROOT, "results", "bench_rtpath.json"))
    a = p.parse_args(argv)
    a.timeout_budget = 0.001  # seconds of wall time allowed per round trip on top of 60 s

    lab = Lab(LAB_NAME, 2)
    if lab.exists():
        lab.down()  # leftovers of an interrupted run
    procs: list[subprocess.Popen] = []
    try:
        lab.up()
        res = {"xsk": run_path(lab, "xsk", a, procs), "udp": run_path(lab, "udp", a, procs)}
        res["xsk_beats_udp"] = {
            q: res["xsk"]["rtt_us"][q] < res["udp"]["rtt_us"][q] for q in ("p50", "p99")
        }
        res["settings"] = {
            "count": a.count,
            "warmup": a.warmup,
            "size": a.size,
            "mode": a.mode,
            "fifo": a.fifo,
            "pmqos_requested": a.pmqos,
            "so_busy_poll": a.so_busy_poll,
            "client_cpu": a.client_cpu,
            "responder_cpu": a.responder_cpu,
            "kernel": os.uname().release,
        }
        print_table(res, a)
        os.makedirs(os.path.dirname(a.out), exist_ok=True)
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)
        print(f"# saved {a.out}")
        return 0
    except KeyboardInterrupt:
        print("bench_rtpath: interrupted, tearing down", file=sys.stderr)
        return 130
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        print(f"bench_rtpath: {exc}", file=sys.stderr)
        return 1
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()  # only the processes this run started, by their PID
                proc.wait()
        lab.down()


if __name__ == "__main__":
    unwind_on_sigterm()  # stopped with SIGTERM, a run takes its lab down as on Ctrl-C
    sys.exit(main())
