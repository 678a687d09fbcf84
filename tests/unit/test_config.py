"""Configuration parsing: rtnet.toml, rtnet.conf, tdma.conf (no root needed)."""

import os

import pytest

from rtmac.tdma_config import Slot
from rtnet import config, configfile, rtnetconf
from rtnet.errors import ConfigError

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "..", "examples", "rtnet.toml")


def toml(text):
    return config.parse_toml(text, "rtnet.toml")


def test_example_file_is_valid():
    cfg = configfile.load(EXAMPLE)
    assert cfg.discipline == "tdma"
    assert cfg.tdma.role == "master" and cfg.tdma.cycle_us == 5000
    assert cfg.tdma.slots[1] == Slot(1, 2200, 1, 2, 1500)
    assert cfg.rt.cpu == 1 and cfg.rt.priority == 90
    steered = cfg.steered_ethertypes()
    assert 0x88B5 in steered and config.PING_ETHERTYPE in steered


def test_defaults_without_discipline():
    cfg = toml("")
    assert (cfg.device, cfg.discipline, cfg.tdma) == ("rteth0", "none", None)
    assert not cfg.vnic.enabled
    assert not cfg.rt.wake_early  # the RT thread sleeps until each deadline
    assert toml("[rt]\nwake_early = true").rt.wake_early


def test_cycle_below_minimum_names_file_key_and_range():
    with pytest.raises(
        ConfigError,
        match=r"^rtnet\.toml: tdma\.cycle_us: 50 outside the "
        r"supported range 100\.\.1000000$",
    ):
        toml("[tdma]\nrole = 'master'\ncycle_us = 50\n")


@pytest.mark.parametrize(
    "text, key",
    [
        ("[station]\nxdp_mode = 'fast'", "station.xdp_mode"),
        ("[station]\nzerocopy = 'yes'", "station.zerocopy"),
        ("[station]\nmac = '02:52'", "station.mac"),
        ("[station]\nethertypes = [0x100]", "station.ethertypes"),
        ("[rt]\npriority = 100", "rt.priority"),
        ("[rt]\nallow_fallback = 1", "rt.allow_fallback"),
        ("[rt]\nwake_early = 'yes'", "rt.wake_early"),
        ("[tdma]\nrole = 'boss'\ncycle_us = 1000", "tdma.role"),
        ("[tdma]\nrole = 'backup'\ncycle_us = 1000", "tdma.backup_offset_us"),
        (
            "[tdma]\nrole = 'master'\ncycle_us = 1000\n[[tdma.slot]]\nid = 0\noffset_us = 0\nphasing = '3/2'",
            r"tdma: slot 0",
        ),  # C's rule and message: slot 0: phasing 3/2 outside 1..2
        (
            "[tdma]\nrole = 'master'\ncycle_us = 1000\n[[tdma.slot]]\nid = 9\noffset_us = 0",
            r"tdma: slot 9",
        ),  # C's: slot 9: id above max_slot_id 7
        ("[vnic]\nmode = 'fast'", "vnic.mode"),
        ("[vnic]\naddress = '198.18.1.1'", "vnic.address"),
        ("[[channel]]\nethertype = 0x88B6", r"channel\[0\].ethertype"),
        ("[clock]\ndrift_ppm = 5000", "clock.drift_ppm"),
        ("[station]\nnmae = 'x'", "station.nmae"),
        ("[tdma]\ncycle_us = 1000\n[nomac]", "tdma"),
    ],
)
def test_bad_values_name_the_key(text, key):
    with pytest.raises(ConfigError, match=rf"^rtnet\.toml: {key}: "):
        toml(text)


def test_schedule_checks_apply_to_the_file():
    # 1500-byte slots 100 us apart overlap at 100 Mbit/s (one takes ~125 us)
    text = """[tdma]
role = "master"
cycle_us = 1000
[[tdma.slot]]
id = 0
offset_us = 0
[[tdma.slot]]
id = 1
offset_us = 100
"""
    with pytest.raises(ConfigError, match=r"^rtnet\.toml: tdma: slot 1 at 100 us overlaps slot 0"):
        toml(text)


def test_toml_syntax_error_names_file():
    with pytest.raises(ConfigError, match=r"^rtnet\.toml: "):
        toml("[tdma\n")


def test_backup_role_becomes_master_with_offset():
    cfg = toml("[tdma]\nrole = 'backup'\ncycle_us = 5000\nbackup_offset_us = 200\n")
    assert (cfg.tdma.role, cfg.tdma.backup_offset_us) == ("master", 200)


# -- RTnet formats ---------------------------------------------------------------------------

RTNET_MASTER = """# rtnet.conf as shipped, simple mode
RT_DRIVER="rt_eepro100"
IPADDR="10.0.0.1"
NETMASK="255.255.255.0"
TDMA_MODE="master"
TDMA_SLAVES="10.0.0.2 10.0.0.3 10.0.0.4"
TDMA_CYCLE="5000"
TDMA_OFFSET="200"
"""


def test_rtnet_conf_master_equals_toml():
    from_rtnet = rtnetconf.parse_rtnet_conf(RTNET_MASTER, "rtnet.conf").tdma
    from_toml = toml(
        "[tdma]\nrole = 'master'\ncycle_us = 5000\n[[tdma.slot]]\nid = 0\noffset_us = 0\n"
    ).tdma
    assert from_rtnet == from_toml
    assert from_rtnet.slots == {0: Slot(0, 0)}


def test_rtnet_conf_slave_slot_follows_position_in_tdma_slaves_without_rtcfg():
    text = RTNET_MASTER.replace('TDMA_MODE="master"', 'TDMA_MODE="slave"').replace(
        'IPADDR="10.0.0.1"', 'IPADDR="10.0.0.3"'
    )
    from_rtnet = rtnetconf.parse_rtnet_conf(text, "rtnet.conf", rtcfg=False).tdma
    from_toml = toml("[tdma]\nrole = 'slave'\n[[tdma.slot]]\nid = 0\noffset_us = 400\n").tdma
    assert from_rtnet == from_toml
    assert from_rtnet.slots[0].offset_us == 2 * 200


def test_rtnet_conf_errors():
    with pytest.raises(
        ConfigError,
        match=r"^rtnet\.conf: TDMA_CYCLE: cycle_us: 50 outside the "
        r"supported range 100\.\.1000000$",
    ):
        rtnetconf.parse_rtnet_conf(RTNET_MASTER.replace('"5000"', '"50"'), "rtnet.conf")
    with pytest.raises(ConfigError, match=r"^rtnet\.conf: TDMA_SLAVES: IPADDR 10.0.0.9"):
        rtnetconf.parse_rtnet_conf("TDMA_MODE=slave\nIPADDR=10.0.0.9\n", "rtnet.conf", rtcfg=False)
    with pytest.raises(ConfigError, match=r"^rtnet\.conf: TDMA_MODES: unknown"):
        rtnetconf.parse_rtnet_conf("TDMA_MODES=slave\n", "rtnet.conf")
    with pytest.raises(ConfigError, match=r"^rtnet\.conf: TDMA_MODE: 'boss'"):
        rtnetconf.parse_rtnet_conf("TDMA_MODE=boss\n", "rtnet.conf")


TDMA_CONF = """master:
ip 10.0.0.1
cycle 5000
slot 0 0
slot 1 1000 1/2 400

backup-master:
ip 10.0.0.2
backup-offset 200
slot 0 400

slave:
ip 10.0.0.3
mac 02:52:54:00:00:03
slot 0 2000 1/1 400
slot 1 3000 2/2 400 0
"""


def test_tdma_conf_extended_mode_equals_toml(tmp_path):
    (tmp_path / "tdma.conf").write_text(TDMA_CONF)
    conf = tmp_path / "rtnet.conf"
    conf.write_text('IPADDR="10.0.0.3"\nTDMA_CONFIG="tdma.conf"\n')
    cfg = configfile.load(str(conf), rtcfg=False)  # TDMA_CONFIG relative to rtnet.conf
    expected = toml("""[tdma]
role = "slave"
[[tdma.slot]]
id = 0
offset_us = 2000
size = 400
[[tdma.slot]]
id = 1
offset_us = 3000
phasing = "2/2"
size = 400
joint = 0
""").tdma
    assert cfg.tdma == expected
    assert rtnetconf.parse_tdma_conf(TDMA_CONF, "tdma.conf", mac="02:52:54:00:00:03") == expected
    backup = rtnetconf.parse_tdma_conf(TDMA_CONF, "tdma.conf", ip="10.0.0.2")
    assert (backup.role, backup.cycle_us, backup.backup_offset_us) == ("master", 5000, 200)
    master = rtnetconf.parse_tdma_conf(TDMA_CONF, "tdma.conf", ip="10.0.0.1")
    assert master.slots == {0: Slot(0, 0), 1: Slot(1, 1000, 1, 2, 400)}


def test_tdma_conf_joint_slot_needs_equal_size():
    bad = TDMA_CONF.replace("slot 0 2000 1/1 400", "slot 0 2000")
    with pytest.raises(
        ConfigError, match=r"^tdma.conf: line 12 \(slave\): slot 1: size 400 differs"
    ):
        rtnetconf.parse_tdma_conf(bad, "tdma.conf", ip="10.0.0.3")


def test_tdma_conf_errors():
    with pytest.raises(ConfigError, match=r"^tdma.conf: ip: no section for this station"):
        rtnetconf.parse_tdma_conf(TDMA_CONF, "tdma.conf", ip="10.0.0.77")
    with pytest.raises(ConfigError, match=r"^tdma.conf: line 3: cycle: 'fast'"):
        rtnetconf.parse_tdma_conf("master:\nip 10.0.0.1\ncycle fast\n", "tdma.conf", ip="10.0.0.1")
    with pytest.raises(ConfigError, match=r"^tdma.conf: line 1: "):
        rtnetconf.parse_tdma_conf("slot 0 0\n", "tdma.conf", ip="10.0.0.1")


def test_missing_file_names_it(tmp_path):
    with pytest.raises(ConfigError, match="nope.toml: No such file"):
        configfile.load(str(tmp_path / "nope.toml"))
