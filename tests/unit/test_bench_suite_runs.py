"""tools/bench_suite.py without a lab: the protocol file, bad command lines, and the
repeated runs with their manifest (a run is a child process; here a stand-in that writes
a results file or dies midway)."""

import json
import sys
import textwrap

import bench_envelope
import pytest

from tools import bench_protocol, bench_suite


@pytest.fixture
def proto():
    return bench_protocol


@pytest.fixture
def suite():
    return bench_suite


def refused(suite, capsys, argv) -> str:
    """bench_suite's main refuses ``argv``: exit status 2 and one line on stderr."""
    with pytest.raises(SystemExit) as e:
        suite.main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err.strip()


def protocol_file(tmp_path, proto, edit=None, text=None):
    """The shipped protocol, with ``edit(text)`` applied, written to tmp_path."""
    with open(proto.DEFAULT_PATH) as f:
        body = f.read()
    p = tmp_path / "protocol.toml"
    p.write_text(text if text is not None else edit(body) if edit else body)
    return str(p)


def test_the_shipped_protocol_loads_and_every_key_is_set(proto):
    p = proto.load()
    assert set(p.values) == set(proto.SCHEMA)
    assert p.values["confirm_s"] >= 30 and p.values["latency_trials"] >= 20
    assert p.values["retry_disturbed"] >= 0 and p.values["runs"] == 3
    assert p.defaults(quick=True)["runs"] == 1 and p.defaults(quick=False)["trial_s"] == 2.0
    assert len(p.sha256) == 64


@pytest.mark.parametrize(
    "edit, names",
    [
        (lambda t: t.replace("version = 1", "version = 1\n[rfc2544\n"), "does not parse"),
        (lambda t: t.replace("trial_s = 2.0", "trial_len = 2.0"), "rfc2544.trial_len: unknown key"),
        (
            lambda t: t.replace("latency_trials = 20 ", "latency_trials = 5 "),
            "rfc2544.latency_trials: 5 is not allowed (a whole number in 20..1000)",
        ),
        (lambda t: t.replace("trial_s = 2.0", "trial_s = nan"), "rfc2544.trial_s: nan"),
        (lambda t: t.replace("runs = 3 ", "runs = true "), "runs.runs: True is not allowed"),
        (lambda t: t.replace("confirm_s = 30.0", ""), "rfc2544.confirm_s: missing"),
        (lambda t: t.replace("[vnic]", "[vnics]"), "vnics: unknown table"),
        (lambda t: t.replace("messages = 10000", 'messages = "many"'), "matrix.messages"),
        (lambda t: t.replace("sizes = [64,", "sizes = [63,"), "rfc2544.sizes"),
        (lambda t: t.replace('guard_us = "auto"', 'guard_us = "soon"'), "matrix.guard_us"),
        (lambda t: t.replace("cut_runs = 2", "cut_runs = 0"), "quick.cut_runs"),
        (lambda t: t.replace("version = 1", "version = 2"), "version: 2 is not allowed"),
    ],
)
def test_a_bad_protocol_is_one_line_naming_the_key_before_any_lab(
    tmp_path, proto, suite, capsys, edit, names
):
    path = protocol_file(tmp_path, proto, edit)
    with pytest.raises(
        proto.ProtocolError, match=names.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")
    ):
        proto.load(path)
    out = tmp_path / "out"
    err = refused(suite, capsys, ["--protocol", path, "--out-dir", str(out)])
    assert err.startswith("bench_suite.py: protocol: ") and names in err
    assert not out.exists()  # refused before anything was made


def test_a_missing_protocol_file_is_one_line(tmp_path, suite, capsys):
    err = refused(suite, capsys, ["--protocol", str(tmp_path / "none.toml")])
    assert "none.toml: cannot read: No such file or directory" in err


@pytest.mark.parametrize(
    "argv, names",
    [
        (["--runs", "0"], "invalid runs: 0 is not allowed (a whole number in 1..100)"),
        (["--runs", "-1"], "invalid runs"),
        (["--runs", "many"], "invalid runs"),
        (["--confirm-s", "0"], "invalid confirm s"),
        (["--latency-trials", "19"], "invalid latency trials: 19"),
        (["--sizes", "64,x"], "invalid sizes"),
        (["--link-rates", ""], "invalid link rates"),
    ],
)
def test_bad_flags_are_one_line(tmp_path, suite, capsys, argv, names):
    err = refused(suite, capsys, [*argv, "--out-dir", str(tmp_path / "out")])
    assert names in err
    assert not (tmp_path / "out").exists()


def test_a_results_directory_that_cannot_be_written_is_one_line(tmp_path, suite, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    err = refused(suite, capsys, ["--quick", "--out-dir", str(blocker / "results")])
    assert err == (
        f"bench_suite.py: results directory {blocker / 'results'} cannot be "
        "written: Not a directory"
    )
    err = refused(
        suite,
        capsys,
        ["--out-dir", str(tmp_path / "ok"), "--report", str(blocker / "BENCHMARKS.md")],
    )
    assert "report directory" in err and "cannot be written" in err


def test_an_override_is_recorded_against_the_protocol(suite):
    args = suite.parse_args(["--quick", "--confirm-s", "60", "--trial-s", "0.3"], need_lab=False)
    assert args.confirm_s == 60.0 and args.runs == 1 and args.latency_trials == 20
    # --trial-s 0.3 is what [quick] says already: no override
    assert args.protocol_info["overrides"] == {"confirm_s": {"protocol": 0.5, "used": 60.0}}
    full = suite.parse_args([], need_lab=False)
    assert full.runs == 3 and full.confirm_s == 30.0 and full.protocol_info["overrides"] == {}
    assert full.sizes == [64, 128, 256, 512, 1024, 1280, 1518] and full.link_rates == [100, 1000]


# ---- repeated runs and the manifest, with a stand-in for the child process ---------------

CHILD = textwrap.dedent("""
    import json, os, signal, sys
    run_dir = sys.argv[-1]
    k = int(os.path.basename(run_dir).split("-")[1])
    plan = json.loads(os.environ["FAKE_RUNS"])[str(k)]
    print(f"# fake run {k}", flush=True)
    res = json.loads(os.environ["FAKE_RESULT"])
    res["matrix"]["rt/tdma/idle"]["p999"] = plan["p999"]
    res["udp_vs_raw"]["tdma/idle"]["p99_diff_us"] = plan["diff"]
    out = os.path.join(run_dir, "bench_suite.json")
    if plan["dies"]:
        with open(out + ".tmp-1", "w") as f:       # half written, never renamed
            f.write(json.dumps(res)[:100])
        print("lab: something broke", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    with open(out + ".tmp-2", "w") as f:
        json.dump(res, f)
    os.replace(out + ".tmp-2", out)
""")


def fake_result():
    machine, settings = bench_envelope.machine(), bench_envelope.settings()
    return {
        "envelope": {
            "command": "x",
            "start_time": "2026-01-01T00:00:00",
            "quick": False,
            "end_time": "2026-01-01T00:01:00",
            "seconds": 60.0,
            "machine": machine,
            "settings": settings,
        },
        "matrix": {
            "rt/tdma/idle": {"p999": 0.0, "missed": 0, "sent": 10, "received": 10, "lost": 0}
        },
        "udp_vs_raw": {
            "tdma/idle": {
                "raw_p99_us": 100.0,
                "udp_p99_us": 100.0,
                "p99_diff_us": 0.0,
                "target_us": 5.0,
            }
        },
        "wakeup": {},
        "rfc2544": {},
        "vnic_cost": {},
    }


@pytest.fixture
def fake_runs(tmp_path, suite, monkeypatch):
    """bench_suite's runs made by the stand-in (CHILD) with fake_result(), under a fixed
    code version; a test says in FAKE_RUNS how each run ends."""
    child = tmp_path / "child.py"
    child.write_text(CHILD)
    monkeypatch.setattr(suite, "CHILD", [sys.executable, str(child)])
    monkeypatch.setattr(suite, "code_version", lambda: "abc1234")
    monkeypatch.setenv("FAKE_RESULT", json.dumps(fake_result()))


@pytest.mark.usefixtures("fake_runs")
def test_every_run_is_in_the_manifest_and_the_report_shows_medians(
    tmp_path, suite, monkeypatch, capsys
):
    monkeypatch.setattr(suite.report, "figures", lambda results, outdir: {})
    # run 2 dies midway with a half-written results file; runs 1, 3, 4 end well
    monkeypatch.setenv(
        "FAKE_RUNS",
        json.dumps(
            {
                "1": {"p999": 1000.0, "diff": -844.5, "dies": False},
                "2": {"p999": 9e9, "diff": 9e9, "dies": True},
                "3": {"p999": 3000.0, "diff": 3.0, "dies": False},
                "4": {"p999": 1500.0, "diff": 2.0, "dies": False},
            }
        ),
    )
    out = tmp_path / "results"
    argv = [
        "--runs",
        "4",
        "--out-dir",
        str(out),
        "--report",
        str(tmp_path / "B.md"),
        "--figures-dir",
        str(tmp_path / "fig"),
    ]
    args = suite.parse_args(argv, need_lab=False)
    assert suite.run_suite(args, argv) == 0
    man = json.loads((out / "abc1234" / "manifest.json").read_text())
    assert [(r["run"], r["status"]) for r in man["runs"]] == [
        (1, "ok"),
        (2, "failed"),
        (3, "ok"),
        (4, "ok"),
    ]
    assert man["runs"][1]["reason"] == "exit status -9: lab: something broke"
    assert all(
        r["protocol"]["sha256"]
        and r["command"].endswith("B.md --figures-dir " + str(tmp_path / "fig"))
        for r in man["runs"]
    )
    for k in (1, 2, 3, 4):
        assert (
            (out / "abc1234" / f"run-{k}" / "log.txt").read_text().startswith(f"# fake run {k}\n")
        )
    assert not (out / "abc1234" / "run-2" / "bench_suite.json").exists()
    merged = json.loads((out / "bench_suite.json").read_text())
    assert merged["matrix"]["rt/tdma/idle"]["p999"] == 1500.0  # median of 1000, 1500, 3000
    assert merged["runs"]["ok"] == 3 and merged["runs"]["made"] == 4
    md = (tmp_path / "B.md").read_text()
    assert "Runs: 3 ok of 4 made; failed: run 2 (exit status -9" in md
    # p99.9 target 2000: median 1500, spread 2000 > gap 500
    assert (
        "| a: RT behind the TDMA gate, idle: p99.9 | 1,500 | 1,000 | 3,000 | 3 | <= 2000 us "
        "| not resolved on this machine |"
    ) in md
    # UDP minus raw: median 2.0 of -844.5, 2.0, 3.0; two-sided, spread 847.5 > gap 3
    assert (
        "| tdma/idle | 100.0 | 100.0 | +2.0 [-844.5..3.0] | not resolved on this machine |"
    ) in md

    # a second invocation of the same code adds to the manifest; a run left "running" by
    # a killed parent is marked failed
    man["runs"].append({"run": 5, "dir": "run-5", "status": "running"})
    (out / "abc1234" / "manifest.json").write_text(json.dumps(man))
    monkeypatch.setenv("FAKE_RUNS", json.dumps({"6": {"p999": 10.0, "diff": 0.0, "dies": False}}))
    argv[1] = "1"
    assert suite.run_suite(suite.parse_args(argv, need_lab=False), argv) == 0
    man = json.loads((out / "abc1234" / "manifest.json").read_text())
    assert [(r["run"], r["status"]) for r in man["runs"]][4:] == [(5, "failed"), (6, "ok")]
    assert man["runs"][4]["reason"].startswith("interrupted")
    # the report again from every ok run the manifest lists (1, 3, 4 and 6)
    assert (
        suite.main(
            [
                "--from-json",
                str(out / "abc1234" / "manifest.json"),
                "--out-dir",
                str(out),
                "--report",
                str(tmp_path / "C.md"),
                "--figures-dir",
                str(tmp_path / "fig"),
            ]
        )
        == 0
    )
    assert "Runs: 4 ok of 6 made" in (tmp_path / "C.md").read_text()


@pytest.mark.usefixtures("fake_runs")
def test_no_run_ending_well_is_exit_status_1_and_the_manifest_says_why(
    tmp_path, suite, monkeypatch, capsys
):
    monkeypatch.setenv("FAKE_RUNS", json.dumps({"1": {"p999": 0, "diff": 0, "dies": True}}))
    argv = ["--runs", "1", "--out-dir", str(tmp_path / "r"), "--report", str(tmp_path / "B.md")]
    assert suite.run_suite(suite.parse_args(argv, need_lab=False), argv) == 1
    assert "no run of 1 ended well" in capsys.readouterr().err
    assert not (tmp_path / "B.md").exists() and not (tmp_path / "r" / "bench_suite.json").exists()
