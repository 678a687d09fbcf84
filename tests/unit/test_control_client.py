"""rtnet.control_client against a stand-in daemon that answers with chosen bytes."""

import errno
import json
import os
import shutil
import socket
import tempfile
import threading

import pytest

from rtnet import control_client
from rtnet.control_client import ControlClientError

WAIT = 10.0  # upper bound for anything the tests wait on; never reached when it works


@pytest.fixture
def run_dir(monkeypatch):
    """Name: run_dir.  Scope: function.  A short RTNET_RUN_DIR (AF_UNIX paths are limited
    to 108 bytes) with the station directory of namespace "nsx"."""
    path = tempfile.mkdtemp(prefix="rtn-cc-", dir="/tmp")
    os.makedirs(os.path.join(path, "nsx"))
    monkeypatch.setenv("RTNET_RUN_DIR", path)
    yield path
    shutil.rmtree(path, ignore_errors=True)


class Daemon:
    """Accepts one connection, records its request line, and runs ``answer(conn)``."""

    def __init__(self, run_dir, answer):
        self.answer = answer
        self.request = None
        self.done = threading.Event()  # set when the stand-in closed its end
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(os.path.join(run_dir, "nsx", "rteth0.ctl"))
        self.listener.listen(1)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        conn, _ = self.listener.accept()
        with conn:
            with conn.makefile("rb") as f:  # else it keeps the descriptor open after close
                self.request = json.loads(f.readline())
            try:
                self.answer(conn)
            except OSError:
                pass  # the client gave up, as some tests want
        self.done.set()

    def close(self):
        self.thread.join(WAIT)
        self.listener.close()


@pytest.fixture
def daemon(run_dir):
    """Name: daemon.  Scope: function.  Depends: run_dir.  daemon(answer) starts a stand-in
    on rteth0's socket in namespace "nsx"; answer is bytes to send or a function of the
    connection."""
    made = []

    def start(answer):
        if isinstance(answer, bytes):
            data = answer
            answer = lambda conn: conn.sendall(data)  # noqa: E731
        made.append(Daemon(run_dir, answer))
        return made[-1]

    yield start
    for d in made:
        d.close()


def call(**kw):
    return control_client.call("rteth0", {"cmd": "status"}, netns="nsx", **kw)


def test_call_should_send_one_line_and_return_the_ok_reply(daemon):
    d = daemon(b'{"ok": true, "status": {"x": 1}}\n')
    assert call() == {"ok": True, "status": {"x": 1}}
    assert d.request == {"cmd": "status"}


def test_event_lines_should_reach_the_callback_in_order_before_the_reply(daemon):
    daemon(
        b'{"event": "reply", "seq": 0}\n{"event": "timeout", "seq": 1}\n{"ok": true, "sent": 2}\n'
    )
    events = []
    assert call(on_event=events.append) == {"ok": True, "sent": 2}
    assert events == [{"event": "reply", "seq": 0}, {"event": "timeout", "seq": 1}]


def test_an_event_line_nobody_asked_for_should_be_a_malformed_reply(daemon):
    daemon(b'{"event": "reply"}\n{"ok": true}\n')
    with pytest.raises(ControlClientError, match="malformed reply") as e:
        call()
    assert e.value.errno == errno.EPROTO


def test_a_reply_sent_a_byte_at_a_time_should_be_read_whole(daemon):
    def dribble(conn):
        for b in b'{"ok": true, "n": 12345}\n':
            conn.sendall(bytes([b]))

    daemon(dribble)
    assert call() == {"ok": True, "n": 12345}


def test_a_refusal_should_carry_the_daemons_message_in_one_line(daemon):
    daemon(b'{"ok": false, "error": "slot 1: busy\\u001b[2J"}\n')
    with pytest.raises(ControlClientError) as e:
        call()
    assert e.value.refused and e.value.errno == errno.EREMOTEIO
    assert e.value.strerror == "slot 1: busy\\x1b[2J"


@pytest.mark.parametrize("ok", [False, 0, 1, "yes", None])
def test_only_ok_true_should_count_as_success(daemon, ok):
    daemon(json.dumps({"ok": ok}).encode() + b"\n")
    with pytest.raises(ControlClientError) as e:
        call()
    assert e.value.errno == errno.EREMOTEIO and e.value.strerror == "request failed"


@pytest.mark.parametrize(
    "reply", [b"not json\n", b"[1, 2]\n", b"\xff\xfe\n", b"[" * 100_000 + b"\n"]
)
def test_malformed_lines_should_raise_eproto(daemon, reply):
    daemon(reply)
    with pytest.raises(ControlClientError, match="malformed reply from rtnetd") as e:
        call()
    assert e.value.errno == errno.EPROTO


def test_a_connection_closed_before_the_reply_should_raise_econnreset(daemon):
    daemon(b"")
    with pytest.raises(ControlClientError, match="closed the connection") as e:
        call()
    assert e.value.errno == errno.ECONNRESET


def test_a_silent_daemon_should_raise_etimedout(daemon):
    release = threading.Event()
    d = daemon(lambda conn: release.wait(WAIT))
    try:
        with pytest.raises(ControlClientError, match="did not reply in time") as e:
            call(timeout=0.05)
        assert e.value.errno == errno.ETIMEDOUT
    finally:
        release.set()
    assert d.done.wait(WAIT)


def test_a_missing_socket_should_be_no_daemon(run_dir):
    with pytest.raises(ControlClientError) as e:
        call()
    assert e.value.no_daemon and e.value.errno == errno.ENOENT
    assert e.value.filename == os.path.join(run_dir, "nsx", "rteth0.ctl")


def test_a_stale_socket_file_should_be_no_daemon(run_dir):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(os.path.join(run_dir, "nsx", "rteth0.ctl"))
    s.close()
    with pytest.raises(ControlClientError) as e:
        call()
    assert e.value.no_daemon and e.value.errno == errno.ECONNREFUSED


def _send_fds(reply: bytes, count: int):
    def answer(conn):
        fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(count)]
        try:
            socket.send_fds(conn, [reply], fds)
        finally:
            for fd in fds:
                os.close(fd)

    return answer


def test_call_keep_should_take_the_passed_descriptors_and_keep_the_connection(daemon):
    d = daemon(_send_fds(b'{"ok": true}\n', 2))
    sock, reply, fds = control_client.call_keep(
        "rteth0", {"cmd": "channel.open"}, netns="nsx", max_fds=4
    )
    try:
        assert reply == {"ok": True} and len(fds) == 2
        for fd in fds:
            assert os.path.samestat(os.fstat(fd), os.stat("/dev/null"))
        assert sock.fileno() >= 0
    finally:
        for fd in fds:
            os.close(fd)
        sock.close()
    assert d.done.wait(WAIT)


def open_fds() -> set[int]:
    """This process's open descriptors (without the one listing them)."""
    fds = set()
    for name in os.listdir("/proc/self/fd"):
        try:
            os.fstat(int(name))
        except OSError:
            continue  # the listing's own, closed by now
        fds.add(int(name))
    return fds


def test_call_keep_should_close_the_descriptors_of_a_refusal(daemon):
    d = daemon(_send_fds(b'{"ok": false, "error": "no"}\n', 2))
    before = open_fds()
    with pytest.raises(ControlClientError) as e:
        control_client.call_keep("rteth0", {"cmd": "channel.open"}, netns="nsx", max_fds=4)
    assert e.value.refused and e.value.strerror == "no"
    assert d.done.wait(WAIT)  # its end and its copies are closed
    assert open_fds() <= before
