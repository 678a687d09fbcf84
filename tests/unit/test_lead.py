"""The automatic hand-over lead (csrc/core/rtn_lead.c): what it learns from the needs it is fed."""

from rtnet._lowlevel import ffi, lib

US = 1000
CYCLE = 1000 * US


def lead(start=250 * US, fixed=0):
    lo = ffi.new("struct rtn_lead *")
    lib.rtn_lead_init(lo, start, CYCLE // 2, fixed)
    return lo


def feed(lo, needs):
    for n in needs:
        lib.rtn_lead_add(lo, n)


def test_a_quiet_task_lowers_its_lead_slowly_towards_p999_plus_the_margin():
    lo = lead()
    needs = [15 * US] * 998 + [40 * US] * 26  # p99.9 in the 40 us bin
    seen = [lo.lead_ns]
    for _ in range(20):
        feed(lo, needs)
        seen.append(lo.lead_ns)
    target = 41 * US + lib.RTN_LEAD_MARGIN_NS
    assert all(b <= a for a, b in zip(seen, seen[1:]))  # never up
    assert all(a - b <= (a - target) // 4 + 1 for a, b in zip(seen, seen[1:]))  # slowly
    assert target <= seen[-1] <= target + 2 * US
    assert lo.updates == 20 and lo.late == 0


def test_a_grown_need_raises_the_lead_at_the_next_update():
    lo = lead(start=60 * US)
    feed(lo, [150 * US] * lib.RTN_LEAD_WINDOW)
    assert lo.lead_ns >= 150 * US + lib.RTN_LEAD_MARGIN_NS
    assert lo.late == lib.RTN_LEAD_WINDOW  # each ran past the 60 us lead


def test_stalls_beyond_half_a_cycle_are_counted_not_learnt():
    lo = lead(start=60 * US)
    feed(lo, [10 * US] * (lib.RTN_LEAD_WINDOW - 3) + [3000 * US] * 3)
    assert lo.beyond == 3 and lo.need_max_ns == 3000 * US
    assert lo.lead_ns <= 60 * US


def test_a_fixed_lead_never_moves_and_still_counts_late_hand_overs():
    lo = lead(fixed=250 * US)
    feed(lo, [10 * US] * 3000 + [300 * US] * 5)
    assert lo.lead_ns == 250 * US and lo.updates == 0 and lo.late == 5


def test_the_lead_stays_inside_its_bounds_whatever_it_is_fed():
    lo = lead()
    feed(lo, [-5 * US, 0, 2**62, -(2**62)] * 2000)
    assert lib.RTN_LEAD_MIN_NS <= lo.lead_ns <= CYCLE // 2
