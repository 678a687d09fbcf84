"""``rtmac tdma plan``: lay out a TDMA segment and print its configuration.

    rtmac tdma plan --stations N [--cycle-us US] [--link-rate MBPS] [--rt-size B[,B...]]
                    [--nrt-size B] [--no-backup] [--guard-ns NS] [--gap-us US]
                    [--weights W,W,...] [--window N=US ...]
                    [--format text|tdma.conf|toml] [--station N] [--png FILE]

Without --cycle-us the cycle is 1000 us, or the shortest multiple of 500 us
that fits the stations.  ``text`` (the default) prints a drawing of the cycle
and every station's slots; ``tdma.conf`` the whole segment as an extended
tdma.conf; ``toml`` the [tdma] section of --station's rtnet.toml (all
stations without --station).  Exit status 0, or 2 with one error line.
"""

from __future__ import annotations

import argparse
import sys

from rtnet.argtypes import integer, integer_list
from rtnet.errors import ConfigError
from rtnet.messages import bounded, one_line

from .plan import DEFAULT_GAP_US, plan, shortest_cycle_us
from .tdma_config import DEFAULT_GUARD_NS, LIMITS, MAX_MTU, MIN_SLOT_SIZE


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise ConfigError(message)


def _window(text: str) -> tuple[int, int]:
    station, sep, us = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"invalid window: {one_line(text[:40])} (expected N=US)")
    return integer("station", 1, 64)(station), integer("window", 1, 1_000_000)(us)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="rtmac tdma plan", description="Lay out a TDMA segment.")
    p.add_argument("--stations", required=True, type=integer("stations", 1, 64))
    p.add_argument("--cycle-us", type=integer("cycle", *LIMITS["cycle_us"]))
    p.add_argument(
        "--link-rate", type=integer("link rate", 1, LIMITS["link_rate_mbps"][1]), default=100
    )
    p.add_argument(
        "--rt-size", type=integer_list("RT slot size", MIN_SLOT_SIZE, MAX_MTU), default=[200]
    )
    p.add_argument(
        "--nrt-size", type=integer("NRT slot size", MIN_SLOT_SIZE, MAX_MTU), default=MAX_MTU
    )
    p.add_argument("--no-backup", action="store_true", help="no backup master (station 2)")
    p.add_argument(
        "--guard-ns", type=integer("guard", *LIMITS["guard_ns"]), default=DEFAULT_GUARD_NS
    )
    p.add_argument("--gap-us", type=integer("gap", 0, 10_000), default=DEFAULT_GAP_US)
    p.add_argument("--weights", type=integer_list("weight", 1, 1000))
    p.add_argument(
        "--window",
        type=_window,
        action="append",
        default=[],
        help="fix station N's window to US microseconds",
    )
    p.add_argument("--format", choices=("text", "tdma.conf", "toml"), default="text")
    p.add_argument("--station", type=integer("station", 1, 64))
    p.add_argument("--png", metavar="FILE")
    return p


def main(argv: list[str]) -> int:
    try:
        a = build_parser().parse_args(argv)
        if not a.rt_size:
            raise ConfigError("--rt-size: at least one RT slot size")
        sizes = a.rt_size if len(a.rt_size) > 1 else a.rt_size[0]
        kw = dict(
            link_rate_mbps=a.link_rate,
            rt_sizes=sizes,
            nrt_size=a.nrt_size,
            backup=not a.no_backup,
            guard_ns=a.guard_ns,
            gap_us=a.gap_us,
            weights=a.weights,
            windows_us=dict(a.window),
        )
        cycle = a.cycle_us or shortest_cycle_us(a.stations, **kw)
        p = plan(a.stations, cycle_us=cycle, **kw)
        if a.station is not None and a.station > a.stations:
            raise ConfigError(f"--station {a.station}: the plan has {a.stations} stations")
        if a.format == "text":
            print(p.drawing())
        elif a.format == "tdma.conf":
            print(p.tdma_conf(), end="")
        else:
            for st in [a.station] if a.station else range(1, a.stations + 1):
                print(f"# station {st} ({p.station(st).role})\n{p.toml(st)}")
        if a.png:
            p.png(a.png)
    except ConfigError as exc:
        print(bounded(one_line(f"rtmac tdma plan: {exc}")), file=sys.stderr)
        return 2
    except OSError as exc:
        print(
            bounded(one_line(f"rtmac tdma plan: {exc.filename}: {exc.strerror}")), file=sys.stderr
        )
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    return 0
