"""The application library builds outside Python and the example reports errors in one line."""

import os
import subprocess

from conftest import require_tool

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_make_app_builds_library_and_example(tmp_path):
    require_tool("make")
    require_tool("cc")
    subprocess.run(
        ["make", "-s", "-C", os.path.join(ROOT, "csrc"), "app"], check=True, capture_output=True
    )
    exe = os.path.join(ROOT, "examples", "rt_publisher")
    assert os.path.exists(os.path.join(ROOT, "csrc", "librtnet_app.a"))
    env = dict(os.environ, RTNET_RUN_DIR=str(tmp_path))
    res = subprocess.run(
        [exe, "-n", "nowhere", "02:52:54:00:00:01"], capture_output=True, text=True, env=env
    )
    assert res.returncode == 1
    assert res.stderr.strip() == (
        f"rt_publisher: rteth0: no station daemon at "
        f"{tmp_path}/nowhere/rteth0.ctl (No such file or directory)"
    )
    bad = subprocess.run([exe, "not-a-mac"], capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and "usage" in bad.stderr
