"""tools/bench_sched_delay.py: reading perf sched timehist's rows."""

from tools.bench_sched_delay import switch_ins

# perf sched timehist: one row per task switched out (time, cpu, task, wait, sch delay, run)
TIMEHIST = """\
           time    cpu  task name                       wait time  sch delay   run time
                        [tid/pid]                          (msec)     (msec)     (msec)
--------------- ------  ------------------------------  ---------  ---------  ---------
   100.000100 [0000]  rtnet-vnic[12/10]                   0.000      0.002      0.080
   100.000130 [0000]  rtnet-rt[11/10]                     0.970      0.031      0.025
   100.000140 [0001]  <idle>                              0.000      0.000      0.500
   100.000150 [0001]  rtnet-rt[13/10]                     0.990      0.004      0.010
   100.000200 [0000]  iperf3[20/20]                       0.100      0.001      0.050
"""


def test_each_rt_switch_in_is_named_with_the_task_that_left_the_cpu_for_it():
    rows = sorted(switch_ins(TIMEHIST))
    assert [(cpu, prev) for cpu, prev, _ in rows] == [(0, "rtnet-vnic"), (1, "<idle>")]
    assert [round(d, 1) for _, _, d in rows] == [31.0, 4.0]


def test_rows_that_are_not_switches_are_skipped():
    assert switch_ins("garbage\n[0000] x y\n   1.0 [0000]  rtnet-rt[1/1]  a b c\n") == []
