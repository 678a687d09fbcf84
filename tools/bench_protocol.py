"""The benchmark protocol (tools/bench_protocol.toml): read, checked, and used as defaults.

Every key has one row in SCHEMA: its table in the file, its kind and its range.  The
suite's command-line flags of the same name take their types from here, so a value the
file may not hold the command line may not give either.  ``load`` refuses a file that
does not parse, an unknown table or key, a missing key or a value out of range with
one ProtocolError whose message names the file and the key.

>>> p = load(DEFAULT_PATH)
>>> p.values["latency_trials"] >= 20
True
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import tomllib
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_PATH = os.path.join(HERE, "bench_protocol.toml")
VERSION = 1
GUARD_MAX_US = 450  # the slave's window (at least the guard) and the master's still fit

# key: (table, kind, lo, hi); kinds: int, float, ints (a list of int), guard ("auto" or int)
SCHEMA = {
    "runs": ("runs", "int", 1, 100),
    "messages": ("matrix", "int", 1, 10_000_000),
    "chunks": ("matrix", "int", 1, 1000),
    "lead_us": ("matrix", "int", 0, 999),
    "guard_us": ("matrix", "guard", 1, GUARD_MAX_US),
    "ct_seconds": ("matrix", "int", 1, 3600),
    "stall_period_us": ("matrix", "int", 10, 100_000),
    "stall_threshold_us": ("matrix", "int", 1, 100_000),
    "sizes": ("rfc2544", "ints", 64, 1518),
    "link_rates_mbps": ("rfc2544", "ints", 10, 100_000),
    "trial_s": ("rfc2544", "float", 0.1, 600),
    "resolution_pct": ("rfc2544", "float", 0.01, 100),
    "max_trials": ("rfc2544", "int", 1, 100),
    "loss_verify": ("rfc2544", "int", 0, 10),
    "disturbed_ms": ("rfc2544", "float", 0, 60_000),
    "retry_disturbed": ("rfc2544", "int", 0, 10),
    "confirm_s": ("rfc2544", "float", 0.1, 600),
    "latency_trials": ("rfc2544", "int", 20, 1000),
    "latency_trial_s": ("rfc2544", "float", 0.01, 600),
    "flood_s": ("rfc2544", "float", 0.1, 600),
    "flood_repeats": ("rfc2544", "int", 1, 20),
    "ping_count": ("vnic", "int", 1, 100_000),
    "vnic_seconds": ("vnic", "int", 1, 600),
    "cut_runs": ("frer", "int", 1, 1000),
    "cut_messages": ("frer", "int", 3, 1_000_000),
}
TABLES = {t for t, *_ in SCHEMA.values()}


class ProtocolError(ValueError):
    """A protocol file that cannot be used; the message is one line naming the key."""


@dataclass
class Protocol:
    path: str
    sha256: str
    values: dict  # every key of SCHEMA
    quick: dict = field(default_factory=dict)  # the keys [quick] sets

    def defaults(self, quick: bool) -> dict:
        return {**self.values, **(self.quick if quick else {})}


def describe(key: str) -> str:
    """The allowed values of ``key``, in words."""
    _t, kind, lo, hi = SCHEMA[key]
    what = {
        "int": "a whole number",
        "float": "a number",
        "ints": "a list of whole numbers",
        "guard": '"auto" or a whole number',
    }[kind]
    return f"{what} in {lo:g}..{hi:g}"


def check(key: str, value, where: str):
    """``value`` for ``key`` as the suite uses it; ProtocolError naming ``where`` if not."""
    _t, kind, lo, hi = SCHEMA[key]

    def whole(v):
        return isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi

    if kind == "int":
        ok = whole(value)
    elif kind == "float":
        ok = (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and math.isfinite(value)
            and lo <= value <= hi
        )
        value = float(value) if ok else value
    elif kind == "ints":
        ok = isinstance(value, list) and len(value) > 0 and all(whole(v) for v in value)
    else:
        ok = value == "auto" or whole(value)
    if not ok:
        raise ProtocolError(f"{where}: {value!r} is not allowed ({describe(key)})")
    return value


def load(path: str = DEFAULT_PATH) -> Protocol:
    """The protocol in ``path``, every key checked."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise ProtocolError(f"{path}: cannot read: {e.strerror}") from None
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ProtocolError(f"{path}: does not parse: {e}") from None
    name = os.path.basename(path)
    if doc.get("version") != VERSION:
        raise ProtocolError(
            f"{name}: version: {doc.get('version')!r} is not allowed "
            f"(this suite reads version {VERSION})"
        )
    values, quick = {}, {}
    for table, body in doc.items():
        if table == "version":
            continue
        if table not in TABLES | {"quick"} or not isinstance(body, dict):
            raise ProtocolError(
                f"{name}: {table}: unknown table (known: {', '.join(sorted(TABLES | {'quick'}))})"
            )
        for key, value in body.items():
            if key not in SCHEMA or (table != "quick" and SCHEMA[key][0] != table):
                raise ProtocolError(f"{name}: {table}.{key}: unknown key")
            (quick if table == "quick" else values)[key] = check(
                key, value, f"{name}: {table}.{key}"
            )
    missing = [f"{SCHEMA[k][0]}.{k}" for k in SCHEMA if k not in values]
    if missing:
        raise ProtocolError(
            f"{name}: {missing[0]}: missing"
            + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
        )
    return Protocol(
        path=os.path.abspath(path),
        sha256=hashlib.sha256(raw).hexdigest(),
        values=values,
        quick=quick,
    )


def argtype(key: str):
    """An argparse type for ``key``'s flag: the same kinds and ranges as the file."""
    _t, kind, _lo, _hi = SCHEMA[key]
    flag = key.replace("_", " ")

    def parse(text: str):
        if kind in ("int", "ints", "guard"):
            if kind == "ints":
                parts = [p for p in text.split(",") if p]
                value = [int(p) if p.isascii() and p.isdigit() else p for p in parts]
            elif kind == "guard" and text == "auto":
                value = text
            else:
                value = int(text) if text.isascii() and text.isdigit() else text
        else:
            try:
                value = float(text) if text.isascii() else text
            except ValueError:
                value = text
        try:
            return check(key, value, f"invalid {flag}")
        except ProtocolError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    parse.__name__ = flag
    return parse
