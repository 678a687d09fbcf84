"""The RTcfg server and clients wired together on a virtual clock (rtnet/rtcfg/server.py,
client.py): the test carries every frame, as bytes, from sender to receivers."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rtnet.errors import RtcfgError
from rtnet.rtcfg import frames as fr
from rtnet.rtcfg.client import Client, ClientState
from rtnet.rtcfg.server import ConnState, Server, ServerConfig
from rtnet.rtcfg.step import NS_PER_MS

SERVER_MAC = "02:00:00:00:00:01"
STAGE1 = b"tdma slot 0 400\nvnic address 10.0.0.{n}/24\n"
STAGE2 = b"# common setup\n" + b"ip 10.0.0.1\n" * 300  # several fragments at MTU 1500


class Segment:
    """A broadcast wire: frames from ``deliver`` reach their destination (or everyone)."""

    def __init__(self, server, clients):
        self.server, self.clients = server, clients
        self.now = 0
        self.cut = set()  # MACs whose frames are lost (a station cut off)
        self.applied = {c.mac: [] for c in clients}

    def deliver(self, src, step):
        queue = [(src, tx) for tx in step.tx]
        while queue:
            src, tx = queue.pop(0)
            wire = tx.wire(src)  # as it goes on the wire, padded to 60 bytes
            if src in self.cut or tx.dst in self.cut:
                continue
            dst, body = fr.mac_of(wire[0:6]), wire[14:]
            if dst in (fr.BROADCAST, self.server.mac) and src != self.server.mac:
                queue += [(self.server.mac, t) for t in self.server.receive(src, body, self.now).tx]
            for c in self.clients:
                if dst in (fr.BROADCAST, c.mac) and src != c.mac:
                    queue += [(c.mac, t) for t in c.receive(src, dst, body, self.now).tx]

    def tick(self, ms):
        self.now += ms * NS_PER_MS
        self.deliver(self.server.mac, self.server.timer(self.now))
        for c in self.clients:
            self.deliver(c.mac, c.timer(self.now))


def make(n=3, heartbeat_ms=1000, **server):
    srv = Server(SERVER_MAC, "10.0.0.1", ServerConfig(heartbeat_ms=heartbeat_ms, **server))
    clients = []
    seg = Segment(srv, clients)
    for i in range(2, 2 + n):
        ip = f"10.0.0.{i}"
        srv.add(ip, stage1=STAGE1.replace(b"{n}", str(i).encode()), stage2=STAGE2)
        mac = f"02:00:00:00:00:{i:02x}"
        clients.append(
            Client(
                "rt0",
                mac,
                ip=ip,
                apply=lambda stage, reqs, info, m=mac: seg.applied[m].append((stage, reqs)),
            )
        )
    seg.applied = {c.mac: [] for c in clients}
    return srv, clients, seg


def bring_up(srv, clients, seg):
    """What rtnet start does: client, announce, wait, ready on every station."""
    for c in clients:
        c.start(seg.now)
    seg.tick(1000)  # the invitations
    for c in clients:
        assert c.state == ClientState.STAGE_1
        seg.deliver(c.mac, c.announce(seg.now))
    assert all(c.announce_done for c in clients) and srv.all_configured
    for c in clients:
        seg.deliver(c.mac, c.ready(seg.now))
    seg.deliver(srv.mac, srv.ready(seg.now))


def test_a_server_and_three_clients_should_all_reach_ready():
    srv, clients, seg = make()
    bring_up(srv, clients, seg)
    assert srv.all_ready
    assert all(c.barrier_done for c in clients)
    for i, c in enumerate(clients, 2):
        (stage1, reqs1), (stage2, reqs2) = seg.applied[c.mac]
        assert stage1 == 1 and [r["cmd"] for r in reqs1] == ["tdma.slot", "vnic.address"]
        assert reqs1[1]["cidr"] == f"10.0.0.{i}/24"
        assert stage2 == 2 and len(reqs2) == 300
        assert c.stage2.data == STAGE2
        assert len(c.stations) == 3  # the server and the two others


def test_a_silent_client_should_be_dead_within_the_threshold_and_return():
    srv, clients, seg = make()
    bring_up(srv, clients, seg)
    quiet = clients[1]
    seg.cut.add(quiet.mac)
    dead_at = None
    for _ in range(5):
        seg.tick(1000)
        if srv.state_of(quiet.ip) == ConnState.DEAD and dead_at is None:
            dead_at = seg.now
    start = 1000 * NS_PER_MS  # its last heartbeat came before the cut
    # heartbeat x threshold (2 s), noticed on the next period tick
    assert dead_at is not None and dead_at - start <= (2000 + 1000) * NS_PER_MS
    assert all(srv.state_of(c.ip) == ConnState.READY for c in clients if c is not quiet)
    assert quiet.mac not in clients[0].stations  # the others heard the Dead Station frame
    seg.cut.clear()
    seg.tick(1000)  # invited again; it answers, configured
    assert srv.state_of(quiet.ip) == ConnState.READY
    assert srv.status()["stations"][1]["dead"] == 1
    seg.tick(1000)
    seg.tick(1000)
    assert srv.state_of(quiet.ip) == ConnState.READY  # its heartbeats count again


def test_a_bad_stage_1_payload_should_be_refused_whole_and_nothing_applied():
    srv = Server(SERVER_MAC, "10.0.0.1")
    srv.add("10.0.0.2", stage1=b"tdma slot 0 400\nvnic address 10.0.0.2/24\nreboot now\n")
    applied = []
    c = Client("rt0", "02:00:00:00:00:02", ip="10.0.0.2", apply=lambda *a: applied.append(a))
    c.start(0)
    (tx,) = srv.timer(NS_PER_MS).tx
    with pytest.raises(RtcfgError, match=r"stage 1 .* refused: line 3: 'reboot' is not"):
        c.receive(SERVER_MAC, tx.dst, tx.wire(SERVER_MAC)[14:], NS_PER_MS)
    assert applied == [] and c.state == ClientState.WAIT_STAGE_1


def test_a_stage_1_the_daemon_refuses_should_leave_the_client_waiting():
    def refuse(stage, reqs, info):
        raise RtcfgError("tdma slot: no TDMA discipline attached")

    srv = Server(SERVER_MAC, "10.0.0.1")
    srv.add("02:00:00:00:00:02", stage1=b"tdma slot 0 400")
    c = Client("rt0", "02:00:00:00:00:02", apply=refuse)
    c.start(0)
    (tx,) = srv.timer(0).tx
    assert tx.dst == c.mac and tx.frame.client_ip is None  # addressed by MAC: unicast
    with pytest.raises(RtcfgError, match="no TDMA discipline"):
        c.receive(SERVER_MAC, tx.dst, tx.frame.encode(), 0)
    assert c.state == ClientState.WAIT_STAGE_1


def test_an_invitation_for_another_ip_should_be_ignored():
    c = Client("rt0", "02:00:00:00:00:03", ip="10.0.0.3", apply=lambda *a: None)
    c.start(0)
    frame = fr.Stage1Cfg("10.0.0.2", "10.0.0.1", 4, b"tdma slot 0 400").encode()
    assert c.receive(SERVER_MAC, fr.BROADCAST, frame, 0).tx == []
    assert c.state == ClientState.WAIT_STAGE_1


def test_a_half_configured_station_should_be_searched_again_after_its_timeout():
    srv = Server(SERVER_MAC, "10.0.0.1")
    srv.add("10.0.0.2", stage2=STAGE2, timeout_ms=500)
    srv.timer(0)
    srv.receive("02:00:00:00:00:02", fr.AnnounceNew("10.0.0.2", 1, 4).encode(), 0)
    assert srv.state_of("10.0.0.2") == ConnState.STAGE_1
    srv.timer(400 * NS_PER_MS)
    assert srv.state_of("10.0.0.2") == ConnState.STAGE_1
    step = srv.timer(500 * NS_PER_MS)
    assert srv.state_of("10.0.0.2") == ConnState.SEARCHING
    assert [type(t.frame) for t in step.tx] == [fr.Stage1Cfg]


def test_the_invitations_should_take_turns_burstrate_at_a_time():
    srv = Server(SERVER_MAC, "10.0.0.1", ServerConfig(burstrate=2))
    for i in range(2, 7):
        srv.add(f"10.0.0.{i}")
    seen = [t.frame.client_ip for _ in range(3) for t in srv.timer(0).tx]
    assert len(seen) == 6 and set(seen) == {f"10.0.0.{i}" for i in range(2, 7)}


# -- hostile frames ------------------------------------------------------------------------


def _snapshot(machine):
    return repr(machine.status()), repr(vars(machine))


frames_bytes = st.one_of(
    st.binary(max_size=80),
    st.builds(lambda fid, rest: bytes([fid]) + rest, st.integers(0, 8), st.binary(max_size=60)),
)
macs = st.sampled_from([SERVER_MAC, "02:00:00:00:00:02", "02:00:00:00:00:03", fr.BROADCAST])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(macs, frames_bytes), max_size=6))
def test_random_frames_into_a_server_raise_only_rtcfg_errors_and_refusals_change_nothing(seq):
    srv, clients, seg = make(n=2)
    bring_up(srv, clients, seg)
    for src, body in seq:
        before = _snapshot(srv)
        try:
            srv.receive(src, body, seg.now)
        except RtcfgError:
            assert _snapshot(srv) == before


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 3), st.lists(st.tuples(macs, macs, frames_bytes), max_size=6))
def test_random_frames_into_a_client_raise_only_rtcfg_errors_and_refusals_change_nothing(
    phase, seq
):
    srv, clients, seg = make(n=2)
    c = clients[0]
    for done, act in enumerate((c.start, c.announce, c.ready)):
        if done >= phase:
            break
        if act == c.announce:
            seg.tick(1000)
        seg.deliver(c.mac, act(seg.now))
    for src, dst, body in seq:
        before = _snapshot(c)
        try:
            c.receive(src, dst, body, seg.now)
        except RtcfgError:
            assert _snapshot(c) == before
