"""User input inside error messages: always one printable line of bounded length.

Errors quote what they refuse (a value from a file, a word of a command
line), and that text may hold newlines, terminal escapes or a megabyte of
digits.  Messages are built with :func:`shown` for each quoted value and
passed through :func:`one_line` before they are printed.

>>> shown("rteth0"), shown("a\\nb"), shown(10 ** 50)
("'rteth0'", "'a\\\\nb'", 'a 51-digit number')
>>> one_line("bad\\x1b[2J value")
'bad\\\\x1b[2J value'
"""

from __future__ import annotations

import reprlib

MAX_SHOWN = 60  # characters of a quoted value
MAX_PATH_SHOWN = 160
MAX_LINE = 300  # characters of a whole message built from quoted words


def _int_text(value: int) -> str:
    if abs(value) < 10**18:
        return str(value)
    sign = "negative " if value < 0 else ""
    if value.bit_length() < 14000:
        return f"a {sign}{len(str(abs(value)))}-digit number"
    # str() of a huge int is slow, and Python refuses it past 4300 digits
    return f"a {sign}number of about {int(value.bit_length() * 0.30103)} digits"


class _Short(reprlib.Repr):
    """reprlib's bounded repr, with integers (also inside lists) as :func:`_int_text`."""

    def __init__(self):
        super().__init__()
        self.maxstring = self.maxother = MAX_SHOWN
        self.maxlevel = 3

    def repr_int(self, x, level):
        return _int_text(x)


_short = _Short()


def shown(value) -> str:
    """A short one-line rendering of ``value`` for an error message."""
    if isinstance(value, int) and not isinstance(value, bool):
        return _int_text(value)
    return one_line(_short.repr(value))


def shown_path(path: str) -> str:
    """A file name for an error message: whole unless absurdly long."""
    if len(path) > MAX_PATH_SHOWN:
        half = MAX_PATH_SHOWN // 2
        path = f"{path[:half]}...{path[-half:]}"
    return one_line(path)


def bounded(text: str) -> str:
    """``text`` cut in the middle if longer than MAX_LINE: its start and end say the most."""
    if len(text) <= MAX_LINE:
        return text
    return f"{text[: MAX_LINE // 2]}...{text[-(MAX_LINE // 3) :]}"


def one_line(text: str) -> str:
    """``text`` with every character that does not print written as an escape."""
    if text.isprintable():
        return text
    return "".join(
        ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text
    )
