"""The lab: a shared Ethernet segment on one machine, built with pyroute2.

Each station is a network namespace ``rtn-<lab>-s<N>`` holding ``rteth0``,
one end of a veth whose other end (``s<N>``) is a port of the Linux bridge
``rtbr0`` in the namespace ``rtn-<lab>-wire`` (the wire), a bridge that hands no
frame to iptables (:func:`_plain_bridge`).  MACs and addresses
are deterministic: station N has 02:52:54:00:00:NN and 198.18.0.N/24 (the
RFC 2544 benchmarking range).  Everything is found again by name, so
``Lab(name).down()`` also cleans up after a crash.

A redundant lab (``Lab(name, n, redundant=True)``; ``rtnetctl lab up
--redundant`` runs a redundant segment on one, ``--redundant --bare`` only
builds it) adds a second, independent wire for IEEE 802.1CB frame
replication: the namespace ``rtn-<lab>-wireb`` with its own ``rtbr0``, and in
every station ``rteth1``, whose peer ``s<N>`` is a port of that bridge.
rteth1 carries 198.18.1.N/24 (198.19.0.N is the lab demo's vnic0) and the
same MAC as rteth0, as PRP's doubly attached nodes do: a station is one
sender on both wires, so the source MAC (the TDMA slot owner, the stream a
receiver eliminates duplicates of) means the same whichever wire a copy
came over, and no table maps one port's address to the other's.  The two
bridges never meet, so the shared MAC is never seen twice on one segment.

Processes the lab starts in its stations are recorded by PID in
/run/rtnet/lab-<name>/ and only those are stopped by ``down()``.
"""

import dataclasses
import errno
import os
import re
import shutil
import signal
import socket
import subprocess
import time

from pyroute2 import IPRoute
from pyroute2 import netns as pr_netns
from pyroute2.netlink.rtnl import ndmsg

from . import netns, paths
from . import procs as _procs
from .errors import LabError
from .mac import format_mac

PREFIX = "rtn-"
BRIDGE = "rtbr0"
STATION_IF = "rteth0"
STATION_IF_B = "rteth1"  # a redundant lab's second port, on wire B
WIRES = ("a", "b")  # a redundant lab's wires; a plain lab has only A
# A redundant lab's devices take a full-size frame with its 6-byte IEEE 802.1CB R-TAG
# (1514 + 6 bytes; a veth drops what exceeds its MTU + 18), as a real network carrying
# R-TAGs needs its MTU raised by the tag.
REDUNDANT_MTU = 1506
MAX_STATIONS = 32
LAB_MAC_PREFIX = bytes((0x02, 0x52, 0x54, 0x00, 0x00))  # locally administered; station N adds N
RUN_DIR = os.environ.get("RTNET_RUN_DIR", "/run/rtnet")
_NAME_RE = re.compile(r"^[a-z0-9]{1,10}$")


@dataclasses.dataclass(frozen=True)
class Station:
    lab: str
    index: int

    @property
    def netns(self) -> str:
        return f"{PREFIX}{self.lab}-s{self.index}"

    @property
    def ifname(self) -> str:
        return STATION_IF

    @property
    def mac(self) -> str:
        return format_mac(LAB_MAC_PREFIX + bytes([self.index]))

    @property
    def ip(self) -> str:
        return f"198.18.0.{self.index}"

    @property
    def ip_b(self) -> str:
        """The address of rteth1 in a redundant lab."""
        return f"198.18.1.{self.index}"

    @property
    def prefixlen(self) -> int:
        return 24

    @property
    def wire_port(self) -> str:
        return f"s{self.index}"


def _write_sysctl(path: str, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _quiet_ipv6() -> None:
    """Disable IPv6 in the current namespace: no router solicitations or MLD reports on the wire."""
    for conf in ("all", "default"):
        try:
            _write_sysctl(f"/proc/sys/net/ipv6/conf/{conf}/disable_ipv6", "1")
        except OSError:
            pass  # kernel without IPv6: nothing to quieten


class Lab:
    """A lab of ``stations`` stations on one bridge.  Use as a context manager or up()/down()."""

    def __init__(self, name: str = "lab", stations: int = 3, redundant: bool = False):
        if not _NAME_RE.match(name):
            raise LabError(
                errno.EINVAL, f"lab name {name!r}: use 1-10 lower-case letters or digits"
            )
        if not 1 <= stations <= MAX_STATIONS:
            raise LabError(errno.EINVAL, f"--stations {stations}: must be 1..{MAX_STATIONS}")
        self.name = name
        self.n = stations
        self.redundant = redundant

    # -- names -------------------------------------------------------------
    @property
    def wire_netns(self) -> str:
        return f"{PREFIX}{self.name}-wire"

    @property
    def wire_b_netns(self) -> str:
        return f"{PREFIX}{self.name}-wireb"

    def wire(self, which: str) -> str:
        """The namespace of wire ``a`` or (in a redundant lab) ``b``."""
        if which not in (WIRES if self.redundant else WIRES[:1]):
            raise LabError(errno.EINVAL, f"lab {self.name!r} has no wire {which!r}")
        return self.wire_netns if which == "a" else self.wire_b_netns

    @property
    def stations(self) -> list[Station]:
        return [Station(self.name, i) for i in range(1, self.n + 1)]

    def station(self, index: int) -> Station:
        if not 1 <= index <= self.n:
            raise LabError(errno.EINVAL, f"lab {self.name!r} has no station {index} (1..{self.n})")
        return Station(self.name, index)

    @property
    def pid_dir(self) -> str:
        return os.path.join(RUN_DIR, f"lab-{self.name}")

    def existing_namespaces(self) -> list[str]:
        mine = f"{PREFIX}{self.name}-"
        return sorted(ns for ns in pr_netns.listnetns() if ns.startswith(mine))

    def exists(self) -> bool:
        return bool(self.existing_namespaces())

    # -- life cycle --------------------------------------------------------
    def up(self) -> "Lab":
        if os.geteuid() != 0:
            raise LabError(errno.EPERM, "lab up: needs root (creates network namespaces)")
        if self.exists():
            raise LabError(
                errno.EEXIST,
                f"lab {self.name!r} already exists "
                f"(rtnetctl lab down --name {self.name} removes it)",
            )
        try:
            self._build()
        except BaseException as exc:
            self.down()  # never leave half a lab behind
            if isinstance(exc, OSError) and not isinstance(exc, LabError):
                raise LabError(exc.errno or errno.EIO, f"lab up: {exc}") from exc
            raise
        return self

    def _build(self) -> None:
        wires = [(self.wire_netns, STATION_IF, "ip")]
        if self.redundant:
            wires.append((self.wire_b_netns, STATION_IF_B, "ip_b"))
        for wire_ns, _, _ in wires:
            _build_wire(wire_ns)
        for st in self.stations:
            pr_netns.create(st.netns)
            with netns.entered(st.netns):
                _quiet_ipv6()
            with IPRoute(netns=st.netns) as ipr:
                ipr.link("set", index=ipr.link_lookup(ifname="lo")[0], state="up")
            for wire_ns, ifname, ip in wires:
                _attach(
                    st, wire_ns, ifname, getattr(st, ip), REDUNDANT_MTU if self.redundant else 1500
                )

    def set_wire_port(self, station: Station, wire: str, up: bool) -> None:
        """Cut (``up=False``) or mend the bridge port of ``station`` on ``wire`` ("a" or "b"):
        the station's own interface stays up, as when a cable is pulled at the switch."""
        self._set_ports(wire, [station], up)

    def set_wire(self, wire: str, up: bool) -> None:
        """Cut (``up=False``) or mend every station's port on ``wire`` at once, as when the
        wire's switch fails or comes back; the stations' own interfaces stay up."""
        self._set_ports(wire, self.stations, up)

    def _set_ports(self, wire: str, stations: list[Station], up: bool) -> None:
        """The bridge ports of ``stations`` on ``wire`` up or down; every port is found
        before any is changed."""
        with IPRoute(netns=self.wire(wire)) as ipr:
            ports = []
            for st in stations:
                found = ipr.link_lookup(ifname=st.wire_port)
                if not found:
                    raise LabError(
                        errno.ENODEV, f"wire {wire} of lab {self.name!r} has no port {st.wire_port}"
                    )
                ports.append(found[0])
            for port in ports:
                ipr.link("set", index=port, state="up" if up else "down")

    def down(self) -> list[str]:
        """Stop the lab's processes and remove its namespaces; returns what was removed."""
        removed = self._stop_processes()
        for ns in self.existing_namespaces():
            # Station namespaces first is not needed: deleting either end of a veth
            # deletes the pair, and the bridge goes with the wire namespace.
            pr_netns.remove(ns)
            removed.append(f"netns {ns}")
            _clean_station_dir(paths.station_dir(ns))
        try:
            os.rmdir(self.pid_dir)
        except OSError:
            pass
        return removed

    def __enter__(self) -> "Lab":
        return self.up()

    def __exit__(self, *exc) -> None:
        self.down()

    # -- processes ---------------------------------------------------------
    def spawn(self, station: Station, argv: list[str], **popen_kw) -> subprocess.Popen:
        """Start ``argv`` inside ``station``'s namespace and record its PID for down()."""
        cmd = netns.command(station.netns, argv)
        proc = subprocess.Popen(cmd, **popen_kw)
        os.makedirs(self.pid_dir, exist_ok=True)
        with open(os.path.join(self.pid_dir, f"{proc.pid}.pid"), "w") as f:
            f.write(f"{proc.pid} {_procs.start_time(proc.pid)} {station.netns}\n")
        return proc

    def stop(self, proc: subprocess.Popen, *, timeout: float = 5.0, terminate: bool = True) -> None:
        """End a process started with spawn(): SIGTERM (unless it is expected to end by
        itself), wait up to ``timeout`` s, then SIGKILL; and forget it."""
        if terminate and proc.poll() is None:
            proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        self.forget(proc)

    def forget(self, proc: subprocess.Popen) -> None:
        try:
            os.unlink(os.path.join(self.pid_dir, f"{proc.pid}.pid"))
        except FileNotFoundError:
            pass

    def recorded_processes(self) -> list[tuple[int, str]]:
        """(pid, netns) of recorded processes that are still the ones we started."""
        alive = []
        try:
            entries = os.listdir(self.pid_dir)
        except FileNotFoundError:
            return alive
        for entry in entries:
            path = os.path.join(self.pid_dir, entry)
            try:
                pid_s, start_s, ns = open(path).read().split()
                pid = int(pid_s)
            except (OSError, ValueError):
                os.unlink(path)
                continue
            if _procs.start_time(pid) == start_s:
                alive.append((pid, ns))
            else:
                os.unlink(path)  # gone, or the PID was reused by someone else
        return alive

    def _stop_processes(self, timeout: float = 3.0) -> list[str]:
        stopped = []
        procs = self.recorded_processes()
        for pid, _ns in procs:
            _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for pid, ns in procs:
            while _procs.running(pid) and time.monotonic() < deadline:
                time.sleep(0.02)  # polling a process we do not parent: no wait() possible
            if _procs.running(pid):
                _signal(pid, signal.SIGKILL)
            stopped.append(f"process {pid} in {ns}")
        for entry in os.listdir(self.pid_dir) if os.path.isdir(self.pid_dir) else []:
            os.unlink(os.path.join(self.pid_dir, entry))
        return stopped

    # -- status ------------------------------------------------------------
    def status(self) -> dict:
        spaces = self.existing_namespaces()
        out = {
            "name": self.name,
            "exists": bool(spaces),
            "namespaces": spaces,
            "stations": [],
            "wires": [
                _wire_status(which, ns)
                for which, ns in zip(WIRES, (self.wire_netns, self.wire_b_netns))
                if ns in spaces
            ],
        }
        for ns in spaces:
            m = re.match(rf"^{PREFIX}{self.name}-s(\d+)$", ns)
            if not m:
                continue
            out["stations"].append(_station_status(ns, int(m.group(1))))
        out["stations"].sort(key=lambda s: s["index"])
        out["processes"] = [{"pid": p, "netns": n} for p, n in self.recorded_processes()]
        return out


def _plain_bridge() -> None:
    """Keep br_netfilter out of the current namespace's bridges, as a cable or a switch
    would be: with it loaded (a module on most kernels, built in on some), a bridge hands
    every IPv4, IPv6 and ARP frame it forwards to iptables' hooks, which cost the lab's
    kernel path about 8% more CPU per byte (MTU-sized TCP frames at 69 Mbit/s: 4.35 to
    4.57 CPU s/GB against 4.08 to 4.16 without, three alternating 8 s runs) and the
    real-time path's frames, of other EtherTypes, next to nothing."""
    for table in ("iptables", "ip6tables", "arptables"):
        try:
            _write_sysctl(f"/proc/sys/net/bridge/bridge-nf-call-{table}", "0")
        except FileNotFoundError:
            pass  # no br_netfilter: nothing calls iptables from a bridge


def _build_wire(wire_ns: str) -> None:
    """A wire: a namespace holding the bridge the stations' ports join."""
    pr_netns.create(wire_ns)
    with netns.entered(wire_ns):
        _quiet_ipv6()
        _plain_bridge()
    with IPRoute(netns=wire_ns) as ipr:
        ipr.link("set", index=ipr.link_lookup(ifname="lo")[0], state="up")
        ipr.link("add", ifname=BRIDGE, kind="bridge", br_stp_state=0, br_forward_delay=0)
        ipr.link("set", index=ipr.link_lookup(ifname=BRIDGE)[0], state="up")


def _attach(st: Station, wire_ns: str, ifname: str, ip: str, mtu: int) -> None:
    """Connect ``st`` to the wire in ``wire_ns`` by a veth: ``ifname`` in the station (with
    the station's MAC and ``ip``), ``s<N>`` as a port of the wire's bridge; both ends
    take frames of ``mtu`` bytes plus the Ethernet header."""
    with IPRoute(netns=wire_ns) as ipr:
        ipr.link(
            "add", ifname=st.wire_port, kind="veth", peer={"ifname": ifname, "net_ns_fd": st.netns}
        )
        port = ipr.link_lookup(ifname=st.wire_port)[0]
        ipr.link("set", index=port, mtu=mtu)
        ipr.link("set", index=port, master=ipr.link_lookup(ifname=BRIDGE)[0], state="up")
        # The switch knows where each station is, as one that had heard every station
        # would; a station that only listens (a NoMAC receiver) is otherwise never
        # learnt, and every frame to it is flooded (br_flood cloned each one).  Not
        # sticky: a frame from another port still moves the entry, as a learnt one does.
        ipr.neigh(
            "add",
            family=socket.AF_BRIDGE,
            ifindex=port,
            lladdr=st.mac,
            state=ndmsg.states["noarp"],
            flags=ndmsg.flags["master"],
        )
    with IPRoute(netns=st.netns) as ipr:
        dev = ipr.link_lookup(ifname=ifname)[0]
        ipr.link("set", index=dev, address=st.mac, mtu=mtu)
        ipr.addr("add", index=dev, address=ip, prefixlen=st.prefixlen)
        ipr.link("set", index=dev, state="up")


def _wire_status(which: str, ns: str) -> dict:
    """A wire's bridge and its ports (one per station), each with its state."""
    out = {"wire": which, "netns": ns, "bridge": BRIDGE, "ports": []}
    try:
        with IPRoute(netns=ns) as ipr:
            for link in ipr.get_links():
                name = link.get_attr("IFLA_IFNAME")
                if name not in ("lo", BRIDGE):
                    out["ports"].append({"ifname": name, "state": link.get_attr("IFLA_OPERSTATE")})
    except OSError as exc:
        out["error"] = str(exc)
    out["ports"].sort(key=lambda p: (len(p["ifname"]), p["ifname"]))
    return out


def _clean_station_dir(path: str) -> None:
    """Remove what a station's daemon kept (configuration, stale socket, PID file), but
    keep its log: after a failed start it is the only record of why."""
    try:
        entries = os.listdir(path)
    except FileNotFoundError:
        return
    for entry in entries:
        if not entry.endswith(".log"):
            full = os.path.join(path, entry)
            if os.path.isdir(full):
                shutil.rmtree(full, ignore_errors=True)
            else:
                os.unlink(full)
    try:
        os.rmdir(path)
    except OSError:
        pass  # logs remain


def all_labs() -> list[str]:
    """Names of every lab with at least one namespace left (crash leftovers included)."""
    names = set()
    for ns in pr_netns.listnetns():
        m = re.match(rf"^{PREFIX}([a-z0-9]+)-(wire|wireb|s\d+)$", ns)
        if m:
            names.add(m.group(1))
    return sorted(names)


def _station_status(ns: str, index: int) -> dict:
    st = {"index": index, "netns": ns, "links": []}
    try:
        with IPRoute(netns=ns) as ipr:
            for link in ipr.get_links():
                name = link.get_attr("IFLA_IFNAME")
                if name == "lo":
                    continue
                xdp = link.get_attr("IFLA_XDP")
                attached = xdp.get_attr("IFLA_XDP_ATTACHED") if xdp else None
                addrs = [
                    f"{a.get_attr('IFA_ADDRESS')}/{a['prefixlen']}"
                    for a in ipr.get_addr(index=link["index"])
                ]
                st["links"].append(
                    {
                        "ifname": name,
                        "mac": link.get_attr("IFLA_ADDRESS"),
                        "state": link.get_attr("IFLA_OPERSTATE"),
                        "mtu": link.get_attr("IFLA_MTU"),
                        "addresses": addrs,
                        "xdp": bool(attached),
                    }
                )
    except OSError as exc:
        st["error"] = str(exc)
    return st


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
