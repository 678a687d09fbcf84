"""The machine and settings of a tools/bench_suite.py results envelope, for the tests of
its runs and its report without a lab (bench_suite_report.markdown reads both)."""


def machine() -> dict:
    """What suite_lab.machine() records, made up."""
    return {
        "cpu": "test CPU",
        "ncpus": 2,
        "mem_gib": 1.0,
        "os": "test",
        "kernel": "k",
        "kernel_version": "v",
        "cmdline_rt": "none",
        "preempt": "none",
        "governor": None,
        "python": "3",
    }


def settings(**more) -> dict:
    """A run's settings as suite_measure.measure records them, with ``more`` added."""
    return {
        "rt_cpu": 1,
        "load_cpus": "0",
        "station_priority": 90,
        "app_priority": 80,
        "subscriber_priority": 70,
        "pm_qos": "held",
        "lab_wire": "a test bridge",
        "xdp": "test XDP",
        "cycle_us": 1000,
        "link_rate_mbps": 100,
        "flood": "none",
        "messages_per_cell": 10,
        "chunks": 1,
        "trial_s": 2.0,
        "resolution_pct": 1.0,
        "max_trials": 8,
        "loss_verify": 1,
        "disturbed_ms": 5.0,
        "retry_disturbed": 3,
        "confirm_s": 30.0,
        "latency_trials": 20,
        "latency_trial_s": 1.0,
        **more,
    }
