"""The Python tree passes ruff with the rules pyproject.toml names ([tool.ruff]) and is laid out
by ruff's formatter ([tool.ruff.format])."""

import os
import subprocess
import sys

from conftest import skip_or_fail

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


PATHS = ("rtnet", "rtmac", "vnic", "tools", "tests")


def _ruff(*args: str) -> subprocess.CompletedProcess:
    """ruff with ``args`` over the tree (skips, or fails under CI=true, without ruff)."""
    probe = subprocess.run(
        [sys.executable, "-m", "ruff", "--version"], capture_output=True, text=True
    )
    if probe.returncode != 0:
        skip_or_fail("ruff is not installed (pip install ruff, or the test extra)")
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args, "--no-cache", *PATHS],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )


def test_ruff_finds_nothing():
    res = _ruff("check")
    assert res.returncode == 0, res.stdout + res.stderr


def test_ruff_format_would_change_nothing():
    res = _ruff("format", "--check")
    assert res.returncode == 0, "run ruff format on these files:\n" + res.stdout + res.stderr
