"""The batched VNIC pump's moderation (csrc/vnic/rtn_vnic_moderation.c) through cffi: a flow
near the threshold keeps the pump on its period, light traffic keeps it event-driven, and
a flow's end brings it back within a few empty periods."""

from rtnet._core import lib

HEAVY = 8  # VNIC_HEAVY: frames a period that make a flow


def periodic_after(counts, avg=0):
    """The pump's mode after each period of ``counts`` (frames moved), one period apart."""
    modes = []
    for moved in counts:
        avg = lib.rtn_vnic_mod_update(avg, moved, 1)
        modes.append(bool(lib.rtn_vnic_mod_periodic(avg, HEAVY)))
    return modes, avg


def test_a_flow_around_the_threshold_stays_periodic():
    # about 10 frames a period, some periods under 8 (the last-period rule flipped on each)
    _, avg = periodic_after([12] * 8)
    modes, _ = periodic_after([10, 5, 14, 6, 11, 4, 13, 9, 6, 12], avg)
    assert all(modes)


def test_light_traffic_never_makes_it_periodic():
    modes, _ = periodic_after([3, 0, 5, 2, 7, 1, 6, 4] * 4)
    assert not any(modes)


def test_a_burst_turns_it_periodic_and_the_flows_end_back():
    modes, avg = periodic_after([24, 24])
    assert modes == [False, True]  # a second period of the burst
    modes, avg = periodic_after([0, 0, 0], avg)
    assert modes[-1] is False  # event-driven within three empty periods
    assert periodic_after([0] * 20, avg)[1] == 0


def test_periods_slept_through_count_as_empty():
    _, avg = periodic_after([40] * 6)
    assert lib.rtn_vnic_mod_periodic(lib.rtn_vnic_mod_update(avg, 0, 1), HEAVY)
    # a pump woken after 50 ms: the periods it slept through bring the average down
    assert lib.rtn_vnic_mod_update(avg, 0, 12) < lib.RTN_VNIC_MOD_ONE
    assert lib.rtn_vnic_mod_update(avg, 0, 10**12) == 0  # bounded work, whatever the gap


def test_a_period_of_a_huge_count_is_bounded():
    avg = lib.rtn_vnic_mod_update(0, 0xFFFFFFFF, 1)
    assert avg == lib.RTN_VNIC_MOD_MOVED_MAX * lib.RTN_VNIC_MOD_ONE // 4
    assert lib.rtn_vnic_mod_update(avg, 0xFFFFFFFF, 1) > avg  # no overflow into a small number


BUSY = 96  # VNIC_BUSY: frames a period that make a busy flow
PERIOD_NS = 4_000_000  # VNIC_PUMP_PERIOD_NS


def test_a_busy_flow_is_woken_twice_a_period_and_a_slower_one_once():
    # 1000 Mbit/s modelled: some 250 frames a period; 100 Mbit/s: some 25, both ways at most 66
    _, fast = periodic_after([250] * 8)
    _, slow = periodic_after([25] * 8)
    _, both_ways = periodic_after([66] * 8)
    assert lib.rtn_vnic_mod_round_ns(fast, BUSY, PERIOD_NS) == PERIOD_NS // 2
    assert lib.rtn_vnic_mod_round_ns(slow, BUSY, PERIOD_NS) == PERIOD_NS
    assert lib.rtn_vnic_mod_round_ns(both_ways, BUSY, PERIOD_NS) == PERIOD_NS
    # the flow's end: back to the whole period as the average falls
    _, ending = periodic_after([0, 0, 0], fast)
    assert lib.rtn_vnic_mod_round_ns(ending, BUSY, PERIOD_NS) == PERIOD_NS


def test_the_round_at_the_threshold_and_at_the_largest_average():
    at = BUSY * lib.RTN_VNIC_MOD_ONE
    assert lib.rtn_vnic_mod_round_ns(at, BUSY, PERIOD_NS) == PERIOD_NS // 2
    assert lib.rtn_vnic_mod_round_ns(at - 1, BUSY, PERIOD_NS) == PERIOD_NS
    top = lib.rtn_vnic_mod_update(0xFFFFFFFF, 0xFFFFFFFF, 1)
    assert lib.rtn_vnic_mod_round_ns(top, BUSY, PERIOD_NS) == PERIOD_NS // 2
    # a threshold whose sixteenths pass 32 bits does not wrap into a small one
    assert lib.rtn_vnic_mod_round_ns(0xFFFFFFFF, 0xFFFFFFFF, PERIOD_NS) == PERIOD_NS
