"""The client side of rtnetd's control socket: one request, its reply, and what comes with it.

Framing and limits are rtnet.control_protocol's.  A request is one JSON
object on one line; the daemon answers with one line holding ``"ok"``,
and before it, for long requests such as ``ping``, event lines without
``"ok"`` that are handed to ``on_event`` as they arrive.  ``channel.open``
passes descriptors with its reply (SCM_RIGHTS); ``max_fds`` says how many
the caller takes, and the connection then stays open (the daemon keeps the
channel while it does).

Every failure is a :class:`ControlClientError` whose errno says what went
wrong and whose message is one line without a prefix (callers add the
device or path they are about):

========================= ==========================================================
ENOENT, ECONNREFUSED      nothing listens on the socket (:attr:`no_daemon`)
EACCES, other connect     the socket could not be connected (``<path>: <strerror>``;
                          ``filename`` is the socket's path for every connect error)
ETIMEDOUT                 no reply within ``timeout`` seconds of silence
ECONNRESET                the daemon closed the connection before its reply
EMSGSIZE                  a line longer than control_protocol.MAX_REPLY
EPROTO                    a line that is not a JSON object
EREMOTEIO                 the daemon refused (``ok: false``); the message is its own
========================= ==========================================================

Used by rtnet.stationctl (rtnetctl), rtmac.control (rtmac) and rtnet.app
(Channel.open).
"""

from __future__ import annotations

import errno
import json
import os
import socket
from typing import Callable

from . import paths
from .control_protocol import MAX_REPLY
from .errors import RtnetError
from .messages import one_line

_CHUNK = 65536
_NO_DAEMON = (errno.ENOENT, errno.ECONNREFUSED)


class ControlClientError(RtnetError):
    """Talking to rtnetd failed, or it refused the request (errno EREMOTEIO)."""

    @property
    def no_daemon(self) -> bool:
        """Whether nothing listens on the control socket (missing or stale socket file)."""
        return self.errno in _NO_DAEMON

    @property
    def refused(self) -> bool:
        """Whether the daemon answered and said no; the message is the daemon's."""
        return self.errno == errno.EREMOTEIO


def _connect(dev: str, netns: str | None, timeout: float | None) -> socket.socket:
    path = paths.control_socket(dev, netns)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
    except OSError as exc:
        sock.close()
        err = exc.errno or errno.ECONNREFUSED
        raise ControlClientError(err, f"{path}: {exc.strerror or os.strerror(err)}", path) from None
    return sock


class _LineReader:
    """Reply lines off the socket, each at most MAX_REPLY bytes with its newline."""

    def __init__(self, sock: socket.socket, max_fds: int, fds: list[int]):
        self._sock = sock
        self._max_fds = max_fds
        self._fds = fds  # every descriptor received, for the caller to own
        self._buf = bytearray()
        self._scanned = 0  # bytes of _buf known to hold no newline

    def _recv(self) -> bytes:
        if not self._max_fds:
            return self._sock.recv(_CHUNK)
        chunk, got, _flags, _addr = socket.recv_fds(self._sock, _CHUNK, self._max_fds)
        self._fds.extend(got)
        return chunk

    def next_line(self) -> bytes:
        while True:
            end = self._buf.find(b"\n", self._scanned)
            if end >= 0:
                if end + 1 > MAX_REPLY:
                    break
                line = bytes(self._buf[:end])
                del self._buf[: end + 1]
                self._scanned = 0
                return line
            self._scanned = len(self._buf)
            if len(self._buf) >= MAX_REPLY:
                break
            chunk = self._recv()
            if not chunk:
                if self._buf:  # a last line without its newline: judge what came
                    line = bytes(self._buf)
                    self._buf.clear()
                    return line
                raise ControlClientError(
                    errno.ECONNRESET, "rtnetd closed the connection without replying"
                )
            self._buf += chunk
        raise ControlClientError(errno.EMSGSIZE, f"reply from rtnetd longer than {MAX_REPLY} bytes")


def _parse(line: bytes) -> dict:
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        obj = None
    if not isinstance(obj, dict):
        raise ControlClientError(errno.EPROTO, "malformed reply from rtnetd")
    return obj


def _exchange(sock: socket.socket, request: dict, on_event, max_fds: int, fds: list[int]) -> dict:
    try:
        sock.sendall(json.dumps(request).encode() + b"\n")
        lines = _LineReader(sock, max_fds, fds)
        while True:
            reply = _parse(lines.next_line())
            if "ok" in reply:
                break
            if on_event is None:  # only requests that announce events get them
                raise ControlClientError(errno.EPROTO, "malformed reply from rtnetd")
            on_event(reply)
    except socket.timeout:
        raise ControlClientError(errno.ETIMEDOUT, "rtnetd did not reply in time") from None
    except ControlClientError:
        raise
    except OSError as exc:
        err = exc.errno or errno.EIO
        raise ControlClientError(
            err, f"control socket: {exc.strerror or os.strerror(err)}"
        ) from None
    if reply["ok"] is not True:
        message = reply.get("error")
        message = one_line(message) if isinstance(message, str) and message else "request failed"
        raise ControlClientError(errno.EREMOTEIO, message)
    return reply


def call(
    dev: str,
    request: dict,
    *,
    netns: str | None = None,
    timeout: float | None = 30.0,
    on_event: Callable[[dict], None] | None = None,
) -> dict:
    """Send ``request`` to the daemon of ``dev`` in network namespace ``netns`` (default:
    the caller's) and return its ``ok`` reply.

    ``timeout`` bounds each wait for data (None: wait forever, as slot commands
    do while a station calibrates).  Lines without ``"ok"`` go to ``on_event``;
    without one, such a line is a malformed reply.
    """
    with _connect(dev, netns, timeout) as sock:
        return _exchange(sock, request, on_event, 0, [])


def call_keep(
    dev: str, request: dict, *, netns: str | None = None, max_fds: int, timeout: float | None = 30.0
) -> tuple[socket.socket, dict, list[int]]:
    """Like :func:`call`, but take up to ``max_fds`` descriptors passed with the reply and
    keep the connection: returns (socket, reply, fds), all the caller's to close."""
    sock = _connect(dev, netns, timeout)
    fds: list[int] = []
    try:
        reply = _exchange(sock, request, None, max_fds, fds)
    except BaseException:
        for fd in fds:
            os.close(fd)
        sock.close()
        raise
    return sock, reply, fds
