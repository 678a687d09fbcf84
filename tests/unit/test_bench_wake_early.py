"""tools/bench_wake_early: one run's figures from a segment report, and the table of both
ways over the runs (medians with their spread)."""

from tools.bench_wake_early import figures, table


def station(role, p50, p99, missed, early=0.0):
    return {
        "role": role,
        "slot_lateness_us": {"p50": p50, "p99": p99},
        "missed_slots": missed,
        "wake_early_us": early,
    }


def report(slaves_p50, early, cpu):
    return {
        "cycles": 2000,
        "rt_cpu_s_per_s": cpu,
        "stations": [
            station("master", 25.0, 40.0, 4, early),
            station("backup", slaves_p50[0], 30.0, 2, early),
            station("slave", slaves_p50[1], 50.0, 0, early),
            station("slave", slaves_p50[2], 20.0, 0, early),
        ],
    }


def test_the_slaves_are_taken_apart_from_the_master():
    f = figures(report((3.0, 1.0, 2.0), 60.0, 0.3))
    assert f["slave_lateness_p50_us"] == 2.0  # the median of the slaves' medians
    assert f["slave_lateness_p99_us"] == 50.0  # the worst slave
    assert f["master_lateness_p50_us"] == 25.0
    assert f["missed_per_1000_cycles"] == 3.0  # 6 in 2,000 cycles, every station
    assert (f["rt_cpu_s_per_s"], f["wake_early_us"]) == (0.3, 60.0)


def test_the_table_puts_each_way_in_its_column():
    runs = [
        {"wake_early": on, "figures": figures(report((p, p, p), 60.0 * on, cpu))}
        for on, p, cpu in (
            (False, 20.0, 0.2),
            (True, 2.0, 0.3),
            (False, 30.0, 0.22),
            (True, 3.0, 0.31),
        )
    ]
    rows = table(runs)
    assert rows[2] == (
        "| slaves' slot lateness p50 (median of stations), us | 25.0 [20.0..30.0] | 2.5 [2.0..3.0] |"
    )
    assert "| RT threads' CPU, s/s | 0.210 [0.200..0.220] | 0.305 [0.300..0.310] |" in rows
