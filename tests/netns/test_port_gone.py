"""A station's port that goes away under a running rtnetd (deleted here; unplugged through
QEMU's monitor in the guest tier): the daemon notices, says so in one line and stops in
order, leaving nothing behind; and what a killed daemon leaves for ``rtnetctl down`` to
clean up is checked before it is used."""

import os
import signal
import subprocess

import pytest
from conftest import daemon_lab, station_toml, wait_for

from rtnet import cli, paths
from rtnet.procs import running

pytestmark = pytest.mark.netns

MASTER = station_toml("m", role="master", cycle_us=1000, cal_rounds=10, offset_us=0)


@pytest.fixture
def station(tmp_path):
    # a lab of its own per test: the test deletes its station's port
    gen = daemon_lab("pg", 1)
    lab = next(gen)
    conf = tmp_path / "m.toml"
    conf.write_text(MASTER)
    try:
        yield lab.stations[0].netns, str(conf)
    finally:
        gen.close()


def ctl(capsys, *argv):
    capsys.readouterr()
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_a_deleted_port_stops_rtnetd_with_one_line_and_nothing_left(capsys, station):
    ns, conf = station
    assert ctl(capsys, "up", "-n", ns, "-c", conf)[0] == 0
    pid = int(open(paths.pid_file("rteth0", ns)).read())
    subprocess.run(["ip", "-n", ns, "link", "del", "rteth0"], check=True)
    wait_for(lambda: not running(pid), 20, "rtnetd to stop after its port went away")
    log = open(os.path.join(paths.station_dir(ns), "rteth0.log")).read()
    gone = [ln for ln in log.splitlines() if "went away" in ln]
    assert gone and gone[0].startswith("rtnetd: rteth0: the device went away"), log[-2000:]
    assert "Traceback" not in log, log[-3000:]
    assert not os.path.exists(paths.pid_file("rteth0", ns))
    assert not os.path.exists(paths.control_socket("rteth0", ns))
    rc, _, err = ctl(capsys, "status", "-n", ns)
    assert rc == 1 and "no rtnetd running" in err
    rc, out, _ = ctl(capsys, "down", "-n", ns)
    assert rc == 0 and "not running" in out


def test_a_queue_record_that_is_not_one_is_reported_and_removed_by_down(capsys, station):
    ns, conf = station
    assert ctl(capsys, "up", "-n", ns, "-c", conf)[0] == 0
    pid = int(open(paths.pid_file("rteth0", ns)).read())
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not running(pid), 10, "the killed rtnetd to be gone")
    record = paths.queue_record("rteth0", ns)
    with open(record, "wb") as f:  # what a killed daemon's record must never be taken for
        f.write(b'{"version": 1, "changes": [{"device": "rteth0", "was": 1e9, "now": 1}]}')
    rc, out, err = ctl(capsys, "down", "-n", ns)
    assert rc == 0 and "XDP program" in out and "queues" not in out, out
    assert f"{record}: was is not a queue count" in err, err
    assert not os.path.exists(record)
