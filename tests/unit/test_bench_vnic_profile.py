"""tools/bench_vnic_profile.py: reading perf script's samples and sorting them by path."""

from tools.bench_vnic_profile import flags, per_gb, samples, table, tally

# perf script -F comm,tid,ip,sym,dso: a header line a sample, its stack leaf first, a blank line
SCRIPT = """\
rtnet-rt 101
\tffffffff8160d0a1 veth_xmit+0x31 ([kernel.kallsyms])
\tffffffff81a0f2b2 __xsk_generic_xmit+0x212 ([kernel.kallsyms])
\tffffffff81a0f3c3 xsk_sendmsg+0x43 ([kernel.kallsyms])
\t           fde9d __libc_sendto (/usr/lib/x86_64-linux-gnu/libc.so.6)

rtnet-rt 101
\tffffffff810d4c11 finish_task_switch.isra.0+0x91 ([kernel.kallsyms])
\tffffffff822401a2 __schedule+0x3a2 ([kernel.kallsyms])

rtnet-vnic 102
\t           4a1b0 rtn_gro_append+0x40 (/work/rtnet/_core.abi3.so)
\t           4a3f0 rtn_vnic_write_tap+0x80 (/work/rtnet/_core.abi3.so)

rtnet-vnic 102
\tffffffff81600a10 tcp_v4_rcv+0x10 ([kernel.kallsyms])
\tffffffff81511111 tun_get_user+0x99 ([kernel.kallsyms])
\tffffffff81511222 tun_chr_write_iter+0x22 ([kernel.kallsyms])

iperf3 7
\tffffffff81600b10 veth_xmit+0x10 ([kernel.kallsyms])
\tffffffff81600c10 tcp_sendmsg+0x10 ([kernel.kallsyms])

swapper 0
\tffffffff82244983 poll_idle+0x23 ([kernel.kallsyms])
\tffffffff813d09d6 do_idle+0x16 ([kernel.kallsyms])

swapper 0
\tffffffff81700a10 br_handle_frame+0x10 ([kernel.kallsyms])
\tffffffff81700b10 net_rx_action+0x10 ([kernel.kallsyms])
\tffffffff82244983 poll_idle+0x23 ([kernel.kallsyms])

rtnet-rt 101
\tffffffff81a1f0a0 xsk_generic_rcv+0x10 ([kernel.kallsyms])
\tffffffff81a1f0b0 do_xdp_generic+0x10 ([kernel.kallsyms])
\tffffffff8160d0a1 veth_xmit+0x31 ([kernel.kallsyms])
\tffffffff81a0f3c3 xsk_sendmsg+0x43 ([kernel.kallsyms])

iperf3 8
\tffffffff81600a10 tcp_v4_rcv+0x10 ([kernel.kallsyms])
\tffffffff81600b10 veth_xmit+0x10 ([kernel.kallsyms])
\tffffffff81600c10 tcp_sendmsg+0x10 ([kernel.kallsyms])

kworker/0:1 55
\tffffffff81000010 worker_thread+0x10 ([kernel.kallsyms])

ip link 66
\t           12345 main (/usr/sbin/ip)
"""


def test_each_sample_is_read_with_its_comm_and_stack_leaf_first():
    got = list(samples(SCRIPT))
    assert len(got) == 11
    assert got[0][0] == "rtnet-rt"
    assert got[0][1][0] == ("veth_xmit", "[kernel.kallsyms]")
    assert got[2][1][0] == ("rtn_gro_append", "/work/rtnet/_core.abi3.so")
    assert got[10][0] == "ip link"  # a comm with a space: the tid is the last field


def test_samples_go_to_their_thread_and_path_and_an_idle_cpus_own_loop_to_none():
    counts, others = tally(SCRIPT)
    assert counts == {
        ("RT threads", "AF_XDP send: skb, veth, bridge"): 1,
        ("RT threads", "waiting, switching"): 1,
        ("VNIC pumps", "user space"): 1,
        ("VNIC pumps", "TAP write: Linux's receive inside it"): 1,
        ("iperf3", "TCP send: the socket write, down to the wire"): 1,
        ("idle CPU", "network softirq"): 1,
        # a path that needs two groups: the send, and the receiving end inside it
        ("RT threads", "AF_XDP send: the receiving station's XDP, the copy into its UMEM"): 1,
        ("iperf3", "TCP send: the receiver's TCP inside it"): 1,
    }
    assert others == 2  # the kworker and ip: not the lab's


def test_a_script_cut_short_or_with_stray_lines_is_read_without_error():
    cut = SCRIPT[: SCRIPT.index("tun_get_user")]
    counts, _ = tally(cut + "\n\tgarbage\n\t\n")
    assert counts[("VNIC pumps", "user space")] == 1
    assert tally("") == ({}, 0)
    assert tally("\tffff sym (dso)\n\n") == ({}, 0)  # a stack line before any header


def test_the_table_gives_cpu_per_gb_and_the_vnic_above_its_idle_run():
    counts, _ = tally(SCRIPT)
    vnic = per_gb(counts, freq=1000, gbytes=0.001)  # each sample 1 ms, over 1 MB: 1 s/GB
    assert vnic[("all", "total")] == 8.0
    assert vnic[("VNIC pumps", "total")] == 2.0
    idle = {("RT threads", "total"): 1.0, ("all", "total"): 1.0}
    run = {"kernel-mtu": {("all", "total"): 3.0}, "vnic-idle": idle, "vnic": vnic}
    rows = {r.split("  ")[0]: r.split() for r in table([run]).splitlines()[1:]}
    assert rows["all the lab"][-4:] == ["3.00", "1.00", "8.00", "7.00"]
    assert rows["RT threads / total"][-2:] == ["3.00", "2.00"]
    # over runs: the median and the spread of each phase, and of each run's difference
    other = {**run, "vnic": {**vnic, ("all", "total"): 10.0}}
    rows = {r.split("  ")[0]: r for r in table([run, other, other]).splitlines()[1:]}
    assert rows["all the lab"].endswith("10.00 [8.00..10.00]  9.00 [7.00..9.00]")


def test_a_run_is_flagged_when_its_idle_profiles_disagree_or_other_tasks_were_busy():
    quiet = {"idle_each": [4.0, 4.5], "others_samples": {"vnic": 20}, "machine_samples": 10000}
    assert flags(quiet) == []
    idle_moved = {**quiet, "idle_each": [4.0, 5.5]}
    assert ["idle profiles" in f for f in flags(idle_moved)] == [True]
    busy = {**quiet, "others_samples": {"vnic": 20, "kernel-mtu": 900}}
    assert [f.split(":")[0] for f in flags(busy)] == ["kernel-mtu"]


def test_no_perf_or_an_unwritable_output_is_refused_in_one_line_before_any_lab(monkeypatch, capsys):
    import os
    import shutil

    import tools.bench_vnic_profile as tool

    built = []
    monkeypatch.setattr(tool, "Lab", lambda *a, **k: built.append(a))
    monkeypatch.setattr(os, "geteuid", lambda: 0)  # both refusals come before root's work
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert tool.main([]) == 2
    assert capsys.readouterr().err.strip() == "bench_vnic_profile: needs perf (Debian's linux-perf)"
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/" + name)
    assert tool.main(["--out", "/proc/no-such-dir/x.json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "bench_vnic_profile: --out /proc/no-such-dir/x.json:"
    )
    assert built == []
