"""What rtnetctl does with a station daemon: start it, stop it, ask it things.

``up`` checks the configuration first (nothing starts on an error), starts
rtnetd detached (own session, output to ``<station dir>/<dev>.log``) inside
the requested network namespace, and waits until its control socket answers
``status``; if the daemon exits first, its last ``rtnetd:`` line becomes the
error.  A daemon started in a lab station's namespace (``rtn-<lab>-sN``) is
also recorded with the lab, so ``rtnetctl lab down`` stops it too.

With RTcfg (rtnet.conf by default, as ``rtnet start``; rtnet.toml with
``[rtcfg] enabled``; ``rtcfg=True/False`` overrides) ``up`` then runs the
RTcfg bring-up (rtnet.rtcfg.startup): a master serves the stations of its
configuration and waits until all are configured and ready, a slave waits
for the master's configuration and the other stations.  It prints RTnet's
stage messages through ``say``.  If a step fails or the time-out
(``rtcfg.timeout_s``, RTCFG_TIMEOUT) passes, the daemon is stopped again:
a station that is not fully configured does not stay on the segment, and
``rtnetctl up`` can simply be run again.

``down`` sends SIGTERM to the PID in the PID file (only if that file is
still locked, i.e. a daemon owns it), waits, and then removes what a dead
daemon may have left: socket, PID file and the XDP program on the device.
"""

from __future__ import annotations

import errno
import fcntl
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict

from . import configfile, control_client, ipv4, nicqueues, paths, procs
from . import netns as _netns
from ._lowlevel import last_error, lib
from .errors import RtnetError

START_TIMEOUT = 60.0  # a loaded 2-vCPU machine imports slowly
STOP_TIMEOUT = 10.0


class StationCtlError(RtnetError):
    """Starting, stopping or talking to a station daemon failed."""


def _fail(message: str, err: int):
    raise StationCtlError(err, message)


def _warn(message: str) -> None:
    """One line on stderr for what was found and left alone (the command goes on)."""
    print(f"rtnetctl: {message}", file=sys.stderr)


# -- talking to the daemon --------------------------------------------------------------------


def request(
    dev: str, req: dict, *, netns: str | None = None, timeout: float = 30.0, on_event=None
) -> dict:
    """Send one request; lines without "ok" are events (ping) given to ``on_event``."""
    try:
        return control_client.call(
            dev, {**req, "dev": dev}, netns=netns, timeout=timeout, on_event=on_event
        )
    except control_client.ControlClientError as exc:
        if exc.no_daemon:
            _fail(
                f"{dev}: no rtnetd running{' in ' + netns if netns else ''} "
                f"(start it with rtnetctl up)",
                exc.errno,
            )
        if exc.errno == errno.EACCES and exc.filename:
            _fail(f"{exc.filename}: permission denied (root or the status group needed)", exc.errno)
        if exc.filename:  # could not connect: the message names the socket
            _fail(exc.strerror, exc.errno)
        _fail(f"{dev}: {exc.strerror}", exc.errno)


# -- up / down ---------------------------------------------------------------------------------


def daemon_owns(pid_path: str) -> bool:
    """Whether a live daemon holds the PID file's lock."""
    try:
        fd = os.open(pid_path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _read_pid(path):
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _record_with_lab(netns: str | None, pid: int) -> None:
    import re

    from .lab import Lab

    m = re.fullmatch(r"rtn-([a-z0-9]{1,10})-s\d+", netns or "")
    if not m:
        return
    lab = Lab(m.group(1), 1)
    os.makedirs(lab.pid_dir, exist_ok=True)
    with open(os.path.join(lab.pid_dir, f"{pid}.pid"), "w") as f:
        f.write(f"{pid} {procs.start_time(pid)} {netns}\n")


def _last_daemon_line(log_path: str) -> str | None:
    try:
        with open(log_path, errors="replace") as f:
            lines = [ln.strip() for ln in f if ln.startswith("rtnetd: ")]
    except OSError:
        return None
    return lines[-1][len("rtnetd: ") :] if lines else None


def up(
    config_path: str,
    *,
    dev: str | None = None,
    netns: str | None = None,
    timeout: float = START_TIMEOUT,
    rtcfg: bool | None = None,
    say=None,
    redundant_dev: str | None = None,
) -> dict:
    if netns is not None and not _netns.exists(netns):
        _fail(f"network namespace {netns!r} does not exist", errno.ENOENT)
    cfg = configfile.load(config_path, rtcfg=rtcfg)  # ConfigError: nothing started
    dev = dev or cfg.device
    sock_path = paths.control_socket(dev, netns)
    pid_path = paths.pid_file(dev, netns)
    pid = _read_pid(pid_path)
    if daemon_owns(pid_path) and (pid is None or procs.running(pid)):
        _fail(f"{dev}: rtnetd already running (pid {pid})", errno.EEXIST)
    station_dir = os.path.dirname(sock_path)
    os.makedirs(station_dir, mode=0o755, exist_ok=True)
    log_path = os.path.join(station_dir, f"{dev}.log")
    argv = [
        sys.executable,
        "-m",
        "rtnet.daemon",
        "-c",
        os.path.abspath(config_path),
        "--dev",
        dev,
    ] + (["--redundant-dev", redundant_dev] if redundant_dev else [])
    if rtcfg is not None:
        argv.append("--rtcfg" if rtcfg else "--no-rtcfg")
    if netns:
        argv = _netns.command(netns, argv)
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    env["RTNET_RUN_DIR"] = paths.base_dir()
    with open(log_path, "ab") as log:
        log.write(f"--- rtnetctl up {time.strftime('%Y-%m-%d %H:%M:%S')}\n".encode())
        log.flush()
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            env=env,
            close_fds=True,
        )
    _record_with_lab(netns, proc.pid)
    deadline = time.monotonic() + timeout
    while True:
        rc = proc.poll()
        if rc is not None:
            why = _last_daemon_line(log_path) or f"exited with status {rc}"
            _fail(why if why.startswith(dev) or ":" in why else f"{dev}: {why}", errno.ESRCH)
        if os.path.exists(sock_path):
            try:
                st = request(dev, {"cmd": "status"}, netns=netns, timeout=5.0)["status"]
                break
            except StationCtlError:
                pass
        if time.monotonic() > deadline:
            proc.terminate()
            _fail(
                f"{dev}: rtnetd did not answer within {timeout:g} s (see {log_path})",
                errno.ETIMEDOUT,
            )
        time.sleep(0.05)  # the daemon is a separate process: poll its socket
    info = {
        "dev": dev,
        "pid": proc.pid,
        "netns": netns,
        "log": log_path,
        "discipline": st["discipline"],
        "socket": sock_path,
    }
    if cfg.rtcfg is not None:
        info["rtcfg"] = _rtcfg_up(cfg.rtcfg, dev, netns, say or (lambda _: None))
    return info


def _rtcfg_up(setup, dev: str, netns: str | None, say) -> dict:
    """The RTcfg bring-up; on any failure the daemon is stopped again (one error line)."""
    from .rtcfg import startup

    def call(req, timeout):
        return request(dev, req, netns=netns, timeout=timeout)

    try:
        return startup.run(setup, call, say)
    except startup.StartupError as exc:
        down(dev, netns=netns)
        _fail(f"{dev}: RTcfg {exc.strerror} (rtnetd stopped again)", exc.errno)
    except BaseException:  # Ctrl-C while waiting: nothing half-up stays either
        down(dev, netns=netns)
        raise


def cleanup_leftovers(dev: str, netns: str | None) -> list[str]:
    """Remove what a dead daemon left: socket, PID file, XDP program, and put back the
    receive queues it had changed."""
    cleaned = []
    for path, what in (
        (paths.control_socket(dev, netns), "socket"),
        (paths.pid_file(dev, netns), "PID file"),
    ):
        if os.path.exists(path):
            os.unlink(path)
            cleaned.append(what)
    record = paths.queue_record(dev, netns)
    try:  # the namespace may be gone too
        with _netns.entered(netns):
            n = lib.rtn_xdp_detach(dev.encode())
            restored = nicqueues.restore_recorded(record, warn=_warn)
    except OSError:
        n, restored = 0, []
    cleaned += [f"queues ({c.device} combined {c.was} again)" for c in restored]
    if n > 0:
        cleaned.append("XDP program")
    elif n < 0 and n != -errno.ENODEV:
        _fail(last_error(), -n)
    return cleaned


def down(dev: str, *, netns: str | None = None, timeout: float = STOP_TIMEOUT) -> dict:
    pid_path = paths.pid_file(dev, netns)
    if not os.path.exists(pid_path):
        if os.path.exists(paths.control_socket(dev, netns)) or os.path.exists(
            paths.queue_record(dev, netns)
        ):
            return {"result": "not running", "cleaned": cleanup_leftovers(dev, netns)}
        return {"result": "not running", "cleaned": []}
    pid = _read_pid(pid_path)
    if not daemon_owns(pid_path) or pid is None:
        return {"result": "was not running", "cleaned": cleanup_leftovers(dev, netns)}
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while procs.running(pid) and time.monotonic() < deadline:
        time.sleep(0.02)  # not our child: nothing to wait() on
    result = "stopped"
    if procs.running(pid):
        os.kill(pid, signal.SIGKILL)
        while procs.running(pid):
            time.sleep(0.02)
        result = "killed (did not stop within {:g} s)".format(timeout)
    return {"result": result, "pid": pid, "cleaned": cleanup_leftovers(dev, netns)}


# -- status table -----------------------------------------------------------------------------


def _us(v):
    return "-" if v is None else f"{v:.1f}"


def _against_this_host(summary: dict) -> bool:
    """Whether a histogram measured against this host's clock (the sync error, the Syncs'
    delay) says anything: only when the master's global time is this host's clock, as in
    the lab.  With the master on another host nearly every sample lies outside the
    histogram's few milliseconds (the two hosts' clocks are apart by their uptimes)."""
    outside = summary["underflow"] + summary["overflow"]
    return summary["count"] > 0 and outside * 2 < summary["count"]


def _sync_error_line(t: dict) -> str:
    se = t["sync_error"]["summary_us"]
    if not se["count"]:
        return "  sync error: - (no samples: the master's own clock, or not calibrated yet)"
    if not _against_this_host(se):
        return (
            f"  sync error: - (measured against this host's clock, which is not the "
            f"master's: {se['count']} samples outside the range)"
        )
    line = (
        f"  sync error: avg {_us(se['avg'])} us, p99 {_us(se['p99'])} us, "
        f"max {_us(se['max'])} us ({se['count']} samples)"
    )
    sd = (t.get("sync_delay") or {}).get("summary_us")
    if sd and _against_this_host(sd):
        # the error's cause: the Syncs' path against the calibrated delay
        line += f"; the Syncs' delay p50 {_us(sd['p50'])} us"
    return line


def _vnic_lines(v: dict, after_send: int) -> list[str]:
    """The VNIC's counters as `ip -s link` gives a device's: what it moved and dropped,
    what was malformed and where it came from, and what its pump did."""
    c = defaultdict(int, v)  # a daemon of an older version lacks the newer counters
    if c["mode"] == "off" and not any(x for k, x in v.items() if k != "mode"):
        return ["  vnic off"]
    return [
        f"  vnic {c['mode']}: from tap {c['tap_rx']} ({c['tap_rx_bytes']} B), to tap "
        f"{c['tap_tx']} ({c['tap_tx_bytes']} B), dropped tx {c['tx_dropped']} "
        f"rx {c['rx_dropped']}, queue drops {c['queue_drops']}; "
        f"left until after a slot's send {after_send} times",
        f"  vnic errors: malformed from the wire {c['rx_bad']}, bad vnet headers from Linux "
        f"{c['tx_bad']}, TAP read/write errors {c['tap_errors']}; ring to the wire full "
        f"{c['ring_full']} times",
        f"  vnic pump: {c['pump_wakeups']} wake-ups ({c['pump_kicks']} by the RT thread), "
        f"{c['tap_reads']} TAP reads, {c['tap_writes']} TAP writes, {c['pump_yields']} "
        f"writes held for an RT wake-up",
    ]


def format_status(s: dict) -> str:
    d = s.get("daemon", {})
    out = [
        f"{s['ifname']} {s['mac']}: rtnetd pid {d.get('pid')} ({d.get('name')}, "
        f"{d.get('config')}), up {d.get('uptime_s', 0):.0f} s"
    ]
    zc = (s.get("xsk") or {}).get("zerocopy")
    copy = "" if zc is None else (", AF_XDP zero-copy" if zc else ", AF_XDP copy mode")
    if s.get("xsk") and not s["xsk"].get("xdp_stamps"):
        copy += ", receive stamps at poll time (the kernel refuses the XDP program's helpers)"
    out.append(
        f"  xdp {s['xdp_mode']}{copy}, rt {s['rt']['policy']} prio {s['rt']['priority']} "
        f"cpu {s['rt']['cpu']}{' (fallback)' if s['rt']['fallback'] else ''}, "
        f"discipline {s['discipline']}"
    )
    for change in d.get("queues_changed") or []:
        out.append(f"  queues: {change}, so every frame reaches the bound queue 0")
    for note in d.get("queues_notes") or []:
        out.append(f"  queues: {note}")
    xsk = s.get("xsk") or {}
    if xsk.get("xdp_unbound"):
        per = ", ".join(f"{q}: {n}" for q, n in (xsk.get("xdp_unbound_queue") or {}).items())
        out.append(
            f"  {xsk['xdp_unbound']} frames of the stack arrived on queues with no socket "
            f"bound ({per or 'queues past 7'}) and went to Linux"
        )
    t = s.get("tdma")
    cfg = s.get("tdma_config") or {}
    if t:
        role = t["role"] + (" (backup)" if t.get("backup") else "")
        out.append(
            f"  TDMA {role}, state {t['state']}, cycle {t['cycle_ns'] / 1000:g} us, "
            f"cycle no {t['cycle_no']}"
        )
        out.append(_sync_error_line(t))
        cal = t["calibration"]
        out.append(
            f"  calibration: {cal['done']}/{cal['rounds']} rounds, delay (median) "
            f"{cal['delay_ns'] / 1000:.1f} us (min {cal['min_ns'] / 1000:.1f}, "
            f"max {cal['max_ns'] / 1000:.1f})"
        )
        offsets = {str(x["id"]): x for x in cfg.get("slots", [])}
        out.append(
            f"  {'slot':>4} {'offset_us':>9} {'phasing':>7} {'size':>5} {'occur':>8} "
            f"{'frames':>8} {'bytes':>10} {'missed':>7} {'late':>7} {'queued':>6} "
            f"{'expired':>7}"
        )
        for sid, c in sorted(t["slots"].items(), key=lambda kv: int(kv[0])):
            sc = offsets.get(sid, {})
            ph = f"{sc.get('phasing', '?')}/{sc.get('period', '?')}"
            out.append(
                f"  {sid:>4} {sc.get('offset_us', '?'):>9} {ph:>7} {sc.get('size', '?'):>5} "
                f"{c['occurrences']:>8} {c['frames']:>8} {c['bytes']:>10} {c['missed']:>7} "
                f"{c['late_starts']:>7} {c['queue_depth']:>6} {c.get('expired', 0):>7}"
            )
    w = s["wakeup"]["summary_us"]
    out.append(
        f"  wake-up latency: min {_us(w['min'])} avg {_us(w['avg'])} p99 {_us(w['p99'])} "
        f"max {_us(w['max'])} us ({w['count']} wake-ups)"
        + (
            f"; wakes {s['wake_early_ns'] / 1000:.0f} us early and spins to each slot "
            f"({s['early_wakes']} times in time, {s.get('rx_early', 0)} frames taken meanwhile)"
            if s.get("wake_early_ns")
            else ""
        )
    )
    out.extend(_vnic_lines(s["vnic"], s.get("rx_tunnel_after_send", 0)))
    for c in s.get("channels", []):
        out.append(
            f"  channel {c['id']}: ethertype {c['ethertype']:#06x} slot {c['slot']} "
            + (f"lifetime {c['lifetime_us']} us " if c.get("lifetime_us") else "")
            + f"tx {c['tx_msgs']} (drops {c['tx_drops']}, expired {c.get('tx_expired', 0)}) "
            f"rx {c['rx_msgs']} "
            f"(drops {c['rx_drops']}, bad headers {c.get('rx_bad_hdr', 0)})"
        )
    out.extend(format_rtcfg(s.get("rtcfg")))
    out.extend(format_frer(s.get("frer")))
    out.extend(ipv4.format_status(s.get("ipv4")))
    cap = s.get("capture")
    if cap:
        out.append(
            f"  capture: {cap['frames']} frames recorded, {cap['drops']} dropped (ring full)"
        )
    out.extend(format_stages(s.get("stages")))
    return "\n".join(out) + "\n"


def _age(ms) -> str:
    return "-" if ms is None else f"{ms / 1000:.1f} s ago"


def format_rtcfg(r: dict | None) -> list[str]:
    """RTcfg in a few lines: the role and state, then the stations seen (a server: alive,
    i.e. ready and heard from within its heartbeat threshold, or dead; a client: the
    stations it learnt from their announcements)."""
    if not r:
        return []
    c = r.get("counters", {})
    counts = (
        f"frames rx {c.get('rx', 0)} tx {c.get('tx', 0)}, refused {c.get('refused', 0)}"
        f" (heartbeats of dead stations {c.get('dead_heartbeats', 0)})"
    )
    stations = r.get("stations", [])
    if r.get("role") == "server":
        alive = sum(st["state"] == "ready" for st in stations)
        dead = sum(st["state"] == "dead" for st in stations)
        out = [
            f"  rtcfg server{' (ready)' if r.get('ready') else ''}: {len(stations)} stations, "
            f"{r.get('configured', 0)} configured, {alive} alive (ready), {dead} dead; "
            f"{counts}"
        ]
        out += [
            f"    {st.get('ip') or '-':<15} {st.get('mac') or '-':<17} "
            f"{'alive' if st['state'] == 'ready' else st['state']:<9} last heard "
            f"{_age(st.get('last_frame_age_ms'))} (invited {st.get('invited', 0)}, dead "
            f"{st.get('dead', 0)} times)"
            for st in stations
        ]
        return out
    ready = sum(bool(st.get("ready")) for st in stations)
    out = [
        f"  rtcfg client {r.get('state')}, server {r.get('server') or '-'}, ip "
        f"{r.get('ip') or '-'}: {len(stations)} stations known, {ready} ready; {counts}"
    ]
    out += [
        f"    {st.get('ip') or '-':<15} {st.get('mac') or '-':<17} "
        f"{'ready' if st.get('ready') else 'not ready'}"
        for st in stations
    ]
    return out


def format_frer(f: dict | None) -> list[str]:
    """A station with two ports: each port's frames, then each received stream's 802.1CB
    counters (passed/discarded/out of order/rogue/tagless per port, lost, resets)."""
    if not f or f.get("ports", 1) < 2:
        return []
    out = [
        f"  IEEE 802.1CB on 2 ports: history {f['history_len']}, reset {f['reset_ms']} ms, "
        f"{f['tx_redundant']} frames sent on both, {len(f['streams'])} streams received"
        f"{', refused ' + str(f['streams_refused']) if f['streams_refused'] else ''}"
    ]
    for i, p in enumerate(f["port"]):
        out.append(
            f"    port {i}: rx {p['rx_frames']} (tagged {p['rx_tagged']}, untagged "
            f"{p['rx_untagged']}, bad tags {p['bad_tags']}), tx copies {p['tx_copies']} "
            f"(refused {p['tx_errors']})"
        )
    for s in f["streams"]:
        per = " | ".join(
            f"port {i} {c['passed']}/{c['discarded']}/{c['out_of_order']}/"
            f"{c['rogue']}/{c['tagless']}"
            for i, c in enumerate(s["port"])
        )
        out.append(
            f"    stream {s['src']} {s['ethertype']:#06x}: passed/discarded/out of order/"
            f"rogue/tagless {per}; lost {s['lost']}, resets {s['resets']}"
        )
    return out


def format_stages(st: dict | None) -> list[str]:
    """The stage breakdown of received application messages (the status's JSON form), one
    line a stage, then the newest over-deadline messages with the stage that took the time."""
    if not st or not st.get("messages"):
        return []
    out = [
        f"  received application messages by stage: {st['messages']} messages, "
        f"{st['late']} over the {st['deadline_us']:g} us deadline "
        f"(outlier: a stage over {st['outlier_us']:g} us)",
        f"  {'stage':<46} {'count':>8} {'min':>8} {'avg':>8} {'p99':>8} {'max':>8} {'outliers':>8}",
    ]
    for name, g in st["stages"].items():
        h = g["hist"]["summary_us"]
        if not h["count"]:
            continue
        out.append(
            f"  {g['title']:<46} {h['count']:>8} {_us(h['min']):>8} {_us(h['avg']):>8} "
            f"{_us(h['p99']):>8} {_us(h['max']):>8} {g['outliers']:>8}"
        )
    for r in st.get("late_records", []):
        out.append(
            f"  late: seq {r['seq']} {r['total_us']:.1f} us, {r['stage']} "
            f"+{r['excess_us']:.1f} us ({r['cause']})"
        )
    return out
