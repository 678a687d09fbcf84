"""tools/bench_vnic_csw: a run's switches above idle per offered rate, by thread, and the
flag on a run whose idle blocks disagree."""

import pytest

from tools.bench_vnic_csw import idle_disagree, per_rate, report


def block(kind, seconds, packets, rt_vol, pump_vol, pump_invol=0, pump_wakeups=0, goodput=None):
    b = {
        "kind": kind,
        "wall_s": seconds,
        "vnic_packets": packets,
        "stack_csw": rt_vol + pump_vol + pump_invol,
        "csw_by_thread": {
            "rtnet-rt": {"vol": rt_vol, "invol": 0},
            "rtnet-vnic": {"vol": pump_vol, "invol": pump_invol},
        },
        "pump_wakeups": pump_wakeups,
    }
    if goodput is not None:
        b["goodput_mbps"] = goodput
    return b


def run(*flows, idle_rt=(4000, 4400)):
    """Two idle blocks of 2 s (the RT threads' switches ``idle_rt``: 2,100 a second on
    average; the pump's 10, 5 a second), the flows between them."""
    idles = [block("idle", 2.0, 0, n, 10, pump_wakeups=10) for n in idle_rt]
    return {"blocks": [idles[0], *flows, idles[1]]}


def test_switches_above_idle_are_per_second_and_per_packet_by_thread():
    r = run(block(30, 5.0, 25_000, rt_vol=12_000, pump_vol=2_525, pump_invol=500, goodput=30.0))
    row = per_rate(r)[30]
    assert row["rtnet-rt/vol"] == {"per_s": 300.0, "per_packet": 0.06}
    assert row["rtnet-vnic/vol"] == {"per_s": 500.0, "per_packet": 0.1}
    assert row["rtnet-vnic/invol"] == {"per_s": 100.0, "per_packet": 0.02}
    assert row["all"]["per_s"] == pytest.approx(900.0)
    assert row["all"]["per_packet"] == pytest.approx(0.18)
    assert row["packets_per_s"] == 5000.0 and row["goodput_mbps"] == 30.0


def test_the_report_has_a_row_per_rate_with_the_runs_spread():
    a = run(
        block(10, 5.0, 10_000, rt_vol=11_000, pump_vol=1_025),
        block(100, 5.0, 60_000, 10_500, 2_525),
    )
    b = run(
        block(10, 5.0, 10_000, rt_vol=11_500, pump_vol=1_025),
        block(100, 5.0, 60_000, 10_500, 2_525),
    )
    lines = report([a, b])
    assert lines[0].startswith("2 run(s)")
    rows = {int(ln.split()[0]): ln for ln in lines[2:4]}
    # 10 Mbit/s: (11,000 or 11,500)/5 - 2,100 + (1,025/5 - 5) = 300 or 400 switches/s
    assert "350 [300..400]" in rows[10] and "0.175 [0.150..0.200]" in rows[10]
    assert "500 [500..500]" in rows[100] and "0.042 [0.042..0.042]" in rows[100]


def test_a_run_whose_idle_blocks_disagree_is_flagged():
    # 2,005 and 2,205 switches a second: within 10% of the larger
    assert not idle_disagree(run()["blocks"])
    assert idle_disagree(run(idle_rt=(4000, 5000))["blocks"])  # 2,005 and 2,505
    flagged = run(block(10, 5.0, 100, 10_000, 100), idle_rt=(4000, 5000))
    flagged["idle_disagree"] = True
    assert "1 run(s) flagged" in report([flagged])[-1]
