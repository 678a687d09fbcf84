"""Ethernet MAC addresses: text <-> the six bytes on the wire.

>>> parse_mac("02:52:54:00:00:0a").hex(), format_mac(b"\\x02RT\\x00\\x00\\x0a")
('02525400000a', '02:52:54:00:00:0a')

Text is six groups of one or two hex digits separated by colons, as Linux's
ether_aton() reads it; :data:`CANONICAL_MAC` is the two-digit form this project
writes and configuration files must use (they are compared as text).
"""

from __future__ import annotations

import re

from .errors import ConfigError
from .messages import shown

_TEXT = re.compile(r"[0-9a-fA-F]{1,2}(?::[0-9a-fA-F]{1,2}){5}")
CANONICAL_MAC = re.compile(r"[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5}")
EXAMPLE_MAC = "02:52:54:00:00:01"


def parse_mac(mac) -> bytes:
    """``"02:52:54:00:00:01"`` or six raw bytes -> six raw bytes; ConfigError (a ValueError)
    for anything else."""
    if isinstance(mac, (bytes, bytearray, memoryview)):
        raw = bytes(mac)
        if len(raw) == 6:
            return raw
        raise ConfigError(f"MAC address of {len(raw)} bytes: it has 6")
    if isinstance(mac, str) and _TEXT.fullmatch(mac):
        return bytes(int(part, 16) for part in mac.split(":"))
    raise ConfigError(f"MAC address {shown(mac)}: use six hex bytes like {EXAMPLE_MAC}")


def format_mac(raw) -> str:
    """Six bytes (or any buffer of six) -> ``"02:52:54:00:00:01"``."""
    raw = bytes(raw)
    if len(raw) != 6:
        raise ValueError(f"MAC address of {len(raw)} bytes: it has 6")
    return ":".join(f"{b:02x}" for b in raw)
