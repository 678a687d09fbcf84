"""rtnetd's RTcfg service (rtnet/rtcfg/service.py) and payload application (rtcfg/apply.py).

The service runs on channels of shared memory built like the station's
(fake_channel); a small "wire" thread moves the frames each service sends
to the receive rings of the others, as the stations and the link would.
"""

import threading
import time

import pytest
from fake_channel import FakeChannelMemory

from rtmac.tdma_config import Slot, TdmaConfig
from rtnet import config as _config
from rtnet.control_server import RequestError
from rtnet.daemon import Daemon
from rtnet.errors import RtcfgError
from rtnet.mac import format_mac, parse_mac
from rtnet.rtcfg import frames as fr
from rtnet.rtcfg import payload
from rtnet.rtcfg.service import RtcfgService
from rtnet.stationctl import format_rtcfg

SERVER, C2, C3 = "02:00:00:00:00:01", "02:00:00:00:00:02", "02:00:00:00:00:03"
LOOSE_S = 10.0  # bound of every wait for an event (only a hang reaches it)
Refused = (RequestError, RtcfgError)


class FakeStation:
    """What the service uses of rtnet.station.Station: its MAC and its channels."""

    def __init__(self, mac):
        self.mac, self.opened, self.closed = mac, [], []
        self.current = None  # (id, memory) of the newest channel

    def open_channel(self, ethertype, *, slot, prio, max_size, depth, cycles):
        self.opened.append((ethertype, slot, prio, max_size, depth, cycles))
        mem = FakeChannelMemory(
            depth=depth, max_size=max_size, ethertype=ethertype, mac=parse_mac(self.mac)
        )
        self.current = (len(self.opened), mem)
        return (len(self.opened), *mem.fds())

    def close_channel(self, cid):
        self.closed.append(cid)

    def mem(self):
        """The newest channel's memory while it is open, else None."""
        current = self.current
        return current[1] if current is not None and current[0] not in self.closed else None


class Wire:
    """Moves each station's sent frames to the others' receive rings (a shared segment)."""

    def __init__(self, stations):
        self.stations, self.stop = stations, threading.Event()
        self.lock = threading.Lock()  # one producer on each receive ring
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop.wait(0.002):
            with self.lock:
                self._move()

    def _move(self):
        for st in self.stations:
            mem = st.mem()
            if mem is None:
                continue
            while mem.shm.tx.tail != mem.shm.tx.head:
                frame = mem.sent(mem.shm.tx.tail)
                mem.shm.tx.tail += 1
                self._deliver(frame, st)

    def deliver(self, frame):
        """A frame from outside (a station the test plays)."""
        with self.lock:
            self._deliver(frame, None)

    def _deliver(self, frame, sender):
        dst = format_mac(frame[:6])
        for other in self.stations:
            mem = other.mem()
            if other is sender or mem is None or (dst != fr.BROADCAST and dst != other.mac):
                continue
            mem.deliver(frame)

    def close(self):
        self.stop.set()
        self.thread.join()


def service(station, apply=None, mtu=1500, ip=None):
    applied = []

    def record(stage, requests, info):
        if apply is not None:
            apply(stage, requests, info)
        applied.append((stage, requests))

    svc = RtcfgService(
        lambda: station, "rteth0", record, lambda: ip, lambda: mtu, threading.Event()
    )
    svc.applied = applied
    return svc


def until(done, what):
    deadline = time.monotonic() + LOOSE_S
    while not done():
        assert time.monotonic() < deadline, f"{what} did not happen within {LOOSE_S} s"
        time.sleep(0.005)


def in_thread(call, *args):
    """Run a blocking request in its own thread, as the control server does; .result()."""
    out = {}

    def run():
        try:
            out["reply"] = call(*args)
        except Exception as exc:  # handed to the test thread below
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()

    def result():
        t.join(LOOSE_S)
        assert not t.is_alive(), f"{call.__name__} did not return"
        if "error" in out:
            raise out["error"]
        return out["reply"]

    return result


@pytest.fixture
def svc():
    s = service(FakeStation(SERVER))
    yield s
    s.close()


# -- request checks ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,req,message",
    [
        ("h_server", {"period_ms": 0}, "period_ms: 0 outside 1..3600000"),
        ("h_server", {"burstrate": "4"}, "burstrate: '4' is not an integer"),
        ("h_server", {"heartbeat_ms": 70000}, "heartbeat_ms: 70000 outside 0..65535"),
        ("h_server", {"threshold": True}, "threshold: True is not an integer"),
        ("h_server", {"ready": "yes"}, "ready: 'yes' is not true or false"),
        ("h_add", {"address": "10.0.0.2"}, "no RTcfg server"),
        ("h_del", {"address": "10.0.0.2"}, "no RTcfg server"),
        ("h_wait", {}, "no RTcfg server"),
        ("h_wait", {"timeout_ms": -1}, "timeout_ms: -1 outside"),
        ("h_ready", {}, "no RTcfg server or client"),
        ("h_announce", {}, "no RTcfg client"),
        ("h_detach", {}, "no RTcfg server or client"),
        ("h_client", {"max_stations": 0}, "max_stations: 0 outside 1..255"),
    ],
)
def test_requests_are_checked_before_anything_starts(svc, name, req, message):
    with pytest.raises(Refused) as e:
        getattr(svc, name)(req)
    assert message in str(e.value)
    assert svc.station.opened == [] and svc.status() is None


@pytest.mark.parametrize(
    "req,message",
    [
        ({"address": 7}, "address: 7 is not an address"),
        ({"address": "10.0.0"}, "neither an IPv4 nor a MAC"),
        ({"address": "10.0.0.2", "hw": "zz"}, "not a MAC address"),
        (
            {"address": "10.0.0.2", "stage1": "tdma slot 0 400\nrm -rf /\n"},
            "stage 1: line 2: 'rm' is not an allowed command",
        ),
        ({"address": "10.0.0.2", "stage2": b"vnic up"}, "stage2: not a text"),
        ({"address": "10.0.0.2", "stage1": "#" * 1488}, "does not fit the 1500-byte MTU"),
        ({"address": "10.0.0.2", "timeout_ms": 1.5}, "timeout_ms: 1.5 is not an integer"),
    ],
)
def test_add_refuses_what_it_cannot_send(svc, req, message):
    svc.h_server({})
    with pytest.raises(Refused) as e:
        svc.h_add(req)
    assert message in str(e.value)
    assert svc.status()["stations"] == []


def test_a_stage_1_that_just_fits_the_nrt_slot_is_taken():
    svc = service(FakeStation(SERVER), mtu=200)
    try:
        svc.h_server({})
        svc.h_add({"address": C2, "stage1": "#" * (200 - 13)})
        with pytest.raises(RequestError, match="at most 187"):
            svc.h_add({"address": C3, "stage1": "#" * (200 - 12)})
        assert [s["mac"] for s in svc.status()["stations"]] == [C2]
    finally:
        svc.close()


def test_one_machine_at_a_time_and_detach_frees_the_channel(svc):
    svc.h_server({})
    for call in (svc.h_server, svc.h_client):
        with pytest.raises(RequestError, match="server already running"):
            call({})
    ethertype, slot, prio, _, _, cycles = svc.station.opened[0]
    assert (ethertype, slot, prio, cycles) == (0x9022, 1, 30, False)
    svc.h_detach({})
    assert svc.status() is None and svc.station.closed == [1]
    svc.h_server({})  # afresh, on a new channel
    assert len(svc.station.opened) == 2


def test_wait_gives_up_at_its_timeout(svc):
    svc.h_server({})
    svc.h_add({"address": C2})
    t0 = time.monotonic()
    with pytest.raises(RequestError, match="wait: timed out after 50 ms"):
        svc.h_wait({"timeout_ms": 50})
    assert time.monotonic() - t0 < LOOSE_S


def test_the_server_invites_with_stage_1_frames_in_its_channel(svc):
    svc.h_server({"period_ms": 10})
    svc.h_add({"address": C2, "stage1": "tdma slot 0 400\n"})
    mem = svc.station.mem()
    until(lambda: mem.shm.tx.head > 0, "an invitation")
    frame = mem.sent(0)
    assert frame[:6] == parse_mac(C2) and frame[6:12] == parse_mac(SERVER)
    assert frame[12:14] == b"\x90\x22" and len(frame) == 60
    assert fr.decode(frame[14:]) == fr.Stage1Cfg(None, None, 4, b"tdma slot 0 400\n")


# -- a segment: one server, two clients ---------------------------------------------------


def test_two_clients_are_configured_made_ready_and_one_found_dead():
    stations = [FakeStation(m) for m in (SERVER, C2, C3)]
    server, c2, c3 = (service(st) for st in stations)
    wire = Wire(stations)
    try:
        server.h_server({"period_ms": 10, "heartbeat_ms": 100, "threshold": 3})
        server.h_add({"address": C2, "stage1": "tdma slot 0 400\n"})
        server.h_add({"address": C3, "stage1": "tdma slot 0 600\n", "stage2": "vnic up\n"})
        got2, got3 = (
            in_thread(c2.h_client, {"timeout_ms": 5000}),
            in_thread(c3.h_client, {"timeout_ms": 5000}),
        )
        assert got2() == {"config": "tdma slot 0 400\n"}
        assert got3() == {"config": "tdma slot 0 600\n"}
        assert c2.applied == [(1, payload.parse(b"tdma slot 0 400", "rteth0"))]
        waited = in_thread(server.h_wait, {"timeout_ms": 5000})
        a2, a3 = (
            in_thread(c2.h_announce, {"timeout_ms": 5000}),
            in_thread(c3.h_announce, {"timeout_ms": 5000}),
        )
        assert a2() == {"config": ""} and a3() == {"config": "vnic up\n"}
        assert c3.applied[1] == (2, [{"cmd": "vnic.up", "dev": "rteth0"}])
        waited()
        readies = [in_thread(s.h_ready, {"timeout_ms": 5000}) for s in (server, c2, c3)]
        for r in readies:
            assert r() == {}
        st = server.status()
        assert [s["state"] for s in st["stations"]] == ["ready", "ready"]
        assert c2.status()["state"] == "ready" and len(c2.status()["stations"]) == 2

        c3.close()  # station 3 stops: no more heartbeats
        t0 = time.monotonic()
        until(lambda: server.status()["stations"][1]["state"] == "dead", "station 3 dead")
        assert time.monotonic() - t0 < LOOSE_S
        assert server.status()["stations"][0]["state"] == "ready"  # station 2 beats on

        hb = fr.ether_frame(SERVER, C3, fr.Heartbeat().encode())
        before = server.status()["counters"]
        wire.deliver(hb)
        until(lambda: server.status()["counters"]["dead_heartbeats"] == 1, "the count")
        after = server.status()["counters"]
        assert after["refused"] == before["refused"] + 1
        lines = format_rtcfg(server.status())
        assert "2 stations, 1 configured, 1 alive (ready), 1 dead" in lines[0]
        assert "heartbeats of dead stations 1" in lines[0]
        assert lines[1].split()[:3] == ["-", C2, "alive"]
        assert lines[2].split()[:3] == ["-", C3, "dead"]
    finally:
        wire.close()
        for s in (server, c2, c3):
            s.close()


def test_a_refused_stage_1_fails_rtcfg_client_with_its_message():
    stations = [FakeStation(m) for m in (SERVER, C2)]

    def refuse(stage, requests, info):
        raise RtcfgError("slot 0 offset 400 beyond the cycle")

    server, c2 = service(stations[0]), service(stations[1], apply=refuse)
    wire = Wire(stations)
    try:
        server.h_server({"period_ms": 10})
        server.h_add({"address": C2, "stage1": "tdma slot 0 400\n"})
        with pytest.raises(RequestError) as e:
            c2.h_client({"timeout_ms": 5000})
        assert str(e.value) == (
            f"client: RTcfg stage 1 from {SERVER} refused: slot 0 offset 400 beyond the cycle"
        )
        assert c2.status() is None and c2.applied == []  # free for another rtcfg client
        assert server.status()["stations"][0]["state"] == "searching"
    finally:
        wire.close()
        server.close()
        c2.close()


def test_format_rtcfg_of_a_client():
    line, server, c3 = format_rtcfg(
        {
            "role": "client",
            "state": "ready",
            "server": SERVER,
            "ip": None,
            "stations": [{"mac": SERVER, "ready": True}, {"mac": C3, "ready": False}],
            "counters": {"rx": 9, "tx": 4, "refused": 0, "dead_heartbeats": 0},
        }
    )
    assert line == (
        f"  rtcfg client ready, server {SERVER}, ip -: 2 stations known, 1 ready; "
        "frames rx 9 tx 4, refused 0 (heartbeats of dead stations 0)"
    )
    assert server.split() == ["-", SERVER, "ready"]
    assert c3.split() == ["-", C3, "not", "ready"]
    assert format_rtcfg(None) == []


# -- applying a payload in the daemon: all or nothing ------------------------------------


class TdmaStation:
    """What Daemon's tdma handlers use of a station."""

    def __init__(self, config):
        self.tdma_config, self.attached = config, []
        self.ipv4 = None

    def set_ipv4(self, ip, *, icmp_slot=0):
        self.ipv4 = ip

    @property
    def discipline(self):
        return "tdma" if self.tdma_config is not None else "none"

    def attach_tdma(self, config):
        self.attached.append(config)
        self.tdma_config = config

    def detach(self):
        self.tdma_config = None


@pytest.fixture
def daemon():
    d = Daemon(_config.StationConfig())
    d.station = TdmaStation(TdmaConfig(role="master", cycle_us=1000, slots={0: Slot(0, 0)}))
    return d


def test_a_payload_is_applied_whole_through_the_tdma_handlers(daemon):
    daemon._rtcfg_apply(
        1, payload.parse(b"tdma slot 1 400\ntdma slot 2 600 -s 200\n", "rteth0"), {"ip": None}
    )
    final = daemon.station.tdma_config
    assert sorted(final.slots) == [0, 1, 2] and final.slots[2].size == 200
    assert len(daemon.station.attached) == 2


@pytest.mark.parametrize(
    "text,message",
    [
        (b"tdma slot 1 400\ntdma slot 2 5000\n", "request 2 (tdma.slot)"),
        (b"tdma slot 1 400\nvnic up\n", "request 2: vnic up: this station has no VNIC"),
        (b"tdma slot 1 400\ntdma master 1000\n", "request 2: tdma.master: TDMA is already"),
        (b"tdma detach\ntdma slot 1 400\n", "request 2: tdma.slot: no TDMA attached"),
    ],
)
def test_a_payload_with_one_bad_request_applies_nothing(daemon, text, message):
    before = daemon.station.tdma_config
    with pytest.raises(RtcfgError) as e:
        daemon._rtcfg_apply(1, payload.parse(text, "rteth0"), {"ip": None})
    assert message in str(e.value)
    assert daemon.station.attached == [] and daemon.station.tdma_config is before
    assert daemon.ips == set()


def test_station_ip_is_taken_by_the_daemon(daemon):
    daemon._rtcfg_apply(1, payload.parse(b"ip 10.0.0.7\n", "rteth0"), {"ip": None})
    assert daemon.ips == {"10.0.0.7"} and daemon._own_ip() == "10.0.0.7"
    # the real-time address too: the XDP program, echo and UDP sockets use it
    assert daemon.station.ipv4 == "10.0.0.7" and daemon.ipv4.address == "10.0.0.7"


def test_the_address_of_a_stage_1_frame_becomes_the_real_time_one(daemon):
    daemon._rtcfg_apply(1, payload.parse(b"tdma slot 1 400\n", "rteth0"), {"ip": "10.0.0.8"})
    assert daemon.station.ipv4 == "10.0.0.8" and daemon.ipv4.address == "10.0.0.8"


def test_applications_cannot_open_the_rtcfg_ethertype(daemon):
    with pytest.raises(RequestError, match="0x9022 is RTcfg, served by the daemon itself"):
        daemon.channels.h_channel_open({"ethertype": 0x9022}, None)


def test_stage_2_commands_are_applied_whole_through_the_same_checks(daemon):
    daemon.rtcfg.h_commands({"commands": "tdma slot 1 400; tdma slot 2 600 -s 200"})
    assert sorted(daemon.station.tdma_config.slots) == [0, 1, 2]


@pytest.mark.parametrize(
    "text,message",
    [
        ("tdma slot 1 400\nreboot\n", "commands: line 2: 'reboot' is not an allowed command"),
        ("tdma slot 1 400; tdma slot 2 5000", "commands refused: request 2 (tdma.slot)"),
        (
            "tdma slot 1 400\nvnic up\n",
            "commands refused: request 2: vnic up: this station has no VNIC",
        ),
        (7, "commands: a text of at most 65536 bytes"),
    ],
)
def test_stage_2_commands_with_one_bad_command_apply_nothing(daemon, text, message):
    before = daemon.station.tdma_config
    with pytest.raises(RequestError) as e:
        daemon.rtcfg.h_commands({"commands": text})
    assert str(e.value).startswith(message)
    assert daemon.station.tdma_config is before and daemon.station.attached == []


def test_a_vnic_opened_on_first_use_needs_its_slot_first():
    from rtnet.rtcfg import apply as rtcfg_apply

    def view():
        return rtcfg_apply.StationView(
            "tdma", TdmaConfig(role="slave"), False, "10.0.0.2", None, None, vnic_slot=1
        )

    with pytest.raises(RtcfgError, match=r"request 1: vnic up: the VNIC's slot 1 is not in"):
        rtcfg_apply.check(payload.parse(b"vnic up\ntdma slot 0 200\n", "rteth0"), view())
    # slot 1 falls back to slot 0, as RTnet's VNIC does
    after = rtcfg_apply.check(payload.parse(b"tdma slot 0 200\nvnic up\n", "rteth0"), view())
    assert after.has_vnic and sorted(after.tdma.slots) == [0]


def test_peers_learnt_with_ip_and_mac_should_go_to_the_neighbour_table():
    stations = [FakeStation(m) for m in (SERVER, C2)]
    server, c2 = service(stations[0], ip="10.0.0.1"), service(stations[1])
    learnt = {server: [], c2: []}
    server.on_peer = lambda ip, mac: learnt[server].append((ip, mac))
    c2.on_peer = lambda ip, mac: learnt[c2].append((ip, mac))
    wire = Wire(stations)
    try:
        server.h_server({"period_ms": 10, "heartbeat_ms": 100, "threshold": 3})
        server.h_add({"address": "10.0.0.2", "hw": C2, "stage1": "tdma slot 0 400\n"})
        got = in_thread(c2.h_client, {"timeout_ms": 5000})
        assert got() == {"config": "tdma slot 0 400\n"}
        waited = in_thread(server.h_wait, {"timeout_ms": 5000})
        assert in_thread(c2.h_announce, {"timeout_ms": 5000})() == {"config": ""}
        waited()
        until(lambda: ("10.0.0.2", C2.lower()) in learnt[server], "the server learning C2")
        assert all(ip == "10.0.0.2" for ip, _ in learnt[server])
    finally:
        for s in (server, c2):
            s.close()
        wire.close()
