"""tools/bench_cost.py on a small scale: callgrind's instruction counts of
a stage are positive, normalised per unit, and the same on every run.

Determinism is the property the cost benchmark stands on (issue 23): the
harness runs fixed frames on a virtual clock, so two runs must agree within
1% (in practice exactly), and the figure per frame must not depend on how
many frames were counted.  Only stages without a NIC run here (no root, no
namespace): the application send, the 802.1CB tagging per copy, and the socket
interposer's sendto() and recvfrom() beside the library's UDP calls.
"""

import json
import os
import subprocess
import sys

import pytest
from conftest import require_tool

from tools import cost_report

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def harness():
    require_tool("valgrind")
    require_tool("make")
    r = subprocess.run(
        [
            "make",
            "-s",
            "-C",
            os.path.join(ROOT, "csrc"),
            "build/bench/cost_stages",
            "build/bench/cost_preload",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]


def run_tool(*args, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "tools.bench_cost", "--no-build", "--no-netns", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


def test_counts_are_positive_per_unit_and_repeat(harness, tmp_path):
    out = tmp_path / "cost.json"
    r = run_tool(
        "--stages", "app_send,frer_send", "--frames", "40", "--repeat", "2", "--out", str(out)
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "agree within 1%" in r.stdout
    res = json.loads(out.read_text())
    assert res["repeat_agrees"] is True
    send, frer = res["stages"]["app_send"], res["stages"]["frer_send"]
    assert send["unit"] == "frame" and send["units"] == 40 and send["regions"] == 40
    assert frer["unit"] == "copy" and frer["units"] == 80 and frer["regions"] == 40
    for st in (send, frer):
        assert st["ir_per_unit"] > 0
        # per unit: what was collected, less the brackets' own cost, over the units
        expect = (st["ir_collected"] - st["regions"] * res["empty_ir_per_region"]) / st["units"]
        assert st["ir_per_unit"] == pytest.approx(expect)
        a, b = st["passes"]
        assert abs(a - b) <= 0.01 * min(a, b)


def test_interposer_stages_count_and_repeat(harness, tmp_path):
    """sendto() and recvfrom() through the socket interposer, next to the library's
    calls on the same UDP socket: positive, and exact on a second pass."""
    out = tmp_path / "cost.json"
    r = run_tool(
        "--stages",
        "app_sendto,preload_send,app_recvfrom,preload_recv",
        "--frames",
        "40",
        "--repeat",
        "2",
        "--out",
        str(out),
        timeout=240,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "interposer's own cost: preload_send - app_send, preload_recv - app_recv" in r.stdout
    res = json.loads(out.read_text())
    assert res["repeat_agrees"] is True
    st = res["stages"]
    for name in ("app_sendto", "preload_send", "app_recvfrom", "preload_recv"):
        assert st[name]["units"] == 40 and st[name]["regions"] == 40
        assert st[name]["ir_per_unit"] > 0
        a, b = st[name]["passes"]
        assert abs(a - b) <= 0.01 * min(a, b)
    # the interposer sends through rtn_app_sendto(): never cheaper than the call alone
    assert st["preload_send"]["ir_per_unit"] > st["app_sendto"]["ir_per_unit"]
    # each datagram taken empties the ring: the station wrote the armed notify eventfd once
    assert st["preload_recv"]["per_unit"]["rx_notifies"] == 1
    ip = res["interposer"]
    assert ip["send"]["minus_app_sendto"] == pytest.approx(
        st["preload_send"]["ir_per_unit"] - st["app_sendto"]["ir_per_unit"]
    )


def test_per_frame_figure_does_not_depend_on_the_count(harness, tmp_path):
    figures = []
    for frames in (20, 60):
        out = tmp_path / f"cost{frames}.json"
        r = run_tool("--stages", "app_send", "--frames", str(frames), "--out", str(out))
        assert r.returncode == 0, r.stderr[-2000:]
        figures.append(json.loads(out.read_text())["stages"]["app_send"]["ir_per_unit"])
    assert figures[0] == pytest.approx(figures[1], rel=0.01)


def test_compare_prints_before_and_after(harness, tmp_path):
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    assert run_tool("--stages", "frer_send", "--frames", "20", "--out", str(old)).returncode == 0
    r = run_tool(
        "--stages", "frer_send", "--frames", "20", "--out", str(new), "--compare", str(old)
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Before/after" in r.stdout
    # the same code twice: no change
    assert any(
        ln.startswith("frer_send") and ln.rstrip().endswith("+0.0%") for ln in r.stdout.splitlines()
    )


@pytest.mark.parametrize(
    "args, says",
    [
        (["--stages", "nope"], "unknown stage nope"),
        (["--frames", "0"], "invalid frames"),
        (["--repeat", "x"], "invalid repeat"),
        (["--stages", "anchor"], "needs the namespace"),
    ],
)
def test_bad_input_is_one_line(args, says):
    r = run_tool(*args, timeout=30)
    assert r.returncode == 2
    assert says in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_compare_with_a_file_that_is_not_a_result(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    r = run_tool("--stages", "app_send", "--compare", str(bad), timeout=30)
    assert r.returncode == 2
    assert "not JSON" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_benchmarks_section_is_replaced_not_repeated(harness, tmp_path):
    md = tmp_path / "BENCHMARKS.md"
    md.write_text("# Benchmarks\n\nother sections\n")
    for _ in range(2):
        r = run_tool(
            "--stages",
            "frer_recover",
            "--frames",
            "20",
            "--out",
            str(tmp_path / "c.json"),
            "--benchmarks",
            str(md),
        )
        assert r.returncode == 0, r.stderr[-2000:]
    text = md.read_text()
    assert text.startswith("# Benchmarks\n\nother sections\n")
    assert text.count("## Cost per frame") == 1
    assert "| frer_recover | copy |" in text
    assert "`perf stat -e instructions`" in text


def test_the_suite_report_keeps_the_cost_section(tmp_path):
    """bench_suite.py regenerates BENCHMARKS.md; the cost section is bench_cost's and stays."""
    md = tmp_path / "BENCHMARKS.md"
    section = (
        cost_report.SECTION_BEGIN + "\n## Cost per frame\n\nfigures\n" + cost_report.SECTION_END
    )
    md.write_text("# Benchmarks\n\nold suite text\n\n" + section + "\n")
    assert cost_report.kept_section(str(md)) == section + "\n"
    assert cost_report.kept_section(str(tmp_path / "missing.md")) == ""
