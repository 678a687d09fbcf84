"""rtnet-run: run an unmodified program with its sockets on a station's real-time path.

    rtnet-run [-n NETNS] [--dev DEV] [--rules FILE] [--fallback kernel|fail] -- PROGRAM ARGS

The onload of this stack.  It asks the station daemon of DEV (in NETNS, or the
caller's namespace) for its real-time IPv4 address, subnet and EtherTypes,
preloads librtnet_preload.so into PROGRAM and runs it inside NETNS.  The
program's UDP sockets bound to the station's real-time address (or sending
into its subnet) and its packet sockets of an EtherType the station carries
then go through the station's channels; every other socket stays the
kernel's.  A rules file (first match wins) chooses otherwise:

    # rt|os  udp     LOCAL           REMOTE          [prio N] [slot N] [lifetime US]
    rt       udp     *:36000         *                                   # RTnet's rtt-responder
    rt       udp     *               224.0.0.22:4840 lifetime 1000       # cyclic: 1 ms, then stale
    os       udp     *:53            *
    rt       packet  0x88b5                          prio 2

LOCAL and REMOTE are '*', ADDRESS[/PREFIX][:PORT] or *:PORT; the user's rules
come before the defaults.  lifetime: a datagram not on the wire that many
microseconds after the program sent it is dropped and counted by the station
(rtnetctl status: the channel's expired).  A malformed rule stops the program
before it starts, with one line naming the line.  RTNET_RULES="rule; rule" gives rules
in the environment (before the file's).

What a preloaded library cannot see: statically linked programs, raw
syscall(2) and io_uring go to the kernel as they are.  A socket the rules
hand to the real-time path at bind, connect or its first send must not be in
a blocking kernel call on another thread at that moment.  Its descriptor is
always closed across exec (a channel cannot survive it); after fork parent
and child share it, and one of them at a time may use it.

--include-dir prints the directory of rtnet.h (RTnet's socket ioctls), for
`gcc -I"$(rtnet-run --include-dir)" prog.c`; --library the library's path.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import shutil
import socket
import sys

from . import control_client, netns, paths
from .argtypes import interface_name

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LIBRARY = "librtnet_preload.so"


def library_path() -> str:
    """The built library: the source tree's build (a checkout, where make rebuilt it last),
    else the copy installed next to the package."""
    for path in (os.path.join(ROOT, "csrc", "build", LIBRARY), os.path.join(HERE, LIBRARY)):
        if os.path.exists(path):
            return path
    raise FileNotFoundError(
        f"{LIBRARY} is not built (make -C csrc preload, or tools/setup-system.sh)"
    )


def include_dir() -> str:
    for path in (os.path.join(ROOT, "csrc", "include"), os.path.join(HERE, "include")):
        if os.path.exists(os.path.join(path, "rtnet.h")):
            return path
    raise FileNotFoundError("rtnet.h is not installed")


def station_facts(dev: str, ns: str | None) -> dict:
    """What the library needs from the station: its address, subnet, EtherTypes, ifindex.

    An empty dict when no daemon answers (the library then warns or fails per --fallback)."""
    try:
        st = control_client.call(dev, {"cmd": "status"}, netns=ns, timeout=5.0)["status"]
    except control_client.ControlClientError as exc:
        if exc.no_daemon:
            return {}
        raise
    facts = {"ethertypes": st.get("daemon", {}).get("ethertypes", [])}
    addr = (st.get("ipv4") or {}).get("address")
    with netns.entered(ns):
        try:
            facts["ifindex"] = socket.if_nametoindex(dev)
        except OSError:
            facts["ifindex"] = 0
        prefix = _prefix_on(dev, addr) if addr else None
    if addr:
        facts["addr"] = addr
        net = ipaddress.ip_interface(f"{addr}/{prefix or 24}").network
        facts["subnet"] = str(net)
    return facts


def _prefix_on(dev: str, addr: str) -> int | None:
    """The prefix Linux has for ``addr`` on ``dev`` (the segment's subnet), if it has one."""
    from pyroute2 import IPRoute

    with IPRoute() as ipr:
        idx = ipr.link_lookup(ifname=dev)
        if not idx:
            return None
        for msg in ipr.get_addr(index=idx[0], family=socket.AF_INET):
            if msg.get_attr("IFA_ADDRESS") == addr:
                return msg["prefixlen"]
    return None


def environment(args, facts: dict, lib: str) -> dict:
    env = dict(os.environ)
    env["LD_PRELOAD"] = lib + (" " + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    env["RTNET_DEV"] = args.dev
    if args.netns:
        env["RTNET_NETNS"] = args.netns
    if args.rules:
        env["RTNET_RULES_FILE"] = os.path.abspath(args.rules)
    env["RTNET_FALLBACK"] = args.fallback
    if args.verbose:
        env["RTNET_VERBOSE"] = "1"
    env["RTNET_RUN_DIR"] = paths.base_dir()
    for key, name in (
        ("addr", "RTNET_RT_ADDR"),
        ("subnet", "RTNET_RT_SUBNET"),
        ("ifindex", "RTNET_IFINDEX"),
    ):
        if facts.get(key):
            env[name] = str(facts[key])
        else:
            env.pop(name, None)
    ets = facts.get("ethertypes") or []
    if ets:
        env["RTNET_ETHERTYPES"] = ",".join(f"{et:#06x}" for et in ets)
    else:
        env.pop("RTNET_ETHERTYPES", None)
    return env


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="rtnet-run",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run an unmodified, dynamically linked program with its UDP and packet "
        "sockets on a station's real-time path.",
        epilog=__doc__.split("\n\n", 2)[2],
    )
    ap.add_argument("-n", "--netns", help="the station's network namespace (default: ours)")
    ap.add_argument(
        "--dev", type=interface_name, default="rteth0", help="the station's device (default rteth0)"
    )
    ap.add_argument("--rules", metavar="FILE", help="rules file (first match wins)")
    ap.add_argument(
        "--fallback",
        choices=("kernel", "fail"),
        default="kernel",
        help="no station daemon: sockets stay the kernel's with one warning "
        "(kernel, the default) or their calls fail with ENETDOWN (fail)",
    )
    ap.add_argument("-v", "--verbose", action="store_true", help="say which sockets go real-time")
    ap.add_argument("--include-dir", action="store_true", help="print where rtnet.h is")
    ap.add_argument("--library", action="store_true", help="print the library's path")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- PROGRAM ARGS")
    args = ap.parse_args(argv)
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    if not (args.include_dir or args.library) and not args.command:
        ap.error("no program given (rtnet-run [options] -- PROGRAM ARGS)")
    if args.rules and not os.path.isfile(args.rules):
        why = "a directory" if os.path.isdir(args.rules) else "no such file"
        ap.error(f"rules file {args.rules}: {why}")
    return args


def _device_missing(dev: str, ns: str | None) -> bool:
    with netns.entered(ns):
        try:
            socket.if_nametoindex(dev)
        except OSError:
            return True
    return False


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        if args.include_dir:
            print(include_dir())
            return 0
        lib = library_path()
        if args.library:
            print(lib)
            return 0
        if args.netns and not netns.exists(args.netns):
            raise FileNotFoundError(f"network namespace {args.netns!r} does not exist")
        facts = station_facts(args.dev, args.netns)
    except (OSError, control_client.ControlClientError) as exc:
        print(
            f"rtnet-run: {exc.strerror or exc}"
            if isinstance(exc, OSError) and exc.strerror
            else f"rtnet-run: {exc}",
            file=sys.stderr,
        )
        return 2
    if args.command and shutil.which(args.command[0]) is None:
        print(f"rtnet-run: {args.command[0]}: no such program", file=sys.stderr)
        return 127
    if not facts:
        where = f" in {args.netns}" if args.netns else ""
        if _device_missing(args.dev, args.netns):
            where += f" (there is no device {args.dev})"
        if args.fallback == "fail":
            print(
                f"rtnet-run: no station daemon for {args.dev}{where}: its sockets will "
                "fail with ENETDOWN",
                file=sys.stderr,
            )
        else:
            print(
                f"rtnet-run: no station daemon for {args.dev}{where}: the program's "
                "sockets stay the kernel's",
                file=sys.stderr,
            )
    env = environment(args, facts, lib)
    argv = netns.command(args.netns, args.command) if args.netns else args.command
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as exc:
        print(f"rtnet-run: {argv[0]}: {exc.strerror}", file=sys.stderr)
        return 127
    return 0


if __name__ == "__main__":
    sys.exit(main())
