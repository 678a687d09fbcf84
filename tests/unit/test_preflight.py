"""rtnetctl check: the preflight's items read from fake /proc, /sys, /dev and /boot trees.

Every tree is built in tmp_path; --apply is only ever run against such a tree.
One test runs ``rtnetctl check -j`` on the real machine, which only reads.
"""

import json
import os
import re
import struct
import subprocess
import sys

import pytest
from conftest import skip_or_fail
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtnet import preflight, xdpfeatures
from rtnet.cli import main
from rtnet.preflight import (
    FAIL,
    JSON_KEYS,
    NA,
    OK,
    STATUSES,
    WARN,
    Machine,
    Target,
    apply_and_recheck,
    failed,
    kernel_params,
    parse_kconfig,
    run_checks,
)
from rtnet.station import RtSettings
from rtnet.sysfiles import SysFiles, Unreadable, format_cpu_list, parse_cpu_list

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RELEASE = "6.1.0-18-amd64"

STOCK = {
    "/proc/cmdline": "BOOT_IMAGE=/vmlinuz-6.1.0-18-amd64 root=/dev/sda1 ro quiet",
    "/proc/sys/kernel/osrelease": RELEASE,
    "/proc/sys/kernel/version": "#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)",
    f"/boot/config-{RELEASE}": "CONFIG_PREEMPT_VOLUNTARY=y\n# CONFIG_PREEMPT is not set\n"
    "CONFIG_PREEMPT_DYNAMIC=y\nCONFIG_NO_HZ_FULL=y\n"
    "CONFIG_RCU_NOCB_CPU=y\nCONFIG_HZ=250\n",
    "/proc/sys/kernel/sched_rt_runtime_us": "950000",
    "/proc/sys/kernel/sched_rt_period_us": "1000000",
    "/sys/devices/system/cpu/online": "0-3",
    "/sys/devices/system/cpu/isolated": "",
    "/sys/devices/system/cpu/nohz_full": "(null)",
    "/sys/devices/system/cpu/cpu3/topology/thread_siblings_list": "1,3",
    "/sys/devices/system/cpu/cpu3/cpufreq/scaling_governor": "powersave",
    "/sys/devices/system/cpu/cpu3/cpufreq/scaling_available_governors": "performance powersave",
    "/sys/devices/system/cpu/cpu3/cpuidle/state0/name": "POLL",
    "/sys/devices/system/cpu/cpu3/cpuidle/state0/latency": "0",
    "/sys/devices/system/cpu/cpu3/cpuidle/state0/disable": "0",
    "/sys/devices/system/cpu/cpu3/cpuidle/state1/name": "C6",
    "/sys/devices/system/cpu/cpu3/cpuidle/state1/latency": "133",
    "/sys/devices/system/cpu/cpu3/cpuidle/state1/disable": "0",
    "/dev/cpu_dma_latency": struct.pack("<i", 2_000_000_000),
    "/proc/self/status": "Name:\tpython3\nCapEff:\t000001ffffffffff\n",
    "/proc/self/limits": "Limit                     Soft Limit           Hard Limit           Units\n"
    "Max locked memory         unlimited            unlimited            bytes\n"
    "Max realtime priority     0                    0\n",
    "/proc/self/cgroup": "0::/user.slice/user-0.slice\n",
    "/proc/self/timerslack_ns": "50000",
    "/proc/irq/24/smp_affinity_list": "0-3",
    "/proc/irq/25/smp_affinity_list": "3",
    "/proc/irq/26/smp_affinity_list": "0-1",
    "/proc/irq/40/smp_affinity_list": "0-3",
    "/proc/interrupts": "           CPU0       CPU1       CPU2       CPU3\n"
    " 24:   1   0   0   0  IO-APIC   5-edge  ACPI:Ged\n"
    " 40:   9   0   0   7  PCI-MSIX-0000:01:00.0  0-edge  rteth0-TxRx-0\n",
    "/proc/1/comm": "systemd",
    "/sys/class/net/rteth0/ifindex": "3",
    "/sys/class/net/rteth0/queues/rx-0/rps_cpus": "0",
    "/sys/class/net/rteth0/queues/tx-0/xps_cpus": "0",
}
PREEMPT_RT = {
    "/sys/kernel/realtime": "1",
    "/proc/sys/kernel/version": "#1 SMP PREEMPT_RT Debian 6.1.76-1 (2024-02-01)",
    f"/boot/config-{RELEASE}": "CONFIG_PREEMPT_RT=y\nCONFIG_PREEMPT_DYNAMIC=n\n"
    "CONFIG_NO_HZ_FULL=y\nCONFIG_RCU_NOCB_CPU=y\nCONFIG_HZ=1000\n",
}
ISOLATED = {
    "/proc/cmdline": "root=/dev/sda1 isolcpus=managed_irq,domain,2-3 nohz_full=3 rcu_nocbs=3 "
    "-- isolcpus=0",
    "/sys/devices/system/cpu/isolated": "2-3",
    "/sys/devices/system/cpu/nohz_full": "3",
}
ETHTOOL_IGC = {
    "-i": (0, "driver: igc\nversion: 6.1.0\nbus-info: 0000:01:00.0\n"),
    "-c": (
        0,
        "Coalesce parameters for rteth0:\nAdaptive RX: on  TX: off\nrx-usecs: 3\n"
        "rx-frames: n/a\ntx-usecs: 3\n",
    ),
    "-T": (
        0,
        "Time stamping parameters for rteth0:\nCapabilities:\n\thardware-transmit\n"
        "\tsoftware-transmit\n\thardware-receive\n\tsoftware-receive\n"
        "\thardware-raw-clock\nPTP Hardware Clock: 0\n",
    ),
    "-l": (
        0,
        "Channel parameters for rteth0:\nPre-set maximums:\nRX:\t\tn/a\nTX:\t\tn/a\n"
        "Other:\t\t1\nCombined:\t4\nCurrent hardware settings:\nRX:\t\tn/a\n"
        "TX:\t\tn/a\nOther:\t\t1\nCombined:\t4\n",
    ),
}
VETH_FEATURES = xdpfeatures.BASIC | xdpfeatures.REDIRECT | xdpfeatures.RX_SG
IGC_FEATURES = VETH_FEATURES | xdpfeatures.NDO_XMIT | xdpfeatures.XSK_ZEROCOPY


def build(tmp_path, *layers, physical=None):
    """A fake tree: STOCK with each layer's files on top (None removes a file)."""
    files = {}
    for layer in (STOCK, *layers):
        files.update(layer)
    for rel, content in files.items():
        if content is None:
            continue
        path = tmp_path / rel.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content + "\n")
    if physical:
        dev = tmp_path / "sys/class/net/rteth0/device"
        dev.mkdir(parents=True, exist_ok=True)
        drivers = tmp_path / "sys/bus/pci/drivers" / physical
        drivers.mkdir(parents=True, exist_ok=True)
        os.symlink(drivers, dev / "driver")
        (dev / "msi_irqs").mkdir(exist_ok=True)
        (dev / "msi_irqs" / "41").write_text("msix\n")
    return tmp_path


class FakeCommands:
    """ethtool answers from a table; every call recorded."""

    def __init__(self, answers=None, installed=True):
        self.answers = answers or {}
        self.installed = installed
        self.calls = []

    def __call__(self, argv):
        self.calls.append(argv)
        if not self.installed:
            return None
        if argv[1] == "-C":
            return (0, "")
        return self.answers.get(argv[1], (95, "netlink error: Operation not supported"))


def machine(root, *, commands=None, features=VETH_FEATURES, files=None):
    def xdp(ifindex):
        if isinstance(features, Exception):
            raise features
        return features

    return Machine(files or SysFiles(str(root)), commands or FakeCommands(), xdp)


def by_name(results):
    return {r.name: r for r in results}


def check(root, target=Target(), **kw):
    return by_name(run_checks(machine(root, **kw), target))


def one_line_each(results):
    for r in results.values() if isinstance(results, dict) else results:
        for text in (r.current, r.recommended, r.explanation):
            assert "\n" not in text and text.isprintable(), (r.name, text)


# -- kernel ----------------------------------------------------------------------------------


def test_a_stock_kernel_should_warn_and_a_preempt_rt_kernel_should_pass(tmp_path):
    stock = check(build(tmp_path / "stock"))
    assert stock["preempt_rt"].status == WARN
    assert stock["preemption"].status == WARN
    assert stock["preemption"].current.startswith("voluntary")
    assert not stock["preemption"].fixable  # no debugfs: a boot parameter is the way
    rt = check(build(tmp_path / "rt", PREEMPT_RT))
    assert rt["preempt_rt"].status == OK
    assert rt["preemption"].status == OK
    one_line_each(stock)
    one_line_each(rt)


def test_the_kernel_config_should_also_come_from_proc_config_gz(tmp_path):
    import gzip

    root = build(tmp_path, {f"/boot/config-{RELEASE}": None, "/proc/sys/kernel/version": "#1 SMP"})
    (root / "proc/config.gz").write_bytes(gzip.compress(b"CONFIG_PREEMPT_RT=y\n"))
    assert check(root)["preempt_rt"].status == OK


def test_a_dynamic_preemption_model_should_be_switched_by_apply(tmp_path):
    root = build(tmp_path, {"/sys/kernel/debug/sched/preempt": "(none) voluntary full lazy"})
    res = check(root)["preemption"]
    assert (res.status, res.fixable) == (WARN, True)
    after = by_name(apply_and_recheck(machine(root), Target()))
    assert (root / "sys/kernel/debug/sched/preempt").read_text() == "full"
    assert after["preemption"].applied == [
        {
            "what": "/sys/kernel/debug/sched/preempt",
            "old": "none",
            "new": "full",
            "ok": True,
            "error": None,
        }
    ]


def test_the_boot_parameter_should_set_the_model_of_a_dynamic_kernel(tmp_path):
    root = build(tmp_path, {"/proc/cmdline": "root=/dev/sda1 preempt=full"})
    assert check(root)["preemption"].status == OK


# -- scheduler -------------------------------------------------------------------------------


def test_sched_fifo_should_fail_without_capability_or_rtprio(tmp_path):
    assert check(build(tmp_path / "root"))["sched_fifo"].status == OK
    user = build(tmp_path / "user", {"/proc/self/status": "CapEff:\t0000000000000000"})
    res = check(user)["sched_fifo"]
    assert res.status == FAIL and "RLIMIT_RTPRIO 0" in res.current
    limits = STOCK["/proc/self/limits"].replace(
        "Max realtime priority     0", "Max realtime priority     95"
    )
    allowed = build(
        tmp_path / "rtprio", {"/proc/self/status": "CapEff:\t0", "/proc/self/limits": limits}
    )
    assert check(allowed)["sched_fifo"].status == OK
    assert check(allowed, Target(priority=99))["sched_fifo"].status == FAIL


def test_sched_fifo_should_fail_in_a_cgroup_without_rt_time(tmp_path):
    root = build(
        tmp_path,
        {
            "/proc/self/cgroup": "3:cpu,cpuacct:/lab/job\n0::/",
            "/sys/fs/cgroup/cpu,cpuacct/lab/job/cpu.rt_runtime_us": "0",
        },
    )
    res = check(root)["sched_fifo"]
    assert res.status == FAIL and "cpu.rt_runtime_us" in res.current


def test_rt_throttling_should_be_lifted_only_when_asked(tmp_path):
    root = build(tmp_path)
    res = check(root)["rt_throttling"]
    assert (res.status, res.fixable, res.opt_in) == (WARN, True, True)
    path = root / "proc/sys/kernel/sched_rt_runtime_us"
    after = by_name(apply_and_recheck(machine(root), Target()))
    assert path.read_text() == "950000\n"
    assert after["rt_throttling"].applied == []
    after = by_name(apply_and_recheck(machine(root), Target(), unthrottle=True))
    assert path.read_text() == "-1"
    assert after["rt_throttling"].status == OK
    assert after["rt_throttling"].applied[0]["old"] == "950000"


# -- the RT CPU ------------------------------------------------------------------------------


def test_the_rt_cpu_should_be_the_last_cpu_or_the_configured_one(tmp_path):
    root = build(tmp_path)
    assert check(root)["rt_cpu"].current.startswith("3 (the last CPU")
    res = check(root, Target(cpu=2, config="rtnet.toml"))
    assert res["rt_cpu"].status == OK and "rtnet.toml" in res["rt_cpu"].current
    assert "CPU 2" in res["isolcpus"].explanation
    unpinned = check(root, Target(config="rtnet.toml"))["rt_cpu"]
    assert unpinned.status == WARN and unpinned.recommended == "rt.cpu = 3"
    assert check(root, Target(cpu=7, config="x.toml"))["rt_cpu"].status == FAIL


def test_isolation_parameters_should_be_read_from_the_command_line_and_sysfs(tmp_path):
    stock = check(build(tmp_path / "stock"))
    assert [stock[n].status for n in ("isolcpus", "nohz_full", "rcu_nocbs")] == [WARN] * 3
    isolated = check(build(tmp_path / "iso", ISOLATED))
    assert [isolated[n].status for n in ("isolcpus", "nohz_full", "rcu_nocbs")] == [OK] * 3
    assert isolated["isolcpus"].current == "isolated 2-3"


def test_a_kernel_without_nohz_full_should_make_it_not_applicable(tmp_path):
    config = STOCK[f"/boot/config-{RELEASE}"].replace(
        "CONFIG_NO_HZ_FULL=y", "# CONFIG_NO_HZ_FULL is not set"
    )
    root = build(
        tmp_path, {f"/boot/config-{RELEASE}": config, "/sys/devices/system/cpu/nohz_full": None}
    )
    assert check(root)["nohz_full"].status == NA


def test_irqs_on_the_rt_cpu_should_be_counted_and_moved_but_not_the_nics(tmp_path):
    root = build(tmp_path, physical="igc")
    res = check(root, commands=FakeCommands(ETHTOOL_IGC))["irq_affinity"]
    assert res.status == WARN
    # 24 (0-3) and 25 (3) may land on CPU 3; 40 is rteth0's (named in /proc/interrupts)
    assert res.current.startswith("2 IRQs may land on CPU 3 (+1 of rteth0")
    assert [(c.what, c.old, c.new) for c in res.changes] == [
        ("/proc/irq/24/smp_affinity_list", "0-3", "0-2"),
        ("/proc/irq/25/smp_affinity_list", "3", "0-2"),
    ]
    apply_and_recheck(machine(root, commands=FakeCommands(ETHTOOL_IGC)), Target())
    assert (root / "proc/irq/24/smp_affinity_list").read_text() == "0-2"
    assert (root / "proc/irq/25/smp_affinity_list").read_text() == "0-2"
    assert (root / "proc/irq/40/smp_affinity_list").read_text() == "0-3\n"


def test_moved_irqs_should_avoid_isolated_cpus(tmp_path):
    root = build(tmp_path, ISOLATED)
    res = check(root)["irq_affinity"]
    assert ("/proc/irq/25/smp_affinity_list", "3", "0-1") in [
        (c.what, c.old, c.new) for c in res.changes
    ]


def test_irqbalance_should_be_named_when_it_would_undo_the_move(tmp_path):
    root = build(tmp_path, {"/proc/812/comm": "irqbalance"})
    assert "irqbalance is running" in check(root)["irq_affinity"].explanation


def test_a_write_the_kernel_refuses_should_be_reported_and_the_others_still_made(tmp_path):
    root = build(tmp_path)

    class RefusingFiles(SysFiles):
        def write(self, rel, text):
            if rel == "/proc/irq/24/smp_affinity_list":
                raise OSError(5, "Input/output error")
            super().write(rel, text)

    results = apply_and_recheck(machine(root, files=RefusingFiles(str(root))), Target())
    irq = by_name(results)["irq_affinity"]
    assert [c["ok"] for c in irq.applied] == [False, True]
    assert "manages this IRQ's affinity" in irq.applied[0]["error"]
    assert (root / "proc/irq/25/smp_affinity_list").read_text() == "0-2"
    assert failed(results)
    line = preflight.format_change("irq_affinity", irq.applied[0])
    assert line.startswith("irq_affinity: /proc/irq/24/smp_affinity_list: 0-3 -> 0-2 FAILED")


def test_smt_governor_and_idle_states(tmp_path):
    res = check(build(tmp_path / "a"))
    assert res["smt"].status == WARN and res["smt"].current == "sibling 1"
    assert (res["governor"].status, res["governor"].fixable) == (WARN, True)
    assert res["idle_states"].status == OK  # PM QoS keeps the CPU out of C6
    assert "C6 133us" in res["idle_states"].current
    vm = check(
        build(
            tmp_path / "vm",
            {
                "/sys/devices/system/cpu/cpu3/cpufreq/scaling_governor": None,
                "/sys/devices/system/cpu/cpu3/cpufreq/scaling_available_governors": None,
                "/dev/cpu_dma_latency": None,
            },
        )
    )
    assert vm["governor"].status == NA
    assert vm["idle_states"].status == WARN  # deep states and nothing to hold them off
    assert vm["pm_qos"].status == WARN


def test_apply_should_set_the_governor_and_say_old_and_new(tmp_path):
    root = build(tmp_path)
    after = by_name(apply_and_recheck(machine(root), Target()))
    gov = root / "sys/devices/system/cpu/cpu3/cpufreq/scaling_governor"
    assert gov.read_text() == "performance"
    assert after["governor"].status == OK
    assert after["governor"].applied[0]["old"] == "powersave"


def test_pm_qos_should_say_whether_a_request_is_held(tmp_path):
    free = check(build(tmp_path / "free"))["pm_qos"]
    held = check(build(tmp_path / "held", {"/dev/cpu_dma_latency": struct.pack("<i", 0)}))
    assert "none is held now" in free.explanation
    assert held["pm_qos"].current == "held at 0 us"


def test_timer_slack_and_pm_qos_claims_should_match_the_rt_thread(tmp_path):
    with open(os.path.join(ROOT, "csrc", "core", "rtn_rt.c")) as f:
        rt_c = f.read()
    assert re.search(r"prctl\(PR_SET_TIMERSLACK,\s*1UL", rt_c)
    assert 'open("/dev/cpu_dma_latency"' in rt_c
    assert RtSettings().hold_dma_latency is True
    res = check(build(tmp_path))
    assert res["timer_slack"].current == "50000 ns here, 1 ns in the RT thread"
    assert "sets 1 ns" in res["timer_slack"].explanation


def test_memlock_should_fail_below_the_umem_without_cap_ipc_lock(tmp_path):
    low = STOCK["/proc/self/limits"].replace(
        "Max locked memory         unlimited", "Max locked memory         8388608"
    )
    root = build(tmp_path / "low", {"/proc/self/limits": low, "/proc/self/status": "CapEff:\t0"})
    assert check(root)["memlock"].status == FAIL
    capable = build(tmp_path / "cap", {"/proc/self/limits": low})
    assert check(capable)["memlock"].status == OK
    assert preflight.UMEM_BYTES > 8388608


# -- the NIC ---------------------------------------------------------------------------------


def test_a_veth_should_make_the_hardware_items_not_applicable(tmp_path):
    cmds = FakeCommands({"-i": (0, "driver: veth\nversion: 1.0\n")})
    res = check(build(tmp_path), commands=cmds)
    assert res["nic"].status == OK and res["nic"].current == "veth (virtual)"
    assert res["xdp_native"].status == OK and "SKB mode" in res["xdp_native"].explanation
    for name in ("xdp_zerocopy", "coalescing", "hw_timestamps"):
        assert res[name].status == NA and "veth" in res[name].current, name
    assert res["queues"].status == OK
    assert [c[1] for c in cmds.calls] == ["-i"]


def test_a_physical_nic_should_report_driver_coalescing_stamps_and_queues(tmp_path):
    cmds = FakeCommands(ETHTOOL_IGC)
    root = build(tmp_path, physical="igc")
    res = check(root, commands=cmds, features=IGC_FEATURES)
    assert res["nic"].current == "igc"
    assert (res["xdp_native"].status, res["xdp_zerocopy"].current) == (OK, "supported")
    assert res["coalescing"].status == WARN
    assert res["coalescing"].current == "adaptive-rx on, rx-usecs 3"
    assert res["hw_timestamps"].status == OK
    assert (res["queues"].status, res["queues"].current) == (WARN, "4 RX queues")
    cmds.calls.clear()
    apply_and_recheck(machine(root, commands=cmds, features=IGC_FEATURES), Target())
    assert ["ethtool", "-C", "rteth0", "adaptive-rx", "off", "rx-usecs", "0"] in cmds.calls


def test_generic_xdp_only_should_warn(tmp_path):
    res = check(build(tmp_path, physical="e1000"), features=0)
    assert res["xdp_native"].status == WARN


def test_a_kernel_that_cannot_tell_xdp_features_should_say_so_in_one_line(tmp_path):
    err = xdpfeatures.XdpFeaturesError("the kernel has no netdev netlink family", 2)
    res = check(build(tmp_path), features=err)["xdp_native"]
    assert res.status == WARN and "no netdev netlink family" in res.explanation


def test_missing_ethtool_or_device_should_be_one_line(tmp_path):
    root = build(tmp_path, physical="igc")
    res = check(root, commands=FakeCommands(installed=False))
    assert res["coalescing"].status == WARN and "not installed" in res["coalescing"].explanation
    unsupported = check(root, commands=FakeCommands({}))["coalescing"]
    assert unsupported.status == NA and "Operation not supported" in unsupported.explanation
    gone = run_checks(machine(root), Target(dev="rteth9"))
    assert by_name(gone)["nic"].status == FAIL
    assert {r.status for r in gone[-5:]} == {NA}
    assert failed(gone)
    one_line_each(gone)


# -- hostile files ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rel, content, item, words",
    [
        (
            "/proc/sys/kernel/sched_rt_runtime_us",
            "lots",
            "rt_throttling",
            "/proc/sys/kernel/sched_rt_runtime_us: 'lots' is not a whole number",
        ),
        (
            "/proc/sys/kernel/sched_rt_runtime_us",
            "9" * 5000,
            "rt_throttling",
            "is not a whole number",
        ),
        (
            "/proc/cmdline",
            b"root=/dev/sda1 \xff\xfe isolcpus=3",
            "isolcpus",
            "/proc/cmdline: not text (byte 0xff)",
        ),
        ("/proc/cmdline", "isolcpus=3-1", "isolcpus", "CPU range 3-1"),
        ("/proc/cmdline", "nohz_full=0-99999999", "nohz_full", "not a CPU list"),
        (
            "/sys/devices/system/cpu/cpu3/topology/thread_siblings_list",
            "\x1b[2J",
            "smt",
            "is not a CPU list",
        ),
        ("/dev/cpu_dma_latency", b"\x00\x00", "pm_qos", "2 bytes, not a 32-bit latency"),
        ("/proc/self/limits", "nothing here", "memlock", "no 'Max locked memory' line"),
        ("/sys/kernel/debug/sched/preempt", "(full) (none)", "preemption", "not a list"),
        (
            "/sys/devices/system/cpu/cpu3/cpuidle/state1/latency",
            "-5",
            "idle_states",
            "state1/latency: -5 outside 0..1000000000",
        ),
    ],
)
def test_a_malformed_file_should_give_its_item_one_clear_line(tmp_path, rel, content, item, words):
    res = check(build(tmp_path, {rel: content}))
    assert res[item].status == WARN
    assert words in res[item].explanation
    one_line_each(res)


def test_an_empty_tree_should_give_every_item_a_line_and_no_traceback(tmp_path):
    results = run_checks(machine(tmp_path), Target())
    assert [r.name for r in results] == [preflight.check_name(c) for c in preflight.CHECKS]
    assert (
        by_name(results)["rt_cpu"].explanation
        == "/sys/devices/system/cpu/online: No such file or directory"
    )
    one_line_each(results)


def test_a_fifo_in_place_of_a_file_should_not_block(tmp_path):
    root = build(tmp_path, {"/proc/cmdline": None})
    os.mkfifo(root / "proc/cmdline")
    res = check(root)["isolcpus"]
    assert res.status == WARN and res.explanation == "/proc/cmdline: not a file"


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    content=st.binary(max_size=80),
    rel=st.sampled_from(
        [
            "/proc/cmdline",
            "/proc/self/status",
            "/proc/self/limits",
            "/sys/devices/system/cpu/online",
            "/proc/irq/24/smp_affinity_list",
            "/proc/interrupts",
            "/proc/sys/kernel/version",
            "/sys/kernel/debug/sched/preempt",
            "/proc/self/cgroup",
        ]
    ),
)
def test_any_bytes_in_a_system_file_should_never_raise(tmp_path_factory, content, rel):
    root = build(tmp_path_factory.mktemp("t"), {rel: content})
    results = run_checks(machine(root), Target())
    assert all(r.status in STATUSES for r in results)
    one_line_each(results)


def test_system_file_paths_should_stay_inside_the_root(tmp_path):
    files = SysFiles(str(tmp_path))
    for rel in ("/proc/../../etc/passwd", "proc/cmdline", "/proc/\0x"):
        with pytest.raises(Unreadable):
            files.read(rel)


def test_an_oversized_file_should_be_refused(tmp_path):
    (tmp_path / "big").write_bytes(b"1" * 70_000)
    with pytest.raises(Unreadable, match="larger than"):
        SysFiles(str(tmp_path)).read("/big")


def test_writes_should_never_create_files(tmp_path):
    with pytest.raises(FileNotFoundError):
        SysFiles(str(tmp_path)).write("/proc/sys/kernel/new", "1")
    assert not (tmp_path / "proc").exists()


# -- small parsers ---------------------------------------------------------------------------


@given(st.sets(st.integers(0, 300), max_size=40))
def test_cpu_lists_should_round_trip(cpus):
    assert parse_cpu_list(format_cpu_list(cpus)) == cpus


def test_kernel_params_should_stop_at_the_init_arguments_and_take_quotes():
    params = kernel_params('root=/dev/sda1 isolcpus=3 foo="a b" -- isolcpus=0 --init')
    assert params == {"root": "/dev/sda1", "isolcpus": "3", "foo": "a b"}


def test_kconfig_should_read_set_and_unset_options():
    assert parse_kconfig("CONFIG_HZ=250\n# CONFIG_PREEMPT is not set\njunk\n") == {
        "HZ": "250",
        "PREEMPT": "n",
    }


def test_the_netlink_reply_parser_should_find_the_mask_and_refuse_overruns():
    attrs = xdpfeatures.attribute(
        xdpfeatures.NETDEV_A_DEV_IFINDEX, struct.pack("=I", 3)
    ) + xdpfeatures.attribute(
        xdpfeatures.NETDEV_A_DEV_XDP_FEATURES, struct.pack("=Q", IGC_FEATURES)
    )
    body = struct.pack("=BBH", 1, 1, 0) + attrs
    msg = struct.pack("=IHHII", 16 + len(body), 0x20, 0, 7, 0) + body
    assert xdpfeatures.parse_reply(msg, 0x20, 7)[3] == struct.pack("=Q", IGC_FEATURES)
    with pytest.raises(xdpfeatures.XdpFeaturesError, match="overruns"):
        xdpfeatures.parse_reply(msg[:-4], 0x20, 7)
    bad_attr = (
        struct.pack("=IHHII", 16 + 8, 0x20, 0, 7, 0)
        + struct.pack("=BBH", 1, 1, 0)
        + struct.pack("=HH", 200, 3)
    )
    with pytest.raises(xdpfeatures.XdpFeaturesError, match="attribute of 200 bytes"):
        xdpfeatures.parse_reply(bad_attr, 0x20, 7)
    error = struct.pack("=IHHII", 20, xdpfeatures.NLMSG_ERROR, 0, 7, 0) + struct.pack("=i", -19)
    with pytest.raises(xdpfeatures.XdpFeaturesError) as exc:
        xdpfeatures.parse_reply(error, 0x20, 7)
    assert exc.value.errno == 19


def test_the_kernel_should_answer_the_xdp_feature_query_for_loopback():
    try:
        mask = xdpfeatures.xdp_features(1)
    except xdpfeatures.XdpFeaturesError as exc:
        if exc.errno == 2:
            skip_or_fail(str(exc))  # a kernel before 6.3
        raise
    assert 0 <= mask < 1 << 64


# -- output and the command ------------------------------------------------------------------


def test_json_should_have_fixed_keys_and_the_table_one_line_per_item(tmp_path):
    results = run_checks(machine(build(tmp_path)), Target())
    objs = json.loads(json.dumps([r.to_json() for r in results]))
    for obj in objs:
        assert tuple(obj) == JSON_KEYS
        assert obj["status"] in STATUSES
        assert isinstance(obj["fixable"], bool) and isinstance(obj["changes"], list)
    table = preflight.format_table(results).splitlines()
    assert len(table) == len(results) + 1
    assert table[1].split()[:2] == ["warn", "preempt_rt"]
    assert any(line.endswith("[--apply --unthrottle]") for line in table)


def test_rtnetctl_check_should_read_the_real_machine_and_print_json():
    res = subprocess.run(
        [sys.executable, "-m", "rtnet.cli", "check", "-j"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": ROOT},
    )
    assert res.returncode in (0, 1), res.stderr
    objs = json.loads(res.stdout)
    assert [o["name"] for o in objs] == [preflight.check_name(c) for c in preflight.CHECKS]
    assert all(tuple(o) == JSON_KEYS and o["changes"] == [] for o in objs)
    assert res.returncode == (1 if any(o["status"] == FAIL for o in objs) else 0)


def test_rtnetctl_check_should_take_the_rt_cpu_from_the_configuration(tmp_path, capsys):
    cfg = tmp_path / "rtnet.toml"
    cfg.write_text('[station]\ndevice = "rtx0"\n[rt]\ncpu = 0\n')
    rc = main(["check", "-c", str(cfg), "-j"])
    objs = {o["name"]: o for o in json.loads(capsys.readouterr().out)}
    assert rc == 1  # rtx0 does not exist
    assert objs["rt_cpu"]["current"] == f"0 (rt.cpu of {cfg})"
    assert "rtx0 does not exist" in objs["nic"]["explanation"]


def test_rtnetctl_check_should_refuse_bad_arguments_in_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text("[rt]\ncpu = 100000\n")
    assert main(["check", "-c", str(bad)]) == 1
    assert main(["check", "--unthrottle"]) == 1
    assert main(["-n", "rtn-lab-s1", "check"]) == 1
    assert main(["check", "bad/name"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 4 and all(line.startswith("rtnetctl: ") for line in err)
    assert "rt.cpu" in err[0]


# ---- --measure: the wake-up lateness measured, and the guard that covers it -----------------


def _measured(p999_us, gaps=0, slow_ms=0.0):
    return {
        "cpu": 1,
        "seconds": 2,
        "wakeups": 2000,
        "p99_us": p999_us / 4,
        "p999_us": p999_us / 2,
        "p9999_us": p999_us,
        "max_us": p999_us * 3,
        "gaps": gaps,
        "slow_ms": slow_ms,
        "max_slowdown": 12.0,
    }


@pytest.mark.parametrize(
    "p999,guard,status",
    [(5, 50, "ok"), (30, 50, "ok"), (31, 60, "warn"), (92, 120, "warn"), (730, 750, "warn")],
)
def test_the_measured_lateness_gives_a_guard_that_covers_it(p999, guard, status):
    from rtnet.preflight.measure import check_wakeup, recommended_guard_us

    m = _measured(p999)
    assert recommended_guard_us(m) == guard
    r = check_wakeup(m)
    assert (r.name, r.status, r.recommended) == ("wakeup", status, f"tdma guard >= {guard} us")
    assert f"p99.99 {p999} us" in r.current and "\n" not in r.explanation
    assert "stopped" not in r.explanation


def test_gaps_and_slow_spells_seen_while_measuring_are_named():
    from rtnet.preflight.measure import check_wakeup

    r = check_wakeup(_measured(200, gaps=3, slow_ms=41.6))
    assert "stopped 3 times" in r.explanation and "12 times slower for 42 ms" in r.explanation
