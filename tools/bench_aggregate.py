"""Figures over repeated runs: median, minimum and maximum, and the verdict on a target.

Pure functions on plain data (no lab, no files), for tools/bench_suite.py and its report
(docs/benchmark-protocol.md, "Runs and what a figure is"):

- ``spread(values)``: median, min, max and count of one figure's values, one per run;
- ``merge(trees)``: the runs' results dicts as one, every number the median of the runs'
  (a ``Figure``, a float that remembers the min, max and count; a number the same in
  every run stays as it was), numeric lists element by element; anything else, and
  lists of other things (trial lists), the first run's;
- ``verdict(fig, target, kind)``: "met" or "missed" by the median, or "not resolved on
  this machine" when the spread is larger than the gap between the median and the target;
- ``show(v, nd)``: a number as the report prints it, "median [min..max]" over runs.

>>> f = spread([3.0, 1.0, 2.0])
>>> (float(f), f.lo, f.hi, f.n)
(2.0, 1.0, 3.0, 3)
>>> verdict(f, 10, "at_most")
'met'
>>> verdict(spread([4.0, 6.0, 12.0]), 5, "at_most")
'not resolved on this machine'
"""

from __future__ import annotations

import math
import statistics

MET, MISSED, UNRESOLVED = "met", "missed", "not resolved on this machine"
KINDS = {"at_most": "<=", "at_least": ">=", "abs_at_most": "within +-"}


class Figure(float):
    """A median over runs, with the runs' minimum (``lo``), maximum (``hi``) and count."""

    lo: float
    hi: float
    n: int

    def __new__(cls, median: float, lo: float, hi: float, n: int):
        obj = super().__new__(cls, median)
        obj.lo, obj.hi, obj.n = float(lo), float(hi), int(n)
        return obj

    @property
    def range(self) -> float:
        return self.hi - self.lo

    def __reduce__(self):
        return (Figure, (float(self), self.lo, self.hi, self.n))


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def spread(values) -> Figure | None:
    """The median, min and max of ``values`` (None and non-finite values left out);
    None when nothing is left."""
    vals = [float(v) for v in values if _number(v) and math.isfinite(v)]
    if not vals:
        return None
    return Figure(statistics.median(vals), min(vals), max(vals), len(vals))


def merge(trees: list):
    """One results tree from several runs' (see the module's docstring)."""
    if not trees:
        raise ValueError("merge: no runs")
    first = trees[0]
    if isinstance(first, dict):
        keys = list(first)
        for t in trees[1:]:
            if isinstance(t, dict):
                keys += [k for k in t if k not in keys]
        out = {}
        for k in keys:
            present = [t[k] for t in trees if isinstance(t, dict) and k in t]
            out[k] = merge(present)
        return out
    if _number(first):
        nums = [t for t in trees if _number(t)]
        if all(t == first for t in trees):
            return first  # the same in every run (a setting, a count): as it was
        fig = spread(nums)
        return first if fig is None else fig  # None: non-finite in every run
    if (
        isinstance(first, list)
        and first
        and all(_number(v) for v in first)
        and all(
            isinstance(t, list) and len(t) == len(first) and all(_number(v) for v in t)
            for t in trees
        )
    ):
        return [merge(list(col)) for col in zip(*trees)]
    return first


def _parts(fig) -> tuple[float, float, float, int]:
    if isinstance(fig, Figure):
        return float(fig), fig.lo, fig.hi, fig.n
    v = float(fig)
    return v, v, v, 1


def verdict(fig, target: float, kind: str) -> str:
    """Whether the median of ``fig`` meets ``target``: ``kind`` at_most (median <=
    target), at_least (median >= target) or abs_at_most (|median| <= target, a
    difference that may go either way).  "not resolved on this machine" when the runs'
    spread (max - min) is larger than the gap between the median and the target."""
    if kind not in KINDS:
        raise ValueError(f"verdict: unknown kind {kind!r}")
    median, lo, hi, _n = _parts(fig)
    value = abs(median) if kind == "abs_at_most" else median
    if hi - lo > abs(value - target):
        return UNRESOLVED
    ok = value >= target if kind == "at_least" else value <= target
    return MET if ok else MISSED


def show(v, nd: int = 0) -> str:
    """A figure as the report prints it: the median, and over several runs the min and
    max in brackets ("673 [636..734]"); "-" for none."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    if not _number(v):
        return str(v)
    text = f"{v:,.{nd}f}" if isinstance(v, float) else f"{v:,}"
    if isinstance(v, Figure) and v.n > 1:
        text += f" [{v.lo:,.{nd}f}..{v.hi:,.{nd}f}]"
    return text


def verdict_line(label: str, fig, target: float, kind: str, unit: str = "", nd: int = 1) -> str:
    """``label: median [min..max] over n runs (target): verdict`` for the report."""
    median, lo, hi, n = _parts(fig)
    u = f" {unit}" if unit else ""
    runs = f" over {n} runs" if n > 1 else " (one run)"
    return (
        f"{label}: {median:,.{nd}f}{u} [{lo:,.{nd}f}..{hi:,.{nd}f}]{runs} "
        f"(target {KINDS[kind]} {target:g}{u}): {verdict(fig, target, kind)}"
    )


def headline_table(rows: list[dict]) -> str:
    """Markdown: one row per headline, ``rows`` of dicts with label, values (one per run),
    target, kind (None: a figure without a target) and unit."""
    out = [
        "| figure | median | min | max | runs | target | verdict |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    for r in rows:
        fig = spread(r["values"])
        nd = r.get("nd", 1)
        if fig is None:
            out.append(f"| {r['label']} | - | - | - | 0 | - | - |")
            continue
        target = (
            "-"
            if r.get("kind") is None
            else f"{KINDS[r['kind']]} {r['target']:g} {r.get('unit', '')}".rstrip()
        )
        v = "-" if r.get("kind") is None else verdict(fig, r["target"], r["kind"])
        out.append(
            f"| {r['label']} | {float(fig):,.{nd}f} | {fig.lo:,.{nd}f} | "
            f"{fig.hi:,.{nd}f} | {fig.n} | {target} | {v} |"
        )
    return "\n".join(out)
