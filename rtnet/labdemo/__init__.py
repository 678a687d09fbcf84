"""The embedded default, `rtnetctl lab up`: a whole TDMA segment brought up and shown working
(runs: what the demo does and shows); its segment (segment), its cyclic publisher and
subscriber (pubsub), each station's summary (stations) and an unmodified program across it
(program)."""

from .runs import run
from .segment import (
    APP_ETHERTYPE,
    MAX_DEMO_STATIONS,
    NRT_SLOT_SIZE,
    RT_SLOT_SIZE,
    segment_plan,
    station_ip,
    station_toml,
)

__all__ = [
    "APP_ETHERTYPE",
    "MAX_DEMO_STATIONS",
    "NRT_SLOT_SIZE",
    "RT_SLOT_SIZE",
    "run",
    "segment_plan",
    "station_ip",
    "station_toml",
]
