"""The two-port station's settings, as a file, rtnetd and Station take them, and its
status lines (no root: nothing is opened)."""

import pytest

from rtnet import config
from rtnet._lowlevel import ffi, lib
from rtnet.errors import ConfigError
from rtnet.options import OPTIONS
from rtnet.station import _fill_second_port
from rtnet.stationctl import format_frer


def toml(text):
    return config.parse_toml(text, "rtnet.toml")


def test_one_port_by_default_with_the_stations_recovery_defaults():
    cfg = toml("")
    assert cfg.redundant_dev is None
    assert (cfg.frer_history_len, cfg.frer_reset_ms) == (lib.RTN_STATION_FRER_HISTORY, 2000)
    assert OPTIONS["link.frer_history_len"].limits == (2, 1024)  # 802.1CB's range


def test_link_section_names_the_second_port_and_its_recovery():
    cfg = toml(
        "[link]\nredundant_dev = 'rteth1'\nfrer_history_len = 64\nfrer_reset_ms = 0\n"
        "[[channel]]\nethertype = 0x88B5\nredundant = true\n"
        "[[channel]]\nethertype = 0x88B7\n"
    )
    assert (cfg.redundant_dev, cfg.frer_history_len, cfg.frer_reset_ms) == ("rteth1", 64, 0)
    assert [c.redundant for c in cfg.channels] == [True, False]


@pytest.mark.parametrize(
    "text, message",
    [
        ("[link]\nredundant_dev = 'rteth0'", r"link\.redundant_dev: 'rteth0' is the first port"),
        ("[link]\nredundant_dev = 'a/b'", r"link\.redundant_dev: 'a/b': "),
        ("[link]\nredundant_dev = 7", r"link\.redundant_dev: 7 is not a name"),
        ("[link]\nfrer_history_len = 1", r"link\.frer_history_len: 1 below minimum 2"),
        ("[link]\nfrer_history_len = 1025", r"link\.frer_history_len: 1025 above maximum 1024"),
        ("[link]\nfrer_reset_ms = 3600001", r"link\.frer_reset_ms: 3600001 above maximum"),
        (
            "[[channel]]\nethertype = 0x88B5\nredundant = 1",
            r"channel\[0\]\.redundant: 1 is not true",
        ),
    ],
)
def test_bad_two_port_settings_are_one_line_naming_the_key(text, message):
    with pytest.raises(ConfigError, match=r"^rtnet\.toml: " + message):
        toml(text)


def test_the_second_port_gets_the_first_ports_socket_settings():
    opts = ffi.new("struct rtn_station_opts *")
    keep = _fill_second_port(opts, "rteth0", None, 0, (0x88B5,), "auto", "auto", 32, 2000)
    assert keep == [] and opts.xsk_b.ifname == ffi.NULL
    assert (opts.frer_history, opts.frer_reset_ms) == (32, 2000)
    keep = _fill_second_port(opts, "rteth0", "rteth1", 0, (0x88B5,), "skb", True, 8, 10)
    assert ffi.string(opts.xsk_b.ifname) == b"rteth1"
    assert opts.xsk_b.zerocopy == lib.RTN_XSK_ZEROCOPY  # demanded for both ports alike
    assert list(opts.xsk_b.ethertypes)[: opts.xsk_b.n_ethertypes] == [0x88B5]
    assert opts.xsk_b.mode == lib.RTN_XDP_MODE_SKB and opts.frer_history == 8
    for dev, history in (("rteth0", 32), ("a b", 32), ("rteth1", 1)):
        with pytest.raises(ConfigError):
            _fill_second_port(opts, "rteth0", dev, 0, (), "auto", "auto", history, 2000)


def test_status_shows_ports_and_streams_only_with_two_ports():
    counters = {"passed": 5, "discarded": 4, "out_of_order": 1, "rogue": 0, "tagless": 0}
    frer = {
        "ports": 2,
        "history_len": 32,
        "reset_ms": 2000,
        "streams_refused": 0,
        "tx_redundant": 9,
        "port": [
            {
                "rx_frames": 10,
                "rx_tagged": 9,
                "rx_untagged": 1,
                "bad_tags": 0,
                "tx_copies": 9,
                "tx_errors": 0,
            }
        ]
        * 2,
        "streams": [
            {
                "src": "02:52:54:00:00:01",
                "ethertype": 0x9021,
                "lost": 2,
                "resets": 1,
                "total": counters,
                "port": [counters, counters],
            }
        ],
    }
    text = "\n".join(format_frer(frer))
    assert "IEEE 802.1CB on 2 ports: history 32, reset 2000 ms, 9 frames sent on both" in text
    assert "port 1: rx 10 (tagged 9, untagged 1, bad tags 0)" in text
    assert "stream 02:52:54:00:00:01 0x9021:" in text and "port 0 5/4/1/0/0" in text
    assert "lost 2, resets 1" in text
    assert format_frer(dict(frer, ports=1)) == [] and format_frer(None) == []
