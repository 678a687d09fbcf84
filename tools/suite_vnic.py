"""Part c of tools/bench_suite.py through the VNIC: iperf3 UDP's zero-loss rate in the TDMA
NRT share by binary search, and ping round trips through the VNICs, per frame size."""

from __future__ import annotations

import json
import re
import subprocess

import numpy as np

from rtnet import netns
from rtnet.benchkit import start_iperf_server
from rtnet.station import RtSettings
from tools.suite_config import CYCLE_US, LINK_MBPS, RT_CPU, STATION_PRIO, WIRE_OVERHEAD
from tools.suite_lab import log
from tools.suite_rfc2544 import line_rate_fps, search
from vnic.pair import plan, tdma_pair, vnic_address
from vnic.tap import RTMAC_HLEN


def iperf_udp(lab, dst: str, payload: int, bps: float, seconds: float) -> dict:
    cmd = netns.command(
        lab.station(1).netns,
        [
            "iperf3",
            "-c",
            dst,
            "-u",
            "-l",
            str(payload),
            "-b",
            str(int(bps)),
            "-t",
            str(max(1, int(round(seconds)))),
            "-J",
        ],
    )
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 30)
    try:
        j = json.loads(r.stdout)
    except json.JSONDecodeError:
        raise RuntimeError(f"iperf3 gave no JSON: {r.stderr.strip()[:200]}") from None
    if "error" in j:
        raise RuntimeError(f"iperf3: {j['error']}")
    s = j["end"]["sum"]
    return {
        "packets": int(s["packets"]),
        "lost": int(s["lost_packets"]),
        "mbps": s["bits_per_second"] / 1e6,
    }


def ping_rtt(lab, dst: str, payload: int, count: int) -> dict:
    cmd = netns.command(
        lab.station(1).netns,
        ["ping", "-n", "-c", str(count), "-i", "0.01", "-s", str(payload), "-W", "1", dst],
    )
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=count * 0.05 + 30)
    rtts = np.array([float(m) for m in re.findall(r"time=([\d.]+) ms", r.stdout)]) * 1000
    if not len(rtts):
        return {"count": 0, "sent": count}
    q = np.percentile(rtts, [50, 99, 99.9])
    return {
        "count": int(len(rtts)),
        "sent": count,
        "min": float(rtts.min()),
        "avg": float(rtts.mean()),
        "p50": float(q[0]),
        "p99": float(q[1]),
        "p99.9": float(q[2]),
        "max": float(rtts.max()),
    }


def measure_rfc2544_vnic(args, lab, results: dict) -> None:
    rt = RtSettings(cpu=RT_CPU, priority=STATION_PRIO)
    p = plan(CYCLE_US, LINK_MBPS)
    cap = p.master_capacity_mbps
    out = results["rfc2544"]["vnic"] = {"nrt_capacity_mbps": cap, "sizes": {}}
    dst = vnic_address(2).split("/")[0]
    with tdma_pair(lab, p, mode="batched", rt=rt) as (_stations, taps):
        mtu = taps[0].mtu
        srv = start_iperf_server(lab, lab.station(2), dst)
        try:
            for frame in args.sizes:
                inner = min(frame, mtu + 18)  # Ethernet header + FCS around the MTU
                payload = inner - 18 - 28  # IPv4 + UDP headers
                # search up to the NRT share: frames plus the 4-byte RTmac tunnel header
                hi_fps = min(
                    line_rate_fps(inner), cap * 1e6 / ((inner + RTMAC_HLEN + WIRE_OVERHEAD) * 8)
                )

                def trial(pct):
                    fps = hi_fps * pct / 100
                    try:
                        r = iperf_udp(lab, dst, payload, fps * payload * 8, args.trial_s)
                    except RuntimeError as e:  # iperf3 failed: a failed trial, said so
                        log(f"c/vnic    {frame:5d} B: trial at {pct:.2f}%: {e}")
                        return False, {"error": str(e)}
                    return r["lost"] == 0 and r["packets"] > 0, r

                best, tried = search(args, trial)
                pct = best[0] if best else 0.0
                fps = hi_fps * pct / 100
                mbps = fps * inner * 8 / 1e6
                lat = ping_rtt(lab, dst, payload, args.ping_count)  # ICMP header = UDP header
                out["sizes"][str(frame)] = {
                    "frame": inner,
                    "udp_payload": payload,
                    "search_hi_fps": hi_fps,
                    "throughput_pct_of_search_hi": pct,
                    "fps": fps,
                    "mbps": mbps,
                    "pct_of_nrt_capacity": 100 * mbps / cap,
                    "rtt_us": lat,
                    "trials": tried,
                }
                log(
                    f"c/vnic    {frame:5d} B{'*' if inner != frame else ' '}: zero-loss "
                    f"{mbps:6.1f} Mbit/s ({100 * mbps / cap:5.1f}% of the {cap:.1f} Mbit/s NRT "
                    f"share), ping RTT p50 {lat.get('p50', 0):.0f} p99 {lat.get('p99', 0):.0f} us "
                    f"({len(tried)} trials)"
                )
        finally:
            lab.stop(srv)
