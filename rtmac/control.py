"""Client side of the station daemon's control socket.

Protocol: one Unix stream socket per device at
``$RTNET_RUN_DIR/<netns>/<dev>.ctl`` (default ``/run/rtnet``; see rtnet.paths).  The client writes one JSON object and a newline
(``{"cmd": "tdma.slot", "dev": "rteth0", ...}``) and reads one JSON line back:
``{"ok": true, ...}`` or ``{"ok": false, "error": "one-line message"}``.

Requests built by ``rtmac`` (rtmac/cli.py), all with ``"dev"``:

- ``tdma.master``: cycle_us, backup_offset_us (None = primary), cal_rounds,
  max_slot_id, max_cal_requests
- ``tdma.slave``: cal_rounds, max_slot_id
- ``tdma.slot``: id, offset_us, phasing, period, size (0 = device MTU), joint
  (None or id), cal_timeout_ms (0 = wait forever), cal_results (bool: reply
  with ``"cal_results": [ns, ...]``, written by ``-l`` one per line);
  ``rtmac.tdma_config.apply_request()`` turns it into a new configuration
- ``tdma.remove_slot``: id
- ``tdma.detach``, ``tdma.show`` (reply: ``"config"``:
  ``TdmaConfig.to_dict()`` or None, optional ``"state"``), ``nomac.attach``,
  ``nomac.detach``
"""
from __future__ import annotations

import json
import re
import socket

from rtnet import paths
from rtnet.control_protocol import MAX_REPLY
from rtnet.errors import RtnetError

_IFNAME = re.compile(r"[^\s/:]{1,15}")


class ControlError(RtnetError):
    """The daemon refused a request, or talking to it failed."""


class NoDaemonError(ControlError):
    """No daemon listens on the device's control socket."""


def check_dev(dev: str) -> str:
    """Linux interface name rules; also keeps ``dev`` from escaping the run directory."""
    if not isinstance(dev, str) or not _IFNAME.fullmatch(dev) or dev in (".", ".."):
        raise ValueError(f"invalid device name {dev!r}")
    return dev


def socket_path(dev: str, netns: str | None = None) -> str:
    return paths.control_socket(check_dev(dev), netns)


def send_request(dev: str, request: dict, timeout: float | None = 30.0,
                 netns: str | None = None) -> dict:
    """Send one request to the daemon of ``dev`` and return its reply.

    Raises NoDaemonError when nothing listens, ControlError when the reply
    says ``ok: false`` or is not valid JSON.  ``timeout`` None waits forever
    (slot commands block during calibration, like tdmacfg).  ``netns`` names
    the station's network namespace (default: the caller's).
    """
    path = socket_path(dev, netns)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.connect(path)
        except (FileNotFoundError, ConnectionRefusedError):
            raise NoDaemonError(2, "no rtnetd running on this device "
                                   "(start it with rtnetctl up)") from None
        except OSError as exc:
            raise ControlError(exc.errno, f"{path}: {exc.strerror}") from None
        try:
            sock.sendall(json.dumps(request).encode() + b"\n")
            data = bytearray()
            while not data.endswith(b"\n"):
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
                if len(data) > MAX_REPLY:
                    raise ControlError(0, f"reply from rtnetd longer than {MAX_REPLY} bytes")
        except socket.timeout:
            raise ControlError(110, "rtnetd did not reply in time") from None
        except OSError as exc:
            raise ControlError(exc.errno, f"control socket: {exc.strerror}") from None
    try:
        reply = json.loads(data)
    except ValueError:
        raise ControlError(0, "malformed reply from rtnetd") from None
    if not isinstance(reply, dict) or "ok" not in reply:
        raise ControlError(0, "malformed reply from rtnetd")
    if not reply["ok"]:
        raise ControlError(0, str(reply.get("error", "request failed")))
    return reply
