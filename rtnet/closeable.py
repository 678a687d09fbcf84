"""Owning a C object or a device: an idempotent close(), ``with``, and a safety net.

Stations, raw sockets, channels and TAP devices all hold something the kernel
keeps until it is released (an XDP program, a UMEM, a netdev).  Each defines
close(); this base gives them the same context-manager protocol and closes
whatever was forgotten when the object is collected.
"""

from __future__ import annotations

from typing import Self


class Closeable:
    """Base for classes whose close() is idempotent."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # a half-built object, or interpreter shutdown
            pass
