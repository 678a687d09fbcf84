"""rtmac's commands in RTnet's syntax (tdmacfg, nomaccfg) -> the request dicts rtnetd takes.

The parser and the request builders of ``rtmac`` (rtmac/cli.py, which sends the
requests and prints the replies) and of RTcfg's stage-1 and stage-2 command lists
(rtnet/rtcfg/payload.py, which reads them as the same commands): no I/O here.
The parser checks the form of each value; the ranges are the C rule's
(rtn_tdma_cfg_check(), through rtmac.tdma_config.validate()), which master and
slave run on the configuration they give and slot on the slot alone (the
daemon checks it again with its schedule, which also decides the joint slot).
A refused command line is a :class:`rtnet.devcmd.UsageError`.

>>> parse_request("tdma rteth0 master 1000".split())[0]["cycle_us"]
1000
"""

from __future__ import annotations

import argparse
import re

from rtnet import options
from rtnet.argtypes import integer, netns_name
from rtnet.devcmd import RaisingParser, UsageError, parse_device_request
from rtnet.errors import ConfigError
from rtnet.messages import one_line
from rtnet.options import OPTIONS

from . import tdma_config
from .tdma_config import TdmaConfig

__all__ = ["TDMA_MASTER_FLAGS", "TDMA_SLAVE_FLAGS", "UsageError", "build_parser", "parse_request"]

MAX_CAL_TIMEOUT_MS = 3_600_000  # -t: an hour of calibration is far beyond any cycle


def _phasing(text: str) -> tuple[int, int]:
    """``x/y`` -> (x, y): the form only (1 <= x <= y and y's range are C's rules)."""
    m = re.fullmatch(r"([0-9]{1,9})/([0-9]{1,9})", text)  # ASCII digits, as few as needed
    if not m:
        raise argparse.ArgumentTypeError(f"invalid phasing: {one_line(text[:40])} (expected x/y)")
    return int(m.group(1)), int(m.group(2))


# -s: 0 for the device MTU, as tdmacfg; otherwise the C rule's 60..MTU
_size = OPTIONS["tdma.slot.size"].argtype("slot size")


# --- request builders: one per subcommand -------------------------------------------------


def _validated(**kwargs) -> None:
    """The C rule on the configuration ``kwargs`` make, its message as a usage error."""
    try:
        tdma_config.validate(TdmaConfig(**kwargs))
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


def _validated_slot(a, phasing: int, period: int) -> None:
    """The slot's own values through the C rule, in a schedule of this slot alone: the
    largest slot table and MTU, an unpaced link and no cycle, so that only what holds on
    every station is refused here (the daemon checks the slot again in its schedule,
    which decides the joint slot, the MTU and the cycle end)."""
    slot = tdma_config.Slot(
        a.id, a.offset_us, phasing, period, a.size or tdma_config.MAX_MTU, None, a.window_us or 0
    )
    _validated(
        role="slave",
        max_slot_id=tdma_config.MAX_SLOT_ID_LIMIT,
        link_rate_mbps=0,
        slots={a.id: slot},
    )


# tdmacfg's options of "master" and "slave": flag -> option table key (the table's rows)
TDMA_MASTER_FLAGS = options.flags("master")
TDMA_SLAVE_FLAGS = options.flags("slave")


def _settings(a, flags: dict) -> dict:
    return {OPTIONS[key].name: getattr(a, OPTIONS[key].name) for key in flags.values()}


def req_master(a) -> dict:
    backup = a.backup_offset_us or None  # -b 0 means primary master, as in tdmacfg
    settings = _settings(a, TDMA_MASTER_FLAGS)
    _validated(role="master", cycle_us=a.cycle_us, backup_offset_us=backup, **settings)
    return {
        "cmd": "tdma.master",
        "dev": a.dev,
        "cycle_us": a.cycle_us,
        "backup_offset_us": backup,
        **settings,
    }


def req_slave(a) -> dict:
    settings = _settings(a, TDMA_SLAVE_FLAGS)
    _validated(role="slave", **settings)
    return {"cmd": "tdma.slave", "dev": a.dev, **settings}


def req_slot(a) -> dict:
    if a.offset_us is None:
        given = [
            opt
            for opt, val in (
                ("-p", a.phasing),
                ("-s", a.size),
                ("-j", a.joint),
                ("-w", a.window_us),
                ("-l", a.log_file),
                ("-t", a.cal_timeout_ms),
            )
            if val is not None
        ]
        if given:
            raise UsageError(f"{' '.join(given)} needs a slot offset")
        return {"cmd": "tdma.remove_slot", "dev": a.dev, "id": a.id}
    phasing, period = a.phasing or (1, 1)
    _validated_slot(a, phasing, period)
    if a.joint is not None and a.joint == a.id:
        raise UsageError(f"slot {a.id} cannot be joint with itself")
    req = {
        "cmd": "tdma.slot",
        "dev": a.dev,
        "id": a.id,
        "offset_us": a.offset_us,
        "phasing": phasing,
        "period": period,
        "size": a.size or 0,
        "joint": a.joint,
        "cal_timeout_ms": a.cal_timeout_ms or 0,
        "cal_results": a.log_file is not None,
    }
    if a.window_us:
        req["window_us"] = a.window_us  # only then: tdmacfg's requests stay as they were
    return req


def req_simple(cmd: str):
    return lambda a: {"cmd": cmd, "dev": a.dev}


# --- the parser --------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = RaisingParser(
        prog="rtmac", description="Configure RTmac disciplines (tdmacfg/nomaccfg syntax)."
    )
    p.add_argument(
        "-n", "--netns", type=netns_name, help="network namespace of the station (like ip -n)"
    )
    disc = p.add_subparsers(dest="discipline", required=True, metavar="tdma|nomac")

    tdma = disc.add_parser("tdma", help="TDMA discipline (tdmacfg)")
    tdma.add_argument("dev")
    cmds = tdma.add_subparsers(
        dest="command", required=True, metavar="master|slave|slot|detach|show"
    )

    # types, ranges, defaults and help from the option table (rtnet.options), which
    # the configuration files and the daemon use too
    m = cmds.add_parser("master", help="become (backup) master")
    m.add_argument(
        "cycle_us",
        type=OPTIONS["tdma.cycle_us"].argtype("cycle period"),
        help=OPTIONS["tdma.cycle_us"].help,
    )
    backup = OPTIONS["tdma.backup_offset_us"]
    m.add_argument(
        "-b",
        dest="backup_offset_us",
        default=0,  # 0: primary, as tdmacfg
        type=backup.argtype("backup offset"),
        help=backup.help,
    )
    for flag, key in TDMA_MASTER_FLAGS.items():
        OPTIONS[key].add_to(m, flag)
    m.set_defaults(build=req_master)

    s = cmds.add_parser("slave", help="become slave")
    for flag, key in TDMA_SLAVE_FLAGS.items():
        OPTIONS[key].add_to(s, flag)
    s.set_defaults(build=req_slave)

    sl = cmds.add_parser("slot", help="add/replace a slot, or remove it (no offset)")
    sl.add_argument("id", type=OPTIONS["tdma.slot.id"].argtype("slot id"))
    sl.add_argument(
        "offset_us", nargs="?", type=OPTIONS["tdma.slot.offset_us"].argtype("slot offset")
    )
    sl.add_argument("-p", dest="phasing", type=_phasing, metavar="x/y")
    sl.add_argument("-s", dest="size", type=_size)
    sl.add_argument("-j", dest="joint", type=OPTIONS["tdma.slot.joint"].argtype("joint slot id"))
    sl.add_argument(
        "-w",
        dest="window_us",
        type=OPTIONS["tdma.slot.window_us"].argtype("window"),
        help="a transmit window of this many us (beyond tdmacfg)",
    )
    sl.add_argument("-l", dest="log_file", metavar="file")
    sl.add_argument(
        "-t", dest="cal_timeout_ms", type=integer("calibration timeout", 0, MAX_CAL_TIMEOUT_MS)
    )
    sl.set_defaults(build=req_slot)

    d = cmds.add_parser("detach", help="detach TDMA")
    d.set_defaults(build=req_simple("tdma.detach"))

    sh = cmds.add_parser("show", help="show configuration and state")
    sh.add_argument("-j", dest="json", action="store_true", help="JSON output")
    sh.set_defaults(build=req_simple("tdma.show"))

    nomac = disc.add_parser("nomac", help="NoMAC discipline (nomaccfg)")
    nomac.add_argument("dev")
    ncmds = nomac.add_subparsers(dest="command", required=True, metavar="attach|detach")
    ncmds.add_parser("attach").set_defaults(build=req_simple("nomac.attach"))
    ncmds.add_parser("detach").set_defaults(build=req_simple("nomac.detach"))
    return p


def parse_request(argv: list[str]) -> tuple[dict, argparse.Namespace]:
    """Command line -> (request dict, parsed arguments); UsageError if refused."""
    return parse_device_request(build_parser(), argv)
