"""The rtcfg command line (rtnet/rtcfg/cli.py): RTnet's syntax into rtnetd requests."""

import errno
import io
import re

import pytest

from rtmac import control
from rtnet.rtcfg import cli


def parse(argv):
    return cli.parse_request(argv)[0]


def test_every_subcommand_parses_with_rtnets_defaults(tmp_path):
    stage1 = tmp_path / "s1"
    stage1.write_text("tdma slot 0 400\nifconfig vnic0 up $IPADDR\n")
    assert parse(["rteth0", "server"]) == {
        "cmd": "rtcfg.server",
        "dev": "rteth0",
        "period_ms": 1000,
        "burstrate": 4,
        "heartbeat_ms": 1000,
        "threshold": 2,
        "ready": False,
    }
    assert (
        parse(["rteth0", "server", "-p", "500", "-b", "2", "-h", "0", "-t", "3", "-r"])[
            "heartbeat_ms"
        ]
        == 0
    )
    add = parse(
        [
            "rteth0",
            "add",
            "10.0.0.2",
            "-hw",
            "02:00:00:00:00:02",
            "-stage1",
            str(stage1),
            "-stage2",
            str(stage1),
            "-t",
            "5000",
        ]
    )
    assert add == {
        "cmd": "rtcfg.add",
        "dev": "rteth0",
        "address": "10.0.0.2",
        "hw": "02:00:00:00:00:02",
        "stage1": stage1.read_text(),
        "stage2": stage1.read_text(),
        "timeout_ms": 5000,
    }
    assert parse(["rteth0", "add", "2:0:0:0:0:3"])["address"] == "02:00:00:00:00:03"
    assert parse(["rteth0", "del", "10.0.0.2"]) == {
        "cmd": "rtcfg.del",
        "dev": "rteth0",
        "address": "10.0.0.2",
    }
    assert parse(["rteth0", "wait", "-t", "100"])["timeout_ms"] == 100
    assert parse(["rteth0", "ready"]) == {"cmd": "rtcfg.ready", "dev": "rteth0", "timeout_ms": 0}
    assert parse(["rteth0", "detach"]) == {"cmd": "rtcfg.detach", "dev": "rteth0"}
    assert parse(["rteth0", "client", "-c", "-m", "8"]) == {
        "cmd": "rtcfg.client",
        "dev": "rteth0",
        "timeout_ms": 0,
        "output": "stdout",
        "max_stations": 8,
    }
    assert parse(["rteth0", "announce", "-f", "/tmp/x", "-b", "1", "-r"]) == {
        "cmd": "rtcfg.announce",
        "dev": "rteth0",
        "timeout_ms": 0,
        "output": "/tmp/x",
        "burstrate": 1,
        "ready": True,
    }


def test_stage1_from_standard_input(monkeypatch):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"vnic up\n")))
    assert parse(["rteth0", "add", "10.0.0.2", "-stage1", "-"])["stage1"] == "vnic up\n"


@pytest.mark.parametrize(
    "argv,message",
    [
        (["rteth0"], "required"),
        (["rteth0", "reboot"], "invalid choice"),
        (["rteth0", "server", "-h", "65536"], "invalid heartbeat: 65536"),
        (["rteth0", "server", "-t", "0"], "invalid threshold"),
        (["rteth0", "server", "-p", "1e3"], "invalid period"),
        (["rteth0", "add", "10.0.0"], "invalid address"),
        (["rteth0", "add", "02:00:00:00:00:02", "-hw", "02:00:00:00:00:03"], "-hw needs an IP"),
        (["rteth0", "add", "10.0.0.2", "-stage1", "/nonexistent/s1"], "No such file"),
        (["rteth0", "client", "-c", "-f", "x"], "not allowed with"),
        (["rteth0", "client", "-m", "0"], "invalid max stations"),
        (["rteth0", "announce", "-b", "0"], "invalid burstrate"),
        (["rteth0", "wait", "-t", "-1"], "expected one argument|invalid timeout"),
        (["bad/dev", "detach"], "invalid device name"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(argv, message, capsys):
    assert cli.main(argv) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("rtcfg: ")
    assert re.search(message, err), err


def test_a_bad_stage_file_is_refused_before_anything_is_sent(tmp_path, monkeypatch, capsys):
    sent = []
    monkeypatch.setattr(control, "send_request", lambda *a, **k: sent.append(a))
    bad = tmp_path / "s1"
    bad.write_text("tdma slot 0 400\nrm -rf /\n")
    assert cli.main(["rteth0", "add", "10.0.0.2", "-stage1", str(bad)]) == cli.EXIT_USAGE
    assert "line 2: 'rm' is not an allowed command" in capsys.readouterr().err
    assert sent == []


def test_a_daemon_without_rtcfg_gives_one_clear_line(monkeypatch, capsys):
    def old_daemon(dev, request, timeout=None, netns=None):
        raise control.ControlError(errno.EINVAL, f"unknown command {request['cmd']!r}")

    monkeypatch.setattr(control, "send_request", old_daemon)
    assert cli.main(["rteth0", "server"]) == cli.EXIT_FAILED
    assert capsys.readouterr().err == f"rtcfg: rteth0: {cli.UNSUPPORTED}\n"


def test_client_c_prints_the_configuration_the_daemon_received(monkeypatch, capsys):
    seen = {}

    def daemon(dev, request, timeout=None, netns=None):
        seen.update(request=request, timeout=timeout)
        return {"ok": True, "config": "tdma slot 0 400\n"}

    monkeypatch.setattr(control, "send_request", daemon)
    assert cli.main(["rteth0", "client", "-c", "-t", "2000"]) == 0
    assert capsys.readouterr().out == "tdma slot 0 400\n"
    assert seen["request"]["cmd"] == "rtcfg.client" and seen["timeout"] == 7.0


def test_a_fifo_as_a_stage_file_is_refused_without_waiting(tmp_path, monkeypatch, capsys):
    import os

    sent = []
    monkeypatch.setattr(control, "send_request", lambda *a, **k: sent.append(a))
    fifo = tmp_path / "s1"
    os.mkfifo(fifo)
    assert cli.main(["rteth0", "add", "10.0.0.2", "-stage1", str(fifo)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "stage 1 file" in err and "not a regular file" in err
    assert sent == []
