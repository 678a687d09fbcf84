"""rtnet-run's own mistakes said in one line: a rules path that is a directory, a program
that does not exist, a --dev with no such device (no station daemon can be behind it)."""

import subprocess
import sys

import pytest
from test_cli_input import one_line, run

from rtnet import run as rtnet_run


def test_a_rules_directory_is_called_a_directory(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        rtnet_run.main(["--rules", str(tmp_path), "--", "true"])
    err = capsys.readouterr().err
    assert exc.value.code == 2, err
    assert one_line(err.splitlines()[-1] + "\n").endswith(f"rules file {tmp_path}: a directory")


def test_a_program_that_does_not_exist_is_named_before_anything_runs(tmp_path):
    rc, _out, err = run(rtnet_run.main, ["--dev", "rtn-nodev0", "--", str(tmp_path / "nope")])
    assert rc == 127 and f"rtnet-run: {tmp_path / 'nope'}: no such program" in err, err


def test_a_device_that_does_not_exist_is_said_with_the_missing_daemon():
    res = subprocess.run(
        [sys.executable, "-m", "rtnet.run", "--dev", "rtn-nodev0", "--", "true"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr  # the program still runs, on the kernel
    assert "no station daemon for rtn-nodev0 (there is no device rtn-nodev0)" in res.stderr, (
        res.stderr
    )
