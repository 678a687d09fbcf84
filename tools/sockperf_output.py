"""What sockperf prints, read (tools/bench_sockperf.py): ping-pong --full-rtt's summary,
the throughput client's and the server's totals.  What it does not print as expected is
a BenchError with the tail of what it printed."""

from __future__ import annotations

import re


class BenchError(RuntimeError):
    pass


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def plain(text: str) -> str:
    """sockperf's output without its colour codes."""
    return _ANSI.sub("", text)


def parse_pingpong(text: str) -> dict:
    """sockperf ping-pong --full-rtt's summary: round trips in us."""
    t = plain(text)
    out = {}
    m = re.search(
        r"\[Valid Duration\] RunTime=([\d.]+) sec; SentMessages=(\d+); "
        r"ReceivedMessages=(\d+)",
        t,
    )
    if not m:
        raise BenchError("sockperf ping-pong printed no summary: " + t.strip()[-300:])
    out["valid_s"], out["sent"], out["received"] = float(m[1]), int(m[2]), int(m[3])
    m = re.search(r"avg-rtt=([\d.]+)", t)
    out["avg"] = float(m[1]) if m else None
    for name, pat in (
        ("max", r"<MAX> observation =\s*([\d.]+)"),
        ("min", r"<MIN> observation =\s*([\d.]+)"),
        ("p99.9", r"percentile 99\.900 =\s*([\d.]+)"),
        ("p99", r"percentile 99\.000 =\s*([\d.]+)"),
        ("p50", r"percentile 50\.000 =\s*([\d.]+)"),
    ):
        m = re.search(pat, t)
        out[name] = float(m[1]) if m else None
    m = re.search(r"# dropped messages = (\d+)", t)
    out["dropped"] = int(m[1]) if m else None
    m = re.search(r"Total (\d+) observations", t)
    out["samples"] = int(m[1]) if m else out["received"]
    if out["p50"] is None:
        raise BenchError("sockperf ping-pong printed no percentiles: " + t.strip()[-300:])
    return out


def parse_throughput(text: str) -> dict:
    t = plain(text)
    m = re.search(r"Total of (\d+) messages sent in ([\d.]+) sec", t)
    if not m:
        raise BenchError("sockperf throughput printed no summary: " + t.strip()[-300:])
    return {"sent": int(m[1]), "seconds": float(m[2])}


def parse_server_total(text: str) -> int | None:
    m = re.search(r"Total (\d+) messages received", plain(text))
    return int(m[1]) if m else None
