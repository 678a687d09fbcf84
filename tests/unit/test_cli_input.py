"""Command lines of rtnetctl, rtmac, vnic and tools/: a bad value is one line at parse time.

Numeric options take ASCII decimal numbers in a stated range (rtnet.argtypes);
``nan``, ``inf``, ``1e300`` or a 5000-digit count are refused before anything
happens, with exit status 2 and one line on stderr.  Random command lines
(hypothesis) end with status 0, 1 or 2 and at most one line on stderr, never a
traceback.  Everything that would reach a daemon, build or remove a lab, or
start a benchmark is replaced by a stand-in that refuses, so only the argument
handling runs.
"""

import argparse
import contextlib
import doctest
import errno
import importlib
import io
import os
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rtmac.cli
import rtnet.cli
import vnic.cli
from rtmac import control
from rtnet import argtypes, demo, lab, labdemo, messages, names, sigterm, stationctl
from rtnet.errors import LabError


class Refused(Exception):
    """A stand-in was reached that must not be: the test's own failure."""


@pytest.fixture(scope="module", autouse=True)
def nothing_happens():
    """Name: nothing_happens.  Scope: module.  Every way out of argument handling refuses.

    Daemons: stationctl and rtmac.control raise their "no daemon" errors.  The lab:
    Lab.up/down/status raise LabError, so no namespace is built or removed (another
    lab on this machine stays as it is).  Benchmarks: sigterm.run_child records and
    returns 0.  The working directory is a scratch directory (capture -w, vnic --json).
    """

    def no_daemon(*_a, **_k):
        raise stationctl.StationCtlError(errno.ENOENT, "no rtnetd running (stand-in)")

    def no_control(*_a, **_k):
        raise control.NoDaemonError(errno.ENOENT, "no rtnetd running (stand-in)")

    def no_lab(*_a, **_k):
        raise LabError(errno.EPERM, "lab disabled (stand-in)")

    calls = []
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as scratch:
        for name in ("up", "down", "request"):
            mp.setattr(stationctl, name, no_daemon)
        mp.setattr(control, "send_request", no_control)
        for name in ("up", "down", "status"):
            mp.setattr(lab.Lab, name, no_lab)
        mp.setattr(lab, "all_labs", list)
        mp.setattr(labdemo, "run", no_lab)
        mp.setattr(demo, "run_frame_demo", no_lab)
        mp.setattr(sigterm, "run_child", lambda *a, **k: calls.append(a) or 0)
        mp.chdir(scratch)
        yield calls


def run(main, argv):
    """(exit status, stdout, stderr) of ``main(argv)``."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    return rc, out.getvalue(), err.getvalue()


def one_line(err: str) -> str:
    assert err.endswith("\n") and err.count("\n") == 1, repr(err)
    assert err[:-1].isprintable() and len(err) < 400, repr(err)
    return err[:-1]


def refused_at_parse(main, argv, prog: str) -> str:
    rc, out, err = run(main, argv)
    assert rc == 2, (argv, rc, err)
    line = one_line(err)
    assert line.startswith(prog + ": "), line
    return line


# --- the helper --------------------------------------------------------------------------------


def test_argtypes_and_messages_examples_should_hold():
    for module in (argtypes, messages, names):
        assert doctest.testmod(module).failed == 0


@pytest.mark.parametrize(
    "text",
    [
        "nan",
        "inf",
        "-inf",
        "1e300",
        "1e999",
        "",
        " 5",
        "5 ",
        "\uff15",
        "\u0665",
        "5_0",
        "0x10",
        "+",
        "5e",
        "--5",
        "9" * 5000,
    ],
)
def test_number_should_refuse_what_is_not_a_finite_decimal_in_range(text):
    with pytest.raises(argparse.ArgumentTypeError, match=r"\(allowed: 0\.001\.\.60\)$"):
        argtypes.number("time", 0.001, 60)(text)


@pytest.mark.parametrize(
    "text, value",
    [
        ("60", 60.0),
        ("0.5", 0.5),
        (".5", 0.5),
        ("5.", 5.0),
        ("1e1", 10.0),
        ("+2", 2.0),
        ("0.001", 0.001),
    ],
)
def test_number_should_take_decimals_in_range(text, value):
    assert argtypes.number("time", 0.001, 60)(text) == value


@pytest.mark.parametrize(
    "text", ["1.0", "1e3", "\uff11", "1_0", " 1", "0x1", "", "-", "0", "101", "9" * 5000]
)
def test_integer_should_refuse_what_is_not_an_ascii_whole_number_in_range(text):
    with pytest.raises(argparse.ArgumentTypeError, match=r"\(allowed: 1\.\.100\)$") as err:
        argtypes.integer("count", 1, 100)(text)
    assert len(str(err.value)) < 120


def test_integer_should_take_whole_numbers_in_range():
    parse = argtypes.integer("offset", -5, 5)
    assert [parse(t) for t in ("-5", "+5", "0", "005")] == [-5, 5, 0, 5]
    assert argtypes.integer_list("size", 64, 1518)("64,,1518") == [64, 1518]
    assert argtypes.integer_list("size", 64, 1518)("") == []


# --- rtnetctl ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, why",
    [
        ("capture -w x.pcap -t nan", "invalid time: nan (allowed: 0.001..60)"),
        ("capture -w x.pcap -t inf", "invalid time: inf"),
        ("capture -w x.pcap -t 1e300", "invalid time: 1e300"),
        ("capture -w x.pcap -t 0", "invalid time: 0"),
        ("capture -w x.pcap -c 10001", "invalid count: 10001 (allowed: 1..10000)"),
        ("ping 10.0.0.2 -c " + "9" * 5000, "invalid count: 999"),
        ("ping 10.0.0.2 -c 100001", "(allowed: 1..100000)"),
        ("ping 10.0.0.2 -s 1501", "invalid size: 1501 (allowed: 0..1500)"),
        ("ping 10.0.0.2 -t 0", "invalid timeout: 0"),
        ("ping 10.0.0.2 -i \uff11\uff10", "invalid interval"),
        ("up --timeout nan", "invalid timeout: nan"),
        ("lab up --duration inf", "invalid duration: inf"),
        ("lab up --stations 0", "invalid stations: 0 (allowed: 1..32)"),
        ("lab frames --count -1", "invalid count: -1"),
        ("status --dev a/b", "invalid device name 'a/b'"),
        ("status --dev " + "x" * 16, "longer than the 15"),
        ("-n a/b status", "invalid namespace name 'a/b'"),
        ("status -n ..", "invalid namespace name '..'"),
        ("check --measure 0.1", "invalid measure seconds: 0.1 (allowed: 0.5..600)"),
        ("check --measure nan", "invalid measure seconds: nan"),
    ],
)
def test_rtnetctl_should_refuse_bad_values_at_parse_time(argv, why):
    assert why in refused_at_parse(rtnet.cli.main, argv.split(" "), "rtnetctl")


def test_rtnetctl_should_keep_control_characters_off_the_terminal():
    line = refused_at_parse(rtnet.cli.main, ["status", "--dev", "a\x1b[2Jb\nc"], "rtnetctl")
    assert "\\x1b[2J" in line and "\\n" in line


def test_rtnetctl_ping_in_range_should_reach_the_daemon_stand_in():
    rc, out, err = run(rtnet.cli.main, ["ping", "10.0.0.2", "-c", "100000", "-t", "60000"])
    assert rc == 1 and one_line(err) == "rtnetctl: no rtnetd running (stand-in)"


def test_rtnetctl_capture_should_not_leave_a_file_when_nothing_was_captured():
    rc, _, err = run(rtnet.cli.main, ["capture", "-w", "new.pcap", "-t", "0.5"])
    assert rc == 1 and "no rtnetd" in err
    assert not os.path.exists("new.pcap")
    with open("old.pcap", "wb") as f:
        f.write(b"kept")
    run(rtnet.cli.main, ["capture", "-w", "old.pcap"])
    with open("old.pcap", "rb") as f:
        assert f.read() == b"kept"


def test_rtnetctl_capture_into_an_unwritable_place_should_fail_before_capturing():
    rc, _, err = run(rtnet.cli.main, ["capture", "-w", "/proc/nope/x.pcap"])
    assert rc == 1 and one_line(err).startswith("rtnetctl: /proc/nope/x.pcap: ")


# --- rtmac ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, why",
    [
        ("tdma rteth0 slot 0 400 -t " + "9" * 5000, "invalid calibration timeout: 999"),
        ("tdma rteth0 slot 0 400 -t 3600001", "(allowed: 0..3600000)"),
        # a value's form at parse time; its range by the C rule before anything is sent
        ("tdma rteth0 master 1000 -m 300", "max_cal_requests: 300 above maximum 256"),
        ("tdma rteth0 master 1000000000000", "cycle_us: 1000000000000 outside the supported range"),
        ("tdma rteth0 master \uff11\uff10\uff10\uff10", "invalid cycle period"),
        ("tdma rteth0 master 1000 -c 1000001", "cal_rounds: 1000001 above maximum 1000000"),
        ("tdma rteth0 master 1000 -c " + "9" * 5000, "invalid calibration rounds"),
        (
            "tdma rteth0 master 1000 -b 1000000",
            "backup_offset_us: 1000000 is not smaller than the cycle (1000 us)",
        ),
        ("tdma rteth0 slot 1 2200 -p \u0661/\u0662", "invalid phasing"),
        ("tdma rteth0 slot 64 100", "slot id: 64 above maximum 63"),
        ("tdma rteth0 slot 1 100 -j 6x", "invalid joint slot id"),
        ("tdma rteth0 slot 1 1000001", "slot 1: offset_us: 1000001 above maximum 1000000"),
        ("-n a/b tdma rteth0 show", "invalid namespace name"),
        ("tdma a\x00b show", "invalid device name"),
    ],
)
def test_rtmac_should_refuse_bad_values_at_parse_time(argv, why):
    assert why in refused_at_parse(rtmac.cli.main, argv.split(" "), "rtmac")


# --- vnic bench ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, why",
    [
        ("bench --cycle-us 100", "--cycle-us: 100 us at 100 Mbit/s: 2 stations do not fit"),
        ("bench --cycle-us 300", "do not fit a 300 us cycle"),
        ("bench --cycle-us 400 --link-rate 10", "--cycle-us: 400 us at 10 Mbit/s"),
        ("bench --cycle-us nan", "invalid cycle: nan (allowed: 100..1000000)"),
        ("bench --link-rate 0", "invalid link rate: 0 (allowed: 1..400000)"),
        ("bench --mtu 9000", "invalid mtu: 9000 (allowed: 68..1496)"),
        ("bench --seconds 601", "invalid seconds: 601 (allowed: 1..600)"),
        ("bench --lab NO", "--lab: lab name 'NO'"),
        ("bench --json /proc/nope/x.json", "--json: /proc/nope/x.json: cannot write"),
        ("bench --png .", "--png: .: is a directory"),
        ("bench --xdp-mode zerocopy", "invalid choice: 'zerocopy'"),
        ("bench --rt-cpu one", "--rt-cpu: 'one' is not auto, none or a CPU number"),
        ("bench --rt-cpu 4096", "--rt-cpu: CPU 4096 is not one this process may use"),
    ],
)
def test_vnic_bench_should_check_every_argument_before_building_anything(argv, why):
    assert why in refused_at_parse(vnic.cli.main, argv.split(" "), "vnic")


def test_vnic_bench_with_good_arguments_should_get_as_far_as_the_lab():
    rc, out, err = run(vnic.cli.main, ["bench", "--cycle-us", "2000", "--mtu", "1000"])
    assert rc == 1 and one_line(err) == "vnic: lab disabled (stand-in)"
    assert "TDMA cycle 2000 us" in out and "VNIC MTU 1000" in out


# --- tools/ ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "tool, parse, argv, why",
    [
        ("bench_tdma", "parse_args", ["--search", "1000,x"], "invalid cycle: x"),
        ("bench_tdma", "parse_args", ["--cycle-us", "50"], "invalid cycle: 50"),
        ("bench_tdma", "parse_args", ["--cycles", "inf"], "invalid cycles: inf"),
        ("bench_wakeup", "parse_args", ["--priority", "100"], "invalid priority: 100"),
        ("bench_wakeup", "parse_args", ["--period-us", "0"], "invalid period: 0"),
        (
            "bench_suite",
            "parse_args",
            ["--sizes", "64,9000"],
            "invalid sizes: [64, 9000] is not allowed",
        ),
        ("bench_suite", "parse_args", ["--trial-s", "nan"], "invalid trial s: nan is not allowed"),
        (
            "bench_suite",
            "parse_args",
            ["--link-rates", "100,5"],
            "invalid link rates mbps: [100, 5]",
        ),
        (
            "bench_suite",
            "parse_args",
            ["--guard-us", "900"],
            "invalid guard us: 900 is not allowed",
        ),
        ("bench_suite", "parse_args", ["--parts", "c,x"], "parts: choose from a, c, c-rt"),
        ("bench_suite", "parse_args", ["--flood-s", "0"], "invalid flood s: 0.0 is not allowed"),
        ("bench_xdp_flood", "main", ["--batch", "0"], "invalid batch: 0"),
        ("bench_xdp_flood", "main", ["--frame", "63"], "invalid frame size: 63"),
        (
            "bench_xdp_flood",
            "main",
            ["--tx-cpu", "1", "--rx-cpu", "1"],
            "--priority needs --tx-cpu and --rx-cpu on two different CPUs",
        ),
        ("bench_rtpath", "main", ["--size", "10"], "invalid size: 10"),
        ("bench_rtpath", "main", ["--fifo", "1e9"], "invalid priority: 1e9"),
        ("bench_app", "main", ["--seconds", "nan"], "invalid seconds: nan"),
        ("bench_vnic", "parse_args", ["--rt-cpu", "-1"], "--rt-cpu: CPU -1 is not one"),
        ("bench_vnic", "parse_args", ["--rt-cpu", "1.5"], "'1.5' is not auto, none or a CPU"),
        ("bench_app", "main", ["--offset-us", "1000"], "invalid offset: 1000 (allowed: 0..999)"),
        ("bench_vnic_csw", "main", ["--rates", "10,10"], "--rates: two or more rates, each once"),
        ("bench_vnic_csw", "main", ["--rates", "30"], "--rates: two or more rates, each once"),
        ("bench_vnic_csw", "main", ["--rates", "10,101"], "invalid rate: 101 (allowed: 1..100)"),
        ("bench_vnic_csw", "main", ["--block-s", "nan"], "invalid block seconds: nan"),
        ("bench_vm_costs", "main", ["--runs", "0"], "invalid --runs: 0"),
        ("bench_vm_costs", "main", ["--runs", "3x"], "invalid --runs: 3x"),
        ("bench_vm_costs", "main", ["--json", "/proc/x.json"], "cannot write into /proc"),
        ("bench_vm_costs", "main", ["--json", "/"], "--json /: is a directory"),
    ],
)
def test_tools_should_refuse_bad_numbers_at_parse_time(monkeypatch, capsys, tool, parse, argv, why):
    module = importlib.import_module(f"tools.{tool}")
    with pytest.raises(SystemExit) as exc:
        getattr(module, parse)(argv)
    assert exc.value.code == 2
    assert why in capsys.readouterr().err.splitlines()[-1]


# --- random command lines -------------------------------------------------------------------------

NUMBERS = st.one_of(
    st.integers().map(str),
    st.integers(-2, 70).map(str),
    st.floats().map(repr),
    st.sampled_from(
        [
            "nan",
            "inf",
            "-inf",
            "1e300",
            "0",
            "-1",
            "\uff11\uff10",
            "1_0",
            " 5",
            "",
            "9" * 5000,
            "0.0001",
            "60",
            "1000",
            "100000",
            "1/2",
            "3/2",
            "0/1",
        ]
    ),
)
WORDS = st.one_of(
    NUMBERS,
    st.text(max_size=10),
    st.sampled_from(
        [
            "rteth0",
            "a/b",
            "..",
            "a\x00b",
            "x" * 16,
            "10.0.0.2",
            "02:52:54:00:00:02",
            "x.pcap",
            "-",
            "--",
            "-h",
        ]
    ),
)


def command_lines(vocabulary):
    return st.lists(st.one_of(st.sampled_from(vocabulary), WORDS), max_size=9)


RTNETCTL = [
    "lab",
    "up",
    "down",
    "status",
    "frames",
    "ping",
    "capture",
    "version",
    "bench",
    "-n",
    "--netns",
    "--dev",
    "-j",
    "--json",
    "-c",
    "--config",
    "--timeout",
    "-i",
    "-s",
    "-t",
    "-w",
    "--stations",
    "--duration",
    "--bare",
    "--all",
    "--name",
    "--count",
    "--keep",
    "--quick",
    "--help",
]
RTMAC = [
    "tdma",
    "nomac",
    "rteth0",
    "master",
    "slave",
    "slot",
    "detach",
    "show",
    "attach",
    "-n",
    "-b",
    "-c",
    "-i",
    "-m",
    "-p",
    "-s",
    "-j",
    "-l",
    "-t",
    "--help",
]
VNIC = [
    "bench",
    "--seconds",
    "--cycle-us",
    "--link-rate",
    "--mtu",
    "--lab",
    "--json",
    "--png",
    "--offload",
    "--no-offload",
    "on",
    "off",
    "both",
    "--help",
    "2000",
    "1000",
]
SETTINGS = settings(max_examples=300, deadline=None, database=None)


def ends_cleanly(main, argv):
    rc, _out, err = run(main, argv)
    assert rc in (0, 1, 2), (argv, rc)
    if rc:
        one_line(err)
    else:
        assert err == "", (argv, err)


@SETTINGS
@given(st.sampled_from(RTNETCTL[:9]), command_lines(RTNETCTL))
def test_random_rtnetctl_command_lines_should_end_cleanly(command, rest):
    ends_cleanly(rtnet.cli.main, [command] + rest)


@SETTINGS
@given(st.sampled_from(["tdma", "nomac"]), command_lines(RTMAC))
def test_random_rtmac_command_lines_should_end_cleanly(discipline, rest):
    ends_cleanly(rtmac.cli.main, [discipline] + rest)


@SETTINGS
@given(command_lines(VNIC))
def test_random_vnic_command_lines_should_end_cleanly(rest):
    ends_cleanly(vnic.cli.main, ["bench"] + rest)
