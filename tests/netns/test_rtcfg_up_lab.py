"""``rtnetctl up`` brings a three-station segment up with RTcfg from the master's rtnet.conf.

The master's rtnet.conf lists the two slaves (TDMA_SLAVES, the lab's
addresses) and a stage-2 file; each slave's says TDMA_MODE=slave, and where
stage 2 goes and what it runs after it.  The slaves get their slots and their
VNIC address from the server, synchronise and send in their slots; the
stage-2 file arrives byte for byte and STAGE_2_CMDS added a slot.
"""

import os
import subprocess
import sys

import pytest
from conftest import daemon_lab

from rtmac import control
from rtnet import cli, paths
from rtnet.rtcfg.client import ClientState
from rtnet.rtcfg.server import ConnState
from rtnet.tdma_stats import TdmaState

pytestmark = pytest.mark.netns

LAB = "rup"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STAGE2 = b"# segment settings, revision 7\nvnic up\n"
OFFSET_US = 200
EXTRA_SLOT_US = {2: 600, 3: 800}  # STAGE_2_CMDS of each slave


@pytest.fixture(scope="module")
def lab():
    yield from daemon_lab(LAB, 3)


def rtnetctl(*argv) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.Popen(
        [sys.executable, "-m", "rtnet.cli", *argv],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc, timeout=60) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def status(ns) -> dict:
    return control.send_request("rteth0", {"cmd": "status"}, netns=ns)["status"]


def test_rtcfg_brings_up_three_stations_from_the_masters_configuration(lab, tmp_path):
    s1, s2, s3 = (st.netns for st in lab.stations)
    (tmp_path / "stage2.conf").write_bytes(STAGE2)
    master = tmp_path / "master.conf"
    master.write_text(
        f'IPADDR="{lab.station(1).ip}"\nTDMA_CYCLE="1000"\n'
        f'TDMA_OFFSET="{OFFSET_US}"\n'
        f'TDMA_SLAVES="{lab.station(2).ip} {lab.station(3).ip}"\n'
        'TDMA_CAL_ROUNDS="10"\nSTAGE_2_SRC="stage2.conf"\nRTCFG_TIMEOUT="40"\n'
    )
    slave = {}
    for n in (2, 3):
        slave[n] = tmp_path / f"slave{n}.conf"
        slave[n].write_text(
            f'TDMA_MODE="slave"\nRTNET_DEV="rteth0"\n'
            f'STAGE_2_DST="received{n}.conf"\n'
            f'STAGE_2_CMDS="tdma slot 1 {EXTRA_SLOT_US[n]}"\n'
            'RTCFG_TIMEOUT="40"\n'
        )

    # without a master a slave gives up after its time-out, one line, and stops rtnetd again
    lonely = tmp_path / "lonely.conf"
    lonely.write_text('TDMA_MODE="slave"\nRTCFG_TIMEOUT="1"\n')
    rc, out, err = finish(rtnetctl("up", "-n", s3, "-c", str(lonely)))
    assert rc == 1 and "Stage 1: searching for master..." in out
    assert len(err.splitlines()) == 1 and err.startswith("rtnetctl: rteth0: RTcfg stage 1"), err
    assert "rtnetd stopped again" in err
    assert not os.path.exists(paths.pid_file("rteth0", s3))

    # slaves first, as a segment often boots: they search until the master serves them
    slaves = {n: rtnetctl("up", "-n", lab.station(n).netns, "-c", str(slave[n])) for n in (2, 3)}
    rc, out, err = finish(rtnetctl("up", "-n", s1, "-c", str(master)))
    assert rc == 0, err
    assert "Waiting for all slaves..." in out and "2 stations configured and ready" in out
    for n, proc in slaves.items():
        rc, out, err = finish(proc)
        assert rc == 0, err
        assert out.splitlines()[:3] == [
            "Stage 1: searching for master...",
            "Stage 2: waiting for other slaves...",
            "Stage 3: waiting for common setup completion...",
        ]

    for n in (2, 3):
        ns = lab.station(n).netns
        shown = control.send_request("rteth0", {"cmd": "tdma.show"}, netns=ns)
        assert [(x["id"], x["offset_us"]) for x in shown["config"]["slots"]] == [
            (0, (n - 1) * OFFSET_US),
            (1, EXTRA_SLOT_US[n]),
        ]  # stage 1, then STAGE_2_CMDS
        assert (tmp_path / f"received{n}.conf").read_bytes() == STAGE2
        addr = subprocess.run(
            ["ip", "-n", ns, "-4", "-o", "addr", "show", "dev", "vnic0"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert f"inet {lab.station(n).ip}/24" in addr  # stage 1's vnic up
        st = status(ns)
        assert st["tdma"]["state"] == TdmaState.SYNCED
        assert st["rtcfg"]["state"] == ClientState.READY and st["rtcfg"]["ip"] == lab.station(n).ip
        # the slave sends in its slot 0: the echo service answers the master through it
        before = st["tdma"]["slots"]["0"]["frames"]
        assert cli.main(["ping", "-n", s1, lab.station(n).ip, "-c", "3", "-i", "20"]) == 0
        assert status(ns)["tdma"]["slots"]["0"]["frames"] >= before + 3

    server = status(s1)["rtcfg"]
    assert server["role"] == "server" and server["ready_stations"] == 2
    assert {(x["ip"], x["mac"], x["state"]) for x in server["stations"]} == {
        (lab.station(n).ip, lab.station(n).mac, ConnState.READY) for n in (2, 3)
    }
    assert all(x["last_frame_age_ms"] is not None for x in server["stations"])
    rc, out, err = finish(rtnetctl("status", "-n", s1))
    ips = {lab.station(n).ip for n in (2, 3)}
    alive = [
        ln.split()[0]
        for ln in out.splitlines()
        if ln.split()[:1] and ln.split()[0] in ips and ln.split()[2] == "alive"
    ]
    assert rc == 0 and sorted(alive) == sorted(ips), out

    for ns in (s1, s2, s3):
        rc, out, err = finish(rtnetctl("down", "-n", ns))
        assert rc == 0 and "stopped" in out, err
        assert not os.path.exists(paths.pid_file("rteth0", ns))
