"""``rtcfg``: RTnet's RTcfg command (``utils/net/rtcfg.c``), talking to rtnetd.

Syntax (timeouts in ms, 0 = wait forever)::

    rtcfg <dev> server [-p period] [-b burstrate] [-h heartbeat] [-t threshold] [-r]
    rtcfg <dev> add <ip|mac> [-hw <mac>] [-stage1 <file>] [-stage2 <file>] [-t timeout]
    rtcfg <dev> del <ip|mac>
    rtcfg <dev> wait [-t timeout]
    rtcfg <dev> client [-t timeout] [-c|-f <file>] [-m maxstations]
    rtcfg <dev> announce [-t timeout] [-c|-f <file>] [-b burstrate] [-r]
    rtcfg <dev> ready [-t timeout]
    rtcfg <dev> detach

``-stage1 -`` reads standard input.  Stage files are whitelisted command
lists (rtnet/rtcfg/payload.py) and are checked here before anything is sent.
``-c`` prints the configuration the client received, ``-f`` writes it to a
file.  Each command is one request dict (``{"cmd": "rtcfg.<command>",
"dev": ...}``) sent to the station daemon.  Exit status: 0 on success, 2 when
the command line is refused, 1 when the daemon refuses or cannot be reached.
Errors are one line, ``rtcfg: <dev>: <message>``.
"""

from __future__ import annotations

import argparse
import ipaddress
import sys

from rtmac import control
from rtnet.argtypes import integer, netns_name
from rtnet.devcmd import RaisingParser, UsageError, fail, parse_device_request
from rtnet.errors import RtcfgError
from rtnet.messages import shown, shown_path
from rtnet.userfiles import Refused, read_regular

from . import frames, payload, step

EXIT_USAGE = 2
EXIT_FAILED = 1
MAX_TIMEOUT_MS = 24 * 3_600_000
MAX_STATIONS = 255
UNSUPPORTED = "rtnetd does not support rtcfg yet"
COMMANDS = ("server", "add", "del", "wait", "client", "announce", "ready", "detach")


def _read_stage(path: str, which: str, limit: int, dev: str) -> str:
    too_big = f"{which} file {shown_path(path)}: more than {limit} bytes"
    try:
        if path == "-":
            data = sys.stdin.buffer.read(limit + 1)
        else:
            data = read_regular(path, limit)
    except OSError as exc:
        raise UsageError(f"{which} file {shown_path(path)}: {exc.strerror}") from None
    except Refused as exc:
        raise UsageError(too_big if exc.too_large else f"{which} file {exc}") from None
    if len(data) > limit:
        raise UsageError(too_big)
    try:
        payload.parse(data, dev)
    except RtcfgError as exc:
        raise UsageError(f"{which} file {shown_path(path)}: {exc}") from None
    return data.decode("ascii")


def _address(text: str) -> str:
    try:
        ipaddress.IPv4Address(text)
        return text
    except ValueError:
        pass
    try:
        return step.mac_text(text)
    except RtcfgError:
        raise argparse.ArgumentTypeError(
            f"invalid address {shown(text)} (an IPv4 or a MAC address)"
        ) from None


def _hw(text: str) -> str:
    try:
        return step.mac_text(text)
    except RtcfgError:
        raise argparse.ArgumentTypeError(f"invalid MAC address {shown(text)}") from None


# --- request builders: one per subcommand -------------------------------------------------


def _output(a) -> str | None:
    return "stdout" if a.stdout else a.file


def req_server(a) -> dict:
    return {
        "cmd": "rtcfg.server",
        "dev": a.dev,
        "period_ms": a.period_ms,
        "burstrate": a.burstrate,
        "heartbeat_ms": a.heartbeat_ms,
        "threshold": a.threshold,
        "ready": a.ready,
    }


def req_add(a) -> dict:
    if a.hw is not None and ":" in a.address:
        raise UsageError("-hw needs an IP address, not a MAC")
    stage1 = stage2 = None
    if a.stage1 is not None:
        stage1 = _read_stage(a.stage1, "stage 1", frames.MAX_STAGE1_LEN, a.dev)
    if a.stage2 is not None:
        if a.stage2 == "-" and a.stage1 == "-":
            raise UsageError("only one of -stage1 and -stage2 can read standard input")
        stage2 = _read_stage(a.stage2, "stage 2", payload.MAX_STAGE2_LEN, a.dev)
    return {
        "cmd": "rtcfg.add",
        "dev": a.dev,
        "address": a.address,
        "hw": a.hw,
        "stage1": stage1,
        "stage2": stage2,
        "timeout_ms": a.timeout_ms,
    }


def req_del(a) -> dict:
    return {"cmd": "rtcfg.del", "dev": a.dev, "address": a.address}


def req_wait(name: str):
    return lambda a: {"cmd": f"rtcfg.{name}", "dev": a.dev, "timeout_ms": a.timeout_ms}


def req_client(a) -> dict:
    return {
        "cmd": "rtcfg.client",
        "dev": a.dev,
        "timeout_ms": a.timeout_ms,
        "output": _output(a),
        "max_stations": a.max_stations,
    }


def req_announce(a) -> dict:
    return {
        "cmd": "rtcfg.announce",
        "dev": a.dev,
        "timeout_ms": a.timeout_ms,
        "output": _output(a),
        "burstrate": a.burstrate,
        "ready": a.ready,
    }


def req_detach(a) -> dict:
    return {"cmd": "rtcfg.detach", "dev": a.dev}


# --- parser --------------------------------------------------------------------------------


def _timeout(p) -> None:
    p.add_argument(
        "-t",
        dest="timeout_ms",
        default=0,
        metavar="timeout",
        type=integer("timeout", 0, MAX_TIMEOUT_MS),
    )


def _burstrate(p) -> None:
    p.add_argument(
        "-b",
        dest="burstrate",
        default=step.DEFAULT_BURSTRATE,
        metavar="burstrate",
        type=integer("burstrate", 1, 255),
    )


def _config_out(p) -> None:
    out = p.add_mutually_exclusive_group()
    out.add_argument("-c", dest="stdout", action="store_true", help="print the configuration")
    out.add_argument("-f", dest="file", metavar="file", help="write the configuration")


def build_parser() -> argparse.ArgumentParser:
    p = RaisingParser(
        prog="rtcfg",
        description="RTcfg configuration service (RTnet's rtcfg syntax).",
        allow_abbrev=False,
    )
    p.add_argument(
        "-n", "--netns", type=netns_name, help="network namespace of the station (like ip -n)"
    )
    p.add_argument("dev")
    cmds = p.add_subparsers(
        dest="command", required=True, metavar="|".join(COMMANDS), parser_class=RaisingParser
    )

    def sub(name, build, **kw):
        # -h is server's heartbeat, as in rtcfg.c: help is --help only
        s = cmds.add_parser(name, add_help=False, allow_abbrev=False, **kw)
        s.add_argument("--help", action="help", help=argparse.SUPPRESS)
        s.set_defaults(build=build)
        return s

    s = sub("server", req_server)
    s.add_argument(
        "-p",
        dest="period_ms",
        default=step.DEFAULT_PERIOD_MS,
        metavar="period",
        type=integer("period", 1, step.MAX_PERIOD_MS),
    )
    _burstrate(s)
    s.add_argument(
        "-h",
        dest="heartbeat_ms",
        default=step.DEFAULT_HEARTBEAT_MS,
        metavar="heartbeat",
        type=integer("heartbeat", 0, step.MAX_HEARTBEAT_MS),
    )
    s.add_argument(
        "-t",
        dest="threshold",
        default=step.DEFAULT_THRESHOLD,
        metavar="threshold",
        type=integer("threshold", 1, 255),
    )
    s.add_argument("-r", dest="ready", action="store_true")

    a = sub("add", req_add)
    a.add_argument("address", type=_address)
    a.add_argument("-hw", dest="hw", type=_hw, metavar="hw_address")
    a.add_argument("-stage1", dest="stage1", metavar="stage1_file")
    a.add_argument("-stage2", dest="stage2", metavar="stage2_file")
    _timeout(a)

    sub("del", req_del).add_argument("address", type=_address)
    _timeout(sub("wait", req_wait("wait")))
    _timeout(sub("ready", req_wait("ready")))
    sub("detach", req_detach)

    c = sub("client", req_client)
    _timeout(c)
    _config_out(c)
    c.add_argument(
        "-m",
        dest="max_stations",
        default=step.DEFAULT_MAX_STATIONS,
        metavar="maxstations",
        type=integer("max stations", 1, MAX_STATIONS),
    )

    an = sub("announce", req_announce)
    _timeout(an)
    _config_out(an)
    _burstrate(an)
    an.add_argument("-r", dest="ready", action="store_true")
    return p


def parse_request(argv: list[str]) -> tuple[dict, argparse.Namespace]:
    """Command line -> (request dict, parsed arguments); UsageError if refused."""
    return parse_device_request(build_parser(), argv)


def _guess_dev(argv: list[str]) -> str | None:
    words = [w for w in argv if not w.startswith("-")]
    if words and len(words[0]) <= 40 and words[0] not in COMMANDS:
        return words[0]
    return None


def _fail(dev: str | None, message: str, status: int) -> int:
    return fail("rtcfg", dev, message, status)


def _write_config(args, reply: dict) -> None:
    config = reply.get("config")
    if not isinstance(config, str) or not (args.stdout or args.file):
        return
    if args.stdout:
        sys.stdout.write(config)
    else:
        with open(args.file, "w", encoding="ascii") as f:
            f.write(config)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        request, args = parse_request(argv)
    except UsageError as exc:
        return _fail(_guess_dev(argv), f"{exc} (see rtcfg --help)", EXIT_USAGE)
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    timeout_ms = request.get("timeout_ms", 0)
    blocking = request["cmd"] in ("rtcfg.wait", "rtcfg.ready", "rtcfg.client", "rtcfg.announce")
    timeout = (timeout_ms / 1000 + 5 if timeout_ms else None) if blocking else 30.0
    try:
        reply = control.send_request(args.dev, request, timeout=timeout, netns=args.netns)
        if request["cmd"] in ("rtcfg.client", "rtcfg.announce"):
            _write_config(args, reply)
    except control.ControlError as exc:
        message = exc.strerror or str(exc)
        if message.startswith("unknown command 'rtcfg."):
            message = UNSUPPORTED
        return _fail(args.dev, message, EXIT_FAILED)
    except OSError as exc:
        return _fail(args.dev, f"{exc.filename or ''}: {exc.strerror}".lstrip(": "), EXIT_FAILED)
    return 0


if __name__ == "__main__":
    sys.exit(main())
