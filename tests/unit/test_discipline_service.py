"""rtnetd's discipline requests (rtnet.discipline_service) over a station that records what
it is asked: one discipline at a time, and a detach names the one that is not there."""

import threading

import pytest

from rtnet.control_server import RequestError
from rtnet.discipline_service import DisciplineService
from rtnet.tdma_stats import SlotMiss


class FakeStation:
    def __init__(self):
        self.discipline, self.tdma_config, self.calls = "none", None, []
        self.misses = [
            SlotMiss(at_ns=1000 * i, woke_late_ns=70_000, slots=1, slot0=1) for i in range(5)
        ]

    def slot_misses(self, first=0):
        self.calls.append(("misses", first))
        return self.misses[first:], len(self.misses)

    def attach_nomac(self):
        self.calls.append("nomac")
        self.discipline = "nomac"

    def attach_tdma(self, cfg):
        self.calls.append(("tdma", cfg.role))
        self.discipline, self.tdma_config = "tdma", cfg

    def stats(self):
        return {"tdma": {"state": "master"} if self.tdma_config else None}

    def detach(self):
        self.calls.append("detach")
        self.discipline, self.tdma_config = "none", None


@pytest.fixture
def svc():
    st = FakeStation()
    svc = DisciplineService(lambda: st, "rteth0", 100, threading.RLock(), threading.Event())
    svc.st = st
    return svc


def test_one_discipline_at_a_time(svc):
    read_only, changes = svc.handlers()
    assert set(read_only) == {"tdma.show", "tdma.misses"}
    assert changes["nomac.attach"]({}, None) == {}
    for cmd, req in (("tdma.master", {"cycle_us": 1000}), ("nomac.attach", {}), ("tdma.slave", {})):
        with pytest.raises(RequestError, match="rteth0: NoMAC already attached"):
            changes[cmd](req, None)
    with pytest.raises(RequestError, match="rteth0: no TDMA attached"):
        changes["tdma.detach"]({}, None)
    assert changes["nomac.detach"]({}, None) == {}
    assert changes["tdma.master"]({"cmd": "tdma.master", "cycle_us": 1000}, None) == {}
    with pytest.raises(RequestError, match="rteth0: TDMA already attached"):
        changes["nomac.attach"]({}, None)
    with pytest.raises(RequestError, match="rteth0: no NoMAC attached"):
        changes["nomac.detach"]({}, None)
    shown = read_only["tdma.show"]({}, None)
    assert shown["config"]["role"] == "master" and shown["state"] == "master"
    assert changes["tdma.detach"]({}, None) == {}
    assert svc.st.calls == ["nomac", "detach", ("tdma", "master"), "detach"]


def test_misses_are_read_from_a_record_number_and_a_bad_one_is_one_line(svc):
    misses = svc.handlers()[0]["tdma.misses"]
    got = misses({"cmd": "tdma.misses", "from": 3}, None)
    assert got == {
        "misses": [
            {"at_ns": 3000, "woke_late_ns": 70_000, "slots": 1, "slot0": 1},
            {"at_ns": 4000, "woke_late_ns": 70_000, "slots": 1, "slot0": 1},
        ],
        "next": 5,
    }
    assert misses({"cmd": "tdma.misses"}, None)["next"] == 5  # from 0: all that are kept
    svc.st.calls.clear()
    for bad in (-1, 1 << 64, 1.5, "3", True, None, [3]):
        with pytest.raises(RequestError, match=r"^from: .* is not a record number"):
            misses({"cmd": "tdma.misses", "from": bad}, None)
    assert svc.st.calls == []  # refused before the station is asked
