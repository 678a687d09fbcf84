"""A fragmented UDP datagram put together again (csrc/ip/rtn_ip_defrag.c), with scapy
cutting the datagrams as Linux or RTnet would send them: in order they are whole again,
and every way a fragment can be wrong is refused for its own reason."""

from scapy.layers.inet import IP, UDP, fragment
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from rtnet import ipv4
from rtnet._lowlevel import ffi, lib

A_IP, B_IP = "10.0.0.1", "10.0.0.2"
REASON = {name: n for n, name in ipv4.BAD_REASONS.items()}
IDLE = lib.RTN_IP_FRAG_IDLE_NS


def datagram(payload: bytes, ip_id=1, src=A_IP, proto_udp=True) -> IP:
    ip = IP(src=src, dst=B_IP, id=ip_id)
    return ip / UDP(sport=4000, dport=5000) / Raw(payload) if proto_udp else ip / Raw(payload)


def frames(dgram: IP, size=1480) -> list[bytes]:
    """The datagram's fragments as frames: scapy's fragment() cuts data of ``size`` bytes."""
    return [
        bytes(Ether(src="02:00:00:00:00:0a", dst="02:00:00:00:00:0b") / f)
        for f in fragment(dgram, fragsize=size)
    ]


class Collectors:
    def __init__(self):
        self.d = ffi.new("struct rtn_ip_defrag *")
        self.timed_out = ffi.new("uint64_t *")
        self.whole = ffi.new("const uint8_t **")

    def take(self, frame: bytes, now: int = 0):
        """-reason, 0 (kept) or the whole datagram's frame."""
        v, pkt = ipv4.parse(frame)
        assert v == -REASON["fragment"], "a fragment is no datagram to the parser"
        buf = ffi.new("uint8_t[]", frame)
        rc = lib.rtn_ip_defrag_take(self.d, buf, len(frame), pkt, now, self.whole, self.timed_out)
        return bytes(ffi.buffer(self.whole[0], rc)) if rc > 0 else rc


def test_fragments_in_order_should_make_the_datagram_whole_and_sound():
    c = Collectors()
    data = bytes(range(256)) * 40  # 10,240 bytes: seven fragments
    fr = frames(datagram(data))
    assert len(fr) == 7
    assert [c.take(f) for f in fr[:-1]] == [0] * 6
    whole = c.take(fr[-1])
    v, pkt = ipv4.parse(whole)
    assert v == lib.RTN_IP_UDP  # the UDP length and checksum over the whole datagram
    assert bytes(Ether(whole)[UDP].payload) == data and (pkt.sport, pkt.dport) == (4000, 5000)
    assert Ether(whole)[IP].flags == 0 and Ether(whole)[IP].frag == 0


def test_datagrams_from_two_senders_interleaved_should_each_come_whole():
    c = Collectors()
    a = frames(datagram(b"a" * 4000, ip_id=9, src="10.0.0.3"))
    b = frames(datagram(b"b" * 4000, ip_id=9, src="10.0.0.4"))  # same id, other sender
    got = []
    for fa, fb in zip(a, b):
        got += [c.take(fa), c.take(fb)]
    wholes = [g for g in got if not isinstance(g, int)]
    assert [bytes(Ether(w)[UDP].payload)[:1] for w in wholes] == [b"a", b"b"]


def test_a_fragment_out_of_order_should_give_its_datagram_up():
    c = Collectors()
    fr = frames(datagram(bytes(5000)))
    assert c.take(fr[0]) == 0
    assert c.take(fr[2]) == -REASON["fragment"]  # a hole: RTnet takes them in order
    assert c.take(fr[1]) == -REASON["fragment"]  # its datagram was given up
    assert c.take(fr[0]) == 0 and c.take(fr[1]) == 0  # sent again, it is taken again


def test_an_overlapping_or_repeated_fragment_should_give_its_datagram_up():
    c = Collectors()
    fr = frames(datagram(bytes(5000)))
    assert c.take(fr[0]) == 0 and c.take(fr[1]) == 0
    assert c.take(fr[1]) == -REASON["fragment"]
    assert c.take(fr[2]) == -REASON["fragment"]


def test_a_later_fragment_with_no_first_should_be_refused():
    c = Collectors()
    assert c.take(frames(datagram(bytes(3000)))[1]) == -REASON["fragment"]


def test_the_fragments_of_anything_but_udp_should_be_refused():
    c = Collectors()
    fr = frames(datagram(bytes(3000), proto_udp=False))
    assert c.take(fr[0]) == -REASON["fragment"]


def test_a_fragment_not_a_multiple_of_8_or_past_65535_should_be_refused_for_its_size():
    c = Collectors()
    odd = Ether() / IP(src=A_IP, dst=B_IP, id=3, proto=17, flags="MF") / Raw(bytes(1001))
    assert c.take(bytes(odd)) == -REASON["frag_size"]
    fr = frames(datagram(bytes(3000), ip_id=4))
    assert c.take(fr[0]) == 0
    # a fragment whose end lies past IPv4's 65,535 bytes
    far = Ether() / IP(src=A_IP, dst=B_IP, id=4, proto=17, frag=8186, flags="MF") / Raw(bytes(64))
    assert c.take(bytes(far)) == -REASON["frag_size"]
    assert c.take(fr[1]) == -REASON["fragment"]  # and its datagram was given up


def test_a_first_fragment_with_every_collector_busy_should_be_refused_until_one_is_idle():
    c = Collectors()
    firsts = [frames(datagram(bytes(3000), ip_id=i))[0] for i in range(lib.RTN_IP_COLLECTORS + 1)]
    assert [c.take(f, now=0) for f in firsts[:-1]] == [0] * lib.RTN_IP_COLLECTORS
    assert c.take(firsts[-1], now=IDLE) == -REASON["frag_no_room"]
    assert c.timed_out[0] == 0
    # once no fragment came for RTN_IP_FRAG_IDLE_NS, every datagram is given up and counted
    assert c.take(firsts[-1], now=IDLE + 1) == 0
    assert c.timed_out[0] == lib.RTN_IP_COLLECTORS


def test_the_largest_datagram_should_come_whole_and_one_byte_more_should_not():
    c = Collectors()
    data = bytes(range(256)) * 255 + bytes(range(227))  # 65,507: UDP's largest over IPv4
    assert len(data) == lib.RTN_UDP_MAX_DGRAM
    fr = frames(datagram(data))
    got = [c.take(f) for f in fr]
    whole = got[-1]
    assert len(whole) == 14 + 65535 and bytes(Ether(whole)[UDP].payload) == data
    assert ipv4.parse(whole)[0] == lib.RTN_IP_UDP


def test_a_datagram_whose_fragments_lie_about_the_udp_checksum_should_fail_its_parse():
    c = Collectors()
    fr = [bytearray(f) for f in frames(datagram(bytes(3000)))]
    fr[1][-1] ^= 1  # one data bit of the second fragment
    fr[1] = bytes(Ether(bytes(fr[1])))  # its IPv4 header stays sound
    for f in fr[:-1]:
        assert c.take(bytes(f)) == 0
    whole = c.take(bytes(fr[-1]))
    assert ipv4.parse(whole)[0] == -REASON["udp_csum"]
