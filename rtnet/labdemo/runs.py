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

import errno
import subprocess
import time

from rtnet.errors import LabError
from rtnet.lab import Lab
from rtnet.vm_witness import VmWitness

from .program import run_unmodified_program
from .pubsub import (
    cycles_between,
    late_messages,
    late_said,
    latency_summary,
    missing_seqs,
    open_pubsub,
    pct,
    stages_p50,
    stop_pubsub,
)
from .segment import (
    APP_ETHERTYPE,
    MAX_DEMO_STATIONS,
    rt_ping,
    segment_plan,
    start_segment,
    station_ip,
)
from .stations import missed_slots, print_stations, station_rows, station_status, vnic_frames


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
    start_segment(lab, plan, out, redundant)
    target = lab.stations[-1]
    answered = station_status(target.netns)["ipv4"]["tx_echo_reply"]
    ping = rt_ping(lab, 1, lab.n)
    answered = station_status(target.netns)["ipv4"]["tx_echo_reply"] - answered
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


def _end_run(lab: Lab, witness: VmWitness, pubsub: tuple, before: list, then=None):
    """The end of a run, whatever stopped it: the publisher stopped and its last messages
    accounted (stop_pubsub), ``then`` (the run's own clean-up), the stall detector's window
    closed and every station's status read.  Returns sent, expired and those statuses."""
    try:
        sent, expired = stop_pubsub(*pubsub, before[-1])
    finally:
        if then:
            then()
        witness.end()
        try:
            after = [station_status(st.netns) for st in lab.stations]
        finally:
            witness.close()
    return sent, expired, after


def _run_plain(lab: Lab, plan, duration: float, out) -> dict:
    pub_st, sub_st, pub_ch, sub_ch, sub, task = open_pubsub(lab, plan)
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
    before = [station_status(st.netns) for st in lab.stations]
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
            now = [station_status(st.netns) for st in lab.stations]
            lat = list(sub.latency_ns)
            row = (
                f"{time.monotonic() - t0:6.1f}s {len(lat):6d}  "
                + (
                    f"{pct(lat, 50):7.1f}  {pct(lat, 99):7.1f}  {max(lat) / 1000:8.1f}     "
                    if lat
                    else "      -        -         -     "
                )
                + f"{missed_slots(now) - missed_slots(before):8d}     "
                f"{vnic_frames(now) - vnic_frames(before):8d}"
            )
            out(row)
        ran_out = True
    finally:
        reaped: list[str] = []  # what ping printed

        def reap_ping():
            if not ran_out and ping.poll() is None:
                ping.terminate()  # stopped early (Ctrl-C, SIGTERM): not the rest of its -w
            reaped.append(ping.communicate(timeout=duration + 10)[0])
            lab.forget(ping)

        sent, expired, after = _end_run(
            lab, witness, (task, sub, pub_ch, sub_ch, pub_st), before, then=reap_ping
        )
        ping_out = reaped[0]
    lat = sub.latency_ns
    received = len(set(sub.seqs))
    summary = {
        "stations": station_rows(lab, before, after, witness),
        "messages": len(lat),
        "sent": sent,
        "expired": expired,
        "lost": sent - expired - received,
        "latency_us": latency_summary(lat),
        "stages_p50_us": stages_p50(sub.stamps),
        **late_messages(sub, plan, witness),
        "vm": witness.summary(),
        "vnic_ping": next((line for line in ping_out.splitlines() if "packet loss" in line), None),
    }
    out("summary:")
    print_stations(summary["stations"], out)
    if lat:
        L = summary["latency_us"]
        out(
            f"  cyclic messages: {sent} sent, {len(lat)} received, {expired} expired at station "
            f"{pub_st.index} (not on the wire within a cycle), {summary['lost']} lost; "
            f"end-to-end (scheduled send -> subscriber) p50 {L['p50']:.1f} us, p99 "
            f"{L['p99']:.1f} us, p99.9 {L['p99.9']:.1f} us, max {L['max']:.1f} us "
            f"(cycle {plan.cycle_us} us){late_said(summary)}"
        )
        st = summary["stages_p50_us"]
        out("  where it went (p50, us): " + ", ".join(f"{k} {v:.1f}" for k, v in st.items()))
    out(f"  vnic0 ping: {summary['vnic_ping'] or 'no reply'}")
    out(witness.line())
    return summary


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
    pub_st, sub_st, pub_ch, sub_ch, sub, task = open_pubsub(lab, plan)
    sub.start()
    cut_at, mend_at = duration / 3, 2 * duration / 3
    marks: dict[str, float] = {}
    witness = VmWitness([st.netns for st in lab.stations])
    before = [station_status(st.netns) for st in lab.stations]
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
                missing = missing_seqs(seqs)
                w = _wire_counts(stream0, _stream(station_status(sub_st.netns), pub_st.mac))
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
        sent, expired, after = _end_run(lab, witness, (task, sub, pub_ch, sub_ch, pub_st), before)
    seqs = sub.seqs
    received = len(set(seqs))
    during_cut = sum(1 for t in sub.arrivals if marks["cut"] <= t < marks["mend"])
    cut_cycles = cycles_between(marks["cut"], marks["mend"], plan.cycle_us)
    wires = _wire_counts(stream0, _stream(after[0], pub_st.mac))
    summary = {
        "redundant": True,
        "stations": station_rows(lab, before, after, witness),
        "sent": sent,
        "received": received,
        "expired": expired,
        "lost": sent - expired - received,
        "duplicates_delivered": len(seqs) - received,
        "wire_a_down": {
            "from_s": round(marks["cut"] - t0, 3),
            "to_s": round(marks["mend"] - t0, 3),
            "received_meanwhile": during_cut,
            "cycles": len(cut_cycles),
            # the cycles the VM's stalls met: their messages may have expired at the
            # publisher's station, whatever the wires did (None: no detector)
            "cycles_in_vm_stalls": witness.lives(cut_cycles),
        },
        "wires": wires,
        "latency_us": latency_summary(sub.latency_ns),
        "stages_p50_us": stages_p50(sub.stamps),
        **late_messages(sub, plan, witness),
        "vm": witness.summary(),
    }
    summary["ok"] = summary["lost"] == 0 and summary["duplicates_delivered"] == 0 and sent > 0
    out("summary:")
    print_stations(summary["stations"], out)
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
            f"{late_said(summary)}"
        )
    out(witness.line())
    if not summary["ok"]:
        out("  REDUNDANCY FAILED: a message was lost or delivered twice")
    return summary
