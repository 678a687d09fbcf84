"""rtnetctl: bring stations and the lab up and down, show their state.

Like iproute2: human-readable output by default, JSON with -j, one-line
errors (``rtnetctl: <cause>``) and a non-zero exit status on any failure.
"""
import argparse
import json
import sys

from . import __version__
from .errors import ConfigError, RtnetError

PROG = "rtnetctl"


def _print_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


# -- lab ----------------------------------------------------------------------
def cmd_lab_up(args) -> int:
    from .lab import Lab
    lab = Lab(args.name, args.stations).up()
    if args.json:
        _print_json(lab.status())
    else:
        print(f"lab {lab.name}: {lab.n} stations on bridge {lab.wire_netns}/rtbr0")
        for st in lab.stations:
            print(f"  station {st.index}: netns {st.netns}  {st.ifname} {st.mac} {st.ip}/{st.prefixlen}")
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
        for st in s["stations"]:
            for link in st["links"]:
                xdp = " xdp" if link["xdp"] else ""
                print(f"  s{st['index']} {link['ifname']:<8} {link['state']:<5} {link['mac']} "
                      f"{' '.join(link['addresses'])} mtu {link['mtu']}{xdp}")
        for p in s["processes"]:
            print(f"  process {p['pid']} in {p['netns']}")
    return 0


def cmd_lab_demo(args) -> int:
    from .demo import run_frame_demo
    result = run_frame_demo(name=args.name, stations=args.stations, count=args.count,
                            keep=args.keep, out=None if args.json else sys.stdout)
    if args.json:
        _print_json(result)
    return 0 if result["ok"] else 1


def cmd_version(args) -> int:
    from ._lowlevel import core_version
    print(f"rtnetctl {__version__} (C core {core_version()})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="rtnet-xdp station and lab control")
    p.add_argument("-j", "--json", action="store_true", help="JSON output")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    lab = sub.add_parser("lab", help="the lab: stations as network namespaces on one bridge")
    lab_sub = lab.add_subparsers(dest="lab_cmd", required=True, metavar="LABCMD")

    def lab_cmd(name, func, help_):
        sp = lab_sub.add_parser(name, help=help_)
        sp.add_argument("--name", default="lab", help="lab name (default: lab)")
        sp.add_argument("-j", "--json", action="store_true", default=argparse.SUPPRESS)
        sp.set_defaults(func=func)
        return sp

    sp = lab_cmd("up", cmd_lab_up, "create the lab")
    sp.add_argument("--stations", type=int, default=3, help="number of stations (default 3)")
    sp = lab_cmd("down", cmd_lab_down, "remove the lab and everything it started")
    sp.add_argument("--all", action="store_true", help="remove every lab found")
    sp = lab_cmd("status", cmd_lab_status, "list what exists")
    sp = lab_cmd("demo", cmd_lab_demo, "exchange real-time frames over AF_XDP between two stations")
    sp.add_argument("--stations", type=int, default=2)
    sp.add_argument("--count", type=int, default=1000, help="frames to send (default 1000)")
    sp.add_argument("--keep", action="store_true", help="leave the lab up afterwards")

    sp = sub.add_parser("version", help="show versions")
    sp.set_defaults(func=cmd_version)

    def cmd_bench(args) -> int:
        import os
        import subprocess
        tool = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "tools", "bench_suite.py")
        return subprocess.call([sys.executable, tool] + (["--quick"] if args.quick else []))
    sp = sub.add_parser("bench", help="the seeds' measurements: tools/bench_suite.py")
    sp.add_argument("--quick", action="store_true", help="about 2 minutes, as CI runs it")
    sp.set_defaults(func=cmd_bench)
    return p


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    args = parser.parse_args(argv)
    args.name_given = "--name" in argv
    if not hasattr(args, "json"):
        args.json = False
    try:
        return args.func(args)
    except (RtnetError, ConfigError) as exc:
        msg = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        print(f"{PROG}: {msg}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
