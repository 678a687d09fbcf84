"""The static neighbour table (RTnet's rtroute host routes): IPv4 address -> MAC.

The station daemon holds the table and hands every change to the station
whole (``Station.set_neighbours``), which publishes it to the UDP sockets'
pages (csrc/ip/rtn_neigh.h); a change is checked completely first, so it is
applied entirely or not at all.  ``parse_hosts`` reads RTnet's host-routes
file for ``rtroute -f``: one ``<ip> <mac> <dev>`` a line, ``#`` comments.

>>> t = NeighbourTable()
>>> t.add("10.0.0.2", "02:00:00:00:00:02")
>>> t.get("10.0.0.2")
'02:00:00:00:00:02'
>>> parse_hosts("10.0.0.3 02:00:00:00:00:03 rteth0  # s3\\n")
[('10.0.0.3', '02:00:00:00:00:03', 'rteth0')]
"""

from __future__ import annotations

from ._lowlevel import lib
from .errors import ConfigError
from .ipv4 import unicast_ipv4
from .mac import format_mac, parse_mac
from .messages import shown
from .names import interface_name_problem

MAX_ENTRIES = lib.RTN_NEIGH_MAX
MAX_HOSTS_FILE = 64 * 1024  # bytes: a host-routes file is a few lines


def neighbour_mac(text, what: str = "hardware address") -> str:
    """``text`` as a unicast MAC (a neighbour's: never broadcast or multicast)."""
    try:
        mac = parse_mac(text)
    except (ConfigError, ValueError, TypeError):
        raise ConfigError(f"{what} {shown(text)} is not a MAC address") from None
    if mac[0] & 1:
        raise ConfigError(f"{what} {format_mac(mac)} is a multicast address")
    return format_mac(mac)


class NeighbourTable:
    """IPv4 -> MAC, at most MAX_ENTRIES; every method checks all before changing anything."""

    def __init__(self, entries: dict[str, str] | None = None):
        self._t: dict[str, str] = {}
        if entries:
            self._t = self.merged(entries)

    def as_dict(self) -> dict[str, str]:
        return dict(sorted(self._t.items(), key=lambda kv: tuple(map(int, kv[0].split(".")))))

    def get(self, ip: str) -> str | None:
        return self._t.get(unicast_ipv4(ip))

    def merged(self, more: dict[str, str]) -> dict[str, str]:
        """This table with ``more`` added (replacing entries of the same address), checked."""
        new = dict(self._t)
        for ip, mac in more.items():
            new[unicast_ipv4(ip)] = neighbour_mac(mac)
        if len(new) > MAX_ENTRIES:
            raise ConfigError(f"{len(new)} neighbours: at most {MAX_ENTRIES}")
        return new

    def without(self, ip: str) -> dict[str, str]:
        ip = unicast_ipv4(ip)
        if ip not in self._t:
            raise ConfigError(f"no neighbour entry for {ip}")
        return {k: v for k, v in self._t.items() if k != ip}

    def replace(self, entries: dict[str, str]) -> None:
        """Take ``entries`` (from merged()/without(), already checked) as the table."""
        self._t = dict(entries)

    def add(self, ip: str, mac: str) -> None:
        self.replace(self.merged({ip: mac}))


def parse_hosts(text: str, source: str = "hosts file") -> list[tuple[str, str, str]]:
    """RTnet's host-routes file: ``<ip> <mac> <dev>`` per line, ``#`` to the end of a line.
    Every line is checked; the first bad one is one ConfigError naming its line."""
    out, seen = [], {}
    for no, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        where = f"{source}:{no}"
        if len(words) != 3:
            raise ConfigError(f"{where}: expected '<ip> <mac> <dev>', got {len(words)} field(s)")
        try:
            ip, mac = unicast_ipv4(words[0]), neighbour_mac(words[1])
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        problem = interface_name_problem(words[2])
        if problem:
            raise ConfigError(f"{where}: device {shown(words[2])}: {problem}")
        if (ip, words[2]) in seen:
            raise ConfigError(
                f"{where}: {ip} on {words[2]} given already on line {seen[(ip, words[2])]}"
            )
        seen[(ip, words[2])] = no
        out.append((ip, mac, words[2]))
    return out
