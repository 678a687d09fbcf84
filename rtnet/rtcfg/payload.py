"""The configuration an RTcfg server hands a client: a whitelisted command list.

RTnet's stage-1 data is a shell fragment the client evaluates (``eval
"$(rtcfg rteth0 client -c)"`` in rtnet.in).  Here it is never executed: each
line must be one of the commands below, parsed into the same request dicts
the command line tools send to rtnetd (rtmac's by rtmac.commands, the parser
rtmac's command line uses) and validated by the same code, and one
bad line refuses the whole payload (``line N: ...``) before anything of it
is applied.  Stage-2 data is read the same way.

The project's form, one command per line (``#`` starts a comment)::

    tdma slot <id> <offset_us> [-p x/y] [-s size] [-j id] [-w us] [-t ms]
    tdma master <cycle_us> [-b us] [-c rounds] [-i id] [-m n]     (a backup master)
    tdma slave | tdma detach
    vnic address <a.b.c.d/prefix>                                   (the VNIC's address)
    vnic up                                                         (the station's own IP)
    ip <a.b.c.d>                                                    (the station's IP)

RTnet's shell form, as rtnet.in writes it (``;`` also separates commands)::

    $TDMACFG rteth0 slot 0 400         -> tdma slot 0 400 (any device word: the client's own)
    ifconfig vnic0 up 10.0.0.2 [netmask 255.255.255.0]  -> vnic address (classful default)
    ifconfig vnic0 up $IPADDR $NETMASK_OPT              -> vnic up

Anything else, including ``tdma slot -l`` (it writes a file), is refused.

>>> [r["cmd"] for r in parse(b"$TDMACFG rteth0 slot 0 400;ifconfig vnic0 up $IPADDR", "rt0")]
['tdma.slot', 'vnic.up']
>>> parse(b"tdma slot 0 400\\nrm -rf /", "rt0")
Traceback (most recent call last):
rtnet.errors.RtcfgError: line 2: 'rm' is not an allowed command (tdma, vnic, ip, ...)
"""

from __future__ import annotations

import ipaddress
import re

from rtmac import commands as rtmac_commands
from rtnet.devcmd import UsageError
from rtnet.errors import RtcfgError
from rtnet.messages import shown

MAX_STAGE2_LEN = 64 * 1024  # a command list, not RTnet's arbitrary stage-2 file
_TDMACFG = re.compile(r"(\$\{?TDMACFG\}?|(\S*/)?tdmacfg)")
_VNIC = re.compile(r"vnic[0-9]{1,4}")
_TDMA_COMMANDS = ("slot", "master", "slave", "detach")
_OWN_ADDRESS = "$IPADDR"
_OWN_NETMASK = "$NETMASK_OPT"


def classful_prefix(ip: ipaddress.IPv4Address) -> int:
    """ifconfig's default netmask for an address given without one."""
    first = ip.packed[0]
    return 8 if first < 128 else 16 if first < 192 else 24


def _ipv4(text: str) -> ipaddress.IPv4Address:
    try:
        return ipaddress.IPv4Address(text)
    except ValueError:
        raise RtcfgError(f"invalid IPv4 address {shown(text)}") from None


def _tdma(words: list[str], dev: str) -> dict:
    if not words or words[0] not in _TDMA_COMMANDS:
        given = f" {shown(words[0])}" if words else ""
        raise RtcfgError(f"tdma{given}: allowed are {', '.join(_TDMA_COMMANDS)}")
    refused = [w for w in words if w in ("-l", "-h") or w.startswith("--")]
    if refused:
        raise RtcfgError(f"tdma {words[0]}: option {shown(refused[0])} is not allowed here")
    try:
        request, _ = rtmac_commands.parse_request(["tdma", dev, *words])
    except UsageError as exc:
        raise RtcfgError(f"tdma {words[0]}: {exc}") from None
    return request


def _vnic(words: list[str], dev: str) -> dict:
    if words == ["up"]:
        return {"cmd": "vnic.up", "dev": dev}
    if len(words) == 2 and words[0] == "address":
        try:
            cidr = ipaddress.IPv4Interface(words[1])
        except ValueError:
            raise RtcfgError(f"vnic address {shown(words[1])}: use a.b.c.d/prefix") from None
        if "/" not in words[1]:
            raise RtcfgError(f"vnic address {shown(words[1])}: the prefix is missing")
        return {"cmd": "vnic.address", "dev": dev, "cidr": str(cidr)}
    raise RtcfgError("vnic: allowed are 'vnic up' and 'vnic address <a.b.c.d/prefix>'")


def _ip(words: list[str], dev: str) -> dict:
    if len(words) != 1:
        raise RtcfgError("ip: one address expected (ip a.b.c.d)")
    return {"cmd": "station.ip", "dev": dev, "ip": str(_ipv4(words[0]))}


def _ifconfig(words: list[str], dev: str) -> dict:
    """RTnet's ``ifconfig vnic0 up <ip> [netmask <mask>]``, the only ifconfig it sends."""
    if len(words) < 2 or not _VNIC.fullmatch(words[0]) or words[1] != "up":
        raise RtcfgError("ifconfig: only 'ifconfig vnicN up [<ip> [netmask <mask>]]' is allowed")
    rest = words[2:]
    if rest in ([], [_OWN_ADDRESS], [_OWN_ADDRESS, _OWN_NETMASK]):
        return {"cmd": "vnic.up", "dev": dev}
    ip = _ipv4(rest[0])
    if len(rest) == 1:
        prefix = classful_prefix(ip)
    elif len(rest) == 3 and rest[1] == "netmask":
        try:
            prefix = ipaddress.IPv4Network(f"0.0.0.0/{rest[2]}").prefixlen
        except ValueError:
            raise RtcfgError(f"ifconfig: invalid netmask {shown(rest[2])}") from None
    else:
        raise RtcfgError("ifconfig: expected 'up <ip> [netmask <mask>]'")
    return {"cmd": "vnic.address", "dev": dev, "cidr": f"{ip}/{prefix}"}


_NATIVE = {"tdma": _tdma, "vnic": _vnic, "ip": _ip, "ifconfig": _ifconfig}


def _command(words: list[str], dev: str) -> dict:
    head = words[0]
    if _TDMACFG.fullmatch(head):
        if len(words) < 2:
            raise RtcfgError(f"{shown(head)}: the device is missing")
        return _tdma(words[2:], dev)  # RTnet's device word: applied to the client's own
    parse = _NATIVE.get(head)
    if parse is None:
        raise RtcfgError(f"{shown(head)} is not an allowed command (tdma, vnic, ip, ...)")
    return parse(words[1:], dev)


def _text(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    try:
        text = bytes(data).decode("ascii")
    except UnicodeDecodeError as exc:
        line = bytes(data)[: exc.start].count(b"\n") + 1
        raise RtcfgError(
            f"line {line}: a byte that is not ASCII ({data[exc.start]:#04x})"
        ) from None
    for number, line in enumerate(text.split("\n"), 1):
        bad = [ch for ch in line.rstrip("\r") if not (ch.isprintable() or ch == "\t")]
        if bad:
            raise RtcfgError(f"line {number}: control character {shown(bad[0])}")
    return text


def parse(data: bytes | str, dev: str) -> list[dict]:
    """The requests of a payload for the station on ``dev``; RtcfgError naming the first
    bad line refuses all of it."""
    text = _text(data)
    requests = []
    for number, line in enumerate(text.split("\n"), 1):
        for part in line.split("#", 1)[0].split(";"):
            words = part.split()
            if not words:
                continue
            try:
                requests.append(_command(words, dev))
            except RtcfgError as exc:
                raise RtcfgError(f"line {number}: {exc}") from None
    return requests
