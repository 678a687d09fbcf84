"""``rtmac``: configure the RTmac disciplines of a station, with RTnet's syntax.

Mirrors tdmacfg and nomaccfg (RTnet utils/net)::

    rtmac tdma <dev> master <cycle_us> [-b us] [-c rounds] [-i max_slot_id] [-m max_cal_requests]
    rtmac tdma <dev> slave [-c rounds] [-i max_slot_id]
    rtmac tdma <dev> slot <id> [<offset_us> [-p x/y] [-s bytes] [-j id] [-w us] [-l file] [-t ms]]
    rtmac tdma <dev> detach
    rtmac tdma <dev> show [-j]
    rtmac nomac <dev> attach|detach
    rtmac tdma plan --stations N ...       (the schedule planner: rtmac/plan_cli.py)

``-w`` is beyond tdmacfg: the slot becomes a transmit window of that many
microseconds, filled with as many frames as fit.  Each command becomes one request
dict (rtmac.commands: the parser and the builders, which RTcfg's command lists
share), checked there as far as possible and sent to the station daemon
(rtmac.control).  Exit status: 0 on success, 2
when the command line is refused before anything is sent, 1 when the
daemon refuses the request or cannot be reached.  Errors are one line,
``rtmac: <dev>: <message>``.
"""

from __future__ import annotations

import json
import sys

from rtnet.devcmd import fail

from . import control
from .commands import (  # noqa: F401 (rtmac's parser, named here as before)
    TDMA_MASTER_FLAGS,
    TDMA_SLAVE_FLAGS,
    UsageError,
    build_parser,
    parse_request,
)

EXIT_USAGE = 2
EXIT_FAILED = 1


# --- output --------------------------------------------------------------------------------


def _print_show(dev: str, reply: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps({k: v for k, v in reply.items() if k != "ok"}, sort_keys=True))
        return
    cfg = reply.get("config")
    if not cfg:
        print(f"{dev}: no TDMA discipline attached")
        return
    role = cfg["role"]
    if role == "master" and cfg.get("backup_offset_us"):
        role = f"backup master (offset {cfg['backup_offset_us']} us)"
    cycle = f"{cfg['cycle_us']} us" if cfg.get("cycle_us") else "from master"
    state = f", state {reply['state']}" if reply.get("state") else ""
    print(f"{dev}: TDMA {role}, cycle {cycle}{state}")
    # the window column only when a slot has one: an RTnet schedule shows as tdmacfg's
    windows = any(s.get("window_us") for s in cfg.get("slots", []))
    print(
        f"{'slot':>4} {'offset_us':>10} {'phasing':>8} {'size':>6} {'joint':>5}"
        + (f" {'window_us':>9}" if windows else "")
    )
    for s in cfg.get("slots", []):
        joint = "-" if s.get("joint") is None else str(s["joint"])
        window = f" {s['window_us'] or '-':>9}" if windows else ""
        print(
            f"{s['id']:>4} {s['offset_us']:>10} {str(s['phasing']) + '/' + str(s['period']):>8}"
            f" {s['size']:>6} {joint:>5}{window}"
        )


def _write_cal_log(path: str, reply: dict) -> None:
    with open(path, "w") as f:
        for ns in reply.get("cal_results", []):
            f.write(f"{int(ns)}\n")


def _guess_dev(argv: list[str]) -> str | None:
    """The device an error is about, if the command line names one (for the message only)."""
    if len(argv) >= 2 and argv[0] in ("tdma", "nomac") and not argv[1].startswith("-"):
        return argv[1] if len(argv[1]) <= 40 else argv[1][:40] + "..."
    return None


def _fail(dev: str | None, message: str, status: int) -> int:
    return fail("rtmac", dev, message, status)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:2] == ["tdma", "plan"]:
        from . import plan_cli  # plans for a segment: no station, no device

        return plan_cli.main(argv[2:])
    try:
        request, args = parse_request(argv)
    except UsageError as exc:
        return _fail(_guess_dev(argv), f"{exc} (see rtmac --help)", EXIT_USAGE)
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    # A slot command blocks while the station calibrates, like tdmacfg.
    if request["cmd"] == "tdma.slot":
        timeout = request["cal_timeout_ms"] / 1000 + 5 if request["cal_timeout_ms"] else None
    else:
        timeout = 30.0
    try:
        reply = control.send_request(args.dev, request, timeout=timeout, netns=args.netns)
        if request["cmd"] == "tdma.show":
            _print_show(args.dev, reply, args.json)
        elif getattr(args, "log_file", None):
            _write_cal_log(args.log_file, reply)
    except control.ControlError as exc:
        return _fail(args.dev, exc.strerror or str(exc), EXIT_FAILED)
    except OSError as exc:
        return _fail(args.dev, f"{exc.filename or ''}: {exc.strerror}".lstrip(": "), EXIT_FAILED)
    return 0


if __name__ == "__main__":
    sys.exit(main())
