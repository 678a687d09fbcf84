"""A station's configuration file, in either of its formats: rtnet.toml (rtnet.config) or
RTnet's rtnet.conf and tdma.conf (rtnet.rtnetconf), told apart by the file's name."""

from __future__ import annotations

from .config import StationConfig, parse_toml, read_text
from .rtnetconf import parse_rtnet_conf


def load(path: str, *, mac: str | None = None, rtcfg: bool | None = None) -> StationConfig:
    """Read and check a configuration file (TOML by its .toml suffix, else rtnet.conf).
    ``rtcfg``: with or without RTcfg (None: the file's default; rtnet.conf: with)."""
    text = read_text(path)
    if path.endswith(".toml"):
        return parse_toml(text, path, rtcfg=rtcfg)
    return parse_rtnet_conf(text, path, mac=mac, rtcfg=True if rtcfg is None else rtcfg)
