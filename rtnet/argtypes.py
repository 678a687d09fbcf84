"""argparse types that check a value and its range while the command line is parsed.

Every numeric option of rtnetctl, rtmac, vnic and the tools in tools/ goes
through these, so a bad value is refused at once with one message that names
the allowed range, never later with a traceback (``nan``, ``inf``, ``1e300``,
a 5000-digit count).  Only ASCII digits count: Python's int() and float()
would also take ``１０００``, ``1_000`` or `` 5 ``.  :class:`OneLineParser`
reports a refused command line as one line, without the usage text.

>>> count = integer("count", 1, 100)
>>> count("10")
10
>>> count("0")
Traceback (most recent call last):
argparse.ArgumentTypeError: invalid count: 0 (allowed: 1..100)
>>> number("seconds", 0.001, 60)("nan")
Traceback (most recent call last):
argparse.ArgumentTypeError: invalid seconds: nan (allowed: 0.001..60)
"""

from __future__ import annotations

import argparse
import math
import re
import sys

from .messages import MAX_SHOWN, bounded, one_line
from .names import interface_name_problem, netns_name_problem

_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", re.ASCII)
_MAX_DIGITS = 30  # longer than any limit here; int() of more is work for nothing


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (``prog: message``) and exit status 2."""

    def error(self, message):
        # argparse quotes the words it refuses: each may be of any length
        print(f"{self.prog.split()[0]}: {bounded(one_line(message))}", file=sys.stderr)
        raise SystemExit(2)


def _quote(text: str) -> str:
    return one_line(text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "...")


def _named(parse, what: str):
    parse.__name__ = what  # argparse names the type in some of its own messages
    return parse


def integer(what: str, lo: int, hi: int, *, in_range: bool = True):
    """Type for a whole number in ``lo..hi`` (decimal, ASCII digits).  ``in_range=False``:
    only the form is checked here (``lo..hi`` is shown in its message), for a value whose
    range one rule checks later (a TDMA setting: rtn_tdma_cfg_check(), through
    rtmac.tdma_config.validate())."""

    def parse(text: str) -> int:
        value = None
        if _INT.fullmatch(text) and len(text.lstrip("+-0")) <= _MAX_DIGITS:
            value = int(text)
        if value is None or (in_range and not lo <= value <= hi):
            raise argparse.ArgumentTypeError(
                f"invalid {what}: {_quote(text)} (allowed: {lo}..{hi})"
            )
        return value

    return _named(parse, what)


def power_of_two(what: str, lo: int, hi: int):
    """Type for a power of two in ``lo..hi`` (ring depths)."""
    whole = integer(what, lo, hi)

    def parse(text: str) -> int:
        value = whole(text)
        if value & (value - 1):
            raise argparse.ArgumentTypeError(f"invalid {what}: {value} is not a power of two")
        return value

    return _named(parse, what)


def number(what: str, lo: float, hi: float):
    """Type for a finite decimal number in ``lo..hi``."""

    def parse(text: str) -> float:
        value = float(text) if _FLOAT.fullmatch(text) else math.nan
        if not (math.isfinite(value) and lo <= value <= hi):
            raise argparse.ArgumentTypeError(
                f"invalid {what}: {_quote(text)} (allowed: {lo:g}..{hi:g})"
            )
        return value

    return _named(parse, what)


def integer_list(what: str, lo: int, hi: int):
    """Type for comma-separated whole numbers, each in ``lo..hi`` ('' is the empty list)."""
    one = integer(what, lo, hi)

    def parse(text: str) -> list[int]:
        return [one(part) for part in text.split(",") if part]

    return _named(parse, what)


def interface_name(text: str) -> str:
    """Type for a network interface name the kernel would accept."""
    problem = interface_name_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(f"invalid device name {_quote(repr(text))}: {problem}")
    return text


def netns_name(text: str) -> str:
    """Type for a network namespace name."""
    problem = netns_name_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(f"invalid namespace name {_quote(repr(text))}: {problem}")
    return text
