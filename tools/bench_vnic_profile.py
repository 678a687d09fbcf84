#!/usr/bin/env python3
"""Where a VNIC byte's CPU goes: perf's samples of a TCP flow, by thread and by path.

The lab of ``vnic bench`` (two stations, 1 ms TDMA cycle, batched VNIC, TSO on the TAP,
the RT threads on their own CPU) is profiled with ``perf record -a -g -e cpu-clock`` in
four phases a run, the same length each, ``--runs`` times in turn:

- the TDMA pair idle (no flow), before the flow and after it (averaged; a run whose two
  disagree is flagged): the fixed cost of its RT wake-ups;
- one iperf3 TCP flow through vnic0, at the link rate modelled;
- the MTU-frame kernel path (veth + bridge, TSO, GSO and GRO off on rteth0, no stations),
  offered the VNIC flow's goodput: vnic bench's primary baseline.

Every sample is 1/F s of one CPU.  The lab's samples (its RT threads, pumps, iperf3,
ksoftirqd, and the network softirqs and timer interrupts that ran on an idle CPU) are
sorted into a path by the kernel functions on their stack (PATHS, first match), or into
"user space" when the sample was taken there; each path is printed in CPU s per GB of the
flow's goodput, the kernel path's next to the VNIC's (the idle run charged to the VNIC
flow's bytes, as vnic bench charges it), median [min..max] over the runs.  A flow's bytes
in the profiled window are its iperf3 goodput times the window: the flows run a warm-up
longer than the window, so the window holds a flow at its rate.

    python3 -m tools.bench_vnic_profile                     # 3 runs of 5 s, 100 Mbit/s
    python3 -m tools.bench_vnic_profile --runs 5 --link-rate 1000

What it cannot see: without a PMU in this guest cpu-clock fires from an hrtimer, so time
with interrupts off is charged where they come back on (a wake-up's cost shows at
finish_task_switch, the end of the switch); and perf's own sampling (2 x F interrupts a
second) costs every phase alike.  Needs root and perf; builds its own lab (--lab, default
"vp").
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile

from rtnet.argtypes import integer, number
from rtnet.benchkit import cpu_isolation, why_unwritable
from rtnet.lab import Lab
from rtnet.rtthread import THREAD_NAME as RT_THREAD_NAME
from rtnet.sigterm import unwind_on_sigterm
from rtnet.station import RtSettings
from tools.bench_aggregate import show, spread
from tools.bench_runs import ROOT, code_version, write_json
from vnic import bench
from vnic.pair import plan, tdma_pair

# the lab's threads by their comm; anything else is another task of the machine
THREADS = (
    ("RT threads", lambda comm: comm == RT_THREAD_NAME),
    ("VNIC pumps", lambda comm: comm == "rtnet-vnic"),
    ("iperf3", lambda comm: comm == "iperf3"),
    ("ksoftirqd", lambda comm: comm.startswith("ksoftirqd")),
    ("idle CPU", lambda comm: comm == "swapper"),
)
XSK_SEND = ("xsk_sendmsg", "__xsk_generic_xmit")
TCP_SEND = ("tcp_sendmsg", "tcp_sendmsg_locked")
# (path, groups of kernel functions): the first path with a function of each of its groups
# on the stack names the sample
PATHS = (
    ("AF_XDP send: the receiving station's XDP, the copy into its UMEM",
     (XSK_SEND, ("do_xdp_generic", "bpf_prog_run_generic_xdp", "veth_xdp_rcv_skb"))),
    ("AF_XDP send: skb, veth, bridge", (XSK_SEND,)),
    ("TAP read", (("tun_chr_read_iter", "tun_do_read"),)),
    ("TAP write: Linux's receive inside it", (("tun_chr_write_iter", "tun_get_user"),)),
    ("TCP send: the receiver's TCP inside it", (TCP_SEND, ("tcp_v4_rcv",))),
    ("TCP send: the socket write, down to the wire", (TCP_SEND,)),
    ("TCP receive: the socket read", (("tcp_recvmsg", "tcp_recvmsg_locked"),)),
    ("network softirq", (("net_rx_action", "net_tx_action"),)),
    ("timer interrupts", (("hrtimer_interrupt", "__sysvec_apic_timer_interrupt"),)),
    ("waiting, switching", (("__schedule", "schedule", "finish_task_switch.isra.0",
                             "finish_task_switch", "do_nanosleep", "do_sys_poll", "do_select",
                             "ep_poll"),)),
)  # fmt: skip
USER = "user space"
OTHER_KERNEL = "other kernel"
# an idle CPU's own samples (its polling idle loop) are no one's work: only these count
IDLE_CPU_PATHS = ("network softirq", "timer interrupts")
PHASES = ("kernel-mtu", "vnic-idle", "vnic")
RESULTS = os.path.join(ROOT, "results", "bench_vnic_profile")
ALL = ("all", "total")
IDLE_AGREE = bench.IDLE_AGREE  # vnic bench's: idle runs before and after may differ this much
OTHERS_MAX = 0.05  # other tasks' share of the machine's CPU in a phase before it is flagged


def samples(script: str):
    """(comm, stack of (symbol, dso), leaf first) for each sample of ``perf script -F
    comm,tid,ip,sym,dso`` output; a sample without a stack has an empty one."""
    comm, stack = None, []
    for line in script.splitlines():
        if not line.strip():
            if comm is not None:
                yield comm, stack
            comm, stack = None, []
        elif line[0] in " \t":
            f = line.split(None, 1)
            if comm is None or len(f) < 2:
                continue
            sym, _, dso = f[1].rpartition(" (")
            stack.append((sym.split("+0x")[0], dso.rstrip(")")))
        else:
            if comm is not None:
                yield comm, stack
            # "comm tid": a comm may hold spaces, the tid is the last field
            head = line.rsplit(None, 1)
            comm, stack = (head[0] if len(head) == 2 else line.strip()), []
    if comm is not None:
        yield comm, stack


def thread_of(comm: str) -> str | None:
    for name, match in THREADS:
        if match(comm):
            return name
    return None


def path_of(stack) -> str:
    syms = {s for s, _ in stack}
    for name, groups in PATHS:
        if all(syms.intersection(g) for g in groups):
            return name
    if stack and "kernel" not in stack[0][1]:
        return USER
    return OTHER_KERNEL


def tally(script: str) -> tuple[collections.Counter, int]:
    """Samples by (thread, path), and the count of other tasks' samples (not the lab's)."""
    out: collections.Counter = collections.Counter()
    others = 0
    for comm, stack in samples(script):
        thread = thread_of(comm)
        if thread is None:
            others += 1
            continue
        path = path_of(stack)
        if thread == "idle CPU" and path not in IDLE_CPU_PATHS:
            continue  # the idle loop itself
        out[(thread, path)] += 1
    return out, others


def per_gb(counts: collections.Counter, freq: float, gbytes: float) -> dict:
    """CPU s per GB for each (thread, path), and per thread ("total" path) and overall."""
    out: dict = collections.defaultdict(float)
    for (thread, path), n in counts.items():
        s = n / freq / gbytes
        out[(thread, path)] += s
        out[(thread, "total")] += s
        out[("all", "total")] += s
    return dict(out)


def table(runs: list[dict]) -> str:
    """The figures of every run (a dict of phase -> per_gb dict) as one table, median
    [min..max]: kernel path, VNIC idle, VNIC, VNIC above idle."""
    keys = sorted({k for r in runs for ph in PHASES for k in r[ph]}, key=_order)

    def fig(phase, key):
        if phase == "above":
            vals = [r["vnic"].get(key, 0.0) - r["vnic-idle"].get(key, 0.0) for r in runs]
        else:
            vals = [r[phase].get(key, 0.0) for r in runs]
        return show(spread(vals), 2)

    def name(key):
        return "all the lab" if key == ALL else " / ".join(key)

    head = ("thread / path", "kernel path", "VNIC idle", "VNIC flow", "VNIC above idle")
    columns = ("kernel-mtu", "vnic-idle", "vnic", "above")
    rows = [head] + [(name(k), *(fig(ph, k) for ph in columns)) for k in keys]
    width = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return "\n".join(
        "  ".join(c.ljust(width[i]) if i == 0 else c.rjust(width[i]) for i, c in enumerate(r))
        for r in rows
    )


def _order(key):
    thread, path = key
    threads = [t for t, _ in THREADS] + ["all"]
    paths = ["total"] + [p for p, _ in PATHS] + [USER, OTHER_KERNEL]
    return threads.index(thread), paths.index(path)


def profile(data: str, freq: int, seconds: float) -> None:
    """perf records every CPU for ``seconds``, into ``data``."""
    rec = subprocess.run(
        ["perf", "record", "-q", "-a", "-g", "-F", str(freq), "-e", "cpu-clock", "-o", data,
         "--", "sleep", f"{seconds:g}"],
        capture_output=True, text=True,
    )  # fmt: skip
    if rec.returncode != 0:
        raise RuntimeError(f"perf record failed: {rec.stderr.strip()[-200:]}")


def read_profile(data: str) -> str:
    r = subprocess.run(
        ["perf", "script", "-i", data, "-F", "comm,tid,ip,sym,dso"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return r.stdout


def flow(lab, dst_ip: str, seconds: float, warmup: float, mbps=None) -> dict:
    """An iperf3 TCP flow that starts ``warmup`` before the profiled window and outlasts it."""
    t, got = bench.iperf_in_background(lab, dst_ip, int(seconds + 2 * warmup + 0.999), warmup, mbps)
    return {"thread": t, "result": got}


def one_run(lab, slot_plan, rt_cpu, seconds: float, freq: int, tmp: str, log) -> dict:
    """One run: the pair idle, its flow, the pair idle again, then the kernel path at the
    flow's goodput.  The two idle profiles are averaged; a run whose two differ by more
    than IDLE_AGREE, or in one of whose phases other tasks took more than OTHERS_MAX of the
    machine's CPU, is flagged (flags)."""
    warmup = 1.5
    data = os.path.join(tmp, "perf.data")

    def profiled(phase: str, during=None) -> None:
        f = during() if during else None
        profile(data, freq, seconds)
        if f:
            f["thread"].join()
            mbps[phase] = f["result"]["goodput_mbps"]
        counts[phase], others[phase] = tally(read_profile(data))

    counts, others, mbps = {}, {}, {}
    with tdma_pair(lab, slot_plan, mode="batched", mtu=bench.MAX_MTU, offload=True,
                   rt=RtSettings(priority=80, cpu=rt_cpu)) as (stations, _):  # fmt: skip
        for st in stations:
            st.set_probe(bench.PROBE_SLOT)
        profiled("vnic-idle-before")
        profiled("vnic", lambda: flow(lab, "198.19.0.2", seconds, warmup))
        profiled("vnic-idle-after")
    bench.kernel_offloads(lab, "off")
    try:
        rate = round(mbps["vnic"], 1)
        profiled("kernel-mtu", lambda: flow(lab, "198.18.0.2", seconds, warmup, rate))
    finally:
        bench.kernel_offloads(lab, "on")
    gb = {ph: mbps[ph] * 1e6 / 8 * seconds / 1e9 for ph in mbps}
    idle = [per_gb(counts[f"vnic-idle-{w}"], freq, gb["vnic"]) for w in ("before", "after")]
    run = {
        "vnic_mbps": mbps["vnic"],
        "kernel_mbps": mbps["kernel-mtu"],
        "others_samples": others,
        "machine_samples": freq * seconds * (os.cpu_count() or 1),
        "idle_each": [i.get(ALL, 0.0) for i in idle],
        "kernel-mtu": per_gb(counts["kernel-mtu"], freq, gb["kernel-mtu"]),
        "vnic-idle": {k: (idle[0].get(k, 0.0) + idle[1].get(k, 0.0)) / 2
                      for k in set(idle[0]) | set(idle[1])},
        "vnic": per_gb(counts["vnic"], freq, gb["vnic"]),
    }  # fmt: skip
    run["flags"] = flags(run)
    log(
        f"VNIC {run['vnic_mbps']:.1f} Mbit/s: {run['vnic'][ALL]:.2f} CPU s/GB (idle's "
        f"{' and '.join(f'{v:.2f}' for v in run['idle_each'])}); kernel path "
        f"{run['kernel_mbps']:.1f} Mbit/s: {run['kernel-mtu'][ALL]:.2f} CPU s/GB"
        + "".join(f"\n  FLAG {f}" for f in run["flags"])
    )
    return run


def flags(run: dict) -> list[str]:
    """What makes a run's figures suspect: idle profiles that disagree, other tasks busy."""
    out = []
    before, after = run["idle_each"]
    if abs(before - after) > IDLE_AGREE * max(before, after):
        out.append(
            f"idle profiles before and after the flow differ by more than {IDLE_AGREE:.0%} "
            f"({before:.2f} vs {after:.2f} CPU s/GB): the above-idle figures are suspect"
        )
    for phase, n in run["others_samples"].items():
        if n > OTHERS_MAX * run["machine_samples"]:
            out.append(
                f"{phase}: other tasks took {n / run['machine_samples']:.1%} of the machine's "
                "CPU: something else ran"
            )
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--link-rate", type=bench.LINK_RATE_ARG, default=100, help="Mbit/s modelled")
    ap.add_argument("--seconds", type=number("--seconds", 1, 30), default=5.0, help="profiled")
    ap.add_argument("--runs", type=integer("--runs", 1, 20), default=3)
    ap.add_argument("--freq", type=integer("--freq", 100, 5000), default=999, help="samples/s")
    ap.add_argument("--lab", default="vp")
    ap.add_argument(
        "--out",
        default=None,
        help="where every run is kept (default results/bench_vnic_profile/<code>.json)",
    )
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("bench_vnic_profile: needs root (netns, AF_XDP, perf)", file=sys.stderr)
        return 2
    if not shutil.which("perf"):
        print("bench_vnic_profile: needs perf (Debian's linux-perf)", file=sys.stderr)
        return 2
    out = a.out or os.path.join(RESULTS, f"{code_version()}.json")
    why = why_unwritable(out)
    if why:
        print(f"bench_vnic_profile: --out {out}: {why}", file=sys.stderr)
        return 2
    bench.OFFERED_MBPS = a.link_rate
    rt_cpu, bench.APP_CPUS = cpu_isolation("auto")
    slot_plan = plan(1000, a.link_rate, windows=True)  # vnic bench's, 1 ms cycle
    runs, failed = [], None
    with tempfile.TemporaryDirectory() as tmp, Lab(a.lab, 2) as lab:
        for i in range(a.runs):
            print(f"run {i + 1} of {a.runs}:", end=" ", flush=True)
            try:
                runs.append(one_run(lab, slot_plan, rt_cpu, a.seconds, a.freq, tmp, print))
            except (RuntimeError, KeyError, subprocess.CalledProcessError) as exc:
                # perf or iperf3 failed, or a flow reported no goodput: the runs so far stand
                failed = f"run {i + 1}: {exc}"
                print(f"\nbench_vnic_profile: {failed}", file=sys.stderr)
                break
    if runs:
        print(
            f"\nCPU s per GB of the flow, median [min..max] of {len(runs)} runs ({a.link_rate} "
            f"Mbit/s modelled, {a.seconds:g} s profiled a phase, cpu-clock at {a.freq} Hz):\n"
        )
        print(table(runs))
        write_json(
            out,
            {"config": vars(a), "failed": failed, "runs": [as_json(r) for r in runs],
             "table": table(runs)},
        )  # fmt: skip
        print(f"\nevery run kept in {out}")
    return 2 if failed else 0


def as_json(run: dict) -> dict:
    """A run with its (thread, path) keys as "thread / path" strings."""
    return {
        k: {" / ".join(key): v for key, v in val.items()} if k in PHASES else val
        for k, val in run.items()
    }


if __name__ == "__main__":
    unwind_on_sigterm()  # stopped with SIGTERM, a run takes its lab down as on Ctrl-C
    sys.exit(main())
