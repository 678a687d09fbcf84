"""A channel's shared memory as the station builds it, for tests without a station."""

import mmap
import os

from rtnet._lowlevel import ffi, lib

ET = 0x88B5
STATION_MAC = bytes.fromhex("025254000001")


class FakeChannelMemory:
    """struct rtn_chan_shm in a memfd, initialised like rtn_station_chan_open()."""

    def __init__(self, depth=4, max_size=1514, ethertype=ET, mac=STATION_MAC):
        self.depth = depth
        size = ffi.sizeof("struct rtn_chan_shm") + 2 * depth * ffi.sizeof("struct rtn_msg")
        self.fd = os.memfd_create("test-channel")
        os.ftruncate(self.fd, size)
        self.map = mmap.mmap(self.fd, size)
        self.shm = ffi.from_buffer("struct rtn_chan_shm *", self.map)
        s = self.shm
        s.magic, s.version, s.depth = lib.RTN_CHAN_MAGIC, lib.RTN_CHAN_VERSION, depth
        s.ethertype, s.max_size, s.alive = ethertype, max_size, 1
        s.station_mac = mac
        s.tx.size = s.rx.size = depth
        self.msgs = ffi.cast(
            "struct rtn_msg *", ffi.cast("char *", self.shm) + ffi.sizeof("struct rtn_chan_shm")
        )

    def tx(self, i):
        return self.msgs[i]

    def rx(self, i):
        return self.msgs[self.depth + i]

    def deliver(self, frame: bytes, rx_ns: int = 0, rx_rt_ns: int = 0) -> None:
        """Commit ``frame`` to the RX ring as rtn_chans_rx() does: the stamps of its
        application header, if it has one, in the message (parsed by the station's parser)."""
        m = self.rx(self.shm.rx.head % self.depth)
        st = ffi.new("struct rtn_app_stamps *")
        assert lib.rtn_app_hdr_parse(frame, len(frame), st) >= 0, "a lying header is dropped"
        ffi.memmove(m.frame, frame, len(frame))
        m.len, m.seq = len(frame), st.seq
        m.sched_ns, m.handover_ns, m.pickup_ns, m.tx_ns = (
            st.t[lib.RTN_STAMP_SCHED],
            st.t[lib.RTN_STAMP_HANDOVER],
            st.t[lib.RTN_STAMP_PICKUP],
            st.t[lib.RTN_STAMP_TX],
        )
        m.rx_ns, m.rx_rt_ns = rx_ns, rx_rt_ns
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
