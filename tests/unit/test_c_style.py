"""The C sources follow csrc/.clang-format (Linux kernel style, 100 columns).

Every .c and .h file under csrc/ (its subfolders included, the build output
not) must pass ``clang-format --dry-run --Werror``; there is no exemption
list.  Hand-aligned trailing comments and #define values are what the
formatter's own alignment options (AlignTrailingComments,
AlignConsecutiveMacros) keep, so the layout is the formatter's, not a
file's.  Without clang-format the test skips, or fails under CI=true.
"""

import glob
import os
import shutil
import subprocess

from conftest import skip_or_fail

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CSRC = os.path.join(ROOT, "csrc")


def _sources() -> list[str]:
    """Every C source and header under csrc/, relative to it, but the build's output."""
    found = glob.glob(os.path.join(CSRC, "**", "*.[ch]"), recursive=True)
    return sorted(
        os.path.relpath(p, CSRC)
        for p in found
        if os.path.relpath(p, CSRC).split(os.sep)[0] != "build"
    )


def _clang_format() -> str:
    exe = shutil.which("clang-format")
    if exe is None:
        skip_or_fail("clang-format is not installed (run tools/setup-system.sh)")
    return exe


def _dry_run(exe: str, files: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [exe, "--dry-run", "--Werror", "--style=file", *files],
        cwd=CSRC,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_c_sources_follow_the_clang_format_style():
    exe = _clang_format()
    files = _sources()
    assert files, "no C source is checked"
    res = _dry_run(exe, files)
    assert res.returncode == 0, (
        "run clang-format -i on these files (csrc/.clang-format):\n" + res.stderr[-4000:]
    )
