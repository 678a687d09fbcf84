"""``rtroute``: RTnet's static neighbour table tool (``utils/net/rtroute.c``), talking to rtnetd.

Syntax (RTnet's)::

    rtroute [-n netns]                               list every station's table
    rtroute [-n netns] add <ip> <mac> dev <dev>      a host route
    rtroute [-n netns] del <ip> [dev <dev>]
    rtroute [-n netns] get <ip> [dev <dev>]
    rtroute [-n netns] solicit <ip> dev <dev>       ARP on the real-time path
    rtroute [-n netns] -f <file>                     RTnet's host-routes file

The host-routes file has one ``<ip> <mac> <dev>`` a line (``#`` comments).  It
is checked whole before anything is sent, and each device's table is then
replaced at once (``route.set``); if a later device refuses, the tables already
changed are put back, so a file is applied entirely or not at all.  ``solicit``
sends an ARP request in the station's slot and waits up to a second for the
reply, which fills the table.  Network routes (``netmask``/``gw``) are not
supported: the real-time path has host routes only, entered here, by solicit
or by RTcfg.

Exit status: 0 on success, 2 when the command line or file is refused, 1 when a
daemon refuses or cannot be reached.  Errors are one line, ``rtroute: <message>``.
"""

from __future__ import annotations

import glob
import os
import sys

from rtmac import control
from rtnet import paths
from rtnet.argtypes import netns_name
from rtnet.devcmd import UsageError, fail
from rtnet.errors import ConfigError
from rtnet.ipv4 import unicast_ipv4
from rtnet.messages import shown, shown_path
from rtnet.names import interface_name_problem
from rtnet.neighbours import MAX_HOSTS_FILE, neighbour_mac, parse_hosts
from rtnet.userfiles import Refused, read_regular

EXIT_USAGE, EXIT_FAILED = 2, 1
USAGE = (
    "usage: rtroute [-n netns] [add <ip> <mac> dev <dev> | del <ip> [dev <dev>] | "
    "get <ip> [dev <dev>] | solicit <ip> dev <dev> | -f <file>]"
)


def _dev(word: str) -> str:
    problem = interface_name_problem(word)
    if problem:
        raise UsageError(f"invalid device name {shown(word)}: {problem}")
    return word


def _ip(word: str) -> str:
    try:
        return unicast_ipv4(word)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


def _opt_dev(rest: list[str], required: bool) -> str | None:
    if not rest and not required:
        return None
    if len(rest) != 2 or rest[0] != "dev":
        raise UsageError(
            "expected 'dev <dev>'"
            + ("" if required else " or nothing")
            + f" after the address, got {shown(' '.join(rest))}"
        )
    return _dev(rest[1])


def parse_args(argv: list[str]) -> dict:
    """The command line -> {"action", "netns", ...}; UsageError if refused."""
    args, netns = list(argv), None
    if args[:1] in (["-n"], ["--netns"]):
        if len(args) < 2:
            raise UsageError("-n needs a namespace name")
        try:
            netns = netns_name(args[1])
        except Exception as exc:  # argparse's ArgumentTypeError
            raise UsageError(str(exc)) from None
        args = args[2:]
    if not args:
        return {"action": "list", "netns": netns}
    cmd, rest = args[0], args[1:]
    if cmd == "-f":
        if len(rest) != 1:
            raise UsageError("-f needs one file")
        return {"action": "file", "netns": netns, "file": rest[0]}
    if cmd == "add":
        if len(rest) != 4:
            raise UsageError("add <ip> <mac> dev <dev>")
        try:
            mac = neighbour_mac(rest[1])
        except ConfigError as exc:
            raise UsageError(str(exc)) from None
        return {
            "action": "add",
            "netns": netns,
            "ip": _ip(rest[0]),
            "mac": mac,
            "dev": _opt_dev(rest[2:], True),
        }
    if cmd in ("del", "get"):
        if not rest:
            raise UsageError(f"{cmd} <ip> [dev <dev>]")
        if "netmask" in rest:
            raise UsageError("network routes are not supported: host routes only")
        return {"action": cmd, "netns": netns, "ip": _ip(rest[0]), "dev": _opt_dev(rest[1:], False)}
    if cmd == "solicit":
        if not rest:
            raise UsageError("solicit <ip> dev <dev>")
        return {
            "action": "solicit",
            "netns": netns,
            "ip": _ip(rest[0]),
            "dev": _opt_dev(rest[1:], True),
        }
    raise UsageError(f"unknown command {shown(cmd)}")


def _devices(netns: str | None) -> list[str]:
    """The devices whose daemon has a control socket in the namespace's run directory."""
    d = paths.station_dir(netns)
    return sorted(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(d, "*.ctl")))


def _call(dev: str, request: dict, netns: str | None) -> dict:
    return control.send_request(dev, {**request, "dev": dev}, timeout=30.0, netns=netns)


def _read_file(path: str) -> str:
    try:
        data = read_regular(path, MAX_HOSTS_FILE)
    except Refused as exc:
        if exc.too_large:
            raise UsageError(f"{shown_path(path)}: more than {MAX_HOSTS_FILE} bytes") from None
        raise UsageError(str(exc)) from None
    try:
        return data.decode("ascii")
    except UnicodeDecodeError:
        raise UsageError(f"{shown_path(path)}: not ASCII text") from None


def apply_file(a: dict) -> None:
    """Checked whole, then each device's table replaced; on a refusal the changed ones back."""
    try:
        lines = parse_hosts(_read_file(a["file"]), shown_path(a["file"]))
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    by_dev: dict[str, dict[str, str]] = {}
    for ip, mac, dev in lines:
        by_dev.setdefault(dev, {})[ip] = mac
    before = {
        dev: {r["ip"]: r["mac"] for r in _call(dev, {"cmd": "route.list"}, a["netns"])["routes"]}
        for dev in by_dev
    }
    done = []
    try:
        for dev, new in by_dev.items():
            table = {**before[dev], **new}
            _call(
                dev,
                {"cmd": "route.set", "routes": [{"ip": i, "mac": m} for i, m in table.items()]},
                a["netns"],
            )
            done.append(dev)
    except (control.ControlError, OSError):
        for dev in done:
            try:
                _call(
                    dev,
                    {
                        "cmd": "route.set",
                        "routes": [{"ip": i, "mac": m} for i, m in before[dev].items()],
                    },
                    a["netns"],
                )
            except (control.ControlError, OSError):
                pass
        raise


def _print_table(rows: list[tuple[str, str, str]]) -> None:
    print(f"{'Destination':<16} {'HW Address':<18} Device")
    for ip, mac, dev in rows:
        print(f"{ip:<16} {mac:<18} {dev}")


def run(a: dict) -> None:
    netns = a["netns"]
    if a["action"] == "file":
        apply_file(a)
        return
    if a["action"] == "add":
        _call(a["dev"], {"cmd": "route.add", "ip": a["ip"], "mac": a["mac"]}, netns)
        return
    if a["action"] == "solicit":
        got = _call(a["dev"], {"cmd": "route.solicit", "ip": a["ip"], "timeout_ms": 1000}, netns)
        _print_table([(got["ip"], got["mac"], a["dev"])])
        return
    devs = [a["dev"]] if a.get("dev") else _devices(netns)
    if a["action"] == "list":
        _print_table(
            [
                (r["ip"], r["mac"], dev)
                for dev in devs
                for r in _call(dev, {"cmd": "route.list"}, netns)["routes"]
            ]
        )
        return
    # del / get without a device: the stations whose table has the address
    found = []
    for dev in devs:
        routes = {r["ip"]: r["mac"] for r in _call(dev, {"cmd": "route.list"}, netns)["routes"]}
        if a["ip"] in routes:
            found.append((a["ip"], routes[a["ip"]], dev))
    if not found:
        raise control.ControlError(0, f"no route to {a['ip']}")
    if a["action"] == "get":
        _print_table(found)
        return
    for _, _, dev in found:
        _call(dev, {"cmd": "route.del", "ip": a["ip"]}, netns)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["-h"], ["--help"]):
        print(USAGE)
        print(__doc__.split("\n\n", 2)[2].split("\n\nExit")[0])
        return 0
    a: dict = {}
    try:
        a = parse_args(argv)
        run(a)
    except UsageError as exc:
        return fail("rtroute", None, f"{exc} (see rtroute --help)", EXIT_USAGE)
    except control.ControlError as exc:
        return fail("rtroute", a.get("dev"), exc.strerror or str(exc), EXIT_FAILED)
    except OSError as exc:
        return fail(
            "rtroute",
            a.get("dev"),
            f"{exc.filename or ''}: {exc.strerror}".lstrip(": "),
            EXIT_FAILED,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
