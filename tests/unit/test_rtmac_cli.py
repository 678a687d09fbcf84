"""rtmac CLI: parsing of every form, one-line errors, round trip with a fake rtnetd."""

import json
import os
import shutil
import socket
import tempfile
import threading

import pytest

from rtmac import cli, control
from rtnet import paths


@pytest.fixture(autouse=True)
def run_dir(monkeypatch):
    """Name: run_dir.  Scope: function.  A short private RTNET_RUN_DIR (AF_UNIX paths
    are limited to 108 bytes, pytest's tmp_path can be longer)."""
    base = tempfile.mkdtemp(prefix="rtn-ctl-", dir="/tmp")
    monkeypatch.setenv("RTNET_RUN_DIR", base)
    path = paths.station_dir()  # sockets live per network namespace
    os.makedirs(path)
    yield path
    shutil.rmtree(base, ignore_errors=True)


class FakeDaemon:
    """Answers control requests on <run_dir>/<netns>/<dev>.ctl from a thread, recording them."""

    def __init__(self, run_dir, dev, reply):
        self.requests = []
        self.reply = reply
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(os.path.join(run_dir, f"{dev}.ctl"))
        self.sock.listen(4)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return  # close(): shutdown() wakes accept() on Linux
            with conn, conn.makefile("rwb") as f:
                request = json.loads(f.readline())
                self.requests.append(request)
                reply = self.reply(request) if callable(self.reply) else self.reply
                f.write(reply if isinstance(reply, bytes) else json.dumps(reply).encode() + b"\n")
                f.flush()

    def close(self):
        self.sock.shutdown(socket.SHUT_RDWR)
        self.thread.join()
        self.sock.close()


@pytest.fixture
def daemon(run_dir):
    """Name: daemon.  Scope: function.  Depends: run_dir.  Factory for FakeDaemon."""
    started = []

    def start(reply=None, dev="rteth0"):
        d = FakeDaemon(run_dir, dev, reply if reply is not None else {"ok": True})
        started.append(d)
        return d

    yield start
    for d in started:
        d.close()


def parse(cmdline):
    return cli.parse_request(cmdline.split())[0]


# --- parsing ---------------------------------------------------------------------------------


def test_master_should_parse_with_tdmacfg_defaults():
    assert parse("tdma rteth0 master 5000") == {
        "cmd": "tdma.master",
        "dev": "rteth0",
        "cycle_us": 5000,
        "backup_offset_us": None,
        "cal_rounds": 100,
        "max_slot_id": 7,
        "max_cal_requests": 64,
    }


def test_master_should_parse_every_option():
    r = parse("tdma rteth0 master 1000 -b 200 -c 10 -i 15 -m 8")
    assert (
        r["cycle_us"],
        r["backup_offset_us"],
        r["cal_rounds"],
        r["max_slot_id"],
        r["max_cal_requests"],
    ) == (1000, 200, 10, 15, 8)
    assert parse("tdma rteth0 master 1000 -b 0")["backup_offset_us"] is None


def test_slave_should_parse():
    assert parse("tdma rteth0 slave") == {
        "cmd": "tdma.slave",
        "dev": "rteth0",
        "cal_rounds": 100,
        "max_slot_id": 7,
    }
    r = parse("tdma rteth1 slave -c 0 -i 3")
    assert (r["dev"], r["cal_rounds"], r["max_slot_id"]) == ("rteth1", 0, 3)


def test_slot_should_parse_with_defaults():
    assert parse("tdma rteth0 slot 0 400") == {
        "cmd": "tdma.slot",
        "dev": "rteth0",
        "id": 0,
        "offset_us": 400,
        "phasing": 1,
        "period": 1,
        "size": 0,
        "joint": None,
        "cal_timeout_ms": 0,
        "cal_results": False,
    }


def test_slot_should_parse_every_option():
    r = parse("tdma rteth0 slot 1 2200 -p 1/2 -s 1500 -j 2 -l /tmp/cal.log -t 3000")
    assert {
        k: r[k]
        for k in (
            "id",
            "offset_us",
            "phasing",
            "period",
            "size",
            "joint",
            "cal_timeout_ms",
            "cal_results",
        )
    } == {
        "id": 1,
        "offset_us": 2200,
        "phasing": 1,
        "period": 2,
        "size": 1500,
        "joint": 2,
        "cal_timeout_ms": 3000,
        "cal_results": True,
    }
    assert parse("tdma rteth0 slot 1 0 -s 0")["size"] == 0  # 0 = device MTU


def test_slot_without_offset_should_remove_it():
    assert parse("tdma rteth0 slot 3") == {"cmd": "tdma.remove_slot", "dev": "rteth0", "id": 3}


@pytest.mark.parametrize(
    "cmdline, cmd",
    [
        ("tdma rteth0 detach", "tdma.detach"),
        ("tdma rteth0 show", "tdma.show"),
        ("tdma rteth0 show -j", "tdma.show"),
        ("nomac rteth0 attach", "nomac.attach"),
        ("nomac rteth0 detach", "nomac.detach"),
    ],
)
def test_simple_commands_should_parse(cmdline, cmd):
    assert parse(cmdline) == {"cmd": cmd, "dev": "rteth0"}


# --- refused command lines: one line, exit 2, nothing sent ------------------------------------


@pytest.mark.parametrize(
    "cmdline, message",
    [
        # the form is the parser's, the ranges the C rule's (rtn_tdma_cfg_check())
        ("tdma rteth0 slot 1 2200 -p 3/2", "rtmac: rteth0: slot 1: phasing 3/2 outside 1..2"),
        ("tdma rteth0 slot 1 2200 -p 0/2", "slot 1: phasing 0/2 outside 1..2"),
        ("tdma rteth0 slot 1 2200 -p 1", "invalid phasing: 1"),
        ("tdma rteth0 slot 1 2200 -s 40", "rtmac: rteth0: slot 1: size 40 outside 60..1500 (MTU)"),
        ("tdma rteth0 slot 1 2200 -s x", "rtmac: rteth0: argument -s: invalid slot size: x"),
        ("tdma rteth0 slot 1 abc", "invalid slot offset: abc"),
        ("tdma rteth0 slot 1 -5", "rtmac: rteth0: "),
        ("tdma rteth0 slot x 100", "invalid slot id: x"),
        ("tdma rteth0 slot 1 -p 1/2", "-p needs a slot offset"),
        ("tdma rteth0 slot 2 100 -j 2", "cannot be joint with itself"),
        ("tdma rteth0 frob", "invalid choice: 'frob'"),
        ("tdma rteth0 master", "required: cycle_us"),
        ("tdma rteth0 master 0", "cycle_us: 0 below minimum 100"),
        ("tdma rteth0 master 50", "cycle_us: 50 outside the supported range 100..1000000"),
        ("tdma rteth0 master 5o", "invalid cycle period: 5o (allowed: 100..1000000)"),
        ("tdma rteth0 master 5000 -b 5000", "not smaller than the cycle"),
        ("tdma rteth0 master 5000 -m 0", "max_cal_requests: 0 below minimum 1"),
        ("tdma rteth0 master 5000 -x 1", "unrecognized arguments: -x 1"),
        ("tdma rteth0 slave -i 300", "max_slot_id: 300 above maximum 63"),
        ("tdma rteth0 detach now", "unrecognized arguments: now"),
        ("nomac rteth0 frob", "invalid choice: 'frob'"),
        ("frob rteth0", "rtmac: argument tdma|nomac: invalid choice: 'frob'"),
        ("tdma a/b detach", "rtmac: a/b: invalid device name"),
        ("", "rtmac: the following arguments are required"),
    ],
)
def test_bad_command_lines_should_fail_with_one_line_and_status_2(cmdline, message, capsys, daemon):
    d = daemon()
    assert cli.main(cmdline.split()) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("rtmac: ")
    assert message in err
    assert d.requests == []


# --- talking to the daemon -------------------------------------------------------------------


def test_missing_daemon_should_be_reported_with_status_1(capsys):
    assert cli.main(["tdma", "rteth0", "slave"]) == 1
    assert capsys.readouterr().err == (
        "rtmac: rteth0: no rtnetd running on this device (start it with rtnetctl up)\n"
    )


def test_stale_socket_file_should_count_as_no_daemon(run_dir, capsys):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(os.path.join(run_dir, "rteth0.ctl"))
    s.close()  # file stays, nobody listens
    assert cli.main(["tdma", "rteth0", "detach"]) == 1
    assert "no rtnetd running" in capsys.readouterr().err


def test_slot_request_should_reach_the_daemon(daemon, capsys):
    d = daemon()
    assert cli.main("tdma rteth0 slot 1 2200 -p 2/2 -s 1000".split()) == 0
    assert d.requests == [parse("tdma rteth0 slot 1 2200 -p 2/2 -s 1000")]
    assert d.requests[0]["phasing"] == 2 and d.requests[0]["period"] == 2
    assert capsys.readouterr() == ("", "")


def test_daemon_refusal_should_print_its_message_with_status_1(daemon, capsys):
    daemon({"ok": False, "error": "slot 1: size 1450 outside 60..1400 (MTU)"})
    assert cli.main("tdma rteth0 slot 1 2200 -s 1450".split()) == 1
    assert capsys.readouterr().err == "rtmac: rteth0: slot 1: size 1450 outside 60..1400 (MTU)\n"


def test_malformed_reply_should_fail_cleanly(daemon, capsys):
    daemon(b"not json\n")
    assert cli.main("tdma rteth0 detach".split()) == 1
    assert capsys.readouterr().err == "rtmac: rteth0: malformed reply from rtnetd\n"


def test_requests_should_go_to_the_named_device(daemon):
    d0, d1 = daemon(dev="rteth0"), daemon(dev="rteth1")
    assert cli.main("nomac rteth1 attach".split()) == 0
    assert d0.requests == [] and d1.requests == [{"cmd": "nomac.attach", "dev": "rteth1"}]


SHOW_REPLY = {
    "ok": True,
    "state": "active",
    "config": {
        "role": "master",
        "cycle_us": 5000,
        "backup_offset_us": None,
        "cal_rounds": 100,
        "max_slot_id": 7,
        "max_cal_requests": 64,
        "link_rate_mbps": 100,
        "guard_ns": 2000,
        "mtu": 1500,
        "slots": [
            {"id": 0, "offset_us": 0, "phasing": 1, "period": 1, "size": 1500, "joint": None},
            {"id": 1, "offset_us": 2200, "phasing": 1, "period": 2, "size": 1500, "joint": 0},
        ],
    },
}


def test_show_should_print_a_table(daemon, capsys):
    daemon(SHOW_REPLY)
    assert cli.main("tdma rteth0 show".split()) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "rteth0: TDMA master, cycle 5000 us, state active"
    assert lines[1].split() == ["slot", "offset_us", "phasing", "size", "joint"]
    assert lines[2].split() == ["0", "0", "1/1", "1500", "-"]
    assert lines[3].split() == ["1", "2200", "1/2", "1500", "0"]


def test_show_json_should_print_the_reply(daemon, capsys):
    daemon(SHOW_REPLY)
    assert cli.main("tdma rteth0 show -j".split()) == 0
    out = capsys.readouterr().out
    assert json.loads(out) == {k: v for k, v in SHOW_REPLY.items() if k != "ok"}


def test_calibration_log_should_be_written_one_value_per_line(daemon, run_dir):
    d = daemon({"ok": True, "cal_results": [41000, 40500, 40750]})
    log = os.path.join(run_dir, "cal.log")
    assert cli.main(["tdma", "rteth0", "slot", "0", "400", "-l", log]) == 0
    assert d.requests[0]["cal_results"] is True
    with open(log) as f:
        assert f.read() == "41000\n40500\n40750\n"


def test_send_request_should_return_the_reply(daemon):
    daemon(lambda req: {"ok": True, "echo": req["cmd"]})
    assert control.send_request("rteth0", {"cmd": "tdma.show"}) == {"ok": True, "echo": "tdma.show"}


def test_socket_path_should_follow_rtnet_run_dir(run_dir, monkeypatch):
    assert control.socket_path("rteth0") == os.path.join(run_dir, "rteth0.ctl")
    assert control.socket_path("rteth0", "rtn-lab-s1").endswith("/rtn-lab-s1/rteth0.ctl")
    monkeypatch.delenv("RTNET_RUN_DIR")
    assert control.socket_path("rteth0") == "/run/rtnet/default/rteth0.ctl"
    with pytest.raises(ValueError):
        control.socket_path("../etc")
