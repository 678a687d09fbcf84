"""rtnetd's control socket without a station: the server runs on a socket in a temporary
directory with fake handlers.  Tests that need other credentials than the test's own fork
a peer that drops them (root only; see tests/conftest.py)."""

import base64
import json
import logging
import os
import shutil
import socket
import tempfile
import threading
import time
from contextlib import contextmanager

import pytest
from conftest import skip_or_fail
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtnet import control_server as cs
from rtnet.control_protocol import MAX_NESTING, MAX_REPLY, MAX_REQUEST
from rtnet.control_server import (
    Command,
    ControlServer,
    Limits,
    RequestError,
    WithFds,
    group_policy,
    nested_deeper_than,
    parse_request,
)

WAIT = 10.0  # upper bound for anything the tests wait on; never reached when it works
ADMIN_GID = 4242  # a group the test's peers are given or not
NOBODY = 65534


@pytest.fixture
def sock_dir():
    """Name: sock_dir.  Scope: function.  A short directory others may enter (AF_UNIX
    paths are limited to 108 bytes; pytest's tmp_path is long and private)."""
    path = tempfile.mkdtemp(prefix="rtn-cs-", dir="/tmp")
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


class FakeStation:
    """Handlers that stand in for rtnetd's: they record what ran."""

    def __init__(self):
        self.ran = []
        self.released = threading.Event()

    def commands(self):
        return {
            "status": Command(self.status, read_only=True),
            "whoami": Command(self.whoami, read_only=True),
            "echo": Command(self.echo, read_only=True),
            "boom": Command(self.boom, read_only=True),
            "change": Command(self.change),
            "hold": Command(self.hold),
            "events": Command(self.events),
            "pipe": Command(self.pipe),
            "blob": Command(self.blob),
        }

    def status(self, req, conn):
        self.ran.append("status")
        return {"status": {"state": "synchronised"}}

    def whoami(self, req, conn):
        p = conn.peer
        return {
            "pid": p.pid,
            "uid": p.uid,
            "gid": p.gid,
            "groups": sorted(p.groups),
            "privileged": conn.privileged,
        }

    def echo(self, req, conn):
        return {"echo": req}

    def boom(self, req, conn):
        raise RuntimeError("kaput\nat line two")

    def change(self, req, conn):
        self.ran.append("change")
        return {}

    def hold(self, req, conn):
        conn.hold("thing", self.released.set)
        return {}

    def events(self, req, conn):
        for n in range(3):
            conn.send({"event": "tick", "n": n})
        return {"ticks": 3}

    def pipe(self, req, conn):
        r, w = os.pipe()
        return WithFds({"fds": 2}, (r, w))

    def blob(self, req, conn):
        conn.hold("blob", self.released.set)
        return {"blob": "x" * req["size"]}


@pytest.fixture
def serve(sock_dir):
    """Name: serve.  Scope: function.  Depends: sock_dir.  Factory: serve(**kw) runs a
    ControlServer (kw: privileged, limits, who, commands) and returns (path, server, station)."""
    running = []

    def start(commands=None, **kw):
        station = FakeStation()
        path = os.path.join(sock_dir, f"s{len(running)}.ctl")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        os.chmod(path, 0o666)
        listener.listen(16)
        kw.setdefault("privileged", lambda peer: True)
        server = ControlServer(listener, commands or station.commands(), **kw)
        thread = threading.Thread(target=server.serve, daemon=True)
        thread.start()
        running.append((server, thread))
        return path, server, station

    yield start
    for server, thread in running:
        server.close()
        thread.join(WAIT)
        assert not thread.is_alive()


def connect(path) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(WAIT)
    s.connect(path)
    return s


def read_to_eof(s) -> bytes:
    data = b""
    while True:
        try:
            chunk = s.recv(1 << 20)
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk


def lines_of(data: bytes) -> list[dict]:
    """Every reply must be one complete line holding one JSON object with "ok" or "event"."""
    assert data == b"" or data.endswith(b"\n"), data[-200:]
    out = [json.loads(line) for line in data.split(b"\n")[:-1]]
    for reply in out:
        assert isinstance(reply, dict) and ("ok" in reply or "event" in reply), reply
        if reply.get("ok") is False:
            assert isinstance(reply["error"], str) and reply["error"], reply
    return out


def talk(path, payload: bytes) -> list[dict]:
    with connect(path) as s:
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
        return lines_of(read_to_eof(s))


def ask(s, request: dict) -> dict:
    """One request on an open connection, one reply line back."""
    s.sendall(json.dumps(request).encode() + b"\n")
    f = s.makefile("rb")
    return json.loads(f.readline())


def wait_until(cond, what):
    deadline = time.monotonic() + WAIT
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)  # another thread's state: poll it


# -- parsing, without a socket -----------------------------------------------------------------


def test_nesting_scan_should_refuse_deep_brackets_before_json_sees_them():
    with pytest.raises(RequestError, match=f"nested deeper than {MAX_NESTING}"):
        parse_request(b"[" * 3000)
    with pytest.raises(RequestError, match="nested deeper"):
        parse_request(b'{"cmd": "status", "x": ' + b"[" * 40 + b"]" * 40 + b"}")


def test_nesting_scan_should_ignore_brackets_inside_strings():
    tricky = json.dumps({"cmd": "status", "s": "[[[[" * 100, "t": '\\"[{' * 50}).encode()
    assert not nested_deeper_than(tricky, 2)
    assert parse_request(tricky)["cmd"] == "status"
    assert nested_deeper_than(b'["\\"", [[["]"]]]]', 3)


def json_values():
    return st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.text(max_size=5)
        | st.sampled_from(["[", "]", "{", "}", '"', "\\"]),
        lambda kids: (
            st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=3), kids, max_size=3)
        ),
        max_leaves=30,
    )


def depth(v) -> int:
    if isinstance(v, list):
        return 1 + max(map(depth, v), default=0)
    if isinstance(v, dict):
        return 1 + max(map(depth, v.values()), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(json_values(), st.integers(0, 6))
def test_nesting_scan_should_agree_with_the_real_depth(value, limit):
    assert nested_deeper_than(json.dumps(value).encode(), limit) == (depth(value) > limit)


def test_group_policy_should_admit_root_and_members_of_the_control_group():
    peer = cs.Peer
    admit = group_policy(ADMIN_GID)
    assert admit(peer(1, 0, 0, frozenset({0})))
    assert admit(peer(1, 1000, 1000, frozenset({1000, ADMIN_GID})))
    assert not admit(peer(1, 1000, 1000, frozenset({1000, 27})))
    assert not group_policy(None)(peer(1, 1000, 1000, frozenset({1000})))


def test_peer_credentials_should_be_the_connecting_process():
    a, b = socket.socketpair()
    with a, b:
        p = cs.peer_of(a)
    assert (p.pid, p.uid, p.gid) == (os.getpid(), os.getuid(), os.getgid())
    assert p.groups == frozenset({os.getgid(), *os.getgroups()})


# -- one line in, one line out -----------------------------------------------------------------


def test_nested_brackets_should_get_one_error_line_and_the_connection_goes_on(serve):
    path, _, _ = serve()
    replies = talk(path, b"[" * 3000 + b"\n" + b'{"cmd": "status"}\n')
    assert len(replies) == 2
    assert replies[0] == {"ok": False, "error": f"request nested deeper than {MAX_NESTING} levels"}
    assert replies[1]["ok"] is True


@pytest.mark.parametrize(
    "payload",
    [b"{" + b" " * MAX_REQUEST + b"}\n", b"x" * (3 * MAX_REQUEST)],
    ids=["long-line", "no-newline"],
)
def test_oversize_request_should_get_one_error_line_and_end_the_connection(serve, payload):
    path, _, station = serve()
    replies = talk(path, b'{"cmd": "status"}\n' + payload + b'{"cmd": "status"}\n')
    assert [r["ok"] for r in replies] == [True, False]
    assert replies[1]["error"] == f"request longer than {MAX_REQUEST} bytes"
    assert station.ran == ["status"]


def test_handler_exception_should_be_one_error_line_and_one_log_line(serve, caplog):
    path, _, _ = serve()
    with caplog.at_level(logging.ERROR, logger="rtnetd"):
        replies = talk(path, b'{"cmd": "boom"}\n{"cmd": "status"}\n')
    assert replies[0] == {"ok": False, "error": "internal error: RuntimeError: kaput"}
    assert replies[1]["ok"] is True, "the connection's thread must survive the handler"
    records = [r for r in caplog.records if r.name == "rtnetd"]
    assert len(records) == 1 and records[0].exc_info is None
    assert "\n" not in records[0].getMessage() and "kaput" in records[0].getMessage()


def test_bad_requests_should_each_get_one_error_line(serve):
    path, _, _ = serve()
    bad = [
        b"garbage",
        b"\xff\xfe",
        b"[1, 2]",
        b'{"cmd": "reboot"}',
        b'{"nocmd": 1}',
        b'{"cmd": 5}',
        b'{"cmd": "echo", "n": ' + b"1" * 5000 + b"}",
        b'"just a string"',
    ]
    replies = talk(path, b"\n".join(bad) + b"\n\n   \n")
    assert len(replies) == len(bad) and all(r["ok"] is False for r in replies)
    assert replies[3]["error"] == "unknown command 'reboot'"


def test_events_then_reply_and_descriptors_should_arrive_in_order(serve):
    path, _, _ = serve()
    assert talk(path, b'{"cmd": "events"}\n') == [
        {"event": "tick", "n": 0},
        {"event": "tick", "n": 1},
        {"event": "tick", "n": 2},
        {"ok": True, "ticks": 3},
    ]
    with connect(path) as s:
        s.sendall(b'{"cmd": "pipe"}\n')
        data, fds, _, _ = socket.recv_fds(s, 4096, 4)
        assert json.loads(data) == {"ok": True, "fds": 2} and len(fds) == 2
        r, w = fds
        os.close(w)
        # the server closed its copies after sending: ours was the last write end
        assert os.read(r, 1) == b""
        os.close(r)


def test_reply_longer_than_max_reply_should_become_an_error(serve, monkeypatch):
    monkeypatch.setattr(cs, "MAX_REPLY", 1000)
    path, _, _ = serve()
    replies = talk(path, b'{"cmd": "blob", "size": 5000}\n{"cmd": "blob", "size": 10}\n')
    assert replies[0]["ok"] is False and "longer than the 1000 bytes allowed" in replies[0]["error"]
    assert replies[1] == {"ok": True, "blob": "x" * 10}


# -- time-outs ---------------------------------------------------------------------------------


def test_idle_connection_should_be_closed_after_the_idle_timeout(serve):
    path, _, _ = serve(limits=Limits(idle_timeout=0.2))
    with connect(path) as s:
        replies = lines_of(read_to_eof(s))  # returns when the server closes
    assert replies == [{"ok": False, "error": "no request for 0.2 s"}]


def test_idle_timeout_should_apply_again_after_a_reply(serve):
    path, _, _ = serve(limits=Limits(idle_timeout=0.3))
    with connect(path) as s:
        assert ask(s, {"cmd": "status"})["ok"] is True
        assert lines_of(read_to_eof(s)) == [{"ok": False, "error": "no request for 0.3 s"}]


def test_half_line_should_be_dropped_after_the_line_timeout(serve):
    path, _, station = serve(limits=Limits(line_timeout=0.2))
    with connect(path) as s:
        s.sendall(b'{"cmd": "status"}\n{"cmd": "change"')
        replies = lines_of(read_to_eof(s))
    assert replies == [
        {"ok": True, "status": {"state": "synchronised"}},
        {"ok": False, "error": "request line not finished within 0.2 s"},
    ]
    assert station.ran == ["status"]


def test_trickled_line_should_not_restart_the_line_timeout(serve):
    path, _, _ = serve(limits=Limits(line_timeout=0.3, idle_timeout=60))
    with connect(path) as s:
        s.setblocking(False)
        got = b""
        deadline = time.monotonic() + WAIT
        while not got.endswith(b"\n") and time.monotonic() < deadline:
            try:
                s.send(b" ")  # one byte every 50 ms keeps a slow client busy
            except (BrokenPipeError, ConnectionResetError):
                pass
            try:
                got += s.recv(4096)
            except BlockingIOError:
                time.sleep(0.05)  # the pace of the trickle, not a synchronisation
    assert lines_of(got) == [{"ok": False, "error": "request line not finished within 0.3 s"}]


def test_connection_holding_something_should_have_no_idle_timeout(serve):
    path, _, station = serve(limits=Limits(idle_timeout=0.2))
    with connect(path) as holder:
        assert ask(holder, {"cmd": "hold"}) == {"ok": True}
        with connect(path) as other:  # connected later, so times out later
            assert lines_of(read_to_eof(other))[0]["error"] == "no request for 0.2 s"
        assert ask(holder, {"cmd": "status"})["ok"] is True
        assert not station.released.is_set()
    assert station.released.wait(WAIT), "closing the connection must release what it holds"


def test_client_that_does_not_read_should_lose_its_connection(serve):
    path, server, station = serve(limits=Limits(write_timeout=0.2))
    with connect(path) as s:
        s.sendall(b'{"cmd": "blob", "size": 8000000}\n')  # more than the socket buffers
        assert station.released.wait(WAIT), "the connection must end"
    wait_until(lambda: server.connections(True) == 0, "connection still counted")
    assert talk(path, b'{"cmd": "status"}\n')[0]["ok"] is True


# -- privilege and connection pools ------------------------------------------------------------


def test_status_only_peer_should_not_run_a_privileged_command(serve):
    path, _, station = serve(privileged=lambda peer: False, who="root or group rtctl")
    replies = talk(path, b'{"cmd": "change"}\n{"cmd": "status"}\n' + b"[" * 3000 + b"\n")
    assert replies[0] == {
        "ok": False,
        "error": "change: permission denied (needs root or group rtctl)",
    }
    assert replies[1]["ok"] is True
    assert replies[2]["ok"] is False and "nested deeper" in replies[2]["error"]
    assert station.ran == ["status"]


@contextmanager
def peer_process(work, creds=None):
    """Fork a peer that (with ``creds`` = (uid, gid, groups), as root) drops to those
    credentials, runs ``work()`` -> bytes and reports it, then keeps its sockets open until
    the block ends.  Yields what it reported."""
    out_r, out_w = os.pipe()
    hold_r, hold_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: plain system calls only, then _exit
        try:
            os.close(out_r)
            os.close(hold_w)
            if creds:
                uid, gid, groups = creds
                os.setgroups(groups)
                os.setgid(gid)
                os.setuid(uid)
            result = work()
            os.write(out_w, result)
            os.close(out_w)
            os.read(hold_r, 1)
        except BaseException as exc:
            os.write(out_w, f"child failed: {exc!r}".encode())
        finally:
            os._exit(0)
    os.close(out_w)
    os.close(hold_r)
    try:
        with os.fdopen(out_r, "rb") as f:
            yield f.read()
    finally:
        os.close(hold_w)
        os.waitpid(pid, 0)


def open_connections(path, n):
    """The peer's work: n connections, each asked for status; their first lines, joined.
    The connections stay open as long as ``work`` lives (the peer keeps it until the end)."""
    socks = []

    def work():
        answers = []
        for _ in range(n):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(WAIT)
            s.connect(path)
            socks.append(s)
        for s in socks:
            try:
                s.sendall(b'{"cmd": "status"}\n')
            except OSError:
                pass  # refused connections may already be closed
            answers.append(s.makefile("rb").readline().strip())
        return b"\n".join(answers)

    return work


def test_flood_of_unprivileged_connections_should_not_lock_out_a_privileged_peer(serve):
    me = os.getpid()
    path, server, _ = serve(
        privileged=lambda peer: peer.pid == me,
        limits=Limits(privileged_connections=3, unprivileged_connections=4),
    )
    with peer_process(open_connections(path, 6)) as report:
        answers = [json.loads(line) for line in report.split(b"\n")]
        assert [a["ok"] for a in answers] == [True] * 4 + [False] * 2, report
        assert answers[5]["error"] == "too many control connections"
        assert server.connections(False) == 4
        mine = [connect(path) for _ in range(4)]
        try:
            assert [ask(s, {"cmd": "change"})["ok"] for s in mine[:3]] == [True] * 3
            assert json.loads(mine[3].makefile("rb").readline()) == {
                "ok": False,
                "error": "too many control connections",
            }
        finally:
            for s in mine:
                s.close()
    wait_until(lambda: server.connections(False) == 0, "the peer's connections still counted")


# -- real credentials (root only) ---------------------------------------------------------------


@pytest.fixture
def as_root():
    if os.geteuid() != 0:
        skip_or_fail("needs root to fork peers with other credentials")


def whoami(path):
    def work():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(WAIT)
        s.connect(path)
        s.sendall(b'{"cmd": "whoami"}\n{"cmd": "change"}\n')
        f = s.makefile("rb")
        return f.readline() + f.readline()

    return work


def test_groups_should_come_from_so_peergroups_even_when_there_are_many(serve, as_root):
    path, _, _ = serve(privileged=group_policy(ADMIN_GID))
    groups = [ADMIN_GID] + list(range(20000, 20300))  # more than one first try holds
    with peer_process(whoami(path), (NOBODY, NOBODY, groups)) as report:
        me, change = map(json.loads, report.splitlines())
    assert (me["uid"], me["gid"]) == (NOBODY, NOBODY)
    assert me["groups"] == sorted({NOBODY, *groups})
    assert me["privileged"] is True and change == {"ok": True}


def test_control_group_decides_who_may_change_things(serve, as_root):
    path, _, station = serve(privileged=group_policy(ADMIN_GID), who=f"root or group {ADMIN_GID}")
    with peer_process(whoami(path), (NOBODY, NOBODY, [])) as report:
        me, change = map(json.loads, report.splitlines())
    assert me["privileged"] is False
    assert change == {
        "ok": False,
        "error": f"change: permission denied (needs root or group {ADMIN_GID})",
    }
    with peer_process(whoami(path), (NOBODY, ADMIN_GID, [])) as report:  # primary group
        assert json.loads(report.splitlines()[1]) == {"ok": True}
    assert station.ran == ["change"]


# -- fuzz -----------------------------------------------------------------------------------------

FUZZ_LIMIT = 512

requests = st.builds(
    lambda cmd, extra: json.dumps({"cmd": cmd, **extra}).encode(),
    st.sampled_from(["status", "echo", "boom", "change", "events", "nope"]),
    st.dictionaries(st.text(max_size=4), json_values(), max_size=3),
)
lines = st.one_of(
    st.binary(max_size=80).map(lambda b: b.replace(b"\n", b"")),
    requests,
    st.integers(0, 300).map(lambda n: b"[" * n),
    st.integers(0, 60).map(lambda n: b'{"cmd": "echo", "a": ' + b"[" * n + b"]" * n + b"}"),
    st.sampled_from([b"", b"  ", b"\r", b"x" * (FUZZ_LIMIT + 1), b" " * (FUZZ_LIMIT + 40)]),
)


def expected_replies(payload: bytes) -> int:
    """Replies the server owes: one per complete non-blank line, up to and including the
    first one too long (its error ends the connection), or a too-long unfinished tail."""
    *complete, tail = payload.split(b"\n")
    n = 0
    for line in complete:
        if len(line) > FUZZ_LIMIT:
            return n + 1
        n += bool(line.strip())
    return n + (len(tail) > FUZZ_LIMIT)


def test_fuzz_every_complete_line_gets_exactly_one_well_formed_reply(serve):
    path, server, _ = serve(limits=Limits(max_request=FUZZ_LIMIT))

    @settings(
        max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(st.lists(lines, max_size=8), st.binary(max_size=40))
    def one_connection(body, tail):
        payload = b"\n".join(body) + (b"\n" if body else b"") + tail.replace(b"\n", b"")
        replies = [r for r in talk(path, payload) if "ok" in r]
        assert len(replies) == expected_replies(payload)
        assert all(isinstance(r["ok"], bool) for r in replies)

    one_connection()
    # the same server, after all of that: still up, and no connection left behind
    assert talk(path, b'{"cmd": "status"}\n') == [{"ok": True, "status": {"state": "synchronised"}}]
    wait_until(lambda: server.connections(True) == 0, "connections left after the fuzz")


# -- the clients' line limit (rtnetctl capture -c 10000) ---------------------------------------


def test_capture_of_the_largest_count_should_reach_rtnetctl(serve, sock_dir, monkeypatch):
    from rtnet import capture_service, stationctl
    from rtnet.capture import CapturedFrame, to_pcapng

    frame = bytes(range(256)) * 8
    # the longest comment a record can carry: both stamps of a sent frame at their widest
    widest = CapturedFrame(
        outbound=True,
        data=frame,
        orig_len=9000,
        stamp_ns=-(2**63),
        os_ns=0,
        sched_ns=-(2**63),
        xdp_stamp=False,
    )
    pcap = to_pcapng(
        [widest] * capture_service.CAPTURE_MAX_FRAMES,
        realtime_minus_monotonic=10**18,
        snaplen=capture_service.CAPTURE_SNAPLEN,
    )

    def capture(req, conn):
        return {
            "frames": capture_service.CAPTURE_MAX_FRAMES,
            "dropped": 0,
            "pcapng_b64": base64.b64encode(pcap).decode(),
        }

    monkeypatch.setenv("RTNET_RUN_DIR", sock_dir)
    os.makedirs(os.path.join(sock_dir, "nsx"))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(os.path.join(sock_dir, "nsx", "rteth0.ctl"))
    listener.listen(4)
    server = ControlServer(listener, {"capture": Command(capture)}, privileged=lambda peer: True)
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    try:
        reply = stationctl.request("rteth0", {"cmd": "capture", "count": 10000}, netns="nsx")
    finally:
        server.close()
        thread.join(WAIT)
    assert reply["frames"] == capture_service.CAPTURE_MAX_FRAMES
    got = base64.b64decode(reply["pcapng_b64"])
    assert len(got) == len(pcap) and frame in got[-2200:]
    assert len(json.dumps(reply)) + 1 <= MAX_REPLY


# -- rtnetd's command table on the server, without a station ------------------------------------

DAEMON_TOML = """
[station]
name = "t"
[control]
status_group = "nogroup"
"""


@pytest.fixture
def daemon_server(sock_dir):
    """Name: daemon_server.  Scope: function.  Depends: sock_dir.  rtnetd's control server
    (its commands, device check and groups) for a Daemon that has no station."""
    from rtnet import config, daemon

    d = daemon.Daemon(config.parse_toml(DAEMON_TOML))
    path = os.path.join(sock_dir, "rteth0.ctl")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o666)
    listener.listen(4)
    server = d.control_server(listener)
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    yield path, server
    server.close()
    thread.join(WAIT)


def test_daemon_commands_should_be_the_protocol_with_five_read_only(daemon_server):
    _, server = daemon_server
    assert set(server.commands) == {
        "status",
        "tdma.show",
        "tdma.misses",
        "tdma.master",
        "tdma.slave",
        "tdma.slot",
        "tdma.remove_slot",
        "tdma.detach",
        "nomac.attach",
        "nomac.detach",
        "ping",
        "capture",
        "channel.open",
        "channel.close",
        "ipv4.join",
        "shutdown",
        "rtcfg.server",
        "rtcfg.add",
        "rtcfg.del",
        "rtcfg.wait",
        "rtcfg.client",
        "rtcfg.announce",
        "rtcfg.ready",
        "rtcfg.detach",
        "rtcfg.commands",
        "route.list",
        "route.get",
        "route.add",
        "route.del",
        "route.set",
        "route.solicit",
    }
    assert {c for c, cmd in server.commands.items() if cmd.read_only} == {
        "status",
        "tdma.show",
        "tdma.misses",
        "route.list",
        "route.get",
    }


def test_daemon_requests_refused_before_the_station_should_get_their_errors(daemon_server):
    path, _ = daemon_server
    replies = talk(
        path,
        b"\n".join(
            [
                b'{"cmd": "status", "dev": "eth7"}',
                b'{"cmd": "channel.close", "channel": 3}',
                b'{"cmd": "channel.close", "channel": [3]}',
                b'{"cmd": "channel.open", "ethertype": 2048}',
                b'{"cmd": "ping", "dst": 5}',
                b'{"cmd": "capture", "count": 10001}',
                b'{"cmd": "channel.open", "ethertype": 36898}',
                b'{"cmd": "rtcfg.add", "address": "10.0.0.2"}',
                b'{"cmd": "rtcfg.server", "period_ms": 0}',
            ]
        )
        + b"\n",
    )
    assert [r["error"] for r in replies] == [
        "this daemon runs rteth0, not 'eth7'",
        "channel 3 is not open on this connection",
        "channel [3] is not open on this connection",
        "ethertype 0x0800 is not real-time on rteth0 (add a [[channel]] or station.ethertypes "
        "entry)",
        "dst: a MAC or IPv4 address",
        "count: 10001 outside 1..10000",
        "ethertype 0x9022 is RTcfg, served by the daemon itself",
        "no RTcfg server (run rtcfg server first)",
        "period_ms: 0 outside 1..3600000",
    ]


def test_daemon_should_refuse_changes_from_the_status_group(daemon_server, as_root):
    path, _ = daemon_server

    def work():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(WAIT)
        s.connect(path)
        s.sendall(b'{"cmd": "tdma.detach"}\n')
        return s.makefile("rb").readline()

    with peer_process(work, (NOBODY, NOBODY, [])) as report:
        assert json.loads(report) == {
            "ok": False,
            "error": "tdma.detach: permission denied (needs root)",
        }


class RawReplier:
    """Answers one connection's first line with ``reply`` bytes, whatever they are."""

    def __init__(self, path, reply: bytes):
        self.reply = reply
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(1)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        conn, _ = self.listener.accept()
        with conn:
            conn.makefile("rb").readline()
            try:
                conn.sendall(self.reply)
            except OSError:
                pass  # the client gave up reading, as it should

    def close(self):
        self.thread.join(WAIT)
        self.listener.close()


def client_calls():
    from rtmac import control
    from rtnet import app, stationctl

    return {
        "rtnetctl": (
            lambda: stationctl.request("rteth0", {"cmd": "status"}, netns="nsx"),
            stationctl.StationCtlError,
        ),
        "rtmac": (
            lambda: control.send_request("rteth0", {"cmd": "tdma.show"}, netns="nsx"),
            control.ControlError,
        ),
        "app": (
            lambda: app.Channel.open("rteth0", netns="nsx", ethertype=0x88B5),
            app.ChannelError,
        ),
    }


@pytest.fixture
def replier(sock_dir, monkeypatch):
    """Name: replier.  Scope: function.  Depends: sock_dir.  replier(bytes) answers the
    clients' socket for rteth0 in namespace "nsx" with those bytes."""
    monkeypatch.setenv("RTNET_RUN_DIR", sock_dir)
    os.makedirs(os.path.join(sock_dir, "nsx"))
    made = []

    def start(reply):
        made.append(RawReplier(os.path.join(sock_dir, "nsx", "rteth0.ctl"), reply))

    yield start
    for r in made:
        r.close()


@pytest.mark.parametrize("client", ["rtnetctl", "rtmac", "app"])
def test_clients_should_refuse_a_reply_longer_than_max_reply(replier, client):
    call, error = client_calls()[client]
    replier(b'{"ok": true, "x": "' + b"x" * MAX_REPLY + b'"}\n')
    with pytest.raises(error, match=f"longer than {MAX_REPLY} bytes"):
        call()


@pytest.mark.parametrize("client", ["rtnetctl", "rtmac", "app"])
def test_clients_should_refuse_a_reply_that_is_not_an_object(replier, client):
    call, error = client_calls()[client]
    replier(b"[1, 2]\n")
    with pytest.raises(error, match="malformed reply"):
        call()
