"""Eight stations on one segment (rtnet.labsegment): a master, a backup and six slaves,
each on its own SCHED_FIFO thread, scheduled by the planner; all synchronise and every
station's probe frames leave inside its own slot.  The VM stalls: the slot bound applies
to the probes no stall overlapped, the sync-error count to the cycles no stall overlapped
(the stall detector runs throughout, tests/stallguard.py); the rest are counted.

The RT threads wake early and spin to their slots (``[rt] wake_early``, as a station on a
VM is set up): eight of them on two vCPUs meet this VM's timer lateness, which the stall
detector does not see (the CPU is not taken, the timer is late).  Asleep, a station at
times woke later than its slot's 62 us guard allows in over half its cycles and skipped
them (the master 1,274 of 3,000 in one run here, a slave 1,802 in another; woken early, 9
to 29).  Sleeping to each deadline is tested with fewer stations (test_tdma_lab.py,
test_wake_early.py)."""

import pytest
from stallguard import Stalls, Tally, describe, detector, twice

from rtnet import labsegment
from rtnet.labsegment import format_report, run_segment
from rtnet.tdma_stats import TdmaState

pytestmark = pytest.mark.netns

STATIONS = 8
CYCLES = 3000
STALL_LEAD_NS = 200_000  # the margin before a stall: an RT thread wakes ahead of its slot


def test_eight_stations_synchronise_and_each_sends_in_its_slot():
    report = twice(_run, "eight stations")
    print("\n".join(format_report(report)))
    assert report["syncs_captured"] >= CYCLES
    stations = report["stations"]
    assert [s["role"] for s in stations[:2]] == ["master", "backup"]
    assert [s["state"] for s in stations] == (
        [TdmaState.MASTER, TdmaState.BACKUP_STANDBY] + [TdmaState.SYNCED] * 6
    )
    offsets = [s["slot_offset_us"] for s in stations]
    assert offsets == sorted(set(offsets))  # eight slots, one per station
    slot_spacing_us = min(b - a for a, b in zip(offsets, offsets[1:]))
    calm_cycles = min(report["calm_cycles"], CYCLES)
    for s in stations:
        # one probe per cycle, at most; a wake-up later than the guard skips the slot
        # (missed_slots counts it), and eight RT threads share two vCPUs here
        assert 0.5 * CYCLES <= s["probes"] <= CYCLES + 100, s
        # a probe that is sent leaves inside its slot, when no stall came between the
        # send decision and the stamp
        calm = s["calm"]
        assert calm["in_slot"] >= 0.98 * calm["probes"], (s["index"], calm)
        if s["role"] != "master":
            # the slaves' and the backup's clock estimate is RTnet's, a Sync's transmit
            # stamp plus the calibrated delay, so its error is the calibrated delay minus
            # the Syncs' true delay.  That differs here: the bridge floods each Sync to
            # seven ports one after another (10 to 30 us here; a busy CI run's errors of
            # up to -57 us say about twice that), the calibration's frames go to one (2 to
            # 7 us).  The medians agree within a few 1 us bins and the cycles' odd missing
            # Sync; the error stays under a slot
            err, delay = s["sync_error_us"], s["sync_delay_us"]
            assert abs(err["p50"] - (s["calibrated_delay_us"] - delay["p50"])) <= 10, s
            assert abs(err["p50"]) < slot_spacing_us, s
            # a Sync in nearly every cycle no stall overlapped
            assert s["sync_error_us"]["count"] >= 0.9 * calm_cycles, (s, calm_cycles)


def _run():
    """One run of the segment under the stall detector, its report with the counts of
    what no stall overlapped, and the tallies."""
    seen = {}
    with detector() as det:
        report = run_segment(
            "sc",
            STATIONS,
            cycles=CYCLES,
            wake_early=True,
            on_capture=lambda seg, macs, frames: seen.update(seg=seg, macs=macs, frames=frames),
        )
        records = det.gaps()
    # a stall delays what an RT thread decided shortly before it, and what it and the
    # bridge do while catching up after it, in proportion to its length
    stalls = Stalls(records, pad_ns=STALL_LEAD_NS, catch_up=2.0)
    tallies = _calm_counts(report, seen["seg"], seen["macs"], seen["frames"], stalls)
    print(f"{describe(records)}; {stalls.covered_ns() / 1e6:.1f} ms with margins")
    return report, tallies


def _calm_counts(report, seg, macs, frames, stalls):
    """Add to each station's report its probes and probes in slot that no stall overlapped
    (labsegment's slot window), and to the report the cycles no stall overlapped.  Global
    time in the lab is the master's clock, the host's CLOCK_MONOTONIC (its station has no
    clock offset or drift): the captured Syncs show it, stamped a hand-over before their
    arrival at the bridge."""
    cap = labsegment.check_capture(seg, macs, frames)
    lag = sorted(cap.master_sync_lag_ns)
    assert lag and 0 <= lag[len(lag) // 2] < 1_000_000, "global time is not CLOCK_MONOTONIC"
    calm = [{"probes": 0, "in_slot": 0} for _ in macs]
    tally = Tally("probes")
    for p in cap.probes:
        if tally.count(stalls.overlaps(p.cycle_start, max(p.tx, p.captured))):
            calm[p.station]["probes"] += 1
            calm[p.station]["in_slot"] += p.in_slot
    for s, c in zip(report["stations"], calm):
        s["calm"] = c
    cycles = Tally("cycles")
    ends = cap.grid[1:] + [cap.grid[-1] + report["cycle_us"] * 1000]
    report["calm_cycles"] = sum(cycles.count(stalls.overlaps(a, b)) for a, b in zip(cap.grid, ends))
    return [tally, cycles]
