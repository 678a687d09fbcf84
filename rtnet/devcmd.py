"""What the tools that drive one device's rtnetd in RTnet's syntax share (rtmac for
tdmacfg and nomaccfg, rtcfg): a parser whose refusals are exceptions, the device check,
and the one error line they print."""

from __future__ import annotations

import argparse
import sys

from .messages import bounded, one_line, shown
from .names import interface_name_problem


class UsageError(Exception):
    """The command line is wrong; nothing was sent."""


class RaisingParser(argparse.ArgumentParser):
    """argparse whose refusals raise UsageError, so the tool prints them its own way."""

    def error(self, message):
        raise UsageError(message)


def parse_device_request(
    parser: argparse.ArgumentParser, argv: list[str]
) -> tuple[dict, argparse.Namespace]:
    """Command line -> (request dict, parsed arguments): each subcommand sets ``build``,
    which makes the request; UsageError if refused, a bad device name included."""
    args = parser.parse_args(argv)
    problem = interface_name_problem(args.dev)
    if problem:
        raise UsageError(f"invalid device name {shown(args.dev)}: {problem}")
    return args.build(args), args


def fail(prog: str, dev: str | None, message: str, status: int) -> int:
    """Print ``prog: dev: message`` as one bounded line; return ``status``."""
    prefix = f"{prog}: {dev}: " if dev else f"{prog}: "
    print(bounded(one_line(prefix + message)), file=sys.stderr)
    return status
