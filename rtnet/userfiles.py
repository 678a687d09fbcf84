"""Files a user names (a configuration, a stage-2 file), read as hostile input.

One way to read them: the open never blocks on a FIFO planted in the file's place, only a
regular file is read, and never more than a bound, so a wrong path is one line of error,
not a hang or a memory spike.  (The kernel's own files go through rtnet.sysfiles.)
"""

from __future__ import annotations

import os
import stat

from .messages import shown_path


class Refused(Exception):
    """The file could not be read as asked; ``str()`` is one line naming it, ``too_large``
    says it was refused for its size alone."""

    def __init__(self, message: str, too_large: bool = False):
        super().__init__(message)
        self.too_large = too_large


def read_regular(path: str, limit: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them, or Refused."""
    name = shown_path(path)
    try:
        # O_NONBLOCK: a FIFO in place of the file must not block the open
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise Refused(f"{name}: {exc.strerror}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise Refused(f"{name}: is a directory")
        if not stat.S_ISREG(mode):
            raise Refused(f"{name}: not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise Refused(f"{name}: {exc.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise Refused(f"{name}: larger than {limit} bytes", too_large=True)
    return data
