"""AF_XDP socket of the real-time path: our XDP program plus one socket on one queue.

``RawSocket`` opens the C object (csrc/xsk/rtn_xsk.c): it loads xdp_rtnet.bpf.o,
attaches it to the interface (native XDP, falling back to SKB mode when the
driver has none), and binds an AF_XDP socket to one queue (zero-copy with
``zerocopy=True``, refused where the driver has none; ``"auto"``: zero-copy
where offered, copy mode otherwise).  Only frames of
the real-time EtherTypes reach the socket; everything else goes on to the
Linux stack.  Frames are plain ``bytes``; timestamps are int nanoseconds on
CLOCK_MONOTONIC (csrc/core/rtn_time_inline.h), taken in C next to the ring operation.
"""

import errno
import logging
import math
import os
import re

from . import netns as _netns
from ._lowlevel import check, ffi, lib
from .closeable import Closeable
from .errors import ConfigError, XskError

log = logging.getLogger(__name__)

ETHERTYPE_RTMAC = 0x9021
ETHERTYPE_RTCFG = 0x9022
ALWAYS_STEERED = (ETHERTYPE_RTMAC, ETHERTYPE_RTCFG)
MODES = {
    "auto": lib.RTN_XDP_MODE_AUTO,
    "native": lib.RTN_XDP_MODE_NATIVE,
    "skb": lib.RTN_XDP_MODE_SKB,
}
MODE_NAMES = {lib.RTN_XDP_MODE_NATIVE: "native", lib.RTN_XDP_MODE_SKB: "skb"}
# where the XDP program puts the receive stamp (csrc/xsk/rtn_xsk_stamp_priv.h); None: nowhere,
# every stamp is the poll time (the kernel refused the program both helpers)
STAMP_PLACES = {1: "metadata", 2: "headroom"}
XSKMAP_ENTRIES = 64
_IFNAME = re.compile(r"^[^/\s:]{1,15}$")
_MAX_TIMEOUT_US = 2**31 - 1


def bpf_object_path() -> str:
    """Where the build put the XDP program: package data next to this module."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "xdp_rtnet.bpf.o")


def validate_ethertypes(ethertypes) -> tuple[int, ...]:
    """Return the extra EtherTypes to steer (RTmac/RTcfg are always steered)."""
    extra = []
    for et in ethertypes:
        if isinstance(et, bool) or not isinstance(et, int):
            raise ConfigError(f"EtherType {et!r} is not an integer")
        if not 0x0600 <= et <= 0xFFFF:
            raise ConfigError(
                f"EtherType {et:#06x} outside 0x0600..0xffff (smaller values are 802.3 lengths)"
            )
        if et not in ALWAYS_STEERED and et not in extra:
            extra.append(et)
    if len(extra) > lib.RTN_XSK_MAX_ETHERTYPES:
        raise ConfigError(
            f"at most {lib.RTN_XSK_MAX_ETHERTYPES} extra real-time EtherTypes, got {len(extra)}"
        )
    return tuple(extra)


def _validate(ifname, queue, mode, frames, netns):
    if not isinstance(ifname, str) or not _IFNAME.match(ifname):
        raise ConfigError(f"bad interface name {ifname!r} (1-15 characters, no '/', ':' or spaces)")
    if isinstance(queue, bool) or not isinstance(queue, int) or not 0 <= queue < XSKMAP_ENTRIES:
        raise ConfigError(f"queue {queue!r} outside 0..{XSKMAP_ENTRIES - 1}")
    if mode not in MODES:
        raise ConfigError(f"mode {mode!r} is not one of {', '.join(MODES)}")
    if (
        isinstance(frames, bool)
        or not isinstance(frames, int)
        or frames < 64
        or frames & (frames - 1)
    ):
        raise ConfigError(f"frames {frames!r} must be a power of two >= 64")
    if netns is not None and not isinstance(netns, str):
        raise ConfigError(f"netns {netns!r} must be a namespace name")


def _timeout_us(timeout: float | None) -> int:
    if timeout is None:
        return -1
    if timeout < 0 or math.isnan(timeout):
        raise ConfigError(f"timeout {timeout!r} must be >= 0 or None")
    return min(math.ceil(timeout * 1e6), _MAX_TIMEOUT_US)


ZEROCOPY = {False: lib.RTN_XSK_COPY, True: lib.RTN_XSK_ZEROCOPY, "auto": lib.RTN_XSK_ZC_AUTO}


def fill_xsk_opts(
    opts,
    ifname: str,
    *,
    queue: int,
    extra: tuple,
    mode: str,
    frames: int,
    zerocopy: bool | str = False,
    busy_poll: bool = False,
    pin_dir: str | None = None,
):
    """Fill a ``struct rtn_xsk_opts``; returns the cdata it points into (keep it alive)."""
    keep = [
        ffi.new("char[]", ifname.encode()),
        ffi.new("char[]", bpf_object_path().encode()),
        ffi.new("char[]", pin_dir.encode()) if pin_dir else ffi.NULL,
    ]
    opts.ifname, opts.bpf_obj_path, opts.pin_dir = keep
    opts.queue = queue
    opts.mode = MODES[mode]
    opts.frames = frames
    if zerocopy not in ZEROCOPY:
        raise ConfigError(f"zerocopy {zerocopy!r} is not one of False, True, 'auto'")
    opts.zerocopy = ZEROCOPY[zerocopy]
    opts.busy_poll = int(busy_poll)
    opts.n_ethertypes = len(extra)
    for i, et in enumerate(extra):
        opts.ethertypes[i] = et
    return keep


class RawSocket(Closeable):
    """One AF_XDP socket on ``ifname``/``queue`` behind rtnet's own XDP program."""

    def __init__(
        self,
        ifname: str,
        *,
        queue: int = 0,
        ethertypes=(),
        mode: str = "auto",
        netns: str | None = None,
        frames: int = 4096,
        zerocopy: bool | str = False,
        busy_poll: bool = False,
        pin_dir: str | None = None,
    ):
        _validate(ifname, queue, mode, frames, netns)
        extra = validate_ethertypes(ethertypes)
        self.ifname = ifname
        self.queue = queue
        self.netns = netns
        self.ethertypes = ALWAYS_STEERED + extra
        self._x = None
        obj_path = bpf_object_path()
        if not os.path.exists(obj_path):
            raise XskError(
                errno.ENOENT,
                f"XDP object {obj_path} not found "
                "(build with: python3 setup.py build_ext --inplace)",
            )
        if netns is not None and not _netns.exists(netns):
            raise ConfigError(f"network namespace {netns!r} does not exist")

        opts = ffi.new("struct rtn_xsk_opts *")
        # Keep the cdata the options point into alive until open returns.
        self._keep = fill_xsk_opts(
            opts,
            ifname,
            queue=queue,
            extra=extra,
            mode=mode,
            frames=frames,
            zerocopy=zerocopy,
            busy_poll=busy_poll,
            pin_dir=pin_dir,
        )
        out = ffi.new("struct rtn_xsk **")
        with _netns.entered(netns):
            check(lib.rtn_xsk_open(opts, out), XskError)
        self._x = out[0]
        self._frame_size = lib.rtn_xsk_frame_size(self._x)
        self._rxbuf = ffi.new("uint8_t[]", self._frame_size)
        self._ts = ffi.new("int64_t *")
        self.mode = MODE_NAMES[lib.rtn_xsk_mode(self._x)]
        self.zerocopy = bool(self.stats()["zerocopy"])
        self.fallback_reason = ffi.string(lib.rtn_xsk_fallback_reason(self._x)).decode() or None
        if self.fallback_reason:
            log.warning("%s: XDP in SKB mode, not native: %s", ifname, self.fallback_reason)

    # -- data path -------------------------------------------------------------------------

    def _live(self):
        if self._x is None:
            raise XskError(errno.EBADF, f"{self.ifname}: AF_XDP socket is closed")
        return self._x

    def send(self, frame: bytes) -> int:
        """Queue one Ethernet frame; returns the TX timestamp (ns) taken before submission."""
        x = self._live()
        check(lib.rtn_xsk_send(x, ffi.from_buffer(frame), len(frame), self._ts), XskError)
        return self._ts[0]

    def send_stamped(self, frame: bytes, stamp_offset: int, stamp_add: int = 0) -> int:
        """Send with ``now + stamp_add`` written big-endian at ``stamp_offset`` right before
        submission (RTnet's TX timestamp semantics); returns the TX timestamp."""
        x = self._live()
        if not 0 <= stamp_offset <= len(frame) - 8:
            raise ConfigError(
                f"timestamp offset {stamp_offset} does not fit a {len(frame)}-byte frame"
            )
        check(
            lib.rtn_xsk_send_stamped(
                x, ffi.from_buffer(frame), len(frame), stamp_offset, stamp_add, self._ts
            ),
            XskError,
        )
        return self._ts[0]

    def recv(self, timeout: float | None = None) -> tuple[bytes, int] | None:
        """Next real-time frame and its RX timestamp (ns), or None after ``timeout`` s
        (0: check once, None: wait forever).  Frames longer than a UMEM frame are cut."""
        x = self._live()
        n = check(
            lib.rtn_xsk_recv(x, self._rxbuf, self._frame_size, self._ts, _timeout_us(timeout)),
            XskError,
        )
        if n == 0:
            return None
        return ffi.buffer(self._rxbuf, n)[:], self._ts[0]

    # -- control ---------------------------------------------------------------------------

    def stats(self) -> dict:
        st = ffi.new("struct rtn_xsk_stats *")
        check(lib.rtn_xsk_stats(self._live(), st), XskError)
        out = {name: getattr(st, name) for name, _ in ffi.typeof(st[0]).fields if name != "mode"}
        # per queue, only those with frames: {queue: frames}
        out["xdp_unbound_queue"] = {q: n for q, n in enumerate(st.xdp_unbound_queue) if n}
        out["mode"] = MODE_NAMES.get(st.mode, "none")
        out["zerocopy"] = bool(st.zerocopy)
        out["xdp_stamps"] = STAMP_PLACES.get(st.xdp_stamps)
        return out

    @property
    def closed(self) -> bool:
        return self._x is None

    def close(self) -> None:
        """Detach the XDP program and free socket and UMEM.  Can be called more than once."""
        if self._x is None:
            return
        x, self._x = self._x, None
        # C re-enters the socket's namespace for the detach itself; entering here too
        # keeps the open/close symmetry when the namespace still exists.
        if self.netns is not None and _netns.exists(self.netns):
            with _netns.entered(self.netns):
                lib.rtn_xsk_close(x)
        else:
            lib.rtn_xsk_close(x)

    def __repr__(self):
        state = "closed" if self._x is None else self.mode
        return f"<RawSocket {self.ifname} queue {self.queue} {state}>"
