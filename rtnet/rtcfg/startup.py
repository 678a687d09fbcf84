"""The RTcfg part of ``rtnetctl up``, in ``rtnet start``'s order (RTNET_REFERENCE.md 3.9).

Server (the TDMA master, already running its schedule): ``rtcfg server``;
``rtcfg add`` for every station with its stage-1 text and the stage-2 file;
"Waiting for all slaves..." ``rtcfg wait``; ``rtcfg ready``.

Client (a TDMA slave without slots of its own): "Stage 1: searching for
master..." ``rtcfg client`` (the daemon applies the stage-1 commands: slots,
IP, VNIC); "Stage 2: waiting for other slaves..." ``rtcfg announce``, the
received stage-2 file written to STAGE_2_DST, then STAGE_2_CMDS applied as
one command list; "Stage 3: waiting for common setup completion..." ``rtcfg
ready``.

Each step is one request to rtnetd through ``call(request, timeout_s)``;
:func:`run` gives the blocking ones what is left of the setup's
``timeout_s`` (0: no limit, as RTnet's tools wait).  A refusal or a time-out
is one :class:`StartupError` naming the step; the caller stops the daemon.
"""

from __future__ import annotations

import time
from typing import Callable

from rtnet.errors import RtcfgError, RtnetError

from . import setup as _setup
from .step import DEFAULT_BURSTRATE, DEFAULT_MAX_STATIONS

WAITING = "Waiting for all slaves..."
STAGE_1 = "Stage 1: searching for master..."
STAGE_2 = "Stage 2: waiting for other slaves..."
STAGE_3 = "Stage 3: waiting for common setup completion..."
REPLY_MARGIN_S = 5.0  # beyond a blocking request's own timeout, for its reply

Call = Callable[[dict, "float | None"], dict]


class StartupError(RtcfgError):
    """A step of the RTcfg bring-up failed; the message names it."""


class _Deadline:
    def __init__(self, timeout_s: int, clock):
        self.timeout_s, self.clock = timeout_s, clock
        self.end = clock() + timeout_s if timeout_s else None

    def left_ms(self, what: str) -> int:
        """Milliseconds left (0: no limit); StartupError once none are."""
        if self.end is None:
            return 0
        ms = int((self.end - self.clock()) * 1000)
        if ms <= 0:
            raise StartupError(f"{what}: not done within {self.timeout_s} s")
        return ms


def _step(call: Call, what: str, req: dict, deadline: _Deadline | None = None) -> dict:
    timeout = 30.0
    if deadline is not None:
        ms = deadline.left_ms(what)
        req = {**req, "timeout_ms": ms}
        timeout = ms / 1000 + REPLY_MARGIN_S if ms else None
    try:
        return call(req, timeout)
    except RtnetError as exc:
        raise StartupError(f"{what}: {exc.strerror or exc}") from None


def server_requests(s: _setup.RtcfgSetup) -> list[tuple[str, dict]]:
    """The server's requests before it waits, each with what it does."""
    reqs = [
        (
            "rtcfg server",
            {
                "cmd": "rtcfg.server",
                "period_ms": s.period_ms,
                "burstrate": DEFAULT_BURSTRATE,
                "heartbeat_ms": s.heartbeat_ms,
                "threshold": s.threshold,
                "ready": False,
            },
        )
    ]
    for inv in s.invitations:
        reqs.append(
            (
                f"rtcfg add {inv.address}",
                {
                    "cmd": "rtcfg.add",
                    "address": inv.address,
                    "hw": inv.hw,
                    "stage1": inv.stage1,
                    "stage2": inv.stage2,
                    "timeout_ms": 0,
                },
            )
        )
    return reqs


def run(s: _setup.RtcfgSetup, call: Call, say: Callable[[str], None], clock=time.monotonic) -> dict:
    """Bring RTcfg up as ``s`` says; returns what it did (for ``rtnetctl up -j``)."""
    deadline = _Deadline(s.timeout_s, clock)
    if s.role == "server":
        for what, req in server_requests(s):
            _step(call, what, req)
        say(WAITING)
        _step(call, "waiting for all slaves", {"cmd": "rtcfg.wait"}, deadline)
        _step(call, "ready", {"cmd": "rtcfg.ready"}, deadline)
        return {"role": "server", "stations": [i.address for i in s.invitations]}

    say(STAGE_1)
    _step(
        call,
        "stage 1 (searching for master)",
        {"cmd": "rtcfg.client", "max_stations": DEFAULT_MAX_STATIONS},
        deadline,
    )
    say(STAGE_2)
    reply = _step(
        call,
        "stage 2 (waiting for other slaves)",
        {"cmd": "rtcfg.announce", "burstrate": DEFAULT_BURSTRATE, "ready": False},
        deadline,
    )
    out = {"role": "client"}
    if s.stage2_dst is not None:
        data = reply.get("config")
        try:
            if not isinstance(data, str):
                raise UnicodeError
            raw = data.encode("ascii")
        except UnicodeError:
            raise StartupError("stage 2: the daemon sent no readable stage-2 file") from None
        try:
            _setup.write_stage2(s.stage2_dst, raw)
        except RtcfgError as exc:
            raise StartupError(f"writing the stage-2 file: {exc.strerror}") from None
        out["stage2_dst"] = s.stage2_dst
    if s.stage2_cmds.strip():
        _step(call, "STAGE_2_CMDS", {"cmd": "rtcfg.commands", "commands": s.stage2_cmds})
    say(STAGE_3)
    _step(call, "stage 3 (waiting for common setup completion)", {"cmd": "rtcfg.ready"}, deadline)
    return out
