"""Entering network namespaces by name, for the calling thread only.

setns(2) with CLONE_NEWNET changes the namespace of the calling thread, so a
multi-threaded process can open sockets in several namespaces: a socket stays
in the namespace it was created in.  ``python -m rtnet.netns NS -- CMD ...``
runs a command inside a namespace without shelling out to ``ip``;
:func:`command` is what code uses to start one.
"""

import contextlib
import ctypes
import os
import shutil
import sys

NETNS_RUN_DIR = "/var/run/netns"
CLONE_NEWNET = 0x40000000

_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


def netns_path(name: str) -> str:
    return os.path.join(NETNS_RUN_DIR, name)


def command(name: str, argv: list[str]) -> list[str]:
    """The command line that runs ``argv`` inside namespace ``name``.

    util-linux's nsenter when there is one: it enters and execs, costing about
    a millisecond, where our own wrapper starts a Python interpreter first
    (tens of ms of CPU, which benchmarks would otherwise count).
    """
    nsenter = shutil.which("nsenter")
    if nsenter:
        return [nsenter, f"--net={netns_path(name)}", "--", *argv]
    return [sys.executable, "-m", "rtnet.netns", name, "--", *argv]


def exists(name: str) -> bool:
    return os.path.exists(netns_path(name))


@contextlib.contextmanager
def entered(name: str | None):
    """Run the body in network namespace ``name`` (None: stay where we are)."""
    if name is None:
        yield
        return
    try:
        target = os.open(netns_path(name), os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise FileNotFoundError(f"network namespace {name!r} does not exist") from None
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        _setns(target)
        try:
            yield
        finally:
            _setns(home)
    finally:
        os.close(target)
        os.close(home)


def enter_for_good(name: str) -> None:
    """Move the calling thread into ``name`` and stay there (for child processes)."""
    fd = os.open(netns_path(name), os.O_RDONLY | os.O_CLOEXEC)
    try:
        _setns(fd)
    finally:
        os.close(fd)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m rtnet.netns NAMESPACE -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    try:
        enter_for_good(argv[0])
    except OSError as exc:
        print(f"rtnet.netns: {argv[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    try:
        os.execvp(argv[2], argv[2:])
    except OSError as exc:
        print(f"rtnet.netns: {argv[2]}: {exc.strerror}", file=sys.stderr)
    return 127


if __name__ == "__main__":
    sys.exit(main())
