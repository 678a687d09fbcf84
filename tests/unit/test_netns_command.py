"""Running a command inside a network namespace: the command line chosen."""

import os
import subprocess
import sys

from rtnet import netns


def test_command_should_enter_the_named_namespace_then_run_argv(monkeypatch):
    monkeypatch.setattr(netns.shutil, "which", lambda name: "/usr/bin/nsenter")
    assert netns.command("rtn-x-s1", ["iperf3", "-s"]) == [
        "/usr/bin/nsenter",
        "--net=/var/run/netns/rtn-x-s1",
        "--",
        "iperf3",
        "-s",
    ]


def test_command_without_nsenter_should_use_the_python_wrapper(monkeypatch):
    monkeypatch.setattr(netns.shutil, "which", lambda name: None)
    assert netns.command("rtn-x-s1", ["ping", "-c", "1"]) == [
        sys.executable,
        "-m",
        "rtnet.netns",
        "rtn-x-s1",
        "--",
        "ping",
        "-c",
        "1",
    ]


def test_wrapper_should_name_a_missing_namespace_in_one_line():
    r = subprocess.run(
        [sys.executable, "-m", "rtnet.netns", "rtn-no-such-ns", "--", "true"],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    assert r.returncode == 1
    assert r.stderr.strip().startswith("rtnet.netns: rtn-no-such-ns:")
    assert len(r.stderr.strip().splitlines()) == 1
