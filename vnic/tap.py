"""The VNIC's Linux side: a TAP device in a station's network namespace.

RTnet's VNIC is a netdev whose MTU is the RT device's MTU minus the 4-byte
RTmac header and whose MAC is the RT NIC's (RTNET_REFERENCE.md section 5).
Here the netdev is a TAP (IFF_TAP | IFF_NO_PI) whose file descriptor the
station's C code reads and writes; this module only creates and configures
it, and removes it again.

With ``offload=True`` (the default) the TAP is opened with IFF_VNET_HDR and
advertises checksum offload and TSO for IPv4 and IPv6 (TUNSETOFFLOAD), so
Linux hands over TCP super-packets of up to 64 KB; the station cuts them into
ordinary wire frames and merges received segments again (csrc/vnic/rtn_vnic_gso.c).
The wire format does not change.

The MTU is bounded by the NRT slot: a slot of ``size`` bytes carries an
outer frame of ``size + 14`` bytes, i.e. an inner frame of ``size + 10``,
so the inner MTU is at most ``size - 4`` (:func:`vnic_mtu_for`).

>>> with Tap("vnic0", mac="02:52:54:00:00:01", mtu=1496,  # doctest: +SKIP
...          address="198.19.0.1/24", netns="rtn-lab-s1") as tap:
...     station.attach_vnic(tap.fd, "batched")
"""

from __future__ import annotations

import errno
import fcntl
import math
import os
import socket
import struct

from pyroute2 import IPRoute

from rtmac.tdma_config import (
    ETH_FCS_LEN,
    ETH_ZLEN,
    IFG_LEN,
    PREAMBLE_SFD_LEN,
    TdmaConfig,
    effective_slot,
)
from rtnet import netns as _netns
from rtnet.closeable import Closeable
from rtnet.errors import ConfigError, RtnetError

# linux/if_tun.h
TUNSETIFF = 0x400454CA
TUNSETOFFLOAD = 0x400454D0
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000
IFF_VNET_HDR = 0x4000  # each packet starts with struct virtio_net_hdr (10 bytes)
TUN_F_CSUM = 0x01
TUN_F_TSO4 = 0x02
TUN_F_TSO6 = 0x04
RTMAC_HLEN = 4  # RTmac header inside the outer frame (tunnel encapsulation)
MIN_MTU = 68  # RTnet's ndo_change_mtu lower bound (IPv4 minimum)
MIN_TXQUEUELEN = 500  # the tun driver's own default
# Whether each VNIC mode opens its TAP with offloads: batched, the pump cuts
# Linux's TCP super-packets (fewer TAP reads per byte); per-packet, the seed's
# baseline, one TAP read is one wire frame and one wake-up of the RT thread.
OFFLOAD_BY_MODE = {"batched": True, "per-packet": False}


def vnic_mtu_for(config: TdmaConfig, slot: int = 1) -> int:
    """Largest VNIC MTU that slot ``slot`` of ``config`` carries (slot 1 falls back to 0)."""
    s = effective_slot(config, slot)
    if s is None:
        fallback = " (nor slot 0)" if slot == 1 else ""
        raise ConfigError(f"VNIC: the TDMA configuration has no slot {slot}{fallback}")
    return s.size - RTMAC_HLEN


def txqueuelen_for(cycle_us: int, link_rate_mbps: int) -> int:
    """TAP queue length that holds one full cycle of traffic.

    In batched mode a frame waits in the TAP queue until the next NRT slot,
    up to one cycle.  The most frames one cycle can bring is the link rate
    filled with minimum-size frames (84 octets on the wire with preamble,
    FCS and gap); twice that covers a cycle whose slot was skipped.  Never
    below the tun driver's default of 500.
    """
    if cycle_us <= 0 or link_rate_mbps <= 0:
        return MIN_TXQUEUELEN
    min_wire_bits = (PREAMBLE_SFD_LEN + ETH_ZLEN + ETH_FCS_LEN + IFG_LEN) * 8
    per_cycle = math.ceil(cycle_us * link_rate_mbps / min_wire_bits)
    return max(MIN_TXQUEUELEN, 2 * per_cycle)


def _parse_cidr(address: str) -> tuple[str, int]:
    try:
        ip, plen = address.split("/")
        parts = [int(p) for p in ip.split(".")]
        plen_i = int(plen)
    except ValueError:
        raise ConfigError(f"VNIC address {address!r}: use IPv4 CIDR like 198.19.0.1/24") from None
    if len(parts) != 4 or not all(0 <= p <= 255 for p in parts) or not 0 <= plen_i <= 32:
        raise ConfigError(f"VNIC address {address!r}: use IPv4 CIDR like 198.19.0.1/24")
    return ip, plen_i


class Tap(Closeable):
    """A TAP netdev ``name`` in ``netns``: non-blocking ``fd``, MAC, MTU, address, up.

    ``offload``: open it with a vnet header and TCP segmentation/checksum
    offload (the station then segments and coalesces); False gives a plain
    TAP that hands over one frame per read.
    """

    def __init__(
        self,
        name: str = "vnic0",
        *,
        mac: str,
        mtu: int,
        address: str | None = None,
        netns: str | None = None,
        slot_size: int | None = None,
        txqueuelen: int = MIN_TXQUEUELEN,
        offload: bool = True,
    ):
        if not name or len(name) > 15 or "/" in name:
            raise ConfigError(f"TAP name {name!r}: 1-15 characters, no '/'")
        if not isinstance(mtu, int) or mtu < MIN_MTU:
            raise ConfigError(f"VNIC MTU {mtu!r}: at least {MIN_MTU}")
        if slot_size is not None and mtu > slot_size - RTMAC_HLEN:
            raise ConfigError(
                f"VNIC MTU {mtu} does not fit the NRT slot of {slot_size} bytes: "
                f"at most {slot_size - RTMAC_HLEN} (slot size - {RTMAC_HLEN})"
            )
        if not isinstance(txqueuelen, int) or not 1 <= txqueuelen <= 1 << 20:
            raise ConfigError(f"TAP txqueuelen {txqueuelen!r}: 1..{1 << 20}")
        addr = _parse_cidr(address) if address is not None else None
        if netns is not None and not _netns.exists(netns):
            raise ConfigError(f"network namespace {netns!r} does not exist")
        self.name, self.netns, self.mac, self.mtu = name, netns, mac, mtu
        self.address, self.txqueuelen, self.offload = address, txqueuelen, bool(offload)
        self.fd: int | None = None
        self.ifindex: int | None = None
        with _netns.entered(netns):
            try:
                fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError as exc:
                raise RtnetError(exc.errno, f"{name}: /dev/net/tun: {exc.strerror}") from None
            flags = IFF_TAP | IFF_NO_PI | (IFF_VNET_HDR if self.offload else 0)
            try:
                fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), flags))
            except OSError as exc:
                os.close(fd)
                raise RtnetError(exc.errno, f"{name}: TUNSETIFF: {exc.strerror}") from None
            if self.offload:
                try:
                    fcntl.ioctl(fd, TUNSETOFFLOAD, TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6)
                except OSError as exc:
                    os.close(fd)
                    raise RtnetError(exc.errno, f"{name}: TUNSETOFFLOAD: {exc.strerror}") from None
        self.fd = fd
        try:
            with IPRoute(netns=netns) as ipr:
                found = ipr.link_lookup(ifname=name)
                if not found:
                    raise RtnetError(errno.ENODEV, f"{name}: created but not found in {netns}")
                self.ifindex = found[0]
                ipr.link("set", index=self.ifindex, address=mac, mtu=mtu, txqlen=txqueuelen)
                if addr is not None:
                    ipr.addr("add", index=self.ifindex, address=addr[0], prefixlen=addr[1])
                ipr.link("set", index=self.ifindex, state="up")
        except BaseException:
            self.close()
            raise

    def set_address(self, address: str) -> None:
        """Make ``address`` (IPv4 CIDR) the device's only IPv4 address."""
        ip, plen = _parse_cidr(address)
        with IPRoute(netns=self.netns) as ipr:
            for old in ipr.get_addr(family=socket.AF_INET, index=self.ifindex):
                ipr.addr(
                    "del",
                    index=self.ifindex,
                    address=old.get_attr("IFA_ADDRESS"),
                    prefixlen=old["prefixlen"],
                )
            ipr.addr("add", index=self.ifindex, address=ip, prefixlen=plen)
        self.address = address

    def close(self) -> None:
        """Remove the device, also when a station still holds a duplicate of the fd.  Idempotent."""
        if self.ifindex is not None:
            if self.netns is None or _netns.exists(self.netns):
                try:
                    with IPRoute(netns=self.netns) as ipr:
                        if ipr.link_lookup(ifname=self.name):
                            ipr.link("del", index=self.ifindex)
                except OSError:
                    pass  # already gone with its namespace
            self.ifindex = None
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
