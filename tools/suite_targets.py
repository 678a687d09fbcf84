"""The targets tools/bench_suite.py's report judges (tools/bench_aggregate.verdict):
DESIGN.md's, and the issues' that set them."""

from __future__ import annotations

from tools.suite_config import CYCLE_US

T_GATE_CYCLES = 2  # RT application behind the gate: p99.9 under 2 cycles
T_GATE_P999_US = T_GATE_CYCLES * CYCLE_US
T_WAKE_RATIO = 1.1  # DESIGN.md: RT thread wake-up p99 within 1.1x of cyclictest's
T_SLOT_EXTRA_US = 10  # DESIGN.md: slot lateness p99 <= cyclictest p99 + 10 us
T_UDP_P99_US = 5.0  # issue 13: UDP/IPv4 and the raw EtherType agree within 5 us at p99
T_VNIC_CSW = 0.01  # DESIGN.md: batched VNIC <= 0.01 context switches per packet
T_VNIC_CPU_RATIO = 2.0  # DESIGN.md: VNIC CPU per byte <= 2x the veth kernel path
