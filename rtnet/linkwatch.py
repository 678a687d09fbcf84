"""Notice when a station's port goes away under it: deleted, unplugged (a NIC removed from
its PCI slot, a guest's NIC taken out through QEMU's monitor) or moved to another network
namespace.

A thread listens on an rtnetlink socket for link removals (RTM_DELLINK on the RTMGRP_LINK
group) and, after any message, asks the kernel whether each watched interface still exists
by its index.  Only that answer counts: the messages themselves are not parsed, so a
malformed one, one not from the kernel or an overrun of the socket (ENOBUFS) can do no more
than cause the same check.  When a watched port is
gone, ``on_gone(name)`` is called once, from the watcher's thread.
"""

from __future__ import annotations

import errno
import logging
import os
import selectors
import socket
import threading
from collections.abc import Callable

log = logging.getLogger("rtnet.linkwatch")

RTMGRP_LINK = 1


def exists(ifindex: int) -> bool:
    """Whether interface ``ifindex`` is still in this namespace (a rename keeps the index,
    and the port)."""
    try:
        socket.if_indextoname(ifindex)
    except OSError:
        return False
    return True


class LinkWatch:
    """Watches ``ports`` ({name: ifindex}) until close(); ``on_gone(name)`` once per port."""

    def __init__(self, ports: dict[str, int], on_gone: Callable[[str], None]):
        self.ports = dict(ports)
        self.on_gone = on_gone
        self.gone: list[str] = []
        self.messages = 0  # link messages seen (each one a check)
        self.overruns = 0  # ENOBUFS: messages lost, covered by the check
        self._lock = threading.Lock()  # check() runs from the constructor and the thread
        self.sock = socket.socket(
            socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, socket.NETLINK_ROUTE
        )
        try:
            self.sock.bind((0, RTMGRP_LINK))
            self.sock.setblocking(False)
            self._wake_r, self._wake_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            self.sock.close()
            raise
        self._thread = threading.Thread(target=self._run, name="rtnet-linkwatch", daemon=True)
        self._thread.start()
        self.check()  # a port that went before the socket was bound
        # (a port that goes between this check and the thread's start wakes the thread:
        # its socket is bound already)

    def check(self) -> None:
        with self._lock:
            gone = [name for name, ifindex in self.ports.items() if not exists(ifindex)]
            for name in gone:
                del self.ports[name]
                self.gone.append(name)
        for name in gone:
            self.on_gone(name)

    def _drain(self) -> None:
        while True:
            try:
                self.sock.recv(65536)
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno != errno.ENOBUFS:
                    raise
                self.overruns += 1  # events were lost: the check below covers them
                continue
            self.messages += 1

    def _run(self) -> None:
        with selectors.DefaultSelector() as sel:
            sel.register(self.sock, selectors.EVENT_READ)
            sel.register(self._wake_r, selectors.EVENT_READ)
            while self.ports:
                ready = {key.fileobj for key, _ in sel.select()}
                if self._wake_r in ready:
                    return
                try:
                    self._drain()
                except OSError as exc:
                    log.warning("link watch stopped: %s", exc.strerror or exc)
                    return
                self.check()

    def close(self) -> None:
        if self._wake_w is not None:
            os.write(self._wake_w, b"x")
            self._thread.join(2.0)
            os.close(self._wake_w)
            os.close(self._wake_r)
            self._wake_w = None
            self.sock.close()
