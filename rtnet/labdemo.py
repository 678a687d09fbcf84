"""The embedded default: `rtnetctl lab up` brings up a whole TDMA segment and shows it working.

Station 1 is the primary master, station 2 the backup master, the others are
slaves; each runs its own rtnetd.  The schedule comes from the planner
(rtmac/plan.py, ``rtmac tdma plan --stations N``): the master's Sync, then
for every station its RT slot 0 (200 bytes) and right after it its NRT
window (slot 1), the free wire time shared equally; the backup's Sync after
the master's window.  The cycle is 1 ms, or the shortest multiple of 500 us
that fits the stations (3 ms for 16).

Every station has vnic0 (198.19.0.N/24) carrying Linux traffic in its NRT
window.  A cyclic real-time publisher on the last station sends one message
per cycle, 50 us before its RT slot, to a subscriber on station 1; the view
shows the true end-to-end latency (scheduled send time to receipt by the
subscriber), missed slots and VNIC traffic while it runs, then a summary.
Each message is worth sending for one cycle (the channel's lifetime): one
whose slot was missed is stale once the next is due, and sent late it would
hold every later one behind it until the slot caught up.  Those its station
dropped are counted as expired, apart from those lost.
The lab stays up for exploring (rtnetctl -n rtn-lab-s1 status, rtmac ...);
`rtnetctl lab down` stops the daemons and removes everything.

The segment is a complete RTnet IP segment: station N's real-time IPv4
address is 198.18.0.N (``[station] ip``, rtnet.conf's IPADDR), and every
station's neighbour table holds the others, loaded from a host-routes file
the way RTnet's manual start does it (``rtroute -f``, one ``<ip> <mac> <dev>``
a line; the file is kept as /run/rtnet/<netns>/hosts while the lab runs).
``rtnetctl -n rtn-lab-s1 ping 198.18.0.3`` is therefore ICMP echo on the
real-time path, and the demo sends a few before the publisher starts.  A
static table rather than RTcfg: RTcfg as this stack serves it from
rtnet.toml hands out RTnet's simple layout (slot 0 at k x offset, no backup
master, no NRT windows), not the planner's schedule this demo runs, and its
bring-up waits for the server's invitation period; the MACs of the lab are
fixed, so the table is known before anything starts.

``redundant=True`` (``rtnetctl lab up --redundant``) runs the same segment on
a redundant lab: each rtnetd has rteth0 on wire A and rteth1 on wire B
(``link.redundant_dev``), the publisher's EtherType is a redundant channel
(IEEE 802.1CB, ``[[channel]] redundant``), and during the run every port of
wire A is taken down and later restored, as if its switch failed; the
summary gives the messages sent, received, lost and the duplicates the
subscriber's station discarded per wire.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import subprocess
import threading
import time

import numpy as np

from rtmac.tdma_config import Slot

from . import paths, stationctl, txchecksum
from .errors import LabError
from .lab import STATION_IF, STATION_IF_B, Lab, Station
from .vm_witness import VmWitness

RT_SLOT_SIZE = 200
NRT_SLOT_SIZE = 1500
APP_ETHERTYPE = 0x88B5
MAX_DEMO_STATIONS = 16


def segment_plan(n: int):
    """The demo segment's schedule for ``n`` stations (rtmac.plan)."""
    from rtmac.plan import plan, shortest_cycle_us

    kw = dict(rt_sizes=RT_SLOT_SIZE, nrt_size=NRT_SLOT_SIZE)
    return plan(n, cycle_us=shortest_cycle_us(n, **kw), **kw)


def station_toml(index: int, n: int, *, windows: bool = True, redundant: bool = False) -> str:
    """rtnet.toml of demo station ``index`` (1-based) in a segment of ``n`` stations.

    Its real-time IPv4 address is 198.18.0.``index``.  ``redundant``: a second port
    (rteth1, wire B of a redundant lab) and the application channel sent on both.

    ``windows=False``: RTnet's slot model instead, the baseline the planned windows
    are measured against (tools/bench_lab_vnic.py), as this demo ran before the
    planner: a 1 ms cycle, the backup's Sync at 100 us, RT slot 0 of station N at
    100 x N us, and one NRT slot 1 at 800 us (one full frame plus the guard)
    shared by all stations, station N in cycles n % stations == N - 1, as RTnet's
    tdma.conf examples share slot 1 (up to 7 stations).
    """
    p = segment_plan(n)
    st = p.station(index)
    if not windows:
        if n > 7:
            raise LabError(
                errno.EINVAL, f"RTnet's slot layout of the demo holds 7 stations, not {n}"
            )
        p = dataclasses.replace(p, cycle_us=1000, backup_offset_us=100)
        st = dataclasses.replace(
            st,
            rt=Slot(0, 100 * index, size=RT_SLOT_SIZE),
            window=Slot(1, 800, phasing=index, period=n, size=NRT_SLOT_SIZE),
        )
    role = {
        "master": f'role = "master"\ncycle_us = {p.cycle_us}',
        "backup": f'role = "backup"\ncycle_us = {p.cycle_us}\n'
        f"backup_offset_us = {p.backup_offset_us}",
        "slave": 'role = "slave"',
    }[st.role]
    link = f'[link]\nredundant_dev = "{STATION_IF_B}"\n' if redundant else ""
    return f"""# demo station {index} of {n}, written by rtnetctl lab up
[station]
name = "s{index}"
device = "rteth0"
ip = "{station_ip(index)}"
ethertypes = [0x{APP_ETHERTYPE:04X}]
{link}[rt]
cpu = {(index - 1) % max(1, os.cpu_count() or 1)}
priority = 80
allow_fallback = true
[tdma]
{role}
cal_rounds = 20
sync_loss_cycles = 20
[[tdma.slot]]
id = 0
offset_us = {st.rt.offset_us}
size = {st.rt.size}
[[tdma.slot]]
id = 1
offset_us = {st.window.offset_us}
size = {st.window.size}
phasing = "{st.window.phasing}/{st.window.period}"
{f"window_us = {st.window.window_us}" if st.window.window_us else ""}
[vnic]
enabled = true
name = "vnic0"
mode = "batched"
address = "198.19.0.{index}/24"
slot = 1
[[channel]]
ethertype = 0x{APP_ETHERTYPE:04X}
slot = 0
prio = 15
redundant = {"true" if redundant else "false"}
"""


def station_ip(index: int) -> str:
    """Station ``index``'s real-time IPv4 address: its rteth0 address in the lab (rtnet.lab)."""
    return Station("lab", index).ip


class _Subscriber(threading.Thread):
    """Receives the publisher's messages and keeps their end-to-end latency and sequence
    numbers, when each arrived (time.monotonic()), and each one's life (scheduled send,
    receipt; global time) for putting next to the VM's stalls."""

    def __init__(self, channel):
        super().__init__(name="demo-subscriber", daemon=True)
        self.channel = channel
        self.latency_ns: list[int] = []
        self.seqs: list[int] = []
        self.arrivals: list[float] = []
        self.lives: list[tuple[int, int]] = []
        self.stamps: list[tuple[int, ...]] = []  # each one's stage stamps, in STAGES' order
        self.stop_event = threading.Event()

    def run(self):
        while not self.stop_event.is_set():
            msg = self.channel.recv(timeout=0.2)
            if msg is not None:
                self.latency_ns.append(msg.rx_ns - msg.sched_ns)
                self.seqs.append(msg.seq)
                self.arrivals.append(time.monotonic())
                self.lives.append((msg.sched_ns, msg.rx_ns))
                self.stamps.append(
                    (msg.sched_ns, msg.handover_ns, msg.pickup_ns, msg.tx_ns, msg.rx_ns)
                )


# Where a message's end-to-end time goes: from one stage stamp to the next (rtn_app_hdr.h),
# each stamp on its station's view of the segment's clock
STAGES = ("sched_to_handover", "handover_to_pickup", "pickup_to_tx", "tx_to_rx")


def _stages_p50(stamps) -> dict | None:
    """The median of each of STAGES over the messages, in us: a queue shows in the stage
    it is in, a clock that disagrees in tx_to_rx (the only one across two stations)."""
    if not stamps:
        return None
    t = np.asarray(stamps, dtype=np.int64)
    return {k: float(np.median(t[:, i + 1] - t[:, i])) / 1000.0 for i, k in enumerate(STAGES)}


def _pct(values_ns, q) -> float:
    return float(np.percentile(np.asarray(values_ns, dtype=np.int64), q)) / 1000.0


def _status(ns: str) -> dict:
    return stationctl.request("rteth0", {"cmd": "status"}, netns=ns, timeout=5.0)["status"]


def _missed(statuses) -> int:
    return sum((s.get("tdma") or {}).get("missed_slots", 0) for s in statuses)


def _vnic_frames(statuses) -> int:
    return sum((s.get("vnic") or {}).get("tap_rx", 0) for s in statuses)


def _expired(status: dict, chan_id: int) -> int:
    """The messages of channel ``chan_id`` its station dropped past their lifetime: at
    pick-up (the channel's tx_expired) and in the queue of its slot (the slot's expired;
    in the demo only the publisher's messages have a lifetime)."""
    chan = next((c for c in status.get("channels", []) if c["id"] == chan_id), None)
    if chan is None:
        return 0
    slot = ((status.get("tdma") or {}).get("slots") or {}).get(str(chan["slot"])) or {}
    return chan.get("tx_expired", 0) + slot.get("expired", 0)


def _stop_pubsub(task, sub: _Subscriber, pub_ch, sub_ch, pub_st, before: dict) -> tuple[int, int]:
    """Stop the publisher, give its last messages (bounded) time to arrive or expire, and
    close both channels.  Returns the messages the publisher sent and how many of them its
    station dropped past their lifetime since status ``before`` (read while the channel is
    still open)."""
    pub_id = pub_ch.id
    sent = task.stop().sent
    try:
        deadline = time.monotonic() + 2.0
        while True:
            expired = _expired(_status(pub_st.netns), pub_id) - _expired(before, pub_id)
            if len(set(sub.seqs)) + expired >= sent or time.monotonic() > deadline:
                return sent, expired
            time.sleep(0.05)  # the last messages are crossing the wire: poll, bounded
    finally:
        sub.stop_event.set()
        sub.join()
        pub_ch.close()
        sub_ch.close()


def _missing(seqs) -> int:
    """Sequence numbers missing between the lowest and the highest received."""
    return (max(seqs) - min(seqs) + 1 - len(set(seqs))) if seqs else 0


def _latency_summary(lat) -> dict | None:
    if not lat:
        return None
    return {k: _pct(lat, q) for k, q in (("p50", 50), ("p99", 99), ("p99.9", 99.9))} | {
        "max": max(lat) / 1000.0
    }


def _delta(a: dict, b: dict, *keys) -> int:
    """How far the counter at ``keys`` (a path into a status) moved from ``b`` to ``a``."""

    def at(d):
        for k in keys:
            d = d.get(k) or {}
        return d if isinstance(d, int) else 0

    return at(a) - at(b)


def _worst_miss(records, t0_ns: int) -> dict | None:
    """The wake-up that found the most slot occurrences missed: a long stall of the RT
    thread shows as one record of many slots, a thread falling behind as many records."""
    if not records:
        return None
    w = max(records, key=lambda m: m.slots)
    return {
        "slots": w.slots,
        "woke_late_us": w.woke_late_ns / 1000,
        "at_s": (w.at_ns - t0_ns) / 1e9,
    }


def _station_rows(lab, before, after, witness: VmWitness) -> list[dict]:
    rows = []
    for i, (st, b, a) in enumerate(zip(lab.stations, before, after)):
        records = witness.station_records(i)
        rows.append(
            {
                "index": st.index,
                "netns": st.netns,
                "state": (a.get("tdma") or {}).get("state"),
                "missed_slots": _delta(a, b, "tdma", "missed_slots"),
                "missed_in_vm_stalls": witness.station_misses(i, records),
                # why: the wake-up came later than the slot's guard, or something else
                "missed_late_wake": _delta(a, b, "miss_late_wake"),
                "missed_other": _delta(a, b, "miss_other"),
                "miss_records": len(records),
                "worst_miss": _worst_miss(records, witness.begun_ns),
                "cycles_skipped": _delta(a, b, "tdma", "cycles_skipped"),
                "sync_error_p99_us": ((a.get("tdma") or {}).get("sync_error") or {})
                .get("summary_us", {})
                .get("p99"),
                "wakeup_p99_us": (a.get("wakeup") or {}).get("summary_us", {}).get("p99"),
            }
        )
    return rows


def _print_stations(rows, out) -> None:
    for s in rows:
        vm = s["missed_in_vm_stalls"]
        out(
            f"  station {s['index']}: {s['state']:<13} missed slots {s['missed_slots']:3d}"
            f"{f' ({vm} in VM stalls)' if vm is not None else ''}  "
            f"sync error p99 {s['sync_error_p99_us'] if s['sync_error_p99_us'] is not None else '-'} us  "
            f"wake-up p99 {s['wakeup_p99_us'] if s['wakeup_p99_us'] is not None else '-'} us"
        )
        w = s["worst_miss"]
        if w and w["slots"] > 1:
            out(
                f"             found at {s['miss_records']} wake-ups ({s['missed_late_wake']} "
                f"slots after a wake-up later than the slot's guard), at most {w['slots']} at "
                f"one ({w['woke_late_us']:.0f} us late, {w['at_s']:.2f} s into the run)"
            )


# -- bringing the segment up ---------------------------------------------------------------------


def kernel_fills_checksums(lab: Lab) -> None:
    """Every station port's Linux fills in its own checksums (rtnet.txchecksum), so a plain
    Linux UDP socket and a real-time one talk across the demo segment."""
    for st in lab.stations:
        for dev in [STATION_IF] + ([STATION_IF_B] if lab.redundant else []):
            try:
                txchecksum.kernel_fills_checksums(dev, st.netns)
            except OSError as exc:
                raise LabError(
                    exc.errno or errno.EIO,
                    f"{st.netns}: ethtool -K {dev} tx off: {exc.strerror or exc}",
                ) from None


def _start_segment(lab: Lab, plan, out, redundant: bool) -> None:
    """One rtnetd per station with its real-time address, wait until every station is in
    its TDMA state, then load every station's neighbour table."""
    kernel_fills_checksums(lab)
    for st in lab.stations:
        conf = os.path.join(paths.station_dir(st.netns), "rtnet.toml")
        os.makedirs(os.path.dirname(conf), exist_ok=True)
        with open(conf, "w") as f:
            f.write(station_toml(st.index, lab.n, redundant=redundant))
        info = stationctl.up(conf, netns=st.netns)
        role = ("master", "backup master")[st.index - 1] if st.index <= 2 else "slave"
        ports = f"rteth0 {st.mac} {station_ip(st.index)}"
        if redundant:
            ports = f"rteth0 (wire A) + rteth1 (wire B) {st.mac} {station_ip(st.index)}"
        out(
            f"  station {st.index} ({role}): rtnetd pid {info['pid']}, {ports}, "
            f"vnic0 198.19.0.{st.index}, slot 0 at {plan.station(st.index).rt.offset_us} us"
        )
    want = {1: "active", 2: "stand-by"}
    deadline = time.monotonic() + 20
    while True:
        states = {
            st.index: (_status(st.netns).get("tdma") or {}).get("state") for st in lab.stations
        }
        if all(states[i] == want.get(i, "synchronised") for i in states):
            break
        if time.monotonic() > deadline:
            raise LabError(errno.ETIMEDOUT, f"stations did not synchronise: {states}")
        time.sleep(0.1)  # the daemons are other processes: poll their state
    out("all stations synchronised and calibrated")
    load_neighbours(lab)
    out(
        f"real-time IPv4: station N is {station_ip(1).rsplit('.', 1)[0]}.N; each station's "
        f"neighbour table holds the other {lab.n - 1} (rtroute -f "
        f"{hosts_file(lab.stations[0])})"
    )


def hosts_file(st: Station) -> str:
    return os.path.join(paths.station_dir(st.netns), "hosts")


def load_neighbours(lab: Lab) -> None:
    """Give every station's rtnetd the others as static host routes, from a host-routes file
    (RTnet's ``rtroute -f``, ``<ip> <mac> <dev>`` a line), as RTnet's manual start does."""
    from rtmac import control

    from . import rtroute

    for st in lab.stations:
        path = hosts_file(st)
        with open(path, "w") as f:
            f.write("# the lab's stations, written by rtnetctl lab up\n")
            for peer in lab.stations:
                if peer.index != st.index:
                    f.write(f"{station_ip(peer.index)} {peer.mac} rteth0\n")
        try:
            rtroute.apply_file({"file": path, "netns": st.netns})
        except (control.ControlError, OSError) as exc:
            raise LabError(
                exc.errno or errno.EIO, f"rtroute -n {st.netns} -f {path}: {exc.strerror or exc}"
            ) from None


def rt_ping(lab: Lab, src: int, dst: int, count: int = 3, interval_ms: int = 100) -> dict:
    """``rtnetctl -n <src> ping <dst's address>``: ICMP echo on the real-time path; the
    daemon's reply (sent, received, rtts_us, worst_us) and its per-echo events."""
    req = {
        "cmd": "ping",
        "dst": station_ip(dst),
        "count": count,
        "interval_ms": interval_ms,
        "size": 56,
        "timeout_ms": 500,
        "echo": False,
    }
    events: list[dict] = []  # one per echo: reply or timeout
    reply = stationctl.request(
        "rteth0",
        req,
        netns=lab.station(src).netns,
        timeout=count * (interval_ms + 500) / 1000 + 10,
        on_event=events.append,
    )
    return reply | {"events": events}


SOCKPERF_PORT = 11111
SOCKPERF_SECONDS = 1


def run_unmodified_program(lab: Lab, out) -> dict | None:
    """An unmodified socket program across the segment under ``rtnet-run``: sockperf's
    UDP ping-pong from the first station to a server on the last, over their real-time
    addresses, with sockperf's own figures.  None (and one line saying so) without
    sockperf; the figures with what went wrong otherwise."""
    import re
    import shutil
    import sys

    sockperf = shutil.which("sockperf")
    if sockperf is None:
        out("  unmodified program: sockperf is not installed (tools/setup-system.sh)")
        return None
    first, last = lab.stations[0], lab.stations[-1]

    def under_rtnet_run(st: Station, argv: list[str]) -> list[str]:
        return [sys.executable, "-m", "rtnet.run", "-n", st.netns, "--", *argv]

    server = subprocess.Popen(
        under_rtnet_run(
            last, ["stdbuf", "-oL", sockperf, "server", "-i", last.ip, "-p", str(SOCKPERF_PORT)]
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        # the server says where it listens once its socket is bound: then the client may go
        for line in server.stdout:
            if "listen on" in line or server.poll() is not None:
                break
        res = subprocess.run(
            under_rtnet_run(
                first,
                [
                    sockperf,
                    "ping-pong",
                    "-i",
                    last.ip,
                    "-p",
                    str(SOCKPERF_PORT),
                    "-t",
                    str(SOCKPERF_SECONDS),
                ],
            ),
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        server.terminate()
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    text = res.stdout + res.stderr
    got = re.search(r"ReceivedMessages=(\d+)", text)
    pct = {p: float(v) for p, v in re.findall(r"percentile (\d+\.\d+) = +([\d.]+)", text)}
    result = {
        "program": "sockperf ping-pong",
        "client": first.netns,
        "server": last.netns,
        "returncode": res.returncode,
        "received": int(got.group(1)) if got else 0,
        "p50_us": pct.get("50.000"),
        "p99_us": pct.get("99.000"),
        "p99_9_us": pct.get("99.900"),
    }
    if res.returncode != 0 or not got:
        out(
            f"  unmodified program: sockperf under rtnet-run failed: "
            f"{(text.strip().splitlines() or ['no output'])[-1]}"
        )
        return result
    out(
        f"  unmodified program: rtnet-run -n {first.netns} -- sockperf ping-pong -i {last.ip}: "
        f"{result['received']} round trips in {SOCKPERF_SECONDS} s over the real-time path, "
        f"p50 {result['p50_us']:.0f} us, p99 {result['p99_us']:.0f} us, "
        f"p99.9 {result['p99_9_us']:.0f} us"
    )
    return result


# -- the runs --------------------------------------------------------------------------------------


def run(
    name: str = "lab", stations: int = 3, duration: float = 5.0, out=print, redundant: bool = False
) -> dict:
    """Bring up the demo segment, show it for ``duration`` seconds, return the summary.
    ``redundant``: on a redundant lab, with wire A cut and mended during the run."""
    if not 2 <= stations <= MAX_DEMO_STATIONS:
        raise LabError(
            errno.EINVAL, f"--stations {stations}: the demo runs 2..{MAX_DEMO_STATIONS} stations"
        )
    if duration <= 0:
        raise LabError(errno.EINVAL, f"--duration {duration:g}: must be positive")

    plan = segment_plan(stations)
    lab = Lab(name, stations, redundant=redundant).up()  # refused: nothing of ours to remove
    try:
        return _run(lab, plan, duration, out, redundant)
    except BaseException:
        lab.down()  # nothing half-built stays behind (interrupted too)
        raise


def _run(lab: Lab, plan, duration: float, out, redundant: bool) -> dict:
    wires = f"bridge {lab.wire_netns}/rtbr0"
    if redundant:
        wires = f"bridges {lab.wire_netns}/rtbr0 (wire A) and {lab.wire_b_netns}/rtbr0 (wire B)"
    out(
        f"lab {lab.name}: {lab.n} stations, {wires}, TDMA cycle {plan.cycle_us} us, "
        f"an NRT window of {plan.station(1).window.window_us} us per station"
    )
    out(plan.drawing())
    _start_segment(lab, plan, out, redundant)
    target = lab.stations[-1]
    answered = _status(target.netns)["ipv4"]["tx_echo_reply"]
    ping = rt_ping(lab, 1, lab.n)
    answered = _status(target.netns)["ipv4"]["tx_echo_reply"] - answered
    ping_summary = {
        "src": station_ip(1),
        "dst": station_ip(lab.n),
        "sent": ping["sent"],
        "received": ping["received"],
        "worst_us": ping["worst_us"],
        "answered_by_rt_thread": answered,
    }
    out(
        f"rtnetctl -n {lab.station(1).netns} ping {station_ip(lab.n)} -c {ping['sent']}: "
        f"ICMP echo, {ping['received']}/{ping['sent']} replies"
        + (f" (worst rtt {ping['worst_us']:.1f} us)" if ping["worst_us"] is not None else "")
        + f"; station {target.index}'s RT thread answered {answered}"
    )
    if redundant:
        summary = _run_redundant(lab, plan, duration, out)
    else:
        summary = _run_plain(lab, plan, duration, out)
    summary["rt_ping"] = ping_summary
    summary["unmodified_program"] = None if redundant else run_unmodified_program(lab, out)
    out(
        f"the lab stays up: try rtnetctl -n {lab.stations[0].netns} ping {station_ip(lab.n)}; "
        f"remove it with rtnetctl lab down{'' if lab.name == 'lab' else ' --name ' + lab.name}"
    )
    return summary


def _open_pubsub(lab: Lab, plan):
    """The subscriber on station 1, the publisher's cyclic task on the last station."""
    from .app import Channel
    from .cyclic import CyclicTask

    pub_st, sub_st = lab.stations[-1], lab.stations[0]
    sub_ch = Channel.open(netns=sub_st.netns, ethertype=APP_ETHERTYPE)
    try:
        # a cycle's message is stale once the next one is due (see the module's note)
        pub_ch = Channel.open(
            netns=pub_st.netns, ethertype=APP_ETHERTYPE, lifetime_us=plan.cycle_us
        )
    except BaseException:
        sub_ch.close()
        raise
    sub = _Subscriber(sub_ch)
    task = CyclicTask(
        pub_ch,
        sub_st.mac,
        payload_size=32,
        offset_us=max(0, plan.station(pub_st.index).rt.offset_us - 50),
        priority=70,
        allow_fallback=True,
    )
    return pub_st, sub_st, pub_ch, sub_ch, sub, task


def _run_plain(lab: Lab, plan, duration: float, out) -> dict:
    pub_st, sub_st, pub_ch, sub_ch, sub, task = _open_pubsub(lab, plan)
    sub.start()
    ping = lab.spawn(
        lab.stations[1],
        [
            "ping",
            "-q",
            "-i",
            "0.2",
            "-w",
            str(int(duration) + 1),
            "-s",
            "1200",
            f"198.19.0.{pub_st.index}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    witness = VmWitness([st.netns for st in lab.stations])
    before = [_status(st.netns) for st in lab.stations]
    witness.begin()
    task.start()
    t0 = time.monotonic()
    out(
        f"publisher on station {pub_st.index} -> subscriber on station {sub_st.index}; "
        f"ping over vnic0 from station 2; {duration:g} s"
    )
    out("   time   msgs  lat p50  lat p99  lat max (us)  missed slots  vnic frames")
    ran_out = False
    try:
        while (elapsed := time.monotonic() - t0) < duration:
            time.sleep(min(0.5, max(0.05, duration - elapsed)))
            now = [_status(st.netns) for st in lab.stations]
            lat = list(sub.latency_ns)
            row = (
                f"{time.monotonic() - t0:6.1f}s {len(lat):6d}  "
                + (
                    f"{_pct(lat, 50):7.1f}  {_pct(lat, 99):7.1f}  {max(lat) / 1000:8.1f}     "
                    if lat
                    else "      -        -         -     "
                )
                + f"{_missed(now) - _missed(before):8d}     "
                f"{_vnic_frames(now) - _vnic_frames(before):8d}"
            )
            out(row)
        ran_out = True
    finally:
        try:
            sent, expired = _stop_pubsub(task, sub, pub_ch, sub_ch, pub_st, before[-1])
        finally:
            if not ran_out and ping.poll() is None:
                ping.terminate()  # stopped early (Ctrl-C, SIGTERM): not the rest of its -w
            ping_out = ping.communicate(timeout=duration + 10)[0]
            lab.forget(ping)
            witness.end()
            try:
                after = [_status(st.netns) for st in lab.stations]
            finally:
                witness.close()
    lat = sub.latency_ns
    received = len(set(sub.seqs))
    summary = {
        "stations": _station_rows(lab, before, after, witness),
        "messages": len(lat),
        "sent": sent,
        "expired": expired,
        "lost": sent - expired - received,
        "latency_us": _latency_summary(lat),
        "stages_p50_us": _stages_p50(sub.stamps),
        **_late_messages(sub, plan, witness),
        "vm": witness.summary(),
        "vnic_ping": next((line for line in ping_out.splitlines() if "packet loss" in line), None),
    }
    out("summary:")
    _print_stations(summary["stations"], out)
    if lat:
        L = summary["latency_us"]
        out(
            f"  cyclic messages: {sent} sent, {len(lat)} received, {expired} expired at station "
            f"{pub_st.index} (not on the wire within a cycle), {summary['lost']} lost; "
            f"end-to-end (scheduled send -> subscriber) p50 {L['p50']:.1f} us, p99 "
            f"{L['p99']:.1f} us, p99.9 {L['p99.9']:.1f} us, max {L['max']:.1f} us "
            f"(cycle {plan.cycle_us} us){_late_said(summary)}"
        )
        st = summary["stages_p50_us"]
        out(
            "  where it went (p50, us): "
            + ", ".join(f"{k.replace('_to_', ' -> ')} {v:.1f}" for k, v in st.items())
        )
    out(f"  vnic0 ping: {summary['vnic_ping'] or 'no reply'}")
    out(witness.line())
    return summary


def _late_messages(sub: _Subscriber, plan, witness: VmWitness) -> dict:
    """The messages that took longer than a cycle, and of them those the VM's stalls
    explain: a stall in the cycle after the message's scheduled time, when it was to go
    out.  A message that waited longer behind others in a queue is not explained by a
    stall that merely fell somewhere in its long life."""
    cycle = plan.cycle_us * 1000
    late = [(t0, t0 + cycle) for t0, t1 in sub.lives if t1 - t0 > cycle]
    return {"over_a_cycle": len(late), "over_a_cycle_in_vm_stalls": witness.lives(late)}


def _late_said(summary: dict) -> str:
    n, vm = summary["over_a_cycle"], summary["over_a_cycle_in_vm_stalls"]
    if not n:
        return "; none took longer than a cycle"
    return f"; {n} took longer than a cycle" + (
        f", {vm} of them in VM stalls" if vm is not None else ""
    )


def _stream(status: dict, src: str) -> dict | None:
    """The 802.1CB counters of the publisher's stream (``src``, the app EtherType)."""
    for s in (status.get("frer") or {}).get("streams", []):
        if s["src"] == src and s["ethertype"] == APP_ETHERTYPE:
            return s
    return None


def _wire_counts(before: dict | None, after: dict | None) -> list[dict]:
    """Per wire (port 0 = A, 1 = B): copies of the stream that arrived, the ones passed on
    (first) and the duplicates discarded, between two readings of the stream."""
    out = []
    for port in (0, 1):
        b = before["port"][port] if before else {"passed": 0, "discarded": 0}
        a = after["port"][port] if after else {"passed": 0, "discarded": 0}
        passed, discarded = a["passed"] - b["passed"], a["discarded"] - b["discarded"]
        out.append(
            {
                "wire": "ab"[port],
                "copies": passed + discarded,
                "passed": passed,
                "duplicates_discarded": discarded,
            }
        )
    return out


def _run_redundant(lab: Lab, plan, duration: float, out) -> dict:
    pub_st, sub_st, pub_ch, sub_ch, sub, task = _open_pubsub(lab, plan)
    sub.start()
    cut_at, mend_at = duration / 3, 2 * duration / 3
    marks: dict[str, float] = {}
    witness = VmWitness([st.netns for st in lab.stations])
    before = [_status(st.netns) for st in lab.stations]
    witness.begin()
    stream0 = _stream(before[0], pub_st.mac)
    task.start()
    t0 = time.monotonic()
    out(
        f"publisher on station {pub_st.index} -> subscriber on station {sub_st.index} on a "
        f"redundant channel (IEEE 802.1CB: every message on both wires); wire A down from "
        f"{cut_at:.1f} s to {mend_at:.1f} s of {duration:g} s"
    )
    out("   time  wire A    msgs  missing   copies via A  via B   discarded on A  on B")
    sent = 0
    try:
        next_row = 0.5
        while (elapsed := time.monotonic() - t0) < duration:
            events = [t for t in (cut_at, mend_at, next_row, duration) if t > elapsed]
            time.sleep(max(0.0, min(events) - elapsed))
            elapsed = time.monotonic() - t0
            if "cut" not in marks and elapsed >= cut_at:
                lab.set_wire("a", up=False)
                marks["cut"] = time.monotonic()
                out(
                    f"{elapsed:6.1f}s  wire A taken down (every station's port on "
                    f"{lab.wire_netns}/rtbr0)"
                )
            if "mend" not in marks and elapsed >= mend_at:
                lab.set_wire("a", up=True)
                marks["mend"] = time.monotonic()
                out(f"{elapsed:6.1f}s  wire A restored")
            if elapsed >= next_row:
                next_row += 0.5
                seqs = set(sub.seqs)
                missing = _missing(seqs)
                w = _wire_counts(stream0, _stream(_status(sub_st.netns), pub_st.mac))
                state = "down" if "cut" in marks and "mend" not in marks else "up"
                out(
                    f"{elapsed:6.1f}s  {state:<6} {len(seqs):7d}  {missing:7d}   "
                    f"{w[0]['copies']:12d} {w[1]['copies']:6d}   "
                    f"{w[0]['duplicates_discarded']:14d} {w[1]['duplicates_discarded']:5d}"
                )
    finally:
        if "cut" in marks and "mend" not in marks:
            lab.set_wire("a", up=True)
            marks["mend"] = time.monotonic()
        try:
            sent, expired = _stop_pubsub(task, sub, pub_ch, sub_ch, pub_st, before[-1])
        finally:
            witness.end()
            try:
                after = [_status(st.netns) for st in lab.stations]
            finally:
                witness.close()
    seqs = sub.seqs
    received = len(set(seqs))
    during_cut = sum(1 for t in sub.arrivals if marks["cut"] <= t < marks["mend"])
    wires = _wire_counts(stream0, _stream(after[0], pub_st.mac))
    summary = {
        "redundant": True,
        "stations": _station_rows(lab, before, after, witness),
        "sent": sent,
        "received": received,
        "expired": expired,
        "lost": sent - expired - received,
        "duplicates_delivered": len(seqs) - received,
        "wire_a_down": {
            "from_s": round(marks["cut"] - t0, 3),
            "to_s": round(marks["mend"] - t0, 3),
            "received_meanwhile": during_cut,
        },
        "wires": wires,
        "latency_us": _latency_summary(sub.latency_ns),
        "stages_p50_us": _stages_p50(sub.stamps),
        **_late_messages(sub, plan, witness),
        "vm": witness.summary(),
    }
    summary["ok"] = summary["lost"] == 0 and summary["duplicates_delivered"] == 0 and sent > 0
    out("summary:")
    _print_stations(summary["stations"], out)
    out(
        f"  redundant stream station {pub_st.index} -> station {sub_st.index}: {sent} sent, "
        f"{received} received, {expired} expired at station {pub_st.index} (not on either "
        f"wire within a cycle), {summary['lost']} lost, {summary['duplicates_delivered']} "
        f"delivered twice"
    )
    d = summary["wire_a_down"]
    out(
        f"  wire A down {d['from_s']:.1f} s to {d['to_s']:.1f} s: {d['received_meanwhile']} "
        f"messages arrived meanwhile, over wire B"
    )
    for w in wires:
        out(
            f"  wire {w['wire'].upper()}: {w['copies']} copies arrived at station {sub_st.index}, "
            f"{w['passed']} passed on first, {w['duplicates_discarded']} duplicates discarded"
        )
    if summary["latency_us"]:
        L = summary["latency_us"]
        out(
            f"  end-to-end (scheduled send -> subscriber) p50 {L['p50']:.1f} us, p99 "
            f"{L['p99']:.1f} us, max {L['max']:.1f} us (cycle {plan.cycle_us} us)"
            f"{_late_said(summary)}"
        )
    out(witness.line())
    if not summary["ok"]:
        out("  REDUNDANCY FAILED: a message was lost or delivered twice")
    return summary
