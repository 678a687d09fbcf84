"""The stack on real drivers in a TCG guest (kernel from trixie-backports): igb,
virtio-net (modern, IOMMU platform, 4 queue pairs), e1000e and vmxnet3 on the host
bridge.  In the guest each NIC that can first gets 4 queues (a one-vCPU guest starts with
one; a host NIC with one per CPU), then the tier's queue step (``ethtool -L <dev> combined
1``), then the stack's AF_XDP socket binds with native XDP and zero-copy where the driver
offers it (e1000e: generic XDP, copy mode; vmxnet3: native XDP, copy mode, no metadata for
the receive stamp), and frames go both ways between igb and virtio-net, and between e1000e
and vmxnet3, through QEMU and the bridge.  Functional only: no timing under emulation."""

import json
import os
import time

import pytest
import vmkit
from vmkit import guest_script, vmtier

pytestmark = pytest.mark.netns
vm_env = vmkit.vm_env  # the session fixture: QEMU, kernel and initramfs from the cache

COUNT = 100
NICS = [
    {"model": "igb", "mac": "02:52:54:00:01:01", "tap": "rtnvm-a0", "spread": 4},
    {"model": "virtio", "mac": "02:52:54:00:01:02", "tap": "rtnvm-a1", "queues": 4, "spread": 4},
    {"model": "e1000e", "mac": "02:52:54:00:01:03", "tap": "rtnvm-a2"},
    {"model": "vmxnet3", "mac": "02:52:54:00:01:04", "tap": "rtnvm-a3"},
]
PAIRS = [["igb", "virtio"], ["e1000e", "vmxnet3"]]  # frames go both ways within each pair
DRIVER = {"igb": "igb", "virtio": "virtio_net", "e1000e": "e1000e", "vmxnet3": "vmxnet3"}


@pytest.fixture(scope="module")
def result(vm_env, tmp_path_factory):
    rundir = os.path.join(vmtier.CACHE, "run")
    with vmtier.network():
        for n in NICS:
            vmtier.add_tap(n["tap"], n.get("queues", 1))
        t0 = time.monotonic()
        g = vmtier.Guest(
            "nics",
            vm_env,
            rundir,
            guest_script("nics", {"nics": NICS, "pairs": PAIRS, "count": COUNT}),
            nics=NICS,
            memory_mb=512,
        )
        try:
            g.wait(240)
        finally:
            g.kill()
        res = g.results()
        res["_boot_to_end_s"] = round(time.monotonic() - t0, 1)
    print(json.dumps(res, indent=1))
    assert "error" not in res, g.diagnosis()
    assert res.get("nics"), g.diagnosis()
    return res


@pytest.mark.parametrize("model", ["igb", "virtio"])
def test_native_xdp_and_zero_copy_on_the_real_driver(result, model):
    nic = result["nics"][model]
    assert "open_error" not in nic, nic
    assert nic["mode"] == "native", nic
    assert "xsk-zerocopy" in nic["xdp_features"], nic
    assert nic["zerocopy"] is True, nic
    assert nic["xsk"]["zerocopy"] is True


@pytest.mark.parametrize("model", ["igb", "virtio"])
def test_the_tier_takes_the_nic_to_one_queue_and_says_so(result, model):
    q = result["nics"][model]["queues"]
    assert q["spread"]["now"]["combined"] == 4, q
    assert q["changed"] == f"ethtool -L {result['nics'][model]['dev']} combined 1 (was 4)", q
    assert q["change_rc"] == 0, q
    assert q["final"]["combined"] == 1, q


def test_e1000e_runs_generic_xdp_in_copy_mode_and_says_why(result):
    nic = result["nics"]["e1000e"]
    assert "open_error" not in nic, nic
    assert nic["mode"] == "skb" and nic["fallback"], nic  # no native XDP in e1000e
    assert nic["zerocopy"] is False and nic["xsk"]["zerocopy"] is False, nic
    items = {r["name"]: r for r in nic["check"]}
    assert items["xdp_native"]["status"] == "warn", items
    assert items["xdp_native"]["current"].startswith("generic only"), items
    assert items["xdp_zerocopy"]["current"] == "not supported", items


def test_vmxnet3_runs_native_xdp_in_copy_mode_and_stamps_at_poll_time(result):
    nic = result["nics"]["vmxnet3"]
    assert "open_error" not in nic, nic
    assert nic["mode"] == "native" and nic["fallback"] is None, nic
    assert "xsk-zerocopy" not in nic["xdp_features"], nic
    assert nic["zerocopy"] is False and nic["xsk"]["zerocopy"] is False, nic
    # vmxnet3 gives XDP no metadata area: no frame carries the XDP program's stamp, the
    # receive stamp is the poll time instead (igb and virtio-net: every frame carries it)
    assert nic["xsk"]["rx_frames"] == COUNT and nic["xsk"]["rx_kernel_ts"] == 0, nic["xsk"]
    for model in ("igb", "virtio"):
        xsk = result["nics"][model]["xsk"]
        # (virtio: those that reached the socket; see unbound_ok below for the rest)
        assert xsk["rx_kernel_ts"] == xsk["rx_frames"], (model, xsk)
        assert xsk["rx_frames"] + xsk["xdp_unbound"] == COUNT, (model, xsk)
    assert result["nics"]["igb"]["xsk"]["rx_frames"] == COUNT
    items = {r["name"]: r for r in nic["check"]}
    assert items["xdp_native"]["status"] == "ok", items
    assert items["xdp_zerocopy"]["current"] == "not supported", items


# virtio_net runs a second queue pair while an XDP program is attached (for XDP transmit),
# and the host's multi-queue tap spreads flows over the two by a hash seeded when the host
# booted: a boot may put the igb -> virtio flow on queue 1, where no socket is bound.  The
# stack cannot choose the queue there; what it promises is that no such frame goes
# unnoticed: the XDP program counts it per queue (xsk.xdp_unbound) and rtnetd says why.
def unbound_ok(nic) -> bool:
    """Every frame on a queue past 0 counted by the XDP program, and reported."""
    xsk = nic["xsk"]
    per_queue = {q: n for q, n in nic["rx_per_queue"].items() if int(q) != 0 and n}
    return (
        sum(xsk["xdp_unbound_queue"].values()) == xsk["xdp_unbound"]
        and all(int(q) != 0 for q in xsk["xdp_unbound_queue"])
        and {q: n for q, n in xsk["xdp_unbound_queue"].items() if n} == per_queue
        and (not xsk["xdp_unbound"] or len(nic["notes_with_xdp"]) == 1)
    )


def test_frames_arrive_on_the_bound_queue_both_ways(result):
    unbound = {m: nic["xsk"]["xdp_unbound"] for m, nic in result["nics"].items()}
    assert result["traffic"] == {
        f"{a}->{b}": {"sent": COUNT, "received": COUNT - unbound[b]}
        for x, y in PAIRS
        for a, b in ((x, y), (y, x))
    }
    for model, nic in result["nics"].items():
        assert nic["xsk"]["rx_frames"] + unbound[model] == COUNT, (model, nic["xsk"])
        if model != "virtio":
            # one queue: every frame of the stack on the bound one, none to Linux
            assert unbound[model] == 0, (model, nic["xsk"])
    for model in ("igb", "virtio"):
        nic = result["nics"][model]
        assert nic["rx_per_queue"], (model, "the driver reports no per-queue counters")
        assert unbound_ok(nic), (model, nic["rx_per_queue"], nic["xsk"], nic["notes_with_xdp"])
    assert sum(n for q, n in result["nics"]["igb"]["rx_per_queue"].items() if int(q)) == 0


def test_rtnetctl_check_reports_the_real_items(result):
    for model, nic in result["nics"].items():
        items = {r["name"]: r for r in nic["check"]}
        assert items["nic"]["current"] == DRIVER[model], items
        if model in ("igb", "virtio"):
            assert items["xdp_native"]["status"] == "ok", items
            assert items["xdp_zerocopy"]["current"] == "supported", items
    # igb: the one queue the stack binds.  virtio_net keeps a queue pair per CPU for XDP
    # transmit while a program is attached (ethtool -l: combined 2), and refuses
    # ethtool -L then: the check reports the two.
    assert {r["name"]: r for r in result["nics"]["igb"]["check"]}["queues"][
        "current"
    ] == "1 RX queue"
    assert {r["name"]: r for r in result["nics"]["virtio"]["check"]}["queues"]["current"] in (
        "1 RX queue",
        "2 RX queues",
    )


def test_a_queue_pair_added_for_xdp_is_reported_as_rtnetd_would(result):
    # virtio_net enables a queue pair for XDP transmit once a program is attached, and then
    # refuses ethtool -L: rtnetd says so in one line (status: daemon.queues_notes)
    for model, nic in result["nics"].items():
        combined = nic["channels_with_xdp"].get("combined") or 1
        notes = nic["notes_with_xdp"]
        if combined > 1:
            assert len(notes) == 1 and f"{combined} combined channels" in notes[0], nic
        else:
            assert notes == [], nic
    assert result["nics"]["igb"]["notes_with_xdp"] == []
