"""RTcfg as rtnetctl up runs it: the configuration (rtnet.conf, tdma.conf, rtnet.toml), the
stage-2 file and commands, and the order of the requests (rtnet.rtcfg.setup, .startup)."""

import os

import pytest

from rtnet import configfile, rtnetconf
from rtnet.errors import ConfigError, RtcfgError, RtnetError
from rtnet.rtcfg import payload, setup, startup

MASTER = (
    'IPADDR="10.0.0.1"\nTDMA_CYCLE="1000"\nTDMA_OFFSET="150"\nTDMA_SLAVES="10.0.0.2 10.0.0.3"\n'
)


def conf(tmp_path, text, name="rtnet.conf", **kw):
    path = tmp_path / name
    path.write_text(text)
    return configfile.load(str(path), **kw)


# -- the master's configuration -----------------------------------------------------------


def test_a_master_serves_every_slave_of_tdma_slaves_with_its_slot_and_vnic(tmp_path):
    (tmp_path / "s2").write_text("# common\nvnic up\n")
    cfg = conf(tmp_path, MASTER + 'STAGE_2_SRC="s2"\n')
    r = cfg.rtcfg
    assert r.role == "server"
    assert [(i.address, i.hw, i.stage1) for i in r.invitations] == [
        ("10.0.0.2", None, "tdma slot 0 150\nvnic up\n"),
        ("10.0.0.3", None, "tdma slot 0 300\nvnic up\n"),
    ]
    assert {i.stage2 for i in r.invitations} == {"# common\nvnic up\n"}
    assert (cfg.vnic.enabled, cfg.vnic.address) == (True, "10.0.0.1/8")  # classful, as ifconfig
    assert cfg.tdma.role == "master" and list(cfg.tdma.slots) == [0]


def test_the_masters_netmask_goes_to_the_slaves_vnic():
    cfg = rtnetconf.parse_rtnet_conf(MASTER + 'NETMASK="255.255.255.0"\n', "rtnet.conf")
    assert cfg.rtcfg.invitations[0].stage1 == "tdma slot 0 150\nvnic address 10.0.0.2/24\n"
    assert cfg.vnic.address == "10.0.0.1/24"


def test_without_rtcfg_the_master_has_no_server_and_no_vnic():
    cfg = rtnetconf.parse_rtnet_conf(MASTER, "rtnet.conf", rtcfg=False)
    assert cfg.rtcfg is None and not cfg.vnic.enabled


@pytest.mark.parametrize(
    "text,message",
    [
        ('TDMA_SLAVES="10.0.0.2 nobody"\n', "TDMA_SLAVES: 'nobody' is not an IPv4 address"),
        ('TDMA_SLAVES="10.0.0.2 10.0.0.2"\n', "TDMA_SLAVES: an address is listed twice"),
        ('NETMASK="255.0.255.0"\n', "NETMASK: '255.0.255.0' is not a netmask"),
        ('STAGE_2_SRC="missing"\n', "STAGE_2_SRC: "),
        ('STAGE_2_DST="x"\n', "STAGE_2_DST: only for TDMA_MODE=slave"),
        ('STAGE_2_CMDS="vnic up"\n', "STAGE_2_CMDS: only for TDMA_MODE=slave"),
        ('RTCFG_TIMEOUT="-1"\n', "RTCFG_TIMEOUT: '-1' is not a whole number"),
        (
            'TDMA_OFFSET="1000"\nTDMA_SLAVES="'
            + " ".join(f"10.0.1.{i}" for i in range(1, 12))
            + '"\n',
            "TDMA_SLAVES: 10.0.1.1, the slave number 1, would get slot 0 at 1000 us, "
            "beyond the 1000 us cycle",
        ),
    ],
)
def test_a_bad_master_configuration_is_one_line(tmp_path, text, message):
    with pytest.raises(ConfigError) as e:
        conf(tmp_path, MASTER + text)
    assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize(
    "content,message",
    [
        (b"rm -rf /\n", "line 1: 'rm' is not an allowed command"),
        (b"tdma slot 1 400\n$(reboot)\n", "line 2: '$(reboot)' is not an allowed command"),
        (b"vnic up\n\xff\n", "line 2: a byte that is not ASCII"),
        (b"x" * (payload.MAX_STAGE2_LEN + 1), "more than 65536 bytes"),
    ],
)
def test_a_stage_2_file_that_is_not_a_command_list_refuses_the_configuration(
    tmp_path, content, message
):
    (tmp_path / "s2").write_bytes(content)
    with pytest.raises(ConfigError) as e:
        conf(tmp_path, MASTER + 'STAGE_2_SRC="s2"\n')
    assert str(e.value).startswith(f"{tmp_path}/rtnet.conf: STAGE_2_SRC: {tmp_path}/s2: ")
    assert message in str(e.value)


def test_a_stage_2_source_that_is_not_a_regular_file_is_refused(tmp_path):
    os.mkfifo(tmp_path / "fifo")  # would block a plain open
    with pytest.raises(ConfigError, match="not a regular file"):
        conf(tmp_path, MASTER + 'STAGE_2_SRC="fifo"\n')


TDMA_CONF = """master:
ip 10.0.0.1
cycle 5000
slot 0 0

backup-master:
ip 10.0.0.2
backup-offset 200
slot 0 400

slave:
ip 10.0.0.3
mac 02:52:54:00:00:03
slot 0 2000 1/1 400
slot 1 3000 2/2 400 0
stage2 own.stage2
"""


def test_extended_mode_serves_the_slave_and_backup_master_sections(tmp_path):
    (tmp_path / "tdma.conf").write_text(TDMA_CONF)
    (tmp_path / "own.stage2").write_text("# for 10.0.0.3\n")
    (tmp_path / "all.stage2").write_text("# for all\n")
    cfg = conf(tmp_path, 'IPADDR="10.0.0.9"\nTDMA_CONFIG="tdma.conf"\nSTAGE_2_SRC="all.stage2"\n')
    backup, slave = cfg.rtcfg.invitations
    assert (backup.address, backup.hw) == ("10.0.0.2", None)
    assert backup.stage1 == (
        "tdma detach\ntdma master 5000 -b 200\ntdma slot 0 400 -p 1/1 -s 1500\nvnic up\n"
    )
    assert backup.stage2 == "# for all\n"
    assert (slave.address, slave.hw) == ("10.0.0.3", "02:52:54:00:00:03")
    assert slave.stage1 == (
        "tdma slot 0 2000 -p 1/1 -s 400\ntdma slot 1 3000 -p 2/2 -s 400 -j 0\nvnic up\n"
    )
    assert slave.stage2 == "# for 10.0.0.3\n"  # the section's own stage2 line
    # the master: section configures this station, whatever IPADDR says (as rtnet start)
    assert (cfg.ip, cfg.tdma.role, cfg.tdma.cycle_us) == ("10.0.0.1", "master", 5000)
    for inv in cfg.rtcfg.invitations:  # every stage 1 parses for the client
        assert payload.parse(inv.stage1, "rteth0")


def test_extended_mode_refuses_a_section_rtcfg_cannot_find(tmp_path):
    (tmp_path / "tdma.conf").write_text(
        "master:\nip 10.0.0.1\ncycle 1000\nslot 0 0\nslave:\nslot 0 400\n"
    )
    with pytest.raises(ConfigError, match=r"tdma.conf: line 5 \(slave\): needs an ip or mac"):
        conf(tmp_path, 'TDMA_CONFIG="tdma.conf"\n')


# -- a slave's configuration ----------------------------------------------------------------


def test_a_slave_needs_only_its_mode(tmp_path):
    cfg = conf(tmp_path, 'TDMA_MODE="slave"\n')
    assert cfg.rtcfg.role == "client" and cfg.ip is None  # the device's address is used
    assert cfg.tdma.role == "slave" and cfg.tdma.slots == {}  # slots come from the server
    assert cfg.vnic.enabled and cfg.vnic.address is None  # opened with stage 1
    assert (cfg.rtcfg.stage2_dst, cfg.rtcfg.stage2_cmds) == (None, "")


def test_a_slaves_stage_2_destination_and_commands(tmp_path):
    (tmp_path / "got").mkdir()
    cfg = conf(
        tmp_path,
        'TDMA_MODE="slave"\nSTAGE_2_DST="got/stage2"\nSTAGE_2_CMDS="tdma slot 1 700; vnic up"\n',
    )
    assert cfg.rtcfg.stage2_dst == str(tmp_path / "got" / "stage2")
    assert [r["cmd"] for r in payload.parse(cfg.rtcfg.stage2_cmds, "rteth0")] == [
        "tdma.slot",
        "vnic.up",
    ]


@pytest.mark.parametrize(
    "line,message",
    [
        (
            'STAGE_2_CMDS="sh /etc/stage2.sh"',
            "STAGE_2_CMDS: line 1: 'sh' is not an allowed command",
        ),
        ('STAGE_2_CMDS="tdma slot 1 400; reboot"', "'reboot' is not an allowed command"),
        ('STAGE_2_CMDS="tdma slot 1 400 -l /etc/passwd"', "option '-l' is not allowed here"),
        ('STAGE_2_DST="nodir/x"', "STAGE_2_DST: "),
        ('STAGE_2_DST="sub"', "exists and is not a regular file"),
        ('STAGE_2_DST="sub/"', "not a file name"),
        ('STAGE_2_DST="link"', "exists and is not a regular file"),
        ('STAGE_2_SRC="x"', "STAGE_2_SRC: only for TDMA_MODE=master"),
        ('IPADDR="10.0.0.300"', "IPADDR: '10.0.0.300' is not an IPv4 address"),
    ],
)
def test_a_bad_slave_configuration_is_one_line(tmp_path, line, message):
    (tmp_path / "sub").mkdir()
    os.symlink("/etc/passwd", tmp_path / "link")
    with pytest.raises(ConfigError) as e:
        conf(tmp_path, f'TDMA_MODE="slave"\n{line}\n')
    assert message in str(e.value) and "\n" not in str(e.value)


# -- rtnet.toml -------------------------------------------------------------------------------


def test_toml_rtcfg_server_and_client(tmp_path):
    server = conf(
        tmp_path,
        '[tdma]\nrole = "master"\ncycle_us = 1000\n[[tdma.slot]]\nid = 0\n'
        'offset_us = 0\n[rtcfg]\nenabled = true\nslaves = ["10.0.0.2"]\n'
        "offset_us = 300\nperiod_ms = 100\n",
        "m.toml",
    )
    assert server.rtcfg.role == "server" and server.rtcfg.period_ms == 100
    assert server.rtcfg.invitations[0].stage1 == "tdma slot 0 300\n"  # no VNIC on this segment
    client = conf(
        tmp_path,
        '[tdma]\nrole = "slave"\n[vnic]\nenabled = true\n'
        '[rtcfg]\nenabled = true\nstage2_cmds = "vnic up"\n',
        "s.toml",
    )
    assert client.rtcfg.role == "client" and client.vnic.enabled  # its slot comes later
    assert (
        conf(
            tmp_path, '[tdma]\nrole = "slave"\n[rtcfg]\nenabled = true\n', "o.toml", rtcfg=False
        ).rtcfg
        is None
    )
    assert conf(tmp_path, '[tdma]\nrole = "slave"\n', "p.toml", rtcfg=True).rtcfg.role == "client"


@pytest.mark.parametrize(
    "text,message",
    [
        ("[rtcfg]\nenabled = 1\n", "rtcfg.enabled: 1 is not true or false"),
        ("[rtcfg]\nenabled = true\nslaves = [7]\n", "rtcfg.slaves: 7 is not an IPv4 address"),
        ('[rtcfg]\nenabled = true\nstage2_dst = "x"\n', "rtcfg.stage2_dst: only for a client"),
        ("[rtcfg]\nenabled = true\ntimeout_s = 100000\n", "rtcfg.timeout_s: 100000 above maximum"),
        ("[rtcfg]\nenabled = true\nbogus = 1\n", "rtcfg.bogus: unknown key"),
    ],
)
def test_toml_rtcfg_errors(tmp_path, text, message):
    with pytest.raises(ConfigError, match=message):
        conf(
            tmp_path,
            '[tdma]\nrole = "master"\ncycle_us = 1000\n[[tdma.slot]]\nid = 0\n'
            "offset_us = 0\n" + text,
            "m.toml",
        )


# -- writing the stage-2 file -----------------------------------------------------------------


def test_write_stage2_replaces_the_file_whole_and_leaves_nothing_else(tmp_path):
    dst = tmp_path / "stage2"
    dst.write_bytes(b"old")
    setup.write_stage2(str(dst), b"tdma slot 1 400\n")
    assert dst.read_bytes() == b"tdma slot 1 400\n"
    assert os.listdir(tmp_path) == ["stage2"]


def test_write_stage2_never_follows_a_link_planted_at_the_destination(tmp_path):
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    os.symlink(victim, tmp_path / "stage2")
    with pytest.raises(RtcfgError, match="not a regular file"):
        setup.write_stage2(str(tmp_path / "stage2"), b"new")
    assert victim.read_bytes() == b"keep"


# -- the order of the requests ----------------------------------------------------------------


class Daemon:
    """Answers requests as rtnetd would, recording them; ``fail`` names a command to refuse."""

    def __init__(self, fail=None, stage2="# s2\n"):
        self.requests, self.fail, self.stage2 = [], fail, stage2

    def __call__(self, req, timeout):
        self.requests.append((req, timeout))
        if req["cmd"] == self.fail:
            raise RtnetError(71, f"{req['cmd'].split('.')[1]}: timed out after 5000 ms")
        return {"config": self.stage2} if req["cmd"] == "rtcfg.announce" else {}


def test_the_server_adds_every_station_then_waits_and_declares_itself_ready():
    s = setup.RtcfgSetup(
        "server",
        tuple(setup.simple_invitations(["10.0.0.2", "10.0.0.3"], 100, None, "# s2\n")),
        timeout_s=0,
        period_ms=250,
    )
    daemon, said = Daemon(), []
    assert startup.run(s, daemon, said.append) == {
        "role": "server",
        "stations": ["10.0.0.2", "10.0.0.3"],
    }
    cmds = [r["cmd"] for r, _ in daemon.requests]
    assert cmds == ["rtcfg.server", "rtcfg.add", "rtcfg.add", "rtcfg.wait", "rtcfg.ready"]
    assert daemon.requests[0][0]["period_ms"] == 250
    assert daemon.requests[2][0]["stage1"] == "tdma slot 0 200\nvnic up\n"
    assert daemon.requests[2][0]["stage2"] == "# s2\n"
    # no time-out: the blocking ones wait as long as it takes, and so does their reply
    assert daemon.requests[3] == ({"cmd": "rtcfg.wait", "timeout_ms": 0}, None)
    assert said == [startup.WAITING]


def test_the_client_runs_rtnets_three_stages_and_keeps_stage_2(tmp_path):
    s = setup.RtcfgSetup(
        "client", stage2_dst=str(tmp_path / "got"), stage2_cmds="tdma slot 1 700\n", timeout_s=30
    )
    daemon, said = Daemon(), []
    clock = iter(range(0, 100, 2)).__next__  # two seconds pass at each look
    startup.run(s, daemon, said.append, clock=clock)
    assert said == [startup.STAGE_1, startup.STAGE_2, startup.STAGE_3]
    assert [r["cmd"] for r, _ in daemon.requests] == [
        "rtcfg.client",
        "rtcfg.announce",
        "rtcfg.commands",
        "rtcfg.ready",
    ]
    assert (tmp_path / "got").read_bytes() == b"# s2\n"
    assert daemon.requests[2][0]["commands"] == "tdma slot 1 700\n"
    waits = [r["timeout_ms"] for r, _ in daemon.requests if "timeout_ms" in r]
    assert waits == [28_000, 26_000, 24_000]  # what is left of the 30 s, each time


def test_a_failed_step_is_one_error_naming_it_and_nothing_follows():
    daemon = Daemon(fail="rtcfg.client")
    with pytest.raises(startup.StartupError) as e:
        startup.run(setup.RtcfgSetup("client", timeout_s=5), daemon, lambda _: None)
    assert str(e.value.strerror) == (
        "stage 1 (searching for master): client: timed out after 5000 ms"
    )
    assert [r["cmd"] for r, _ in daemon.requests] == ["rtcfg.client"]


def test_the_time_out_ends_the_bring_up_before_the_next_step():
    clock = iter([0, 1, 7]).__next__
    daemon = Daemon()
    with pytest.raises(startup.StartupError, match=r"^stage 2 .*: not done within 5 s$"):
        startup.run(setup.RtcfgSetup("client", timeout_s=5), daemon, lambda _: None, clock=clock)
    assert [r["cmd"] for r, _ in daemon.requests] == ["rtcfg.client"]


def test_a_stage_2_file_the_daemon_could_not_read_is_refused(tmp_path):
    daemon = Daemon(stage2="caf\ufffd\n")
    with pytest.raises(startup.StartupError, match="no readable stage-2 file"):
        startup.run(
            setup.RtcfgSetup("client", stage2_dst=str(tmp_path / "got"), timeout_s=0),
            daemon,
            lambda _: None,
        )
    assert not (tmp_path / "got").exists()
