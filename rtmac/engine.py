"""Bridge between the Python TDMA configuration and the C engine's structs.

The C engine (csrc/tdma/rtn_tdma.c) takes ``struct rtn_tdma_cfg``; :func:`to_c`
builds it from a validated :class:`rtmac.tdma_config.TdmaConfig`.  The
engine's counters are decoded by rtnet.tdma_stats (the station returns
them), re-exported here.
"""

from __future__ import annotations

from rtnet.tdma_stats import COUNTERS, SLOT_COUNTERS, STATES, TdmaState, TdmaStateCode, stats_from_c

from .tdma_config import TdmaConfig, validate

__all__ = [
    "COUNTERS",
    "SLOT_COUNTERS",
    "STATES",
    "TdmaState",
    "TdmaStateCode",
    "stats_from_c",
    "to_c",
]


def to_c(config: TdmaConfig):
    """A ``struct rtn_tdma_cfg *`` for a validated ``config``."""
    return validate(config).to_c()
