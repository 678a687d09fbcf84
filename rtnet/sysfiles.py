"""The kernel's files (/proc, /sys, /dev, /boot) read and written under a root directory.

Everything ``rtnetctl check`` learns about the machine from a file goes
through :class:`SysFiles`, so a test points it at a fake tree in a
temporary directory and the same code reads the real machine with
``SysFiles("/")``.  Contents are treated as hostile: a file is read only up
to a size bound, a FIFO never blocks the open, and anything unreadable,
oversized, binary or malformed becomes :class:`Unreadable`, whose message is
one printable line naming the file as the system knows it (``/proc/cmdline:
not text (byte 0xff)``), never the temporary directory.

>>> parse_cpu_list("0-2,5")
{0, 1, 2, 5}
>>> format_cpu_list({0, 1, 2, 5})
'0-2,5'
"""

from __future__ import annotations

import os
import re
import stat
import zlib

from .messages import one_line, shown

MAX_TEXT = 64 * 1024  # a /proc or /sys value; /proc/interrupts of a big machine fits
MAX_CONFIG = 4 * 1024 * 1024  # a kernel configuration, also after decompression
MAX_CPUS = 8192  # the kernel's largest NR_CPUS
_CPU_RANGE = re.compile(r"([0-9]{1,5})(?:-([0-9]{1,5}))?")


class Unreadable(Exception):
    """A system file that could not be read or did not hold what it should; one line."""


class SysFiles:
    """Files of the running kernel, under ``root`` (``/`` for the machine itself)."""

    def __init__(self, root: str = "/"):
        self.root = root

    def _path(self, rel: str) -> str:
        if not rel.startswith("/") or "\0" in rel or "/../" in f"{rel}/":
            raise Unreadable(f"{shown(rel)}: not a system file path")
        return os.path.join(self.root, rel.lstrip("/"))

    def exists(self, rel: str) -> bool:
        return os.path.lexists(self._path(rel))

    def listdir(self, rel: str) -> list[str]:
        """Names in a directory, sorted; Unreadable if it cannot be listed."""
        try:
            return sorted(os.listdir(self._path(rel)))
        except OSError as exc:
            raise Unreadable(f"{rel}: {exc.strerror}") from None

    def link_name(self, rel: str) -> str:
        """The last component of a symlink's target (a driver's name, say)."""
        try:
            target = os.readlink(self._path(rel))
        except OSError as exc:
            raise Unreadable(f"{rel}: {exc.strerror}") from None
        return one_line(os.path.basename(target.rstrip("/")))

    def read_bytes(self, rel: str, limit: int = MAX_TEXT) -> bytes:
        path = self._path(rel)
        try:
            # O_NONBLOCK: a FIFO planted in place of the file must not hang the check
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            raise Unreadable(f"{rel}: {exc.strerror}") from None
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
                raise Unreadable(f"{rel}: not a file")
            chunks, size = [], 0
            while size <= limit:
                chunk = os.read(fd, limit + 1 - size)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        except OSError as exc:
            raise Unreadable(f"{rel}: {exc.strerror}") from None
        finally:
            os.close(fd)
        data = b"".join(chunks)
        if len(data) > limit:
            raise Unreadable(f"{rel}: larger than {limit} bytes")
        return data

    def read(self, rel: str, limit: int = MAX_TEXT) -> str:
        """A text file's contents, surrounding white space stripped."""
        data = self.read_bytes(rel, limit)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Unreadable(f"{rel}: not text (byte {data[exc.start]:#04x})") from None
        if "\0" in text:
            raise Unreadable(f"{rel}: not text (a NUL byte)")
        return text.strip()

    def read_int(self, rel: str, lo: int, hi: int) -> int:
        text = self.read(rel)
        if not re.fullmatch(r"-?[0-9]{1,20}", text):
            raise Unreadable(f"{rel}: {shown(text)} is not a whole number")
        value = int(text)
        if not lo <= value <= hi:
            raise Unreadable(f"{rel}: {value} outside {lo}..{hi}")
        return value

    def read_cpus(self, rel: str) -> set[int]:
        text = self.read(rel)
        try:
            return parse_cpu_list(text)
        except ValueError as exc:
            raise Unreadable(f"{rel}: {exc}") from None

    def read_gzip(self, rel: str, limit: int = MAX_CONFIG) -> str:
        """A gzip-compressed text file (/proc/config.gz), bounded after decompression too."""
        raw = self.read_bytes(rel, limit)
        inflate = zlib.decompressobj(wbits=31)
        try:
            data = inflate.decompress(raw, limit + 1)
        except zlib.error as exc:
            raise Unreadable(f"{rel}: not gzip data ({exc})") from None
        if len(data) > limit or inflate.unconsumed_tail:
            raise Unreadable(f"{rel}: larger than {limit} bytes decompressed")
        return data.decode("utf-8", errors="replace")

    def write(self, rel: str, text: str) -> None:
        """Write an existing kernel file (never creates one); OSError as the kernel says."""
        data = text.encode()
        fd = os.open(self._path(rel), os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC | os.O_NONBLOCK)
        try:
            if os.write(fd, data) != len(data):
                raise OSError(0, "short write")
        finally:
            os.close(fd)


def parse_cpu_list(text: str) -> set[int]:
    """The kernel's CPU list format ("0-3,5"; "" is no CPU); ValueError if malformed."""
    cpus: set[int] = set()
    text = text.strip()
    if not text:
        return cpus
    for part in text.split(","):
        m = _CPU_RANGE.fullmatch(part.strip())
        if not m:
            raise ValueError(f"{shown(text)} is not a CPU list like 0-3,5")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        if lo > hi or hi >= MAX_CPUS:
            raise ValueError(f"{shown(text)}: CPU range {part.strip()} is not in 0..{MAX_CPUS - 1}")
        cpus.update(range(lo, hi + 1))
    return cpus


def format_cpu_list(cpus) -> str:
    """The kernel's CPU list format of a set of CPU numbers."""
    out, run = [], []
    for cpu in sorted(cpus):
        if run and cpu == run[-1] + 1:
            run.append(cpu)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [cpu]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)
