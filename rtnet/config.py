"""Station configuration: rtnet.toml, or RTnet's own rtnet.conf and tdma.conf.

Everything is checked before anything is started; an error names the file,
the key and the allowed range, e.g. ``rtnet.toml: tdma.cycle_us: 50 below
minimum 100``.  :func:`load` picks the format from the file: ``*.toml`` is
TOML, anything else is read as RTnet's shell-variable rtnet.conf.

rtnet.toml (see examples/rtnet.toml for a commented one)::

    [station]  name, device, mac, xdp_mode (auto|native|skb), ethertypes
    [rt]       cpu, priority, allow_fallback
    [link]     link_rate_mbps
    [clock]    offset_ns, drift_ppm            (lab clock model)
    [tdma]     role (master|backup|slave), cycle_us, backup_offset_us, cal_rounds,
               max_slot_id, max_cal_requests, guard_ns, sync_loss_cycles
    [[tdma.slot]]  id, offset_us, phasing "x/y", size, joint
    [nomac]    (instead of [tdma])
    [vnic]     enabled, mode (batched|per-packet), address (CIDR), slot, name
    [[channel]] ethertype, slot, prio, max_size
    [control]  group, status_group

rtnet.conf follows ``rtnet start`` (RTNET_REFERENCE.md 3.7-3.9): in simple
mode a master gets ``master TDMA_CYCLE`` and slot 0 at 0, and the k-th
station of TDMA_SLAVES (k = 1, 2, ...) gets slot 0 at k * TDMA_OFFSET, which
is what the master would hand it in its RTcfg stage-1 fragment.  With
TDMA_CONFIG the extended-mode tdma.conf section whose ``ip`` (or ``mac``) is
this station's is used.  A slave's cycle is learnt from the master's Sync
frames.  Project extensions to rtnet.conf: RTNET_DEV (default rteth0) and
TDMA_CAL_ROUNDS (default 100).
"""
from __future__ import annotations

import ipaddress
import os
import re
import shlex
import tomllib
from dataclasses import dataclass, replace

from rtmac.tdma_config import (MAX_CYCLE_US, MAX_OFFSET_US, MAX_PERIOD, MAX_SLOT_ID_LIMIT,
                               MIN_CYCLE_US, MIN_SLOT_SIZE, MAX_MTU, Slot, TdmaConfig, validate)

from .errors import ConfigError
from .station import RtSettings

PING_ETHERTYPE = 0x88B6     # the daemons' echo service (rtnetctl ping)
XDP_MODES = ("auto", "native", "skb")
VNIC_MODES = ("batched", "per-packet")
_IFNAME = re.compile(r"[^\s/:]{1,15}")
_MAC = re.compile(r"[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}")
_GROUP = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}")


@dataclass(frozen=True)
class VnicConfig:
    enabled: bool = False
    name: str = "vnic0"
    mode: str = "batched"
    address: str | None = None     # CIDR
    slot: int = 1


@dataclass(frozen=True)
class ChannelConfig:
    ethertype: int
    slot: int = 0
    prio: int = 15
    max_size: int = 1514


@dataclass(frozen=True)
class StationConfig:
    """Everything rtnetd needs to run one station."""

    source: str = "<defaults>"
    name: str = "station"
    device: str = "rteth0"
    mac: str | None = None
    xdp_mode: str = "auto"
    ethertypes: tuple = ()
    rt: RtSettings = RtSettings()
    link_rate_mbps: int = 100
    clock_offset_ns: int = 0
    drift_ppm: float = 0.0
    discipline: str = "none"        # tdma | nomac | none
    tdma: TdmaConfig | None = None
    vnic: VnicConfig = VnicConfig()
    channels: tuple = ()
    group: str | None = None         # may change things, besides root
    status_group: str | None = None  # may read status / tdma.show
    ip: str | None = None            # from rtnet.conf IPADDR (informational)

    def steered_ethertypes(self) -> tuple:
        """EtherTypes the XDP program hands to the real-time path (besides RTmac/RTcfg)."""
        out = []
        for et in (*self.ethertypes, *(c.ethertype for c in self.channels), PING_ETHERTYPE):
            if et not in out:
                out.append(et)
        return tuple(out)


# -- checking values ------------------------------------------------------------------

class _Checker:
    def __init__(self, source: str):
        self.source = source

    def fail(self, key: str, message: str):
        raise ConfigError(f"{self.source}: {key}: {message}")

    def integer(self, key, value, lo=None, hi=None):
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(key, f"{value!r} is not an integer")
        if lo is not None and value < lo:
            self.fail(key, f"{value} below minimum {lo}")
        if hi is not None and value > hi:
            self.fail(key, f"{value} above maximum {hi}")
        return value

    def number(self, key, value, lo, hi):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(key, f"{value!r} is not a number")
        if not lo <= value <= hi:
            self.fail(key, f"{value} outside {lo}..{hi}")
        return float(value)

    def boolean(self, key, value):
        if not isinstance(value, bool):
            self.fail(key, f"{value!r} is not true or false")
        return value

    def choice(self, key, value, allowed):
        if value not in allowed:
            self.fail(key, f"{value!r} is not one of {', '.join(allowed)}")
        return value

    def string(self, key, value, pattern: re.Pattern, what: str):
        if not isinstance(value, str) or not pattern.fullmatch(value):
            self.fail(key, f"{value!r} is not {what}")
        return value

    def ethertype(self, key, value):
        value = self.integer(key, value, 0x0600, 0xFFFF)
        if value in (0x9021, 0x9022):
            self.fail(key, f"{value:#06x} is RTmac/RTcfg, always real-time")
        return value

    def table(self, key, value):
        if not isinstance(value, dict):
            self.fail(key, "must be a table")
        return value

    def known(self, section: str, table: dict, allowed):
        for k in table:
            if k not in allowed:
                self.fail(f"{section}.{k}" if section else k,
                          f"unknown key (allowed: {', '.join(sorted(allowed))})")

    def tdma(self, key, build):
        """Run the schedule-wide checks of rtmac.tdma_config.validate under ``key``."""
        try:
            return validate(build())
        except ConfigError as exc:
            self.fail(key, str(exc))


def parse_phasing(ck: _Checker, key: str, text) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)/(\d+)", text) if isinstance(text, str) else None
    if not m:
        ck.fail(key, f"{text!r} is not x/y")
    x, y = int(m.group(1)), int(m.group(2))
    if not 1 <= x <= y <= MAX_PERIOD:
        ck.fail(key, f"{text} needs 1 <= x <= y <= {MAX_PERIOD}")
    return x, y


# -- TOML -----------------------------------------------------------------------------

_SECTIONS = {"station", "rt", "link", "clock", "tdma", "nomac", "vnic", "channel", "control"}


def parse_toml(text: str, source: str = "rtnet.toml") -> StationConfig:
    ck = _Checker(source)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    ck.known("", doc, _SECTIONS)
    cfg = {}

    st = ck.table("station", doc.get("station", {}))
    ck.known("station", st, {"name", "device", "mac", "xdp_mode", "ethertypes"})
    cfg["name"] = ck.string("station.name", st.get("name", "station"),
                            re.compile(r"[A-Za-z0-9_.-]{1,32}"), "1-32 letters, digits, . _ -")
    cfg["device"] = ck.string("station.device", st.get("device", "rteth0"), _IFNAME,
                              "an interface name (1-15 characters, no / : or spaces)")
    if "mac" in st:
        cfg["mac"] = ck.string("station.mac", st["mac"], _MAC, "a MAC like 02:52:54:00:00:01")
    cfg["xdp_mode"] = ck.choice("station.xdp_mode", st.get("xdp_mode", "auto"), XDP_MODES)
    ets = st.get("ethertypes", [])
    if not isinstance(ets, list):
        ck.fail("station.ethertypes", "must be a list of integers like [0x88B5]")
    cfg["ethertypes"] = tuple(ck.ethertype("station.ethertypes", e) for e in ets)
    if len(set(cfg["ethertypes"])) > 6:
        ck.fail("station.ethertypes", "at most 6 real-time EtherTypes")

    rt = ck.table("rt", doc.get("rt", {}))
    ck.known("rt", rt, {"cpu", "priority", "allow_fallback"})
    cpus = os.cpu_count() or 1
    cfg["rt"] = RtSettings(
        cpu=ck.integer("rt.cpu", rt["cpu"], 0, cpus - 1) if "cpu" in rt else None,
        priority=ck.integer("rt.priority", rt.get("priority", 90), 1, 99),
        allow_fallback=ck.boolean("rt.allow_fallback", rt.get("allow_fallback", False)))

    link = ck.table("link", doc.get("link", {}))
    ck.known("link", link, {"link_rate_mbps"})
    cfg["link_rate_mbps"] = ck.integer("link.link_rate_mbps", link.get("link_rate_mbps", 100),
                                       0, 400_000)

    clock = ck.table("clock", doc.get("clock", {}))
    ck.known("clock", clock, {"offset_ns", "drift_ppm"})
    cfg["clock_offset_ns"] = ck.integer("clock.offset_ns", clock.get("offset_ns", 0),
                                        -10**12 + 1, 10**12 - 1)
    cfg["drift_ppm"] = ck.number("clock.drift_ppm", clock.get("drift_ppm", 0.0), -1000, 1000)

    if "tdma" in doc and "nomac" in doc:
        ck.fail("tdma", "[tdma] and [nomac] exclude each other")
    if "tdma" in doc:
        cfg["discipline"] = "tdma"
        cfg["tdma"] = _toml_tdma(ck, ck.table("tdma", doc["tdma"]), cfg["link_rate_mbps"])
    elif "nomac" in doc:
        ck.known("nomac", ck.table("nomac", doc["nomac"]), set())
        cfg["discipline"] = "nomac"

    vn = ck.table("vnic", doc.get("vnic", {}))
    ck.known("vnic", vn, {"enabled", "name", "mode", "address", "slot"})
    address = vn.get("address")
    if address is not None:
        try:
            if not isinstance(address, str) or "/" not in address:
                raise ValueError
            ipaddress.ip_interface(address)
        except ValueError:
            ck.fail("vnic.address", f"{address!r} is not an address with prefix like 198.18.1.1/24")
    cfg["vnic"] = VnicConfig(
        enabled=ck.boolean("vnic.enabled", vn.get("enabled", bool(vn))),
        name=ck.string("vnic.name", vn.get("name", "vnic0"), _IFNAME, "an interface name"),
        mode=ck.choice("vnic.mode", vn.get("mode", "batched"), VNIC_MODES),
        address=address,
        slot=ck.integer("vnic.slot", vn.get("slot", 1), 0, MAX_SLOT_ID_LIMIT))

    chans = doc.get("channel", [])
    if not isinstance(chans, list):
        ck.fail("channel", "use [[channel]] tables")
    out = []
    for i, ch in enumerate(chans):
        key = f"channel[{i}]"
        ck.known(key, ck.table(key, ch), {"ethertype", "slot", "prio", "max_size"})
        if "ethertype" not in ch:
            ck.fail(f"{key}.ethertype", "missing")
        et = ck.ethertype(f"{key}.ethertype", ch["ethertype"])
        if et == PING_ETHERTYPE:
            ck.fail(f"{key}.ethertype", f"{et:#06x} is the daemons' echo service")
        out.append(ChannelConfig(
            ethertype=et, slot=ck.integer(f"{key}.slot", ch.get("slot", 0), 0, MAX_SLOT_ID_LIMIT),
            prio=ck.integer(f"{key}.prio", ch.get("prio", 15), 0, 31),
            max_size=ck.integer(f"{key}.max_size", ch.get("max_size", 1514), 14, 1514)))
    cfg["channels"] = tuple(out)

    ctl = ck.table("control", doc.get("control", {}))
    ck.known("control", ctl, {"group", "status_group"})
    for k in ("group", "status_group"):
        if k in ctl:
            cfg[k] = ck.string(f"control.{k}", ctl[k], _GROUP, "a group name")
    return StationConfig(source=source, **cfg)


def _toml_tdma(ck: _Checker, t: dict, link_rate: int) -> TdmaConfig:
    ck.known("tdma", t, {"role", "cycle_us", "backup_offset_us", "cal_rounds", "max_slot_id",
                         "max_cal_requests", "guard_ns", "sync_loss_cycles", "slot"})
    role = ck.choice("tdma.role", t.get("role", "master"), ("master", "backup", "slave"))
    kw = {"role": "slave" if role == "slave" else "master", "link_rate_mbps": link_rate}
    if role != "slave" or "cycle_us" in t:
        if "cycle_us" not in t:
            ck.fail("tdma.cycle_us", f"a {role} needs it ({MIN_CYCLE_US}..{MAX_CYCLE_US})")
        kw["cycle_us"] = ck.integer("tdma.cycle_us", t["cycle_us"], MIN_CYCLE_US, MAX_CYCLE_US)
    if role == "backup":
        if "backup_offset_us" not in t:
            ck.fail("tdma.backup_offset_us", "a backup master needs it")
        kw["backup_offset_us"] = ck.integer("tdma.backup_offset_us", t["backup_offset_us"], 1,
                                            kw["cycle_us"] - 1)
    elif "backup_offset_us" in t:
        ck.fail("tdma.backup_offset_us", "only for role = \"backup\"")
    for k, lo, hi in (("cal_rounds", 0, 1_000_000), ("max_slot_id", 0, MAX_SLOT_ID_LIMIT),
                      ("max_cal_requests", 1, 65535), ("guard_ns", 0, MAX_CYCLE_US * 1000),
                      ("sync_loss_cycles", 1, 1_000_000)):
        if k in t:
            kw[k] = ck.integer(f"tdma.{k}", t[k], lo, hi)
    slots = t.get("slot", [])
    if not isinstance(slots, list):
        ck.fail("tdma.slot", "use [[tdma.slot]] tables")
    max_id = kw.get("max_slot_id", 7)
    out = {}
    for i, s in enumerate(slots):
        key = f"tdma.slot[{i}]"
        ck.known(key, ck.table(key, s), {"id", "offset_us", "phasing", "size", "joint"})
        for req in ("id", "offset_us"):
            if req not in s:
                ck.fail(f"{key}.{req}", "missing")
        sid = ck.integer(f"{key}.id", s["id"], 0, max_id)
        if sid in out:
            ck.fail(f"{key}.id", f"slot {sid} given twice")
        phasing, period = parse_phasing(ck, f"{key}.phasing", s.get("phasing", "1/1"))
        joint = s.get("joint")
        out[sid] = Slot(id=sid, offset_us=ck.integer(f"{key}.offset_us", s["offset_us"], 0,
                                                     MAX_OFFSET_US),
                        phasing=phasing, period=period,
                        size=ck.integer(f"{key}.size", s.get("size", MAX_MTU), MIN_SLOT_SIZE,
                                        MAX_MTU),
                        joint=None if joint is None else ck.integer(f"{key}.joint", joint, 0,
                                                                    max_id))
    return ck.tdma("tdma", lambda: TdmaConfig(**kw, slots=out))


# -- RTnet's rtnet.conf and tdma.conf -------------------------------------------------------

# Variables of rtnet.conf.in that only concern loading RTnet's kernel modules: accepted, unused.
_RTNET_IGNORED = {"RTNET_MOD", "RTIFCONFIG", "RTCFG", "TDMACFG", "MODULE_EXT", "RT_DRIVER",
                  "RT_DRIVER_OPTIONS", "REBIND_RT_NICS", "RT_LOOPBACK", "RT_PROTOCOLS", "RTCAP",
                  "STAGE_2_SRC", "STAGE_2_DST", "STAGE_2_CMDS", "prefix", "exec_prefix",
                  "sbindir", "sysconfdir", "UPDELAY"}
_RTNET_USED = {"IPADDR", "NETMASK", "TDMA_MODE", "TDMA_SLAVES", "TDMA_CYCLE", "TDMA_OFFSET",
               "TDMA_CONFIG", "RTNET_DEV", "TDMA_CAL_ROUNDS"}


def parse_shell_vars(text: str, source: str) -> dict:
    """``NAME=value`` lines as ``rtnet start`` sources them (comments, quotes, ``$VAR``)."""
    out = {}
    for no, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[7:].strip()
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", line)
        if not m:
            raise ConfigError(f"{source}: line {no}: not NAME=value: {line[:40]!r}")
        try:
            words = shlex.split(m.group(2), comments=True)
        except ValueError as exc:
            raise ConfigError(f"{source}: line {no}: {exc}") from None
        value = " ".join(words)
        value = re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda v: out.get(v.group(1), ""),
                       value)
        out[m.group(1)] = value
    return out


def _uint_var(ck, key, text, lo, hi) -> int:
    if not re.fullmatch(r"\d+", text or ""):
        ck.fail(key, f"{text!r} is not a whole number ({lo}..{hi})")
    return ck.integer(key, int(text), lo, hi)


def parse_rtnet_conf(text: str, source: str = "rtnet.conf", *, mac: str | None = None,
                     read_file=None) -> StationConfig:
    ck = _Checker(source)
    env = parse_shell_vars(text, source)
    for k in env:
        if k not in _RTNET_USED and k not in _RTNET_IGNORED:
            ck.fail(k, "unknown rtnet.conf variable (see RTNET_REFERENCE.md 3.7)")
    dev = ck.string("RTNET_DEV", env.get("RTNET_DEV", "rteth0"), _IFNAME, "an interface name")
    ip = env.get("IPADDR", "10.0.0.1")
    try:
        ipaddress.IPv4Address(ip)
    except ValueError:
        ck.fail("IPADDR", f"{ip!r} is not an IPv4 address")
    cal = _uint_var(ck, "TDMA_CAL_ROUNDS", env.get("TDMA_CAL_ROUNDS", "100"), 0, 1_000_000)
    if env.get("TDMA_CONFIG"):
        path = env["TDMA_CONFIG"]
        if not os.path.isabs(path):
            path = os.path.join(os.path.dirname(source), path)
        try:
            tdma_text = read_file(path) if read_file else open(path).read()
        except OSError as exc:
            ck.fail("TDMA_CONFIG", f"{path}: {exc.strerror}")
        tdma = parse_tdma_conf(tdma_text, path, ip=ip, mac=mac, cal_rounds=cal)
    else:
        mode = ck.choice("TDMA_MODE", env.get("TDMA_MODE", "master"), ("master", "slave"))
        if mode == "master":
            cycle = _uint_var(ck, "TDMA_CYCLE", env.get("TDMA_CYCLE", "5000"), MIN_CYCLE_US,
                              MAX_CYCLE_US)
            tdma = ck.tdma("TDMA_CYCLE", lambda: TdmaConfig(
                role="master", cycle_us=cycle, cal_rounds=cal, slots={0: Slot(0, 0)}))
        else:
            offset = _uint_var(ck, "TDMA_OFFSET", env.get("TDMA_OFFSET", "200"), 1, MAX_OFFSET_US)
            slaves = env.get("TDMA_SLAVES", "10.0.0.2 10.0.0.3 10.0.0.4").split()
            if ip not in slaves:
                ck.fail("TDMA_SLAVES", f"IPADDR {ip} is not listed, so it has no slot")
            k = slaves.index(ip) + 1
            tdma = ck.tdma("TDMA_OFFSET", lambda: TdmaConfig(
                role="slave", cal_rounds=cal, slots={0: Slot(0, k * offset)}))
    return StationConfig(source=source, name=ip, device=dev, mac=mac, discipline="tdma",
                         tdma=tdma, ip=ip)


def parse_tdma_conf(text: str, source: str = "tdma.conf", *, ip: str | None = None,
                    mac: str | None = None, cal_rounds: int = 100) -> TdmaConfig:
    """The extended-mode file: the section of this station (by ``ip`` or ``mac``)."""
    ck = _Checker(source)
    sections = []
    for no, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if words[0] in ("master:", "backup-master:", "slave:") and len(words) == 1:
            sections.append({"kind": words[0][:-1], "line": no, "slots": {}})
            continue
        if not sections:
            ck.fail(f"line {no}", f"{words[0]!r} before master:, backup-master: or slave:")
        sec = sections[-1]
        key = f"line {no}: {words[0]}"
        if words[0] in ("ip", "mac", "stage2") and len(words) == 2:
            sec[words[0]] = words[1]
        elif words[0] == "cycle" and len(words) == 2 and sec["kind"] == "master":
            sec["cycle"] = _uint_var(ck, key, words[1], MIN_CYCLE_US, MAX_CYCLE_US)
        elif words[0] in ("backup-offset", "backup-slot") and len(words) == 2 \
                and sec["kind"] == "backup-master":
            sec["backup"] = _uint_var(ck, key, words[1], 1, MAX_CYCLE_US)
        elif words[0] == "slot" and 3 <= len(words) <= 6:
            sid = _uint_var(ck, key, words[1], 0, MAX_SLOT_ID_LIMIT)
            phasing, period = parse_phasing(ck, key, words[3]) if len(words) > 3 else (1, 1)
            size = _uint_var(ck, key, words[4], 0, MAX_MTU) if len(words) > 4 else 0
            if 0 < size < MIN_SLOT_SIZE:
                ck.fail(key, f"size {size} below minimum {MIN_SLOT_SIZE} (0 = MTU)")
            sec["slots"][sid] = Slot(sid, _uint_var(ck, key, words[2], 0, MAX_OFFSET_US),
                                     phasing, period, size or MAX_MTU,
                                     _uint_var(ck, key, words[5], 0, MAX_SLOT_ID_LIMIT)
                                     if len(words) > 5 else None)
        else:
            ck.fail(key, f"not valid in a {sec['kind']}: section")
    masters = [s for s in sections if s["kind"] == "master"]
    if len(masters) != 1 or "cycle" not in masters[0]:
        ck.fail("master:", "exactly one master: section with a cycle line is needed")
    mine = [s for s in sections
            if (ip and s.get("ip") == ip) or (mac and s.get("mac", "").lower() == mac.lower())]
    if not mine:
        ck.fail("ip", f"no section for this station (ip {ip}{', mac ' + mac if mac else ''})")
    sec = mine[0]
    cycle = masters[0]["cycle"]
    kw = {"cal_rounds": cal_rounds, "slots": sec["slots"]}
    if sec["kind"] == "master":
        kw.update(role="master", cycle_us=cycle)
    elif sec["kind"] == "backup-master":
        if "backup" not in sec:
            ck.fail(f"line {sec['line']}: backup-master:", "needs a backup-offset line")
        kw.update(role="master", cycle_us=cycle, backup_offset_us=sec["backup"])
    else:
        kw.update(role="slave")
    return ck.tdma(f"line {sec['line']} ({sec['kind']})", lambda: TdmaConfig(**kw))


def load(path: str, *, mac: str | None = None) -> StationConfig:
    """Read and check a configuration file (TOML by its .toml suffix, else rtnet.conf)."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror}") from None
    if path.endswith(".toml"):
        return parse_toml(text, path)
    return parse_rtnet_conf(text, path, mac=mac)


def with_overrides(cfg: StationConfig, **kw) -> StationConfig:
    return replace(cfg, **{k: v for k, v in kw.items() if v is not None})
