"""tools/bench_vm_costs: the program's output read strictly, figures over runs with the
flag on runs that disagree, and the C program built and run for every figure."""

import os
import tempfile

import pytest
from conftest import require_tool

from tools.bench_vm_costs import FIGURES, CostError, build, parse, report, run_once, summarize


def test_parse_reads_the_programs_lines():
    got = parse("syscall_ns 71.3\ntimer_arm_earliest 3.80\n\nkick_woken 8.27\n")
    assert got == {"syscall_ns": 71.3, "timer_arm_earliest": 3.8, "kick_woken": 8.27}


@pytest.mark.parametrize(
    "text, why",
    [
        ("", "printed nothing"),
        ("syscall_ns\n", "unexpected"),
        ("syscall_ns 1 2\n", "unexpected"),
        ("rm_rf 1\n", "unexpected"),
        ("syscall_ns 1\nsyscall_ns 2\n", "unexpected"),
        ("syscall_ns fast\n", "is no number"),
        ("syscall_ns -1\n", "out of range"),
        ("syscall_ns nan\n", "out of range"),
        ("syscall_ns inf\n", "out of range"),
        ("syscall_ns 1\x1b[2J 1\n", "unexpected"),
    ],
)
def test_parse_refuses_anything_else_in_one_line(text, why):
    with pytest.raises(CostError) as e:
        parse(text)
    assert why in str(e.value) and "\n" not in str(e.value)


def test_summarize_takes_the_median_and_flags_runs_that_disagree():
    runs = [
        {"syscall_ns": 70.0, "timer_arm_earliest": 3.0},
        {"syscall_ns": 72.0, "timer_arm_earliest": 9.0},
        {"syscall_ns": 71.0, "timer_arm_earliest": 4.0},
    ]
    s = summarize(runs)
    assert float(s["syscall_ns"]["figure"]) == 71.0
    assert (s["syscall_ns"]["figure"].lo, s["syscall_ns"]["figure"].hi) == (70.0, 72.0)
    assert not s["syscall_ns"]["disagree"]
    assert s["timer_arm_earliest"]["disagree"]  # 9 against 3
    assert "timer_wakeup_1ms" not in s  # not measured: not reported
    text = report(s, held=True)
    assert "FLAG: runs disagree" in text.splitlines()[2]
    assert "held at 0" in text.splitlines()[0]


def test_the_program_builds_and_prints_every_figure():
    require_tool("gcc")
    with tempfile.TemporaryDirectory() as tmp:
        got = run_once(build(tmp), quick=True)
    want = set(FIGURES)
    if (os.cpu_count() or 1) < 2:
        want -= {"handoff_cross_cpu", "kick_waker", "kick_woken"}
    assert set(got) == want
    assert all(v >= 0 for v in got.values())
