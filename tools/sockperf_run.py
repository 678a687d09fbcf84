"""One run of tools/bench_sockperf.py: a fresh two-station lab, the columns' phases
(kernel UDP, NoMAC through rtnet-run and the native API, TDMA), idle and under the flood,
every process it started stopped and the lab taken down; and the native ping-pong built.
What a run measured is judged in tools/sockperf_report.py.

CPU plan on this 2-vCPU machine: the stations' RT threads run SCHED_FIFO 90, not pinned
(--rt-cpu N pins both); sockperf, the native ping-pong and iperf3 are not pinned and run
SCHED_OTHER, as in the kernel column.  With both RT threads pinned to CPU 1 the
application's wake-up after its station's hand-over (stage "take") had a p99 near 500 us
against 34 us unpinned, and the round trip's p99 was 588 us against 114 us (one run of
the native column each).

A blocking socket whose TX ring is full waits for the station (as a kernel socket waits
for its send buffer); runs of code before that answered ENOBUFS, which ended sockperf's
throughput client, so a ladder of lower offered rates (MPS_LADDER) is still tried when a
rate fails and the results name the rates refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from rtnet.benchkit import IPERF_PORT, iperf_udp_flood, listening
from tools.sockperf_output import (
    BenchError,
    parse_pingpong,
    parse_server_total,
    parse_throughput,
    plain,
)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

LAB_NAME = "spk"
PORT, NATIVE_PORT, POSIX_PORT = 11111, 11112, 11113  # sockperf's; iperf3 on IPERF_PORT
RT_CPU, STATION_PRIO = -1, 90  # RT threads not pinned by default (see the docstring)
WITNESS_CPU = 0
CYCLE_US = 1000
LINK_MBPS = 100  # TDMA's modelled link rate (the planner's)
PP_SIZE = 64
TP_SIZES = (64, 1024)
FLOOD_MBPS, FLOOD_LEN = 150, 1200
# sockperf throughput's offered rates, tried in turn while sendto() fails with ENOBUFS
MPS_LADDER = ("max", 200000, 100000, 50000, 20000, 10000, 5000, 2000, 1000, 500)
DISTURBED_MS = 5.0  # docs/benchmark-protocol.md: disturbed_ms
BASELINE_TOL = 0.30  # idle kernel p50 at start and end: at most 30% apart
COLUMNS = ("kernel", "nomac", "native", "tdma")
NATIVE_SRC = os.path.join(HERE, "sockperf_native.c")


T0 = time.monotonic()


def log(msg: str) -> None:
    if msg.startswith("# "):
        msg = f"# [{time.monotonic() - T0:6.1f} s] {msg[2:]}"
    print(msg, flush=True)


def missing_tools(columns) -> str | None:
    need = ["sockperf", "stdbuf", "ip"]
    if any(c != "kernel" for c in columns):
        need.append("rtnet-run")
    if "native" in columns or "nomac" in columns:
        need += ["cc", "make"]
    need.append("iperf3")
    for t in need:
        if not shutil.which(t):
            hint = (
                " (apt-get install sockperf, or tools/setup-system.sh)" if t == "sockperf" else ""
            )
            return f"{t} not found{hint}"
    return None


# ---- the native ping-pong ----------------------------------------------------------------


def build_native(out_dir: str) -> str:
    """tools/sockperf_native.c against librtnet_app.a (make -C csrc app)."""
    r = subprocess.run(
        ["make", "-s", "-C", os.path.join(ROOT, "csrc"), "librtnet_app.a"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if r.returncode != 0:
        raise BenchError(f"make -C csrc librtnet_app.a failed: {r.stderr.strip()[-300:]}")
    # rtnet_app.h's headers are spread over csrc/'s layer folders: the Makefile names them
    r = subprocess.run(
        ["make", "-s", "--no-print-directory", "-C", os.path.join(ROOT, "csrc"), "app-cflags"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if r.returncode != 0:
        raise BenchError(f"make -C csrc app-cflags failed: {r.stderr.strip()[-300:]}")
    includes = r.stdout.split()
    exe = os.path.join(out_dir, "sockperf_native")
    r = subprocess.run(
        [
            "cc",
            "-O2",
            "-std=gnu11",
            "-Wall",
            "-Wextra",
            "-Wno-unused-parameter",
            "-D_GNU_SOURCE",
            *includes,
            NATIVE_SRC,
            os.path.join(ROOT, "csrc", "librtnet_app.a"),
            "-lpthread",
            "-o",
            exe,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if r.returncode != 0:
        raise BenchError(f"building sockperf_native failed: {r.stderr.strip()[-300:]}")
    return exe


# ---- the run -----------------------------------------------------------------------------

STATION_HEAD = """
[station]
name = "sp{i}"
ip = "{ip}"
[rt]
cpu = {cpu}
priority = {prio}
allow_fallback = true
"""

# vnic0, the flood's path, and the slot it sends in: 0 under NoMAC, 1 under TDMA
VNIC = """[vnic]
enabled = true
name = "vnic0"
mode = "batched"
address = "198.19.0.{i}/24"
"""

NOMAC_CONF = (
    STATION_HEAD
    + """[link]
link_rate_mbps = 0
[nomac]
"""
    + VNIC
    + "slot = 0\n"
)
TDMA_VNIC = "\n" + VNIC + "slot = 1\n"


class Run:
    """One run: a fresh lab, the columns' phases, every process this run started."""

    def __init__(self, args, native_exe: str, conf_dir: str):
        from rtnet.lab import Lab

        self.a = args
        self.exe = native_exe
        self.conf_dir = conf_dir
        self.lab = Lab(LAB_NAME, 2)
        self.procs: list[subprocess.Popen] = []
        self.daemons = False
        self.det = None
        self.s1, self.s2 = self.lab.station(1), self.lab.station(2)

    # -- processes ---------------------------------------------------------------------
    def start(self, st, argv, *, rt: bool, **kw) -> subprocess.Popen:
        """``argv`` in ``st``'s namespace; through rtnet-run when ``rt``."""
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.STDOUT)
        kw.setdefault("text", True)
        if rt:
            p = subprocess.Popen(["rtnet-run", "-n", st.netns, "--", *argv], **kw)
        else:
            p = self.lab.spawn(st, argv, **kw)
        self.procs.append(p)
        return p

    def stop(self, p: subprocess.Popen, sig=signal.SIGINT, timeout=10.0) -> str:
        """End a process this run started (by its PID) and return its output."""
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                p.send_signal(sig)
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
        self.lab.forget(p)
        if p in self.procs:
            self.procs.remove(p)
        if getattr(p, "log_path", None):
            out = self.output(p)
            with contextlib.suppress(OSError):
                os.unlink(p.log_path)
        return out or ""

    def start_logged(self, st, argv, *, rt: bool) -> subprocess.Popen:
        """A server: its output to a file of its own (read while it runs, and at its end)."""
        f = tempfile.NamedTemporaryFile("w+", prefix="rtn-spk-out-", delete=False)
        p = self.start(st, argv, rt=rt, stdout=f, stderr=subprocess.STDOUT)
        p.log_path = f.name
        f.close()
        return p

    @staticmethod
    def output(p: subprocess.Popen) -> str:
        try:
            with open(p.log_path) as f:
                return f.read()
        except OSError:
            return ""

    def wait_line(self, p: subprocess.Popen, pattern: str, timeout: float, what: str) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = self.output(p)
            if re.search(pattern, out, re.M):
                return out
            if p.poll() is not None:
                break
            time.sleep(0.02)
        out = self.output(p)
        raise BenchError(f"{what} did not get ready (exit {p.poll()}): {out.strip()[-400:]}")

    def wait_ready(self, srv: subprocess.Popen) -> None:
        """sockperf's server has bound its socket once it says it listens and starts its
        warm-up; the receive loop follows at once."""
        self.wait_line(srv, r"Warmup stage|to block on socket", 20, "sockperf server")
        time.sleep(0.3)

    def run_to_end(self, p: subprocess.Popen, timeout: float, what: str) -> str:
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop(p, signal.SIGKILL)
            raise BenchError(f"{what} did not end within {timeout:.0f} s")
        self.lab.forget(p)
        self.procs.remove(p)
        if p.returncode != 0:
            raise BenchError(f"{what} failed (exit {p.returncode}): {(out or '').strip()[-400:]}")
        return out or ""

    def kill_all(self) -> None:
        for p in list(self.procs):
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    p.kill()  # only what this run started, by its PID
            with contextlib.suppress(Exception):
                p.communicate(timeout=5)
            self.lab.forget(p)
            if getattr(p, "log_path", None):
                with contextlib.suppress(OSError):
                    os.unlink(p.log_path)
        self.procs = []

    # -- stations ----------------------------------------------------------------------
    def daemons_up(self, disc: str) -> None:
        from rtmac.plan import plan
        from rtnet import cli, rtroute

        p = (
            plan(
                2,
                cycle_us=CYCLE_US,
                link_rate_mbps=LINK_MBPS,
                rt_sizes=1200,
                backup=False,
                guard_ns=self.a.guard_us * 1000,
            )
            if disc == "tdma"
            else None
        )
        self.daemons = True
        # the slave first, so it is listening when the master's Syncs start
        for st in (self.s2, self.s1):
            if disc == "tdma":
                body = (
                    STATION_HEAD
                    + p.toml(st.index).replace('role = "slave"', 'role = "slave"\ncal_rounds = 20')
                    + TDMA_VNIC
                )
            else:
                body = NOMAC_CONF
            path = os.path.join(self.conf_dir, f"{disc}-{st.index}.toml")
            with open(path, "w") as f:
                f.write(
                    body.replace(
                        "cpu = {cpu}\n", "" if self.a.rt_cpu < 0 else f"cpu = {self.a.rt_cpu}\n"
                    ).format(i=st.index, ip=st.ip, prio=STATION_PRIO)
                )
            with contextlib.redirect_stdout(sys.stderr):
                if cli.main(["up", "-n", st.netns, "-c", path]) != 0:
                    raise BenchError(f"rtnetctl up -n {st.netns} ({disc}) failed")
        if disc == "tdma":
            self.wait_for(
                lambda: (self.status(self.s2).get("tdma") or {}).get("state") == "synchronised",
                30,
                "the TDMA slave to synchronise",
            )
        for x, y in ((self.s1, self.s2), (self.s2, self.s1)):
            with contextlib.redirect_stdout(sys.stderr):
                if rtroute.main(["-n", x.netns, "add", y.ip, y.mac, "dev", "rteth0"]) != 0:
                    raise BenchError(f"rtroute add in {x.netns} failed")
        # vnic0 up with its address on both: the flood's path
        self.wait_for(
            lambda: all(self.has_addr(st, "vnic0") for st in (self.s1, self.s2)),
            15,
            "vnic0 on both stations",
        )

    def daemons_down(self) -> None:
        from rtnet import cli

        if not self.daemons:
            return
        for st in (self.s1, self.s2):
            with contextlib.redirect_stdout(sys.stderr), contextlib.suppress(Exception):
                cli.main(["down", "-n", st.netns])
        self.daemons = False
        # the kernel column needs rteth0 without the stack's XDP program
        self.wait_for(
            lambda: not any(lk["xdp"] for s in self.lab.status()["stations"] for lk in s["links"]),
            10,
            "XDP programs to be detached",
        )

    def has_addr(self, st, dev: str) -> bool:
        r = subprocess.run(
            ["ip", "netns", "exec", st.netns, "ip", "-4", "-o", "addr", "show", "dev", dev],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return r.returncode == 0 and "inet " in r.stdout

    @staticmethod
    def wait_for(cond, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(Exception):
                if cond():
                    return
            if time.monotonic() > deadline:
                raise BenchError(f"timed out waiting for {what}")
            time.sleep(0.1)

    def status(self, st) -> dict:
        from rtnet import control_client

        return control_client.call(
            "rteth0", {"cmd": "status", "dev": "rteth0"}, netns=st.netns, timeout=10
        )["status"]

    def counters(self) -> dict:
        """What the stations count (the stack's, or the kernel's UDP MIB without it)."""
        out = {}
        for st in (self.s1, self.s2):
            if self.daemons:
                s = self.status(st)
                chans = s.get("channels") or []
                out[st.netns] = {
                    "loops": s["loops"],
                    "rx_wakeups": s["rx_wakeups"],
                    "timer_wakeups": s["timer_wakeups"],
                    "spin_waits": s["spin_waits"],
                    "rx_frames": s["rx_frames"],
                    "nomac_tx": s.get("nomac_tx", 0),
                    "xsk_tx_kicks": (s.get("xsk") or {}).get("tx_kicks", 0),
                    "rx_udp": (s.get("ipv4") or {}).get("rx_udp", 0),
                    "app_notifies": sum(c.get("rx_notifies", 0) for c in chans),
                    "app_rx_drops": sum(c.get("rx_drops", 0) for c in chans),
                    "missed": s.get("miss_late_wake", 0) + s.get("miss_other", 0),
                }
            else:
                out[st.netns] = self.kernel_udp(st)
        return out

    def kernel_udp(self, st) -> dict:
        r = subprocess.run(
            ["ip", "netns", "exec", st.netns, "cat", "/proc/net/snmp"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        lines = [ln.split() for ln in r.stdout.splitlines() if ln.startswith("Udp:")]
        if len(lines) < 2:
            return {}
        d = dict(zip(lines[0][1:], (int(v) for v in lines[1][1:])))
        return {
            "udp_in": d.get("InDatagrams", 0),
            "udp_out": d.get("OutDatagrams", 0),
            "udp_rcvbuf_errors": d.get("RcvbufErrors", 0),
        }

    def dev_rx_bytes(self, st, dev: str) -> int:
        r = subprocess.run(
            ["ip", "netns", "exec", st.netns, "cat", f"/sys/class/net/{dev}/statistics/rx_bytes"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return int(r.stdout.strip() or 0)

    # -- measurements ------------------------------------------------------------------
    def window(self, fn, flood_dev: str | None):
        """Run ``fn`` with the stations' counters, the stall detector and the flood's
        delivered bytes around it."""
        c0 = self.counters()
        b0 = self.dev_rx_bytes(self.s2, flood_dev) if flood_dev else 0
        t0, m0 = time.monotonic_ns(), time.monotonic()
        res = fn()
        t1, m1 = time.monotonic_ns(), time.monotonic()
        b1 = self.dev_rx_bytes(self.s2, flood_dev) if flood_dev else 0
        c1 = self.counters()
        stall = {"slow": 0, "gap": 0}
        for g in self.det.gaps():
            if g.overlaps(t0, t1):
                stall[g.kind] += min(g.woke_ns, t1) - max(g.due_ns, t0)
        res["stall_ms"] = round((stall["slow"] + stall["gap"]) / 1e6, 3)
        res["disturbed"] = res["stall_ms"] >= DISTURBED_MS
        res["counters"] = {
            ns: {k: c1[ns].get(k, 0) - v for k, v in c0[ns].items()} for ns in c0 if ns in c1
        }
        if flood_dev:
            res["flood_delivered_mbps"] = round((b1 - b0) * 8 / (m1 - m0) / 1e6, 1)
        return res

    def sockperf_server(self, rt: bool) -> subprocess.Popen:
        srv = self.start_logged(
            self.s2,
            ["stdbuf", "-oL", "-eL", "sockperf", "server", "-i", self.s2.ip, "-p", str(PORT)],
            rt=rt,
        )
        self.wait_ready(srv)
        return srv

    def client_argv(self, mode: str, size: int, seconds: float) -> list:
        """sockperf's client in ``mode`` (ping-pong, throughput) towards station 2's server,
        ``size``-byte datagrams for ``seconds``."""
        return [
            "sockperf",
            mode,
            "-i",
            self.s2.ip,
            "-p",
            str(PORT),
            "-m",
            str(size),
            "-t",
            f"{seconds:g}",
        ]

    def sockperf_pingpong(self, rt: bool, flood_dev) -> dict:
        a = self.a

        def go():
            cli = self.start(
                self.s1,
                [*self.client_argv("ping-pong", PP_SIZE, a.seconds), "--full-rtt"],
                rt=rt,
            )
            return parse_pingpong(self.run_to_end(cli, a.seconds + 60, "sockperf ping-pong"))

        return self.window(go, flood_dev)

    def received(self, res: dict) -> int | None:
        """Datagrams the server's station delivered to sockets during a window: the
        stack's UDP receptions less its applications' ring drops, or the kernel's
        InDatagrams."""
        c = res.get("counters", {}).get(self.s2.netns, {})
        if "rx_udp" in c:
            return c["rx_udp"] - c.get("app_rx_drops", 0)
        return c.get("udp_in")

    def sockperf_throughput(self, rt: bool, size: int, flood_dev, first: int = 0) -> dict:
        """sockperf throughput at --mps max; a sender whose sendto() fails (the real-time
        path's TX ring full: ENOBUFS, which ends sockperf) is tried again at the next
        lower rate of MPS_LADDER (from ``first``), and the refused rates are recorded."""
        a = self.a
        refused, refused_counters = [], []
        for mps in MPS_LADDER[first:]:

            def go():
                cli = self.start(
                    self.s1,
                    [*self.client_argv("throughput", size, a.seconds), f"--mps={mps}"],
                    rt=rt,
                )
                try:
                    out, _ = cli.communicate(timeout=a.seconds + 60)
                except subprocess.TimeoutExpired:
                    self.stop(cli, signal.SIGKILL)
                    raise BenchError("sockperf throughput did not end in time")
                self.lab.forget(cli)
                self.procs.remove(cli)
                if cli.returncode != 0:
                    return {"error": plain(out or "").strip()[-300:]}
                res = parse_throughput(out)
                time.sleep(0.2)  # the last datagrams in flight reach the server
                return res

            res = self.window(go, flood_dev)
            if "error" not in res:
                break
            if "errno=105" not in res["error"] and "No buffer space" not in res["error"]:
                raise BenchError(f"sockperf throughput failed: {res['error']}")
            refused.append(mps)
            # what the refused attempt still sent is in the stations' counters
            refused_counters.append(res["counters"])
        else:
            return {
                "size": size,
                "refused_mps": refused,
                "msgs_per_s": None,
                "mbps": None,
                "refused_counters": refused_counters,
            }
        got = self.received(res)
        res.update(
            size=size, mps=mps, refused_mps=refused, received=got, refused_counters=refused_counters
        )
        res["sent_per_s"] = round(res["sent"] / res["seconds"], 1) if res["seconds"] else None
        if got is not None and res["seconds"]:
            got = min(got, res["sent"])  # the window also holds sockperf's warm-up messages
            res["msgs_per_s"] = round(got / res["seconds"], 1)
            res["mbps"] = round(got * size * 8 / res["seconds"] / 1e6, 2)
            res["loss_pct"] = round(100.0 * (1 - got / res["sent"]), 3) if res["sent"] else None
        return res

    def native_pingpong(
        self, api: str, rt: bool, flood_dev, *, stamped=False, seconds=None
    ) -> dict:
        """tools/sockperf_native.c: api "native" (rtn_app.h) or "posix" (sockets; through
        rtnet-run when ``rt``, else the kernel's)."""
        seconds = seconds or self.a.seconds
        port = NATIVE_PORT if api == "native" else POSIX_PORT
        common = ["--api", api, "--port", str(port)]
        if stamped:
            common.append("--stamped")
        srv_args = [self.exe, "server", *common, "--ip", self.s2.ip]
        cli_args = [
            self.exe,
            "client",
            *common,
            "--ip",
            self.s1.ip,
            "--peer",
            self.s2.ip,
            "--size",
            str(PP_SIZE),
            "--seconds",
            f"{seconds:g}",
        ]
        if api == "native":
            srv_args += ["--netns", self.s2.netns]
            cli_args += ["--netns", self.s1.netns]
        srv = self.start_logged(self.s2, srv_args, rt=rt and api == "posix")
        try:
            self.wait_line(srv, r"^ready", 20, f"sockperf_native server ({api})")

            def go():
                cli = self.start(
                    self.s1, cli_args, rt=rt and api == "posix", stderr=subprocess.PIPE
                )
                out = self.run_to_end(cli, seconds + 60, f"sockperf_native client ({api})")
                return json.loads(out.strip().splitlines()[-1])

            res = self.window(go, flood_dev)
        finally:
            out = self.stop(srv, signal.SIGTERM)
        with contextlib.suppress(ValueError, IndexError):
            res["server"] = json.loads(out.strip().splitlines()[-1])
        rtt = res.pop("rtt_us", {})
        res.update({k: rtt.get(k) for k in ("min", "p50", "p99", "p99.9", "max", "avg")})
        return res

    # -- flood -------------------------------------------------------------------------
    @contextlib.contextmanager
    def flood(self, on: bool, via_vnic: bool):
        if not on:
            yield None
            return
        dst = "198.19.0.2" if via_vnic else self.s2.ip
        dev = "vnic0" if via_vnic else "rteth0"
        srv = self.start(
            self.s2,
            ["iperf3", "-s", "-B", dst, "-p", str(IPERF_PORT)],
            rt=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.wait_for(
            lambda: listening(srv.pid, IPERF_PORT) or srv.poll() is not None, 10, "iperf3 -s"
        )
        if srv.poll() is not None:
            raise BenchError(f"iperf3 -s on {dst} ended at once (exit {srv.poll()})")
        cli = self.start(
            self.s1,
            iperf_udp_flood(dst, FLOOD_MBPS, FLOOD_LEN, 3600),
            rt=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            time.sleep(1.0)  # let the flood fill the queues before measuring
            if cli.poll() is not None:
                raise BenchError(f"the iperf3 flood to {dst} ended at once (exit {cli.poll()})")
            yield dev
        finally:
            self.stop(cli, signal.SIGTERM)
            self.stop(srv, signal.SIGTERM)

    # -- phases ------------------------------------------------------------------------
    def measure_sockperf(self, rt: bool, flood_dev, ladder: dict | None = None) -> dict:
        """Ping-pong and throughput against one sockperf server; ``ladder`` remembers per
        size the rate the idle measurement could offer, where the flood's starts."""
        srv = self.sockperf_server(rt)
        try:
            out = {"pp": self.sockperf_pingpong(rt, flood_dev)}
            if self.a.throughput:
                for size in TP_SIZES:
                    first = (ladder or {}).get(size, 0)
                    out[f"tp{size}"] = m = self.sockperf_throughput(rt, size, flood_dev, first)
                    if ladder is not None and m.get("mps") in MPS_LADDER:
                        ladder[size] = MPS_LADDER.index(m["mps"])
        finally:
            text = self.stop(srv)
        out["server_received_total"] = parse_server_total(text)
        return out

    def phase_kernel(self, res: dict, key="kernel") -> None:
        cols = res["columns"]
        log(f"# {key}: plain Linux UDP over rteth0 (no rtnetd)")
        # one discarded second first: the first exchanges of a fresh lab are slower
        srv = self.sockperf_server(False)
        try:
            cli = self.start(
                self.s1,
                self.client_argv("ping-pong", PP_SIZE, 1),
                rt=False,
            )
            self.run_to_end(cli, 60, "sockperf ping-pong (warm-up)")
        finally:
            self.stop(srv)
        ladder = {}
        cols["kernel"] = {"idle": self.measure_sockperf(False, None, ladder)}
        res["extra"]["posix_kernel"] = self.native_pingpong("posix", False, None)
        self.show("kernel idle", cols["kernel"]["idle"])
        if self.a.flood:
            with self.flood(True, via_vnic=False) as dev:
                cols["kernel"]["flood"] = self.measure_sockperf(False, dev, ladder)
            self.show("kernel flood", cols["kernel"]["flood"])

    def phase_nomac(self, res: dict) -> None:
        cols, want = res["columns"], self.a.columns
        log("# nomac: the real-time path under NoMAC (rtnetd on both stations)")
        self.daemons_up("nomac")
        ladder = {}
        try:
            for load in ("idle", "flood") if self.a.flood else ("idle",):
                with self.flood(load == "flood", via_vnic=True) as dev:
                    # sockperf and the native ping-pong one after the other, in an order
                    # that alternates from run to run
                    order = ["nomac", "native"]
                    if res["run_index"] % 2 == 0:
                        order.reverse()
                    for col in order:
                        if col not in want:
                            continue
                        if col == "nomac":
                            cols.setdefault("nomac", {})[load] = self.measure_sockperf(
                                True, dev, ladder
                            )
                        else:
                            cols.setdefault("native", {})[load] = {
                                "pp": self.native_pingpong("native", True, dev)
                            }
                    if load == "idle":
                        # the same C program over POSIX sockets through rtnet-run: the
                        # interposer alone, without sockperf's own cost; and stamped
                        # datagrams for where the time goes
                        res["extra"]["posix_rt"] = self.native_pingpong("posix", True, None)
                        res["extra"]["stamped"] = self.native_pingpong(
                            "native", True, None, stamped=True, seconds=min(self.a.seconds, 3.0)
                        )
                for col in order:
                    if col in want:
                        self.show(f"{col} {load}", cols[col][load])
        finally:
            self.daemons_down()

    def phase_tdma(self, res: dict) -> None:
        cols = res["columns"]
        log(f"# tdma: the real-time path under TDMA ({CYCLE_US} us cycle, master + slave)")
        self.daemons_up("tdma")
        ladder = {}
        try:
            cols["tdma"] = {"idle": self.measure_sockperf(True, None, ladder)}
            self.show("tdma idle", cols["tdma"]["idle"])
            if self.a.flood:
                with self.flood(True, via_vnic=True) as dev:
                    cols["tdma"]["flood"] = self.measure_sockperf(True, dev, ladder)
                self.show("tdma flood", cols["tdma"]["flood"])
        finally:
            self.daemons_down()

    def show(self, label: str, m: dict) -> None:
        pp = m.get("pp", {})
        line = (
            f"#   {label:<14} rtt p50 {fmt(pp.get('p50'))} p99 {fmt(pp.get('p99'))} "
            f"p99.9 {fmt(pp.get('p99.9'))} max {fmt(pp.get('max'))} us"
        )
        for size in TP_SIZES:
            tp = m.get(f"tp{size}")
            if tp:
                line += f"; tp{size} {fmt(tp.get('msgs_per_s'), 0)} msg/s"
        if pp.get("disturbed"):
            line += " [disturbed]"
        if pp.get("flood_delivered_mbps") is not None:
            line += f"; flood {pp['flood_delivered_mbps']} Mbit/s"
        log(line)

    def measure(self, run_index: int) -> dict:
        from rtnet.stall import StallDetector

        a = self.a
        res = {"run_index": run_index, "columns": {}, "extra": {}, "settings": settings(a)}
        if self.lab.exists():
            self.lab.down()  # leftovers of an interrupted run
        self.lab.up()
        with StallDetector([WITNESS_CPU], period_us=500, threshold_us=100) as det:
            self.det = det
            self.phase_kernel(res)  # the baseline every run needs
            if "nomac" in a.columns or "native" in a.columns:
                self.phase_nomac(res)
            if "tdma" in a.columns:
                self.phase_tdma(res)
            log("# kernel again: the idle baseline at the end of the run")
            srv = self.sockperf_server(False)
            try:
                end = self.sockperf_pingpong(False, None)
            finally:
                self.stop(srv)
            res["extra"]["kernel_idle_end"] = end
            log(f"#   kernel idle (end) rtt p50 {fmt(end.get('p50'))} us")
        self.det = None
        return res

    def close(self) -> None:
        self.kill_all()
        with contextlib.suppress(Exception):
            self.daemons_down()
        from rtnet import cli

        for st in (self.s1, self.s2):  # also after a crash mid-start
            with contextlib.redirect_stdout(sys.stderr), contextlib.suppress(Exception):
                if os.path.exists(os.path.join(os.environ["RTNET_RUN_DIR"], st.netns)):
                    cli.main(["down", "-n", st.netns])
        self.lab.down()


def settings(a) -> dict:
    return {
        "seconds": a.seconds,
        "columns": a.columns,
        "throughput": a.throughput,
        "pingpong_size": PP_SIZE,
        "throughput_sizes": TP_SIZES,
        "flood": {
            "on": a.flood,
            "tool": "iperf3 -u",
            "mbps": FLOOD_MBPS,
            "len": FLOOD_LEN,
            "kernel_path": "rteth0 (Linux, no stack)",
            "stack_path": "vnic0 (the stack's Linux path, RTmac frames on rteth0)",
        },
        "tdma": {
            "cycle_us": CYCLE_US,
            "link_rate_mbps": LINK_MBPS,
            "guard_us": a.guard_us,
            "rt_slot_size": 1200,
        },
        "cpu_plan": {
            "station_rt_threads": a.rt_cpu if a.rt_cpu >= 0 else "not pinned",
            "station_priority": STATION_PRIO,
            "applications": "not pinned, SCHED_OTHER",
            "stall_detector": WITNESS_CPU,
        },
        "disturbed_ms": DISTURBED_MS,
        "baseline_tolerance": BASELINE_TOL,
        "kernel": os.uname().release,
    }


def fmt(v, nd=1) -> str:
    return "-" if v is None else f"{v:,.{nd}f}"
