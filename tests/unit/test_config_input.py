"""Hostile configuration files: every one loads or is refused with one clear line.

The cases of the malformed-file survey (tracebacks on non-UTF-8 text, huge
numbers, deep nesting, NUL bytes; wrong values that were accepted) one by
one, then hypothesis: random bytes, random mutations of the sample files and
random rtnet.toml / rtnet.conf / tdma.conf text either load or raise
ConfigError with a single printable line, never anything else.
"""

import os
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rtmac.tdma_config import MAX_CAL_REQUESTS
from rtnet import cli, config, configfile, daemon, rtnetconf
from rtnet.errors import ConfigError

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "..", "..", "examples", "rtnet.toml")) as _f:
    EXAMPLE_TOML = _f.read()
MASTER_TOML = """[tdma]
role = "master"
cycle_us = 1000
[[tdma.slot]]
id = 0
offset_us = 0
size = 200
"""
RTNET_CONF = """RT_DRIVER="rt_eepro100"
IPADDR="10.0.0.1"
TDMA_MODE="master"
TDMA_SLAVES="10.0.0.2 10.0.0.3"
TDMA_CYCLE="5000"
TDMA_OFFSET="200"
"""
TDMA_CONF = """master:
ip 10.0.0.1
cycle 5000
slot 0 0
slot 1 1000 1/2 400

slave:
ip 10.0.0.3
slot 0 2000 1/1 400
slot 1 3000 2/2 400 0
"""


def one_line_error(exc: ConfigError, source: str | None = None) -> str:
    msg = str(exc)
    assert msg and msg.isprintable() and "\n" not in msg, repr(msg)
    assert len(msg) < 600, msg
    if source is not None:
        assert msg.startswith(source + ": "), msg
    return msg


def refused(fn, *args, source=None, **kw) -> str:
    with pytest.raises(ConfigError) as err:
        fn(*args, **kw)
    return one_line_error(err.value, source)


def toml(text):
    return config.parse_toml(text, "rtnet.toml")


def write(tmp_path, name, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


# --- what used to end in a traceback ----------------------------------------------------------


@pytest.mark.parametrize(
    "data, why",
    [
        (b"[station]\nname = '\xff'\n", "line 2: not UTF-8 text (byte 0xff)"),
        ("[station]\n".encode("utf-16"), "UTF-16 text"),
        ("[station]\n".encode("utf-16-be").join([b"\xfe\xff", b""]), "UTF-16 text"),
        (b"[tdma]\ncycle_us = " + b"9" * 5000 + b"\n", "line 2: a number of 5000 digits"),
        (b"[tdma]\ncycle_us = 0x" + b"f" * 5000 + b"\n", "tdma.cycle_us: a number of about"),
        (b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n", "nested too deeply"),
        (b"a = " + b"{b = " * 3000 + b"1" + b"}" * 3000 + b"\n", "nested too deeply"),
    ],
)
def test_unreadable_toml_should_be_one_line_naming_the_file(tmp_path, data, why):
    path = write(tmp_path, "bad.toml", data)
    assert why in refused(configfile.load, path, source=path)


def test_utf8_byte_order_mark_should_be_skipped(tmp_path):
    path = write(tmp_path, "bom.toml", b"\xef\xbb\xbf" + MASTER_TOML.encode())
    assert configfile.load(path).tdma.cycle_us == 1000


@pytest.mark.parametrize(
    "make, why",
    [
        (lambda d: os.mkfifo(d / "fifo.toml") or d / "fifo.toml", "not a regular file"),
        (lambda d: os.mkdir(d / "dir.toml") or d / "dir.toml", "is a directory"),
        (lambda d: "/dev/zero", "not a regular file"),
        (
            lambda d: (d / "big.toml").write_bytes(b"#" * (2 << 20)) and d / "big.toml",
            "larger than",
        ),
    ],
)
def test_files_that_are_not_configurations_should_be_refused_without_blocking(tmp_path, make, why):
    path = str(make(tmp_path))
    assert why in refused(configfile.load, path)


def test_nul_byte_in_tdma_config_should_be_refused(tmp_path):
    path = write(tmp_path, "rtnet.conf", b'TDMA_CONFIG="tdma\x00.conf"\n')
    assert "TDMA_CONFIG: " in refused(configfile.load, path, source=path)


def test_unreadable_tdma_config_should_name_both_files(tmp_path):
    write(tmp_path, "tdma.conf", b"master:\n\xc3\x28\n")
    path = write(tmp_path, "rtnet.conf", b'TDMA_CONFIG="tdma.conf"\n')
    msg = refused(configfile.load, path, source=path)
    assert msg.endswith(
        "TDMA_CONFIG: " + str(tmp_path / "tdma.conf") + ": line 2: not UTF-8 text (byte 0xc3)"
    )


def test_huge_number_in_rtnet_conf_should_be_out_of_range():
    text = RTNET_CONF.replace('"5000"', '"' + "9" * 4000 + '"')
    assert "TDMA_CYCLE: " in refused(rtnetconf.parse_rtnet_conf, text, "rtnet.conf")


def test_doubling_variables_should_stop_at_the_value_limit():
    text = 'A="xxxxxxxx"\n' + 'A="$A$A"\n' * 64
    assert "at most 4096" in refused(
        rtnetconf.parse_rtnet_conf, text, "rtnet.conf", source="rtnet.conf"
    )


# --- accepted before, but wrong ---------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "a\u0000b",
        "a\u001bb",
        "a\u007f",
        "x" * 16,
        "\u00e9" * 8,
        ".",
        "..",
        "a/b",
        "a b",
        "a:b",
        "",
        "a\u2028b",
    ],
)
def test_device_names_the_kernel_refuses_should_be_refused(name):
    quoted = name.encode("unicode_escape").decode()
    refused(toml, f'[station]\ndevice = "{quoted}"\n', source="rtnet.toml")
    refused(toml, f'[vnic]\nname = "{quoted}"\n', source="rtnet.toml")
    if name and "\u0000" not in name:
        refused(rtnetconf.parse_rtnet_conf, f"RTNET_DEV='{name}'\n", "rtnet.conf")


@pytest.mark.parametrize("name", ["x" * 15, "\u00e9" * 7 + "x", "eth0.100", "-", "rt_eth-0"])
def test_device_names_the_kernel_takes_should_be_accepted(name):
    assert toml(f'[station]\ndevice = "{name}"\n').device == name


@pytest.mark.parametrize(
    "text",
    [
        RTNET_CONF.replace('"5000"', '"\uff11\uff10\uff10\uff10"'),  # fullwidth digits
        RTNET_CONF.replace('"5000"', '"\u0665\u0660\u0660\u0660"'),  # Arabic-Indic digits
        RTNET_CONF.replace('"5000"', '"5_000"'),
        RTNET_CONF.replace('"5000"', '" 5000"'),
    ],
)
def test_numbers_in_rtnet_conf_should_be_ascii_digits(text):
    assert "TDMA_CYCLE: " in refused(rtnetconf.parse_rtnet_conf, text, "rtnet.conf")


def test_phasing_should_be_ascii_digits():
    text = TDMA_CONF.replace("slot 1 1000 1/2 400", "slot 1 1000 \u0661/\u0662 400")
    assert "is not x/y" in refused(rtnetconf.parse_tdma_conf, text, "tdma.conf", ip="10.0.0.1")
    refused(toml, MASTER_TOML + 'phasing = "\uff11/\uff12"\n')


def test_max_cal_requests_should_follow_the_c_engine():
    base = "[tdma]\nrole = 'master'\ncycle_us = 1000\nmax_cal_requests = "
    assert toml(base + f"{MAX_CAL_REQUESTS}\n").tdma.max_cal_requests == MAX_CAL_REQUESTS
    assert refused(toml, base + "300\n") == (
        f"rtnet.toml: tdma.max_cal_requests: 300 above maximum {MAX_CAL_REQUESTS}"
    )


@pytest.mark.parametrize(
    "et, why",
    [
        (0x0800, "IPv4, which Linux needs"),
        (0x0806, "ARP"),
        (0x86DD, "IPv6"),
        (0x8100, "802.1Q VLAN"),
        (0x88A8, "802.1ad VLAN"),
        (0x9021, "RTmac, always real-time"),
        (0x9022, "RTcfg"),
        (0x05FF, "an 802.3 length, not an EtherType"),
        (0x10000, "outside"),
        (-1, "outside"),
    ],
)
def test_ethertypes_linux_or_the_stack_owns_should_be_refused(et, why):
    for text, key in (
        (f"[station]\nethertypes = [{et}]\n", "station.ethertypes"),
        (f"[[channel]]\nethertype = {et}\n", r"channel[0].ethertype"),
    ):
        msg = refused(toml, text)
        assert msg.startswith(f"rtnet.toml: {key}: ") and why in msg, msg


def test_ethertypes_beyond_what_the_xdp_program_steers_should_be_refused():
    from rtnet._lowlevel import lib

    # the echo service 0x88b6 is always steered and takes one of the entries
    ets = [et for et in range(0x88B0, 0x88C0) if et != 0x88B6][: lib.RTN_XSK_MAX_ETHERTYPES - 1]
    station = f"[station]\nethertypes = [{', '.join(map(hex, ets))}]\n"
    assert len(toml(station).steered_ethertypes()) == lib.RTN_XSK_MAX_ETHERTYPES
    msg = refused(toml, station + "[[channel]]\nethertype = 0x88D0\n")
    assert msg == (
        f"rtnet.toml: station.ethertypes: {lib.RTN_XSK_MAX_ETHERTYPES + 1} real-time "
        f"EtherTypes with the [[channel]] ones and the echo service 0x88b6; the XDP "
        f"program steers at most {lib.RTN_XSK_MAX_ETHERTYPES}"
    )


def test_vnic_on_a_slot_that_does_not_exist_should_be_refused():
    vnic = "[vnic]\nenabled = true\nslot = {}\n"
    assert toml(MASTER_TOML + vnic.format(1)).vnic.slot == 1  # slot 1 falls back to slot 0
    msg = refused(toml, MASTER_TOML + vnic.format(3))
    assert msg == ("rtnet.toml: vnic.slot: slot 3 is not in the TDMA schedule; configured slots: 0")
    no_slots = "[tdma]\nrole = 'master'\ncycle_us = 1000\n" + vnic.format(1)
    assert "nor slot 0" in refused(toml, no_slots)
    assert not toml(MASTER_TOML + "[vnic]\nenabled = false\nslot = 3\n").vnic.enabled


def test_channel_on_a_slot_that_does_not_exist_should_be_refused():
    assert "channel[0].slot: slot 5 is not in" in refused(
        toml, MASTER_TOML + "[[channel]]\nethertype = 0x88B5\nslot = 5\n"
    )


def test_a_second_slot_line_for_the_same_id_should_be_refused():
    text = TDMA_CONF.replace("slot 1 1000 1/2 400", "slot 1 1000 1/2 400\nslot 1 2000")
    assert refused(rtnetconf.parse_tdma_conf, text, "tdma.conf", ip="10.0.0.1") == (
        "tdma.conf: line 6: slot: slot 1 given twice in this master: section (first on line 5)"
    )
    # the same id in two stations' sections is fine
    assert (
        rtnetconf.parse_tdma_conf(TDMA_CONF, "tdma.conf", ip="10.0.0.3").slots[1].offset_us == 3000
    )


def test_keys_and_words_with_control_characters_stay_on_one_line():
    msg = refused(toml, '"bad\\nkey\\u001b[2J" = 1\n')
    assert msg.startswith("rtnet.toml: 'bad\\nkey\\x1b[2J': unknown key")
    msg = refused(rtnetconf.parse_tdma_conf, "master:\nfoo\x1b[2J 1\n", "tdma.conf")
    assert msg.startswith("tdma.conf: line 2: 'foo\\x1b[2J': ")


# --- the daemon and rtnetctl up print that one line -----------------------------------------

BAD_FILES = [
    (
        "bad.toml",
        b"[tdma]\nrole = 'master'\ncycle_us = 50\n",
        "tdma.cycle_us: 50 outside the supported range 100..1000000",
    ),
    ("bad.toml", b"\xff\xfe\x00\x00", "UTF-16 text"),
    (
        "rtnet.conf",
        b"TDMA_CYCLE=\xef\xbc\x91\xef\xbc\x90\xef\xbc\x90\xef\xbc\x90\n",
        "TDMA_CYCLE: ",
    ),
]


@pytest.mark.parametrize("name, data, why", BAD_FILES)
def test_rtnetd_should_print_one_line_and_exit_1(tmp_path, capsys, name, data, why):
    path = write(tmp_path, name, data)
    assert daemon.main(["-c", path]) == 1
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and err.startswith(f"rtnetd: {path}: ") and why in err, err


@pytest.mark.parametrize("name, data, why", BAD_FILES)
def test_rtnetctl_up_should_print_one_line_and_exit_1(tmp_path, capsys, name, data, why):
    path = write(tmp_path, name, data)
    assert cli.main(["up", "-c", path]) == 1  # refused before anything starts
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and why in err, err
    assert err.startswith(f"rtnetctl: {path}: ")


# --- properties ---------------------------------------------------------------------------------

SETTINGS = settings(max_examples=250, deadline=None, database=None)


def loads_or_refuses_cleanly(fn, *args, **kw):
    try:
        fn(*args, **kw)
    except ConfigError as exc:
        one_line_error(exc)


@SETTINGS
@given(st.binary(max_size=300), st.sampled_from(["x.toml", "rtnet.conf"]))
def test_random_bytes_should_load_or_be_refused_cleanly(data, name):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, name)
        with open(path, "wb") as f:
            f.write(data)
        loads_or_refuses_cleanly(configfile.load, path)


NASTY = [
    "\x00",
    "\x1b[2J",
    "\n",
    "\r",
    "\u2028",
    "\ufeff",
    "\udcff",
    "\uff11",
    "\u0661",
    "9" * 4400,
    "0x" + "f" * 40,
    "[" * 300,
    "{a=" * 300,
    "'",
    '"',
    "\\",
    "$A$A$A",
    "${",
    "#",
    "=",
    "/",
    ":",
    " ",
    "nan",
    "inf",
    "-0",
    "1e999",
    "true",
    "..",
    "slot",
    "master:",
    "1/0",
    "0/1",
]


@st.composite
def mutated(draw, text: str) -> str:
    """``text`` with a few random edits: spans deleted, duplicated or replaced by nasty text."""
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        j = draw(st.integers(i, min(len(text), i + 20)))
        new = draw(
            st.one_of(
                st.sampled_from(NASTY), st.text(max_size=8), st.just(""), st.just(text[i:j] * 2)
            )
        )
        text = text[:i] + new + text[j:]
    return text


@SETTINGS
@given(mutated(EXAMPLE_TOML))
def test_mutated_rtnet_toml_should_load_or_be_refused_cleanly(text):
    loads_or_refuses_cleanly(toml, text)


@SETTINGS
@given(mutated(RTNET_CONF), mutated(TDMA_CONF))
def test_mutated_rtnet_conf_and_tdma_conf_should_load_or_be_refused_cleanly(conf, tdma):
    loads_or_refuses_cleanly(rtnetconf.parse_rtnet_conf, conf, "rtnet.conf")
    loads_or_refuses_cleanly(
        rtnetconf.parse_rtnet_conf,
        conf + 'TDMA_CONFIG="tdma.conf"\n',
        "/etc/rtnet.conf",
        read_file=lambda path: tdma,
    )
    for ip in ("10.0.0.1", "10.0.0.3", "10.0.0.9"):
        loads_or_refuses_cleanly(rtnetconf.parse_tdma_conf, tdma, "tdma.conf", ip=ip)


KEYS = {
    "station": ["name", "device", "mac", "xdp_mode", "zerocopy", "ethertypes"],
    "rt": ["cpu", "priority", "allow_fallback"],
    "link": ["link_rate_mbps", "redundant_dev", "frer_history_len", "frer_reset_ms"],
    "clock": ["offset_ns", "drift_ppm"],
    "tdma": [
        "role",
        "cycle_us",
        "backup_offset_us",
        "cal_rounds",
        "max_slot_id",
        "max_cal_requests",
        "guard_ns",
        "sync_loss_cycles",
    ],
    "vnic": ["enabled", "name", "mode", "address", "slot"],
    "control": ["group", "status_group"],
    "nomac": [],
    "tdma.slot": ["id", "offset_us", "phasing", "size", "joint"],
    "channel": ["ethertype", "slot", "prio", "max_size", "redundant"],
}


def quoted(text: str) -> str:
    return '"' + text.encode("unicode_escape").decode("ascii").replace('"', '\\"') + '"'


# TOML values as written in the file: plain ones, ones at the limits, strings with
# control characters, and the literals that once ended in tracebacks
TOML_VALUES = st.one_of(
    st.integers(-2, 70).map(str),
    st.integers().map(str),
    st.sampled_from(
        [
            "0x0800",
            "0x88B5",
            "0x9021",
            "1000",
            "5000",
            "65536",
            "300",
            "1.5",
            "nan",
            "-inf",
            "true",
            "false",
            "1979-05-27",
            "[]",
            "{}",
            "9" * 4400,
            "0x" + "f" * 5000,
            "[" * 1200 + "]" * 1200,
            "{a=" * 1200 + "1" + "}" * 1200,
        ]
    ),
    st.sampled_from(
        [
            "master",
            "slave",
            "backup",
            "rteth0",
            "1/2",
            "3/2",
            "\uff11/2",
            "auto",
            "batched",
            "198.18.1.1/24",
            "02:52:54:00:00:01",
            "a\x00b",
            "x" * 20,
            "\x1b[2J",
        ]
    ).map(quoted),
    st.text(max_size=12).map(quoted),
)


@st.composite
def toml_documents(draw) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        section = draw(st.sampled_from(sorted(KEYS)))
        array = section in ("tdma.slot", "channel")
        lines.append(f"[[{section}]]" if array else f"[{section}]")
        for key in draw(st.lists(st.sampled_from(KEYS[section] or ["x"]), max_size=6, unique=True)):
            value = draw(
                st.one_of(
                    TOML_VALUES,
                    st.lists(TOML_VALUES, max_size=3).map(lambda vs: "[" + ", ".join(vs) + "]"),
                )
            )
            lines.append(f"{key} = {value}")
    return "\n".join(lines) + "\n"


@settings(max_examples=250, deadline=None, database=None)
@given(toml_documents())
def test_random_rtnet_toml_should_load_or_be_refused_cleanly(text):
    loads_or_refuses_cleanly(toml, text)


WORDS = st.one_of(
    st.sampled_from(NASTY),
    st.integers(-1, 70000).map(str),
    st.sampled_from(["1/2", "2/2", "0", "60", "400", "1500", "10.0.0.1", "02:52:54:00:00:03"]),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=6),
)


@st.composite
def tdma_conf_documents(draw) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 14))):
        head = draw(
            st.sampled_from(
                [
                    "master:",
                    "backup-master:",
                    "slave:",
                    "ip",
                    "mac",
                    "cycle",
                    "backup-offset",
                    "slot",
                    "slot",
                    "stage2",
                    "#",
                ]
            )
        )
        words = draw(st.lists(WORDS, max_size=6))
        lines.append(" ".join([head] + [w.replace("\n", "") for w in words]))
    return "\n".join(lines)


@st.composite
def rtnet_conf_documents(draw) -> str:
    names = sorted(rtnetconf._RTNET_USED) + ["RT_DRIVER", "A", "9BAD", "export TDMA_MODE"]
    lines = []
    for _ in range(draw(st.integers(0, 8))):
        value = " ".join(draw(st.lists(WORDS, max_size=3))).replace("\n", "")
        quote = draw(st.sampled_from(['"', "'", ""]))
        lines.append(f"{draw(st.sampled_from(names))}={quote}{value}{quote}")
    return "\n".join(lines)


@settings(max_examples=200, deadline=None, database=None)
@given(
    rtnet_conf_documents(), tdma_conf_documents(), st.sampled_from(["10.0.0.1", "10.0.0.3", None])
)
def test_random_rtnet_conf_and_tdma_conf_should_load_or_be_refused_cleanly(conf, tdma, ip):
    loads_or_refuses_cleanly(rtnetconf.parse_rtnet_conf, conf, "rtnet.conf")
    loads_or_refuses_cleanly(
        rtnetconf.parse_rtnet_conf,
        conf + '\nTDMA_CONFIG="t.conf"\n',
        "rtnet.conf",
        read_file=lambda path: tdma,
    )
    loads_or_refuses_cleanly(
        rtnetconf.parse_tdma_conf, tdma, "tdma.conf", ip=ip, mac="02:52:54:00:00:03"
    )


def test_a_channel_lifetime_outside_its_range_should_be_refused():
    ok = toml(MASTER_TOML + "[[channel]]\nethertype = 0x88B5\nlifetime_us = 1000\n")
    assert ok.channels[0].lifetime_us == 1000
    for bad in ("-1", "10000001", "1.5", '"1ms"', "true"):
        msg = refused(toml, MASTER_TOML + f"[[channel]]\nethertype = 0x88B5\nlifetime_us = {bad}\n")
        assert msg.startswith("rtnet.toml: channel[0].lifetime_us: ") and "\n" not in msg, msg
