"""validate() and the change functions of rtmac.tdma_config, rule by rule."""

from dataclasses import replace

import pytest

from rtmac.tdma_config import (
    ConfigError,
    Slot,
    TdmaConfig,
    apply_request,
    effective_slot,
    phases_meet,
    remove_slot,
    set_slot,
    validate,
    wire_time_ns,
)

MASTER = TdmaConfig(role="master", cycle_us=5000)


def with_slots(cfg, *slots):
    for s in slots:
        cfg = set_slot(cfg, s)
    return cfg


def refused(cfg, match):
    with pytest.raises(ConfigError, match=match) as err:
        validate(cfg)
    assert "\n" not in str(err.value)


# --- wire time -------------------------------------------------------------------------------


def test_wire_time_should_count_preamble_padding_fcs_and_gap():
    # 8 preamble/SFD + 60 (padded) + 4 FCS + 12 IFG = 84 octets = 672 bits.
    assert wire_time_ns(42, 100) == 6720
    assert wire_time_ns(60, 100) == wire_time_ns(0, 100)
    assert wire_time_ns(1514, 1000) == (8 + 1514 + 4 + 12) * 8
    assert wire_time_ns(61, 10) == (8 + 61 + 4 + 12) * 800
    assert wire_time_ns(1514, 0) == 0


def test_wire_time_should_round_up():
    assert wire_time_ns(60, 3) == -(-84 * 8 * 1000 // 3)


# --- the RTnet example configurations are accepted ------------------------------------------


def test_rtnet_sample_configs_should_validate():
    # utils/net/tdma.conf
    master = with_slots(MASTER, Slot(0, 0), Slot(1, 1000))
    backup = with_slots(replace(MASTER, backup_offset_us=200), Slot(0, 400))
    slave_a = with_slots(TdmaConfig(role="slave"), Slot(0, 2000), Slot(1, 2200, 1, 2))
    slave_b = with_slots(TdmaConfig(role="slave"), Slot(0, 2400), Slot(1, 2200, 2, 2))
    assert sorted(master.slots) == [0, 1]
    assert backup.backup_offset_us == 200
    assert slave_a.slots[1].phasing == 1 and slave_b.slots[1].phasing == 2


# --- global values -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes, match",
    [
        (dict(role="observer"), "role"),
        (dict(cycle_us=None), "needs a cycle"),
        (dict(cycle_us=99), "cycle_us: 99 outside"),
        (dict(cycle_us=1_000_001), "cycle_us: 1000001 outside"),
        (dict(cycle_us=5000.0), "cycle_us must be an integer"),
        (dict(cycle_us=True), "cycle_us must be an integer"),
        (dict(backup_offset_us=5000), "not smaller than the cycle"),
        (dict(backup_offset_us=7000), "not smaller than the cycle"),
        (dict(backup_offset_us=-1), "backup_offset_us: -1 below"),
        (dict(cal_rounds=-1), "cal_rounds: -1 below"),
        (dict(cal_rounds="100"), "cal_rounds must be an integer"),
        (dict(max_slot_id=-1), "max_slot_id"),
        (dict(max_slot_id=256), "max_slot_id"),
        (dict(max_cal_requests=0), "max_cal_requests"),
        (dict(link_rate_mbps=-100), "link_rate_mbps"),
        (dict(guard_ns=-1), "guard_ns"),
        (dict(mtu=59), "mtu"),
    ],
)
def test_bad_global_values_should_be_refused(changes, match):
    refused(replace(MASTER, **changes), match)


def test_backup_offset_should_need_a_master():
    refused(TdmaConfig(role="slave", backup_offset_us=100), "only valid for a master")


def test_cycle_limits_should_be_accepted():
    validate(replace(MASTER, cycle_us=100))
    validate(replace(MASTER, cycle_us=1_000_000))
    validate(replace(MASTER, backup_offset_us=4999))


# --- slots ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "slot, match",
    [
        (Slot(8, 0), "id above max_slot_id 7"),
        (Slot(-1, 0), "slot id: -1 below"),
        (Slot(0, -5), "offset_us: -5 below"),
        (Slot(0, "0"), "offset_us must be an integer"),
        (Slot(0, 0, size=59), "size 59 outside 60..1500"),
        (Slot(0, 0, size=1501), "size 1501 outside 60..1500"),
        (Slot(0, 0, phasing=3, period=2), "phasing 3/2 outside 1..2"),
        (Slot(0, 0, phasing=0, period=2), "phasing 0/2 outside"),
        (Slot(0, 0, phasing=1, period=0), "period: 0 below"),
    ],
)
def test_bad_slot_values_should_be_refused(slot, match):
    refused(replace(MASTER, slots={slot.id: slot}), match)


def test_slot_size_limits_should_follow_the_mtu():
    validate(replace(MASTER, slots={0: Slot(0, 0, size=60)}))
    validate(replace(MASTER, mtu=1400, slots={0: Slot(0, 0, size=1400)}))
    with pytest.raises(ConfigError, match="mtu"):
        validate(replace(MASTER, mtu=9000))
    refused(replace(MASTER, mtu=1496, slots={0: Slot(0, 0, size=1500)}), "outside 60..1496")


def test_slot_stored_under_another_id_should_be_refused():
    refused(replace(MASTER, slots={1: Slot(0, 0)}), "stored under id 1")


def test_joint_slot_should_need_an_existing_primary_of_the_same_size():
    base = with_slots(MASTER, Slot(2, 0, size=1000))
    assert set_slot(base, Slot(3, 500, size=1000, joint=2)).slots[3].joint == 2
    with pytest.raises(ConfigError, match="joint slot 4 does not exist"):
        set_slot(base, Slot(3, 500, size=1000, joint=4))
    with pytest.raises(ConfigError, match="differs from joint slot 2"):
        set_slot(base, Slot(3, 500, size=1500, joint=2))
    with pytest.raises(ConfigError, match="joint with itself"):
        set_slot(base, Slot(2, 0, size=1000, joint=2))


def test_joint_slot_id_should_be_below_max_slot_id_like_rtnet():
    base = with_slots(replace(MASTER, max_slot_id=3), Slot(3, 0))
    with pytest.raises(ConfigError, match="must be below max_slot_id 3"):
        set_slot(base, Slot(2, 500, joint=3))
    base = with_slots(replace(MASTER, max_slot_id=4), Slot(3, 0))
    assert set_slot(base, Slot(2, 500, joint=3)).slots[2].joint == 3


def test_removing_a_primary_should_be_refused_while_joined():
    cfg = with_slots(MASTER, Slot(2, 0), Slot(3, 500, joint=2))
    with pytest.raises(ConfigError, match="joint slot 2 does not exist"):
        remove_slot(cfg, 2)
    assert sorted(remove_slot(remove_slot(cfg, 3), 2).slots) == []


def test_slot_running_past_the_cycle_end_should_be_refused():
    # 1514-byte frame at 100 Mbit/s = 123.04 us, plus 2 us guard = 125.04 us.
    cfg = replace(MASTER, cycle_us=1000, guard_ns=2000)
    validate(replace(cfg, slots={0: Slot(0, 874)}))
    refused(replace(cfg, slots={0: Slot(0, 875)}), "past the 1000 us cycle")
    validate(replace(cfg, slots={0: Slot(0, 875, size=1000)}))
    validate(replace(cfg, link_rate_mbps=0, guard_ns=0, slots={0: Slot(0, 1000)}))
    refused(replace(cfg, link_rate_mbps=0, guard_ns=1, slots={0: Slot(0, 1000)}), "past the")


def test_default_guard_should_reserve_50_us_of_lateness_after_a_full_frame():
    cfg = replace(MASTER, cycle_us=1000)
    validate(replace(cfg, slots={0: Slot(0, 826)}))  # 826 + 123.04 + 50 < 1000
    refused(replace(cfg, slots={0: Slot(0, 827)}), "past the 1000 us cycle")


def test_slave_without_known_cycle_should_skip_the_cycle_end_check():
    validate(TdmaConfig(role="slave", slots={0: Slot(0, 900_000)}))
    refused(TdmaConfig(role="slave", cycle_us=5000, slots={0: Slot(0, 4950)}), "past the")


def test_overlapping_slots_should_be_refused():
    cfg = with_slots(replace(MASTER, guard_ns=2000), Slot(0, 1000))
    with pytest.raises(ConfigError, match="slot 2 at 1100 us overlaps slot 0"):
        set_slot(cfg, Slot(2, 1100))
    with pytest.raises(ConfigError, match="overlaps"):
        set_slot(cfg, Slot(2, 1000))
    with pytest.raises(ConfigError, match="overlaps"):
        set_slot(cfg, Slot(2, 900))  # 900 + 125.04 us reaches into 1000
    assert 2 in set_slot(cfg, Slot(2, 1126)).slots
    # a small slot before the big one: 1020 - 1000 < 125.04, so it overlaps
    with pytest.raises(ConfigError, match="overlaps"):
        set_slot(cfg, Slot(2, 1020, size=60))
    assert 2 in set_slot(cfg, Slot(2, 990, size=60)).slots  # 990 + 8.72 + 2 us < 1000


@pytest.mark.parametrize(
    "a, b, overlap",
    [
        ((1, 2), (2, 2), False),
        ((1, 2), (1, 2), True),
        ((1, 2), (1, 4), True),
        ((1, 2), (3, 4), True),
        ((1, 2), (2, 4), False),
        ((2, 3), (1, 3), False),
        ((1, 3), (1, 2), True),  # cycle 0 has both
        ((1, 1), (2, 4), True),
    ],
)
def test_phasing_should_decide_whether_same_offset_slots_collide(a, b, overlap):
    sa, sb = Slot(2, 2200, *a), Slot(3, 2200, *b)
    assert phases_meet(sa, sb) is overlap
    cycles_with_both = [n for n in range(48) if sa.active_in(n) and sb.active_in(n)]
    assert bool(cycles_with_both) is overlap
    cfg = with_slots(MASTER, sa)
    if overlap:
        with pytest.raises(ConfigError, match="overlaps"):
            set_slot(cfg, sb)
    else:
        assert sorted(set_slot(cfg, sb).slots) == [2, 3]


def test_phasing_should_be_stored_as_given_and_active_when_cycle_matches():
    s = with_slots(MASTER, Slot(1, 2200, phasing=2, period=3)).slots[1]
    assert (s.phasing, s.period) == (2, 3)
    assert [n for n in range(9) if s.active_in(n)] == [1, 4, 7]


def test_slot_1_should_fall_back_to_slot_0():
    cfg = with_slots(MASTER, Slot(0, 400))
    assert effective_slot(cfg, 1) is cfg.slots[0]
    assert effective_slot(cfg, 2) is None
    cfg = set_slot(cfg, Slot(1, 1000))
    assert effective_slot(cfg, 1).offset_us == 1000
    assert effective_slot(remove_slot(cfg, 1), 1).offset_us == 400
    assert effective_slot(TdmaConfig(role="slave"), 1) is None


# --- changes are all-or-nothing --------------------------------------------------------------


def test_refused_change_should_leave_the_previous_config_intact():
    cfg = with_slots(MASTER, Slot(0, 0), Slot(1, 1000))
    before = cfg.to_dict()
    with pytest.raises(ConfigError):
        set_slot(cfg, Slot(2, 1050))
    with pytest.raises(ConfigError):
        set_slot(cfg, Slot(1, 4990))  # replacing slot 1 with a bad one
    with pytest.raises(ConfigError, match="slot 5 does not exist"):
        remove_slot(cfg, 5)
    assert cfg.to_dict() == before
    assert cfg.slots[1].offset_us == 1000


def test_successful_change_should_not_modify_the_old_config():
    cfg = with_slots(MASTER, Slot(0, 0))
    new = set_slot(cfg, Slot(0, 300))
    assert cfg.slots[0].offset_us == 0 and new.slots[0].offset_us == 300
    assert sorted(remove_slot(new, 0).slots) == [] and sorted(new.slots) == [0]


def test_apply_request_should_take_rtmac_cli_requests():
    cfg = replace(MASTER, mtu=1496)
    cfg = apply_request(
        cfg,
        {
            "cmd": "tdma.slot",
            "dev": "rteth0",
            "id": 1,
            "offset_us": 2200,
            "phasing": 1,
            "period": 2,
            "size": 0,
            "joint": None,
        },
    )
    assert cfg.slots[1] == Slot(1, 2200, 1, 2, 1496, None)
    cfg = apply_request(cfg, {"cmd": "tdma.remove_slot", "dev": "rteth0", "id": 1})
    assert cfg.slots == {}
    with pytest.raises(ConfigError, match="not a slot request"):
        apply_request(cfg, {"cmd": "tdma.detach"})


def test_config_should_round_trip_through_dict():
    cfg = with_slots(
        replace(MASTER, backup_offset_us=200),
        Slot(0, 400),
        Slot(2, 2200, 1, 2, size=500),
        Slot(3, 3000, size=500, joint=2),
    )
    assert TdmaConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ConfigError):
        TdmaConfig.from_dict({"role": "master", "cycle_us": 5000, "bogus": 1})


@pytest.mark.parametrize(
    "request_",
    [
        {"cmd": "tdma.slot"},
        {"cmd": "tdma.slot", "id": 0},
        {"cmd": "tdma.remove_slot"},
        {"cmd": "tdma.remove_slot", "id": [1]},
        {"cmd": "tdma.slot", "id": 0, "offset_us": 0, "size": "1500"},
        {"cmd": "tdma.slot", "id": 10**5000, "offset_us": 0},
        {"cmd": None},
    ],
)
def test_malformed_slot_requests_should_be_refused_with_one_line(request_):
    with pytest.raises(ConfigError) as err:
        apply_request(MASTER, request_)
    assert "\n" not in str(err.value) and len(str(err.value)) < 200
