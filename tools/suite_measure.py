"""One run of tools/bench_suite.py: every part asked for, in labs of its own, and the
results dict with its envelope (machine, settings, protocol)."""

from __future__ import annotations

import datetime
import os
import time

from rtnet.benchkit import sysinfo
from rtnet.lab import Lab
from tools.suite_config import (
    APP_PRIO,
    CYCLE_US,
    DISCIPLINES,
    FLOOD_LEN,
    FLOOD_MBPS,
    LINK_MBPS,
    LOAD_CPUS,
    RFC_RX_CPU,
    RFC_TX_CPU,
    RT_CPU,
    STATION_PRIO,
    SUB_PRIO,
)
from tools.suite_lab import log, machine
from tools.suite_matrix import measure_discipline
from tools.suite_rfc2544 import (
    CEILING_SPREAD_FLAG,
    measure_redundancy,
    measure_rfc2544_rt,
    measure_xdp_ceiling,
)
from tools.suite_vnic import measure_rfc2544_vnic
from vnic import bench as vnic_bench


def measure(args, argv) -> dict:
    """One run: every part asked for, in labs of its own; the results dict."""
    started = datetime.datetime.now().astimezone()
    t0 = time.monotonic()
    results = {
        "envelope": {
            "command": " ".join(["python3 -m tools.bench_suite", *argv]),
            "start_time": started.isoformat(),
            "quick": args.quick,
            "sysinfo": sysinfo(),
            "machine": machine(),
            "protocol": args.protocol_info,
            "settings": {
                "rt_cpu": RT_CPU,
                "load_cpus": LOAD_CPUS,
                "station_priority": STATION_PRIO,
                "app_priority": APP_PRIO,
                "subscriber_priority": SUB_PRIO,
                "pm_qos": "cpu_dma_latency 0 held by the RT threads and cyclictest",
                # what rtnet/lab.py and csrc/xsk/rtn_xsk_prog.c do on the lab's veths
                "lab_wire": "a Linux bridge that hands no frame to iptables",
                "xdp": "SKB-mode XDP (auto, on a veth with one queue), AF_XDP in copy mode",
                "mlockall": True,
                "busy_polling": False,
                "cycle_us": CYCLE_US,
                "link_rate_mbps": LINK_MBPS,
                "flood": f"iperf3 UDP {FLOOD_MBPS} Mbit/s, {FLOOD_LEN} B datagrams",
                "messages_per_cell": args.messages,
                "chunks": args.chunks,
                "trial_s": args.trial_s,
                "resolution_pct": args.resolution_pct,
                "max_trials": args.max_trials,
                "loss_verify": args.loss_verify,
                "disturbed_ms": args.disturbed_ms,
                "retry_disturbed": args.retry_disturbed,
                "confirm_s": args.confirm_s,
                "latency_trials": args.latency_trials,
                "latency_trial_s": args.latency_trial_s,
                "rt_link_rates_mbps": args.link_rates,
                "flood_s": args.flood_s,
                "flood_repeats": args.flood_repeats,
                "ceiling_spread_flag": CEILING_SPREAD_FLAG,
                "rfc2544_rt_cpus": {"sender": RFC_TX_CPU, "receiver": RFC_RX_CPU},
            },
        },
        "matrix": {},
        "wakeup": {},
        "rfc2544": {},
        "vnic_cost": {},
    }
    log(
        f"# bench_suite {'(quick) ' if args.quick else ''}parts {','.join(sorted(args.parts))}: "
        f"RT work on CPU {RT_CPU}, CPU load on CPU {LOAD_CPUS}, {args.messages} messages per cell"
        + (
            f"; protocol overrides: {args.protocol_info['overrides']}"
            if args.protocol_info["overrides"]
            else ""
        )
    )
    lab = Lab(args.lab, 2)
    if lab.exists():
        lab.down()
    try:
        if args.parts & {"a", "c-rt", "c-vnic"}:
            with lab:
                if "a" in args.parts:
                    for disc in DISCIPLINES:
                        measure_discipline(args, lab, disc, results)
                if "c-rt" in args.parts:
                    measure_xdp_ceiling(args, lab, results)
                    for mbps in args.link_rates:
                        measure_rfc2544_rt(args, lab, results, mbps)
                if "c-vnic" in args.parts:
                    measure_rfc2544_vnic(args, lab, results)
        if "c-frer" in args.parts:
            measure_redundancy(args, results)
        if "d" in args.parts:
            log("# d: VNIC cost (vnic/bench.py)")
            results["vnic_cost"] = vnic_bench.run(
                seconds=args.vnic_seconds,
                lab_name=f"{args.lab}v",
                out_json=os.path.join(args.out_dir, "bench_suite_vnic.json"),
                out_png=os.path.join(args.out_dir, "bench_suite_vnic.png"),
                log=log,
            )
    finally:
        lab.down()
    results["envelope"]["end_time"] = datetime.datetime.now().astimezone().isoformat()
    results["envelope"]["seconds"] = round(time.monotonic() - t0, 1)
    return results
