"""Frames of every kind with their flow key written out by hand from
``docs/spec.md`` section 2, "Flow key" (shared by the model's tests and the
parser's): Scapy builds the frame, and the expected eleven words are spelled
out here field by field, without the model's code.

:data:`CASES` maps a name to ``(frame, words)``.
"""

import ipaddress
import struct

from scapy.layers.inet import ICMP, IP, TCP, UDP, IPOption_NOP, IPOption_Router_Alert
from scapy.layers.inet6 import ICMPv6EchoRequest, IPv6, IPv6ExtHdrFragment, IPv6ExtHdrHopByHop
from scapy.layers.l2 import ARP, Dot1AD, Dot1Q, Ether
from scapy.layers.ppp import PPP, PPPoE, PPPoED
from scapy.packet import Raw

__all__ = ["CASES", "key", "le32", "addr_words", "port_word", "IP_BIT", "V6_BIT", "PPPOE_BIT"]

MACS = dict(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
SRC4, DST4 = "192.0.2.10", "198.51.100.7"
SRC6, DST6 = "2001:db8:1:2:3:4:5:6", "2001:db8:ffff::9"

#: Key word 0: PPPoE session (26), the L2 header says IPv6 (27); tags in
#: bits 0-11 / 12-23 (VID), 24-25 (count), 28-29 / 30-31 (TPID code:
#: 0x8100 1, 0x88A8 2, 0x9100 3). Key word 1: the IP header is there (24).
PPPOE_BIT, V6_BIT, IP_BIT = 1 << 26, 1 << 27, 1 << 24


def le32(b):
    """Four bytes as a key word: the first byte on the wire is bits 0-7."""
    assert len(b) == 4
    return b[0] | b[1] << 8 | b[2] << 16 | b[3] << 24


def addr_words(text):
    """An address as key words, in arrival order (one word for IPv4, four for IPv6)."""
    b = ipaddress.ip_address(text).packed
    return [le32(b[i:i + 4]) for i in range(0, len(b), 4)]


def port_word(sport, dport):
    """Key word 10 of ports ``sport``, ``dport``: both big-endian, in arrival order."""
    return le32(struct.pack("!HH", sport, dport))


def key(*, w0=0, w1=0, src=(), dst=(), w10=0):
    """The eleven words: ``src``/``dst`` are the address words (the rest 0)."""
    src, dst = list(src), list(dst)
    return (w0, w1, *(src + [0] * (4 - len(src))), *(dst + [0] * (4 - len(dst))), w10)


def tag_bits(*tags):
    """Key word 0's tag fields for ``(tpid_code, vid)`` outermost first."""
    w = len(tags) << 24
    for i, (code, vid) in enumerate(tags):
        w |= vid << (12 * i) | code << (28 + 2 * i)
    return w


def _pad(b, to=60):
    return bytes(b) + bytes(max(0, to - len(b)))


def _cases():
    c = {}
    eth = Ether(**MACS)
    v4 = dict(src=SRC4, dst=DST4)
    v6 = dict(src=SRC6, dst=DST6)
    s4, d4 = addr_words(SRC4), addr_words(DST4)
    s6, d6 = addr_words(SRC6), addr_words(DST6)

    # IPv4: the protocol, both addresses; ports for TCP/UDP/DCCP/SCTP/UDP-Lite.
    c["udp4"] = (_pad(eth / IP(**v4) / UDP(sport=5353, dport=53) / b"query"),
                 key(w1=17 << 16 | IP_BIT, src=s4, dst=d4, w10=port_word(5353, 53)))
    c["tcp4_pure_ack"] = (_pad(eth / IP(**v4) / TCP(sport=40000, dport=443, flags="A", ack=7)),
                          key(w1=6 << 16 | IP_BIT, src=s4, dst=d4, w10=port_word(40000, 443)))
    c["tcp4_data"] = (_pad(eth / IP(**v4) / TCP(sport=40001, dport=80, flags="PA") / (b"x" * 100)),
                      key(w1=6 << 16 | IP_BIT, src=s4, dst=d4, w10=port_word(40001, 80)))
    c["tcp4_syn"] = (_pad(eth / IP(**v4) / TCP(sport=40002, dport=443, flags="S")),
                     key(w1=6 << 16 | IP_BIT, src=s4, dst=d4, w10=port_word(40002, 443)))
    for proto, name in ((33, "dccp4"), (132, "sctp4"), (136, "udplite4")):
        c[name] = (_pad(eth / IP(proto=proto, **v4) / Raw(struct.pack("!HH", 4000 + proto, 5000) + bytes(12))),
                   key(w1=proto << 16 | IP_BIT, src=s4, dst=d4, w10=port_word(4000 + proto, 5000)))
    for proto, name in ((47, "gre4"), (50, "esp4")):
        c[name] = (_pad(eth / IP(proto=proto, **v4) / Raw(bytes(range(1, 17)))),
                   key(w1=proto << 16 | IP_BIT, src=s4, dst=d4))
    c["icmp4_echo"] = (_pad(eth / IP(**v4) / ICMP(type=8, id=0x1234, seq=1)),
                       key(w1=1 << 16 | IP_BIT, src=s4, dst=d4))
    # Fragments: no ports in any of them (MF, or an offset, or both).
    c["frag4_first"] = (_pad(eth / IP(flags="MF", frag=0, proto=17, **v4) / UDP(sport=1, dport=2) / (b"a" * 40)),
                        key(w1=17 << 16 | IP_BIT, src=s4, dst=d4))
    c["frag4_middle"] = (_pad(eth / IP(flags="MF", frag=6, proto=17, **v4) / Raw(b"b" * 48)),
                         key(w1=17 << 16 | IP_BIT, src=s4, dst=d4))
    c["frag4_last"] = (_pad(eth / IP(flags=0, frag=12, proto=17, **v4) / Raw(b"c" * 8)),
                       key(w1=17 << 16 | IP_BIT, src=s4, dst=d4))
    c["frag4_tcp_offset_only"] = (_pad(eth / IP(frag=0x1000, proto=6, **v4) / Raw(bytes(20))),
                                  key(w1=6 << 16 | IP_BIT, src=s4, dst=d4))
    c["df_is_not_a_fragment"] = (_pad(eth / IP(flags="DF", **v4) / UDP(sport=7, dport=9)),
                                 key(w1=17 << 16 | IP_BIT, src=s4, dst=d4, w10=port_word(7, 9)))
    # IPv4 options: the ports are at 4 * IHL.
    c["ip4_router_alert_udp"] = (_pad(eth / IP(options=[IPOption_Router_Alert()], **v4) /
                                      UDP(sport=1900, dport=1901)),
                                 key(w1=17 << 16 | IP_BIT, src=s4, dst=d4, w10=port_word(1900, 1901)))
    c["ip4_ihl15_tcp"] = (_pad(eth / IP(options=[IPOption_NOP()] * 40, **v4) /
                               TCP(sport=2222, dport=3333, flags="PA") / b"payload"),
                          key(w1=6 << 16 | IP_BIT, src=s4, dst=d4, w10=port_word(2222, 3333)))
    c["ip4_ihl_below_5_is_not_ip"] = (_pad(bytes(eth / IP(**v4) / UDP())[:14] + b"\x44" +
                                           bytes(eth / IP(**v4) / UDP())[15:]),
                                      key())
    c["ethertype_ipv4_version_6_is_not_ip"] = (_pad(bytes(Ether(**MACS, type=0x0800) / IPv6(**v6) / UDP())),
                                               key())

    # IPv6: the fixed header's next header; ports only when it is the transport.
    c["udp6"] = (_pad(eth / IPv6(**v6) / UDP(sport=443, dport=50000) / b"quic"),
                 key(w0=V6_BIT, w1=17 << 16 | IP_BIT, src=s6, dst=d6, w10=port_word(443, 50000)))
    c["tcp6_pure_ack"] = (_pad(eth / IPv6(**v6) / TCP(sport=40000, dport=443, flags="A")),
                          key(w0=V6_BIT, w1=6 << 16 | IP_BIT, src=s6, dst=d6, w10=port_word(40000, 443)))
    c["icmp6_echo"] = (_pad(eth / IPv6(**v6) / ICMPv6EchoRequest(id=5)),
                       key(w0=V6_BIT, w1=58 << 16 | IP_BIT, src=s6, dst=d6))
    c["ip6_hop_by_hop_udp"] = (_pad(eth / IPv6(**v6) / IPv6ExtHdrHopByHop() / UDP(sport=1, dport=2)),
                               key(w0=V6_BIT, w1=0 << 16 | IP_BIT, src=s6, dst=d6))
    c["ip6_fragment_udp"] = (_pad(eth / IPv6(**v6) / IPv6ExtHdrFragment(m=1, id=7) / UDP(sport=1, dport=2)),
                             key(w0=V6_BIT, w1=44 << 16 | IP_BIT, src=s6, dst=d6))
    c["ethertype_ipv6_version_4_is_not_ip"] = (_pad(bytes(Ether(**MACS, type=0x86DD) / IP(**v4) / UDP())),
                                               key(w0=V6_BIT))

    # Tags and PPPoE.
    c["dot1q_udp4"] = (_pad(eth / Dot1Q(vlan=100, prio=5) / IP(**v4) / UDP(sport=10, dport=20)),
                       key(w0=tag_bits((1, 100)), w1=17 << 16 | IP_BIT, src=s4, dst=d4, w10=port_word(10, 20)))
    c["dot1q_pppoe_udp4"] = (_pad(eth / Dot1Q(vlan=7) / PPPoE(sessionid=9) / PPP(proto=0x0021) / IP(**v4) /
                                  UDP(sport=5060, dport=5061) / b"sip"),
                             key(w0=tag_bits((1, 7)) | PPPOE_BIT, w1=9 | 17 << 16 | IP_BIT, src=s4, dst=d4,
                                 w10=port_word(5060, 5061)))
    c["qinq_pppoe_udp6"] = (_pad(eth / Dot1AD(vlan=200) / Dot1Q(vlan=300) / PPPoE(sessionid=0xBEEF) /
                                 PPP(proto=0x0057) / IPv6(**v6) / UDP(sport=3478, dport=3479)),
                            key(w0=tag_bits((2, 200), (1, 300)) | PPPOE_BIT | V6_BIT, w1=0xBEEF | 17 << 16 | IP_BIT,
                                src=s6, dst=d6, w10=port_word(3478, 3479)))
    c["pppoe_icmp4"] = (_pad(eth / PPPoE(sessionid=0x1234) / PPP(proto=0x0021) / IP(**v4) / ICMP()),
                        key(w0=PPPOE_BIT, w1=0x1234 | 1 << 16 | IP_BIT, src=s4, dst=d4))

    # Not IP: the L2 fields only, one flow per link.
    c["arp"] = (_pad(eth / ARP(psrc="192.0.2.1", pdst="192.0.2.2")), key())
    c["dot1q_arp"] = (_pad(eth / Dot1Q(vlan=5) / ARP(psrc="192.0.2.1", pdst="192.0.2.2")),
                      key(w0=tag_bits((1, 5))))
    c["qinq_9100_ipx"] = (_pad(Ether(**MACS, type=0x9100) / Dot1Q(vlan=4095, type=0x8100) /
                               Dot1Q(vlan=1, type=0x8137) / Raw(bytes(30))),
                          key(w0=tag_bits((3, 4095), (1, 1))))
    c["third_tag_udp4"] = (_pad(eth / Dot1Q(vlan=1) / Dot1Q(vlan=2) / Dot1Q(vlan=3) / IP(**v4) / UDP()),
                           key(w0=tag_bits((1, 1), (1, 2))))
    c["pppoe_discovery"] = (_pad(Ether(**MACS, type=0x8863) / PPPoED(code=0x09)), key())
    c["pppoe_lcp"] = (_pad(eth / PPPoE(sessionid=77) / PPP(proto=0xC021) / Raw(bytes(20))),
                      key(w0=PPPOE_BIT, w1=77))
    c["pppoe_ipv6_announced_ipv4_inside"] = (_pad(eth / PPPoE(sessionid=3) / PPP(proto=0x0057) / IP(**v4) / UDP()),
                                             key(w0=PPPOE_BIT | V6_BIT, w1=3))
    c["pppoe_bad_version"] = (_pad(bytes(eth / PPPoE(sessionid=3) / PPP(proto=0x0021) / IP(**v4))[:14] + b"\x12" +
                                   bytes(eth / PPPoE(sessionid=3) / PPP(proto=0x0021) / IP(**v4))[15:]),
                              key())

    # Cut short: a field whose 4-byte header word is not wholly in the frame is 0.
    udp4 = bytes(eth / IP(**v4) / UDP(sport=5353, dport=53) / b"query")
    c["cut_before_ip"] = (udp4[:14], key())
    c["cut_in_ip_word_0"] = (udp4[:14 + 3], key())
    c["cut_after_ip_word_0"] = (udp4[:14 + 4], key(w1=IP_BIT))
    c["cut_in_protocol_word"] = (udp4[:14 + 11], key(w1=IP_BIT))
    c["cut_after_protocol"] = (udp4[:14 + 12], key(w1=17 << 16 | IP_BIT))
    c["cut_in_destination"] = (udp4[:14 + 19], key(w1=17 << 16 | IP_BIT, src=s4))
    c["cut_in_ports"] = (udp4[:14 + 23], key(w1=17 << 16 | IP_BIT, src=s4, dst=d4))
    c["cut_after_ports"] = (udp4[:14 + 24], key(w1=17 << 16 | IP_BIT, src=s4, dst=d4, w10=port_word(5353, 53)))
    udp6 = bytes(eth / Dot1Q(vlan=9) / IPv6(**v6) / UDP(sport=443, dport=50000))
    c["cut6_in_source"] = (udp6[:18 + 8 + 9], key(w0=tag_bits((1, 9)) | V6_BIT, w1=17 << 16 | IP_BIT,
                                                    src=s6[:2]))
    c["cut6_in_ports"] = (udp6[:18 + 40 + 2], key(w0=tag_bits((1, 9)) | V6_BIT, w1=17 << 16 | IP_BIT,
                                                    src=s6, dst=d6))
    tagged = bytes(eth / Dot1Q(vlan=300) / Dot1Q(vlan=400) / IP(**v4))
    c["cut_in_second_tag"] = (tagged[:21], key(w0=tag_bits((1, 300))))
    c["cut_after_second_tags_ethertype"] = (tagged[:22], key(w0=tag_bits((1, 300), (1, 400))))
    ppp = bytes(eth / PPPoE(sessionid=0x4321) / PPP(proto=0x0021) / IP(**v4) / UDP())
    c["cut_in_pppoe_session_id"] = (ppp[:17], key())
    c["cut_after_pppoe_session_id"] = (ppp[:18], key(w0=PPPOE_BIT, w1=0x4321))
    c["cut_in_ppp_protocol"] = (ppp[:21], key(w0=PPPOE_BIT, w1=0x4321))
    c["cut_after_ppp_protocol"] = (ppp[:22], key(w0=PPPOE_BIT, w1=0x4321))
    c["runt"] = (udp4[:13], key())
    return c


CASES = _cases()
