"""RTnet's own configuration files: rtnet.conf (``rtnet start``'s shell variables) and
tdma.conf (its extended mode), read into the same StationConfig as rtnet.toml.

What the variables mean and which are used is in rtnet.config's module text and
RTNET_REFERENCE.md 3.7-3.9; the checks, the option table and the error format are
rtnet.config's, so a value refused here reads like one refused in a TOML file.  A TDMA
value (TDMA_CYCLE, TDMA_CAL_ROUNDS, a tdma.conf cycle, backup offset or slot line) is
read here as a whole number and judged by the C rule when the configuration it
builds is validated (rtn_tdma_cfg_check(): ``TDMA_CYCLE: cycle_us: 50 outside the
supported range 100..1000000``).
"""

from __future__ import annotations

import ipaddress
import os
import re
import shlex
from dataclasses import replace

from rtmac.tdma_config import Slot, TdmaConfig

from . import options
from .config import (
    MAX_VALUE_CHARS,
    StationConfig,
    VnicConfig,
    _Checker,
    _client_setup,
    _in_dir,
    _ipv4_var,
    _rtcfg_call,
    _stage2_src,
    key_name,
    parse_phasing,
    read_text,
)
from .errors import ConfigError
from .mac import CANONICAL_MAC, EXAMPLE_MAC
from .messages import shown
from .rtcfg import payload as rtcfg_payload
from .rtcfg import setup as rtcfg_setup

# -- rtnet.conf and tdma.conf -------------------------------------------------------

# Variables of rtnet.conf.in that only concern loading RTnet's kernel modules: accepted, unused.
_RTNET_IGNORED = {
    "RTNET_MOD",
    "RTIFCONFIG",
    "RTCFG",
    "TDMACFG",
    "MODULE_EXT",
    "RT_DRIVER",
    "RT_DRIVER_OPTIONS",
    "REBIND_RT_NICS",
    "RT_LOOPBACK",
    "RT_PROTOCOLS",
    "RTCAP",
    "prefix",
    "exec_prefix",
    "sbindir",
    "sysconfdir",
    "UPDELAY",
}
_RTNET_USED = {
    "IPADDR",
    "NETMASK",
    "TDMA_MODE",
    "TDMA_SLAVES",
    "TDMA_CYCLE",
    "TDMA_OFFSET",
    "TDMA_CONFIG",
    "RTNET_DEV",
    "TDMA_CAL_ROUNDS",
    "STAGE_2_SRC",
    "STAGE_2_DST",
    "STAGE_2_CMDS",
    "RTCFG_TIMEOUT",
}


_VAR_REF = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")


def parse_shell_vars(text: str, source: str) -> dict:
    """``NAME=value`` lines as ``rtnet start`` sources them (comments, quotes, ``$VAR``)."""
    ck = _Checker(source)
    out = {}
    for no, line in enumerate(text.split("\n"), 1):  # lines as the shell counts them
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[7:].strip()
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", line)
        if not m:
            ck.fail(f"line {no}", f"not NAME=value: {shown(line)}")
        try:
            words = shlex.split(m.group(2), comments=True)
        except ValueError as exc:
            ck.fail(f"line {no}", str(exc))
        value = " ".join(words)
        # Expanding A=$A$A line after line doubles the value each time: bound it first.
        refs = list(_VAR_REF.finditer(value))
        size = len(value) + sum(len(out.get(r.group(1), "")) - len(r.group(0)) for r in refs)
        if size > MAX_VALUE_CHARS:
            ck.fail(
                f"line {no}: {key_name(m.group(1))}",
                f"a value of {size} characters (after $ expansion), at most {MAX_VALUE_CHARS}",
            )
        out[m.group(1)] = _VAR_REF.sub(lambda v: out.get(v.group(1), ""), value)
    return out


_OPT = options.OPTIONS
_MAX_DIGITS = 30  # more than any C field holds: refused before int() does the work


def _uint_var(ck, key, text, option) -> int:
    """A whole number for ``option``: its range checked here by the option table's rule,
    or, for a TDMA setting, by the C rule when the configuration is validated (a value
    too long for any C field is refused here: C never sees it)."""
    lo, hi = option.limits
    # ASCII digits only: int() would also take "\uff11\uff10" (fullwidth) or "1_0"
    if not isinstance(text, str) or not re.fullmatch(r"[0-9]+", text):
        ck.fail(key, f"{shown(text)} is not a whole number ({option.range_text()})")
    if len(text.lstrip("0")) > (_MAX_DIGITS if option.c_checked else len(str(hi))):
        ck.fail(key, f"{shown(text)} above maximum {hi}")
    return int(text) if option.c_checked else ck.option(option, int(text), key)


def _netmask_prefix(ck, env) -> int | None:
    mask = env.get("NETMASK")
    if not mask:
        return None
    try:
        return ipaddress.IPv4Network(f"0.0.0.0/{mask}").prefixlen
    except ValueError:
        ck.fail("NETMASK", f"{shown(mask)} is not a netmask like 255.255.255.0")


def parse_rtnet_conf(
    text: str,
    source: str = "rtnet.conf",
    *,
    mac: str | None = None,
    read_file=None,
    rtcfg: bool = True,
) -> StationConfig:
    """``rtcfg``: bring the segment up with RTcfg, as ``rtnet start`` does (module text)."""
    ck = _Checker(source)
    env = parse_shell_vars(text, source)
    for k in env:
        if k not in _RTNET_USED and k not in _RTNET_IGNORED:
            ck.fail(key_name(k), "unknown rtnet.conf variable (see RTNET_REFERENCE.md 3.7)")
    dev = ck.ifname("RTNET_DEV", env.get("RTNET_DEV", "rteth0"))
    mode = ck.choice("TDMA_MODE", env.get("TDMA_MODE", "master"), ("master", "slave"))
    # an RTcfg slave learns everything from the server: its IP may come from the device
    ip = env.get("IPADDR", None if rtcfg and mode == "slave" else "10.0.0.1")
    if ip is not None:
        ip = _ipv4_var(ck, "IPADDR", ip)
    cal = _uint_var(
        ck, "TDMA_CAL_ROUNDS", env.get("TDMA_CAL_ROUNDS", "100"), _OPT["tdma.cal_rounds"]
    )
    ck.tdma("TDMA_CAL_ROUNDS", lambda: TdmaConfig(role="slave", cal_rounds=cal))
    # the master's spacing of its slaves (no C field: the option table's rule); the slot
    # it gives a station is then C's to judge
    offset = _uint_var(ck, "TDMA_OFFSET", env.get("TDMA_OFFSET", "200"), _OPT["rtcfg.offset_us"])
    slaves = env.get("TDMA_SLAVES", "10.0.0.2 10.0.0.3 10.0.0.4").split()
    sections = path = None
    if env.get("TDMA_CONFIG") and not (rtcfg and mode == "slave"):
        path = _in_dir(env["TDMA_CONFIG"], os.path.dirname(source))
        try:
            tdma_text = (read_file or read_text)(path)
        except ConfigError as exc:
            ck.fail("TDMA_CONFIG", str(exc))
        tck, sections = _Checker(path), tdma_sections(tdma_text, path)
        if rtcfg:  # the master: section, whatever IPADDR says (RTnet's submit_cfg)
            master = next(s for s in sections if s["kind"] == "master")
            ip = _ipv4_var(tck, f"line {master['line']}: ip", master.get("ip", ip))
            tdma = section_config(tck, master, sections, cal)
        else:
            tdma = section_config(tck, own_section(tck, sections, ip, mac), sections, cal)
    elif mode == "master":
        cycle = _uint_var(ck, "TDMA_CYCLE", env.get("TDMA_CYCLE", "5000"), _OPT["tdma.cycle_us"])
        tdma = ck.tdma(
            "TDMA_CYCLE",
            lambda: TdmaConfig(
                role="master", cycle_us=cycle, cal_rounds=cal, slots={0: Slot(0, 0)}
            ),
        )
    elif rtcfg:
        tdma = ck.tdma("TDMA_MODE", lambda: TdmaConfig(role="slave", cal_rounds=cal))
    else:
        if ip not in slaves:
            ck.fail("TDMA_SLAVES", f"IPADDR {ip} is not listed, so it has no slot")
        k = slaves.index(ip) + 1
        tdma = ck.tdma(
            "TDMA_OFFSET",
            lambda: TdmaConfig(role="slave", cal_rounds=cal, slots={0: Slot(0, k * offset)}),
        )
    out = StationConfig(
        source=source, name=ip or dev, device=dev, mac=mac, discipline="tdma", tdma=tdma, ip=ip
    )
    if not rtcfg:
        return out
    return _rtnet_conf_rtcfg(ck, env, out, mode, slaves, offset, sections, path)


def _rtnet_conf_rtcfg(
    ck: _Checker,
    env: dict,
    cfg: StationConfig,
    mode: str,
    slaves: list,
    offset: int,
    sections: list | None,
    tdma_path: str | None,
) -> StationConfig:
    """The RTcfg side of an rtnet.conf: the server's stations or the client's stage 2."""
    timing = {
        "timeout_s": _uint_var(
            ck,
            "RTCFG_TIMEOUT",
            env.get("RTCFG_TIMEOUT", str(_OPT["rtcfg.timeout_s"].default)),
            _OPT["rtcfg.timeout_s"],
        )
    }
    base = os.path.dirname(ck.source)
    for key in ("STAGE_2_SRC",) if mode == "slave" else ("STAGE_2_DST", "STAGE_2_CMDS"):
        if env.get(key):
            ck.fail(key, f"only for TDMA_MODE={'master' if mode == 'slave' else 'slave'}")
    # the VNIC as rtnet start has it: the master's up with IPADDR, a slave's with stage 1
    # (opened once a slot carries it)
    if mode == "slave":
        setup = _client_setup(
            ck,
            cfg.device,
            env.get("STAGE_2_DST"),
            env.get("STAGE_2_CMDS"),
            base,
            "STAGE_2_DST",
            "STAGE_2_CMDS",
            timing,
        )
        return replace(cfg, rtcfg=setup, vnic=VnicConfig(enabled=True))
    prefix = _netmask_prefix(ck, env)
    stage2 = _stage2_src(ck, "STAGE_2_SRC", env.get("STAGE_2_SRC"), base)
    for ip in slaves:
        _ipv4_var(ck, "TDMA_SLAVES", ip)
    if sections is None:
        if len(set(slaves)) != len(slaves):
            ck.fail("TDMA_SLAVES", "an address is listed twice")
        invs = _rtcfg_call(
            ck,
            "TDMA_SLAVES",
            lambda: rtcfg_setup.simple_invitations(
                slaves, offset, prefix, stage2, cycle_us=cfg.tdma.cycle_us
            ),
        )
    else:
        invs = _section_invitations(_Checker(tdma_path), sections, prefix, stage2)
    own = ipaddress.IPv4Address(cfg.ip)
    address = f"{own}/{prefix if prefix is not None else rtcfg_payload.classful_prefix(own)}"
    return replace(
        cfg,
        rtcfg=rtcfg_setup.RtcfgSetup("server", tuple(invs), **timing),
        vnic=VnicConfig(enabled=True, address=address),
    )


def _section_invitations(
    ck: _Checker, sections: list, prefix: int | None, stage2: str | None
) -> list:
    """Extended mode: a station for every slave: and backup-master: section; a section's
    ``stage2`` file (beyond rtnet.in, which honours it for backup masters only) replaces
    STAGE_2_SRC for that station."""
    master = next(s for s in sections if s["kind"] == "master")
    base = os.path.dirname(ck.source)
    out, seen = [], set()
    for sec in sections:
        if sec["kind"] == "master":
            continue
        where = f"line {sec['line']} ({sec['kind']})"
        if not sec.get("ip") and not sec.get("mac"):
            ck.fail(where, "needs an ip or mac line for RTcfg to find the station")
        ip = _ipv4_var(ck, f"{where}: ip", sec["ip"]) if sec.get("ip") else None
        mac = None
        if sec.get("mac"):
            mac = ck.string(
                f"{where}: mac", sec["mac"].lower(), CANONICAL_MAC, f"a MAC like {EXAMPLE_MAC}"
            )
        key = ip or mac
        if key in seen:
            ck.fail(where, f"{key} has a section already")
        seen.add(key)
        if sec["kind"] == "backup-master" and "backup" not in sec:
            ck.fail(f"line {sec['line']}: backup-master:", "needs a backup-offset line")
        own2 = _stage2_src(ck, f"{where}: stage2", sec.get("stage2"), base) or stage2
        out.append(
            _rtcfg_call(
                ck,
                where,
                lambda: rtcfg_setup.section_invitation(
                    sec["kind"],
                    ip,
                    mac,
                    sec["slots"],
                    prefix,
                    own2,
                    cycle_us=master["cycle"],
                    backup_offset_us=sec.get("backup"),
                ),
            )
        )
    return out


def tdma_sections(text: str, source: str = "tdma.conf") -> list[dict]:
    """The sections of an extended-mode tdma.conf, each line checked; exactly one master."""
    ck = _Checker(source)
    sections = []
    for no, line in enumerate(text.split("\n"), 1):  # lines as an editor counts them
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if words[0] in ("master:", "backup-master:", "slave:") and len(words) == 1:
            sections.append(
                {"kind": words[0][:-1], "line": no, "slots": {}, "slot_lines": {}, "windows": {}}
            )
            continue
        if not sections:
            ck.fail(f"line {no}", f"{shown(words[0])} before master:, backup-master: or slave:")
        sec = sections[-1]
        key = f"line {no}: {key_name(words[0])}"
        if words[0] in ("ip", "mac", "stage2") and len(words) == 2:
            sec[words[0]] = words[1]
        elif words[0] == "cycle" and len(words) == 2 and sec["kind"] == "master":
            sec["cycle"] = _uint_var(ck, key, words[1], _OPT["tdma.cycle_us"])
        elif (
            words[0] in ("backup-offset", "backup-slot")
            and len(words) == 2
            and sec["kind"] == "backup-master"
        ):
            sec["backup"] = _uint_var(ck, key, words[1], _OPT["tdma.backup_offset_us"])
        elif words[0] == "slot" and 3 <= len(words) <= 6:
            # the line's form here; its values are C's to judge with the section's schedule
            sid = _uint_var(ck, key, words[1], _OPT["tdma.slot.id"])
            phasing, period = parse_phasing(ck, key, words[3]) if len(words) > 3 else (1, 1)
            size = _uint_var(ck, key, words[4], _OPT["tdma.slot.size"]) if len(words) > 4 else 0
            if sid in sec["slots"]:
                ck.fail(
                    key,
                    f"slot {sid} given twice in this {sec['kind']}: section "
                    f"(first on line {sec['slot_lines'][sid]})",
                )
            sec["slot_lines"][sid] = no
            sec["slots"][sid] = Slot(
                sid,
                _uint_var(ck, key, words[2], _OPT["tdma.slot.offset_us"]),
                phasing,
                period,
                size or _OPT["tdma.slot.size"].default,
                _uint_var(ck, key, words[5], _OPT["tdma.slot.joint"]) if len(words) > 5 else None,
            )
        elif words[0] == "window" and len(words) == 3:
            # beyond RTnet: "window <slot id> <us>" gives a slot of this section a window
            sid = _uint_var(ck, key, words[1], _OPT["tdma.slot.id"])
            if sid in sec["windows"]:
                ck.fail(key, f"a window for slot {sid} given twice in this section")
            sec["windows"][sid] = (no, _uint_var(ck, key, words[2], _OPT["tdma.slot.window_us"]))
        else:
            ck.fail(key, f"not valid in a {sec['kind']}: section")
    masters = [s for s in sections if s["kind"] == "master"]
    if len(masters) != 1 or "cycle" not in masters[0]:
        ck.fail("master:", "exactly one master: section with a cycle line is needed")
    for sec in sections:
        for sid, (no, us) in sec["windows"].items():
            if sid not in sec["slots"]:
                ck.fail(f"line {no}: window", f"slot {sid} has no slot line in this section")
            sec["slots"][sid] = replace(sec["slots"][sid], window_us=us)
        sec["windows"] = {}
    for sec in sections:  # every section's schedule, whichever station reads the file
        section_config(ck, sec, sections, 0)
    return sections


def own_section(ck: _Checker, sections: list, ip: str | None, mac: str | None) -> dict:
    """This station's section, by ``ip`` or ``mac``."""
    mine = [
        s
        for s in sections
        if (ip and s.get("ip") == ip) or (mac and s.get("mac", "").lower() == mac.lower())
    ]
    if not mine:
        ck.fail("ip", f"no section for this station (ip {ip}{', mac ' + mac if mac else ''})")
    return mine[0]


def section_config(ck: _Checker, sec: dict, sections: list, cal_rounds: int) -> TdmaConfig:
    """The TDMA configuration a section gives its station."""
    cycle = next(s for s in sections if s["kind"] == "master")["cycle"]
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


def parse_tdma_conf(
    text: str,
    source: str = "tdma.conf",
    *,
    ip: str | None = None,
    mac: str | None = None,
    cal_rounds: int = 100,
) -> TdmaConfig:
    """The extended-mode file: the section of this station (by ``ip`` or ``mac``)."""
    ck = _Checker(source)
    sections = tdma_sections(text, source)
    return section_config(ck, own_section(ck, sections, ip, mac), sections, cal_rounds)
