"""Every numeric setting of a station and of its TDMA discipline, once.

One row per setting: its key (the rtnet.toml ``section.name``), type, default,
range, unit, whether it may change on a running station, and the help text.
The configuration model (rtnet.config, rtmac.tdma_config), the TOML keys,
rtmac's options and rtnetd's defaults all read this table, so a range or a
default is written in one place and an out-of-range value is refused by one
rule with one message naming the option and its range.

Where the C core enforces a limit or gives a default, the value comes from it
through cffi (the RTN_TDMA_* constants and rtn_tdma_cfg_init()), so Python and
``rtn_tdma_cfg_check()`` cannot disagree.  A TDMA setting (a row with a C
field) is range-checked by that C rule alone: every entry point (rtnet.toml,
rtnet.conf, tdma.conf, rtmac, the control socket, RTcfg stage 1) checks only
its type here (:meth:`Option.check_type`, the ``in_range=False`` argparse
type) and hands the configuration to rtmac.tdma_config.validate(), which
raises C's message (``cycle_us: 50 outside the supported range 100..1000000``).
:meth:`Option.check` is the rule of the other settings, in the same words.  Which TDMA settings may change on a
running engine is decided by ``rtn_tdma_cfg_live()``; the ``live`` column says
the same thing for the reader, and tests/unit/test_options.py holds the two
together.

>>> OPTIONS["tdma.max_cal_requests"].check(300)
Traceback (most recent call last):
  ...
rtnet.errors.ConfigError: tdma.max_cal_requests: 300 above maximum 256
>>> OPTIONS["tdma.guard_ns"].live, OPTIONS["tdma.cycle_us"].live
(True, False)
"""

from __future__ import annotations

import argparse
import math
import os
from dataclasses import dataclass

from ._lowlevel import ffi, lib
from .argtypes import integer, number
from .errors import ConfigError
from .messages import shown
from .rtcfg import step


def _c_tdma_defaults():
    c = ffi.new("struct rtn_tdma_cfg *")
    lib.rtn_tdma_cfg_init(c, lib.RTN_TDMA_ROLE_MASTER)
    return c


_C = _c_tdma_defaults()


def _c_chan_defaults():
    c = ffi.new("struct rtn_chan_opts *")
    lib.rtn_chan_opts_init(c)
    return c


_CH = _c_chan_defaults()


def _num(x) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


_US = 1000


@dataclass(frozen=True)
class Option:
    """One setting; ``lo``/``hi`` are inclusive (None: unbounded or not numeric)."""

    key: str  # section.name as in rtnet.toml
    kind: type  # int, float, bool or str (a name; its caller checks its form)
    default: object  # None: required where it applies, or "not set"
    lo: int | float | None
    hi: int | float | None
    unit: str
    live: bool  # may change on a running station without a restart
    help: str
    toml: bool = True  # False: set by the stack (from the device), not by a file
    label: str = ""  # what a command-line error calls it (default: its name)
    # TDMA settings: the field of struct rtn_tdma_cfg (or rtn_tdma_slot_cfg) that holds it,
    # C's unit per this option's (us -> ns: 1000) and what C reads as "not set"
    c_field: str = ""
    c_scale: int = 1
    c_none: int = 0
    # tdmacfg's flag of rtmac tdma <dev> master/slave, and the commands that take it
    flag: str = ""
    flag_commands: tuple = ()
    choices: tuple = ()  # a name's allowed values (kind str; empty: any name)

    @property
    def section(self) -> str:
        return self.key.rsplit(".", 1)[0]

    @property
    def name(self) -> str:
        return self.key.rsplit(".", 1)[1]

    @property
    def limits(self) -> tuple:
        return self.lo, self.hi

    @property
    def c_checked(self) -> bool:
        """Whether rtn_tdma_cfg_check() judges this setting's range (a TDMA setting):
        the entry points then check only its type, C the rest."""
        return bool(self.c_field)

    def check(self, value, key: str | None = None):
        """``value`` if it is of this option's type and in range, else ConfigError
        naming ``key`` (default: the option's own key) and the range."""
        key = key or self.key
        value = self.check_type(value, key)
        if self.kind in (str, bool):
            return value
        if self.lo is not None and value < self.lo:
            raise ConfigError(f"{key}: {shown(value)} below minimum {_num(self.lo)}")
        if self.hi is not None and value > self.hi:
            raise ConfigError(f"{key}: {shown(value)} above maximum {_num(self.hi)}")
        return value

    def check_type(self, value, key: str | None = None):
        """``value`` if it is of this option's type (a name among the choices, if any),
        else ConfigError naming ``key`` and the range; the range itself is not checked."""
        key = key or self.key
        if self.kind is str:
            if not isinstance(value, str):
                raise ConfigError(f"{key}: {shown(value)} is not a name")
            if self.choices and value not in self.choices:
                raise ConfigError(f"{key}: {shown(value)} is not one of {', '.join(self.choices)}")
            return value
        if self.kind is bool:
            if not isinstance(value, bool):
                raise ConfigError(f"{key}: {shown(value)} is not true or false")
            return value
        numeric = (int,) if self.kind is int else (int, float)
        if (
            isinstance(value, bool)
            or not isinstance(value, numeric)
            or (isinstance(value, float) and not math.isfinite(value))
        ):
            what = "an integer" if self.kind is int else "a number"
            raise ConfigError(f"{key}: {shown(value)} is not {what} ({self.range_text()})")
        return value

    def range_text(self) -> str:
        return f"{_num(self.lo)}..{_num(self.hi)}"

    def argtype(self, what: str | None = None):
        """An argparse ``type`` for this option (whole or decimal number in range; a
        TDMA setting's range is rtn_tdma_cfg_check()'s, so only its form is checked
        here and the range is left to validate(), which the commands run)."""
        what = what or self.label or self.name.replace("_", " ")
        if self.kind is int:
            return integer(what, self.lo, self.hi, in_range=not self.c_checked)
        return number(what, self.lo, self.hi)

    def add_to(self, parser: argparse.ArgumentParser, *flags: str, **kw) -> None:
        """Add this option to ``parser`` under ``flags`` with its type, default and help."""
        kw.setdefault("dest", self.name)
        kw.setdefault("default", self.default)
        unit = f", {self.unit}" if self.unit else ""
        kw.setdefault("help", f"{self.help} ({self.range_text()}{unit}; default {self.default})")
        parser.add_argument(*flags, type=self.argtype(), **kw)


_ROWS = (
    # the real-time thread
    Option(
        "rt.cpu",
        int,
        None,
        0,
        (os.cpu_count() or 1) - 1,
        "",
        False,
        "CPU the real-time thread is pinned to (none: not pinned)",
    ),
    Option("rt.priority", int, 90, 1, 99, "", False, "SCHED_FIFO priority of the real-time thread"),
    Option(
        "rt.allow_fallback",
        bool,
        False,
        None,
        None,
        "",
        False,
        "run on SCHED_OTHER when SCHED_FIFO is refused",
    ),
    Option(
        "rt.wake_early",
        bool,
        False,
        None,
        None,
        "",
        False,
        "wake a learnt margin before each slot and spin to it: slots on time, "
        "for CPU spent spinning",
    ),
    # the wire and the lab's clock model
    Option(
        "link.link_rate_mbps",
        int,
        _C.link_rate_mbps,
        0,
        lib.RTN_TDMA_MAX_LINK_RATE_MBPS,
        "Mbit/s",
        True,
        "modelled link rate that paces frames and sizes slots (0: unpaced)",
        c_field="link_rate_mbps",
    ),
    # a second port: IEEE 802.1CB frame replication and elimination (rtn_station_frer.h)
    Option(
        "link.redundant_dev",
        str,
        None,
        None,
        None,
        "",
        False,
        "second device: redundant streams go out on both (none: one port)",
    ),
    Option(
        "link.frer_history_len",
        int,
        lib.RTN_STATION_FRER_HISTORY,
        lib.RTN_FRER_HISTORY_MIN,
        lib.RTN_FRER_HISTORY_MAX,
        "packets",
        False,
        "802.1CB frerSeqRcvyHistoryLength: the largest jump a stream takes (a loss on both "
        "wires, one wire trailing); beyond it frames are rogue until the reset timer",
    ),
    Option(
        "link.frer_reset_ms",
        int,
        lib.RTN_FRER_DEFAULT_RESET_MS,
        0,
        3600000,
        "ms",
        False,
        "802.1CB frerSeqRcvyResetMSec: a silent stream takes any sequence again after "
        "this (0: never)",
    ),
    Option(
        "clock.offset_ns",
        int,
        0,
        -(10**12) + 1,
        10**12 - 1,
        "ns",
        False,
        "lab clock model: offset of the station's clock",
    ),
    Option(
        "clock.drift_ppm",
        float,
        0.0,
        -1000,
        1000,
        "ppm",
        False,
        "lab clock model: drift of the station's clock",
    ),
    # TDMA: the grid (changing it needs a detach)
    Option(
        "tdma.cycle_us",
        int,
        None,
        lib.RTN_TDMA_MIN_CYCLE_NS // _US,
        lib.RTN_TDMA_MAX_CYCLE_NS // _US,
        "us",
        False,
        "cycle period (a master needs it; a slave learns it from Sync)",
        c_field="cycle_ns",
        c_scale=_US,
    ),
    Option(
        "tdma.backup_offset_us",
        int,
        None,
        1,
        lib.RTN_TDMA_MAX_CYCLE_NS // _US - 1,
        "us",
        False,
        "backup master: its Sync this long after the cycle start (below the cycle)",
        c_field="backup_offset_ns",
        c_scale=_US,
        c_none=-1,
    ),
    # TDMA: staged by a running engine at a cycle start (rtn_tdma_cfg_live)
    Option(
        "tdma.cal_rounds",
        int,
        _C.cal_rounds,
        0,
        lib.RTN_TDMA_MAX_CAL_ROUNDS,
        "rounds",
        True,
        "calibration rounds (0: none)",
        label="calibration rounds",
        c_field="cal_rounds",
        flag="-c",
        flag_commands=("master", "slave"),
    ),
    Option(
        "tdma.max_slot_id",
        int,
        _C.max_slot_id,
        0,
        lib.RTN_TDMA_MAX_SLOTS - 1,
        "",
        True,
        "highest slot id",
        label="max slot id",
        c_field="max_slot_id",
        flag="-i",
        flag_commands=("master", "slave"),
    ),
    Option(
        "tdma.max_cal_requests",
        int,
        _C.max_cal_requests,
        1,
        lib.RTN_TDMA_MAX_CAL,
        "requests",
        True,
        "calibration requests a master holds at once",
        label="max calibration requests",
        c_field="max_cal_requests",
        flag="-m",
        flag_commands=("master",),
    ),
    Option(
        "tdma.guard_ns",
        int,
        _C.guard_ns,
        0,
        lib.RTN_TDMA_MAX_GUARD_NS,
        "ns",
        True,
        "guard after a slot's frame: the lateness a slot tolerates",
        c_field="guard_ns",
    ),
    Option(
        "tdma.sync_loss_cycles",
        int,
        _C.sync_loss_cycles,
        1,
        lib.RTN_TDMA_MAX_SYNC_LOSS,
        "cycles",
        True,
        "cycles without Sync before a slave stops sending",
        c_field="sync_loss_cycles",
    ),
    Option(
        "tdma.listen_cycles",
        int,
        _C.listen_cycles,
        0,
        lib.RTN_TDMA_MAX_LISTEN,
        "cycles",
        True,
        "cycles a master listens for another active master before it first sends Sync (RTnet: 3)",
        c_field="listen_cycles",
    ),
    Option(
        "tdma.mtu",
        int,
        lib.RTN_TDMA_MAX_SLOT_SIZE,
        lib.RTN_TDMA_MIN_SLOT_SIZE,
        lib.RTN_TDMA_MAX_SLOT_SIZE,
        "bytes",
        True,
        "the device MTU slot sizes are checked against",
        toml=False,
        c_field="mtu",
    ),
    # one TDMA slot ([[tdma.slot]], rtmac tdma <dev> slot)
    Option(
        "tdma.slot.id", int, None, 0, lib.RTN_TDMA_MAX_SLOTS - 1, "", True, "slot id", c_field="id"
    ),
    Option(
        "tdma.slot.offset_us",
        int,
        None,
        0,
        lib.RTN_TDMA_MAX_OFFSET_NS // _US,
        "us",
        True,
        "slot offset after the cycle start",
        c_field="offset_ns",
        c_scale=_US,
    ),
    Option(
        "tdma.slot.period",
        int,
        1,
        1,
        lib.RTN_TDMA_MAX_PERIOD,
        "cycles",
        True,
        'slot period (the y of phasing "x/y", which files and rtmac give)',
        toml=False,
        c_field="period",
    ),
    Option(
        "tdma.slot.size",
        int,
        lib.RTN_TDMA_MAX_SLOT_SIZE,
        lib.RTN_TDMA_MIN_SLOT_SIZE,
        lib.RTN_TDMA_MAX_SLOT_SIZE,
        "bytes",
        True,
        "slot payload size (frames up to size + 14)",
        c_field="size",
    ),
    Option(
        "tdma.slot.joint",
        int,
        None,
        0,
        lib.RTN_TDMA_MAX_SLOTS - 1,
        "",
        True,
        "slot whose queue this slot shares",
        c_field="joint",
        c_none=-1,
    ),
    Option(
        "tdma.slot.window_us",
        int,
        0,
        0,
        lib.RTN_TDMA_MAX_OFFSET_NS // _US,
        "us",
        True,
        "transmit window (0: RTnet's one frame plus the guard)",
        c_field="window_ns",
        c_scale=_US,
    ),
    # what rides on the slots
    Option(
        "vnic.slot", int, 1, 0, lib.RTN_TDMA_MAX_SLOTS - 1, "", False, "TDMA slot the VNIC sends in"
    ),
    Option(
        "vnic.mode",
        str,
        "batched",
        None,
        None,
        "",
        False,
        "batched: the VNIC's pump thread readies frames for the NRT windows in batches; "
        "per-packet: it wakes the RT thread for each packet (TAP without offloads)",
        choices=("batched", "per-packet"),
    ),
    # real-time IPv4 (rtnet.ipv4_service): the echo replies the RT thread sends and rtping
    Option(
        "ip.icmp_slot",
        int,
        0,
        0,
        lib.RTN_TDMA_MAX_SLOTS - 1,
        "",
        False,
        "TDMA slot ICMP echo replies and rtping's requests leave in",
        toml=False,
    ),
    # a channel's defaults are the C core's (rtn_chan_opts_init), for files, rtnetd and
    # the application API alike
    Option(
        "channel.slot",
        int,
        _CH.slot,
        0,
        lib.RTN_TDMA_MAX_SLOTS - 1,
        "",
        False,
        "TDMA slot the channel sends in",
    ),
    Option(
        "channel.prio",
        int,
        _CH.prio,
        0,
        lib.RTN_TDMA_PRIOS - 1,
        "",
        False,
        "queue priority of the channel's frames (0: highest)",
    ),
    Option(
        "channel.max_size",
        int,
        _CH.max_size,
        14,
        1514,
        "bytes",
        False,
        "largest frame, Ethernet header included",
    ),
    Option(
        "channel.lifetime_us",
        int,
        _CH.lifetime_ns // _US,
        0,
        lib.RTN_CHAN_LIFETIME_MAX_NS // _US,
        "us",
        False,
        "a message not on the wire by its scheduled time plus this is dropped and "
        "counted (0: never)",
    ),
    Option(
        "channel.redundant",
        bool,
        False,
        None,
        None,
        "",
        False,
        "a station with two ports sends the channel's EtherType on both",
    ),
    Option(
        "channel.depth",
        int,
        _CH.depth,
        1,
        lib.RTN_CHAN_MAX_DEPTH,
        "messages",
        False,
        "messages per ring, a power of two",
        toml=False,
    ),
    # RTcfg as rtnetctl up runs it (the server's defaults are RTnet's rtcfg's, rtcfg.step)
    Option(
        "rtcfg.enabled",
        bool,
        False,
        None,
        None,
        "",
        False,
        "rtnetctl up brings the segment up with RTcfg (rtnet.conf: always, unless --no-rtcfg)",
    ),
    Option(
        "rtcfg.offset_us",
        int,
        200,
        1,
        lib.RTN_TDMA_MAX_OFFSET_NS // _US,
        "us",
        False,
        "server: the k-th slave's slot 0 at k times this (rtnet.conf TDMA_OFFSET)",
    ),
    Option(
        "rtcfg.timeout_s",
        int,
        120,
        0,
        86_400,
        "s",
        False,
        "the whole RTcfg bring-up of rtnetctl up (0: wait forever, as RTnet)",
    ),
    Option(
        "rtcfg.period_ms",
        int,
        step.DEFAULT_PERIOD_MS,
        1,
        step.MAX_PERIOD_MS,
        "ms",
        False,
        "server: Stage 1 invitations and timer tick (rtcfg server -p)",
    ),
    Option(
        "rtcfg.heartbeat_ms",
        int,
        step.DEFAULT_HEARTBEAT_MS,
        0,
        step.MAX_HEARTBEAT_MS,
        "ms",
        False,
        "server: the clients' heartbeat period (0: none; rtcfg server -h)",
    ),
    Option(
        "rtcfg.threshold",
        int,
        step.DEFAULT_THRESHOLD,
        1,
        255,
        "heartbeats",
        False,
        "server: missed heartbeats before a station is dead (rtcfg server -t)",
    ),
)

OPTIONS: dict[str, Option] = {o.key: o for o in _ROWS}


def section(name: str) -> list[Option]:
    """The options of one rtnet.toml section (``tdma``, ``tdma.slot``, ...)."""
    return [o for o in _ROWS if o.section == name]


def toml_keys(name: str) -> set[str]:
    """The keys a file may give in section ``name`` (besides ones that are not numbers)."""
    return {o.name for o in section(name) if o.toml}


def defaults(name: str) -> dict:
    """``name -> default`` of the options of a section that have one."""
    return {o.name: o.default for o in section(name) if o.default is not None}


def c_fields(*sections: str) -> list[Option]:
    """The options of these sections that a field of the C TDMA configuration holds."""
    return [o for name in sections for o in section(name) if o.c_field]


def flags(command: str) -> dict[str, str]:
    """``flag -> option key`` of rtmac's ``tdma <dev> <command>`` (tdmacfg's flags)."""
    return {o.flag: o.key for o in _ROWS if command in o.flag_commands}


def table_text() -> str:
    """The table as ``rtnetctl options`` prints it."""
    lines = [f"{'option':24} {'type':5} {'default':>9} {'range':>22} {'unit':8} {'live':4}  help"]
    for o in _ROWS:
        rng = "|".join(o.choices) if o.kind in (bool, str) else o.range_text()
        dflt = "-" if o.default is None else str(o.default).lower()
        lines.append(
            f"{o.key:24} {o.kind.__name__:5} {dflt:>9} {rng:>22} {o.unit:8} "
            f"{'yes' if o.live else 'no':4}  {o.help}"
        )
    return "\n".join(lines)
