"""[rt] wake_early: each station's RT thread wakes a learnt margin before the deadlines at
which a frame may leave and spins to them, so its slots go out closer to their time than
its own timer wakes it.  Both are measured in the same run on the same thread, so the
machine's noise is on both sides of the comparison."""

import pytest

from rtnet.labsegment import format_report, run_segment

pytestmark = pytest.mark.netns

CYCLES = 3000


def test_slots_leave_closer_to_their_time_than_the_timer_wakes_the_thread():
    report = run_segment("we", 3, cycles=CYCLES, wake_early=True)
    print("\n".join(format_report(report)))
    for s in report["stations"]:
        assert 10 <= s["wake_early_us"] <= 100, s  # RTN_LEAD_MIN_NS .. WAKE_EARLY_MAX_NS
    for s in report["stations"]:
        if s["role"] == "master":
            # its RT slot comes right after its own Sync, whose send it waits for; and the
            # last window's frames wake it inside the margin, so it spins from there
            continue
        # most slot wake-ups came before the deadline and spun to it
        assert s["early_wakes"] >= CYCLES // 3, s
        assert s["slot_lateness_us"]["p50"] < s["wakeup_us"]["p50"], s


def test_without_it_no_thread_wakes_early():
    report = run_segment("wn", 3, cycles=500)
    assert all(
        s["wake_early_us"] == 0 and s["early_wakes"] == 0 and s["rx_early"] == 0
        for s in report["stations"]
    )
