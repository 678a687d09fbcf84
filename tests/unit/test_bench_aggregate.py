"""tools/bench_aggregate: median, min and max over runs, and the verdict on a target."""

import json

import pytest

from tools import bench_aggregate


@pytest.fixture
def agg():
    return bench_aggregate


def test_spread_is_the_median_with_min_and_max(agg):
    f = agg.spread([5.0, 1.0, 9.0, 3.0])
    assert (float(f), f.lo, f.hi, f.n) == (4.0, 1.0, 9.0, 4)  # even count: the mean of 3, 5
    assert agg.spread([None, float("nan"), 2]) == 2 and agg.spread([None, 2]).n == 1
    assert agg.spread([]) is None and agg.spread([float("inf")]) is None


def test_a_target_is_met_only_when_the_median_meets_it(agg):
    assert agg.verdict(agg.spread([10.8, 11.5, 11.0]), 10, "at_most") == "missed"
    # a run on the other side of the target than the median always leaves it unresolved
    assert (
        agg.verdict(agg.spread([9.9, 11.5, 10.9]), 10, "at_most") == "not resolved on this machine"
    )
    assert agg.verdict(agg.spread([9.0, 9.5, 9.2]), 10, "at_most") == "met"
    assert agg.verdict(agg.spread([100.0, 100.0, 100.0]), 100, "at_least") == "met"
    assert agg.verdict(agg.spread([90.0, 91.0, 92.0]), 100, "at_least") == "missed"


def test_a_spread_wider_than_the_gap_to_the_target_is_not_resolved(agg):
    # median 12 is 2 above the target, but the runs span 8: the machine cannot say
    assert (
        agg.verdict(agg.spread([8.0, 12.0, 16.0]), 10, "at_most") == "not resolved on this machine"
    )
    # the same spread far from the target decides it
    assert agg.verdict(agg.spread([28.0, 32.0, 36.0]), 10, "at_most") == "missed"
    # a spread equal to the gap is resolved (only larger is not)
    assert agg.verdict(agg.spread([7.0, 8.0, 9.0]), 10, "at_most") == "met"
    # RFC 2544 at line rate in two runs of three: median 100, but one run 95
    assert (
        agg.verdict(agg.spread([100.0, 95.0, 100.0]), 100, "at_least")
        == "not resolved on this machine"
    )


def test_a_difference_target_is_two_sided(agg):
    # UDP p99 844 us faster than raw is no evidence for "within 5 us": it is missed
    assert agg.verdict(-844.5, 5, "abs_at_most") == "missed"
    assert agg.verdict(-844.5, 5, "at_most") == "met"  # what one-sided said
    assert (
        agg.verdict(agg.spread([-3.0, 2.0, 1.0]), 5, "abs_at_most")
        == "not resolved on this machine"
    )  # spread 5 > gap 4
    assert agg.verdict(agg.spread([-1.0, 0.5, 1.0]), 5, "abs_at_most") == "met"
    with pytest.raises(ValueError):
        agg.verdict(1.0, 5, "near")


def test_one_run_is_never_unresolved(agg):
    assert agg.verdict(10.0, 10, "at_most") == "met"
    assert agg.verdict(agg.spread([10.5]), 10, "at_most") == "missed"


def test_merge_takes_the_median_of_every_number_and_keeps_the_rest_from_the_first(agg):
    runs = [
        {
            "a": {
                "p99": 10.0,
                "n": 3,
                "ok": True,
                "name": "x",
                "cdf": [1.0, 2.0],
                "trials": [{"rate": 100.0}],
            }
        },
        {
            "a": {
                "p99": 30.0,
                "n": 5,
                "ok": False,
                "name": "y",
                "cdf": [3.0, 6.0],
                "trials": [{"rate": 50.0}, {"rate": 75.0}],
                "extra": 7.0,
            }
        },
        {"a": {"p99": 20.0, "n": 4, "ok": False, "name": "z", "cdf": [2.0, 4.0], "trials": []}},
    ]
    m = agg.merge(runs)["a"]
    assert float(m["p99"]) == 20.0 and (m["p99"].lo, m["p99"].hi, m["p99"].n) == (10, 30, 3)
    assert m["n"] == 4 and m["ok"] is True and m["name"] == "x"
    assert [float(x) for x in m["cdf"]] == [2.0, 4.0]
    assert m["trials"] == [{"rate": 100.0}]  # per-trial details: the first run's
    assert m["extra"] == 7.0  # in one run only: that run's
    same = agg.merge([{"k": 3, "x": 2.5}, {"k": 3, "x": 2.5}])
    assert same == {"k": 3, "x": 2.5} and type(same["k"]) is int and type(same["x"]) is float
    # a Figure is a float: the report's arithmetic and json both take it
    assert json.loads(json.dumps(agg.merge(runs)))["a"]["p99"] == 20.0
    assert agg.merge([{"k": 3}]) == {"k": 3} and isinstance(agg.merge([{"k": 3}])["k"], int)
    with pytest.raises(ValueError):
        agg.merge([])


def test_show_prints_the_spread_over_several_runs(agg):
    assert agg.show(agg.spread([636.0, 673.3, 734.0]), 0) == "673 [636..734]"
    assert agg.show(agg.spread([1.5]), 1) == "1.5" and agg.show(12345) == "12,345"
    assert agg.show(None) == "-" and agg.show(float("nan")) == "-"


def test_verdict_line_and_table_show_median_spread_target_and_verdict(agg):
    line = agg.verdict_line(
        "UDP minus raw p99", agg.spread([-844.5, 3.0, 2.0]), 5, "abs_at_most", "us"
    )
    assert line == (
        "UDP minus raw p99: 2.0 us [-844.5..3.0] over 3 runs (target within +- 5 us): "
        "not resolved on this machine"
    )
    table = agg.headline_table(
        [
            {
                "label": "zero-loss 64 B",
                "values": [100.0, 100.0, 99.0],
                "target": 100,
                "kind": "at_least",
                "unit": "%",
            },
            {"label": "ceiling", "values": [5.0, 6.0], "kind": None},
            {"label": "nothing", "values": [None], "target": 1, "kind": "at_most"},
        ]
    )
    rows = table.splitlines()
    assert rows[2] == (
        "| zero-loss 64 B | 100.0 | 99.0 | 100.0 | 3 | >= 100 % | not resolved on this machine |"
    )
    assert rows[3] == "| ceiling | 5.5 | 5.0 | 6.0 | 2 | - | - |"
    assert rows[4] == "| nothing | - | - | - | 0 | - | - |"
