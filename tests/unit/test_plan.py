"""The schedule planner (rtmac/plan.py): layouts that the validators accept, that keep
stations apart, and clear errors when a segment does not fit."""

import itertools

import pytest

from rtmac.plan import plan, shortest_cycle_us
from rtmac.tdma_config import ETH_HLEN, wire_time_ns
from rtnet.errors import ConfigError

FULL_WT = wire_time_ns(1514, 100)


def occupied(p):
    """Per station: the intervals (ns) it may use on the wire, its gap included."""
    out = {}
    for st in p.stations:
        rt_end = (
            st.rt.offset_us * 1000
            + wire_time_ns(st.rt.size + ETH_HLEN, p.link_rate_mbps)
            + p.guard_ns
        )
        win_end = (st.window.offset_us + st.window.window_us) * 1000
        out[st.index] = (st.rt.offset_us * 1000, max(rt_end, win_end))
    return out


@pytest.mark.parametrize(
    "n, kw",
    [
        (3, {}),
        (2, {"backup": False}),
        (8, {"cycle_us": 2000}),
        (16, {"cycle_us": 3000}),
        (3, {"link_rate_mbps": 1000}),
    ],
)
def test_plans_validate_and_keep_stations_apart(n, kw):
    p = plan(n, **kw)
    spans = occupied(p)
    for a, b in itertools.combinations(spans.values(), 2):
        assert a[1] <= b[0] or b[1] <= a[0], (a, b)
    for st in p.stations:
        cfg = p.tdma_config(st.index)  # validated
        assert cfg.slots[1].window_us * 1000 >= wire_time_ns(1514, p.link_rate_mbps)
    last = max(end for _, end in spans.values())
    assert last <= p.cycle_us * 1000
    # the master's RT slot right after its Sync; the backup's Sync clear of every slot
    # but its own (station 2's RT slot follows the backup's Sync frame)
    assert p.station(1).rt.offset_us * 1000 >= wire_time_ns(60, p.link_rate_mbps)
    if p.backup_offset_us is not None:
        b = (
            p.backup_offset_us * 1000,
            p.backup_offset_us * 1000 + wire_time_ns(60, p.link_rate_mbps),
        )
        assert p.station(2).rt.offset_us * 1000 >= b[1]
        for i, a in spans.items():
            assert a[1] <= b[0] or b[1] <= a[0] or i == 2, (a, b)
    roles = [st.role for st in p.stations]
    assert roles[0] == "master" and set(roles[2:]) <= {"slave"}


def test_default_lab_gives_every_station_two_full_frames_per_cycle():
    p = plan(3)
    for st in p.stations:
        assert st.window.window_us * 1000 // FULL_WT >= 2
        assert p.tcp_capacity_mbps(st.index) >= 20


def test_a_fixed_receiver_window_leaves_the_sender_most_of_the_cycle():
    one_frame_us = -(-FULL_WT // 1000)
    p = plan(2, backup=False, windows_us={2: one_frame_us})
    assert p.station(2).window.window_us == one_frame_us
    assert p.window_share(1) >= 0.70


def test_a_segment_that_cannot_fit_names_the_numbers():
    with pytest.raises(ConfigError, match=r"16 stations do not fit a 1000 us cycle.*station 1"):
        plan(16, cycle_us=1000)
    assert shortest_cycle_us(16) > 1000
    plan(16, cycle_us=shortest_cycle_us(16))


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"link_rate_mbps": 0}, "link rate"),
        ({"weights": [1, 0, 1]}, "weights"),
        ({"rt_sizes": [200, 200]}, "RT slot sizes"),
        ({"windows_us": {5: 100}}, "outside"),
    ],
)
def test_bad_planner_arguments_are_one_clear_error(kw, message):
    with pytest.raises(ConfigError, match=message):
        plan(3, **kw)


def test_outputs_name_every_station_and_window():
    p = plan(3)
    text = p.drawing()
    assert text.count("station") == 3 and "NRT window" in text
    conf = p.tdma_conf()
    assert conf.count("window 1 ") == 3 and "backup-offset" in conf
    assert "window_us = " in p.toml(3) and 'role = "slave"' in p.toml(3)


@pytest.mark.parametrize("guard_us", [50, 300, 450])
def test_the_benchmark_pair_plan_takes_a_long_guard_inside_its_own_windows(guard_us):
    """The pair's RT slots tolerate guard_us of RT-thread lateness; each station's window
    starts inside its RT slot's guard, so a long guard moves no other station's time."""
    from vnic.pair import plan as pair_plan

    p = pair_plan(1000, 100, guard_ns=guard_us * 1000)
    assert p.master.guard_ns == p.slave.guard_ns == guard_us * 1000
    for cfg in (p.master, p.slave):
        rt, win = cfg.slots[0], cfg.slots[1]
        assert rt.offset_us < win.offset_us < rt.offset_us + guard_us
    # the slave's window covers its guard, the master's window ends before the slave's slot
    assert p.slave.slots[1].window_us >= guard_us
    assert p.master.slots[1].offset_us + p.master.slots[1].window_us <= p.slave.slots[0].offset_us
