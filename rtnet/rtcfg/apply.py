"""Applying an RTcfg payload on a client station: all of it, or nothing.

The client machine (client.py) hands the daemon the requests of a payload
(payload.py) through its ``apply`` callback.  :func:`check` works out what
the whole list would do before any of it runs: the TDMA requests are
folded into the configuration they lead to (the same builders and
rtmac.tdma_config checks as the daemon's own ``tdma.*`` handlers), and the
VNIC and IP requests are checked against what the station has (a VNIC the
station opens on first use needs its slot in the schedule by then).  Only a
list that passes as a whole is then run, request by request, through the
daemon's handlers (:func:`run`).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Callable

from rtmac.tdma_config import TdmaConfig, apply_request, effective_slot, validate
from rtnet.errors import ConfigError, RtcfgError

TDMA_COMMANDS = ("tdma.master", "tdma.slave", "tdma.slot", "tdma.remove_slot", "tdma.detach")
OTHER_COMMANDS = ("vnic.address", "vnic.up", "station.ip")


@dataclass
class StationView:
    """What a payload is checked against: the station as it is now."""

    discipline: str  # "none", "tdma" or "nomac"
    tdma: TdmaConfig | None
    has_vnic: bool
    ip: str | None  # the station's IP, as RTcfg assigned it
    master_config: Callable[[dict], TdmaConfig]  # the daemon's builders for tdma.master/slave
    slave_config: Callable[[dict], TdmaConfig]
    vnic_slot: int | None = None  # a VNIC not open yet, opened in this slot


def _check_vnic(what: str, view: StationView) -> None:
    """The VNIC is there, or it can be opened: the schedule by then carries its slot."""
    if view.has_vnic:
        return
    if view.vnic_slot is None:
        raise RtcfgError(f"{what}: this station has no VNIC")
    if view.tdma is None or effective_slot(view.tdma, view.vnic_slot) is None:
        raise RtcfgError(
            f"{what}: the VNIC's slot {view.vnic_slot} is not in the schedule (give the slot first)"
        )
    view.has_vnic = True


def _check_one(req: dict, view: StationView) -> None:
    """Advance ``view`` by ``req``, or raise."""
    cmd = req.get("cmd")
    if cmd in ("tdma.master", "tdma.slave"):
        if view.discipline != "none":
            raise RtcfgError(f"{cmd}: {view.discipline.upper()} is already attached")
        build = view.master_config if cmd == "tdma.master" else view.slave_config
        view.tdma, view.discipline = validate(build(req)), "tdma"
    elif cmd in ("tdma.slot", "tdma.remove_slot"):
        if view.tdma is None:
            raise RtcfgError(f"{cmd}: no TDMA attached")
        if req.get("cal_results"):
            raise RtcfgError(f"{cmd}: waiting for calibration results is not allowed here")
        view.tdma = apply_request(view.tdma, req)
    elif cmd == "tdma.detach":
        if view.discipline != "tdma":
            raise RtcfgError("tdma.detach: no TDMA attached")
        view.tdma, view.discipline = None, "none"
    elif cmd == "vnic.address":
        _check_vnic("vnic address", view)
        try:
            ipaddress.IPv4Interface(req.get("cidr"))
        except (ValueError, TypeError):
            raise RtcfgError(f"vnic address: {req.get('cidr')!r} is not a.b.c.d/prefix") from None
    elif cmd == "vnic.up":
        _check_vnic("vnic up", view)
        if view.ip is None:
            raise RtcfgError("vnic up: the station has no IP address (add it by IP)")
    elif cmd == "station.ip":
        try:
            view.ip = str(ipaddress.IPv4Address(req.get("ip")))
        except (ValueError, TypeError):
            raise RtcfgError(f"ip: {req.get('ip')!r} is not an IPv4 address") from None
    else:
        raise RtcfgError(f"{cmd!r} is not a configuration request")


def check(requests: list[dict], view: StationView) -> StationView:
    """The station as the whole list would leave it; RtcfgError naming the first request that
    would fail (``request N: ...``), in which case nothing may be applied."""
    for number, req in enumerate(requests, 1):
        try:
            _check_one(req, view)
        except (ConfigError, KeyError, TypeError, ValueError) as exc:
            message = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise RtcfgError(f"request {number} ({req.get('cmd')}): {message}") from None
        except RtcfgError as exc:
            raise RtcfgError(f"request {number}: {exc.strerror}") from None
    return view


def run(requests: list[dict], handlers: dict[str, Callable[[dict], object]]) -> None:
    """Run a list :func:`check` accepted through ``handlers`` (command -> handler)."""
    for req in requests:
        handlers[req["cmd"]](req)
