"""Transmit windows in every way a user gives a schedule: rtnet.toml, the extended
tdma.conf, `rtmac tdma <dev> slot ... -w`, and the planner's command line."""

import pytest

from rtmac import cli, plan_cli
from rtmac.plan import plan
from rtnet.config import parse_toml
from rtnet.errors import ConfigError
from rtnet.rtnetconf import parse_tdma_conf

TOML = """
[station]
name = "s1"
[tdma]
role = "master"
cycle_us = 1000
[[tdma.slot]]
id = 0
offset_us = 7
size = 200
[[tdma.slot]]
id = 1
offset_us = 27
window_us = {window}
"""


def test_toml_window_us():
    cfg = parse_toml(TOML.format(window=500))
    assert cfg.tdma.slots[1].window_us == 500 and cfg.tdma.slots[0].window_us == 0


@pytest.mark.parametrize(
    "window, message",
    [(100, "shorter than one 1514-byte frame"), (990, "past the 1000 us cycle"), (-1, "window_us")],
)
def test_toml_window_errors_name_the_slot(window, message):
    with pytest.raises(ConfigError, match=message):
        parse_toml(TOML.format(window=window))


def test_planned_tdma_conf_reads_back_as_the_plan():
    p = plan(3)
    text = p.tdma_conf()
    for st in p.stations:
        assert parse_tdma_conf(text, ip=f"198.18.0.{st.index}") == p.tdma_config(st.index)


def test_planned_toml_reads_back_as_the_plan():
    p = plan(3)
    for st in p.stations:
        text = f'[station]\nname = "s{st.index}"\n' + p.toml(st.index)
        assert parse_toml(text).tdma == p.tdma_config(st.index)


def test_tdma_conf_window_for_a_slot_it_does_not_have():
    text = "master:\nip 198.18.0.1\ncycle 1000\nslot 0 0\nwindow 1 300\n"
    with pytest.raises(ConfigError, match="line 5: window.*slot 1 has no slot line"):
        parse_tdma_conf(text, ip="198.18.0.1")


def test_tdma_conf_without_window_lines_is_rtnets_schedule():
    text = "master:\nip 198.18.0.1\ncycle 5000\nslot 0 0\nslot 1 1000\n"
    cfg = parse_tdma_conf(text, ip="198.18.0.1")
    assert all(s.window_us == 0 for s in cfg.slots.values())


def test_rtmac_slot_w_sends_the_window_and_only_then():
    req, _ = cli.parse_request("tdma rteth0 slot 1 27 -w 700".split())
    assert req["window_us"] == 700
    req, _ = cli.parse_request("tdma rteth0 slot 1 27".split())
    assert "window_us" not in req
    with pytest.raises(cli.UsageError, match="-w needs a slot offset"):
        cli.parse_request("tdma rteth0 slot 1 -w 700".split())


def test_plan_cli_prints_and_refuses(capsys):
    assert plan_cli.main(["--stations", "3"]) == 0
    out = capsys.readouterr().out
    assert "station  3 slave" in out
    assert cli.main(["tdma", "plan", "--stations", "3", "--format", "tdma.conf"]) == 0
    assert capsys.readouterr().out == plan(3).tdma_conf()
    assert plan_cli.main(["--stations", "16", "--cycle-us", "1000"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "16 stations do not fit a 1000 us cycle" in err[0]
    assert plan_cli.main(["--stations", "3", "--window", "9=100"]) == 2
    assert plan_cli.main(["--stations", "x"]) == 2
