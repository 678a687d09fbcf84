"""The checks of the station's NIC (not applicable on veth, TAP or a bridge)."""

from __future__ import annotations

import re

from rtnet import xdpfeatures
from rtnet.messages import one_line
from rtnet.sysfiles import Unreadable

from .facts import FAIL, NA, OK, WARN, Change, CheckResult, _Facts, _result

# -- the NIC -----------------------------------------------------------------------------------


def _no_device(fx: _Facts, name: str, rec: str) -> CheckResult | None:
    if not fx.nic["exists"]:
        return _result(name, NA, "no device", rec, f"{fx.t.dev} does not exist (see nic)")
    return None


def _virtual(fx: _Facts, name: str, rec: str, why: str) -> CheckResult | None:
    if fx.nic["virtual"]:
        return _result(
            name,
            NA,
            f"{fx.nic['kind']} (virtual)",
            rec,
            f"a {fx.nic['kind']} has no hardware: {why}",
        )
    return None


def _ethtool(fx: _Facts, name: str, flag: str, rec: str):
    """ethtool's output, or the result that says why there is none."""
    out = fx.ethtool(flag)
    if out is None:
        return _result(
            name,
            WARN,
            "ethtool missing",
            rec,
            "ethtool is not installed (apt install ethtool): cannot tell",
        )
    rc, text = out
    if rc != 0:
        first = (text.strip().splitlines() or ["no output"])[-1]
        return _result(name, NA, "not reported", rec, f"ethtool {flag} {fx.t.dev}: {first[:120]}")
    return text


def check_nic(fx: _Facts) -> CheckResult:
    name, dev = "nic", fx.t.dev
    if not fx.nic["exists"]:
        return _result(
            name,
            FAIL,
            "no device",
            f"{dev} present",
            f"{dev} does not exist in this network namespace (a lab station's is in "
            f"its namespace: ip netns exec rtn-lab-s1 rtnetctl check)",
        )
    if fx.nic["virtual"]:
        return _result(
            name,
            OK,
            f"{fx.nic['kind']} (virtual)",
            "a NIC of its own",
            f"{dev} is virtual: the timing items of real hardware do not apply",
        )
    driver = fx.nic["driver"] or "an unknown driver"
    return _result(name, OK, driver, "a NIC of its own", f"{dev} is a NIC driven by {driver}")


def _features(fx: _Facts) -> int:
    ifindex = fx.f.read_int(f"/sys/class/net/{fx.t.dev}/ifindex", 1, 2**31 - 1)
    try:
        return fx.m.xdp_features(ifindex)
    except xdpfeatures.XdpFeaturesError as exc:
        raise Unreadable(f"XDP features of {fx.t.dev}: {exc}") from None


def check_xdp_native(fx: _Facts) -> CheckResult:
    name, rec = "xdp_native", "native"
    if (res := _no_device(fx, name, rec)) is not None:
        return res
    mask = _features(fx)
    native = mask & xdpfeatures.BASIC and mask & xdpfeatures.REDIRECT
    current = f"{'native' if native else 'generic only'} ({xdpfeatures.describe(mask)})"
    if native and fx.nic["kind"] == "veth":
        # rtn_xsk_prog.c (is_single_queue_veth): auto attaches in SKB mode on a veth
        return _result(
            name,
            OK,
            current,
            rec,
            "xdp_mode auto attaches in SKB mode on a veth with one receive queue: native XDP "
            "on a veth copies each socket buffer into a page first, SKB mode runs the program "
            "on it as it is",
        )
    if native:
        return _result(
            name, OK, current, rec, "the driver runs the XDP program and redirects to AF_XDP itself"
        )
    return _result(
        name,
        WARN,
        current,
        rec,
        "only generic (SKB) XDP: every frame gets a socket buffer before it reaches "
        "the AF_XDP socket, costing microseconds",
    )


def check_xdp_zerocopy(fx: _Facts) -> CheckResult:
    name, rec = "xdp_zerocopy", "supported"
    if (res := _no_device(fx, name, rec)) is not None:
        return res
    if res := _virtual(fx, name, rec, "AF_XDP copies frames, which is all it can do"):
        return res
    if _features(fx) & xdpfeatures.XSK_ZEROCOPY:
        return _result(
            name, OK, "supported", rec, "AF_XDP shares the driver's rings: rtnetd binds zero-copy"
        )
    return _result(
        name,
        OK,
        "not supported",
        rec,
        "copy mode only: rtnetd binds in copy mode (one copy per frame)",
    )


def _ethtool_field(text: str, label: str) -> str | None:
    m = re.search(rf"^{re.escape(label)}:?\s+(\S+)", text, re.M)
    return m.group(1) if m else None


def check_coalescing(fx: _Facts) -> CheckResult:
    name, dev = "coalescing", fx.t.dev
    rec = "adaptive-rx off, rx-usecs 0"
    if (res := _no_device(fx, name, rec)) is not None:
        return res
    if res := _virtual(fx, name, rec, "no interrupt to delay"):
        return res
    text = _ethtool(fx, name, "-c", rec)
    if isinstance(text, CheckResult):
        return text
    adaptive = _ethtool_field(text, "Adaptive RX")
    usecs = _ethtool_field(text, "rx-usecs")
    if usecs is not None and not usecs.isdigit():
        usecs = None  # "n/a": the driver has no such setting
    if adaptive is None and usecs is None:
        return _result(name, NA, "not reported", rec, f"ethtool -c {dev} shows no RX coalescing")
    current = f"adaptive-rx {adaptive or 'n/a'}, rx-usecs {usecs or 'n/a'}"
    args, old = [], []
    if adaptive == "on":
        args += ["adaptive-rx", "off"]
        old += ["adaptive-rx", "on"]
    if usecs is not None and int(usecs) > 0:
        args += ["rx-usecs", "0"]
        old += ["rx-usecs", usecs]
    if not args:
        return _result(name, OK, current, rec, "the NIC interrupts as soon as a frame is in")
    return _result(
        name,
        WARN,
        current,
        rec,
        f"the NIC holds its RX interrupt back to batch frames: each RT frame waits "
        f"up to {usecs or 'an adaptive'} us (undo: ethtool -C {dev} {' '.join(old)})",
        [_ethtool_change(fx, old, args)],
    )


def _ethtool_change(fx: _Facts, old: list[str], new: list[str]) -> Change:
    dev = fx.t.dev

    def do():
        out = fx.m.run(["ethtool", "-C", dev, *new])
        if out is None:
            raise OSError(2, "ethtool is not installed")
        if out[0] != 0:
            raise OSError(0, one_line((out[1].strip().splitlines() or ["failed"])[-1][:120]))

    return Change(f"ethtool -C {dev}", " ".join(old), " ".join(new), do)


def check_hw_timestamps(fx: _Facts) -> CheckResult:
    name = "hw_timestamps"
    rec = "hardware transmit and receive"
    if (res := _no_device(fx, name, rec)) is not None:
        return res
    if res := _virtual(fx, name, rec, "the stack stamps frames in software"):
        return res
    text = _ethtool(fx, name, "-T", rec)
    if isinstance(text, CheckResult):
        return text
    tx = re.search(r"^\s*hardware-transmit\b", text, re.M) is not None
    rx = re.search(r"^\s*hardware-receive\b", text, re.M) is not None
    phc = _ethtool_field(text, "PTP Hardware Clock") or "none"
    current = f"{'tx' if tx else ''}{'+' if tx and rx else ''}{'rx' if rx else ''}" or "none"
    current = f"hardware {current}, PHC {phc}"
    if tx and rx:
        return _result(
            name,
            OK,
            current,
            rec,
            "the NIC can stamp frames on the wire (for PTP; rtnet stamps in software)",
        )
    return _result(
        name,
        WARN,
        current,
        rec,
        "software stamps only: TDMA sync and latency figures include the driver's "
        "and the stack's jitter",
    )


def check_queues(fx: _Facts) -> CheckResult:
    name, dev = "queues", fx.t.dev
    rec = "1 RX queue, or an ntuple rule steering 0x9021 to queue 0"
    if (res := _no_device(fx, name, rec)) is not None:
        return res
    base = f"/sys/class/net/{dev}/queues"
    rx = None
    if not fx.nic["virtual"]:
        out = fx.ethtool("-l")
        if out and out[0] == 0:
            current = re.split(r"Current hardware settings:", out[1])[-1]
            counts = [
                int(v) for v in re.findall(r"^(?:RX|Combined):\s+([0-9]{1,6})", current, re.M)
            ]
            rx = sum(counts) if counts else None
    if rx is None and fx.f.exists(base):
        rx = sum(1 for q in fx.f.listdir(base) if re.fullmatch(r"rx-[0-9]{1,6}", q))
    if rx is None:
        return _result(name, WARN, "unknown", rec, f"neither ethtool -l nor {base} tells")
    if rx <= 1:
        return _result(
            name,
            OK,
            f"{rx} RX queue",
            rec,
            "every frame arrives on queue 0, where rtnetd's AF_XDP socket is",
        )
    return _result(
        name,
        WARN,
        f"{rx} RX queues",
        rec,
        f"rtnetd's socket is on queue 0: RT frames the NIC puts on another queue go "
        f"to Linux, not to TDMA (ethtool -L {dev} combined 1)",
    )
