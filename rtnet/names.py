"""The names the kernel accepts for network interfaces and network namespaces.

An interface name follows the kernel's dev_valid_name(): 1 to 15 bytes
(IFNAMSIZ - 1), not ``.`` or ``..``, and no ``/``, ``:`` or white space.
A namespace name is a file name under /var/run/netns: 1 to 255 bytes, not
``.`` or ``..``, no ``/``.  Beyond the kernel, both refuse NUL and every
other character that does not print (control characters, line separators),
which no error message could show on one line.

>>> interface_name_problem("rteth0") is None
True
>>> interface_name_problem("a" * 16)
'16 bytes, longer than the 15 an interface name may have'
"""

from __future__ import annotations

IFNAMSIZ = 16  # the kernel's buffer, NUL included
NAME_MAX = 255  # longest file name (a namespace is a file in /var/run/netns)


def _common_problem(name, limit: int, what: str) -> str | None:
    if not isinstance(name, str):
        return f"{what} must be a string"
    if not name:
        return f"{what} is empty"
    bad = next((ch for ch in name if not ch.isprintable() and ch != " "), None)
    if bad is not None:
        return f"{what} cannot contain the control character {bad!r}"
    size = len(name.encode())
    if size > limit:
        return f"{size} bytes, longer than the {limit} {what} may have"
    if name in (".", ".."):
        return f"{what} cannot be '.' or '..'"
    if "/" in name:
        return f"{what} cannot contain '/'"
    return None


def interface_name_problem(name) -> str | None:
    """Why the kernel would refuse ``name`` as an interface name, or None if it is fine."""
    problem = _common_problem(name, IFNAMSIZ - 1, "an interface name")
    if problem is None and (":" in name or any(ch.isspace() for ch in name)):
        problem = "an interface name cannot contain ':' or white space"
    return problem


def netns_name_problem(name) -> str | None:
    """Why ``name`` cannot name a network namespace, or None if it is fine."""
    return _common_problem(name, NAME_MAX, "a namespace name")
