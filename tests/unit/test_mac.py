"""rtnet.mac: the one parser and formatter of MAC addresses."""

import pytest

from rtnet.errors import ConfigError
from rtnet.mac import CANONICAL_MAC, format_mac, parse_mac


@pytest.mark.parametrize(
    "text, raw",
    [
        ("02:52:54:00:00:01", b"\x02\x52\x54\x00\x00\x01"),
        ("FF:ff:Ff:fF:ff:ff", b"\xff" * 6),
        ("2:0:0:0:0:a", b"\x02\x00\x00\x00\x00\x0a"),  # ether_aton() takes single digits
    ],
)
def test_parse_should_read_six_hex_groups(text, raw):
    assert parse_mac(text) == raw


def test_parse_should_take_six_raw_bytes_as_they_are():
    assert parse_mac(b"\x02RT\x00\x00\x07") == b"\x02RT\x00\x00\x07"
    assert parse_mac(bytearray(6)) == bytes(6)
    assert parse_mac(memoryview(b"abcdef")) == b"abcdef"


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "02:52:54:00:00",
        "02:52:54:00:00:01:02",
        "02:52:54:00:00:001",
        "02-52-54-00-00-01",
        "0x2:52:54:00:00:01",
        "+2:52:54:00:00:01",
        " 2:52:54:00:00:01",
        "02:52:54:00:00:01\n",
        "g2:52:54:00:00:01",
        "02::54:00:00:01",
        "٠٢:52:54:00:00:01",  # Arabic-Indic digits
        None,
        2,
        0x025254000001,
        ["02"] * 6,
    ],
)
def test_parse_should_refuse_everything_else_with_one_line(bad):
    with pytest.raises(ConfigError) as e:
        parse_mac(bad)
    assert "\n" not in str(e.value) and "MAC address" in str(e.value)


@pytest.mark.parametrize("size", [0, 5, 7, 1500])
def test_parse_should_refuse_raw_bytes_of_another_length(size):
    with pytest.raises(ValueError, match=f"of {size} bytes"):
        parse_mac(bytes(size))


def test_format_should_write_the_canonical_form_parse_reads_back():
    for raw in (bytes(6), b"\xff" * 6, bytes(range(6)), b"\x02\x52\x54\x00\x00\x20"):
        text = format_mac(raw)
        assert CANONICAL_MAC.fullmatch(text) and text == text.lower()
        assert parse_mac(text) == raw
    assert format_mac(bytearray(b"\x02RT\x00\x00\x0a")) == "02:52:54:00:00:0a"


def test_format_should_refuse_a_buffer_that_is_not_six_bytes():
    with pytest.raises(ValueError):
        format_mac(b"\x00" * 5)
