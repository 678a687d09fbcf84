"""What a network device's driver supports of XDP, as the kernel reports it (Linux 6.3+).

The kernel's generic-netlink family ``netdev`` answers ``NETDEV_CMD_DEV_GET``
for an interface index with ``NETDEV_A_DEV_XDP_FEATURES``, a bit mask of
``NETDEV_XDP_ACT_*`` (include/uapi/linux/netdev.h).  That is the driver's own
statement, so no table of drivers has to be kept here.  Replies are bytes
from the kernel and checked like any other input: a malformed one is
:class:`XdpFeaturesError`, one line.

>>> describe(BASIC | REDIRECT | RX_SG)
'basic, redirect, rx-sg'
"""

from __future__ import annotations

import errno
import os
import socket
import struct

# NETDEV_XDP_ACT_* (include/uapi/linux/netdev.h)
BASIC = 1  # XDP_PASS, XDP_DROP, XDP_TX, XDP_ABORTED in the driver
REDIRECT = 2  # XDP_REDIRECT in the driver: what an AF_XDP socket needs natively
NDO_XMIT = 4
XSK_ZEROCOPY = 8  # AF_XDP sockets can bind with XDP_ZEROCOPY
HW_OFFLOAD = 16
RX_SG = 32
NDO_XMIT_SG = 64
_NAMES = (
    (BASIC, "basic"),
    (REDIRECT, "redirect"),
    (NDO_XMIT, "ndo-xmit"),
    (XSK_ZEROCOPY, "xsk-zerocopy"),
    (HW_OFFLOAD, "hw-offload"),
    (RX_SG, "rx-sg"),
    (NDO_XMIT_SG, "ndo-xmit-sg"),
)

NETLINK_GENERIC = 16
GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_ID = 1
CTRL_ATTR_FAMILY_NAME = 2
NETDEV_CMD_DEV_GET = 1
NETDEV_A_DEV_IFINDEX = 1
NETDEV_A_DEV_XDP_FEATURES = 3
NLM_F_REQUEST = 1
NLMSG_ERROR = 2
NLMSG_DONE = 3
_NLMSG = struct.Struct("=IHHII")  # len, type, flags, seq, pid
_GENL = struct.Struct("=BBH")  # cmd, version, reserved
_NLA = struct.Struct("=HH")  # len, type
_NLA_TYPE_MASK = 0x3FFF  # without NLA_F_NESTED and NLA_F_NET_BYTEORDER
TIMEOUT_S = 2.0


class XdpFeaturesError(Exception):
    """The kernel could not tell, or told something malformed; ``.errno`` if it refused."""

    def __init__(self, message: str, err: int = 0):
        super().__init__(message)
        self.errno = err


def describe(mask: int) -> str:
    return ", ".join(name for bit, name in _NAMES if mask & bit) or "none"


def _align(n: int) -> int:
    return (n + 3) & ~3


def attribute(kind: int, value: bytes) -> bytes:
    """One netlink attribute, padded to four bytes."""
    head = _NLA.pack(_NLA.size + len(value), kind)
    return head + value + b"\0" * (_align(len(value)) - len(value))


def parse_attributes(buf: bytes) -> dict[int, bytes]:
    """The attributes of a message body; XdpFeaturesError if one overruns the body."""
    out, off = {}, 0
    while off + _NLA.size <= len(buf):
        length, kind = _NLA.unpack_from(buf, off)
        if length < _NLA.size or off + length > len(buf):
            raise XdpFeaturesError(
                f"netlink attribute of {length} bytes at offset {off} "
                f"overruns the {len(buf)}-byte reply"
            )
        out.setdefault(kind & _NLA_TYPE_MASK, buf[off + _NLA.size : off + length])
        off += _align(length)
    return out


def parse_reply(data: bytes, family: int, seq: int) -> dict[int, bytes]:
    """The attributes of the reply to request ``seq``, or the kernel's error raised."""
    off = 0
    while off + _NLMSG.size <= len(data):
        length, kind, _flags, mseq, _pid = _NLMSG.unpack_from(data, off)
        if length < _NLMSG.size or off + length > len(data):
            raise XdpFeaturesError(
                f"netlink message of {length} bytes overruns the {len(data)}-byte reply"
            )
        body = data[off + _NLMSG.size : off + length]
        off += _align(length)
        if mseq != seq:
            continue
        if kind == NLMSG_ERROR:
            if len(body) < 4:
                raise XdpFeaturesError("netlink error message without an error code")
            err = -struct.unpack_from("=i", body)[0]
            if err > 0:
                raise XdpFeaturesError(os.strerror(err), err)
            continue  # an acknowledgement
        if kind == NLMSG_DONE:
            break
        if kind == family:
            if len(body) < _GENL.size:
                raise XdpFeaturesError("generic netlink reply without its header")
            return parse_attributes(body[_GENL.size :])
    raise XdpFeaturesError("no answer in the netlink reply")


def _ask(sock, family: int, cmd: int, attrs: bytes, seq: int) -> dict[int, bytes]:
    body = _GENL.pack(cmd, 1, 0) + attrs
    sock.send(_NLMSG.pack(_NLMSG.size + len(body), family, NLM_F_REQUEST, seq, 0) + body)
    return parse_reply(sock.recv(65536), family, seq)


def xdp_features(ifindex: int) -> int:
    """The ``NETDEV_XDP_ACT_*`` mask of interface ``ifindex`` in this network namespace."""
    try:
        sock = socket.socket(
            socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, NETLINK_GENERIC
        )
    except OSError as exc:
        raise XdpFeaturesError(f"no generic netlink socket: {exc.strerror}", exc.errno) from None
    with sock:
        sock.settimeout(TIMEOUT_S)
        try:
            fam = _ask(
                sock,
                GENL_ID_CTRL,
                CTRL_CMD_GETFAMILY,
                attribute(CTRL_ATTR_FAMILY_NAME, b"netdev\0"),
                1,
            )
        except XdpFeaturesError as exc:
            if exc.errno == errno.ENOENT:
                raise XdpFeaturesError(
                    "the kernel has no netdev netlink family (before "
                    "Linux 6.3): it does not report XDP features",
                    exc.errno,
                ) from None
            raise
        except OSError as exc:
            raise XdpFeaturesError(f"netlink: {exc.strerror or exc}", exc.errno or 0) from None
        fam_id = fam.get(CTRL_ATTR_FAMILY_ID, b"")
        if len(fam_id) != 2:
            raise XdpFeaturesError("netlink: the netdev family's id is missing")
        try:
            dev = _ask(
                sock,
                struct.unpack("=H", fam_id)[0],
                NETDEV_CMD_DEV_GET,
                attribute(NETDEV_A_DEV_IFINDEX, struct.pack("=I", ifindex)),
                2,
            )
        except OSError as exc:
            raise XdpFeaturesError(f"netlink: {exc.strerror or exc}", exc.errno or 0) from None
    mask = dev.get(NETDEV_A_DEV_XDP_FEATURES, b"")
    if len(mask) != 8:
        raise XdpFeaturesError("netlink: the reply has no 64-bit XDP feature mask")
    return struct.unpack("=Q", mask)[0]
