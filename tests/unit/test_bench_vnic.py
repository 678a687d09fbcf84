"""tools/bench_vnic.py: headlines over repeated runs of vnic bench, and what it refuses."""

import json

import pytest

from tools import bench_vnic


def run_result(rate, csw=0.05, goodput=68.9, cpu=22.0, missed=75, idle_missed=80):
    """A vnic bench result with the figures the headlines read (vnic/bench.py's keys)."""
    return {
        "config": {"link_rate_mbps": rate, "master_tcp_capacity_mbps": 74.3, "cpu_method": "x"},
        "runs": {
            "kernel/tcp": {"cpu_s_per_gb": 3.0},
            "kernel-mtu/tcp": {"cpu_s_per_gb": 6.0},
            "batched/tcp": {
                "goodput_mbps": goodput,
                "cpu_s_per_gb": cpu,
                "marginal_cpu_s_per_gb": cpu / 2,
                "csw_per_packet": csw,
                "pump_wakeups_per_packet": 0.04,
                "tx_copies_per_byte": 3.97,
                "rx_copies_per_byte": 3.0,
                "rt_lateness_p99_us": 55.0,
                "idle_rt_lateness_p99_us": 52.0,
                "rt_slot_missed": missed,
                "idle_rt_slot_missed": idle_missed,
            },
            "per-packet/tcp": {"csw_per_packet": 1.3},
        },
        "table": f"table at {rate}",
    }


def by_label(rows):
    return {r["label"]: r for r in rows}


def test_headlines_judge_against_the_mtu_frame_kernel_path_and_the_idle_run():
    h = by_label(bench_vnic.headlines(run_result(100)))
    assert (
        h["100 Mbit/s: batched TCP lab CPU per byte / MTU-frame kernel path's"]["value"] == 22 / 6
    )
    assert h["100 Mbit/s: batched TCP lab CPU per byte / TSO kernel path's"]["value"] == 22 / 3
    goodput = h["100 Mbit/s: batched TCP goodput, % of the window's TCP capacity"]
    assert round(goodput["value"], 1) == 92.7 and goodput["kind"] == "at_least"
    assert h["100 Mbit/s: batched TCP RT slot lateness p99 minus idle p99"]["value"] == 3.0
    fast = by_label(bench_vnic.headlines(run_result(1000, missed=880, idle_missed=800)))
    assert fast["1000 Mbit/s: batched TCP RT slots missed / idle run's"]["value"] == 1.1
    assert fast["1000 Mbit/s: batched TCP goodput"]["target"] == 600


def test_the_kernel_path_at_the_vnics_rate_is_the_primary_baseline_where_a_run_has_it():
    res = run_result(100)
    res["runs"]["kernel-mtu-same-rate/tcp"] = {"cpu_s_per_gb": 8.0, "goodput_mbps": 68.9}
    h = by_label(bench_vnic.headlines(res))
    same = h["100 Mbit/s: batched TCP lab CPU per byte / MTU-frame kernel path's at the same rate"]
    assert same["value"] == 22 / 8 and same["target"] == 2.0 and same["kind"] == "at_most"
    above = "100 Mbit/s: batched TCP lab CPU per byte above idle / MTU-frame kernel path's"
    assert h[above + " at the same rate"]["value"] == 11 / 8
    # the offered-rate path stays beside it, without a target; no row judges against it
    offered = h[
        "100 Mbit/s: batched TCP lab CPU per byte / MTU-frame kernel path's at the offered rate"
    ]
    assert offered["value"] == 22 / 6 and offered["target"] is None
    assert above not in h
    # a same-rate run that measured nothing is no baseline: the offered-rate one is judged
    res["runs"]["kernel-mtu-same-rate/tcp"] = {"cpu_s_per_gb": 0}
    h = by_label(bench_vnic.headlines(res))
    assert h["100 Mbit/s: batched TCP lab CPU per byte / MTU-frame kernel path's"]["target"] == 2.0


def write_series(tmp_path, runs):
    """A manifest with ``runs`` (status, {rate: result}) and their files."""
    entries = []
    for k, (status, results) in enumerate(runs, 1):
        d = tmp_path / f"run-{k}"
        d.mkdir()
        for rate, res in results.items():
            (d / f"vnic_{rate}.json").write_text(json.dumps(res))
        entries.append({"run": k, "dir": f"run-{k}", "status": status, "link_rates": list(results)})
    man = tmp_path / "manifest.json"
    man.write_text(json.dumps({"code": "abc", "runs": entries}))
    return str(man)


def test_report_is_the_median_of_the_runs_that_ended_well(tmp_path, capsys):
    man = write_series(
        tmp_path,
        [
            ("ok", {100: run_result(100, csw=0.03)}),
            ("failed", {100: run_result(100, csw=9.0)}),
            ("ok", {100: run_result(100, csw=0.05)}),
            ("ok", {100: run_result(100, csw=0.04)}),
        ],
    )
    page = tmp_path / "B.md"
    page.write_text("# Benchmarks\n\nother text\n")
    assert bench_vnic.main(["--report", man, "--benchmarks", str(page)]) == 0
    md = page.read_text()
    assert "other text" in md and bench_vnic.SECTION_BEGIN in md
    # 0.04 [0.03..0.05] over 3 runs: the failed run's 9.0 is not among them; the spread
    # (0.02) is smaller than the gap to the target (0.03), so the median's verdict stands
    assert (
        "| 100 Mbit/s: batched TCP context switches per packet (over idle) | 0.040 | 0.030 | 0.050 | 3 | <= 0.01 | missed |"
        in md
    )
    assert md.count("table at 100") == 3
    # written again: the section is replaced, not appended
    assert bench_vnic.main(["--report", man, "--benchmarks", str(page)]) == 0
    assert page.read_text().count(bench_vnic.SECTION_BEGIN) == 1


def test_bad_input_gets_one_line(tmp_path, capsys):
    assert bench_vnic.main(["--runs", "0"]) == 2
    assert bench_vnic.main(["--link-rates", "100,x"]) == 2
    assert bench_vnic.main(["--series", "../up"]) == 2
    assert bench_vnic.main(["--report", str(tmp_path / "none.json")]) == 1
    man = write_series(tmp_path, [("failed", {100: run_result(100)})])
    assert bench_vnic.main(["--report", man]) == 1
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert bench_vnic.main(["--report", str(bad)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 6 and all(line.startswith("bench_vnic: ") for line in err)
    assert "no run ended well" in err[4]


def test_the_cpu_above_idle_is_split_into_rt_threads_pumps_and_the_rest():
    from vnic.bench import derive

    def window(wall, lab_cpu, rt, pump):
        return {
            "wall_s": wall,
            "lab_total_cpu_s": lab_cpu,
            "stack_csw": 0,
            "csw_by_thread": {n: {"vol": 0, "invol": 0} for n in ("rtnet-rt", "rtnet-vnic")},
            "cpu_by_thread": {"rtnet-rt": rt, "rtnet-vnic": pump},
            "wake_p99_us": 1.0,
            "rt_lateness_p99_us": 1.0,
            "missed_slots": 0,
            "rt_slot_missed": 0,
        }

    base = window(5.0, 0.20, 0.18, 0.001)  # idle: 0.04 CPU s/s, almost all RT threads
    r = window(10.0, 1.30, 0.66, 0.20)  # loaded, twice as long
    r.update(vnic_packets=1000, pump_wakeups=10, goodput_mbps=70.0, bytes=0.1e9)
    derive(r, base, 74.3)
    part = r["above_idle_s_per_gb_by_part"]
    assert abs(r["marginal_cpu_s_per_gb"] - (1.30 - 0.40) / 0.1) < 1e-9
    assert abs(part["rtnet-rt"] - (0.66 - 0.36) / 0.1) < 1e-9
    assert abs(part["rtnet-vnic"] - (0.20 - 0.002) / 0.1) < 1e-9
    assert abs(sum(part.values()) - r["marginal_cpu_s_per_gb"]) < 1e-9
    assert "rt_probe_cpu_s_per_gb" not in r  # no idle without the probe was measured


def test_the_rt_probes_share_of_the_total_comes_from_an_idle_run_without_it():
    """The batched mode's idle is measured once more with the stations' RT probe off: the
    difference, per second and scaled to the loaded run, is the probe frames' CPU, shown as
    the total without them beside the total the target judges."""
    from vnic.bench import derive

    def window(wall, lab_cpu):
        return {
            "wall_s": wall,
            "lab_total_cpu_s": lab_cpu,
            "stack_csw": 0,
            "csw_by_thread": {n: {"vol": 0, "invol": 0} for n in ("rtnet-rt", "rtnet-vnic")},
            "wake_p99_us": 1.0,
            "rt_lateness_p99_us": 1.0,
            "missed_slots": 0,
            "rt_slot_missed": 0,
        }

    base = window(5.0, 0.25)  # 0.05 CPU s/s with the probe
    base["without_probe"] = window(5.0, 0.20)  # 0.04 without it
    r = window(10.0, 1.30)
    r.update(vnic_packets=1000, pump_wakeups=10, goodput_mbps=70.0, bytes=0.1e9)
    derive(r, base, 74.3)
    assert abs(r["rt_probe_cpu_s_per_gb"] - 0.01 * 10.0 / 0.1) < 1e-9
    # an idle without the probe that cost more (noise) is no negative share
    base["without_probe"] = window(5.0, 0.30)
    derive(r, base, 74.3)
    assert r["rt_probe_cpu_s_per_gb"] == 0.0
    # the headline: the total without the probe's frames, against the same baseline
    res = run_result(100, cpu=22.0)
    res["runs"]["batched/tcp"]["rt_probe_cpu_s_per_gb"] = 4.0
    h = by_label(bench_vnic.headlines(res))
    row = h[
        "100 Mbit/s: batched TCP lab CPU per byte without the RT probe's frames / "
        "MTU-frame kernel path's"
    ]
    assert row["value"] == (22.0 - 4.0) / 6.0 and row["target"] is None
    assert h["100 Mbit/s: batched TCP lab CPU per byte / MTU-frame kernel path's"]["value"] == (
        22.0 / 6.0
    )


def test_several_series_are_pooled_and_a_headline_missing_from_a_run_is_left_out(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    same_rate = run_result(100, cpu=24.0)
    same_rate["runs"]["kernel-mtu-same-rate/tcp"] = {"cpu_s_per_gb": 8.0}
    man_old = write_series(old, [("ok", {100: run_result(100, csw=0.03)})])
    man_new = write_series(new, [("ok", {100: same_rate}), ("failed", {100: run_result(100)})])
    runs_by_rate, made, where, code = bench_vnic.load_series([man_old, man_new])
    assert len(runs_by_rate[100]) == 2 and [e["series"] for e in made] == ["old", "new"]
    md = bench_vnic.report(runs_by_rate, made, where, code)
    # both runs have the switches; only the new one the same-rate baseline
    assert "| 100 Mbit/s: batched TCP context switches per packet (over idle) | 0.040 |" in md
    assert "at the same rate | 3.00 | 3.00 | 3.00 | 1 |" in md
    assert "Run 1 of old, 100 Mbit/s" in md and "Run 1 of new, 100 Mbit/s" in md


def test_pooled_series_must_have_the_same_link_rates(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    man_a = write_series(a, [("ok", {100: run_result(100)})])
    man_b = write_series(b, [("ok", {1000: run_result(1000)})])
    assert bench_vnic.main(["--report", man_a, man_b]) == 1


def test_kernel_runs_are_pooled_by_their_sums_and_keep_each_runs_figure_and_flag():
    from vnic.bench import pooled_kernel_runs

    def run(cpu, nbytes, flagged):
        return {
            "lab_total_cpu_s": cpu,
            "bytes": nbytes,
            "machine_cpu_s": cpu,
            "goodput_mbps": 69.0,
            "loss_pct": 0.0,
            "cpu_s_per_gb": cpu / (nbytes / 1e9),
            "rate_mismatch": flagged,
        }

    results = {
        "kernel_runs": {
            "mtu-same-rate/after the batched runs": run(0.2, 0.04e9, False),
            "mtu-same-rate/at the end": run(0.3, 0.04e9, True),
            "tcp/before": run(9.0, 0.04e9, False),  # another baseline's: not pooled
        }
    }
    p = pooled_kernel_runs(results, "mtu-same-rate/")
    assert p["runs"] == 2 and p["cpu_s_per_gb_each"] == [5.0, 7.5]
    assert abs(p["cpu_s_per_gb"] - 6.25) < 1e-9 and p["rate_mismatch"] is True


def test_bad_input_to_a_pooled_report_gets_one_line(tmp_path, capsys):
    good, broken, uneven = (tmp_path / n for n in ("good", "broken", "uneven"))
    for d in (good, broken, uneven):
        d.mkdir()
    man_good = write_series(good, [("ok", {100: run_result(100)})])
    man_broken = write_series(broken, [("ok", {100: run_result(100)})])
    (broken / "run-1" / "vnic_100.json").write_text('{"runs": ')  # cut short
    # one run with 100 Mbit/s, the other only 1000: the rates' runs do not line up
    man_uneven = write_series(
        uneven, [("ok", {100: run_result(100)}), ("ok", {1000: run_result(1000)})]
    )
    assert bench_vnic.main(["--report", man_good, man_broken]) == 1
    assert bench_vnic.main(["--report", man_good, man_uneven]) == 1
    assert bench_vnic.main(["--xdp-mode", "zerocopy"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("bench_vnic: ") for line in err)
    assert "vnic_100.json" in err[0] and "not every run has" in err[1]


def test_the_rt_cpu_is_kept_for_the_rt_threads_and_the_applications_go_elsewhere():
    from rtnet.benchkit import on_cpus
    from rtnet.errors import ConfigError
    from vnic.bench import cpu_isolation

    # auto: the highest CPU this process may use, the applications on the rest
    assert cpu_isolation("auto", allowed={0, 1}) == (1, (0,))
    assert cpu_isolation("auto", allowed={2, 5, 3}) == (5, (2, 3))
    assert cpu_isolation("2", allowed={0, 1, 2, 3}) == (2, (0, 1, 3))
    # one CPU, or none asked for: nothing pinned
    assert cpu_isolation("auto", allowed={0}) == (None, None)
    assert cpu_isolation("none", allowed={0, 1}) == (None, None)
    for bad, why in (
        ("3", "CPU 3 is not one this process may use"),
        (0, "none left for iperf3"),
        ("x", "is not auto, none or a CPU number"),
        (True, "is not auto, none or a CPU number"),
    ):
        with pytest.raises(ConfigError, match=why):
            cpu_isolation(bad, allowed={0} if bad == 0 else {0, 1})
    assert on_cpus(["iperf3", "-s"], (0, 2)) == ["taskset", "-c", "0,2", "iperf3", "-s"]
    assert on_cpus(["iperf3", "-s"], None) == ["iperf3", "-s"]


def test_a_runs_heading_says_where_its_threads_ran():
    assert bench_vnic.cpus_said({}) == ""  # runs from before it was recorded
    assert bench_vnic.cpus_said({"rt_cpu": None, "app_cpus": None}) == ", nothing pinned"
    said = bench_vnic.cpus_said({"rt_cpu": 1, "app_cpus": [0]})
    assert said == ", RT threads on CPU 1, iperf3 and pumps on 0"


def test_a_series_is_named_by_what_differs_from_the_defaults():
    from tools.bench_vnic import parse_args, series_name

    assert series_name("abc1234", parse_args([])) == "abc1234"
    assert series_name("abc1234", parse_args(["--wake-early"])) == "abc1234-wake-early"
    assert (
        series_name(
            "abc1234", parse_args(["--xdp-mode", "skb", "--rt-cpu", "none", "--wake-early"])
        )
        == "abc1234-xdp-skb-rtcpu-none-wake-early"
    )
