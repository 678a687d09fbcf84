"""Exception hierarchy: one base class, errno always attached."""


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
