"""The neighbour table: its seqlock in shared memory (csrc/ip/rtn_neigh.c), the daemon's
model and RTnet's host-routes file (rtnet.neighbours), rtroute's command line and its
all-or-nothing -f (rtnet.rtroute), and the daemon's route requests (rtnet.ipv4_service)."""

import errno
import ipaddress

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from rtnet import ipv4, rtroute
from rtnet._lowlevel import ffi, lib
from rtnet.control_server import RequestError
from rtnet.devcmd import UsageError
from rtnet.errors import ConfigError, RtnetError
from rtnet.ipv4_service import Ipv4Service
from rtnet.neighbours import NeighbourTable, parse_hosts

B_MAC = "02:00:00:00:00:0b"


def table_with(entries):
    t = ffi.new("struct rtn_neigh_table *")
    e = ffi.new("struct rtn_neigh[]", max(1, len(entries)))
    for i, (ip, mac) in enumerate(entries):
        e[i].ip, e[i].mac = ipv4.ip_int(ip), bytes.fromhex(mac.replace(":", ""))
    lib.rtn_neigh_publish(t, e, len(entries))
    return t


def lookup(t, ip):
    out = ffi.new("uint8_t[6]")
    rc = lib.rtn_neigh_lookup(t, ipv4.ip_int(ip), out)
    return rc, bytes(out).hex(":")


# -- the table in shared memory ------------------------------------------------------------------


def test_a_published_entry_should_be_found_and_an_unknown_one_unreachable():
    t = table_with([("10.0.0.2", B_MAC), ("10.0.0.3", "02:00:00:00:00:0c")])
    assert lookup(t, "10.0.0.3") == (0, "02:00:00:00:00:0c")
    assert lookup(t, "10.0.0.9")[0] == -errno.EHOSTUNREACH
    assert t.seq % 2 == 0


def test_the_broadcast_should_need_no_entry():
    assert lookup(table_with([]), "255.255.255.255") == (0, "ff:ff:ff:ff:ff:ff")


def test_a_table_being_written_should_give_eagain_not_a_spin():
    t = table_with([("10.0.0.2", B_MAC)])
    t.seq += 1  # a writer that never finished
    assert lookup(t, "10.0.0.2")[0] == -errno.EAGAIN


def test_a_count_beyond_the_table_should_read_no_further_than_it():
    t = table_with([("10.0.0.2", B_MAC)])
    t.n = 0xFFFFFFFF
    assert lookup(t, "10.0.0.2") == (0, B_MAC)
    assert lookup(t, "10.9.9.9")[0] == -errno.EHOSTUNREACH


# -- the model and the hosts file -------------------------------------------------------------


def test_the_table_should_refuse_bad_entries_and_too_many_without_changing():
    t = NeighbourTable({"10.0.0.2": B_MAC})
    for ip, mac in (
        ("10.0.0.256", B_MAC),
        ("224.0.0.1", B_MAC),
        ("0.0.0.0", B_MAC),
        ("10.0.0.3", "01:00:5e:00:00:01"),
        ("10.0.0.3", "zz"),
    ):
        with pytest.raises(ConfigError):
            t.add(ip, mac)
    many = {f"10.1.{i // 250}.{i % 250 + 1}": B_MAC for i in range(lib.RTN_NEIGH_MAX)}
    with pytest.raises(ConfigError, match="at most"):
        t.merged(many)
    assert t.as_dict() == {"10.0.0.2": B_MAC}


def test_a_hosts_file_should_give_its_lines_and_skip_comments():
    text = "# RTnet hosts\n10.0.0.2 02:00:00:00:00:0B rteth0 # s2\n\n10.0.0.3 02:00:00:00:00:0c rteth1\n"
    assert parse_hosts(text) == [
        ("10.0.0.2", B_MAC, "rteth0"),
        ("10.0.0.3", "02:00:00:00:00:0c", "rteth1"),
    ]


@pytest.mark.parametrize(
    "line, why",
    [
        ("10.0.0.2 02:00:00:00:00:0b", "expected '<ip> <mac> <dev>'"),
        ("10.0.0.2 02:00:00:00:00:0b rteth0 extra", "expected"),
        ("10.0.0.x 02:00:00:00:00:0b rteth0", "not an IPv4 address"),
        ("10.0.0.2 02:00:00:00:0b rteth0", "not a MAC address"),
        ("10.0.0.2 ff:ff:ff:ff:ff:ff rteth0", "multicast"),
        ("10.0.0.2 02:00:00:00:00:0b a/b", "device"),
    ],
)
def test_a_bad_hosts_line_should_be_one_error_naming_its_line(line, why):
    with pytest.raises(ConfigError, match=why) as exc:
        parse_hosts("10.0.0.9 02:00:00:00:00:09 rteth0\n" + line + "\n", "hosts")
    assert str(exc.value).startswith("hosts:2: ") and "\n" not in str(exc.value)


def test_the_same_address_twice_on_a_device_should_be_refused():
    with pytest.raises(ConfigError, match="given already on line 1"):
        parse_hosts("10.0.0.2 02:00:00:00:00:0b rteth0\n10.0.0.2 02:00:00:00:00:0c rteth0\n")


_ips = hs.integers(0x01000001, 0xDFFFFFFE).map(lambda v: str(ipaddress.IPv4Address(v)))
_macs = hs.binary(min_size=6, max_size=6).map(lambda b: bytes([b[0] & 0xFE]) + b[1:])


@settings(max_examples=150, deadline=None)
@given(hs.dictionaries(_ips, _macs, max_size=20), hs.sampled_from(["rteth0", "eth1"]))
def test_a_written_hosts_file_should_parse_back_to_its_entries(entries, dev):
    text = "".join(f"{ip}\t{m.hex(':')} {dev}  # c\n" for ip, m in entries.items())
    assert parse_hosts(text) == [(ip, m.hex(":"), dev) for ip, m in entries.items()]


@settings(max_examples=300, deadline=None)
@given(hs.text(max_size=200))
def test_any_text_should_parse_or_be_one_config_error(text):
    try:
        parse_hosts(text)
    except ConfigError as exc:
        assert "\n" not in str(exc)


# -- rtroute --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, want",
    [
        ([], {"action": "list", "netns": None}),
        (
            ["add", "10.0.0.2", "02:00:00:00:00:0B", "dev", "rteth0"],
            {"action": "add", "netns": None, "ip": "10.0.0.2", "mac": B_MAC, "dev": "rteth0"},
        ),
        (
            ["-n", "ns1", "del", "10.0.0.2"],
            {"action": "del", "netns": "ns1", "ip": "10.0.0.2", "dev": None},
        ),
        (
            ["get", "10.0.0.2", "dev", "rteth0"],
            {"action": "get", "netns": None, "ip": "10.0.0.2", "dev": "rteth0"},
        ),
        (["-f", "hosts"], {"action": "file", "netns": None, "file": "hosts"}),
        (
            ["solicit", "10.0.0.2", "dev", "rteth0"],
            {"action": "solicit", "netns": None, "ip": "10.0.0.2", "dev": "rteth0"},
        ),
    ],
)
def test_rtroute_should_read_rtnet_syntax(argv, want):
    assert rtroute.parse_args(argv) == want


@pytest.mark.parametrize(
    "argv",
    [
        ["add", "10.0.0.2", "02:00:00:00:00:0b"],
        ["add", "10.0.0.2", "02:00:00:00:00:0b", "eth", "x"],
        ["add", "300.0.0.2", "02:00:00:00:00:0b", "dev", "rteth0"],
        ["del"],
        ["get", "1.2.3.4", "dev"],
        ["del", "10.0.0.0", "netmask", "255.0.0.0"],
        ["solicit", "10.0.0.2"],
        ["solicit"],
        ["frobnicate"],
        ["-f"],
        ["-n"],
    ],
)
def test_rtroute_should_refuse_a_bad_command_line(argv):
    with pytest.raises(UsageError):
        rtroute.parse_args(argv)


def test_rtroute_should_print_one_line_and_exit_2_for_a_bad_file(tmp_path, capsys):
    f = tmp_path / "hosts"
    f.write_text("10.0.0.2 02:00:00:00:00:0b rteth0\n10.0.0.3 nope rteth0\n")
    assert rtroute.main(["-f", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ":2: hardware address 'nope'" in err


def test_rtroute_should_refuse_a_fifo_or_a_directory_as_its_file_without_waiting(tmp_path, capsys):
    import os

    fifo = tmp_path / "hosts"
    os.mkfifo(fifo)  # opened for reading, a FIFO would block forever
    for path, why in ((fifo, "not a regular file"), (tmp_path, "is a directory")):
        assert rtroute.main(["-f", str(path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and why in err


class FakeDaemons:
    """rtmac.control.send_request for several daemons' route tables; ``refuse`` a device."""

    def __init__(self, tables, refuse=None):
        self.tables, self.refuse, self.sets = tables, refuse, []

    def __call__(self, dev, req, timeout=None, netns=None):
        if req["cmd"] == "route.list":
            return {"routes": [{"ip": i, "mac": m} for i, m in self.tables[dev].items()]}
        if req["cmd"] == "route.set":
            self.sets.append(dev)
            if dev == self.refuse:
                raise rtroute.control.ControlError(0, "refused")
            self.tables[dev] = {r["ip"]: r["mac"] for r in req["routes"]}
            return {}
        raise AssertionError(req)


def test_rtroute_f_should_put_back_what_it_changed_when_a_device_refuses(tmp_path, monkeypatch):
    f = tmp_path / "hosts"
    f.write_text("10.0.0.2 02:00:00:00:00:0b a0\n10.0.0.3 02:00:00:00:00:0c b0\n")
    daemons = FakeDaemons({"a0": {"10.0.0.9": B_MAC}, "b0": {}}, refuse="b0")
    monkeypatch.setattr(rtroute.control, "send_request", daemons)
    assert rtroute.main(["-f", str(f)]) == 1
    assert daemons.tables == {"a0": {"10.0.0.9": B_MAC}, "b0": {}}
    assert daemons.sets == ["a0", "b0", "a0"]  # a0 changed, then put back


def test_rtroute_f_should_merge_the_file_into_each_table(tmp_path, monkeypatch):
    f = tmp_path / "hosts"
    f.write_text("10.0.0.2 02:00:00:00:00:0b a0\n10.0.0.3 02:00:00:00:00:0c b0\n")
    daemons = FakeDaemons({"a0": {"10.0.0.9": B_MAC}, "b0": {}})
    monkeypatch.setattr(rtroute.control, "send_request", daemons)
    assert rtroute.main(["-f", str(f)]) == 0
    assert daemons.tables == {
        "a0": {"10.0.0.9": B_MAC, "10.0.0.2": B_MAC},
        "b0": {"10.0.0.3": "02:00:00:00:00:0c"},
    }


# -- the daemon's route requests -------------------------------------------------------------------


class FakeStation:
    def __init__(self, refuse=False):
        self.published, self.refuse = [], refuse

    def set_neighbours(self, table):
        if self.refuse:
            raise RtnetError(errno.EINVAL, "neighbour 0: not a unicast address")
        self.published.append(dict(table))


def service(station):
    return Ipv4Service(lambda: station)


def test_route_requests_should_change_the_table_and_publish_it_whole():
    st = FakeStation()
    s = service(st)
    s.h_add({"ip": "10.0.0.2", "mac": B_MAC}, None)
    s.h_set({"routes": [{"ip": "10.0.0.3", "mac": B_MAC}, {"ip": "10.0.0.4", "mac": B_MAC}]}, None)
    s.h_del({"ip": "10.0.0.3"}, None)
    assert st.published == [
        {"10.0.0.2": B_MAC},
        {"10.0.0.3": B_MAC, "10.0.0.4": B_MAC},
        {"10.0.0.4": B_MAC},
    ]
    assert s.h_get({"ip": "10.0.0.4"}, None) == {"ip": "10.0.0.4", "mac": B_MAC}
    with pytest.raises(RequestError, match="no route to 10.0.0.3"):
        s.h_get({"ip": "10.0.0.3"}, None)


@pytest.mark.parametrize(
    "req",
    [
        {"routes": [{"ip": "10.0.0.3", "mac": B_MAC}, {"ip": "10.0.0.3", "mac": B_MAC}]},
        {"routes": [{"ip": "10.0.0.3", "mac": B_MAC}, {"ip": "nope", "mac": B_MAC}]},
        {"routes": [{"ip": "10.0.0.3", "mac": B_MAC}, "x"]},
        {"routes": "10.0.0.3"},
    ],
)
def test_a_bad_route_set_should_change_nothing(req):
    st = FakeStation()
    s = service(st)
    s.h_add({"ip": "10.0.0.2", "mac": B_MAC}, None)
    with pytest.raises(RequestError):
        s.h_set(req, None)
    assert st.published == [{"10.0.0.2": B_MAC}] and s.table.as_dict() == {"10.0.0.2": B_MAC}


def test_a_table_the_station_refuses_should_leave_the_old_one():
    s = service(FakeStation(refuse=True))
    with pytest.raises(RequestError, match="not a unicast"):
        s.h_add({"ip": "10.0.0.2", "mac": B_MAC}, None)
    assert s.table.as_dict() == {}


def test_a_peer_learnt_from_rtcfg_should_be_added_and_a_bad_one_ignored():
    st = FakeStation()
    s = service(st)
    s.learn("10.0.0.5", B_MAC)
    s.learn("10.0.0.5", B_MAC)  # the same again: nothing new to publish
    s.learn("999.0.0.1", B_MAC)
    s.learn("10.0.0.6", "ff:ff:ff:ff:ff:ff")
    assert st.published == [{"10.0.0.5": B_MAC}]
