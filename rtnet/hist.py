"""Python view of a C latency histogram (struct rtn_hist, 1 us bins).

The C side only counts; percentiles and formatting live here.  Values are
kept in nanoseconds internally and reported in microseconds, as cyclictest does.
"""

from dataclasses import dataclass

import numpy as np

from ._lowlevel import ffi, lib

BIN_NS = 1000


@dataclass(frozen=True)
class Histogram:
    lo_ns: int
    bins: np.ndarray  # counts per 1 us bin, starting at lo_ns
    count: int
    underflow: int
    overflow: int
    min_ns: int
    max_ns: int
    sum_ns: int

    @classmethod
    def from_c(cls, h) -> "Histogram":
        """Snapshot a live ``struct rtn_hist *`` (consistent even while it is written)."""
        snap = ffi.new("struct rtn_hist *")
        lib.rtn_hist_read(h, snap)
        bins = np.frombuffer(ffi.buffer(snap.bins), dtype=np.uint32).astype(np.uint64)
        return cls(
            snap.lo_ns,
            bins,
            snap.count,
            snap.underflow,
            snap.overflow,
            snap.min_ns,
            snap.max_ns,
            snap.sum_ns,
        )

    @property
    def avg_ns(self) -> float:
        return self.sum_ns / self.count if self.count else 0.0

    def percentile_ns(self, p: float) -> int:
        """Upper edge of the bin holding the p-th percentile (conservative, like cyclictest).

        Underflows count as the lowest value, overflows as the maximum seen.
        """
        if not self.count:
            return 0
        rank = max(1, int(np.ceil(self.count * p / 100.0)))
        if rank <= self.underflow:
            return self.min_ns
        cum = np.cumsum(self.bins) + self.underflow
        idx = int(np.searchsorted(cum, rank))
        if idx >= len(self.bins):
            return self.max_ns
        return min(self.lo_ns + (idx + 1) * BIN_NS, self.max_ns)

    def summary_us(self) -> dict:
        us = 1000.0
        return {
            "count": int(self.count),
            "min": self.min_ns / us if self.count else None,
            "avg": self.avg_ns / us if self.count else None,
            "max": self.max_ns / us if self.count else None,
            "p50": self.percentile_ns(50) / us,
            "p99": self.percentile_ns(99) / us,
            "p99.9": self.percentile_ns(99.9) / us,
            "overflow": int(self.overflow),
            "underflow": int(self.underflow),
        }

    def since(self, earlier: "Histogram") -> "Histogram":
        """Samples added after ``earlier`` (a snapshot of the same histogram).

        Min and max of the interval are not recorded separately; they are taken
        from the edges of the lowest and highest non-empty bins (exact when no
        sample fell outside the binned range).
        """
        bins = self.bins - earlier.bins
        count = self.count - earlier.count
        under = self.underflow - earlier.underflow
        over = self.overflow - earlier.overflow
        nz = np.nonzero(bins)[0]
        lo = self.lo_ns + int(nz[0]) * BIN_NS if len(nz) else self.min_ns
        hi = self.lo_ns + (int(nz[-1]) + 1) * BIN_NS if len(nz) else self.max_ns
        return Histogram(
            self.lo_ns,
            bins,
            count,
            under,
            over,
            self.min_ns if under else lo,
            self.max_ns if over else min(hi, self.max_ns),
            self.sum_ns - earlier.sum_ns,
        )

    @staticmethod
    def combine(hists: list["Histogram"]) -> "Histogram":
        """One histogram of the samples of several with the same bins (e.g. per station)."""
        if not hists or any(h.lo_ns != hists[0].lo_ns for h in hists):
            raise ValueError("combine: needs histograms with the same bins")
        counted = [h for h in hists if h.count]
        return Histogram(
            hists[0].lo_ns,
            np.sum([h.bins for h in hists], axis=0),
            sum(h.count for h in hists),
            sum(h.underflow for h in hists),
            sum(h.overflow for h in hists),
            min((h.min_ns for h in counted), default=0),
            max((h.max_ns for h in counted), default=0),
            sum(h.sum_ns for h in hists),
        )

    def nonzero_bins_us(self) -> dict:
        """Non-empty buckets only, keyed by lower edge in us (for JSON, as cyclictest)."""
        idx = np.nonzero(self.bins)[0]
        return {int((self.lo_ns + i * BIN_NS) // BIN_NS): int(self.bins[i]) for i in idx}
