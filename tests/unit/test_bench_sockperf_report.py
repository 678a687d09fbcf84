"""tools/bench_sockperf.py without a lab (tools/sockperf_output.py and
tools/sockperf_report.py): sockperf's summaries parsed, a run's targets and flags derived,
the report over runs (a flagged run left out) and its BENCHMARKS.md section replaced
between its markers."""

import pytest

from tools import sockperf_output, sockperf_report

PINGPONG = """sockperf: [Total Run] RunTime=1.000 sec; Warm up time=400 msec; SentMessages=42516; ReceivedMessages=42515
sockperf: ========= Printing statistics for Server No: 0
sockperf: [Valid Duration] RunTime=0.550 sec; SentMessages=26145; ReceivedMessages=26145
sockperf: \x1b[2;35m====> avg-rtt=20.993 (std-dev=37.418)\x1b[0m
sockperf: # dropped messages = 0; # duplicated messages = 0; # out-of-order messages = 0
sockperf: \x1b[2;35mTotal 26145 observations\x1b[0m; each percentile contains 261.45 observations
sockperf: ---> <MAX> observation = 3715.707
sockperf: ---> percentile 99.999 = 3715.707
sockperf: ---> percentile 99.990 = 1078.426
sockperf: ---> percentile 99.900 =  185.857
sockperf: ---> percentile 99.000 =   58.890
sockperf: ---> percentile 90.000 =   22.331
sockperf: ---> percentile 50.000 =   18.524
sockperf: ---> <MIN> observation =   13.425
"""
THROUGHPUT = """sockperf: Total of 105629 messages sent in 1.000 sec
sockperf: Summary: Message Rate is 105578 [msg/sec]
"""
SERVER = "sockperf: Test end (interrupted by user)\nsockperf: Total 119956 messages received and handled\n"


def test_sockperf_summaries_are_parsed():
    sp = sockperf_output
    pp = sp.parse_pingpong(PINGPONG)
    assert (pp["sent"], pp["received"], pp["samples"], pp["dropped"]) == (26145, 26145, 26145, 0)
    assert (pp["p50"], pp["p99"], pp["p99.9"], pp["max"], pp["min"]) == (
        18.524,
        58.89,
        185.857,
        3715.707,
        13.425,
    )
    assert sp.parse_throughput(THROUGHPUT) == {"sent": 105629, "seconds": 1.0}
    assert sp.parse_server_total(SERVER) == 119956
    with pytest.raises(sp.BenchError):
        sp.parse_pingpong("sockperf: ERROR: program exits because of an error.")


def run(k, kernel, end, nomac, native, tdma_flood, posix=None):
    def pp(p50, p999=None):
        return {"pp": {"p50": p50, "p99": p50 * 2, "p99.9": p999 or p50 * 3, "max": p50 * 9}}

    res = {
        "run_index": k,
        "settings": {"seconds": 5.0, "tdma": {"guard_us": 150}},
        "columns": {
            "kernel": {"idle": pp(kernel), "flood": pp(kernel, 250.0)},
            "nomac": {"idle": pp(nomac)},
            "native": {"idle": pp(native)},
            "tdma": {"idle": pp(999.0), "flood": pp(999.0, tdma_flood)},
        },
        "extra": {"kernel_idle_end": {"p50": end}, "posix_rt": {"p50": posix or native}},
    }
    sockperf_report.derive(res)
    return res


def test_a_run_derives_its_targets_and_is_flagged_when_its_baselines_disagree():
    r = run(1, 30.0, 32.0, 66.0, 65.0, 1900.0)
    assert r["flags"] == []
    assert r["derived"]["interposer_p50_us"] == 1.0
    assert r["derived"]["nomac_over_kernel_p50"] == 2.2
    assert r["derived"]["tdma_flood_p999_us"] == 1900.0
    bad = run(2, 18.7, 28.7, 80.0, 70.0, 3000.0)
    assert len(bad["flags"]) == 1 and "idle baselines disagree" in bad["flags"][0]


def test_the_report_leaves_a_flagged_run_out_and_judges_each_target(tmp_path):
    sp = sockperf_report
    runs = [
        run(1, 30.0, 32.0, 66.0, 65.0, 1900.0),
        run(2, 18.7, 28.7, 80.0, 70.0, 9000.0),
        run(3, 31.0, 30.0, 68.0, 65.5, 1950.0),
    ]
    text, merged = sp.report(runs, [{"run": 1}, {"run": 2}, {"run": 3}])
    assert "over 2 runs (1 flagged run(s) left out)" in text
    assert "Run 2 flagged: idle baselines disagree" in text
    assert float(merged["derived"]["tdma_flood_p999_us"]) == 1925.0  # runs 1 and 3 only
    assert "TDMA p99.9 round trip under the flood: 1,925.00 [1,900.00..1,950.00] us" in text
    assert "(target <= 2000 us; kernel UDP under the same flood: p99.9 250.0 us): met" in text
    assert "| round trip p50, us | 30.5 [30.0..31.0] | 67.0 [66.0..68.0] |" in text
    # the section is replaced between its markers, the rest of the page kept
    md = tmp_path / "B.md"
    md.write_text("# Benchmarks\n\nbefore\n")
    sec = sp.section(text, runs, str(tmp_path / "manifest.json"))
    sp.update_benchmarks(str(md), sec)
    sp.update_benchmarks(str(md), sec.replace("Debian's", "Debian 12's"))
    page = md.read_text()
    assert page.count(sp.SECTION_BEGIN) == 1 and page.count(sp.SECTION_END) == 1
    assert "before" in page and "Debian 12's sockperf" in page
    assert sp.kept_section(str(md)).startswith(sp.SECTION_BEGIN)
