"""The option table (rtnet.options) against the places it feeds and the C core it reads."""

import doctest

import pytest

import rtnet._lowlevel
import rtnet.options
from rtmac import cli
from rtmac.tdma_config import Slot, TdmaConfig, validate
from rtmac.testing.sim import Segment
from rtnet import config
from rtnet._lowlevel import ffi, lib
from rtnet.errors import ConfigError
from rtnet.options import OPTIONS
from rtnet.tdma_stats import TdmaState

# option key -> (field of struct rtn_tdma_cfg, factor from the option's unit to the field's),
# from the option table's own columns: every TDMA setting of the engine's configuration
C_FIELDS = {
    key: (opt.c_field, opt.c_scale)
    for key, opt in OPTIONS.items()
    if opt.c_field and not key.startswith("tdma.slot.")
}


def c_cfg(**fields):
    c = ffi.new("struct rtn_tdma_cfg *")
    lib.rtn_tdma_cfg_init(c, lib.RTN_TDMA_ROLE_MASTER)
    c.backup_offset_ns = 100_000  # a backup master, so that its offset can change too
    for k, v in fields.items():
        setattr(c, k, v)
    return c


def test_doctests():
    assert doctest.testmod(rtnet.options).failed == 0


def test_defaults_are_the_c_engines():
    c = c_cfg()
    py = TdmaConfig(role="master", cycle_us=1000)
    for key, (field, factor) in C_FIELDS.items():
        if OPTIONS[key].default is not None:
            assert OPTIONS[key].default * factor == getattr(c, field), key
            assert getattr(py, OPTIONS[key].name) == OPTIONS[key].default


@pytest.mark.parametrize("key", sorted(C_FIELDS))
def test_live_column_is_the_c_rule(key):
    field, factor = C_FIELDS[key]
    old = c_cfg()
    new = c_cfg(**{field: getattr(old, field) + factor})
    assert bool(lib.rtn_tdma_cfg_live(old, new)) == OPTIONS[key].live


def test_role_change_is_never_live():
    assert not lib.rtn_tdma_cfg_live(c_cfg(), c_cfg(role=lib.RTN_TDMA_ROLE_SLAVE))


@pytest.mark.parametrize(
    "key", sorted(k for k in C_FIELDS if k not in ("tdma.cycle_us", "tdma.backup_offset_us"))
)
def test_both_validators_take_the_maximum_and_refuse_one_more(key):
    opt = OPTIONS[key]
    field, factor = C_FIELDS[key]
    base = TdmaConfig(role="master", cycle_us=1000)
    for value, ok in ((opt.hi, True), (opt.hi + 1, False), (opt.lo, True)):
        c = c_cfg(backup_offset_ns=-1, **{field: value * factor})
        assert (lib.rtn_tdma_cfg_check(c) == 0) == ok, (key, value)
        if ok:
            validate(base.__class__(**{**base.__dict__, opt.name: value}))
        else:
            with pytest.raises(ConfigError, match=f"{opt.name}.*above maximum {opt.hi}"):
                validate(base.__class__(**{**base.__dict__, opt.name: value}))


@pytest.mark.parametrize(
    "opt",
    [
        o
        for o in OPTIONS.values()
        if o.toml
        and o.section == "tdma"
        and o.kind is int
        and o.name not in ("backup_offset_us", "cycle_us")
    ],
    ids=lambda o: o.key,
)
def test_every_tdma_key_of_the_table_is_a_toml_key_with_its_range(opt):
    text = f"[tdma]\nrole = 'master'\ncycle_us = 1000\n{opt.name} = {opt.hi}\n"
    assert getattr(config.parse_toml(text, "rtnet.toml").tdma, opt.name) == opt.hi
    text = f"[tdma]\nrole = 'master'\ncycle_us = 1000\n{opt.name} = {opt.hi + 1}\n"
    with pytest.raises(
        ConfigError,
        match=rf"^rtnet\.toml: tdma\.{opt.name}: {opt.hi + 1} "
        rf"above maximum {opt.hi}$",
    ):
        config.parse_toml(text, "rtnet.toml")


def test_rtmac_options_take_type_and_default_from_the_table_and_the_range_from_c():
    req = cli.parse_request(["tdma", "rteth0", "master", "1000"])[0]
    for name in ("cal_rounds", "max_slot_id", "max_cal_requests"):
        assert req[name] == OPTIONS[f"tdma.{name}"].default
    hi = OPTIONS["tdma.max_cal_requests"].hi
    with pytest.raises(cli.UsageError, match=rf"^max_cal_requests: {hi + 1} above maximum {hi}$"):
        cli.parse_request(["tdma", "rteth0", "master", "1000", "-m", str(hi + 1)])
    with pytest.raises(
        cli.UsageError,
        match=rf"invalid max calibration requests: x "
        rf"\(allowed: 1..{hi}\)",
    ):
        cli.parse_request(["tdma", "rteth0", "master", "1000", "-m", "x"])


def test_a_guard_change_is_staged_by_the_running_engine_without_recalibration():
    seg = Segment(2, latency_ns=5000)
    seg.start(0, TdmaConfig(role="master", cycle_us=1000, slots={0: Slot(0, 0)}))
    cfg = TdmaConfig(role="slave", cal_rounds=20, slots={0: Slot(0, 400)})
    seg.start(1, cfg)
    seg.run_for(200 * 1000 * 1000)
    before = seg.stats(1)
    assert before["state"] == TdmaState.SYNCED and before["calibration"]["done"] == 20
    seg.set_config(1, TdmaConfig(**{**cfg.__dict__, "guard_ns": 20_000, "cal_rounds": 30}))
    seg.run_for(5 * 1000 * 1000)
    after = seg.stats(1)
    assert after["config_applied"] == before["config_applied"] + 1
    assert after["state"] == TdmaState.SYNCED
    assert after["calibration"]["done"] == 20 and after["calibration"]["rounds"] == 30


def test_table_text_lists_every_option():
    text = rtnet.options.table_text()
    assert all(key in text for key in OPTIONS)


def test_the_c_field_column_names_a_c_field_and_a_dataclass_field():
    """TdmaConfig.to_c() fills the C structs from these rows alone."""
    import dataclasses

    c, cs = ffi.new("struct rtn_tdma_cfg *"), ffi.new("struct rtn_tdma_slot_cfg *")
    for sections, struct, model in ((("link", "tdma"), c, TdmaConfig), (("tdma.slot",), cs, Slot)):
        rows = rtnet.options.c_fields(*sections)
        names = {f.name for f in dataclasses.fields(model)}
        for o in rows:
            assert hasattr(struct, o.c_field) and o.name in names, o.key
    cfg = TdmaConfig(
        role="master",
        cycle_us=2000,
        backup_offset_us=100,
        guard_ns=7,
        slots={3: Slot(3, 10, 2, 4, 100, None, 50)},
        max_slot_id=5,
    )
    out = cfg.to_c()
    assert (out.cycle_ns, out.backup_offset_ns, out.guard_ns, out.max_slot_id, out.mtu) == (
        2_000_000,
        100_000,
        7,
        5,
        1500,
    )
    s = out.slots[0]
    assert (s.id, s.offset_ns, s.phasing, s.period, s.size, s.joint, s.window_ns) == (
        3,
        10_000,
        2,
        4,
        100,
        -1,
        50_000,
    )
    assert TdmaConfig(role="slave").to_c().backup_offset_ns == -1


def test_rtmac_flags_and_the_daemon_settings_come_from_the_flag_column():
    from rtnet import discipline_service

    assert cli.TDMA_MASTER_FLAGS == {
        "-c": "tdma.cal_rounds",
        "-i": "tdma.max_slot_id",
        "-m": "tdma.max_cal_requests",
    }
    assert cli.TDMA_SLAVE_FLAGS == {"-c": "tdma.cal_rounds", "-i": "tdma.max_slot_id"}
    assert discipline_service._FLAG_SETTINGS == {
        "master": ("cal_rounds", "max_slot_id", "max_cal_requests"),
        "slave": ("cal_rounds", "max_slot_id"),
    }


def test_a_tdma_range_is_refused_by_the_c_rule_alone_from_every_entry_point():
    """No entry point checks a TDMA setting's range before C: each refusal ends with
    rtn_tdma_cfg_check()'s own words."""
    import threading
    from types import SimpleNamespace

    from rtnet import rtnetconf
    from rtnet.discipline_service import DisciplineService
    from rtnet.errors import RtcfgError
    from rtnet.rtcfg import payload

    said = "cycle_us: 50 outside the supported range 100..1000000"
    c = TdmaConfig(role="master", cycle_us=50).to_c()
    assert lib.rtn_tdma_cfg_check(c) != 0 and rtnet._lowlevel.last_error() == said
    refusals = []
    for parse in (
        lambda: config.parse_toml("[tdma]\nrole = 'master'\ncycle_us = 50\n"),
        lambda: rtnetconf.parse_rtnet_conf('TDMA_CYCLE="50"\n', rtcfg=False),
        lambda: rtnetconf.parse_tdma_conf("master:\nip 10.0.0.1\ncycle 50\n", ip="10.0.0.1"),
        lambda: cli.parse_request("tdma rteth0 master 50".split()),
        lambda: payload.parse("tdma master 50\n", "rteth0"),
    ):
        with pytest.raises((ConfigError, cli.UsageError, RtcfgError)) as err:
            parse()
        refusals.append(str(err.value))
    station = SimpleNamespace(discipline="none", attach_tdma=lambda cfg: cfg.validated())
    d = DisciplineService(lambda: station, "rteth0", 100, threading.RLock(), threading.Event())
    with pytest.raises(ConfigError) as err:
        d.master({"cmd": "tdma.master", "cycle_us": 50}, None)
    refusals.append(str(err.value))
    assert all(r.endswith(said) for r in refusals), refusals
    assert refusals[0] == f"rtnet.toml: tdma.{said}"


def test_vnic_mode_is_a_row_with_its_choices():
    from rtnet import station

    assert config.VnicConfig().mode == OPTIONS["vnic.mode"].default == "batched"
    assert tuple(station.VNIC_MODES) == OPTIONS["vnic.mode"].choices
    with pytest.raises(
        ConfigError,
        match=r"^rtnet\.toml: vnic\.mode: 'fast' is not one of "
        r"batched, per-packet$",
    ):
        config.parse_toml("[vnic]\nmode = 'fast'\n")
