"""Station configuration: rtnet.toml, or RTnet's own rtnet.conf and tdma.conf.

Everything is checked before anything is started; an error is one line
that names the file, the key (or line) and the allowed range, e.g.
``rtnet.toml: tdma.cycle_us: 50 outside the supported range 100..1000000``.
A TDMA setting's range is judged by the C core's one rule (rtn_tdma_cfg_check(),
through rtmac.tdma_config.validate()), whose message follows the file and the
section; the files' readers check only what C cannot see (types, names, the
form of a line or value).  :func:`load` picks
the format from the file: ``*.toml`` is TOML, anything else is read as
RTnet's shell-variable rtnet.conf.  A file must be UTF-8 text (a UTF-8 byte
order mark is skipped) of at most 1 MiB.

rtnet.toml (see examples/rtnet.toml for a commented one)::

    [station]  name, device, mac, xdp_mode (auto|native|skb), zerocopy (auto|on|off),
               ethertypes
    [rt]       cpu, priority, allow_fallback
    [link]     link_rate_mbps, redundant_dev, frer_history_len, frer_reset_ms
    [clock]    offset_ns, drift_ppm            (lab clock model)
    [tdma]     role (master|backup|slave), cycle_us, backup_offset_us, cal_rounds,
               max_slot_id, max_cal_requests, guard_ns, sync_loss_cycles, listen_cycles
    [[tdma.slot]]  id, offset_us, phasing "x/y", size, joint, window_us (a transmit
               window; without it RTnet's slot: one frame plus the guard)
    [nomac]    (instead of [tdma])
    [vnic]     enabled, mode (batched|per-packet), address (CIDR), slot, name
    [[channel]] ethertype, slot, prio, max_size, lifetime_us, redundant
    [control]  group, status_group
    [rtcfg]    enabled, slaves (a master's, by IP), offset_us, stage2_src, stage2_dst,
               stage2_cmds, timeout_s, period_ms, heartbeat_ms, threshold

rtnet.conf (read by rtnet.rtnetconf) follows ``rtnet start`` (RTNET_REFERENCE.md 3.7-3.9): in simple
mode a master gets ``master TDMA_CYCLE`` and slot 0 at 0, and the k-th
station of TDMA_SLAVES (k = 1, 2, ...) gets slot 0 at k * TDMA_OFFSET, which
is what the master would hand it in its RTcfg stage-1 fragment.  With
TDMA_CONFIG the extended-mode tdma.conf section whose ``ip`` (or ``mac``) is
this station's is used; beyond RTnet, a ``window <slot id> <us>`` line in a
section gives that slot a transmit window (RTnet's files never contain it).
A slave's cycle is learnt from the master's Sync frames.

With RTcfg (``rtnetctl up``'s default for rtnet.conf, as ``rtnet start``
does; rtnet.toml: ``[rtcfg] enabled``) the slots above are what the master
hands out instead: TDMA_MODE=master makes the station the RTcfg server,
adding every station of TDMA_SLAVES (simple mode) or every ``slave:`` and
``backup-master:`` section of tdma.conf (extended mode) with its stage-1
commands (rtnet.rtcfg.setup) and STAGE_2_SRC as the stage-2 file; its vnic0
comes up with IPADDR (and NETMASK).  TDMA_MODE=slave makes it a client that
starts without slots and needs nothing else: IPADDR is optional (default:
the device's address), and STAGE_2_DST and STAGE_2_CMDS say what it does
with stage 2.  Project extensions to rtnet.conf: RTNET_DEV (default rteth0),
TDMA_CAL_ROUNDS (default 100) and RTCFG_TIMEOUT (seconds for the whole RTcfg
bring-up, default 120, 0 = wait forever as RTnet does).
"""

from __future__ import annotations

import ipaddress
import os
import re
import sys
import tomllib
from dataclasses import dataclass, replace

from rtmac.tdma_config import Slot, TdmaConfig, effective_slot, validate

from . import options
from ._lowlevel import lib
from .echo import PING_ETHERTYPE  # the echo service's, always real-time (named here as before)
from .errors import ConfigError, RtcfgError
from .mac import CANONICAL_MAC, EXAMPLE_MAC
from .messages import one_line, shown, shown_path
from .names import interface_name_problem
from .rtcfg import setup as rtcfg_setup
from .station import ZEROCOPY_ARGS, RtSettings
from .userfiles import Refused, read_regular

XDP_MODES = ("auto", "native", "skb")
# AF_XDP zero-copy: where the driver offers it (auto), demanded (on: refused with one line
# where the driver has none), or never (off)
ZEROCOPY_MODES = tuple(ZEROCOPY_ARGS)
MAX_FILE_BYTES = 1 << 20  # configuration files are a few hundred bytes
MAX_VALUE_CHARS = 4096  # an rtnet.conf value after $VAR expansion
MIN_ETHERTYPE = 0x0600  # below are 802.3 length fields, not EtherTypes
# Steering one of these to the real-time path would take it away from Linux.
LINUX_ETHERTYPES = {
    0x0800: "IPv4",
    0x0806: "ARP",
    0x8035: "RARP",
    0x8100: "802.1Q VLAN",
    0x86DD: "IPv6",
    0x8847: "MPLS",
    0x8848: "MPLS multicast",
    0x8863: "PPPoE discovery",
    0x8864: "PPPoE session",
    0x888E: "802.1X",
    0x88A8: "802.1ad VLAN",
    0x88CC: "LLDP",
    0x88F7: "PTP",
    0x9100: "VLAN double tag",
}
# The stack's own protocols, always real-time: not for applications.
STACK_ETHERTYPES = {0x9021: "RTmac", 0x9022: "RTcfg"}
_GROUP = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}")


@dataclass(frozen=True)
class VnicConfig:
    enabled: bool = False
    name: str = "vnic0"
    mode: str = options.OPTIONS["vnic.mode"].default
    address: str | None = None  # CIDR
    slot: int = options.OPTIONS["vnic.slot"].default


@dataclass(frozen=True)
class ChannelConfig:
    ethertype: int
    slot: int = options.OPTIONS["channel.slot"].default
    prio: int = options.OPTIONS["channel.prio"].default
    max_size: int = options.OPTIONS["channel.max_size"].default
    lifetime_us: int = options.OPTIONS["channel.lifetime_us"].default
    redundant: bool = options.OPTIONS["channel.redundant"].default


@dataclass(frozen=True)
class StationConfig:
    """Everything rtnetd needs to run one station."""

    source: str = "<defaults>"
    name: str = "station"
    device: str = "rteth0"
    mac: str | None = None
    xdp_mode: str = "auto"
    zerocopy: str = "auto"
    ethertypes: tuple = ()
    rt: RtSettings = RtSettings()
    link_rate_mbps: int = options.OPTIONS["link.link_rate_mbps"].default
    redundant_dev: str | None = None  # a second port (IEEE 802.1CB)
    frer_history_len: int = options.OPTIONS["link.frer_history_len"].default
    frer_reset_ms: int = options.OPTIONS["link.frer_reset_ms"].default
    clock_offset_ns: int = options.OPTIONS["clock.offset_ns"].default
    drift_ppm: float = options.OPTIONS["clock.drift_ppm"].default
    discipline: str = "none"  # tdma | nomac | none
    tdma: TdmaConfig | None = None
    vnic: VnicConfig = VnicConfig()
    channels: tuple = ()
    group: str | None = None  # may change things, besides root
    status_group: str | None = None  # may read status / tdma.show / tdma.misses
    ip: str | None = None  # real-time IPv4 address: IPADDR or station.ip
    # (rtnet.ipv4_service; RTcfg stage 1 may replace it)
    rtcfg: rtcfg_setup.RtcfgSetup | None = None  # what rtnetctl up runs (None: no RTcfg)

    def steered_ethertypes(self) -> tuple:
        """EtherTypes the XDP program hands to the real-time path (besides RTmac/RTcfg)."""
        out = []
        for et in (*self.ethertypes, *(c.ethertype for c in self.channels), PING_ETHERTYPE):
            if et not in out:
                out.append(et)
        return tuple(out)


# -- checking values ------------------------------------------------------------------


def key_name(key) -> str:
    """A key or word from a file as an error names it: as written if plain, else quoted."""
    plain = isinstance(key, str) and re.fullmatch(r"[A-Za-z0-9_.:-]{1,40}", key)
    return key if plain else shown(key)


def read_text(path: str) -> str:
    """The text of a configuration file, or ConfigError: one line naming the file."""
    if not isinstance(path, str) or "\0" in path:
        raise ConfigError(f"{shown(path)}: not a file name (NUL byte)")
    name = shown_path(path)
    try:
        data = read_regular(path, MAX_FILE_BYTES)
    except Refused as exc:
        if exc.too_large:
            raise ConfigError(
                f"{name}: larger than {MAX_FILE_BYTES >> 20} MiB, not a configuration"
            ) from None
        raise ConfigError(str(exc)) from None
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ConfigError(f"{name}: UTF-16 text; save it as UTF-8")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"{name}: line {line}: not UTF-8 text (byte {data[exc.start]:#04x})"
        ) from None


class _Checker:
    """The checks of one file: every refusal is one line naming the file and the key."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, key: str, message: str):
        raise ConfigError(one_line(f"{self.source}: {key}: {message}"))

    def fail_file(self, message: str):
        raise ConfigError(one_line(f"{self.source}: {message}"))

    def integer(self, key, value, lo, hi):
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(key, f"{shown(value)} is not an integer ({lo}..{hi})")
        if value < lo:
            self.fail(key, f"{shown(value)} below minimum {lo}")
        if value > hi:
            self.fail(key, f"{shown(value)} above maximum {hi}")
        return value

    def option(self, option, value, key=None):
        """``value`` checked by the option table's rule (rtnet.options), named ``key``; a
        TDMA setting's type only: its range is C's, judged when :meth:`tdma` validates."""
        check = option.check_type if option.c_checked else option.check
        try:
            return check(value, key)
        except ConfigError as exc:
            raise ConfigError(one_line(f"{self.source}: {exc}")) from None

    def section(
        self, name: str, table: dict, extra: set = frozenset(), where: str | None = None
    ) -> dict:
        """The numeric keys of section ``name`` checked against the option table,
        defaults filled in; other keys must be in ``extra`` (the caller checks
        those).  ``where`` names the table in messages (``channel[2]``)."""
        where = where or name
        self.known(where, table, options.toml_keys(name) | set(extra))
        out = {}
        for opt in options.section(name):
            if opt.toml and opt.name in table:
                out[opt.name] = self.option(opt, table[opt.name], f"{where}.{opt.name}")
            elif opt.toml and opt.default is not None:
                out[opt.name] = opt.default
        return out

    def number(self, key, value, lo, hi):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(key, f"{shown(value)} is not a number ({lo}..{hi})")
        if not lo <= value <= hi:  # also refuses nan
            self.fail(key, f"{shown(value)} outside {lo}..{hi}")
        return float(value)

    def boolean(self, key, value):
        if not isinstance(value, bool):
            self.fail(key, f"{shown(value)} is not true or false")
        return value

    def choice(self, key, value, allowed):
        if not isinstance(value, str) or value not in allowed:
            self.fail(key, f"{shown(value)} is not one of {', '.join(allowed)}")
        return value

    def string(self, key, value, pattern: re.Pattern, what: str):
        if not isinstance(value, str) or not pattern.fullmatch(value):
            self.fail(key, f"{shown(value)} is not {what}")
        return value

    def ifname(self, key, value):
        problem = interface_name_problem(value)
        if problem:
            self.fail(
                key,
                f"{shown(value)}: {problem} (the kernel takes 1..15 bytes, "
                "no '/', ':' or white space, not '.' or '..')",
            )
        return value

    def ethertype(self, key, value):
        allowed = f"allowed: {MIN_ETHERTYPE:#06x}..0xffff except the ones Linux or rtnet use"
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(key, f"{shown(value)} is not an integer ({allowed})")
        if 0 <= value < MIN_ETHERTYPE:
            self.fail(key, f"{value:#06x} is an 802.3 length, not an EtherType ({allowed})")
        if not 0 <= value <= 0xFFFF:
            self.fail(key, f"{shown(value)} outside {MIN_ETHERTYPE:#06x}..0xffff")
        if value in LINUX_ETHERTYPES:
            self.fail(
                key, f"{value:#06x} is {LINUX_ETHERTYPES[value]}, which Linux needs ({allowed})"
            )
        if value in STACK_ETHERTYPES:
            self.fail(
                key, f"{value:#06x} is {STACK_ETHERTYPES[value]}, always real-time ({allowed})"
            )
        return value

    def table(self, key, value):
        if not isinstance(value, dict):
            self.fail(key, "must be a table")
        return value

    def known(self, section: str, table: dict, allowed):
        for k in table:
            if k not in allowed:
                self.fail(
                    f"{section}.{key_name(k)}" if section else key_name(k),
                    f"unknown key (allowed: {', '.join(sorted(allowed))})",
                )

    def slot_exists(self, key, tdma: TdmaConfig | None, slot_id: int):
        """Traffic for a slot the schedule lacks would be dropped: refuse it here."""
        if tdma is not None and effective_slot(tdma, slot_id) is None:
            ids = ", ".join(map(str, sorted(tdma.slots))) or "none"
            fallback = " (nor slot 0, which slot 1 falls back to)" if slot_id == 1 else ""
            self.fail(
                key,
                f"slot {slot_id} is not in the TDMA schedule{fallback}; configured slots: {ids}",
            )

    def tdma(self, key, build):
        """``build()`` validated by rtmac.tdma_config.validate (rtn_tdma_cfg_check()), its
        message under ``key``; a message about one setting of the TOML section ``key``
        names it as the file does (``tdma.cycle_us: ...``)."""
        try:
            return validate(build())
        except ConfigError as exc:
            name, sep, rest = str(exc).partition(": ")
            if sep and key in ("tdma", "link") and name in options.toml_keys(key):
                self.fail(f"{key}.{name}", rest)
            self.fail(key, str(exc))


def parse_phasing(ck: _Checker, key: str, text) -> tuple[int, int]:
    """``x/y`` -> (x, y): the form only; 1 <= x <= y and y's range are C's rules."""
    # ASCII digits only (int() would take other scripts' digits), few enough to convert
    m = re.fullmatch(r"([0-9]{1,9})/([0-9]{1,9})", text) if isinstance(text, str) else None
    if not m:
        ck.fail(
            key,
            f"{shown(text)} is not x/y (1 <= x <= y <= {options.OPTIONS['tdma.slot.period'].hi})",
        )
    return int(m.group(1)), int(m.group(2))


def _ipv4_var(ck, key, text) -> str:
    try:
        if not isinstance(text, str):
            raise ValueError
        return str(ipaddress.IPv4Address(text))
    except ValueError:
        ck.fail(key, f"{shown(text)} is not an IPv4 address")


def _station_ip(ck, value) -> str:
    try:
        ip = ipaddress.IPv4Address(value) if isinstance(value, str) else None
    except ValueError:
        ip = None
    if ip is None or ip.is_multicast or ip.is_unspecified or int(ip) == 0xFFFFFFFF:
        ck.fail("station.ip", f"{shown(value)} is not a unicast IPv4 address")
    return str(ip)


# -- TOML -----------------------------------------------------------------------------

_SECTIONS = {
    "station",
    "rt",
    "link",
    "clock",
    "tdma",
    "nomac",
    "vnic",
    "channel",
    "control",
    "rtcfg",
}


def parse_toml(
    text: str, source: str = "rtnet.toml", *, rtcfg: bool | None = None
) -> StationConfig:
    """``rtcfg``: True or False overrides ``[rtcfg] enabled`` (rtnetctl up --rtcfg)."""
    ck = _Checker(source)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        ck.fail_file(str(exc))
    except RecursionError:  # tomllib descends once per level of nesting
        ck.fail_file("arrays or tables nested too deeply")
    except ValueError as exc:  # int() refuses numbers of more than 4300 digits
        limit = sys.get_int_max_str_digits()
        long_number = re.search(r"[0-9a-fA-F_]{%d,}" % (limit + 1), text)
        if long_number:
            ck.fail(
                f"line {text.count(chr(10), 0, long_number.start()) + 1}",
                f"a number of {long_number.end() - long_number.start()} digits (at most {limit})",
            )
        ck.fail_file(f"unreadable value: {str(exc).split(';')[0]}")
    ck.known("", doc, _SECTIONS)
    cfg = {}

    st = ck.table("station", doc.get("station", {}))
    ck.known("station", st, {"name", "device", "mac", "xdp_mode", "zerocopy", "ethertypes", "ip"})
    cfg["name"] = ck.string(
        "station.name",
        st.get("name", "station"),
        re.compile(r"[A-Za-z0-9_.-]{1,32}"),
        "1-32 letters, digits, . _ -",
    )
    cfg["device"] = ck.ifname("station.device", st.get("device", "rteth0"))
    if "mac" in st:
        cfg["mac"] = ck.string("station.mac", st["mac"], CANONICAL_MAC, f"a MAC like {EXAMPLE_MAC}")
    if "ip" in st:  # the real-time IPv4 address, as rtnet.conf's IPADDR
        cfg["ip"] = _station_ip(ck, st["ip"])
    cfg["xdp_mode"] = ck.choice("station.xdp_mode", st.get("xdp_mode", "auto"), XDP_MODES)
    cfg["zerocopy"] = ck.choice("station.zerocopy", st.get("zerocopy", "auto"), ZEROCOPY_MODES)
    ets = st.get("ethertypes", [])
    if not isinstance(ets, list):
        ck.fail("station.ethertypes", "must be a list of integers like [0x88B5]")
    cfg["ethertypes"] = tuple(ck.ethertype("station.ethertypes", e) for e in ets)

    rt = ck.table("rt", doc.get("rt", {}))
    cfg["rt"] = RtSettings(**ck.section("rt", rt))
    link = ck.table("link", doc.get("link", {}))
    cfg.update(_toml_link(ck, link, cfg["device"]))
    clock = ck.section("clock", ck.table("clock", doc.get("clock", {})))
    cfg["clock_offset_ns"], cfg["drift_ppm"] = clock["offset_ns"], clock["drift_ppm"]

    if "tdma" in doc and "nomac" in doc:
        ck.fail("tdma", "[tdma] and [nomac] exclude each other")
    if "tdma" in doc:
        cfg["discipline"] = "tdma"
        cfg["tdma"] = _toml_tdma(ck, ck.table("tdma", doc["tdma"]), cfg["link_rate_mbps"])
    elif "nomac" in doc:
        ck.known("nomac", ck.table("nomac", doc["nomac"]), set())
        cfg["discipline"] = "nomac"

    vn = ck.table("vnic", doc.get("vnic", {}))
    vnic = ck.section("vnic", vn, {"enabled", "name", "address"})
    address = vn.get("address")
    if address is not None:
        try:
            if not isinstance(address, str) or "/" not in address:
                raise ValueError
            ipaddress.ip_interface(address)
        except ValueError:
            ck.fail(
                "vnic.address", f"{shown(address)} is not an address with prefix like 198.18.1.1/24"
            )
    cfg["vnic"] = VnicConfig(
        enabled=ck.boolean("vnic.enabled", vn.get("enabled", bool(vn))),
        name=ck.ifname("vnic.name", vn.get("name", "vnic0")),
        mode=vnic["mode"],
        address=address,
        slot=vnic["slot"],
    )

    chans = doc.get("channel", [])
    if not isinstance(chans, list):
        ck.fail("channel", "use [[channel]] tables")
    out = []
    for i, ch in enumerate(chans):
        key = f"channel[{i}]"
        values = ck.section("channel", ck.table(key, ch), {"ethertype"}, key)
        if "ethertype" not in ch:
            ck.fail(f"{key}.ethertype", "missing")
        et = ck.ethertype(f"{key}.ethertype", ch["ethertype"])
        if et == PING_ETHERTYPE:
            ck.fail(f"{key}.ethertype", f"{et:#06x} is the daemons' echo service")
        ck.slot_exists(f"{key}.slot", cfg.get("tdma"), values["slot"])
        out.append(ChannelConfig(ethertype=et, **values))
    cfg["channels"] = tuple(out)
    steered = StationConfig(ethertypes=cfg["ethertypes"], channels=cfg["channels"])
    if len(steered.steered_ethertypes()) > lib.RTN_XSK_MAX_ETHERTYPES:
        ck.fail(
            "station.ethertypes",
            f"{len(steered.steered_ethertypes())} real-time "
            f"EtherTypes with the [[channel]] ones and the echo service "
            f"{PING_ETHERTYPE:#06x}; the XDP program steers at most "
            f"{lib.RTN_XSK_MAX_ETHERTYPES}",
        )

    ctl = ck.table("control", doc.get("control", {}))
    ck.known("control", ctl, {"group", "status_group"})
    for k in ("group", "status_group"):
        if k in ctl:
            cfg[k] = ck.string(f"control.{k}", ctl[k], _GROUP, "a group name")
    cfg["rtcfg"] = _toml_rtcfg(ck, ck.table("rtcfg", doc.get("rtcfg", {})), cfg, rtcfg)
    # an RTcfg client's VNIC opens once the server gave it the slot
    if cfg["vnic"].enabled and not (cfg["rtcfg"] and cfg["rtcfg"].role == "client"):
        ck.slot_exists("vnic.slot", cfg.get("tdma"), cfg["vnic"].slot)
    return StationConfig(source=source, **cfg)


def _toml_rtcfg(ck: _Checker, t: dict, cfg: dict, override: bool | None):
    kw = ck.section("rtcfg", t, {"slaves", "stage2_src", "stage2_dst", "stage2_cmds"})
    enabled = kw.pop("enabled")
    enabled = enabled if override is None else override
    offset = kw.pop("offset_us")
    if not enabled:
        return None
    tdma = cfg.get("tdma")
    if tdma is None:
        ck.fail("rtcfg", "RTcfg hands out TDMA slots: it needs a [tdma] section")
    server = tdma.role == "master" and not tdma.backup_offset_us
    where = {k: f"rtcfg.{k}" for k in ("slaves", "stage2_src", "stage2_dst", "stage2_cmds")}
    given = {k: t[k] for k in where if k in t}
    for k, v in given.items():
        if k != "slaves" and not isinstance(v, str):
            ck.fail(where[k], f"{shown(v)} is not a text")
    mine = ("slaves", "stage2_src") if server else ("stage2_dst", "stage2_cmds")
    for k in given:
        if k not in mine:
            other = "client (TDMA slave)" if server else "server (TDMA master)"
            ck.fail(where[k], f"only for a {other}")
    base = os.path.dirname(ck.source)
    if server:
        slaves = given.get("slaves", [])
        if not isinstance(slaves, list):
            ck.fail(where["slaves"], "must be a list of IPv4 addresses")
        for ip in slaves:
            _ipv4_var(ck, where["slaves"], ip)
        if len(set(slaves)) != len(slaves):
            ck.fail(where["slaves"], "an address is listed twice")
        stage2 = _stage2_src(ck, where["stage2_src"], given.get("stage2_src"), base)
        prefix = None
        if cfg["vnic"].enabled and cfg["vnic"].address:
            prefix = ipaddress.ip_interface(cfg["vnic"].address).network.prefixlen
        # a segment with a VNIC has it on every station: the slaves' come up with their IP
        invs = _rtcfg_call(
            ck,
            "rtcfg.slaves",
            lambda: rtcfg_setup.simple_invitations(
                slaves, offset, prefix, stage2, vnic=cfg["vnic"].enabled, cycle_us=tdma.cycle_us
            ),
        )
        return rtcfg_setup.RtcfgSetup("server", tuple(invs), **kw)
    return _client_setup(
        ck,
        cfg["device"],
        given.get("stage2_dst"),
        given.get("stage2_cmds"),
        base,
        where["stage2_dst"],
        where["stage2_cmds"],
        kw,
    )


def _rtcfg_call(ck: _Checker, key: str, build):
    """``build()`` with an RtcfgError turned into this file's one-line error under ``key``."""
    try:
        return build()
    except RtcfgError as exc:
        ck.fail(key, exc.strerror)


def _in_dir(path: str, base: str) -> str:
    return path if os.path.isabs(path) else os.path.join(base, path)


def _stage2_src(ck: _Checker, key: str, path: str | None, base: str) -> str | None:
    if not path:
        return None
    return _rtcfg_call(ck, key, lambda: rtcfg_setup.read_stage2(_in_dir(path, base)))


def _client_setup(
    ck: _Checker,
    dev: str,
    dst: str | None,
    cmds: str | None,
    base: str,
    dst_key: str,
    cmds_key: str,
    kw: dict,
) -> rtcfg_setup.RtcfgSetup:
    if dst:
        dst = _rtcfg_call(ck, dst_key, lambda: rtcfg_setup.check_destination(_in_dir(dst, base)))
    cmds = _rtcfg_call(ck, cmds_key, lambda: rtcfg_setup.checked_commands(cmds or "", dev))
    return rtcfg_setup.RtcfgSetup("client", stage2_dst=dst or None, stage2_cmds=cmds, **kw)


def _toml_link(ck: _Checker, link: dict, device: str) -> dict:
    """[link]: the modelled rate, and a second port with its 802.1CB recovery settings."""
    out = ck.section("link", link)
    # the rate's range is the TDMA rule's, which judges it whatever the discipline
    ck.tdma("link", lambda: TdmaConfig(role="slave", link_rate_mbps=out["link_rate_mbps"]))
    if "redundant_dev" in out:
        ck.ifname("link.redundant_dev", out["redundant_dev"])
        if out["redundant_dev"] == device:
            ck.fail("link.redundant_dev", f"{shown(device)} is the first port already")
    return out


def _toml_tdma(ck: _Checker, t: dict, link_rate: int) -> TdmaConfig:
    kw = ck.section("tdma", t, {"role", "slot"})
    role = ck.choice("tdma.role", t.get("role", "master"), ("master", "backup", "slave"))
    if role != "slave" and "cycle_us" not in kw:
        ck.fail(
            "tdma.cycle_us", f"a {role} needs it ({options.OPTIONS['tdma.cycle_us'].range_text()})"
        )
    if role == "backup" and "backup_offset_us" not in kw:
        ck.fail("tdma.backup_offset_us", "a backup master needs it")
    if role != "backup" and "backup_offset_us" in kw:
        ck.fail("tdma.backup_offset_us", 'only for role = "backup"')
    kw.update(role="slave" if role == "slave" else "master", link_rate_mbps=link_rate)
    slots = t.get("slot", [])
    if not isinstance(slots, list):
        ck.fail("tdma.slot", "use [[tdma.slot]] tables")
    out = {}
    for i, s in enumerate(slots):
        key = f"tdma.slot[{i}]"
        ck.known(key, ck.table(key, s), options.toml_keys("tdma.slot") | {"phasing"})
        for req in ("id", "offset_us"):
            if req not in s:
                ck.fail(f"{key}.{req}", "missing")
        # types here; ranges, ids beyond max_slot_id (as RTnet's tdmacfg) and the rest: C's
        sl = {
            opt.name: ck.option(opt, s[opt.name], f"{key}.{opt.name}")
            for opt in options.section("tdma.slot")
            if opt.name in s
        }
        if sl["id"] in out:
            ck.fail(f"{key}.id", f"slot {sl['id']} given twice")
        sl["phasing"], sl["period"] = parse_phasing(ck, f"{key}.phasing", s.get("phasing", "1/1"))
        out[sl["id"]] = Slot(**sl)
    return ck.tdma("tdma", lambda: TdmaConfig(**kw, slots=out))


def with_overrides(cfg: StationConfig, **kw) -> StationConfig:
    return replace(cfg, **{k: v for k, v in kw.items() if v is not None})
