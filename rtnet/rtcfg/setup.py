"""What RTcfg does when ``rtnetctl up`` starts a station, worked out from its configuration.

``rtnet start`` (RTNET_REFERENCE.md 3.9) runs the RTcfg server on the master and
adds every slave with a stage-1 configuration, and on a slave runs the client,
announce and ready.  This module turns a configuration into an
:class:`RtcfgSetup` with everything checked before anything starts:

- every stage-1 text is the project's whitelisted command list (payload.py)
  and parses whole: the slave's slot lines, then its VNIC line, as rtnet.in
  writes them (``$TDMACFG rteth0 slot 0 $OFFSET;ifconfig vnic0 up $IPADDR``);
  a backup master's starts with ``tdma detach`` and ``tdma master <cycle> -b
  <offset>``;
- the stage-2 file (STAGE_2_SRC) is read here and must parse too, since the
  client applies it as it arrives (RTnet's is an arbitrary file; here it is a
  command list);
- STAGE_2_DST, where a slave keeps the stage-2 file it received, names a file
  in an existing directory that is not a directory, a link or a device;
  :func:`write_stage2` replaces it atomically and writes nowhere else;
- STAGE_2_CMDS, which rtnet.in evaluates as shell, is a command list for the
  same parser, refused whole if one command is bad.

>>> slot_command(Slot(0, 400))
'tdma slot 0 400 -p 1/1 -s 1500'
>>> simple_invitations(["10.0.0.2", "10.0.0.3"], 200, None, None)[1].stage1
'tdma slot 0 400\\nvnic up\\n'
"""

from __future__ import annotations

import os
import secrets
import stat
from dataclasses import dataclass

from rtmac.tdma_config import Slot
from rtnet.errors import RtcfgError
from rtnet.messages import shown_path
from rtnet.userfiles import Refused, read_regular

from . import frames, payload

ROLES = ("server", "client")


@dataclass(frozen=True)
class Invitation:
    """One station the server adds (``rtcfg add``)."""

    address: str  # its IPv4 address, or its MAC
    hw: str | None  # its MAC when the server assigns the IP by MAC (-hw)
    stage1: str  # the command list it applies
    stage2: str | None = None  # the stage-2 file's text


@dataclass(frozen=True)
class RtcfgSetup:
    """RTcfg of one station as ``rtnetctl up`` runs it."""

    role: str  # "server" (the TDMA master) or "client"
    invitations: tuple = ()  # a server's stations
    stage2_dst: str | None = None  # a client: where the received stage-2 file goes
    stage2_cmds: str = ""  # a client: commands applied after stage 2
    timeout_s: int = 120  # the whole bring-up (0: wait forever, as RTnet)
    period_ms: int = 1000
    heartbeat_ms: int = 1000
    threshold: int = 2


# -- stage-1 texts ----------------------------------------------------------------------------


def slot_command(slot: Slot) -> str:
    """The command that gives a station ``slot``, in the project's form (payload.py)."""
    words = [
        "tdma",
        "slot",
        str(slot.id),
        str(slot.offset_us),
        "-p",
        f"{slot.phasing}/{slot.period}",
        "-s",
        str(slot.size),
    ]
    if slot.joint is not None:
        words += ["-j", str(slot.joint)]
    if slot.window_us:
        words += ["-w", str(slot.window_us)]
    return " ".join(words)


def vnic_command(ip: str | None, prefix: int | None) -> str:
    """RTnet's ``ifconfig vnic0 up $IPADDR [netmask]``: the station's own IP, with the
    master's NETMASK if it has one."""
    return f"vnic address {ip}/{prefix}" if ip and prefix is not None else "vnic up"


def checked_stage1(text: str, who: str) -> str:
    """``text`` if it parses whole and fits a Stage 1 frame, else RtcfgError naming ``who``."""
    try:
        payload.parse(text, "rteth0")
    except RtcfgError as exc:
        raise RtcfgError(f"stage 1 of {who}: {exc.strerror}") from None
    if len(text) > frames.MAX_STAGE1_LEN:
        raise RtcfgError(f"stage 1 of {who}: {len(text)} bytes (at most {frames.MAX_STAGE1_LEN})")
    return text


def simple_invitations(
    slaves: list[str],
    offset_us: int,
    prefix: int | None,
    stage2: str | None,
    *,
    vnic: bool = True,
    cycle_us: int | None = None,
) -> list[Invitation]:
    """Simple mode: the k-th slave (k = 1, 2, ...) gets slot 0 at k * offset_us (within the
    master's ``cycle_us``), and (with ``vnic``) its VNIC up with its IP."""
    out = []
    for k, ip in enumerate(slaves, 1):
        if cycle_us and k * offset_us >= cycle_us:
            raise RtcfgError(
                f"{ip}, the slave number {k}, would get slot 0 at {k * offset_us} "
                f"us, beyond the {cycle_us} us cycle (fewer slaves or a smaller "
                f"offset)"
            )
        text = f"tdma slot 0 {k * offset_us}\n"
        if vnic:
            text += f"{vnic_command(ip, prefix)}\n"
        out.append(Invitation(ip, None, checked_stage1(text, ip), stage2))
    return out


def section_invitation(
    kind: str,
    ip: str | None,
    mac: str | None,
    slots: dict,
    prefix: int | None,
    stage2: str | None,
    *,
    cycle_us: int = 0,
    backup_offset_us: int | None = None,
) -> Invitation:
    """Extended mode: one ``slave:`` or ``backup-master:`` section of tdma.conf."""
    lines = []
    if kind == "backup-master":
        lines += ["tdma detach", f"tdma master {cycle_us} -b {backup_offset_us}"]
    lines += [slot_command(s) for _, s in sorted(slots.items())]
    lines.append(vnic_command(ip, prefix))
    who = ip or mac
    text = checked_stage1("\n".join(lines) + "\n", who)
    return Invitation(ip or mac, mac if ip else None, text, stage2)


# -- stage-2 file and commands ----------------------------------------------------------------


def read_stage2(path: str) -> str:
    """The stage-2 file's text: a regular file of at most payload.MAX_STAGE2_LEN bytes that
    parses as a command list (RtcfgError otherwise)."""
    name = shown_path(path)
    try:
        data = read_regular(path, payload.MAX_STAGE2_LEN)
    except Refused as exc:
        if exc.too_large:
            raise RtcfgError(f"{name}: more than {payload.MAX_STAGE2_LEN} bytes") from None
        raise RtcfgError(str(exc)) from None
    try:
        payload.parse(data, "rteth0")
    except RtcfgError as exc:
        raise RtcfgError(f"{name}: {exc.strerror}") from None
    return data.decode("ascii")


def checked_commands(text: str, dev: str) -> str:
    """STAGE_2_CMDS: ``text`` if every command in it is allowed (RtcfgError otherwise)."""
    payload.parse(text, dev)
    return text


def check_destination(path: str) -> str:
    """STAGE_2_DST: the absolute path if a file may be written there, else RtcfgError."""
    if not path or "\0" in path or path.endswith("/"):
        raise RtcfgError(f"{shown_path(path)}: not a file name")
    path = os.path.abspath(path)
    parent = os.path.dirname(path)
    name = shown_path(path)
    try:
        if not stat.S_ISDIR(os.stat(parent).st_mode):
            raise RtcfgError(f"{name}: {shown_path(parent)} is not a directory")
    except OSError as exc:
        raise RtcfgError(f"{name}: directory {shown_path(parent)}: {exc.strerror}") from None
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return path
    except OSError as exc:
        raise RtcfgError(f"{name}: {exc.strerror}") from None
    if not stat.S_ISREG(mode):
        raise RtcfgError(
            f"{name}: exists and is not a regular file (a link, directory or "
            f"device is never written through)"
        )
    return path


def write_stage2(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically: a new file beside it, then a rename, so a
    reader sees the old file or the whole new one and a link at ``path`` is replaced, not
    followed (RtcfgError if that fails; nothing is left behind)."""
    path = check_destination(path)
    tmp = os.path.join(
        os.path.dirname(path), f".{os.path.basename(path)}.{secrets.token_hex(4)}.tmp"
    )
    try:
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644
        )
    except OSError as exc:
        raise RtcfgError(f"{shown_path(path)}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise RtcfgError(f"{shown_path(path)}: {exc.strerror}") from None
