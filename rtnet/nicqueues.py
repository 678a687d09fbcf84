"""A NIC's channels (receive queues) as ``ethtool -l`` and ``-L`` see them, through the
SIOCETHTOOL ioctl (ETHTOOL_GCHANNELS, ETHTOOL_SCHANNELS) of the calling thread's network
namespace.

rtnetd binds its AF_XDP socket to queue 0, and no driver it was tried on accepts an
ntuple rule by EtherType, so a NIC that spreads frames over several queues (receive-side
scaling) would hand some of the stack's frames to queues nobody reads.  ``one_queue(dev)``
takes the NIC to one combined channel, as ``ethtool -L <dev> combined 1`` does, and says
what it changed; ``restore(change)`` puts the count back when the station stops.  A
device without channels (veth with one queue, a bridge) is left as it is.

A daemon killed with SIGKILL cannot put anything back, so the changes are also written to a
record file next to its PID file (``save_record``); whoever cleans up after it (``rtnetctl
down``, or the next rtnetd on the device) reads it back with ``load_record`` and restores.
The file is checked like any other input: a record that does not parse is reported and
ignored, never half applied.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import logging
import os
import socket
import struct
from dataclasses import dataclass

log = logging.getLogger("rtnet.nicqueues")

SIOCETHTOOL = 0x8946
ETHTOOL_GCHANNELS = 0x3C
ETHTOOL_SCHANNELS = 0x3D
IFNAMSIZ = 16
# struct ethtool_channels: cmd, max_rx, max_tx, max_other, max_combined,
# rx_count, tx_count, other_count, combined_count
CHANNELS = struct.Struct("9I")
FIELDS = (
    "max_rx",
    "max_tx",
    "max_other",
    "max_combined",
    "rx",
    "tx",
    "other",
    "combined",
)


@dataclass(frozen=True)
class QueueChange:
    """What one_queue() changed: the device and its combined channels before and after."""

    device: str
    was: int
    now: int

    def describe(self) -> str:
        return f"ethtool -L {self.device} combined {self.now} (was {self.was})"


MAX_CHANNELS = 4096  # more than any NIC has: a larger count in a record is not one of ours
RECORD_VERSION = 1


def _ioctl(dev: str, cmd: int, values=(0,) * 8) -> dict:
    buf = ctypes.create_string_buffer(CHANNELS.pack(cmd, *values), CHANNELS.size)
    ifreq = struct.pack(f"{IFNAMSIZ}sP", dev.encode()[: IFNAMSIZ - 1], ctypes.addressof(buf))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        fcntl.ioctl(s.fileno(), SIOCETHTOOL, ifreq)
    return dict(zip(FIELDS, CHANNELS.unpack(buf.raw)[1:]))


def channels(dev: str) -> dict | None:
    """The device's channels (FIELDS), or None when its driver has none to report."""
    try:
        return _ioctl(dev, ETHTOOL_GCHANNELS)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EINVAL):
            return None
        raise


def _set_combined(dev: str, ch: dict, combined: int) -> None:
    values = [ch[k] for k in FIELDS[:4]] + [ch["rx"], ch["tx"], ch["other"], combined]
    _ioctl(dev, ETHTOOL_SCHANNELS, values)


def one_queue(dev: str) -> QueueChange | None:
    """Take ``dev`` to one combined channel when it has more; the change made, or None.
    OSError as the driver gives it when it refuses (the caller says so and stops)."""
    ch = channels(dev)
    if not ch or ch["combined"] <= 1:
        return None
    _set_combined(dev, ch, 1)
    return QueueChange(dev, ch["combined"], 1)


def more_than_one(devs) -> list[str]:
    """For each device of ``devs`` that has more than one combined channel now (virtio_net
    adds a queue pair for XDP transmit once a program is attached, and then refuses
    ``ethtool -L``): one line saying so, each logged.  Frames the NIC hashes to a queue
    past 0 go to Linux; the XDP program counts them (xsk.xdp_unbound)."""
    notes = []
    for dev in devs:
        try:
            ch = channels(dev) if dev else None
        except OSError:
            continue
        if ch and ch["combined"] > 1:
            notes.append(
                f"{dev}: {ch['combined']} combined channels with the XDP program attached; "
                "frames the NIC puts on a queue past 0 go to Linux (counted: xsk.xdp_unbound)"
            )
            log.warning("%s", notes[-1])
    return notes


def one_queue_each(devs) -> list[QueueChange]:
    """one_queue() for each device of ``devs`` (None left out), each change logged; the
    changes made.  A refusal puts back what was changed before it and is OSError with one
    line naming the device and the step."""
    changes = []
    for dev in devs:
        if not dev:
            continue
        try:
            change = one_queue(dev)
        except OSError as exc:
            restore_all(changes)
            raise OSError(
                exc.errno,
                f"{dev}: cannot take it to one receive queue (ethtool -L {dev} combined 1): "
                f"{exc.strerror or exc}",
            ) from None
        if change:
            changes.append(change)
            log.info("%s: %s, so every frame reaches the bound queue", dev, change.describe())
    return changes


def restore_all(changes) -> None:
    """restore() each change; one that cannot be put back is logged, the rest go on."""
    for change in changes:
        try:
            restore(change)
        except OSError as exc:
            log.warning("%s: cannot put back %d queues: %s", change.device, change.was, exc)


def restore(change: QueueChange | None) -> None:
    """Put back what one_queue() changed (a device gone meanwhile is left alone)."""
    if change is None:
        return
    ch = channels(change.device)
    if ch and ch["combined"] == change.now:
        _set_combined(change.device, ch, change.was)


# -- the record a killed daemon leaves ---------------------------------------------------------


class RecordError(ValueError):
    """A queue record that is not one this module wrote (the message names the file)."""


def save_record(path: str, changes) -> None:
    """Write ``changes`` to ``path`` atomically (mode 0600); an empty list removes it."""
    if not changes:
        remove_record(path)
        return
    body = {
        "version": RECORD_VERSION,
        "changes": [{"device": c.device, "was": c.was, "now": c.now} for c in changes],
    }
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(body, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def remove_record(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _count(entry: dict, key: str, path: str) -> int:
    v = entry.get(key)
    if type(v) is not int or not 1 <= v <= MAX_CHANNELS:
        raise RecordError(f"{path}: {key} is not a queue count from 1 to {MAX_CHANNELS}")
    return v


def load_record(path: str) -> list[QueueChange]:
    """The changes recorded in ``path`` ([] when there is no record); RecordError when the
    file is not a record this module wrote: nothing of it is used then."""
    try:
        with open(path, "rb") as f:
            data = f.read(65537)
    except FileNotFoundError:
        return []
    if len(data) > 65536:
        raise RecordError(f"{path}: larger than any queue record")
    try:
        body = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise RecordError(f"{path}: not a queue record (no JSON)") from None
    if not isinstance(body, dict) or body.get("version") != RECORD_VERSION:
        raise RecordError(f"{path}: not a queue record of version {RECORD_VERSION}")
    entries = body.get("changes")
    if not isinstance(entries, list) or len(entries) > 2:  # a station has one or two ports
        raise RecordError(f"{path}: changes is not a list of one or two ports")
    changes = []
    for e in entries:
        if not isinstance(e, dict):
            raise RecordError(f"{path}: a change is not a table")
        dev = e.get("device")
        if not isinstance(dev, str) or not 0 < len(dev) < IFNAMSIZ or "/" in dev or "\0" in dev:
            raise RecordError(f"{path}: device is not an interface name")
        changes.append(QueueChange(dev, _count(e, "was", path), _count(e, "now", path)))
    return changes


def restore_recorded(path: str, warn=log.warning) -> list[QueueChange]:
    """Restore what the record at ``path`` names and remove it; the changes it named.  A
    record that does not parse is reported with one line (``warn``) and removed, nothing
    of it restored."""
    try:
        changes = load_record(path)
    except RecordError as exc:
        warn(f"{exc}; ignored")
        remove_record(path)
        return []
    restore_all(changes)
    remove_record(path)
    return changes


# -- a station's ports, as rtnetd handles them ---------------------------------------------------


class PortQueues:
    """The receive queues of a station's ports (``devs``, None left out) for the daemon's
    life: what a killed predecessor left is put back (recover), each NIC is taken to one
    queue and the change recorded in ``record`` (take), what is still more than one queue
    once the XDP program is attached is reported (check_attached), and everything is put
    back at the end (restore)."""

    def __init__(self, devs, record: str):
        self.devs = [d for d in devs if d]
        self.record = record
        self.changes: list[QueueChange] = []
        self.notes: list[str] = []

    def recover(self) -> None:
        for change in restore_recorded(self.record):
            log.warning(
                "%s: put back %d queues a killed rtnetd had left at %d",
                change.device,
                change.was,
                change.now,
            )

    def take(self) -> None:
        """OSError with one line when a driver refuses (nothing is left changed then)."""
        self.changes = one_queue_each(self.devs)
        save_record(self.record, self.changes)

    def check_attached(self) -> None:
        self.notes = more_than_one(self.devs)

    def restore(self) -> None:
        restore_all(self.changes)
        remove_record(self.record)
        self.changes = []

    def status(self) -> dict:
        return {"queues_changed": [c.describe() for c in self.changes], "queues_notes": self.notes}
