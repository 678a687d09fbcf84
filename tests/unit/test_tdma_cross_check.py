"""rtmac.tdma_config.validate() and the C engine's rtn_tdma_cfg_check() agree on every schedule.

validate() runs the one rule, rtn_tdma_cfg_check(), on what TdmaConfig.to_c() makes of
the configuration, after the checks only Python can make (types, the role's name, values
that do not fit a C field).  If those checks or the conversion were wrong, a file would be
refused that the engine takes, or one accepted that it refuses at start.  Random
schedules, many of them near a limit, go through both.
"""

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rtmac import tdma_config as tc
from rtmac.tdma_config import Slot, TdmaConfig
from rtnet._lowlevel import last_error, lib
from rtnet.errors import ConfigError
from rtnet.options import OPTIONS

SETTINGS = settings(max_examples=600, deadline=None, database=None)
C_ROLES = {"master": lib.RTN_TDMA_ROLE_MASTER, "slave": lib.RTN_TDMA_ROLE_SLAVE}


def c_struct(cfg: TdmaConfig):
    """``cfg`` as the C engine sees it, without any check (rtmac.engine.to_c validates first)."""
    return cfg.to_c()


def verdicts(cfg: TdmaConfig) -> tuple[str | None, str | None]:
    """(Python's refusal, C's refusal); None where the side accepts."""
    try:
        tc.validate(cfg)
        py = None
    except ConfigError as exc:
        py = str(exc)
    rc = lib.rtn_tdma_cfg_check(c_struct(cfg))
    return py, (last_error() if rc else None)


def near(lo: int, hi: int):
    """Whole numbers in lo..hi, with the limits and their neighbours drawn often."""
    edges = sorted({lo - 1, lo, lo + 1, hi - 1, hi, hi + 1})
    return st.one_of(st.sampled_from(edges), st.integers(lo, max(lo, hi)))


def usually(draw, typical, lo: int, hi: int):
    """A value from ``typical`` nine times in ten, else one near or inside ``lo..hi``."""
    return draw(typical if draw(st.integers(0, 9)) else near(lo, hi))


@st.composite
def schedules(draw):
    role = draw(st.sampled_from(["master"] * 6 + ["slave"] * 3 + ["observer"]))
    cycle = usually(draw, st.sampled_from([1000, 2000, 5000]), tc.MIN_CYCLE_US, tc.MAX_CYCLE_US)
    if draw(st.integers(0, 9)) < (5 if role == "slave" else 1):
        cycle = None  # a slave learns the cycle from Sync; a master must have one
    backup = None
    if draw(st.integers(0, 4)) == 0:
        backup = draw(st.integers(-2, max(cycle or 0, 1000) + 2))
    max_slot_id = usually(draw, st.integers(4, 12), 0, tc.MAX_SLOT_ID_LIMIT)
    link = usually(draw, st.sampled_from([0, 100, 100, 1000]), 0, tc.MAX_LINK_RATE_MBPS)
    guard = usually(draw, st.sampled_from([0, 2000, 50_000]), 0, OPTIONS["tdma.guard_ns"].hi)
    # Slots one after another with gaps that are sometimes too short: then
    # phasing decides whether they overlap.  Joint slots mostly name an
    # existing slot of the same size.
    slots, offset = {}, usually(draw, st.integers(0, 200), 0, tc.MAX_OFFSET_US)
    for _ in range(draw(st.integers(0, 8))):
        sid = usually(draw, st.integers(0, max(max_slot_id, 0)), 0, max_slot_id)
        period = usually(draw, st.sampled_from([1, 1, 1, 2, 2, 3, 4]), 1, tc.MAX_PERIOD)
        phasing = usually(draw, st.integers(1, max(period, 1)), 1, period)
        size = usually(draw, st.sampled_from([60, 200, 1500, 1500]), 60, tc.MAX_MTU)
        joint = None
        if slots and draw(st.integers(0, 2)) == 0:
            joint = usually(draw, st.sampled_from(sorted(slots)), 0, max_slot_id)
            if joint in slots and draw(st.integers(0, 4)):
                size = slots[joint].size
        window = 0 if draw(st.integers(0, 2)) else usually(draw, st.integers(100, 800), 0, 1000)
        slots[sid] = Slot(sid, offset, phasing, period, size, joint, window)
        offset += usually(draw, st.integers(0, 400), 0, tc.MAX_OFFSET_US)
    return TdmaConfig(
        role=role,
        cycle_us=cycle,
        backup_offset_us=backup,
        cal_rounds=usually(draw, st.sampled_from([0, 10, 100]), 0, OPTIONS["tdma.cal_rounds"].hi),
        max_slot_id=max_slot_id,
        max_cal_requests=usually(draw, st.sampled_from([1, 64]), 1, tc.MAX_CAL_REQUESTS),
        slots=slots,
        link_rate_mbps=link,
        guard_ns=guard,
        sync_loss_cycles=usually(
            draw, st.sampled_from([1, 5]), 1, OPTIONS["tdma.sync_loss_cycles"].hi
        ),
    )


def representable(cfg: TdmaConfig) -> bool:
    """Whether every value fits its C field, so the C side sees what Python saw."""
    unsigned = (
        cfg.cal_rounds,
        cfg.max_slot_id,
        cfg.max_cal_requests,
        cfg.link_rate_mbps,
        cfg.sync_loss_cycles,
        *(v for s in cfg.slots.values() for v in (s.phasing, s.period, s.size)),
    )
    # a slave's cycle 0 and joint -1 mean "none" in C; Python refuses both as numbers
    return (
        all(v >= 0 for v in unsigned)
        and cfg.cycle_us != 0
        and all(s.joint is None or s.joint >= 0 for s in cfg.slots.values())
    )


@SETTINGS
@given(schedules())
def test_python_and_c_should_accept_and_refuse_the_same_schedules(cfg):
    if not representable(cfg):
        return
    py, c = verdicts(cfg)
    assert (py is None) == (c is None), f"Python: {py or 'accepts'}; C: {c or 'accepts'}"


# --- the disagreements found so far, each kept as a fixed case ------------------------------

MASTER = TdmaConfig(role="master", cycle_us=5000, guard_ns=2000)


@pytest.mark.parametrize(
    "cfg",
    [
        replace(MASTER, max_cal_requests=tc.MAX_CAL_REQUESTS + 1),  # Python took up to 65535
        replace(
            MASTER,
            slots={
                0: Slot(0, 0),
                2: Slot(2, 1000, joint=0),  # C refused joint of joint
                3: Slot(3, 2000, joint=2),
            },
        ),
        replace(MASTER, slots={0: Slot(0, 0), 1: Slot(1, 100)}),  # overlap: C accepted
        replace(MASTER, slots={3: Slot(3, 0), 2: Slot(2, 500, joint=3)}, max_slot_id=3),
        replace(MASTER, slots={0: Slot(0, 0, size=1522)}),  # C took frames to 1536
        replace(MASTER, cycle_us=2_000_000),
        replace(MASTER, guard_ns=-1),
        replace(MASTER, sync_loss_cycles=0),
        replace(MASTER, slots={0: Slot(0, 0, phasing=1, period=2048)}),
        TdmaConfig(role="slave", cycle_us=50),
        TdmaConfig(role="slave", backup_offset_us=100),
        replace(MASTER, backup_offset_us=0),
    ],
)
def test_both_sides_should_refuse_what_only_one_refused_before(cfg):
    py, c = verdicts(cfg)
    assert py is not None and c is not None, (py, c)


def test_both_sides_should_accept_a_full_schedule():
    cfg = replace(
        MASTER,
        backup_offset_us=200,
        max_slot_id=tc.MAX_SLOT_ID_LIMIT,
        max_cal_requests=tc.MAX_CAL_REQUESTS,
        slots={
            0: Slot(0, 300),
            1: Slot(1, 1000, 1, 2),
            2: Slot(2, 1000, 2, 2, joint=1),
            5: Slot(5, 4800, size=60),
        },
    )
    assert verdicts(cfg) == (None, None)


def test_limits_should_come_from_the_c_engine():
    assert tc.MAX_CAL_REQUESTS == lib.RTN_TDMA_MAX_CAL
    assert tc.MAX_SLOT_ID_LIMIT == lib.RTN_TDMA_MAX_SLOTS - 1
    assert tc.MIN_CYCLE_US * 1000 == lib.RTN_TDMA_MIN_CYCLE_NS
    assert tc.MAX_MTU + tc.ETH_HLEN <= lib.RTN_TDMA_FRAME_MAX
