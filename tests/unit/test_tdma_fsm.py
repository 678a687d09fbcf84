"""The TDMA state machine (csrc/tdma/rtn_tdma_fsm.c), walked through every combination of
state, event, kind of station and calibration against a table written here."""

import itertools

from rtmac.engine import STATES, TdmaState
from rtnet._lowlevel import lib

S = TdmaState
PRIMARY, BACKUP, SLAVE = lib.RTN_TDMA_FSM_PRIMARY, lib.RTN_TDMA_FSM_BACKUP, lib.RTN_TDMA_FSM_SLAVE
KINDS = (PRIMARY, BACKUP, SLAVE)
EVENTS = {
    name: getattr(lib, f"RTN_TDMA_EV_{name}")
    for name in (
        "ATTACH",
        "DETACH",
        "LISTEN_DONE",
        "SYNC",
        "CALIBRATED",
        "SYNC_TIMEOUT",
        "PRIMARY_SILENT",
        "PRIMARY_ALIVE",
    )
}
WORKING = {PRIMARY: S.MASTER, BACKUP: S.BACKUP_STANDBY, SLAVE: S.SYNCED}


def expected(state: S, event: str, kind: int, calibrated: bool) -> S:
    """What the engine must do, written out rule by rule (anything else: no change)."""
    master = kind in (PRIMARY, BACKUP)
    if event == "ATTACH":
        return S.LISTEN if master else S.WAIT_SYNC
    if event == "DETACH":
        return S.DOWN
    if event == "LISTEN_DONE" and state == S.LISTEN and master:
        return S.BACKUP_ACTIVE if kind == BACKUP else S.MASTER
    if event == "SYNC":
        if state in (S.LISTEN, S.WAIT_SYNC, S.SYNC_LOST):
            return WORKING[kind] if calibrated else S.CALIBRATING
        if state == S.BACKUP_ACTIVE:
            return S.BACKUP_STANDBY if calibrated else S.CALIBRATING
    if event == "CALIBRATED" and state == S.CALIBRATING:
        return WORKING[kind]
    if event == "SYNC_TIMEOUT" and state in (S.CALIBRATING, S.SYNCED) and kind != BACKUP:
        return S.SYNC_LOST
    if event == "PRIMARY_SILENT" and state == S.BACKUP_STANDBY and kind == BACKUP:
        return S.BACKUP_ACTIVE
    if event == "PRIMARY_ALIVE" and state == S.BACKUP_ACTIVE and kind == BACKUP:
        return S.BACKUP_STANDBY
    return state


def test_every_state_event_kind_and_calibration():
    assert len(TdmaState) == lib.RTN_TDMA_N_STATES
    assert len(EVENTS) == lib.RTN_TDMA_N_EVENTS and len(KINDS) == lib.RTN_TDMA_FSM_N_KINDS
    walked = 0
    for state, (event, code), kind, cal in itertools.product(
        TdmaState, EVENTS.items(), KINDS, (False, True)
    ):
        got = STATES[lib.rtn_tdma_fsm(state.code, code, kind, int(cal))]
        assert got == expected(state, event, kind, cal), (state, event, kind, cal)
        walked += 1
    assert walked == 9 * 8 * 3 * 2


def test_a_slave_never_becomes_a_master_and_a_master_never_a_slave():
    """Whatever the order of events, each kind stays among its own states."""
    slave_states = {S.DOWN, S.WAIT_SYNC, S.CALIBRATING, S.SYNCED, S.SYNC_LOST}
    for kind in KINDS:
        reached, todo = set(), [S.DOWN]
        while todo:
            s = todo.pop()
            if s in reached:
                continue
            reached.add(s)
            for code, cal in itertools.product(EVENTS.values(), (0, 1)):
                todo.append(STATES[lib.rtn_tdma_fsm(s.code, code, kind, cal)])
        if kind == SLAVE:
            assert reached == slave_states
        else:
            assert S.SYNCED not in reached and S.WAIT_SYNC not in reached
            assert (S.SYNC_LOST in reached) == (kind == PRIMARY)


def test_states_compare_with_their_display_names():
    assert TdmaState.SYNCED == "synchronised" and STATES[lib.RTN_TDMA_ST_MASTER] == "active"


def test_state_numbers_are_the_c_enum():
    """TdmaStateCode is built from enum rtn_tdma_state: each member is the C number."""
    from rtnet.tdma_stats import TdmaStateCode

    assert [s.name for s in TdmaStateCode] == [s.name for s in TdmaState]
    for code in TdmaStateCode:
        assert code == getattr(lib, f"RTN_TDMA_ST_{code.name}") == TdmaState[code.name].code
    assert STATES[lib.RTN_TDMA_ST_SYNC_LOST] is TdmaState.SYNC_LOST
