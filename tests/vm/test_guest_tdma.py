"""TDMA across two separately booted kernels: a master in one TCG guest (igb) and a slave
in another (virtio-net, modern, IOMMU platform, one queue pair: see the README on
virtio-net's queues under XDP), each with its own clock, on
the host bridge.  Two guests rather than two namespaces of one: each has one vCPU and 512 MB
and both fit beside the host's own work, and only separate kernels give separate clocks.
The cycle is 40 ms for emulation.  The slave synchronises and calibrates against the
master's clock, pings it over the real-time path (ICMP rtping), and over at least 200 cycles
receives one Sync per cycle, and pings it through the VNIC with Linux's own ping; tshark on
the host bridge decodes every frame with no malformed field.  Then the slave's NIC is
unplugged through QEMU's monitor (rtnetd notices and stops cleanly), and the master's rtnetd
is killed with SIGKILL so that ``rtnetctl down`` has to put its NIC's queues back.
Functional only: no latency bound under emulation."""

import json
import os
import subprocess
import time

import pytest
import vmkit
from conftest import require_tool
from vmkit import guest_script, vmtier

from rtnet.tdma_stats import TdmaState

pytestmark = pytest.mark.netns
vm_env = vmkit.vm_env  # the session fixture: QEMU, kernel and initramfs from the cache

CYCLE_US = 40_000
WINDOW_S = 9.0  # >= 200 cycles of 40 ms
MASTER = {
    "name": "m",
    "ip": "198.18.0.1",
    "mac": "02:52:54:00:02:01",
    "role": "master",
    "offset_us": 0,
    "vnic_offset_us": 20_000,
    "vnic_ip": "198.18.1.1",
    "cycle_us": CYCLE_US,
}
SLAVE = {
    "name": "s",
    "ip": "198.18.0.2",
    "mac": "02:52:54:00:02:02",
    "role": "slave",
    "offset_us": 10_000,
    "vnic_offset_us": 30_000,
    "vnic_ip": "198.18.1.2",
    "cycle_us": CYCLE_US,
}


@pytest.fixture(scope="module")
def run(vm_env):
    tshark = require_tool("tshark")
    rundir = os.path.join(vmtier.CACHE, "run")
    pcap = os.path.join(rundir, "tdma-bridge.pcapng")
    os.makedirs(rundir, exist_ok=True)
    with vmtier.network() as br:
        vmtier.add_tap("rtnvm-m0")
        vmtier.add_tap("rtnvm-s0")
        cap = subprocess.Popen(
            [tshark, "-q", "-i", br, "-w", pcap], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        guests = []
        try:
            t0 = time.monotonic()
            for st, peer, nic in (
                (MASTER, SLAVE, {"model": "igb", "tap": "rtnvm-m0"}),
                (SLAVE, MASTER, {"model": "virtio", "tap": "rtnvm-s0"}),
            ):
                args = dict(
                    st,
                    peer_ip=peer["ip"],
                    peer_mac=peer["mac"],
                    peer_vnic_ip=peer["vnic_ip"],
                    duration_s=100,
                    window_s=WINDOW_S,
                )
                guests.append(
                    vmtier.Guest(
                        f"tdma-{st['name']}",
                        vm_env,
                        rundir,
                        guest_script("tdma", args),
                        nics=[dict(nic, mac=st["mac"])],
                        memory_mb=512,
                    )
                )
            unplug = unplug_when_ready(guests[1], 300 - (time.monotonic() - t0))
            for g in guests:
                g.wait(300 - (time.monotonic() - t0))
        finally:
            for g in guests:
                g.kill()
            cap.terminate()
            try:
                cap.wait(20)
            except subprocess.TimeoutExpired:
                cap.kill()
                cap.wait()
        elapsed = round(time.monotonic() - t0, 1)
    master, slave = (g.results() for g in guests)
    print(json.dumps({"master": master, "slave": slave, "elapsed_s": elapsed}, indent=1))
    for g, r in zip(guests, (master, slave)):
        assert r and "error" not in r, g.diagnosis()
    slave["unplug"] = dict(slave.get("unplug") or {}, qmp=unplug)
    return {"master": master, "slave": slave, "pcap": pcap, "tshark": tshark}


def unplug_when_ready(guest, timeout: float) -> dict | None:
    """When the guest says it is ready (the file unplug-ready), take its NIC out through
    QEMU's monitor, as a NIC pulled from its slot; QEMU's reply.  None if the guest ended
    first (its result says why)."""
    ready = os.path.join(guest.out, "unplug-ready")
    deadline = time.monotonic() + timeout
    while not os.path.exists(ready):
        if guest.proc.poll() is not None or time.monotonic() > deadline:
            return None
        time.sleep(0.2)  # another kernel's progress: only its file tells
    return guest.qmp("device_del", id="nic0")


def test_both_stations_run_native_xdp_zero_copy_on_their_driver(run):
    # their configuration demands both (xdp_mode = "native", zerocopy = "on"): rtnetd
    # would refuse to start where the driver had either missing
    for role, driver in (("master", "igb"), ("slave", "virtio_net")):
        r = run[role]
        assert r["up_rc"] == 0, r
        assert r["driver"] == driver
        assert r["status"]["xdp_mode"] == "native", r["status"]
        assert r["status"]["xsk"]["zerocopy"] is True, r["status"]
        # the receive stamp comes from the XDP program's data_meta on both drivers
        xsk = r["status"]["xsk"]
        assert xsk["rx_kernel_ts"] == xsk["rx_frames"] > 0, xsk
        # none of the stack's frames on a queue without the socket (the XDP program's count)
        assert xsk["xdp_unbound"] == 0, xsk
        # and every frame the driver received was on queue 0, the bound one
        assert r["rx_per_queue"] and all(
            n == 0 for q, n in r["rx_per_queue"].items() if int(q) != 0
        ), r["rx_per_queue"]


def test_rtnetd_takes_the_nic_to_one_queue_and_says_so(run):
    # igb given 4 queues, as a host would have them: rtnetd takes it to the bound one
    m = run["master"]["queues"]
    assert m["spread"]["now"]["combined"] == 4, m
    assert m["changed"] == ["ethtool -L rteth0 combined 1 (was 4)"], m
    assert m["running"]["combined"] == 1, m
    # virtio-net with one queue pair: nothing to change
    s = run["slave"]["queues"]
    assert s["initial"]["max_combined"] == 1 and s["changed"] == [], s


def test_the_slave_synchronises_and_calibrates_against_the_other_kernel(run):
    s = run["slave"]
    assert s["state"] == TdmaState.SYNCED, s
    assert s["calibration"]["done"] >= s["calibration"]["rounds"] > 0, s["calibration"]
    assert s["state_end"] == TdmaState.SYNCED, s


def test_the_syncs_of_200_cycles_arrive_followed_or_counted_as_implausible(run):
    w = run["slave"]["window"]
    print(w)
    assert w["cycle_no"] >= 200, w
    # Every Sync the master put on the wire in the slave's window of cycles, as the host
    # bridge captured them, is accounted for at the slave: followed, counted as
    # implausible, or, after the slave lost sync, kept to learn the cycle again from the
    # next (sync_learning).  A cycle without a Sync on the wire is one the master missed
    # under emulation; the slave cannot see those.  The window's edges are two counter
    # reads on the slave: a Sync in flight at either may fall on the other side of it.
    on_wire = master_syncs(run, w["cycle_from"], w["cycle_to"])
    accounted = w["sync_rx"] + w["sync_implausible"] + w["sync_learning"]
    print(
        f"{on_wire} Syncs on the wire in cycles {w['cycle_from']}..{w['cycle_to']}, "
        f"{accounted} accounted for by the slave"
    )
    assert on_wire >= 0.9 * w["cycle_no"], (on_wire, w)
    assert abs(accounted - on_wire) <= 2, (accounted, on_wire, w)
    # Under TCG a Sync's stamps jitter by milliseconds (the time from its transmit stamp
    # to the wire varied by 1.3 ms between its 5th and 95th percentiles); the 10 ms guard
    # of this segment lets the slave follow them (csrc/tdma/rtn_tdma_rx.c, stamp_tol_max).  Held to 200 us, it had followed
    # 40 to 60% of them and lost sync every few seconds.
    assert w["sync_rx"] >= 0.8 * on_wire, (on_wire, w)


def master_syncs(run, first: int, last: int) -> int:
    """The master's Syncs on the host bridge for cycles first+1..last (RTnet's TDMA Sync,
    message id 0, as tshark decodes it)."""
    out = subprocess.run(
        [
            run["tshark"],
            "-r",
            run["pcap"],
            "-Y",
            f"tdma.id == 0 && eth.src == {MASTER['mac']}",
            "-T",
            "fields",
            "-e",
            "tdma.sync.cycle",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    cycles = {int(v) for v in out.stdout.split()}
    return sum(first < c <= last for c in cycles)


def test_rtping_passes_between_the_kernels(run):
    s = run["slave"]
    assert s["ping_rc"] == 0, s["ping"]
    assert "5 packets transmitted, 5 received" in s["ping"], s["ping"]
    assert run["master"]["status"]["ipv4"]["rx_echo_request"] >= 5


def test_tshark_on_the_host_bridge_decodes_every_frame(run):
    tshark, pcap = run["tshark"], run["pcap"]
    out = subprocess.run(
        [tshark, "-r", pcap, "-T", "fields", "-e", "frame.protocols"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    protos = out.stdout.splitlines()
    rtmac = [p for p in protos if "rtmac" in p]
    icmp = [p for p in protos if ":icmp:" in p + ":"]
    bad = subprocess.run(
        [tshark, "-r", pcap, "-Y", "_ws.malformed || _ws.expert.severity >= error"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    print(
        f"{len(protos)} frames, {len(rtmac)} RTmac, {len(icmp)} ICMP; "
        f"malformed or in error: {len(bad.stdout.splitlines())}"
    )
    assert len(rtmac) >= 200, sorted(set(protos))[:10]
    assert len(icmp) >= 10, sorted(set(protos))[:10]
    assert bad.stdout.strip() == "", bad.stdout[:2000]


def test_a_vnic_ping_crosses_between_the_kernels(run):
    # Linux's own ping through vnic0, in the VNIC's slot of each station
    p = run["slave"]["vnic_ping"]
    assert p["rc"] == 0 and "3 packets transmitted, 3 received" in " ".join(p["out"]), p
    assert run["master"]["vnic_rx_packets"] >= 4, run["master"]


def test_a_nic_unplugged_through_qemus_monitor_stops_rtnetd_cleanly(run):
    u = run["slave"]["unplug"]
    assert u["qmp"] == {"return": {}}, u
    assert u["gone_after_s"] is not None, u  # the guest's kernel removed the device
    assert u["daemon_stopped_after_s"] is not None, u
    assert u["log_went_away"] and "rteth0: the device went away" in u["log_went_away"][0], u
    assert not u["log_traceback"] and u["left"] == [], u
    assert u["down"]["rc"] == 0 and "not running" in u["down"]["out"], u


def test_rtnetctl_down_puts_back_the_queues_a_killed_rtnetd_changed(run):
    k = run["master"]["killed"]
    assert k["before"]["combined"] == 1 and k["after_kill"]["combined"] == 1, k
    assert k["record_left"], k
    assert k["down"]["rc"] == 0 and "queues (rteth0 combined 4 again)" in k["down"]["out"], k
    assert k["after_down"]["combined"] == 4 and not k["record_after_down"], k
