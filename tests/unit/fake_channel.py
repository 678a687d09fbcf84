"""A channel's shared memory as the station builds it, for tests without a station."""
import mmap
import os
import struct

from rtnet._lowlevel import ffi, lib

ET = 0x88B5
STATION_MAC = bytes.fromhex("025254000001")


class FakeChannelMemory:
    """struct rtn_chan_shm in a memfd, initialised like rtn_station_chan_open()."""

    def __init__(self, depth=4, max_size=1514):
        self.depth = depth
        size = ffi.sizeof("struct rtn_chan_shm") + 2 * depth * ffi.sizeof("struct rtn_msg")
        self.fd = os.memfd_create("test-channel")
        os.ftruncate(self.fd, size)
        self.map = mmap.mmap(self.fd, size)
        self.shm = ffi.from_buffer("struct rtn_chan_shm *", self.map)
        s = self.shm
        s.magic, s.version, s.depth = lib.RTN_CHAN_MAGIC, lib.RTN_CHAN_VERSION, depth
        s.ethertype, s.max_size, s.alive = ET, max_size, 1
        s.station_mac = STATION_MAC
        s.tx.size = s.rx.size = depth
        self.msgs = ffi.cast("struct rtn_msg *", ffi.cast("char *", self.shm)
                             + ffi.sizeof("struct rtn_chan_shm"))

    def tx(self, i):
        return self.msgs[i]

    def rx(self, i):
        return self.msgs[self.depth + i]

    def deliver(self, frame: bytes, rx_ns: int = 0) -> None:
        """Commit ``frame`` to the RX ring as rtn_chans_rx() does: the header's fields, if the
        frame carries struct rtn_app_hdr, in the message."""
        m = self.rx(self.shm.rx.head % self.depth)
        ffi.memmove(m.frame, frame, len(frame))
        m.len, m.rx_ns, m.seq, m.sched_ns, m.tx_ns = len(frame), rx_ns, 0, 0, 0
        if len(frame) >= 38 and struct.unpack_from("!I", frame, 14)[0] == lib.RTN_APP_MAGIC:
            m.seq, m.sched_ns, m.tx_ns = struct.unpack_from("!Iqq", frame, 18)
        self.shm.rx.head += 1

    def sent(self, i: int) -> bytes:
        """The frame of TX ring message ``i`` (counted from the first)."""
        m = self.tx(i % self.depth)
        return bytes(ffi.buffer(m.frame, m.len))

    def fds(self):
        """A fresh (memfd, kickfd) pair for Channel.attach, which takes them over."""
        return os.dup(self.fd), os.eventfd(0, os.EFD_NONBLOCK)

    def close(self):
        del self.shm, self.msgs
        self.map.close()
        os.close(self.fd)
