"""tools/bench_suite_report on a results dict made here: what the pages say about the
RFC 2544 columns, the two-sided checks, the VNIC's CPU label and the NRT window, with
one run and with the median of several."""

import bench_envelope
import pytest

from tools import bench_aggregate, bench_suite_report


@pytest.fixture
def mods():
    return (bench_suite_report, bench_aggregate)


def rt_size(pct, retried, link, lost=0, p99=50.0):
    return {
        "throughput_pct": pct,
        "throughput_pct_retried": retried,
        "link_mbps": link,
        "fps": 1000.0 * pct,
        "fps_retried": 1000.0 * retried,
        "pct_of_xdp_ceiling": pct / 2,
        "latency_us": {"p50": 20.0, "p99": p99, "p99.9": 80.0, "max": 100.0},
        "latency_trials": 20,
        "latency_trials_disturbed": 3,
        "confirm": {
            "seconds": 30.0,
            "ok": lost == 0,
            "lost": lost,
            "sender_cpu_busy_pct": 40.0,
            "sender_cpu_us_per_frame": 2.5,
        },
        "trials": [{"rate": 100.0, "ok": True, "trial": 1, "disturbed": False}],
        "trials_retried": [{"rate": 100.0, "ok": True, "trial": 1, "disturbed": False}],
    }


def frer_size(link, ratio, extra):
    one = rt_size(100.0, 100.0, link)
    return {
        "throughput_pct": 100.0 * ratio,
        "throughput_pct_retried": 100.0,
        "one_port_pct": 100.0,
        "one_port_pct_retried": 100.0,
        "link_mbps": link,
        "ratio": ratio,
        "p99_extra_us": extra,
        "latency_rate_pct": 100.0 * ratio,
        "latency_us": {"p50": 20.0, "p99": 50.0 + extra, "p99.9": 80.0, "max": 100.0},
        "one_port_latency_us": {"p50": 20.0, "p99": 50.0, "p99.9": 80.0, "max": 100.0},
        "latency_rounds": 20,
        "latency_rounds_disturbed": 2,
        "confirm": one["confirm"],
        "one_port_confirm": {**one["confirm"], "sender_cpu_busy_pct": 25.0},
        "trials": one["trials"],
        "trials_retried": one["trials"],
        "one_port_trials": [{"rate": 100.0, "ok": True, "trial": 2, "disturbed": True}],
        "one_port_trials_retried": [],
    }


def results(diff=-844.5, ratio=1.0, extra=-22.0, cpu=24.0):
    machine, settings = bench_envelope.machine(), bench_envelope.settings(flood_repeats=3)
    kernel = {"goodput_mbps": 100.0, "cpu_s_per_gb": 3.0}
    return {
        "envelope": {
            "command": "tools/bench_suite.py",
            "start_time": "t0",
            "end_time": "t1",
            "seconds": 60.0,
            "quick": False,
            "machine": machine,
            "settings": settings,
            "protocol": {
                "path": "tools/bench_protocol.toml",
                "sha256": "ab" * 32,
                "quick": False,
                "overrides": {"confirm_s": {"protocol": 30.0, "used": 60.0}},
            },
        },
        "matrix": {
            "rt/tdma/idle": {
                "p999": 500.0,
                "missed": 0,
                "sent": 10,
                "received": 10,
                "lost": 0,
                "p99": 400.0,
            }
        },
        "udp_vs_raw": {
            "tdma/idle": {
                "raw_p99_us": 1400.1,
                "udp_p99_us": 1400.1 + diff,
                "p99_diff_us": diff,
                "target_us": 5.0,
            }
        },
        "wakeup": {},
        "rfc2544": {
            "rt_path": {"64": rt_size(100.0, 100.0, 100)},
            "rt_path_1000": {"64": rt_size(40.0, 55.0, 1000, lost=12)},
            "xdp_flood": {"64": {"rx_fps": 500000.0}},
            "rt_path_redundant": {"64": frer_size(100, ratio, extra)},
            "rt_path_redundant_1000": {"64": frer_size(1000, 0.5, 3.0)},
        },
        "frer_wire_cut": {
            "runs": [{"sent": 3, "out_of_order": 0}],
            "messages": 3,
            "lost": 0,
            "duplicates": 0,
        },
        "vnic_cost": {
            "config": {
                "windows": True,
                "master_nrt_us": 640.0,
                "master_nrt_capacity_mbps": 78.9,
                "cpu_method": "cgroup v2",
            },
            "wakeup_floor": {"us_per_wakeup": 13.4, "per_segment_cpu_s_per_gb": 9.3},
            "runs": {
                "kernel/tcp": kernel,
                "kernel/udp": kernel,
                "batched/tcp": {"goodput_mbps": 67.6, "cpu_s_per_gb": cpu, "csw_per_packet": 0.047},
                "batched/udp": {
                    "goodput_mbps": 69.8,
                    "cpu_s_per_gb": 31.0,
                    "csw_per_packet": 0.001,
                },
                "per-packet/udp": {
                    "goodput_mbps": 70.0,
                    "cpu_s_per_gb": 40.0,
                    "csw_per_packet": 1.1,
                },
            },
        },
    }


def test_one_run_names_its_protocol_columns_and_verdicts(mods, tmp_path):
    report, _agg = mods
    md = report.markdown(results(), str(tmp_path / "B.md"))
    assert "overridden on the command line: confirm_s 60.0 (protocol: 30.0)" in md
    assert "- Lab: the wire a test bridge; the stations' sockets test XDP" in md
    # RFC 2544: the headline without retries, the labelled second column, the confirmation
    assert (
        "| 64 | 100.0 | 100.0 | 0 | 100,000 | 20 / 50 / 80 / 100 | 40,000 | 55,000 | 20.0 | "
        "500,000 |"
    ) in md
    assert "with disturbed retries (%)" in md and "frames lost in the confirmation trial" in md
    assert "| c: RT path 64 B at 1000 Mbit/s: frames lost in the confirmation trial | 12 |" in md
    # the UDP check is two-sided: -844.5 us is missed, where the one-sided check said yes
    assert "| tdma/idle | 1,400.1 | 555.6 | -844.5 | missed |" in md
    # c-frer at both link rates, its p99 difference two-sided, the sender CPU per frame
    assert "At 100 Mbit/s modelled:" in md and "At 1000 Mbit/s modelled:" in md
    assert "| -22.0: missed | 25 / 40 | 2.50 / 2.50 |" in md
    assert "| c-frer 64 B at 1000 Mbit/s: zero-loss 2 ports / 1 port | 0.500 |" in md
    # no latency selection left: every round pooled, the disturbed ones counted
    assert "calmest" not in md and "every round pooled" in md
    # VNIC: the CPU is the lab's cgroup and every ksoftirqd, and the plan's window is said
    assert "machine CPU" not in md and "| lab CPU s per GB |" in md
    assert "plus every ksoftirqd thread" in md and "cgroup v2" in md
    assert "An NRT slot occurrence carries one full frame" not in md
    assert "NRT transmit window of 640 us per cycle" in md
    assert "about 37" not in md and "NRT share carries 79 Mbit/s" in md
    assert "| d: batched VNIC TCP, lab CPU per byte / kernel path's | 8.00 |" in md


def test_vnic_cost_is_judged_against_the_mtu_frame_kernel_path_when_the_run_has_it(mods, tmp_path):
    report, _agg = mods
    res = results()
    res["vnic_cost"]["runs"]["kernel-mtu/tcp"] = {"goodput_mbps": 100.0, "cpu_s_per_gb": 6.0}
    res["vnic_cost"]["runs"]["batched/tcp"].update(
        pump_wakeups_per_packet=0.04, tx_copies_per_byte=3.97, rx_copies_per_byte=3.0
    )
    md = report.markdown(res, str(tmp_path / "B.md"))
    # 24 CPU s/GB against 6 (MTU frames), not against 3 (TSO)
    assert "| d: batched VNIC TCP, lab CPU per byte / MTU-frame kernel path's | 4.00 |" in md
    assert "| batched/tcp | 67.6 | 24.00 | 4.00 |" in md
    assert "| 0.040 | 3.97 / 3.00 |" in md
    assert "4.00x the MTU-frame kernel path" in md


def test_several_runs_show_median_and_spread_and_unresolved_verdicts(mods, tmp_path):
    report, agg = mods
    runs = [
        results(diff=d, ratio=r, extra=e, cpu=c)
        for d, r, e, c in ((-844.5, 1.0, -22.0, 5.0), (2.0, 0.9, 1.0, 6.0), (3.0, 1.0, 4.0, 7.0))
    ]
    merged = agg.merge(runs)
    merged["runs"] = {
        "manifest": "results/x/manifest.json",
        "made": 4,
        "ok": 3,
        "failed": [{"run": 2, "reason": "exit status 1: boom"}],
        "files": ["a", "b", "c"],
        "headlines": report.headline_rows(runs),
    }
    md = report.markdown(merged, str(tmp_path / "B.md"))
    assert "Runs: 3 ok of 4 made; failed: run 2 (exit status 1: boom)" in md
    assert (
        "| tdma/idle | 1,400.1 | 1,402.1 [555.6..1,403.1] | +2.0 [-844.5..3.0] | "
        "not resolved on this machine |" in md
    )
    # ratio median 1.0, spread 0.1 > gap 0.05: not resolved; p99 extra median 1.0 within 10
    assert "| 1.000 [0.900..1.000]: not resolved on this machine |" in md
    assert "| 1.0 [-22.0..4.0]: not resolved on this machine |" in md
    assert (
        "| d: batched VNIC TCP, lab CPU per byte / kernel path's | 2.00 | 1.67 | 2.33 | 3 "
        "| <= 2 x | not resolved on this machine |"
    ) in md


def test_a_rewritten_page_keeps_the_notes_written_by_hand_and_the_tools_sections(mods, tmp_path):
    report, _agg = mods
    from tools import bench_section, bench_vnic

    page = tmp_path / "B.md"
    vnic = f"{bench_vnic.SECTION_BEGIN}\nthe VNIC's runs\n{bench_vnic.SECTION_END}"
    notes = (
        f"{bench_section.NOTES_BEGIN}\n## Notes\na cause found by hand\n{bench_section.NOTES_END}"
    )
    page.write_text(f"# old page\nold figures\n{vnic}\n\n{notes}\n")
    md = report.markdown(results(), str(page))
    assert "old figures" not in md  # the rest is rewritten
    assert vnic in md and notes in md and md.index(vnic) < md.index(notes)
    assert md.endswith(notes + "\n")
