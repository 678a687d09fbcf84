#!/usr/bin/env python3
"""Soak: a three-station segment under everything at once, with faults on a schedule.

    python3 -m tools.soak --minutes 30 [--fault-interval 30] [--json results/soak.json]

The segment is `rtnetctl lab up`'s (rtnet/labdemo/): station 1 the primary
master, station 2 the backup master, station 3 a slave, 1 ms cycle, each with
its rtnetd and vnic0.  Running all the time:

- real time: a cyclic publisher on station 3 sends one message per cycle to a
  subscriber on station 2 (tools/soak_app.py, each its own process, so either
  can be killed without warning); every message carries (run, number);
- Linux traffic: iperf3 TCP from station 3 and UDP (10 Mbit/s) from station 2
  to station 1 over vnic0, started again whenever a run ends;
- CPU load: stress-ng on every CPU at SCHED_OTHER.

Faults, in turn, every --fault-interval seconds:

- forge:  a rogue on the wire sends Syncs with the master's MAC (stamps 2^63 ns
          ahead, cycle number 2^31 - 1 ahead, zero stamps), Syncs from another MAC,
          calibration requests for far cycles, replies never asked for, garbage;
- master: the master's rtnetd is SIGKILLed and started again (`rtnetctl up`);
- pub:    the publisher is SIGKILLed in the middle of sending, then started again;
- sub:    the subscriber is SIGKILLed, then started again.

Checked all the time: every rtnetd answers `status` within 5 s (else a hang), its
RT thread runs, no daemon uses more than 80% of a CPU over 10 s (a spin), every
process we did not kill is alive (else a crash), and after each fault the
segment is back (master active, backup stand-by, slave synchronised) within 20 s.
At the end it prints every counter of every station and the real-time account:
messages sent, received, lost, and for each loss the fault that explains it (a
killed publisher's or subscriber's messages in flight, the subscriber's down
time).  A loss no fault explains, a duplicate, a crash or a hang fails the run.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from rtmac import frames
from rtnet import labdemo, netns, paths, stationctl
from rtnet.argtypes import integer, number
from rtnet.lab import Lab
from rtnet.sigterm import unwind_on_sigterm

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FAULTS = ("forge", "master", "pub", "sub")
HEALTHY = {1: "active", 2: "stand-by", 3: "synchronised"}
# a loss up to this long after a fault that can cause it is put down to that fault
EXPLAIN_WINDOW_S = 3.0


class SoakFailure(Exception):
    pass


def status(st, timeout=5.0) -> dict:
    return stationctl.request("rteth0", {"cmd": "status"}, netns=st.netns, timeout=timeout)[
        "status"
    ]


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


class Soak:
    def __init__(self, args):
        self.args = args
        self.lab = Lab("soak", 3)
        self.workdir = tempfile.mkdtemp(prefix="rtn-soak-")
        self.daemons: dict[int, int] = {}  # station index -> rtnetd pid
        self.faults: list[dict] = []  # what was injected, when, how it went
        self.failures: list[str] = []
        self.apps: dict[str, object] = {}
        self.app_logs = {
            "pub": os.path.join(self.workdir, "pub.log"),
            "sub": os.path.join(self.workdir, "sub.log"),
        }
        self.stop_traffic = threading.Event()
        self.traffic = {
            "tcp_bytes": 0,
            "tcp_runs": 0,
            "udp_bytes": 0,
            "udp_runs": 0,
            "failed_runs": 0,
        }
        self.procs = []  # long-running helpers we started
        self.restarting: set[int] = set()
        self.cpu_marks: dict[int, tuple[float, float]] = {}

    # ---- set-up --------------------------------------------------------------
    def start_daemon(self, st) -> None:
        conf = os.path.join(paths.station_dir(st.netns), "rtnet.toml")
        os.makedirs(os.path.dirname(conf), exist_ok=True)
        with open(conf, "w") as f:
            f.write(labdemo.station_toml(st.index, self.lab.n))
        self.daemons[st.index] = stationctl.up(conf, netns=st.netns)["pid"]
        self.cpu_marks.pop(st.index, None)

    def wait_healthy(self, timeout: float) -> float:
        t0 = time.monotonic()
        while True:
            try:
                states = {
                    st.index: (status(st).get("tdma") or {}).get("state")
                    for st in self.lab.stations
                }
            except Exception as e:  # a daemon still starting: try again until the deadline
                states = {"error": str(e)}
            if states == HEALTHY:
                return time.monotonic() - t0
            if time.monotonic() - t0 > timeout:
                raise SoakFailure(f"segment not back within {timeout:g} s: {states}")
            time.sleep(0.1)  # other processes' state: poll

    def start_app(self, kind: str) -> None:
        pub_st, sub_st = self.lab.station(3), self.lab.station(2)
        argv = [sys.executable, "-m", "tools.soak_app"]
        if kind == "pub":
            argv += ["pub", pub_st.netns, sub_st.mac, self.app_logs["pub"]]
        else:
            argv += ["sub", sub_st.netns, self.app_logs["sub"]]
        proc = self.lab.spawn(
            pub_st if kind == "pub" else sub_st,
            argv,
            cwd=REPO,
            env=dict(os.environ, PYTHONPATH=REPO),
        )
        self.apps[kind] = proc

    def spawn_helper(self, station, argv):
        proc = self.lab.spawn(station, argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(proc)
        return proc

    def iperf_loop(self, station, udp: bool) -> None:
        port = 5202 if udp else 5201
        argv = ["iperf3", "-c", "198.19.0.1", "-p", str(port), "-t", "10", "-J"]
        if udp:
            argv += ["-u", "-b", "10M"]
        key = "udp" if udp else "tcp"
        while not self.stop_traffic.is_set():
            proc = self.lab.spawn(
                station, argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
            )
            try:
                out = proc.communicate(timeout=40)[0]
                end = json.loads(out).get("end", {})
                part = end.get("sum_received") or end.get("sum") or {}
                self.traffic[f"{key}_bytes"] += int(part.get("bytes", 0))
                self.traffic[f"{key}_runs"] += 1
            except (subprocess.TimeoutExpired, ValueError):
                self.traffic["failed_runs"] += 1
                self.stop_traffic.wait(1.0)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
                self.lab.forget(proc)

    # ---- faults --------------------------------------------------------------
    def fault_forge(self) -> dict:
        m = self.lab.station(1)
        tdma = status(m)["tdma"]
        cycle = tdma["cycle_no"]
        sent = 0
        with (
            netns.entered(self.lab.wire_netns),
            socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as raw,
        ):
            raw.bind(("rtbr0", 0))
            now = time.monotonic_ns()
            for k in range(150):
                n = cycle + k
                stamp, no = [((1 << 63) + now, n + 1), (now, n + 0x7FFFFFFF), (0, n + 1)][k % 3]
                raw.send(
                    frames.encode_sync(
                        src=m.mac,
                        cycle_no=no & 0xFFFFFFFF,
                        xmit_stamp=stamp,
                        sched_xmit_stamp=stamp,
                    )
                )
                raw.send(
                    frames.encode_sync(
                        src="02:99:99:99:99:99",
                        cycle_no=(n + 1) & 0xFFFFFFFF,
                        xmit_stamp=now + 50_000,
                        sched_xmit_stamp=now,
                    )
                )
                raw.send(
                    frames.encode_req_cal(
                        dst=m.mac,
                        src="02:99:99:99:99:99",
                        xmit_stamp=k,
                        reply_cycle=(n + 10**6) & 0xFFFFFFFF,
                        reply_slot_offset=500_000,
                    )
                )
                raw.send(
                    frames.encode_rpl_cal(
                        dst=self.lab.station(3).mac,
                        src=m.mac,
                        request_xmit_stamp=k,
                        reception_stamp=2**63,
                        xmit_stamp=1,
                    )
                )
                raw.send(bytes.fromhex("ffffffffffff029999999999") + b"\x90\x21" + os.urandom(46))
                sent += 5
                time.sleep(0.002)  # the rogue's pace: one burst per two cycles
        return {"frames": sent}

    def fault_master(self) -> dict:
        st = self.lab.station(1)
        pid = self.daemons[1]
        self.restarting.add(1)
        try:
            os.kill(pid, signal.SIGKILL)
            while alive(pid):
                time.sleep(0.01)  # another process ending: poll
            self.start_daemon(st)
        finally:
            self.restarting.discard(1)
        return {"old_pid": pid, "new_pid": self.daemons[1]}

    def fault_app(self, kind: str) -> dict:
        proc = self.apps[kind]
        proc.kill()
        proc.wait()
        self.lab.forget(proc)
        self.start_app(kind)
        return {"old_pid": proc.pid, "new_pid": self.apps[kind].pid}

    def inject(self, kind: str) -> None:
        t0 = time.monotonic()
        info = (
            self.fault_forge()
            if kind == "forge"
            else self.fault_master()
            if kind == "master"
            else self.fault_app(kind)
        )
        rec = {"kind": kind, "t": t0, **info}
        rec["recovered_s"] = round(self.wait_healthy(20.0), 3)
        rec["t_end"] = time.monotonic()
        self.faults.append(rec)
        print(
            f"  {time.strftime('%H:%M:%S')} fault {kind:<6} recovered in "
            f"{rec['recovered_s']:.2f} s {info}",
            flush=True,
        )

    # ---- watching ------------------------------------------------------------
    def check(self) -> None:
        for st in self.lab.stations:
            if st.index in self.restarting:
                continue
            pid = self.daemons[st.index]
            if not alive(pid):
                raise SoakFailure(f"station {st.index}: rtnetd pid {pid} died (not killed by us)")
            try:
                s = status(st)
            except Exception as e:
                raise SoakFailure(
                    f"station {st.index}: rtnetd pid {pid} did not answer status within 5 s: {e}"
                )
            if not s.get("running", True):
                raise SoakFailure(f"station {st.index}: the RT thread stopped")
            now, cpu = time.monotonic(), cpu_seconds(pid)
            t_prev, c_prev = self.cpu_marks.setdefault(st.index, (now, cpu))
            if now - t_prev >= 10:
                share = (cpu - c_prev) / (now - t_prev)
                if share > 0.8:
                    raise SoakFailure(
                        f"station {st.index}: rtnetd used {share:.0%} of a CPU "
                        f"for {now - t_prev:.0f} s (a spin)"
                    )
                self.cpu_marks[st.index] = (now, cpu)
        for kind, proc in self.apps.items():
            if proc.poll() is not None:
                raise SoakFailure(
                    f"the {kind} application ended by itself (exit {proc.returncode})"
                )

    # ---- accounting ----------------------------------------------------------
    def account(self) -> dict:
        """Messages sent, received and lost, each loss with the fault that explains it."""
        sent = {}
        for line in open(self.app_logs["pub"]):
            _ev, _t, run, k = line.split()
            sent[int(run)] = max(sent.get(int(run), 0), int(k))
        lives, cur = [], None  # one entry per subscriber process life
        for line in open(self.app_logs["sub"]):
            ev, t, run, *rest = line.split()
            t, run = float(t), int(run)
            if ev == "first" and (cur is None or run in cur["first"]):
                cur = {"first": {}, "last": {}, "received": {}, "gaps": [], "old": 0}
                lives.append(cur)
            if ev == "first":
                cur["first"][run] = (t, int(rest[0]))
            elif ev == "gap":
                cur["gaps"].append((t, run, int(rest[0]), int(rest[1])))
            elif ev == "old":
                cur["old"] += 1
            elif ev == "at":
                cur["last"][run] = (t, int(rest[0]))
                cur["received"][run] = int(rest[1])

        def explained_by(t, kinds):
            for f in self.faults:
                if f["kind"] in kinds and f["t"] - 0.5 <= t <= f["t_end"] + EXPLAIN_WINDOW_S:
                    return f["kind"]
            return None

        lost_explained: dict[str, int] = {}
        unexplained = []
        for life in lives:
            for t, run, k0, k1 in life["gaps"]:
                why = explained_by(t, ("pub", "sub", "master"))
                if why:
                    lost_explained[why] = lost_explained.get(why, 0) + (k1 - k0)
                else:
                    unexplained.append({"t": t, "run": run, "lost": k1 - k0})
        # between two subscriber lives: what the next one did not see of a run is the
        # down time of the subscriber
        for a, b in zip(lives, lives[1:]):
            for run, (_t, k_first) in b["first"].items():
                if run in a["last"]:
                    n = k_first - a["last"][run][1] - 1
                    if n > 0:
                        lost_explained["sub"] = lost_explained.get("sub", 0) + n
        received = sum(sum(life["received"].values()) for life in lives)
        duplicates = sum(life["old"] for life in lives)
        return {
            "sent": sum(sent.values()),
            "received": received,
            "runs": len(sent),
            "subscriber_lives": len(lives),
            "lost_explained": lost_explained,
            "lost_unexplained": unexplained,
            "duplicates_or_reordered": duplicates,
        }

    # ---- the run -------------------------------------------------------------
    def run(self) -> dict:
        a = self.args
        self.lab.down()
        self.lab.up()
        for st in self.lab.stations:
            self.start_daemon(st)
        print(f"soak: {self.lab.n} stations up, waiting for the segment", flush=True)
        self.wait_healthy(30.0)
        s1 = self.lab.station(1)
        for port in (5201, 5202):
            self.spawn_helper(s1, ["iperf3", "-s", "-p", str(port)])
        self.procs.append(
            subprocess.Popen(
                [
                    "stress-ng",
                    "--cpu",
                    str(os.cpu_count() or 1),
                    "--cpu-load",
                    str(a.cpu_load),
                    "--quiet",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        self.start_app("sub")
        self.start_app("pub")
        loops = [
            threading.Thread(
                target=self.iperf_loop, args=(self.lab.station(3), False), daemon=True
            ),
            threading.Thread(target=self.iperf_loop, args=(self.lab.station(2), True), daemon=True),
        ]
        for t in loops:
            t.start()
        before = {st.index: status(st) for st in self.lab.stations}
        t0 = time.monotonic()
        end = t0 + a.minutes * 60
        next_fault, k = t0 + a.fault_interval, 0
        print(
            f"soak: running {a.minutes:g} min, a fault every {a.fault_interval:g} s "
            f"({', '.join(FAULTS)})",
            flush=True,
        )
        try:
            while time.monotonic() < end:
                self.check()
                if time.monotonic() >= next_fault:
                    self.inject(FAULTS[k % len(FAULTS)])
                    k += 1
                    next_fault = time.monotonic() + a.fault_interval
                time.sleep(2.0)  # the watch interval
        except SoakFailure as e:
            self.failures.append(str(e))
            print(f"soak: FAILED: {e}", flush=True)
        finally:
            self.stop_traffic.set()
            for kind in ("pub", "sub"):
                proc = self.apps.get(kind)
                if proc is not None:
                    self.lab.stop(proc, timeout=5)  # SIGTERM: both write their last account
            for t in loops:
                t.join(timeout=60)
        after = {}
        for st in self.lab.stations:
            try:
                after[st.index] = status(st)
            except Exception as e:
                self.failures.append(f"station {st.index}: no final status: {e}")
        rt = self.account()
        if rt["lost_unexplained"]:
            self.failures.append(
                f"{sum(x['lost'] for x in rt['lost_unexplained'])} RT messages "
                f"lost with no fault to explain them: {rt['lost_unexplained'][:10]}"
            )
        if rt["duplicates_or_reordered"]:
            self.failures.append(
                f"{rt['duplicates_or_reordered']} RT messages delivered twice or out of order"
            )
        return {
            "minutes": a.minutes,
            "fault_interval_s": a.fault_interval,
            "cpu_load": a.cpu_load,
            "elapsed_s": round(time.monotonic() - t0, 1),
            "faults": self.faults,
            "rt": rt,
            "traffic": self.traffic,
            "stations_before": before,
            "stations_after": after,
            "failures": self.failures,
        }

    def close(self) -> None:
        self.stop_traffic.set()
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            self.lab.forget(proc)
        for st in self.lab.stations:
            try:
                stationctl.down("rteth0", netns=st.netns)
            except Exception as e:  # report and go on cleaning
                print(f"soak: stopping station {st.index}: {e}", file=sys.stderr)
        self.lab.down()


def flat_counters(prefix: str, obj, out: dict) -> None:
    """Every number in a status reply, as dotted names (histograms by their summary)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in ("bins", "nonzero_bins_us"):
                continue
            flat_counters(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif isinstance(obj, bool):
        return
    elif isinstance(obj, (int, float)):
        out[prefix] = obj


def report(result: dict) -> None:
    rt, tr = result["rt"], result["traffic"]
    print("\nsoak: every counter at the end (change over the run where it is a counter):")
    for idx in sorted(result["stations_after"]):
        a, b = {}, {}
        flat_counters("", result["stations_after"][idx], a)
        flat_counters("", result["stations_before"].get(idx, {}), b)
        print(f"  station {idx}:")
        for k in sorted(a):
            print(f"    {k} = {a[k]}" + (f"  (+{a[k] - b[k]})" if k in b and a[k] != b[k] else ""))
    kinds = {}
    for f in result["faults"]:
        kinds.setdefault(f["kind"], []).append(f["recovered_s"])
    print("\nsoak: faults injected (count, slowest recovery):")
    for k, v in kinds.items():
        print(f"  {k:<7} {len(v):3d}  {max(v):.2f} s")
    print(
        f"\nsoak: RT messages: {rt['sent']} sent in {rt['runs']} publisher runs, "
        f"{rt['received']} received over {rt['subscriber_lives']} subscriber lives"
    )
    print(f"      lost and explained by a fault: {rt['lost_explained'] or 'none'}")
    print(
        f"      lost with no explanation: {sum(x['lost'] for x in rt['lost_unexplained'])}; "
        f"duplicated or out of order: {rt['duplicates_or_reordered']}"
    )
    print(
        f"soak: VNIC: TCP {tr['tcp_bytes'] / 1e6:.1f} MB in {tr['tcp_runs']} runs, "
        f"UDP {tr['udp_bytes'] / 1e6:.1f} MB in {tr['udp_runs']} runs, "
        f"{tr['failed_runs']} runs cut by faults"
    )
    print(
        f"soak: {'PASSED' if not result['failures'] else 'FAILED: ' + '; '.join(result['failures'])}"
    )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=number("minutes", 0.5, 24 * 60), default=30.0)
    p.add_argument(
        "--fault-interval",
        type=number("fault interval", 5, 3600),
        default=30.0,
        help="seconds between two faults (default 30)",
    )
    p.add_argument(
        "--cpu-load",
        type=integer("CPU load", 0, 100),
        default=50,
        help="stress-ng load per CPU in percent (default 50)",
    )
    p.add_argument("--json", default=os.path.join(REPO, "results", "soak.json"))
    a = p.parse_args(argv)
    if os.geteuid() != 0:
        print("soak: needs root (network namespaces, AF_XDP)", file=sys.stderr)
        return 2
    soak = Soak(a)
    try:
        result = soak.run()
    finally:
        soak.close()
    os.makedirs(os.path.dirname(a.json), exist_ok=True)
    with open(a.json, "w") as f:
        json.dump(result, f, indent=1, default=str)
    report(result)
    print(f"soak: written to {a.json}")
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    unwind_on_sigterm()  # stopped with SIGTERM, a run takes its lab down as on Ctrl-C
    sys.exit(main())
