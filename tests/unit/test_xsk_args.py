"""RawSocket argument checks and build products; none of this needs root."""

import errno

import pytest

from rtnet import xsk
from rtnet.errors import ConfigError, XskError
from rtnet.xsk import RawSocket


def test_bpf_object_is_built_next_to_the_package():
    path = xsk.bpf_object_path()
    with open(path, "rb") as f:
        head = f.read(20)
    assert head[:4] == b"\x7fELF"
    assert int.from_bytes(head[18:20], "little") == 247  # e_machine EM_BPF


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"queue": -1}, "queue -1"),
        ({"queue": 64}, "queue 64"),
        ({"queue": "0"}, "queue '0'"),
        ({"mode": "fast"}, "mode 'fast'"),
        ({"frames": 100}, "frames 100"),
        ({"frames": 32}, "frames 32"),
        ({"ethertypes": [0x05DC]}, "EtherType 0x05dc"),
        ({"ethertypes": [0x10000]}, "EtherType 0x10000"),
        ({"ethertypes": ["0x88b5"]}, "'0x88b5' is not an integer"),
        ({"ethertypes": range(0x8800, 0x8800 + 15)}, "at most 14"),
        ({"netns": 5}, "netns 5"),
    ],
)
def test_bad_arguments_raise_config_error_naming_the_value(kwargs, words):
    with pytest.raises(ConfigError, match=words.replace("(", r"\(")):
        RawSocket("lo", **kwargs)


@pytest.mark.parametrize("name", ["", "a" * 16, "eth 0", "a/b", None])
def test_bad_interface_names(name):
    with pytest.raises(ConfigError, match="interface name"):
        RawSocket(name)


def test_ethertypes_are_deduplicated_and_rtnet_types_always_steered():
    assert xsk.validate_ethertypes([0x88B5, 0x88B5, 0x9021]) == (0x88B5,)
    assert xsk.validate_ethertypes(range(0x8800, 0x8800 + 14)) == tuple(range(0x8800, 0x880E))
    assert set(xsk.ALWAYS_STEERED) == {0x9021, 0x9022}


def test_unknown_namespace_is_a_config_error():
    with pytest.raises(ConfigError, match="rtnx-missing.*does not exist"):
        RawSocket("rteth0", netns="rtnx-missing")


def test_unknown_interface_is_named_in_the_error():
    with pytest.raises(XskError) as info:
        RawSocket("rtnxnone9")
    assert info.value.errno == errno.ENODEV
    assert "rtnxnone9: no such interface" in str(info.value)


def test_negative_timeout_is_rejected():
    with pytest.raises(ConfigError, match="timeout"):
        xsk._timeout_us(-1.0)
    assert xsk._timeout_us(None) == -1
    assert xsk._timeout_us(0) == 0
    assert xsk._timeout_us(1e-7) == 1
    assert xsk._timeout_us(1e9) == 2**31 - 1


def test_missing_bpf_object_is_reported(monkeypatch, tmp_path):
    monkeypatch.setattr(xsk, "bpf_object_path", lambda: str(tmp_path / "xdp_rtnet.bpf.o"))
    with pytest.raises(XskError, match="xdp_rtnet.bpf.o not found") as info:
        RawSocket("lo")
    assert info.value.errno == errno.ENOENT


def test_pin_dir_outside_bpffs_is_reported(tmp_path):
    with pytest.raises(XskError, match=f"bpffs is not mounted at {tmp_path}"):
        RawSocket("lo", pin_dir=str(tmp_path))
