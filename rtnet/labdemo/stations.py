"""Each station's part of the demo's summary: its missed slots, from its daemon's miss
records, put next to the spans in which the VM took a CPU (the stall detector)."""

from __future__ import annotations

from rtnet import stationctl
from rtnet.vm_witness import VmWitness


def station_status(ns: str) -> dict:
    return stationctl.request("rteth0", {"cmd": "status"}, netns=ns, timeout=5.0)["status"]


def missed_slots(statuses) -> int:
    return sum((s.get("tdma") or {}).get("missed_slots", 0) for s in statuses)


def vnic_frames(statuses) -> int:
    return sum((s.get("vnic") or {}).get("tap_rx", 0) for s in statuses)


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


def station_rows(lab, before, after, witness: VmWitness) -> list[dict]:
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


def print_stations(rows, out) -> None:
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
