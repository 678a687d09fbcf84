"""Names for the real-time IPv4 path's C constants (csrc/ip/rtn_ipv4.h) and address checks.

``BAD_REASONS`` maps each RTN_IPBAD_* reason to the name ``rtnetctl status`` and
the tests use, taken from the header itself so a new reason cannot be missed.
"""

from __future__ import annotations

import ipaddress

from ._lowlevel import lib
from .errors import ConfigError
from .messages import shown


def _reasons() -> dict[int, str]:
    out = {}
    for name in dir(lib):
        if name.startswith("RTN_IPBAD_") and name != "RTN_IPBAD_N":
            out[getattr(lib, name)] = name[len("RTN_IPBAD_") :].lower()
    return dict(sorted(out.items()))


BAD_REASONS = _reasons()
ETH_P_IPV4 = lib.RTN_ETH_P_IPV4
UDP_HLEN = lib.RTN_UDP_HLEN  # Ethernet + IPv4 + UDP headers
UDP_XOVERHEAD = lib.RTN_UDP_XOVERHEAD  # the same and a stamped socket's RTNX header
UDP_MAX_PAYLOAD = lib.RTN_UDP_MAX_PAYLOAD


def unicast_ipv4(text, what: str = "address") -> str:
    """``text`` as a dotted IPv4 unicast address (not 0.0.0.0, broadcast or multicast)."""
    try:
        ip = ipaddress.IPv4Address(text)
    except (ValueError, TypeError):
        raise ConfigError(f"{what} {shown(text)} is not an IPv4 address") from None
    if ip.is_multicast or ip.is_unspecified or int(ip) == 0xFFFFFFFF:
        raise ConfigError(f"{what} {ip} is not a unicast address")
    return str(ip)


def ip_int(ip: str) -> int:
    return int(ipaddress.IPv4Address(ip))


def ip_text(v: int) -> str:
    return str(ipaddress.IPv4Address(v))


def echo_frame(
    dst_mac: bytes,
    src_mac: bytes,
    src_ip: str,
    dst_ip: str,
    ident: int,
    seq: int,
    data: bytes,
    *,
    reply: bool = False,
    ip_id: int = 0,
) -> bytes:
    """An ICMP echo request (or reply) frame, built by the C core (rtn_icmp_echo_finish)."""
    from ._lowlevel import ffi

    if len(data) > UDP_MAX_PAYLOAD:
        raise ConfigError(f"echo data of {len(data)} bytes: at most {UDP_MAX_PAYLOAD}")
    buf = ffi.new("uint8_t[]", lib.RTN_ICMP_HLEN + len(data))
    ffi.memmove(buf + lib.RTN_ICMP_HLEN, data, len(data))
    n = lib.rtn_icmp_echo_finish(
        buf,
        dst_mac,
        src_mac,
        ip_int(src_ip),
        ip_int(dst_ip),
        lib.RTN_ICMP_ECHO_REPLY if reply else lib.RTN_ICMP_ECHO_REQUEST,
        ident,
        seq,
        ip_id,
        len(data),
    )
    return bytes(ffi.buffer(buf, n))


def parse(frame: bytes):
    """rtn_ip_parse() of a whole frame: (verdict > 0 or -reason, struct rtn_ip_pkt)."""
    from ._lowlevel import ffi

    pkt = ffi.new("struct rtn_ip_pkt *")
    return lib.rtn_ip_parse(frame, len(frame), pkt), pkt


def format_status(st: dict | None) -> list[str]:
    """The ``ipv4`` part of rtnetd's status in a few lines (rtnetctl status)."""
    if not st:
        return []
    bad = {k: v for k, v in st.get("bad", {}).items() if v}
    out = [
        f"  ipv4 {st.get('address') or '(no address)'}: udp rx {st.get('rx_udp', 0)}, "
        f"echo requests {st.get('rx_echo_request', 0)} (replies {st.get('tx_echo_reply', 0)}, "
        f"dropped {st.get('echo_reply_drops', 0)}), echo replies {st.get('rx_echo_reply', 0)}, "
        f"tx refused {st.get('tx_refused', 0)}, fragments {st.get('rx_fragments', 0)} "
        f"(datagrams made whole {st.get('rx_reassembled', 0)})"
    ]
    if bad:
        out.append("    refused: " + ", ".join(f"{k} {v}" for k, v in bad.items()))
    for n in st.get("neighbours", []):
        out.append(f"    route {n['ip']:<15} {n['mac']}")
    return out


ETH_P_ARP = 0x0806
_ARP_HEAD = bytes.fromhex("000108000604")  # Ethernet/IPv4 (RFC 826)


def arp_request(src_mac: bytes, src_ip: str, target_ip: str) -> bytes:
    """A broadcast ARP request for ``target_ip`` (RTnet's rtroute solicit), padded to 60."""
    frame = (
        b"\xff" * 6
        + src_mac
        + ETH_P_ARP.to_bytes(2, "big")
        + _ARP_HEAD
        + b"\0\1"
        + src_mac
        + ip_int(src_ip).to_bytes(4, "big")
        + bytes(6)
        + ip_int(target_ip).to_bytes(4, "big")
    )
    return frame + bytes(60 - len(frame))


def arp_reply_sender(frame: bytes) -> tuple[str, str] | None:
    """(sender IPv4, sender MAC) of an Ethernet/IPv4 ARP reply (hostile bytes), else None."""
    if len(frame) < 42 or frame[12:14] != ETH_P_ARP.to_bytes(2, "big"):
        return None
    a = frame[14:42]
    if a[:6] != _ARP_HEAD or a[6:8] != b"\0\2" or a[8] & 1:
        return None
    return ip_text(int.from_bytes(a[14:18], "big")), a[8:14].hex(":")
