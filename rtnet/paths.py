"""Where a station's run-time files live.

Every station daemon keeps its control socket and PID file under
``$RTNET_RUN_DIR/<netns>/`` (default ``/run/rtnet``), where ``<netns>`` is the
name of the network namespace it runs in (``default`` for the initial one).
The lab runs one daemon per station namespace, all on a device named
rteth0, so the namespace is what tells them apart; a command run inside a
station's namespace finds that station's daemon without being told.
"""

import os

DEFAULT_RUN_DIR = "/run/rtnet"
NETNS_DIR = "/var/run/netns"


def base_dir() -> str:
    return os.environ.get("RTNET_RUN_DIR", DEFAULT_RUN_DIR)


def current_netns_name() -> str:
    """Name of the calling thread's network namespace, or "default" if it has none."""
    try:
        me = os.stat("/proc/thread-self/ns/net")
    except OSError:
        return "default"
    try:
        names = sorted(os.listdir(NETNS_DIR))
    except OSError:
        return "default"
    for name in names:
        try:
            st = os.stat(os.path.join(NETNS_DIR, name))
        except OSError:
            continue
        if (st.st_ino, st.st_dev) == (me.st_ino, me.st_dev):
            return name
    return "default"


def station_dir(netns: str | None = None) -> str:
    return os.path.join(base_dir(), netns or current_netns_name())


def control_socket(dev: str, netns: str | None = None) -> str:
    return os.path.join(station_dir(netns), f"{dev}.ctl")


def pid_file(dev: str, netns: str | None = None) -> str:
    return os.path.join(station_dir(netns), f"{dev}.pid")


def queue_record(dev: str, netns: str | None = None) -> str:
    """The receive-queue changes rtnetd made (rtnet.nicqueues), for a cleanup after a
    daemon that could not put them back itself."""
    return os.path.join(station_dir(netns), f"{dev}.queues")
