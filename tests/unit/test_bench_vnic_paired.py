"""tools/bench_vnic_paired: a run's figures from its interleaved blocks (samples in the VM's
stalls left out, each side's own), and the verdicts over runs."""

from rtnet.stall import Stall, TakenSpans
from rtnet.tdma_stats import SlotMiss
from tools.bench_aggregate import MET, MISSED, UNRESOLVED
from tools.bench_vnic_paired import Block, figures, report

MS = 1_000_000
CYCLE_NS = MS


def block(kind, lo_ms, lateness_us, misses=(), goodput=None):
    """A 1 s block from ``lo_ms`` with one lateness sample a millisecond (``lateness_us``
    repeated) and ``misses`` as (at_ms, slots)."""
    b = Block(kind, lo_ms * MS, (lo_ms + 1000) * MS)
    b.lateness = {
        0: [((lo_ms + k) * MS, lateness_us[k % len(lateness_us)] * 1000) for k in range(1000)]
    }
    b.misses = [SlotMiss((lo_ms + at) * MS, 0, slots, 0) for at, slots in misses]
    b.goodput_mbps = goodput
    return b


def no_stalls():
    return TakenSpans([], 0)


def test_each_side_pools_its_own_blocks_and_the_figure_is_flow_minus_idle():
    blocks = [
        block("flow", 0, [10, 20], misses=[(5, 2)], goodput=70.0),
        block("idle", 1000, [10]),
        block("idle", 2000, [12], misses=[(3, 1)]),
        block("flow", 3000, [30], goodput=72.0),
    ]
    f = figures(blocks, no_stalls(), CYCLE_NS, 1, 100, log=lambda s: None)
    assert f["flow"]["lateness_p99_us"] == 30.0 and f["idle"]["lateness_p99_us"] == 12.0
    assert f["lateness_p99_diff_us"] == 18.0
    # 2 missed in 2,000 cycles against 1 in 2,000
    assert f["flow"]["missed_per_1000_cycles"] == 1.0
    assert f["idle"]["missed_per_1000_cycles"] == 0.5
    assert f["missed_diff_per_1000"] == 0.5 and f["missed_allowed_per_1000"] == 0.05
    assert f["flow"]["goodput_mbps"] == 71.0 and f["idle"]["goodput_mbps"] is None


def test_the_lateness_p99_is_also_given_by_station_outside_the_stalls():
    blocks = [block("flow", 0, [0]), block("idle", 1000, [0])]
    for b, master_us, slave_us in ((blocks[0], 5, 30), (blocks[1], 4, 6)):
        ats = [at for at, _ in b.lateness[0]]
        b.lateness = {
            0: [(at, master_us * 1000) for at in ats],
            1: [(at, slave_us * 1000) for at in ats],
        }
    blocks[0].lateness[1][700] = (700 * MS, 900_000)  # in the stall below
    spans = TakenSpans([Stall(0, 700 * MS, 701 * MS)], 2 * MS)
    f = figures(blocks, spans, CYCLE_NS, 2, 100, log=lambda s: None)
    assert f["flow"]["lateness_p99_us_by_station"] == [5.0, 30.0]
    assert f["idle"]["lateness_p99_us_by_station"] == [4.0, 6.0]
    lines = report([{"rates": {"100": f}}], [100])
    assert any("master/slave: 5.0/30.0" in line for line in lines), lines


def test_what_falls_in_a_stall_of_the_vm_is_left_out_and_counted_apart():
    # the hypervisor took a CPU for 1 ms at 500 ms: +-2 ms around it is the VM's
    stall = Stall(0, 500 * MS, 501 * MS)
    spans = TakenSpans([stall], 2 * MS)
    assert stall.cpu_taken
    blocks = [
        block("flow", 0, [10], misses=[(500, 3), (800, 1)]),
        block("idle", 1000, [10]),
    ]
    blocks[0].lateness[0][500] = (500 * MS, 900_000)  # 900 us late, inside the stall
    f = figures(blocks, spans, CYCLE_NS, 1, 100, log=lambda s: None)
    assert f["flow"]["lateness_in_stalls"] == 6  # 498..503 ms
    assert f["flow"]["lateness_samples"] == 994
    assert f["flow"]["lateness_p99_us"] == 10.0
    assert f["flow"]["missed"] == 1 and f["flow"]["missed_in_stalls"] == 3


def run(rate, lat_diff, flow_p99, miss_diff, idle_missed=1.0):
    return {
        "rates": {
            str(rate): {
                "link_rate_mbps": rate,
                "flow": {
                    "lateness_p99_us": flow_p99,
                    "missed_per_1000_cycles": idle_missed + miss_diff,
                    "goodput_mbps": 70.0,
                },
                "idle": {
                    "lateness_p99_us": flow_p99 - lat_diff,
                    "missed_per_1000_cycles": idle_missed,
                },
                "lateness_p99_diff_us": lat_diff,
                "missed_diff_per_1000": miss_diff,
                "missed_allowed_per_1000": 0.1 * idle_missed,
            }
        }
    }


def test_the_verdicts_follow_the_protocols_rule_over_runs():
    lines = report([run(100, d, 40.0, m) for d, m in ((1.0, 0.0), (2.0, 0.01), (0.5, 0.02))], [100])
    text = "\n".join(lines)
    assert "3 runs" in text
    assert f"flow - idle: 1.0 [0.5..2.0] us (target <= 5): {MET}" in text
    assert "flow - idle: 0.01 [0.00..0.02] (no target at this rate)" in text
    # a spread wider than the gap to the target is not resolved; a clear miss is missed
    lines = report([run(1000, d, 60.0, 1.0) for d in (1.0, 9.0, 4.0)], [1000])
    text = "\n".join(lines)
    assert f"(target <= 5): {UNRESOLVED}" in text
    assert f"0.10): {MISSED}" in text
    lines = report([run(1000, 1.0, 40.0, m) for m in (0.0, 0.02, 0.01)], [1000])
    assert f"(target <= 10% of idle's, 0.10): {MET}" in "\n".join(lines)
