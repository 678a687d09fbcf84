"""`rtnetctl status`'s VNIC lines: what the VNIC moved and dropped, what arrived malformed
and from which side, and what its pump did, as `ip -s link` gives a device's errors, so a
user sees the counters the bad-input rules promise without reading JSON."""

from rtnet.stationctl import _vnic_lines

COUNTERS = dict(
    tap_rx=10,
    tap_rx_bytes=15_000,
    tap_tx=20,
    tap_tx_bytes=30_000,
    tx_dropped=1,
    rx_dropped=2,
    queue_drops=3,
    rx_bad=4,
    tx_bad=5,
    tap_errors=6,
    ring_full=7,
    pump_wakeups=8,
    pump_kicks=9,
    tap_reads=11,
    tap_writes=12,
    pump_yields=13,
)


def test_every_error_counter_is_shown_with_the_side_it_came_from():
    lines = _vnic_lines({"mode": "batched", **COUNTERS}, after_send=14)
    text = "\n".join(lines)
    assert lines[0].startswith("  vnic batched: from tap 10 (15000 B), to tap 20 (30000 B)")
    assert "dropped tx 1 rx 2, queue drops 3" in text
    assert "left until after a slot's send 14 times" in text
    assert "malformed from the wire 4" in text
    assert "bad vnet headers from Linux 5" in text
    assert "TAP read/write errors 6" in text
    assert "ring to the wire full 7 times" in text
    assert "8 wake-ups (9 by the RT thread), 11 TAP reads, 12 TAP writes" in text
    assert "13 writes held for an RT wake-up" in text


def test_a_station_that_never_had_a_vnic_says_so_in_one_line():
    assert _vnic_lines({"mode": "off", **dict.fromkeys(COUNTERS, 0)}, 0) == ["  vnic off"]


def test_a_detached_vnic_keeps_showing_what_it_counted():
    lines = _vnic_lines({"mode": "off", **dict.fromkeys(COUNTERS, 0), "rx_bad": 2}, 0)
    assert len(lines) == 3 and "malformed from the wire 2" in lines[1]


def test_a_daemon_that_reports_fewer_counters_is_shown_with_zeros():
    lines = _vnic_lines({"mode": "batched", "tap_rx": 1}, 0)
    assert "from tap 1 (0 B)" in lines[0] and "ring to the wire full 0 times" in lines[1]
