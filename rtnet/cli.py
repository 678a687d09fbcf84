"""rtnetctl: bring stations and the lab up and down, show their state.

Like iproute2: human-readable output by default, JSON with -j, one-line
errors (``rtnetctl: <cause>``) and a non-zero exit status on any failure.
"""

import argparse
import contextlib
import json
import os
import sys

from . import __version__, sigterm
from .argtypes import OneLineParser, integer, interface_name, netns_name, number, power_of_two
from .errors import ConfigError, RtnetError
from .messages import bounded, one_line

PROG = "rtnetctl"
# The ranges rtnetd takes in ping and capture requests (rtnet/daemon.py), checked here first.
PING_COUNT = (1, 100_000)
PING_INTERVAL_MS = (1, 60_000)
PING_SIZE = (0, 1500)
PING_TIMEOUT_MS = (1, 60_000)
CAPTURE_COUNT = (1, 10_000)
CAPTURE_SECONDS = (0.001, 60.0)
CAPTURE_RING = (2, 4096)
MAX_WAIT_S = 3600.0  # --timeout of up, --duration of lab up
MAX_FRAMES = 1_000_000  # lab frames --count


def _print_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


# -- lab ----------------------------------------------------------------------
def cmd_lab_up(args) -> int:
    from .lab import Lab

    if not args.bare:
        from . import labdemo

        # a refused run leaves nothing half-built, and an existing lab of the name untouched
        summary = labdemo.run(
            args.name,
            args.stations,
            args.duration,
            out=(lambda *_: None) if args.json else print,
            redundant=args.redundant,
        )
        if args.json:
            _print_json(summary)
        return 0 if summary.get("ok", True) else 1
    lab = Lab(args.name, args.stations, redundant=args.redundant).up()
    if args.json:
        _print_json(lab.status())
    else:
        wires = f"bridge {lab.wire_netns}/rtbr0"
        if lab.redundant:
            wires = f"bridges {lab.wire_netns}/rtbr0 (wire A) and {lab.wire_b_netns}/rtbr0 (wire B)"
        print(f"lab {lab.name}: {lab.n} stations on {wires} (bare)")
        for st in lab.stations:
            ports = f"{st.ifname} {st.mac} {st.ip}/{st.prefixlen}"
            if lab.redundant:
                ports += f", rteth1 {st.mac} {st.ip_b}/{st.prefixlen}"
            print(f"  station {st.index}: netns {st.netns}  {ports}")
    return 0


def cmd_lab_down(args) -> int:
    from .lab import Lab, all_labs

    names = all_labs() if args.all else [args.name]
    removed = []
    for name in names:
        removed += Lab(name, 1).down()
    if args.json:
        _print_json({"removed": removed})
    elif not removed:
        print(f"lab {args.name}: nothing to remove" if not args.all else "no lab found")
    else:
        for item in removed:
            print(f"removed {item}")
    return 0


def cmd_lab_status(args) -> int:
    from .lab import Lab, all_labs

    names = all_labs()
    if args.name_given:
        names = [args.name]
    statuses = [Lab(n, 1).status() for n in names]
    if args.json:
        _print_json(statuses)
        return 0
    if not statuses:
        print("no lab")
        return 0
    for s in statuses:
        if not s["exists"]:
            print(f"lab {s['name']}: does not exist")
            continue
        print(f"lab {s['name']}: namespaces {' '.join(s['namespaces'])}")
        for w in s["wires"]:
            ports = " ".join(f"{p['ifname']}:{p['state']}" for p in w["ports"])
            print(
                f"  wire {w['wire'].upper()} {w['netns']}/{w['bridge']}: "
                f"{w.get('error') or ports or 'no ports'}"
            )
        for st in s["stations"]:
            for link in st["links"]:
                xdp = " xdp" if link["xdp"] else ""
                print(
                    f"  s{st['index']} {link['ifname']:<8} {link['state']:<5} {link['mac']} "
                    f"{' '.join(link['addresses'])} mtu {link['mtu']}{xdp}"
                )
        for p in s["processes"]:
            print(f"  process {p['pid']} in {p['netns']}")
    return 0


def cmd_lab_demo(args) -> int:
    from .demo import run_frame_demo

    result = run_frame_demo(
        name=args.name,
        stations=args.stations,
        count=args.count,
        keep=args.keep,
        out=None if args.json else sys.stdout,
    )
    if args.json:
        _print_json(result)
    return 0 if result["ok"] else 1


# -- station daemon -------------------------------------------------------------
def cmd_up(args) -> int:
    from .stationctl import up

    say = (lambda _: None) if args.json else (lambda line: print(line, flush=True))
    info = up(
        args.config,
        dev=args.dev,
        netns=args.netns,
        timeout=args.timeout,
        rtcfg=args.rtcfg,
        say=say,
        redundant_dev=args.redundant_dev,
    )
    if args.json:
        _print_json(info)
    else:
        r = info.get("rtcfg")
        how = ""
        if r and r["role"] == "server":
            how = f", RTcfg server: {len(r['stations'])} stations configured and ready"
        elif r:
            how = ", RTcfg client: configured and ready"
        print(
            f"{info['dev']}: rtnetd running (pid {info['pid']}, {info['discipline']}, "
            f"log {info['log']}){how}"
        )
    return 0


def cmd_down(args) -> int:
    from .stationctl import down

    info = down(args.dev, netns=args.netns)
    if args.json:
        _print_json(info)
    else:
        print(
            f"{args.dev}: {info['result']}"
            + (f" (cleaned {', '.join(info['cleaned'])})" if info["cleaned"] else "")
        )
    return 0


def cmd_status(args) -> int:
    from .stationctl import format_status, request

    status = request(args.dev, {"cmd": "status"}, netns=args.netns)["status"]
    if args.json:
        _print_json(status)
    else:
        sys.stdout.write(format_status(status))
    return 0


def cmd_ping(args) -> int:
    from .stationctl import request

    req = {
        "cmd": "ping",
        "dst": args.dst,
        "count": args.count,
        "interval_ms": args.interval,
        "size": args.size,
        "timeout_ms": args.timeout,
        "echo": args.echo,
    }
    events = []

    def show(ev):
        events.append(ev)
        if args.json:
            return
        if ev["event"] == "reply":
            print(
                f"{args.size} bytes from {ev['from']}: seq={ev['seq']} time={ev['rtt_us']:.1f} us",
                flush=True,
            )
        else:
            print(f"seq={ev['seq']}: no reply within {args.timeout} ms", flush=True)

    # every echo may wait up to timeout_ms, plus the interval between them
    total = args.count * (args.interval + args.timeout) / 1000 + 10
    reply = request(args.dev, req, netns=args.netns, timeout=total, on_event=show)
    if args.json:
        _print_json({k: v for k, v in reply.items() if k != "ok"} | {"events": events})
    else:
        print(f"--- {args.dst} rtping statistics ---")
        print(f"{reply['sent']} packets transmitted, {reply['received']} received")
        if reply["worst_us"] is not None:
            print(f"worst case rtt = {reply['worst_us']:.1f} us")
    return 0 if reply["received"] else 1


def cmd_capture(args) -> int:
    import base64

    from .stationctl import request

    req = {
        "cmd": "capture",
        "count": args.count,
        "duration_ms": max(1, round(args.time * 1000)),
        "depth": args.ring,
    }
    # Open the file first: one that cannot be written must not cost the capture.  Append
    # mode leaves an existing file as it is until the frames are there.
    existed = os.path.exists(args.write)
    try:
        f = open(args.write, "ab")
    except OSError as exc:
        raise RtnetError(exc.errno, f"{args.write}: {exc.strerror}") from None
    with f:
        try:
            reply = request(args.dev, req, netns=args.netns, timeout=args.time + 10)
        except BaseException:
            if not existed:
                with contextlib.suppress(OSError):
                    os.unlink(args.write)
            raise
        try:
            f.truncate(0)
            f.write(base64.b64decode(reply["pcapng_b64"]))
            f.flush()
        except OSError as exc:  # e.g. the disk filled up meanwhile
            raise RtnetError(exc.errno, f"{args.write}: {exc.strerror}") from None
    if args.json:
        _print_json({"frames": reply["frames"], "dropped": reply["dropped"], "file": args.write})
    else:
        dropped = f" ({reply['dropped']} dropped: capture ring full)" if reply["dropped"] else ""
        print(f"{reply['frames']} frames written to {args.write}{dropped}")
    return 0


def cmd_check(args) -> int:
    from .preflight import check_machine, failed, format_change, format_table, target_for

    if args.netns:
        raise ConfigError(
            "check reads this namespace's devices and /sys: run it inside the "
            "namespace instead (ip netns exec NAME rtnetctl check)"
        )
    if args.unthrottle and not args.apply:
        raise ConfigError("--unthrottle only goes with --apply")
    target = target_for(args.dev, args.config)
    results = check_machine(target, apply=args.apply, unthrottle=args.unthrottle)
    if args.measure:
        from .preflight import measured_rt_cpu
        from .preflight.measure import check_wakeup, measure_wakeups

        results.append(
            check_wakeup(measure_wakeups(measured_rt_cpu(target), args.measure, target.priority))
        )
    if args.json:
        _print_json([r.to_json() for r in results])
    else:
        for r in results:
            for change in r.applied:
                print(format_change(r.name, change))
        sys.stdout.write(format_table(results))
    return 1 if failed(results) else 0


def cmd_version(args) -> int:
    from ._lowlevel import core_version

    print(f"rtnetctl {__version__} (C core {core_version()})")
    return 0


def _stations(text: str) -> int:
    from .lab import MAX_STATIONS  # imports pyroute2: only when the option is given

    return integer("stations", 1, MAX_STATIONS)(text)


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog=PROG, description="rtnet-xdp station and lab control")
    p.add_argument("-j", "--json", action="store_true", help="JSON output")
    p.add_argument(
        "-n",
        "--netns",
        default=None,
        type=netns_name,
        help="network namespace of the station (like ip -n)",
    )
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    lab = sub.add_parser("lab", help="the lab: stations as network namespaces on one bridge")
    lab_sub = lab.add_subparsers(dest="lab_cmd", required=True, metavar="LABCMD")

    def lab_cmd(name, func, help_):
        sp = lab_sub.add_parser(name, help=help_)
        sp.add_argument("--name", default="lab", help="lab name (default: lab)")
        sp.add_argument("-j", "--json", action="store_true", default=argparse.SUPPRESS)
        sp.set_defaults(func=func)
        return sp

    sp = lab_cmd("up", cmd_lab_up, "bring up the demo segment (or, with --bare, only the lab)")
    sp.add_argument("--stations", type=_stations, default=3, help="number of stations (default 3)")
    sp.add_argument(
        "--duration",
        type=number("duration", 0.1, MAX_WAIT_S),
        default=5.0,
        help="seconds of live view before the summary (default 5)",
    )
    sp.add_argument(
        "--bare",
        action="store_true",
        help="only the namespaces, veths and bridge: no daemons, no traffic",
    )
    sp.add_argument(
        "--redundant",
        action="store_true",
        help="two independent wires, every station with rteth0 on wire A and rteth1 "
        "on wire B: the segment runs IEEE 802.1CB on both, the publisher on a "
        "redundant channel, wire A cut and restored during the run (with "
        "--bare: the namespaces only)",
    )
    sp = lab_cmd("down", cmd_lab_down, "remove the lab and everything it started")
    sp.add_argument("--all", action="store_true", help="remove every lab found")
    sp = lab_cmd("status", cmd_lab_status, "list what exists")
    sp = lab_cmd(
        "frames", cmd_lab_demo, "exchange raw real-time frames over AF_XDP between stations"
    )
    sp.add_argument("--stations", type=_stations, default=2)
    sp.add_argument(
        "--count",
        type=integer("count", 1, MAX_FRAMES),
        default=1000,
        help="frames to send (default 1000)",
    )
    sp.add_argument("--keep", action="store_true", help="leave the lab up afterwards")

    def station_cmd(name, func, help_):
        sp = sub.add_parser(name, help=help_)
        sp.add_argument(
            "-n",
            "--netns",
            default=argparse.SUPPRESS,
            type=netns_name,
            help="network namespace of the station (like ip -n)",
        )
        sp.add_argument(
            "--dev", default="rteth0", type=interface_name, help="real-time device (default rteth0)"
        )
        sp.add_argument("-j", "--json", action="store_true", default=argparse.SUPPRESS)
        sp.set_defaults(func=func)
        return sp

    sp = station_cmd("up", cmd_up, "start the station daemon (rtnetd) detached")
    sp.add_argument(
        "-c",
        "--config",
        default="/etc/rtnet/rtnet.toml",
        help="rtnet.toml or rtnet.conf (default /etc/rtnet/rtnet.toml)",
    )
    sp.add_argument(
        "--timeout",
        type=number("timeout", 0.1, MAX_WAIT_S),
        default=20.0,
        help="seconds to wait for the daemon to answer (default 20)",
    )
    sp.add_argument(
        "--rtcfg",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="bring the segment up with RTcfg: the master serves the stations' "
        "configuration, a slave receives its IP and slots (default: yes for "
        "rtnet.conf, as rtnet start does; rtnet.toml: [rtcfg] enabled)",
    )
    sp.add_argument(
        "--redundant-dev",
        type=interface_name,
        default=None,
        help="second device: IEEE 802.1CB redundancy on two wires (overrides link.redundant_dev)",
    )
    sp.set_defaults(dev=None)
    station_cmd("down", cmd_down, "stop the station daemon and clean up after it")
    station_cmd("status", cmd_status, "show the station's state and counters")
    sp = station_cmd(
        "ping",
        cmd_ping,
        "ICMP echo through the real-time slots (RTnet's rtping); "
        "to a MAC, or with --echo, the daemon's echo service",
    )
    sp.add_argument(
        "dst",
        help="the peer station's IPv4 address (ICMP, needs a route: "
        "rtroute add) or MAC (echo service)",
    )
    sp.add_argument(
        "--echo", action="store_true", help="the echo service on its own EtherType instead of ICMP"
    )
    sp.add_argument(
        "-c", dest="count", type=integer("count", *PING_COUNT), default=4, help="count (default 4)"
    )
    sp.add_argument(
        "-i",
        dest="interval",
        type=integer("interval", *PING_INTERVAL_MS),
        default=1000,
        help="interval in ms (default 1000)",
    )
    sp.add_argument(
        "-s",
        dest="size",
        type=integer("size", *PING_SIZE),
        default=56,
        help="ICMP echo data bytes, at most 1472 (default 56); with the echo "
        "service, bytes after the Ethernet header",
    )
    sp.add_argument(
        "-t",
        dest="timeout",
        type=integer("timeout", *PING_TIMEOUT_MS),
        default=500,
        help="reply timeout in ms (default 500)",
    )
    sp = station_cmd(
        "capture",
        cmd_capture,
        "record what the real-time thread sends and receives into a pcapng file",
    )
    sp.add_argument("-w", dest="write", required=True, metavar="FILE", help="pcapng file to write")
    sp.add_argument(
        "-c",
        dest="count",
        type=integer("count", *CAPTURE_COUNT),
        default=100,
        help="stop after this many frames (default 100)",
    )
    sp.add_argument(
        "-t",
        dest="time",
        type=number("time", *CAPTURE_SECONDS),
        default=10.0,
        help="stop after this many seconds (default 10)",
    )
    sp.add_argument(
        "-B",
        dest="ring",
        type=power_of_two("ring", *CAPTURE_RING),
        default=1024,
        metavar="FRAMES",
        help="capture ring entries, a power of two (default 1024); "
        "the real-time thread drops and counts what does not fit",
    )

    sp = sub.add_parser("check", help="preflight: what decides real-time timing on this machine")
    sp.add_argument(
        "dev",
        nargs="?",
        default=None,
        type=interface_name,
        help="real-time device (default: the configuration's, else rteth0)",
    )
    sp.add_argument(
        "-c",
        "--config",
        default=None,
        help="rtnet.toml or rtnet.conf of the station (rt.cpu, rt.priority, device)",
    )
    sp.add_argument("-j", "--json", action="store_true", default=argparse.SUPPRESS)
    sp.add_argument(
        "--apply",
        action="store_true",
        help="make the fixable settings (each write printed, old -> new)",
    )
    sp.add_argument(
        "--unthrottle",
        action="store_true",
        help="with --apply, also lift RT throttling (sched_rt_runtime_us -1)",
    )
    sp.add_argument(
        "--measure",
        type=number("measure seconds", 0.5, 600),
        default=0,
        metavar="SECONDS",
        help="also run a SCHED_FIFO thread on the RT CPU this long and report how "
        "late it wakes, with the TDMA guard that covers it",
    )
    sp.set_defaults(func=cmd_check)

    sp = sub.add_parser("version", help="show versions")
    sp.set_defaults(func=cmd_version)

    def cmd_bench(args) -> int:
        import os

        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        argv = [sys.executable, "-m", "tools.bench_suite"] + (["--quick"] if args.quick else [])
        # Ctrl-C and SIGTERM: the suite takes its labs down, and this waits for it
        return sigterm.run_child(argv, cwd=root)

    sp = sub.add_parser("bench", help="the seeds' measurements: python3 -m tools.bench_suite")
    sp.add_argument(
        "--quick",
        action="store_true",
        help="one run under the protocol's [quick] values, a smoke test as CI runs it",
    )
    sp.set_defaults(func=cmd_bench)
    return p


def main(argv=None) -> int:
    as_program = argv is None  # not a call from within another program (a test, a tool)
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    args.name_given = "--name" in argv
    if not hasattr(args, "json"):
        args.json = False
    if as_program:
        sigterm.unwind_on_sigterm()  # stopped with SIGTERM, a command ends as on Ctrl-C
    try:
        return args.func(args)
    except (RtnetError, ConfigError) as exc:
        msg = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        print(f"{PROG}: {bounded(one_line(msg))}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
