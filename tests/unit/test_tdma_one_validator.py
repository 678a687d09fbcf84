"""One TDMA validator: rtn_tdma_cfg_check() in C, reached from every entry point.

rtmac.tdma_config.validate() calls the C check through cffi and raises its
message, so a value outside its range is refused with the one message naming
the setting and the limit it broke, whether the configuration came from
rtnet.toml, rtnet.conf, tdma.conf, the rtmac command line, the control
socket or an RTcfg stage 1 payload.  Each test below reaches the C rule from
one entry point and checks that the refusal carries the C check's own message.
"""

import threading
from dataclasses import replace
from types import SimpleNamespace

import pytest

from rtmac import cli
from rtmac.tdma_config import Slot, TdmaConfig, validate
from rtnet import config as configfile
from rtnet import rtnetconf
from rtnet._lowlevel import last_error, lib
from rtnet.discipline_service import DisciplineService
from rtnet.errors import ConfigError, RtcfgError
from rtnet.rtcfg import apply as rtcfg_apply

MASTER = TdmaConfig(role="master", cycle_us=1000, slots={0: Slot(0, 0, size=200)})


def c_says(cfg: TdmaConfig) -> str:
    """What rtn_tdma_cfg_check() itself says about ``cfg`` (it must refuse it)."""
    assert lib.rtn_tdma_cfg_check(cfg.to_c()) != 0
    return last_error()


# --- the C check is the one rule: validate() raises its message as it is --------------------


@pytest.mark.parametrize(
    "cfg, message",
    [
        (replace(MASTER, cycle_us=99), "cycle_us: 99 outside the supported range 100..1000000"),
        (replace(MASTER, cal_rounds=1_000_001), "cal_rounds: 1000001 above maximum 1000000"),
        (replace(MASTER, max_cal_requests=257), "max_cal_requests: 257 above maximum 256"),
        (replace(MASTER, max_slot_id=64), "max_slot_id: 64 above maximum 63"),
        (replace(MASTER, link_rate_mbps=400_001), "link_rate_mbps: 400001 above maximum 400000"),
        (replace(MASTER, guard_ns=-1), "guard_ns: -1 below minimum 0"),
        (replace(MASTER, mtu=1501), "mtu: 1501 above maximum 1500"),
        (replace(MASTER, sync_loss_cycles=0), "sync_loss_cycles: 0 below minimum 1"),
        (replace(MASTER, backup_offset_us=0), "backup_offset_us: 0 below minimum 1"),
        (
            replace(MASTER, backup_offset_us=1000),
            "backup_offset_us: 1000 is not smaller than the cycle (1000 us)",
        ),
        (
            replace(MASTER, slots={0: Slot(0, 1_000_001)}),
            "slot 0: offset_us: 1000001 above maximum 1000000",
        ),
        (
            replace(MASTER, slots={0: Slot(0, 0, period=1025)}),
            "slot 0: period: 1025 above maximum 1024",
        ),
        (
            replace(MASTER, mtu=1400, slots={0: Slot(0, 0, size=1500)}),
            "slot 0: size 1500 outside 60..1400 (MTU)",
        ),
    ],
)
def test_validate_raises_the_c_message(cfg, message):
    assert c_says(cfg) == message
    with pytest.raises(ConfigError) as err:
        validate(cfg)
    assert str(err.value) == message


def test_a_value_c_cannot_hold_is_refused_with_the_same_words():
    """-1 does not fit an unsigned C field: Python refuses it, in the option table's words."""
    with pytest.raises(ConfigError, match=r"^cal_rounds: -1 below minimum 0$"):
        validate(replace(MASTER, cal_rounds=-1))
    with pytest.raises(ConfigError, match=r"^slot 0: joint: -1 below minimum 0$"):
        validate(replace(MASTER, slots={0: Slot(0, 0, joint=-1)}))
    with pytest.raises(ConfigError, match=r"^cycle_us: 0 below minimum 100$"):
        validate(replace(MASTER, role="slave", cycle_us=0))


# --- every entry point reaches it ------------------------------------------------------------

LATE = replace(MASTER, slots={0: Slot(0, 990, size=200)})  # runs past the 1000 us cycle


def test_toml():
    text = (
        '[station]\nname = "s"\n[tdma]\nrole = "master"\ncycle_us = 1000\n'
        "[[tdma.slot]]\nid = 0\noffset_us = 990\nsize = 200\n"
    )
    with pytest.raises(ConfigError) as err:
        configfile.parse_toml(text)
    assert str(err.value).endswith(c_says(LATE))


def test_rtnet_conf():
    """The second slave's slot 0 at 2 x TDMA_OFFSET: past the largest offset."""
    text = (
        'IPADDR="10.0.0.3"\nTDMA_MODE="slave"\nTDMA_SLAVES="10.0.0.2 10.0.0.3"\n'
        'TDMA_OFFSET="600000"\n'
    )
    with pytest.raises(ConfigError) as err:
        rtnetconf.parse_rtnet_conf(text, rtcfg=False)
    expected = c_says(TdmaConfig(role="slave", slots={0: Slot(0, 1_200_000)}))
    assert expected == "slot 0: offset_us: 1200000 above maximum 1000000"
    assert str(err.value) == f"rtnet.conf: TDMA_OFFSET: {expected}"


def test_tdma_conf():
    text = "master:\nip 10.0.0.1\ncycle 1000\nslot 0 990 1/1 200\n"
    with pytest.raises(ConfigError) as err:
        rtnetconf.parse_tdma_conf(text, ip="10.0.0.1")
    assert str(err.value).endswith(c_says(LATE))


def test_rtmac_command_line():
    with pytest.raises(cli.UsageError) as err:
        cli.parse_request("tdma rteth0 master 1000 -b 1000".split())
    assert str(err.value) == c_says(replace(MASTER, backup_offset_us=1000, slots={}))


def _service_with(cfg: TdmaConfig) -> DisciplineService:
    """rtnetd's discipline requests over a station that only holds its configuration."""
    station = SimpleNamespace(tdma_config=cfg, attach_tdma=lambda c: pytest.fail("applied"))
    return DisciplineService(lambda: station, "rteth0", 100, threading.RLock(), threading.Event())


def test_control_socket():
    req = {"cmd": "tdma.slot", "dev": "rteth0", "id": 0, "offset_us": 1_000_001, "size": 200}
    with pytest.raises(ConfigError) as err:
        _service_with(MASTER).slot(req, None)
    assert str(err.value) == c_says(replace(MASTER, slots={0: Slot(0, 1_000_001, size=200)}))


def test_rtcfg_stage_1():
    d = _service_with(MASTER)
    view = rtcfg_apply.StationView(
        discipline="tdma",
        tdma=MASTER,
        has_vnic=True,
        ip=None,
        master_config=d.master_config,
        slave_config=d.slave_config,
    )
    req = {"cmd": "tdma.slot", "id": 0, "offset_us": 990, "size": 200}
    with pytest.raises((ConfigError, RtcfgError)) as err:
        rtcfg_apply.check([req], view)
    assert str(err.value).endswith(c_says(LATE))
