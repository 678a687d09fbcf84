"""Exception hierarchy: one base class, errno always attached."""

import errno


class RtnetError(OSError):
    """Base for all rtnet errors; ``.errno`` carries the C error when there is one."""


class XskError(RtnetError):
    """AF_XDP socket or XDP program errors."""


class RtThreadError(RtnetError):
    """The real-time thread could not be configured or started."""


class LabError(RtnetError):
    """Lab (network namespace) set-up or tear-down errors."""


class ConfigError(ValueError):
    """A bad option value, raised before anything is applied."""


class ChannelError(RtnetError):
    """An application channel could not be opened or used (station gone: errno ENOTCONN)."""


class ChannelFull(ChannelError):
    """The channel's TX ring is full: the station has not sent the queued messages yet."""


class RtcfgError(RtnetError):
    """An RTcfg frame, payload or request refused; the message is one line naming what."""

    def __init__(self, message: str):
        super().__init__(errno.EPROTO, message)

    def __str__(self) -> str:
        return self.strerror
