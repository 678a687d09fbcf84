"""rtmac's requests to the station daemon, and the errors rtmac reports.

Protocol: one Unix stream socket per device at ``$RTNET_RUN_DIR/<netns>/<dev>.ctl``
(default ``/run/rtnet``; see rtnet.paths), spoken by rtnet.control_client.  The
client writes one JSON object and a newline (``{"cmd": "tdma.slot", "dev":
"rteth0", ...}``) and reads one JSON line back: ``{"ok": true, ...}`` or
``{"ok": false, "error": "one-line message"}``.

Requests built by ``rtmac`` (rtmac/commands.py), all with ``"dev"``:

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

import re

from rtnet import control_client, paths
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


def send_request(
    dev: str, request: dict, timeout: float | None = 30.0, netns: str | None = None
) -> dict:
    """Send one request to the daemon of ``dev`` and return its reply.

    Raises NoDaemonError when nothing listens, ControlError when the reply
    says ``ok: false`` or is not valid JSON.  ``timeout`` None waits forever
    (slot commands block during calibration, like tdmacfg).  ``netns`` names
    the station's network namespace (default: the caller's).
    """
    try:
        return control_client.call(check_dev(dev), request, netns=netns, timeout=timeout)
    except control_client.ControlClientError as exc:
        if exc.no_daemon:
            raise NoDaemonError(
                exc.errno, "no rtnetd running on this device (start it with rtnetctl up)"
            ) from None
        raise ControlError(exc.errno, exc.strerror) from None
