"""The server side of rtnetd's control socket: connections, limits, credentials, dispatch.

rtnetd (rtnet.daemon) hands it a listening Unix stream socket and a table
of commands; everything up to calling a command's handler happens here, so
it runs, and is tested, without a station.  Framing and size limits are in
rtnet.control_protocol.

Who may do what.  The kernel records the peer's credentials when it
connects: SO_PEERCRED gives pid, uid and gid, SO_PEERGROUPS the
supplementary groups.  Both are read at accept, never from
/proc/<pid>/status, which describes whatever process holds that PID by the
time it is read.  A policy function of the peer (see group_policy) says
whether it is privileged; an unprivileged peer may only run the commands
marked read-only.  Privileged and unprivileged peers draw connections from
separate pools, so peers that may only read cannot take the connections
root needs.

Each connection has its own thread and these limits (Limits):

- a connection that sends nothing for ``idle_timeout`` s, or does not
  finish a request line within ``line_timeout`` s of its first byte, gets one
  error line and is closed; one that holds something (an application
  channel, see Connection.hold) has no idle timeout, only the line timeout;
- a line longer than ``max_request`` bytes gets one error line and ends the
  connection (a complete line with any other fault gets its error line and
  the connection goes on);
- before a line is parsed, a scan of its brackets refuses nesting deeper
  than ``max_nesting`` (Python's JSON parser recurses once per level);
- a client that leaves a reply unread for ``write_timeout`` s loses its
  connection; a reply longer than MAX_REPLY is replaced by an error.

A complete non-blank line gets exactly one reply line ``{"ok": true, ...}``
or ``{"ok": false, "error": "one-line message"}`` (a handler may send event
lines before it, see Connection.send), in the order the lines came; blank
lines are skipped.  Checks run cheapest first: size, nesting, JSON, an
object with a known "cmd", the owner's ``check_request`` (rtnetd: the
device name), privilege, and only then the handler.  Every exception from a
handler becomes an error reply; one the handler did not mean (anything but
RequestError and the validation errors) is also logged, as one line.
"""

from __future__ import annotations

import ctypes
import errno
import json
import logging
import os
import re
import selectors
import socket
import struct
import threading
import time
from dataclasses import dataclass
from typing import Callable

from .control_protocol import MAX_NESTING, MAX_REPLY, MAX_REQUEST
from .errors import ConfigError, RtnetError

log = logging.getLogger("rtnetd")

SO_PEERGROUPS = getattr(socket, "SO_PEERGROUPS", 59)  # Linux >= 4.13
RECV_SIZE = 65536
SEND_CHUNK = 256 * 1024
MAX_ERROR = 1000  # characters of an error message that go into a reply
DRAIN_SECONDS = 1.0  # how long a refused connection is read before it is closed
DRAIN_BYTES = 16 * 1024 * 1024


class RequestError(Exception):
    """A request is refused; the message goes back to the client as one line."""


class ClientGone(OSError):
    """The client closed its end or stopped reading: the connection ends without a reply."""


@dataclass(frozen=True)
class Peer:
    """The credentials the kernel recorded when the peer connected."""

    pid: int
    uid: int
    gid: int
    groups: frozenset[int]  # the primary gid and every supplementary group


@dataclass(frozen=True)
class Limits:
    """Limits of one connection and of the connection pools; the defaults are rtnetd's."""

    max_request: int = MAX_REQUEST
    max_nesting: int = MAX_NESTING
    idle_timeout: float = 30.0
    line_timeout: float = 10.0
    write_timeout: float = 10.0
    privileged_connections: int = 64
    unprivileged_connections: int = 16

    def __post_init__(self):
        for name in ("idle_timeout", "line_timeout", "write_timeout"):
            if not getattr(self, name) > 0:  # a socket time-out of 0 means non-blocking
                raise ValueError(f"{name} must be more than 0 s")


@dataclass(frozen=True)
class Command:
    """One entry of the command table.

    ``handler(request, connection)`` returns the reply (``"ok": true`` is
    added unless it says otherwise), or a WithFds.
    """

    handler: Callable[[dict, "Connection"], "dict | WithFds"]
    read_only: bool = False


@dataclass(frozen=True)
class WithFds:
    """A reply sent in one sendmsg with descriptors (SCM_RIGHTS); the server closes them."""

    reply: dict
    fds: tuple[int, ...]


def group_policy(control_gid: int | None) -> Callable[[Peer], bool]:
    """Root, or a member (primary or supplementary) of ``control_gid``, is privileged."""

    def privileged(peer: Peer) -> bool:
        return peer.uid == 0 or (control_gid is not None and control_gid in peer.groups)

    return privileged


# -- peer credentials ------------------------------------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)
_getsockopt = _libc.getsockopt
_getsockopt.argtypes = [
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_void_p,
    ctypes.POINTER(ctypes.c_uint32),
]
_getsockopt.restype = ctypes.c_int


def peer_supplementary_groups(sock: socket.socket) -> tuple[int, ...]:
    """SO_PEERGROUPS: the peer's supplementary groups as they were at connect().

    Not socket.getsockopt: it caps the buffer at 1024 bytes (256 groups) and a
    peer may have up to 65536.  A buffer too small fails with ERANGE and the
    kernel writes the size it needs into the length, so the second try fits.
    """
    count = 64
    while True:
        buf = (ctypes.c_uint32 * count)()
        size = ctypes.c_uint32(ctypes.sizeof(buf))
        if (
            _getsockopt(sock.fileno(), socket.SOL_SOCKET, SO_PEERGROUPS, buf, ctypes.byref(size))
            == 0
        ):
            return tuple(buf[: size.value // ctypes.sizeof(ctypes.c_uint32)])
        err = ctypes.get_errno()
        if err != errno.ERANGE or size.value <= ctypes.sizeof(buf):
            raise OSError(err, f"SO_PEERGROUPS: {os.strerror(err)}")
        count = size.value // ctypes.sizeof(ctypes.c_uint32)


def peer_of(sock: socket.socket) -> Peer:
    pid, uid, gid = struct.unpack(
        "iII", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("iII"))
    )
    return Peer(pid, uid, gid, frozenset((gid, *peer_supplementary_groups(sock))))


# -- parsing ------------------------------------------------------------------------------------

# A JSON string, escapes included; an unterminated one runs to the end of the line.
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?', re.S)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


def nested_deeper_than(line: bytes, limit: int) -> bool:
    """Whether arrays and objects in ``line`` nest deeper than ``limit``, without parsing it.

    Brackets inside strings do not count.  Where the text stops being valid
    JSON the parser stops too, so counting the brackets that follow can only
    overestimate how deep the parser would go, never underestimate it.
    """
    if line.count(b"[") + line.count(b"{") <= limit:
        return False  # not enough opening brackets to get that deep
    depth = 0
    for c in _JSON_STRING.sub(b"", line).translate(None, _NOT_BRACKET):
        if c in b"[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def parse_request(line: bytes, max_nesting: int = MAX_NESTING) -> dict:
    """One request line -> the request object; RequestError for anything else."""
    if nested_deeper_than(line, max_nesting):
        raise RequestError(f"request nested deeper than {max_nesting} levels")
    try:
        req = json.loads(line.decode())
    except (UnicodeDecodeError, ValueError):
        raise RequestError("request is not a JSON object") from None
    if not isinstance(req, dict):
        raise RequestError("request is not a JSON object")
    return req


def int_arg(req: dict, key: str, default, lo: int, hi: int) -> int:
    """A request's integer ``key`` (``default`` when absent) within lo..hi, or RequestError."""
    value = req.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise RequestError(f"{key}: {value!r} is not an integer")
    if not lo <= value <= hi:
        raise RequestError(f"{key}: {value} outside {lo}..{hi}")
    return value


def error_reply(message: str) -> dict:
    line = next((ln for ln in message.splitlines() if ln.strip()), "request failed")
    return {"ok": False, "error": line[:MAX_ERROR]}


def _message(exc: BaseException) -> str:
    """What an exception says, as the replies have always put it."""
    if isinstance(exc, KeyError):
        return f"missing field {exc}"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def encode_reply(obj: dict) -> bytes:
    """One reply line; a reply that cannot be encoded or is too long becomes an error."""
    try:
        line = json.dumps(obj).encode() + b"\n"
    except (TypeError, ValueError) as exc:
        log.error("control reply cannot be encoded: %s", _message(exc))
        return json.dumps(error_reply("internal error: reply cannot be encoded")).encode() + b"\n"
    if len(line) > MAX_REPLY:
        log.error("control reply of %d bytes is longer than %d", len(line), MAX_REPLY)
        return (
            json.dumps(
                error_reply(
                    f"reply of {len(line)} bytes is longer than the {MAX_REPLY} bytes allowed"
                )
            ).encode()
            + b"\n"
        )
    return line


# -- one connection -------------------------------------------------------------------------------


class Connection:
    """One client connection, as its handlers see it."""

    def __init__(self, sock: socket.socket, peer: Peer, privileged: bool, limits: Limits):
        self.sock = sock
        self.peer = peer
        self.privileged = privileged
        self._limits = limits
        self._held: dict[object, Callable[[], None]] = {}

    def send(self, obj: dict, fds=()) -> None:
        """Send one line (a reply, or an event before it); ClientGone if the client does not
        take it within the write timeout.  The timeout is per chunk: a slow reader that keeps
        reading gets a long reply."""
        view = memoryview(encode_reply(obj))
        try:
            self.sock.settimeout(self._limits.write_timeout)
            if fds:
                view = view[socket.send_fds(self.sock, [view[:SEND_CHUNK]], list(fds)) :]
            while view:
                view = view[self.sock.send(view[:SEND_CHUNK]) :]
        except OSError as exc:  # socket.timeout included
            raise ClientGone(exc.errno, "client does not read its replies") from None

    def hold(self, key, release: Callable[[], None]) -> None:
        """Keep something for the client until it closes the connection (or ``let_go(key)``).
        A connection that holds something has no idle timeout."""
        self._held[key] = release

    def holds(self, key) -> bool:
        return key in self._held

    def let_go(self, key) -> bool:
        """Release ``key`` now; False if this connection does not hold it."""
        release = self._held.pop(key, None)
        if release is None:
            return False
        release()
        return True

    @property
    def holding(self) -> bool:
        return bool(self._held)

    def release_all(self) -> None:
        while self._held:
            key, release = self._held.popitem()
            try:
                release()
            except Exception as exc:  # one failed release must not keep the others
                log.error(
                    "control connection: releasing %r: %s: %s",
                    key,
                    type(exc).__name__,
                    _message(exc),
                )


# -- the server ------------------------------------------------------------------------------------


class ControlServer:
    """Serve ``commands`` on ``listener`` (bound and listening; the server closes it).

    ``privileged(peer)`` decides who may run commands that are not read-only;
    ``who`` says who that is in the refusal ("root or group rtnet").
    ``check_request(req)`` may raise RequestError for a request this server
    does not serve (rtnetd: another device's name).
    """

    def __init__(
        self,
        listener: socket.socket,
        commands: dict[str, Command],
        *,
        privileged: Callable[[Peer], bool] = group_policy(None),
        who: str = "root",
        check_request: Callable[[dict], None] | None = None,
        limits: Limits = Limits(),
    ):
        self.listener = listener
        self.commands = dict(commands)
        self.limits = limits
        self._privileged = privileged
        self._who = who
        self._check_request = check_request
        self._stopping = threading.Event()
        self._serving = threading.Lock()  # held by serve(); close() waits for it
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._lock = threading.Lock()
        self._pools: dict[bool, set[Connection]] = {True: set(), False: set()}
        self._threads: set[threading.Thread] = set()
        listener.setblocking(False)

    def connections(self, privileged: bool) -> int:
        with self._lock:
            return len(self._pools[privileged])

    # -- accept loop -----------------------------------------------------------------------------
    def serve(self) -> None:
        """Accept connections until stop() (at once if stop() came first)."""
        with self._serving, selectors.DefaultSelector() as sel:
            if self._stopping.is_set():
                return
            sel.register(self.listener, selectors.EVENT_READ)
            sel.register(self._wake_r, selectors.EVENT_READ)
            while not self._stopping.is_set():
                for key, _ in sel.select():
                    if key.fileobj is self.listener:
                        self._accept()

    def stop(self, *_) -> None:
        """Make serve() return; safe in a signal handler."""
        self._stopping.set()
        if self._wake_w >= 0:
            try:
                os.write(self._wake_w, b"x")
            except OSError:
                pass

    def close(self, join_timeout: float = 2.0) -> None:
        """Stop, close the listener and end every connection.  A handler still running
        finishes and its reply still goes out; this waits ``join_timeout`` s for them in all.
        Can be called more than once."""
        self.stop()
        if self._wake_w < 0:
            return
        # the accept loop must be out of select() before its descriptors close: a wake-up
        # whose pipe is closed before the loop runs is lost, and the loop would sleep forever
        serving_done = self._serving.acquire(timeout=join_timeout)
        self.listener.close()
        with self._lock:
            conns = [c for pool in self._pools.values() for c in pool]
            threads = list(self._threads)
        for conn in conns:
            try:
                conn.sock.shutdown(socket.SHUT_RD)  # wakes its thread's recv
            except OSError:
                pass
        deadline = time.monotonic() + join_timeout
        for t in threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        wake_r, wake_w = self._wake_r, self._wake_w
        self._wake_r = self._wake_w = -1
        os.close(wake_r)
        os.close(wake_w)
        if serving_done:
            self._serving.release()

    def _accept(self) -> None:
        try:
            sock, _ = self.listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            # out of descriptors: the connection stays queued and the listener readable;
            # back off instead of spinning on it
            log.error("control socket: accept: %s", exc.strerror or exc)
            self._stopping.wait(0.1)
            return
        try:
            peer = peer_of(sock)
            privileged = bool(self._privileged(peer))
        except Exception as exc:
            log.error("control socket: peer credentials: %s", _message(exc))
            _send_now_and_close(sock, "cannot read peer credentials")
            return
        limit = (
            self.limits.privileged_connections
            if privileged
            else self.limits.unprivileged_connections
        )
        with self._lock:
            pool = self._pools[privileged]
            if len(pool) >= limit:
                conn = None
            else:
                conn = Connection(sock, peer, privileged, self.limits)
                pool.add(conn)
        if conn is None:
            _send_now_and_close(sock, "too many control connections")
            return
        t = threading.Thread(
            target=self._serve_conn, args=(conn,), daemon=True, name="rtnetd-client"
        )
        with self._lock:
            self._threads.add(t)
        t.start()

    # -- one connection ---------------------------------------------------------------------------
    def _serve_conn(self, conn: Connection) -> None:
        try:
            self._read_requests(conn)
        except ClientGone:
            pass
        except Exception as exc:  # a fault here must end this connection, not the daemon
            log.error("control connection: %s: %s", type(exc).__name__, _message(exc))
        finally:
            conn.release_all()
            with self._lock:
                self._pools[conn.privileged].discard(conn)
                self._threads.discard(threading.current_thread())
            conn.sock.close()

    def _read_requests(self, conn: Connection) -> None:
        lim = self.limits
        sock = conn.sock
        buf = bytearray()
        since = time.monotonic()  # idle: since the last reply; partial line: since its first byte
        while not self._stopping.is_set():
            if buf:
                timeout, why = (
                    lim.line_timeout,
                    f"request line not finished within {lim.line_timeout:g} s",
                )
            elif conn.holding:
                timeout, why = None, ""
            else:
                timeout, why = lim.idle_timeout, f"no request for {lim.idle_timeout:g} s"
            left = None if timeout is None else since + timeout - time.monotonic()
            if left is not None and left <= 0:  # (a time-out of 0 would mean non-blocking)
                self._refuse(conn, why)
                return
            sock.settimeout(left)
            try:
                chunk = sock.recv(RECV_SIZE)
            except socket.timeout:
                self._refuse(conn, why)
                return
            except OSError:
                return
            if not chunk:
                return  # the client is done; a partial line is dropped
            if not buf:
                since = time.monotonic()
            buf += chunk
            if b"\n" in chunk:
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if len(line) > lim.max_request:
                        self._refuse(conn, f"request longer than {lim.max_request} bytes")
                        return
                    if line.strip():
                        self._answer(conn, bytes(line))
                since = time.monotonic()
            if len(buf) > lim.max_request:
                self._refuse(conn, f"request longer than {lim.max_request} bytes")
                return

    def _answer(self, conn: Connection, line: bytes) -> None:
        reply = self._dispatch(conn, line)
        if isinstance(reply, WithFds):
            try:
                conn.send(_ok(reply.reply), reply.fds)
            finally:
                for fd in reply.fds:
                    os.close(fd)
        else:
            conn.send(_ok(reply))

    def _dispatch(self, conn: Connection, line: bytes) -> dict | WithFds:
        cmd = None
        try:
            req = parse_request(line, self.limits.max_nesting)
            cmd = req.get("cmd")
            command = self.commands.get(cmd) if isinstance(cmd, str) else None
            if command is None:
                raise RequestError(f"unknown command {cmd!r}")
            if self._check_request is not None:
                self._check_request(req)
            if not command.read_only and not conn.privileged:
                raise RequestError(f"{cmd}: permission denied (needs {self._who})")
            return command.handler(req, conn)
        except ClientGone:
            raise
        except RequestError as exc:
            return error_reply(str(exc))
        except (ConfigError, RtnetError, KeyError, TypeError, ValueError) as exc:
            reply = error_reply(_message(exc))
            if isinstance(exc, OSError) and exc.errno:
                reply["errno"] = exc.errno  # the C library returns it (rtn_app_open)
            return reply
        except Exception as exc:
            msg = _message(exc)
            log.error(
                "control request %s: %s: %s",
                cmd if isinstance(cmd, str) else "?",
                type(exc).__name__,
                " ".join(msg.split()),
            )
            return error_reply(f"internal error: {type(exc).__name__}: {msg}")

    def _refuse(self, conn: Connection, error: str) -> None:
        """Error reply, then read and drop what the client still sends (bounded in bytes and
        time), so that closing with unread data does not reset the connection before the
        client has read the reply."""
        try:
            conn.send(error_reply(error))
        except ClientGone:
            return
        sock = conn.sock
        deadline = time.monotonic() + DRAIN_SECONDS
        dropped = 0
        try:
            sock.shutdown(socket.SHUT_WR)
            while dropped < DRAIN_BYTES:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                sock.settimeout(left)
                chunk = sock.recv(RECV_SIZE)
                if not chunk:
                    break
                dropped += len(chunk)
        except OSError:
            pass


def _ok(reply: dict) -> dict:
    return reply if "ok" in reply else {"ok": True, **reply}


def _send_now_and_close(sock: socket.socket, error: str) -> None:
    """One error line to a connection that gets no thread; never blocks the accept loop."""
    try:
        sock.setblocking(False)
        sock.send(json.dumps(error_reply(error)).encode() + b"\n")
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    sock.close()
