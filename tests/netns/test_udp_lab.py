"""Real-time UDP/IPv4 and ICMP between two rtnetd in a lab (root, namespaces, AF_XDP):
UDP sockets app to app both ways (content, order, stamps), the errors of sendto(),
plain Linux UDP and kernel ping beside the real-time path, rtping over ICMP, bad
datagrams counted, and a capture that Wireshark's IPv4/UDP/ICMP dissectors accept."""

import errno
import socket
import subprocess
import time

import pytest
from conftest import require_tool, tdma_ipv4_pair, wait_for

from rtnet import cli, netns, rtroute
from rtnet._lowlevel import lib
from rtnet.app import UdpSocket

pytestmark = pytest.mark.netns

SYNC_TOL_NS = 200_000  # the two stations' clocks agree to some us; generous on a VM
LOOSE_NS = 200_000_000  # "promptly" on a noisy VM
PORT, PLAIN_PORT, LINUX_PORT = 5000, 5001, 7000


@pytest.fixture(scope="module")
def lab():
    yield from tdma_ipv4_pair("u1")


def status(ns) -> dict:
    from rtnet.stationctl import request

    return request("rteth0", {"cmd": "status"}, netns=ns)["status"]


def recv_all(sock, n, timeout=5.0):
    out, deadline = [], time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        d = sock.recvfrom(timeout=0.5)
        if d is not None:
            out.append(d)
    return out


def test_stamped_udp_should_go_app_to_app_both_ways_in_order_with_stamps(lab):
    s1, s2 = lab.station(1), lab.station(2)
    with (
        UdpSocket(netns=s1.netns, stamped=True, slot=0) as a,
        UdpSocket(netns=s2.netns, stamped=True, slot=0) as b,
    ):
        a.bind(PORT)
        b.bind(PORT)
        for src, dst, from_ip, to_ip, name in (
            (a, b, s1.ip, s2.ip, b"ab"),
            (b, a, s2.ip, s1.ip, b"ba"),
        ):
            seqs = [
                src.sendto(name + b" %03d" % i + bytes(i * 7), (to_ip, PORT)) for i in range(20)
            ]
            got = recv_all(dst, 20)
            assert [d.data for d in got] == [name + b" %03d" % i + bytes(i * 7) for i in range(20)]
            assert [d.seq for d in got] == seqs  # in order, none lost
            assert all(d.peer == (from_ip, PORT) for d in got)
            for d in got:
                # one station's RT thread and its application convert to global time with
                # the clock offset of two different moments: a slave's may differ by some us
                assert 0 < d.sched_ns <= d.handover_ns < d.pickup_ns + SYNC_TOL_NS
                assert d.pickup_ns <= d.tx_ns and d.rx_ns <= d.rx_rt_ns
                assert d.tx_ns - SYNC_TOL_NS < d.rx_ns and d.rx_rt_ns < d.take_ns + SYNC_TOL_NS
                assert d.take_ns - d.sched_ns < LOOSE_NS
        with pytest.raises(OSError) as exc:
            a.sendto(b"x", ("198.18.0.99", PORT))
        assert exc.value.errno == errno.EHOSTUNREACH
        # larger than a frame: it leaves in fragments and arrives whole, stamped
        big = bytes(range(256)) * 24
        seq = a.sendto(big, (s2.ip, PORT))
        got = recv_all(b, 1)
        assert [(d.data, d.seq) for d in got] == [(big, seq)]
        assert got[0].pickup_ns <= got[0].tx_ns and got[0].rx_ns <= got[0].rx_rt_ns
        ip = status(s2.netns)["ipv4"]
        assert (ip["rx_fragments"], ip["rx_reassembled"]) == (5, 1)
        with pytest.raises(OSError) as exc:
            a.sendto(bytes(lib.RTN_UDP_MAX_DGRAM + 1), (s2.ip, PORT))
        assert exc.value.errno == errno.EMSGSIZE
        assert a.stats()["tx_unreachable"] == 1


def linux_socket_on(st) -> socket.socket:
    """A UDP socket of Linux's own in station ``st``'s namespace.  A veth hands the peer
    Linux's datagrams with the UDP checksum left to "the NIC" (CHECKSUM_PARTIAL): the
    real-time path would count them as bad.  A real NIC fills it in on the way out; here
    Linux is made to compute it itself."""
    subprocess.run(
        ["ip", "netns", "exec", st.netns, "ethtool", "-K", "rteth0", "tx", "off"],
        check=True,
        capture_output=True,
        timeout=10,
    )
    with netns.entered(st.netns):
        return socket.socket(socket.AF_INET, socket.SOCK_DGRAM)


def kernel_ping(st, ip: str, *args: str) -> None:
    """Linux's ping from station ``st``'s namespace to ``ip``, every request answered."""
    res = subprocess.run(
        ["ip", "netns", "exec", st.netns, "ping", *args, ip],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert res.returncode == 0, res.stdout + res.stderr


def test_plain_udp_should_talk_to_linux_sockets_and_linux_ip_should_stay_linux(lab):
    s1, s2 = lab.station(1), lab.station(2)
    linux = linux_socket_on(s1)
    with linux, UdpSocket(netns=s2.netns) as rt:
        linux.bind((s1.ip, LINUX_PORT))
        linux.settimeout(5)
        rt.bind(PLAIN_PORT)
        # Linux -> a real-time port: steered to the RT socket, the data alone
        linux.sendto(b"from linux", (s2.ip, PLAIN_PORT))
        d = rt.recvfrom(timeout=5)
        assert d is not None and d.data == b"from linux" and d.peer == (s1.ip, LINUX_PORT)
        assert d.rx_ns > 0 and d.tx_ns == 0  # no sender stamps
        # a real-time socket -> a port Linux serves: left to Linux by the XDP program
        rt.sendto(b"to linux", (s1.ip, LINUX_PORT))
        data, peer = linux.recvfrom(100)
        assert data == b"to linux" and peer == (s2.ip, PLAIN_PORT)
    # kernel ping: answered by the peer's RT thread, the reply back to Linux
    kernel_ping(s1, s2.ip, "-c", "2", "-i", "0.2", "-W", "2")
    assert status(s2.netns)["ipv4"]["rx_echo_request"] >= 2


def test_datagrams_larger_than_a_frame_should_cross_between_linux_and_rt_sockets(lab):
    """RTnet's stack fragments a datagram to its MTU and puts one together again; so does
    Linux: each end takes the other's fragments.  A large ping stays Linux's."""
    s1, s2 = lab.station(1), lab.station(2)
    before = status(s2.netns)["ipv4"]
    linux = linux_socket_on(s1)
    with linux, UdpSocket(netns=s2.netns) as rt:
        linux.bind((s1.ip, LINUX_PORT))
        linux.settimeout(5)
        rt.bind(PLAIN_PORT)
        for size in (1473, 4000, lib.RTN_UDP_MAX_DGRAM):
            data = bytes(i * 13 & 255 for i in range(size))
            linux.sendto(data, (s2.ip, PLAIN_PORT))  # Linux cuts it at its 1500-byte MTU
            d = rt.recvfrom(timeout=5)
            assert d is not None and d.data == data and d.peer == (s1.ip, LINUX_PORT)
            rt.sendto(data[::-1], (s1.ip, LINUX_PORT))  # the station cuts it at its slot's
            got, peer = linux.recvfrom(70000)
            assert got == data[::-1] and peer == (s2.ip, PLAIN_PORT)
    after = status(s2.netns)["ipv4"]
    assert after["rx_reassembled"] - before["rx_reassembled"] == 3
    assert after["rx_fragments"] - before["rx_fragments"] == 2 + 3 + 45
    assert sum(after["bad"].values()) == sum(before["bad"].values())
    # ICMP in fragments is Linux's: the XDP program leaves every fragment of it alone
    kernel_ping(s1, s2.ip, "-c", "1", "-s", "3000", "-W", "3")


def test_fragments_should_follow_their_slots_size_as_rtnets_follow_its_mtu(lab, capsys):
    """A socket in a slot of 600 bytes sends 600-byte IPv4 packets: its 4,000-byte datagram
    leaves in seven fragments the slot carries (a 1,514-byte frame would be refused by the
    slot) and Linux puts them together; the slot made larger again, the socket follows."""
    from rtmac import cli as rtmac_cli

    s1, s2 = lab.station(1), lab.station(2)
    with netns.entered(s2.netns):
        assert rtmac_cli.main(["tdma", "rteth0", "slot", "2", "700", "-s", "600"]) == 0
    capsys.readouterr()
    linux = linux_socket_on(s1)
    try:
        with linux, UdpSocket(netns=s2.netns, slot=2) as rt:
            linux.bind((s1.ip, LINUX_PORT + 2))
            linux.settimeout(5)
            rt.bind(PLAIN_PORT + 2)
            data = bytes(i * 7 & 255 for i in range(4000))
            before = rt.stats()["tx_sent"]
            rt.sendto(data, (s1.ip, LINUX_PORT + 2))
            assert linux.recvfrom(70000) == (data, (s2.ip, PLAIN_PORT + 2))
            assert rt.stats()["tx_sent"] - before == 7  # 4,008 bytes of UDP, 576 a fragment
            with netns.entered(s2.netns):
                assert rtmac_cli.main(["tdma", "rteth0", "slot", "2", "700", "-s", "1500"]) == 0
            wait_for(
                lambda: rt.channel.stats()["max_size"] == 1514, 5, "the slot's size to be followed"
            )
            before = rt.stats()["tx_sent"]
            rt.sendto(data, (s1.ip, LINUX_PORT + 2))
            assert linux.recvfrom(70000) == (data, (s2.ip, PLAIN_PORT + 2))
            assert rt.stats()["tx_sent"] - before == 3
    finally:
        with netns.entered(s2.netns):
            rtmac_cli.main(["tdma", "rteth0", "slot", "2"])  # removed again
        capsys.readouterr()


def test_rtnetctl_ping_should_be_icmp_with_rtt_per_reply_and_a_summary(lab, capsys):
    s1, s2 = lab.station(1), lab.station(2)
    before = status(s2.netns)["ipv4"]["tx_echo_reply"]
    capsys.readouterr()
    assert cli.main(["ping", "-n", s1.netns, s2.ip, "-c", "3", "-i", "20", "-s", "100"]) == 0
    out = capsys.readouterr().out
    assert out.count(f"100 bytes from {s2.ip}: seq=") == 3 and out.count(" us\n") >= 3
    assert "3 packets transmitted, 3 received" in out and "worst case rtt" in out
    assert status(s2.netns)["ipv4"]["tx_echo_reply"] - before >= 3
    assert cli.main(["ping", "-n", s1.netns, "198.18.0.99", "-c", "1"]) == 1  # no route


def test_bad_datagrams_from_the_wire_should_be_counted_by_reason(lab):
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw

    s1, s2 = lab.station(1), lab.station(2)
    with UdpSocket(netns=s2.netns) as rt:
        rt.bind(PORT + 10)
        good = bytearray(
            bytes(
                Ether(src=s1.mac, dst=s2.mac)
                / IP(src=s1.ip, dst=s2.ip)
                / UDP(sport=1, dport=PORT + 10)
                / Raw(b"x" * 40)
            )
        )
        bad = bytearray(good)
        bad[50] ^= 0xFF  # the data: UDP checksum off
        before = status(s2.netns)["ipv4"]["bad"]
        with netns.entered(s1.netns):
            raw = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        with raw:
            raw.bind(("rteth0", 0))
            raw.send(bytes(bad))
            raw.send(bytes(good))
        d = rt.recvfrom(timeout=5)
        assert d is not None and d.data == b"x" * 40  # the good one only
        after = status(s2.netns)["ipv4"]["bad"]
        assert after["udp_csum"] - before["udp_csum"] == 1
        assert rt.recvfrom(timeout=0) is None


def test_hostile_fragments_from_the_wire_should_be_counted_and_good_ones_still_taken(lab):
    """Fragments sent raw into the station: out of order, too many datagrams at once, one
    left unfinished, one whose data lies about its checksum.  Each is counted by reason,
    nothing half made reaches the socket, and a sound datagram in fragments still does."""
    from scapy.layers.inet import IP, UDP, fragment
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw

    s1, s2 = lab.station(1), lab.station(2)

    def frags(ip_id: int, payload: bytes = bytes(3000)) -> list[bytes]:
        dgram = IP(src=s1.ip, dst=s2.ip, id=ip_id) / UDP(sport=1, dport=PORT + 11) / Raw(payload)
        return [bytes(Ether(src=s1.mac, dst=s2.mac) / f) for f in fragment(dgram, fragsize=1480)]

    with UdpSocket(netns=s2.netns) as rt:
        rt.bind(PORT + 11)
        before = status(s2.netns)["ipv4"]
        with netns.entered(s1.netns):
            raw = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        with raw:
            raw.bind(("rteth0", 0))
            a = frags(100)
            # a hole: given up at the third fragment, the last; the XDP program forgets the
            # datagram with its last fragment, so the second, late, is left to Linux
            for f in (a[0], a[2], a[1]):
                raw.send(f)
            lie = bytearray(frags(300)[1])
            lie[-1] ^= 1  # a data bit: its IPv4 header stays sound, the UDP checksum not
            raw.send(frags(300)[0])
            raw.send(bytes(lie))
            raw.send(frags(300)[2])
            for i in range(lib.RTN_IP_COLLECTORS + 1):  # nine first fragments: one too many
                raw.send(frags(200 + i)[0])
            wait_for(
                lambda: (
                    status(s2.netns)["ipv4"]["bad"]["frag_no_room"] > before["bad"]["frag_no_room"]
                ),
                5,
                "the ninth datagram to find no collector",
            )
            time.sleep(lib.RTN_IP_FRAG_IDLE_NS / 1e9 + 0.05)  # the collectors' idle time
            good = bytes(range(256)) * 10
            for f in frags(400, good):
                raw.send(f)
        d = rt.recvfrom(timeout=5)
        assert d is not None and d.data == good
        assert rt.recvfrom(timeout=0) is None  # nothing half made came before or after
        after = status(s2.netns)["ipv4"]
        bad = {k: after["bad"][k] - before["bad"][k] for k in after["bad"]}
        assert bad["fragment"] == 1 and bad["frag_no_room"] == 1 and bad["udp_csum"] == 1
        # the eight unfinished ones went idle and were given up when the good one began
        assert bad["frag_timeout"] == lib.RTN_IP_COLLECTORS
        assert after["rx_reassembled"] - before["rx_reassembled"] == 2  # the liar and the good


def test_a_capture_should_decode_in_tshark_with_good_ip_udp_icmp_checksums(lab, tmp_path, capsys):
    require_tool("tshark")
    import base64
    import threading

    from rtnet.stationctl import request

    s1, s2 = lab.station(1), lab.station(2)
    reply = {}

    def capture():
        reply.update(
            request(
                "rteth0",
                {"cmd": "capture", "count": 400, "duration_ms": 3000},
                netns=s2.netns,
                timeout=20,
            )
        )

    with UdpSocket(netns=s1.netns, stamped=True) as a, UdpSocket(netns=s2.netns, stamped=True) as b:
        a.bind(PORT + 20)
        b.bind(PORT + 20)
        t = threading.Thread(target=capture)
        t.start()
        wait_for(lambda: status(s2.netns)["capture"]["frames"] > 0, 5, "the capture", interval=0.05)
        for i in range(5):
            a.sendto(b"to b %d" % i, (s2.ip, PORT + 20))
            b.sendto(b"to a %d" % i, (s1.ip, PORT + 20))
        assert len(recv_all(b, 5)) == 5 and len(recv_all(a, 5)) == 5
        big = bytes(range(256)) * 12  # and one each way in three fragments
        a.sendto(big, (s2.ip, PORT + 20))
        b.sendto(big[::-1], (s1.ip, PORT + 20))
        assert [d.data for d in recv_all(b, 1)] == [big]
        assert [d.data for d in recv_all(a, 1)] == [big[::-1]]
        assert cli.main(["ping", "-n", s1.netns, s2.ip, "-c", "2", "-i", "10"]) == 0
        t.join(30)
    path = tmp_path / "udp.pcapng"
    path.write_bytes(base64.b64decode(reply["pcapng_b64"]))
    res = subprocess.run(
        [
            "tshark",
            "-r",
            str(path),
            "-V",
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "udp.check_checksum:TRUE",
            "-Y",
            "ip",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    text = res.stdout
    assert text.count("User Datagram Protocol, Src Port") >= 12  # both ways, stamped
    # Wireshark puts the fragments together as Linux does, and their datagram checks out
    assert text.count("[3 IPv4 Fragments (") == 2, text[:3000]
    assert "Echo (ping) request" in text and "Echo (ping) reply" in text
    assert "Malformed" not in text and "Bad checksum" not in text
    assert "[Checksum Status: Bad]" not in text and "incorrect" not in text
    assert "Header checksum status: Bad" not in text
    # validated, not just present: 12 datagrams and 4 echoes, each header checked (and
    # each fragment's)
    assert text.count("[Checksum Status: Good]") >= 16
    assert text.count("[Header checksum status: Good]") >= 20
    capsys.readouterr()


def test_rtroute_solicit_should_fill_the_table_from_an_arp_reply(lab, capsys):
    s1, s2 = lab.station(1), lab.station(2)
    assert rtroute.main(["-n", s1.netns, "del", s2.ip]) == 0
    with UdpSocket(netns=s1.netns) as a:
        a.bind(PORT + 30)
        with pytest.raises(OSError) as exc:
            a.sendto(b"x", (s2.ip, PORT + 30))
        assert exc.value.errno == errno.EHOSTUNREACH
        capsys.readouterr()
        assert rtroute.main(["-n", s1.netns, "solicit", s2.ip, "dev", "rteth0"]) == 0
        assert s2.mac in capsys.readouterr().out
        assert {"ip": s2.ip, "mac": s2.mac} in status(s1.netns)["ipv4"]["neighbours"]
        a.sendto(b"x", (s2.ip, PORT + 30))  # the socket's page has the entry at once
    assert rtroute.main(["-n", s1.netns, "solicit", "198.18.0.99", "dev", "rteth0"]) == 1
