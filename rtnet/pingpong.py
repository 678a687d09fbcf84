"""One side of a ping-pong measurement, run as a process inside a lab station.

    python3 -m rtnet.pingpong xsk|udp client|responder [options]

The loops themselves are C (csrc/bench/rtn_pingpong.c): both paths stamp time
right before handing a frame to the kernel and right after seeing the echo,
and both spin on a non-blocking receive, so AF_XDP and kernel UDP are
measured the same way.  The responder prints ``ready`` once its socket is
open; the client writes its round-trip times (ns, -1 for lost) as JSON.
"""

import argparse
import json
import os
import socket
import struct
import sys

import numpy as np

from . import pmqos
from ._benchlib import check, ffi, lib
from .errors import RtnetError
from .mac import parse_mac
from .xsk import RawSocket

UDP_HEADERS = 14 + 20 + 8  # Ethernet + IPv4 + UDP: UDP payloads give equal frame sizes
SO_BUSY_POLL = 46


def apply_scheduling(cpu: int | None, fifo: int) -> str:
    """Pin and raise priority where permitted; returns what was actually applied."""
    applied = []
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
        applied.append(f"cpu {cpu}")
    if fifo > 0:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(fifo))
            applied.append(f"SCHED_FIFO {fifo}")
        except PermissionError:
            applied.append("SCHED_OTHER (FIFO not permitted)")
    else:
        applied.append("SCHED_OTHER")
    return ", ".join(applied)


def _udp_socket(a) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((a.local_ip, a.port if a.role == "responder" else a.port + 1))
    s.connect((a.peer_ip, a.port + 1 if a.role == "responder" else a.port))
    s.setblocking(False)
    if a.so_busy_poll:
        s.setsockopt(socket.SOL_SOCKET, SO_BUSY_POLL, 50)
    return s


def _result(res) -> dict:
    return {"sent": res.sent, "received": res.received, "lost": res.lost, "stray": res.stray}


def run(a) -> dict:
    sched = apply_scheduling(a.cpu, a.fifo)
    res = ffi.new("struct rtn_pp_result *")
    total = a.count + a.warmup
    idle_us = int(a.idle * 1e6)
    timeout_us = int(a.timeout * 1e6)
    rtts = np.full(a.count, -1, dtype=np.int64)
    out = {"path": a.path, "role": a.role, "scheduling": sched}
    with pmqos.cpu_latency(0 if a.pmqos else None) as held:
        out["pmqos"] = held
        if a.path == "xsk":
            with RawSocket(
                a.ifname, ethertypes=[a.ethertype], mode=a.mode, busy_poll=a.so_busy_poll
            ) as sock:
                out["xdp_mode"] = sock.mode
                out["fallback_reason"] = sock.fallback_reason
                x = sock._x  # the C object, handed to the C loop only
                print("ready", flush=True)
                if a.role == "responder":
                    check(lib.rtn_pp_xsk_responder(x, total, idle_us, res))
                else:
                    tmpl = (
                        parse_mac(a.peer_mac)
                        + parse_mac(a.local_mac)
                        + struct.pack("!H", a.ethertype)
                    )
                    tmpl = tmpl.ljust(a.size, b"\xa5")
                    check(
                        lib.rtn_pp_xsk_client(
                            x,
                            tmpl,
                            len(tmpl),
                            a.count,
                            a.warmup,
                            timeout_us,
                            ffi.from_buffer("int64_t[]", rtts),
                            ffi.NULL,
                            res,
                        )
                    )
                out["stats"] = sock.stats()
        else:
            with _udp_socket(a) as s:
                print("ready", flush=True)
                if a.role == "responder":
                    check(lib.rtn_pp_udp_responder(s.fileno(), total, idle_us, res))
                else:
                    check(
                        lib.rtn_pp_udp_client(
                            s.fileno(),
                            a.size - UDP_HEADERS,
                            a.count,
                            a.warmup,
                            timeout_us,
                            ffi.from_buffer("int64_t[]", rtts),
                            ffi.NULL,
                            res,
                        )
                    )
    out.update(_result(res))
    if a.role == "client":
        out["rtt_ns"] = rtts.tolist()
    return out


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="python3 -m rtnet.pingpong", description=__doc__.split("\n")[0]
    )
    p.add_argument("path", choices=("xsk", "udp"))
    p.add_argument("role", choices=("client", "responder"))
    p.add_argument("--ifname", default="rteth0")
    p.add_argument("--mode", default="auto", choices=("auto", "native", "skb"))
    p.add_argument("--ethertype", type=lambda s: int(s, 0), default=0x88B5)
    p.add_argument("--local-mac")
    p.add_argument("--peer-mac")
    p.add_argument("--local-ip")
    p.add_argument("--peer-ip")
    p.add_argument("--port", type=int, default=47001)
    p.add_argument("--count", type=int, default=20000)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--size", type=int, default=64, help="Ethernet frame bytes (without FCS)")
    p.add_argument("--timeout", type=float, default=0.1, help="seconds to wait for one echo")
    p.add_argument(
        "--idle", type=float, default=10.0, help="responder gives up after this idle time"
    )
    p.add_argument("--cpu", type=int)
    p.add_argument("--fifo", type=int, default=50, help="SCHED_FIFO priority, 0 for SCHED_OTHER")
    p.add_argument("--pmqos", action="store_true", help="hold /dev/cpu_dma_latency at 0")
    p.add_argument("--so-busy-poll", action="store_true", help="also set SO_BUSY_POLL")
    p.add_argument("--out", help="write the JSON result here instead of stdout")
    a = p.parse_args(argv)
    if a.size < UDP_HEADERS + 4 or a.size > 1514:
        p.error(f"--size {a.size}: must be {UDP_HEADERS + 4}..1514")
    if a.path == "xsk" and a.role == "client" and not (a.local_mac and a.peer_mac):
        p.error("the AF_XDP client needs --local-mac and --peer-mac")
    if a.path == "udp" and not (a.local_ip and a.peer_ip):
        p.error("UDP needs --local-ip and --peer-ip")
    return a


def main(argv=None) -> int:
    a = parse_args(argv)
    try:
        out = run(a)
    except (RtnetError, OSError) as exc:
        print(f"pingpong {a.path} {a.role}: {exc}", file=sys.stderr)
        return 1
    text = json.dumps(out)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    else:
        print(text, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
