"""rtnet.vm_witness: which of a segment's slot misses and late messages the VM's stalls
explain (the demo's summary), counted from the stations' miss records and the messages'
lives against the spans the hypervisor took a CPU."""

from rtnet.stall import Stall, TakenSpans
from rtnet.tdma_stats import SlotMiss
from rtnet.vm_witness import lives_in_spans, misses_in_spans

SPANS = TakenSpans([Stall(0, 10_000, 20_000, queued_ns=0)], pad_ns=1_000)  # 9,000..21,000


def test_a_miss_counts_its_slots_when_a_span_covers_it():
    records = [
        SlotMiss(at_ns=9_000, woke_late_ns=60_000, slots=3, slot0=1),  # on the padded edge
        SlotMiss(at_ns=15_000, woke_late_ns=5_000_000, slots=10, slot0=5),
        SlotMiss(at_ns=21_001, woke_late_ns=70_000, slots=2, slot0=1),  # just after
        SlotMiss(at_ns=100, woke_late_ns=70_000, slots=4, slot0=2),
    ]
    assert misses_in_spans(records, SPANS) == 13
    assert misses_in_spans([], SPANS) == 0
    assert misses_in_spans(records, TakenSpans([], pad_ns=0)) == 0


def test_a_message_is_the_vms_when_its_life_meets_a_span():
    lives = [(0, 8_999), (0, 9_000), (12_000, 13_000), (20_000, 40_000), (21_001, 30_000)]
    assert lives_in_spans(lives, SPANS) == 3
