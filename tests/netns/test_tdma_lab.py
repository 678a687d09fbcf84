"""TDMA over real AF_XDP sockets in the lab: three stations, each with its own
SCHED_FIFO thread, on veths joined by a bridge.

Station 1 is the primary master (slot 0 at 0 us), station 2 the backup master
(-b 100, slot 0 at 200 us), station 3 a slave (slot 0 at 400 us) whose clock
is given a 50 us offset and 100 ppm drift.  Timing assertions stay loose: the
VM has hypervisor stalls of several milliseconds.
"""

import bisect
import contextlib
import time

import pytest
from conftest import wait_for
from stallguard import (
    Stalls,
    Tally,
    Windows,
    describe,
    detector,
    global_minus_monotonic_ns,
    twice,
)

from rtmac.frames import FrameKind, decode
from rtmac.tdma_config import Slot, TdmaConfig, set_slot, wire_time_ns
from rtmac.testing.scapy_layers import RTmac, TdmaReqCal, TdmaRplCal, TdmaSync
from rtnet.errors import ConfigError, RtnetError
from rtnet.hist import Histogram
from rtnet.lab import Lab
from rtnet.mac import format_mac
from rtnet.station import RtSettings, Station
from rtnet.tdma_stats import TdmaState
from rtnet.wirecap import WireCapture

pytestmark = pytest.mark.netns

CYCLE_US = 1000
# the margin before a stall: what the RT thread decided this long before it (it wakes ahead of
# its slot) was delayed by it
STALL_LEAD_NS = 200_000
CAL_ROUNDS = 20
MASTER = TdmaConfig(role="master", cycle_us=CYCLE_US, cal_rounds=CAL_ROUNDS, slots={0: Slot(0, 0)})
BACKUP = TdmaConfig(
    role="master",
    cycle_us=CYCLE_US,
    backup_offset_us=100,
    cal_rounds=CAL_ROUNDS,
    slots={0: Slot(0, 200)},
)
# 20 cycles without Sync before going silent: longer than this VM's hypervisor stalls
# (up to ~10 ms), so a stall is not mistaken for the failover under test
SLAVE = TdmaConfig(
    role="slave", cal_rounds=CAL_ROUNDS, sync_loss_cycles=20, slots={0: Slot(0, 400)}
)


@pytest.fixture
def lab3():
    """Name: lab3.  Scope: function.  Three stations up, synchronised and calibrated."""
    lab = Lab("tl", 3).up()
    stations = []
    try:
        for i, (st, cfg) in enumerate(zip(lab.stations, (MASTER, BACKUP, SLAVE))):
            clock = {"clock_offset_ns": 50_000, "drift_ppm": 100.0} if i == 2 else {}
            s = Station(st.ifname, netns=st.netns, rt=RtSettings(cpu=i % 2, priority=80), **clock)
            s.attach_tdma(cfg)
            s.start()
            stations.append(s)
        wait_for(
            lambda: stations[0].stats()["tdma"]["state"] == TdmaState.MASTER, 10, "master active"
        )
        wait_for(
            lambda: stations[1].stats()["tdma"]["state"] == TdmaState.BACKUP_STANDBY,
            10,
            "backup stand-by",
        )
        wait_for(
            lambda: stations[2].stats()["tdma"]["state"] == TdmaState.SYNCED,
            10,
            "slave synchronised",
        )
        yield lab, stations
    finally:
        for s in stations:
            s.close()
        lab.down()


def test_three_stations_synchronise_and_calibrate(lab3):
    _lab, (m, b, s) = lab3
    st = [x.stats() for x in (m, b, s)]
    for x in st:
        assert x["rt"]["policy"] == "SCHED_FIFO"
        assert x["xdp_mode"] in ("native", "skb")
    for x in st[1:]:
        cal = x["tdma"]["calibration"]
        assert cal["done"] == CAL_ROUNDS
        assert 0 < cal["delay_ns"] < 1_000_000  # a veth hop and two wake-ups, not a cycle
        assert x["tdma"]["master_mac"] == m.mac
    # the slave's clock runs 50 us (plus 100 ppm) ahead of the master's, which keeps
    # CLOCK_MONOTONIC: global = local + offset, so offset ~ monotonic - local, read from the
    # narrowest of monotonic-local-monotonic brackets: this thread is an ordinary one beside
    # the stations' SCHED_FIFO threads, and one preemption between two plain reads put the
    # truth 75 to 117 us off (the engine's own sync error, against the lab's truth, was
    # about 1 us then)
    true_offset = -global_minus_monotonic_ns(s.local_now)
    assert true_offset < -50_000
    assert abs(s.stats()["tdma"]["clock_offset_ns"] - true_offset) < 50_000
    assert abs(st[1]["tdma"]["cycle_no"] - st[0]["tdma"]["cycle_no"]) <= 1


def test_sync_error_stays_bounded_with_offset_and_drift(lab3):
    """Bound: |sync error| < 100 us at p1 and p99, median within 30 us.

    Receive stamps come from the XDP program (bpf_ktime_get_ns in the driver's
    receive path), so a Sync's path differs from the calibrated delay only by
    the veth hop's own jitter; RTnet's formula then leaves the 100 ppm drift
    (0.1 us per 1 ms cycle) and the calibration error.  Measured here: median
    0 us, p99 under 1 us.  The p1/p99 bound stays at 100 us because a
    hypervisor stall during a Sync's delivery shifts one estimate by the stall;
    the median's at 30 us because the 20 calibration rounds of this fixture
    can all fall into a noisy spell of the VM (a CI run had a median of 21 us,
    the calibrated delay stretched by the calibration rounds' stalls).
    """
    _lab, (_m, _b, s) = lab3
    start = s.stats()["tdma"]["sync_error"].count
    wait_for(
        lambda: s.stats()["tdma"]["sync_error"].count >= start + 2000,
        timeout=20,
        what="2000 sync error samples",
    )
    err = s.stats()["tdma"]["sync_error"]
    assert abs(err.percentile_ns(50)) < 30_000
    assert err.percentile_ns(99) < 100_000 and err.percentile_ns(1) > -100_000


def test_wire_capture_decodes_field_for_field(lab3):
    lab, (m, b, s) = lab3
    with WireCapture(lab.wire_netns, ethertypes={0x9021}) as cap:
        # attaching the slave again makes it calibrate again: Request and Reply frames
        s.detach()
        s.attach_tdma(SLAVE)
        wait_for(lambda: s.stats()["tdma"]["state"] == TdmaState.SYNCED, 10, "re-calibration")
    kinds = {}
    for c in cap.frames:
        from scapy.layers.l2 import Ether

        pkt = Ether(c.data)
        ours = decode(c.data)
        assert pkt[RTmac].type == 1 and pkt[RTmac].ver == 2 and pkt[RTmac].flags == 0
        if ours.kind == FrameKind.SYNC:
            layer = pkt[TdmaSync]
            assert (layer.cycle_no, layer.xmit_stamp, layer.sched_xmit_stamp) == (
                ours.cycle_no,
                ours.xmit_stamp,
                ours.sched_xmit_stamp,
            )
            assert pkt.dst == "ff:ff:ff:ff:ff:ff"
            # the master's sched stamps sit on its grid: consecutive cycles, one cycle apart
        elif ours.kind == FrameKind.REQ_CAL:
            layer = pkt[TdmaReqCal]
            assert (layer.xmit_stamp, layer.reply_cycle, layer.reply_slot_offset) == (
                ours.xmit_stamp,
                ours.reply_cycle,
                ours.reply_slot_offset,
            )
            assert pkt.src == s.mac and layer.reply_slot_offset == 400_000
        else:
            layer = pkt[TdmaRplCal]
            assert (layer.request_xmit_stamp, layer.reception_stamp, layer.xmit_stamp) == (
                ours.request_xmit_stamp,
                ours.reception_stamp,
                ours.xmit_stamp,
            )
            assert layer.xmit_stamp > layer.reception_stamp
        assert layer.version == 0x0201
        kinds.setdefault(ours.kind, []).append((c, ours))
    assert len(kinds[FrameKind.REQ_CAL]) >= CAL_ROUNDS
    assert len(kinds[FrameKind.RPL_CAL]) >= CAL_ROUNDS
    syncs = [o for _c, o in kinds[FrameKind.SYNC] if o.src == m.mac]
    for a, z in zip(syncs, syncs[1:]):
        assert (
            z.sched_xmit_stamp - a.sched_xmit_stamp == (z.cycle_no - a.cycle_no) * CYCLE_US * 1000
        )
    # every Sync left after its scheduled time (send lateness is never negative)
    assert all(o.xmit_stamp >= o.sched_xmit_stamp for o in syncs)
    # replies go out in the requested cycle, at the requested offset (the slave's slot)
    grid = sorted(o.sched_xmit_stamp for o in syncs)
    checked = 0
    for c, _o in kinds[FrameKind.RPL_CAL]:
        k = bisect.bisect_right(grid, c.ts_ns) - 1
        if k >= 0:
            assert c.ts_ns - grid[k] >= 400_000
            checked += 1
    assert checked >= CAL_ROUNDS // 2


def test_backup_takes_over_and_the_slave_keeps_going(lab3):
    _lab, (m, b, s) = lab3
    before = s.stats()["tdma"]
    m.close()  # the primary master dies
    wait_for(lambda: b.stats()["tdma"]["state"] == TdmaState.BACKUP_ACTIVE, 10, "backup takeover")
    cycle = s.stats()["tdma"]["cycle_no"]
    wait_for(lambda: s.stats()["tdma"]["cycle_no"] > cycle + 200, 10, "200 cycles on the backup")
    after = s.stats()["tdma"]
    assert after["state"] == TdmaState.SYNCED
    assert after["sync_lost_events"] == before["sync_lost_events"]
    assert b.stats()["tdma"]["backup_takeovers"] >= 1
    assert after["master_mac"] == b.mac


def test_invalid_configuration_is_refused_and_the_schedule_stays(lab3):
    _lab, (_m, _b, s) = lab3
    good = s.tdma_config
    bad = [
        (lambda: set_slot(good, Slot(1, 450)), "overlap"),  # overlaps slot 0 at 400
        (lambda: set_slot(good, Slot(2, 999)), "past the cycle end"),  # needs the cycle known
        (lambda: set_slot(good, Slot(2, 600, size=40)), "size"),
        (lambda: set_slot(good, Slot(2, 600, phasing=3, period=2)), "phasing"),
        (lambda: set_slot(good, Slot(3, 700, size=200, joint=2)), "joint"),
    ]
    for make, _match in bad:
        with pytest.raises((ConfigError, RtnetError)):
            s.attach_tdma(make())
    assert s.tdma_config == good
    st = s.stats()["tdma"]
    assert st["state"] == TdmaState.SYNCED and set(st["slots"]) == {0}
    # a valid change applies without a restart: the state and the cycle keep going
    cycle = st["cycle_no"]
    s.attach_tdma(set_slot(good, Slot(2, 700, size=200)))
    st = s.stats()["tdma"]
    assert set(st["slots"]) == {0, 2} and st["state"] == TdmaState.SYNCED
    assert st["config_applied"] >= 1 and st["cycle_no"] >= cycle


def test_10000_cycles_every_frame_inside_its_senders_slot(lab3):
    """Each station sends one frame per cycle (the RT thread's probe); the wire capture
    checks every frame against the cycle grid taken from the captured Syncs.

    - no frame leaves before its slot opens, and every frame a station built reached the
      wire once and in order;
    - the transmit stamp the sender wrote into the frame (global time, taken right
      before the frame went to the AF_XDP ring) lies inside the slot window, the
      frame's wire time included, for all but 5 of the frames;
    - the kernel receive stamp at the bridge lies inside the window plus 100 us of
      delivery for 99.9% of the frames;
    - every sender has a frame in 99% of the cycles.

    The three bounds apply to the frames and cycles no stall of the VM overlapped (the
    stall detector runs throughout, tests/stallguard.py); the rest are counted and shown.
    """
    lab, stations = lab3
    r = twice(lambda: _probe_10000_cycles(lab, stations), "10,000 cycles")
    print(
        f"transmit stamps in slot {r['inside_tx']} of {r['probes']}, receive stamps "
        f"{r['inside_rx']} of {r['probes']}; cycles with a frame per sender "
        f"{r['present']} of {r['cycles']}"
    )
    assert r["before_grid"] <= len(stations)  # at most each sender's first probe
    # never before the slot opens.  Under heavy simulated vCPU steal, one probe in 25,000
    # once left 95 to 308 us before its slot: the RT thread decided to send in its slot,
    # stalled before the hand-over, and the frame went out in the next cycle, before the
    # slot there.  A frame is now handed over only while it still fits its slot
    # (rtn_xsk_send_by's deadline); later it waits for its next occurrence.  Every frame.
    assert r["early"] == 0, (r["early"], r["takeovers"])
    # every probe a station built reached the wire, once and in order: its sequence numbers
    # run without a gap, but for frames the capture socket itself dropped.  Every frame.
    for src, q in r["seqs"].items():
        assert all(b > a for a, b in zip(q, q[1:])), src
        assert sum(b - a - 1 for a, b in zip(q, q[1:])) <= r["drops"], src
        assert len(q) + r["drops"] >= r["sent"][src], (src, len(q), r["sent"][src])
    # in the undisturbed cycles every sender sent: a station skips its slot only while the
    # VM stalls its RT thread past the slot (a stall the detector saw, or the thread's own
    # timer firing later than the guard)
    for src, n in r["present"].items():
        assert n >= 0.99 * r["calm_for"][src], (src, n, r["calm_for"][src], r["cycles"])
    # an undisturbed sender stamps no later than its slot's end allows (rtn_xsk_send_by)
    assert r["inside_tx"] >= r["probes"] - 5, (r["inside_tx"], r["probes"])
    # and, undisturbed, the frame is at the bridge within 100 us of its window
    assert r["inside_rx"] >= 0.999 * r["probes"], (r["inside_rx"], r["probes"])
    for st in stations:
        assert st.stats()["tdma"]["too_big"] == 0


def _probe_10000_cycles(lab, stations):
    """One measurement of the 10,000-cycle test, and its tallies of excluded frames and
    cycles; the counts its bounds take are of what was kept."""
    offsets = {
        st.mac: cfg.slots[0].offset_us * 1000 for st, cfg in zip(stations, (MASTER, BACKUP, SLAVE))
    }
    window = wire_time_ns(1514, 100) + SLAVE.guard_ns  # size 1500 slots, with the guard
    sent_before = {st.mac: st.stats()["probe_sent"] for st in stations}
    misses_from = {st.mac: st.slot_misses()[1] for st in stations}
    takeovers_before = stations[1].stats()["tdma"]["backup_takeovers"]
    # global time is the master's clock; the capture's and the detector's stamps are
    # CLOCK_MONOTONIC
    g_minus_m = global_minus_monotonic_ns(stations[0].local_now)
    # the detector wakes every 100 us, not every 500: the receive bound tolerates 100 us of
    # delivery, and a stall that long is seen only if the detector was due in it (at the
    # default period three in four went unseen, and a VM stalling often put 0.11% and
    # 0.14% of the frames past the bound in two CI runs)
    with (
        detector(period_us=100) as det,
        WireCapture(lab.wire_netns, ethertypes={0x9021, 0x88B5}) as cap,
    ):
        for st in stations:
            st.set_probe(0, ethertype=0x88B5, length=64)
        start = stations[0].stats()["tdma"]["cycle_no"]
        wait_for(
            lambda: stations[0].stats()["tdma"]["cycle_no"] >= start + 10_050,
            timeout=60,
            what="10,000 cycles",
        )
        for st in stations:
            st.set_probe(None)
        sent = {st.mac: st.stats()["probe_sent"] - sent_before[st.mac] for st in stations}
        # the slots a station's RT thread woke too late for, its timer having fired later
        # than the guard (the thread was asleep: the machine kept it off its CPU)
        late_wakes = {
            st.mac: [
                m.at_ns
                for m in st.slot_misses(misses_from[st.mac])[0]
                if m.woke_late_ns > SLAVE.guard_ns
            ]
            for st in stations
        }
        # the probe a station still had queued goes out in its next occurrence; a frame the
        # capture socket dropped never arrives, and the drop count below accounts for it
        with contextlib.suppress(AssertionError):
            wait_for(
                lambda: (
                    all(n >= sent[mac] for mac, n in probes_by_sender(cap).items())
                    and len(probes_by_sender(cap)) == len(stations)
                ),
                timeout=2,
                what="the last probes in the capture",
            )
        records = det.gaps()
    # a stall delays what the RT thread decided shortly before it (its wake-up ahead of the
    # slot) and what it and the bridge do while catching up after it, in proportion to its
    # length
    stalls = Stalls(records, pad_ns=STALL_LEAD_NS, catch_up=2.0)
    syncs, probes = {}, []
    for c in cap.frames:
        if c.data[12:14] == b"\x90\x21":
            m = decode(c.data)
            # the master's, or in a cycle whose Sync a stall delayed past the backup's
            # offset the backup's: it carries the primary's schedule (RTnet's backup Sync)
            if m.kind == FrameKind.SYNC:
                syncs[m.cycle_no] = m.sched_xmit_stamp
        else:
            probes.append(c)
    grid = sorted(syncs.values())
    # a cycle whose Sync a stall delayed past the backup's offset has the backup's Sync in
    # the grid: its estimate of the primary's schedule, a few microseconds off
    takeovers = stations[1].stats()["tdma"]["backup_takeovers"] - takeovers_before
    early_tol = 20_000 if takeovers else 0
    kept = Tally("frames")
    inside_tx = inside_rx = before_grid = early = 0
    seqs, cycles_of = {}, {}
    for c in probes:
        src = format_mac(c.data[6:12])
        seqs.setdefault(src, []).append(int.from_bytes(c.data[18:22], "big"))
        tx = int.from_bytes(c.data[30:38], "big")
        k = bisect.bisect_right(grid, tx) - 1
        if k < 0:
            # sent in the cycle whose Sync went out before the capture started
            before_grid += 1
            continue
        cycles_of.setdefault(src, set()).add(k)
        rel_tx = tx - grid[k]
        rel_rx = c.ts_ns + g_minus_m - grid[k]
        lo, hi = offsets[src], offsets[src] + window
        early += rel_tx < lo - early_tol
        # from the cycle's start to the later of its stamp and its arrival at the bridge
        if not kept.count(stalls.overlaps(grid[k] - g_minus_m, max(tx - g_minus_m, c.ts_ns))):
            continue
        inside_tx += rel_tx + wire_time_ns(64, 100) <= hi + 20_000
        inside_rx += lo <= rel_rx <= hi + 100_000
    # the cycles in which every sender was probing (from the last first probe to the first
    # last one), and of those the ones no stall overlapped
    first = max(min(ks) for ks in cycles_of.values())
    last = min(max(ks) for ks in cycles_of.values())
    cycles = Tally("cycles")
    ends = grid[1:] + [grid[-1] + CYCLE_US * 1000]
    calm = [
        k
        for k in range(first, last + 1)
        if cycles.count(stalls.overlaps(grid[k] - g_minus_m, ends[k] - g_minus_m))
    ]
    # and, per sender, of those the ones its own RT thread did not wake too late in: a wake-up
    # later than the guard is the machine's, seen by the thread itself (a short stall the
    # detector, waking every 500 us, may not have met)
    woke_late = {
        src: {
            k for t in late_wakes[src] if (k := bisect.bisect_right(grid, t + g_minus_m) - 1) >= 0
        }
        for src in cycles_of
    }
    calm_for = {src: [k for k in calm if k not in woke_late[src]] for src in cycles_of}
    present = {src: sum(k in cycles_of[src] for k in ks) for src, ks in calm_for.items()}
    print(
        f"{describe(records)}; {stalls.covered_ns() / 1e6:.1f} ms with margins; "
        f"global - monotonic {g_minus_m} ns; calm cycles in which a sender's RT thread woke "
        f"too late: { ({src: len(calm) - len(ks) for src, ks in calm_for.items()}) }"
    )
    result = {
        "probes": kept.kept,
        "inside_tx": inside_tx,
        "inside_rx": inside_rx,
        "cycles": len(calm),
        "calm_for": {src: len(ks) for src, ks in calm_for.items()},
        "present": present,
        "early": early,
        "takeovers": takeovers,
        "before_grid": before_grid,
        "seqs": seqs,
        "sent": sent,
        "drops": cap.drops,
    }
    return result, [kept, cycles]


def test_bad_frames_from_the_wire_are_counted_and_never_move_the_clock(lab3):
    """Malformed and foreign frames, sent into the slave's port from the wire namespace."""
    import socket

    from rtmac import frames
    from rtnet import netns

    lab, (m, _b, s) = lab3
    before = s.stats()["tdma"]
    sync = frames.encode_sync(
        src="02:99:99:99:99:99", cycle_no=before["cycle_no"], xmit_stamp=123, sched_xmit_stamp=456
    )
    bad = [
        sync[:20],  # truncated
        sync[:14] + b"\x00\x01\x01\x00" + sync[18:],  # RTmac version 1
        sync[:18] + b"\x01\x01" + sync[20:],  # TDMA version 0x0101
        sync[:20] + b"\x00\x42" + sync[22:],  # unknown TDMA id
    ]
    reply = frames.encode_rpl_cal(
        dst=s.mac, src=m.mac, request_xmit_stamp=1, reception_stamp=2, xmit_stamp=3
    )  # never requested
    with netns.entered(lab.wire_netns), socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as raw:
        raw.bind(("s3", 0))  # the bridge port of station 3: frames go to the slave
        for frame in bad * 10 + [reply] * 10:
            raw.send(frame)
        # a second Sync sender while the master is active, 50 times, one per cycle
        offsets = []
        for _ in range(50):
            cycle = s.stats()["tdma"]["cycle_no"]
            raw.send(
                frames.encode_sync(
                    src="02:99:99:99:99:99",
                    cycle_no=cycle,
                    xmit_stamp=10**15,
                    sched_xmit_stamp=10**15,
                )
            )
            offsets.append(s.stats()["tdma"]["clock_offset_ns"])
    wait_for(lambda: s.stats()["tdma"]["rx_bad"] >= before["rx_bad"] + 40, 10, "bad frames")
    after = s.stats()["tdma"]
    assert after["rx_bad"] - before["rx_bad"] == 40
    assert after["cal_rpl_unexpected"] - before["cal_rpl_unexpected"] == 10
    assert after["state"] == TdmaState.SYNCED
    # a rogue Sync 10^15 ns in the future would move the clock by days: it never did
    assert all(abs(o - before["clock_offset_ns"]) < 1_000_000 for o in offsets)
    assert abs(after["clock_offset_ns"] - before["clock_offset_ns"]) < 1_000_000


def probes_by_sender(cap):
    """Probe frames captured so far, per sender MAC."""
    counts = {}
    for c in list(cap.frames):
        if c.data[12:14] == b"\x88\xb5":
            src = format_mac(c.data[6:12])
            counts[src] = counts.get(src, 0) + 1
    return counts


def probes_in_slots(cap, stations, configs, stalls, g_minus_m, tally):
    """Per sender: (probes checked, probes no stall overlapped, of those the ones whose
    transmit stamp lay inside the slot window); ``tally`` counts the excluded."""
    offsets = {st.mac: cfg.slots[0].offset_us * 1000 for st, cfg in zip(stations, configs)}
    window = wire_time_ns(1514, 100) + SLAVE.guard_ns
    syncs, probes = {}, []
    for c in cap.frames:
        if c.data[12:14] == b"\x90\x21":
            m = decode(c.data)
            if m is not None and m.kind == FrameKind.SYNC and m.src == stations[0].mac:
                syncs[m.cycle_no] = m.sched_xmit_stamp
        elif c.data[12:14] == b"\x88\xb5":
            probes.append(c)
    grid = sorted(syncs.values())
    result = {}
    for c in probes:
        src = format_mac(c.data[6:12])
        tx = int.from_bytes(c.data[30:38], "big")
        k = bisect.bisect_right(grid, tx) - 1
        if k < 0 or src not in offsets:
            continue
        rel = tx - grid[k]
        lo, hi = offsets[src], offsets[src] + window
        n, kept, inside = result.get(src, (0, 0, 0))
        if tally.count(stalls.overlaps(grid[k] - g_minus_m, max(tx - g_minus_m, c.ts_ns))):
            kept += 1
            inside += lo <= rel and rel + wire_time_ns(64, 100) <= hi + 20_000
        result[src] = (n + 1, kept, inside)
    return result


def test_forged_syncs_with_the_masters_mac_crash_nothing_and_move_no_clock(lab3):
    """A rogue on the wire sends, with the master's MAC, the Syncs that crashed or
    desynchronised a slave (stamps 2^63 ns ahead, a cycle number 2^31 - 1 ahead,
    zero stamps), 40 of each, to every station, while every station sends a probe
    frame in its slot in every cycle.

    The bounds on what a stall of the VM can also cause (a forgery not counted, a sync
    error sample, a probe stamped late) apply to what no stall overlapped; the stall
    detector runs throughout (tests/stallguard.py)."""
    lab, stations = lab3
    r = twice(lambda: _forge_syncs(lab, stations), "forged Syncs")
    after, before = r["after"], r["before"]
    assert all(st.running for st in stations)
    assert [a["state"] for a in after] == [
        TdmaState.MASTER,
        TdmaState.BACKUP_STANDBY,
        TdmaState.SYNCED,
    ]
    # the backup and the slave follow the master and count every forgery (and the real
    # master's Syncs that a stall delayed beyond the bound).  A forgery a stall overlapped
    # may be lost in a veth queue, or taken as a restarted master's first Sync by a station
    # whose sync the stall lost; those are left out of the bound
    for i in (1, 2):
        counted = after[i]["sync_implausible"] - before[i]["sync_implausible"]
        assert counted >= r["forgeries"], (i, counted, r["forgeries"])
        assert after[i]["sync_rx"] - before[i]["sync_rx"] >= 100  # the real master's
    # a taken forgery would move the clock by seconds (under- or overflow, 2 ms) and keep
    # it there: none in any sample, disturbed or not
    err = after[2]["sync_error"].since(before[2]["sync_error"])
    assert err.count > 100 and err.overflow == 0 and err.underflow == 0
    # nor does one reach the Syncs' delay: a taken forgery's stamp is seconds off
    delay = after[2]["sync_delay"].since(before[2]["sync_delay"])
    assert delay.count > 100 and delay.overflow == 0 and delay.underflow == 0
    # a real Sync a stall delayed moves single samples (a CI run's minimum was -113 us); the
    # samples no stall overlapped stay within the 100 us sync tolerance
    calm = r["sync_error"]
    print(f"slave's sync error, undisturbed: {calm.summary_us()}")
    assert -100_000 < calm.percentile_ns(0.1) and calm.percentile_ns(99.9) < 100_000, (
        calm.summary_us()
    )
    assert after[0]["sync_foreign"] - before[0]["sync_foreign"] >= 120
    # every station kept sending in its own slot through it all: a forgery taken would
    # move a clock by seconds and keep it there, every later probe outside.  A stall
    # between decision and stamp puts single probes late: those are left out
    checked = r["probes"]
    assert set(checked) == {st.mac for st in stations}
    for mac, (n, kept, inside) in checked.items():
        assert n >= 200 and inside >= kept - 5, (mac, n, kept, inside)


def _forge_syncs(lab, stations):
    """One measurement of the forged-Sync test, and its tallies."""
    import socket

    from rtmac import frames
    from rtnet import netns

    m, _b, s = stations
    g_minus_m = global_minus_monotonic_ns(m.local_now)
    before = [st.stats()["tdma"] for st in stations]
    sync_error = Windows(lambda: s.stats()["tdma"]["sync_error"])
    sent = []
    with detector() as det, WireCapture(lab.wire_netns, ethertypes={0x9021, 0x88B5}) as cap:
        for st in stations:
            st.set_probe(0, ethertype=0x88B5, length=64)
        sync_error.take()
        with netns.entered(lab.wire_netns), socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as raw:
            raw.bind(("rtbr0", 0))  # from the bridge: flooded to every station
            for k in range(120):
                cycle = m.stats()["tdma"]["cycle_no"]
                now = m.local_now()  # the master's global time (its offset is 0)
                stamp, n = [
                    ((1 << 63) + now, cycle + 1),
                    (now, cycle + 0x7FFFFFFF),
                    (0, cycle + 1),
                ][k % 3]
                t0 = time.monotonic_ns()
                raw.send(
                    frames.encode_sync(
                        src=m.mac, cycle_no=n & 0xFFFFFFFF, xmit_stamp=stamp, sched_xmit_stamp=stamp
                    )
                )
                sent.append((t0, time.monotonic_ns()))
                # pacing the rogue, about one per two cycles; a snapshot of the slave's
                # sync error each cycle, so that a stall leaves out as little as it can
                for _ in range(2):
                    time.sleep(0.001)
                    sync_error.take()
        end = m.stats()["tdma"]["cycle_no"]
        wait_for(lambda: m.stats()["tdma"]["cycle_no"] >= end + 20, 10, "20 more cycles")
        sync_error.take()
        for st in stations:
            st.set_probe(None)
        records = det.gaps()
    after = [st.stats()["tdma"] for st in stations]
    stalls = Stalls(records, pad_ns=STALL_LEAD_NS, catch_up=2.0)
    # a forgery is disturbed if a stall met it on its way (a veth queue overflows), or if
    # it came while a station's sync was lost: that takes 20 cycles without a Sync, so a
    # stall, and lasts until the first Sync from the master's MAC after it, the real one
    # within a cycle of the stall's end (two cycles of margin)
    forged = Tally("forged Syncs")
    cycle_ns = CYCLE_US * 1000
    kept = sum(forged.count(stalls.overlaps(t0 - cycle_ns, t1 + 2 * cycle_ns)) for t0, t1 in sent)
    windows = Tally("sync error windows")
    calm = [
        b.since(a)
        for t0, t1, a, b in sync_error.windows()
        if windows.count(stalls.overlaps(t0, t1))
    ]
    probes = Tally("probes")
    checked = probes_in_slots(cap, stations, (MASTER, BACKUP, SLAVE), stalls, g_minus_m, probes)
    print(f"{describe(records)}; {stalls.covered_ns() / 1e6:.1f} ms with margins")
    result = {
        "before": before,
        "after": after,
        "forgeries": kept,
        "probes": checked,
        "sync_error": Histogram.combine(calm) if calm else None,
    }
    return result, [forged, windows, probes]


def test_master_restart_without_backup_is_followed_again(lab3):
    """The backup is stopped; the master's station is closed and opened again (a new
    rtnetd: cycle numbers start again at 1) faster than the slave declares sync
    loss.  The slave must follow the new grid within a few cycles, not after the new
    master's cycle count passes the old one."""
    lab, stations = lab3
    m, b, s = stations
    b.detach()
    cfg = TdmaConfig(
        role="slave", cal_rounds=CAL_ROUNDS, sync_loss_cycles=100_000, slots={0: Slot(0, 400)}
    )
    s.attach_tdma(cfg)  # a slave that never gives its master up
    wait_for(lambda: s.stats()["tdma"]["state"] == TdmaState.SYNCED, 10, "slave synchronised")
    # far enough into the old grid that a count merely passing it would be seen
    old_cycle = wait_for(
        lambda: (c := s.stats()["tdma"]["cycle_no"]) > 1000 and c, 10, "1000 cycles"
    )
    relocks = s.stats()["tdma"]["sync_relocks"]
    st0 = lab.station(1)
    m.close()
    m2 = Station(st0.ifname, netns=st0.netns, rt=RtSettings(cpu=0, priority=80))
    stations[0] = m2  # the fixture closes it
    m2.attach_tdma(MASTER)
    m2.start()
    wait_for(lambda: m2.stats()["tdma"]["state"] == TdmaState.MASTER, 10, "new master active")

    def follows():
        mc, sc = m2.stats()["tdma"]["cycle_no"], s.stats()["tdma"]["cycle_no"]
        return mc if abs(sc - mc) <= 2 else None

    new_cycle = wait_for(follows, 10, "the slave on the new master's grid")
    st = s.stats()["tdma"]
    assert st["state"] == TdmaState.SYNCED
    assert st["sync_relocks"] == relocks + 1
    # three Syncs of the new grid are needed; polling and stalls add some more
    assert new_cycle < 200 < old_cycle
    print(f"slave on the new grid by the new master's cycle {new_cycle}")
