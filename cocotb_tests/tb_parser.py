"""The frame parser of ``ackfilter_core`` against ``docs/spec.md`` section 2.

Every case is a Scapy-built frame with a class reasoned by hand from the spec
(``runt``, ``oversize``, ``ack`` (an eligible pure ACK), ``ack-ineligible``
or ``data``), independent of the golden model: the hand-reasoned ones of :func:`ackfilter.sim.malformed.malformed_cases`
and the groups of :func:`parser_cases` below. Three benches drive them
through the real RTL:

* :func:`test_each_frame_gets_its_class_and_neighbours_pass_intact` sends
  each case followed by a good pure ACK and a good data frame, back to back,
  and checks the hardware's event for all three, that every frame that
  passes leaves byte-identical (data in order), the counters, and the whole
  trace against the model (:func:`ackfilter_tb.scoreboard`);
* :func:`test_frame_leaves_no_parser_state_behind` holds the output and
  follows each case with the next ACK of one of two busy flows (plain IPv4,
  and QinQ + PPPoE + IPv6, both with timestamps and SACK): in aggressive mode
  that ACK must supersede its flow's queued one, which it only does if its
  key, ack number, timestamps and SACK blocks were parsed exactly, i.e. the
  case before it left no state behind;
* :func:`test_parsed_fields_decide_supersession` pins the option summary and
  the flow key the parser extracts (``other_opts``, timestamps, SACK blocks,
  ECE/CWR/ECN, VLAN IDs and their number, PPPoE session, addresses, ports) by
  the supersession decisions of spec section 3 they lead to.

Every bench ends with the core drained (``tb.drain()``): no case hangs it.
"""

import itertools
import math
import struct
from collections import Counter

import cocotb
from cocotb.triggers import RisingEdge

from ackfilter import params as P


from ackfilter.sim.wire import frame_cycles
from ackfilter_tb import TB, data_order, scoreboard
from ackfilter.sim.malformed import malformed_cases

MODES = P.ACK_FILTER_MODES
ACK_EVENTS = ("ARRIVE_ACK_NEW", "ARRIVE_ACK_UNTRACKED", "ARRIVE_ACK_SUPERSEDE")
DEPARTURES = ("DEPART_ACK", "DEPART_DATA")
TEST_TIMEOUT = dict(timeout_time=50, timeout_unit="ms")

ETH = dict(dst="02:00:00:00:00:fe", src="02:00:00:00:00:01")
V4 = dict(src="192.168.1.10", dst="203.0.113.5")
V6 = dict(src="2001:db8::10", dst="2001:db8::20")


# --------------------------------------------------------------------------
# Frame building (Scapy), TCP options as raw bytes so that malformed ones
# can be written exactly.

NOP, EOL = b"\x01", b"\x00"
MSS = b"\x02\x04\x05\xb4"                      # RFC 9293 3.2
WSCALE = b"\x03\x03\x07"                       # RFC 7323 2.2
SACK_PERM = b"\x04\x02"                        # RFC 2018
FAST_OPEN = b"\x22\x0a" + bytes(range(8))      # RFC 7413, 8-byte cookie
MD5 = b"\x13\x12" + bytes(16)                  # RFC 2385
AO = b"\x1d\x10" + bytes(14)                   # RFC 5925 (key ids + 12-byte MAC)


def ts(tsval, tsecr):
    """Timestamps option (RFC 7323 3.2): kind 8, length 10."""
    return struct.pack("!BBII", 8, 10, tsval & 0xFFFFFFFF, tsecr & 0xFFFFFFFF)


def sack(*blocks):
    """SACK option (RFC 2018 3): kind 5, length 2 + 8n."""
    return bytes([5, 2 + 8 * len(blocks)]) + b"".join(
        struct.pack("!II", s & 0xFFFFFFFF, e & 0xFFFFFFFF) for s, e in blocks)


def pad4(raw):
    """Pad TCP options with EOL/zero bytes to a multiple of four."""
    return raw + bytes(-len(raw) % 4)


def build(*, tags=(), pppoe=None, ppp_proto=None, v6=False, ip=None, ip_opt_words=0, sport=50000,
          dport=443, ack=100000, seq=1, flags="A", opts=b"", payload=b"", src_mac=None, pad_to=60,
          pad_byte=0, ethertype=None, **tcp_kw):
    """One TCP segment as frame bytes.

    ``tags``: ``(tpid, vid)`` or ``(tpid, vid, pcp, dei)`` outermost first;
    ``pppoe``: session ID (PPP protocol ``ppp_proto`` or the IP version's);
    ``ip``: keyword arguments of Scapy's ``IP``/``IPv6`` (addresses, tos/tc...);
    ``opts``: raw TCP option bytes (a multiple of 4).
    """
    from scapy.layers.inet import IP, TCP, IPOption_NOP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Dot1Q, Ether
    from scapy.layers.ppp import PPP, PPPoE
    from scapy.packet import Raw

    assert len(opts) % 4 == 0, opts
    inner = 0x8864 if pppoe is not None else (0x86DD if v6 else 0x0800)
    types = [t[0] for t in tags] + [ethertype or inner]
    pkt = Ether(dst=ETH["dst"], src=src_mac or ETH["src"], type=types[0])
    for tag, nxt in zip(tags, types[1:]):
        tpid, vid, pcp, dei = (tuple(tag) + (0, 0))[:4]
        pkt = pkt / Dot1Q(prio=pcp, dei=dei, vlan=vid, type=nxt)
    if pppoe is not None:
        proto = ppp_proto if ppp_proto is not None else (0x0057 if v6 else 0x0021)
        pkt = pkt / PPPoE(version=1, type=1, code=0, sessionid=pppoe) / PPP(proto=proto)
    ipkw = dict(V6 if v6 else V4)
    ipkw.update(ip or {})
    if v6:
        pkt = pkt / IPv6(nh=6, **ipkw)
    else:
        pkt = pkt / IP(proto=6, options=[IPOption_NOP()] * (4 * ip_opt_words), **ipkw)
    pkt = pkt / TCP(sport=sport, dport=dport, seq=seq, ack=ack & 0xFFFFFFFF, flags=flags,
                    window=65535, dataofs=5 + len(opts) // 4, **tcp_kw)
    if opts or payload:
        pkt = pkt / Raw(opts + payload)
    b = bytes(pkt)
    return b + bytes([pad_byte]) * max(0, pad_to - len(b))


def patch(frame, offset, value):
    b = bytearray(frame)
    b[offset:offset + len(value)] = value
    return bytes(b)


def pad(frame, to=60, byte=0):
    return frame + bytes([byte]) * max(0, to - len(frame))


# Offsets in a plain Ethernet II + IPv4 (IHL 5) frame.
IP4 = 14
TCP4 = IP4 + 20


# --------------------------------------------------------------------------
# Cases: {group: [(name, frame, cls)]}, each class reasoned from spec section 2.

def _l2_cases():
    c = []
    c.append(("ethernet_ii_ipv4", build(), "ack"))
    for tpid in (0x8100, 0x88A8, 0x9100):
        c.append((f"one_tag_{tpid:04x}", build(tags=[(tpid, 100)]), "ack"))
    for outer, inner in itertools.product((0x8100, 0x88A8, 0x9100), repeat=2):
        c.append((f"two_tags_{outer:04x}_{inner:04x}", build(tags=[(outer, 10), (inner, 20)]), "ack"))
    c.append(("tag_vid_0", build(tags=[(0x8100, 0)]), "ack"))
    c.append(("tag_vid_4095_pcp_7_dei", build(tags=[(0x8100, 4095, 7, 1)]), "ack"))
    c.append(("two_tags_with_timestamps", build(tags=[(0x88A8, 1), (0x8100, 2)], opts=NOP * 2 + ts(1, 2)), "ack"))
    for tpids in ((0x8100,) * 3, (0x88A8, 0x8100, 0x9100), (0x9100,) * 3, (0x8100, 0x8100, 0x88A8)):
        c.append(("three_tags_" + "_".join(f"{t:04x}" for t in tpids),
                  build(tags=[(t, i + 1) for i, t in enumerate(tpids)]), "data"))
    c.append(("three_tags_then_pppoe", build(tags=[(0x8100, 1), (0x8100, 2), (0x8100, 3)], pppoe=5), "data"))
    c.append(("pppoe_ipv4", build(pppoe=0x1234), "ack"))
    c.append(("pppoe_ipv6", build(pppoe=0x1234, v6=True), "ack"))
    c.append(("pppoe_session_0_ipv4", build(pppoe=0), "ack"))
    c.append(("pppoe_session_ffff_ipv4", build(pppoe=0xFFFF), "ack"))
    c.append(("tag_pppoe_ipv4", build(tags=[(0x8100, 7)], pppoe=9, opts=NOP * 2 + ts(1, 2)), "ack"))
    c.append(("two_tags_pppoe_ipv6_ts", build(tags=[(0x88A8, 7), (0x8100, 8)], pppoe=9, v6=True,
                                             opts=NOP * 2 + ts(1, 2)), "ack"))
    ppp4 = build(pppoe=0x1234)                # PPPoE header at 14, PPP protocol at 20
    for vt in (0x10, 0x01, 0x12, 0x21, 0x22, 0x00, 0xFF):
        c.append((f"pppoe_ver_type_{vt:02x}", patch(ppp4, 14, bytes([vt])), "data"))
    for code in (0x09, 0x07, 0xA7, 0x65, 0x01):
        c.append((f"pppoe_code_{code:02x}", patch(ppp4, 15, bytes([code])), "data"))
    for proto in (0xC021, 0x8021, 0x8057, 0x0000, 0x0023, 0x0057):
        c.append((f"ppp_protocol_{proto:04x}_with_ipv4", patch(ppp4, 20, struct.pack("!H", proto)), "data"))
    c.append(("ppp_protocol_0021_with_ipv6", build(pppoe=1, v6=True, ppp_proto=0x0021), "data"))
    c.append(("pppoe_discovery_ethertype", patch(ppp4, 12, b"\x88\x63"), "data"))
    c.append(("tag_then_pppoe_discovery", build(tags=[(0x8100, 7)], pppoe=9, ethertype=0x8863), "data"))
    for et in (0x0806, 0x88CC, 0x8847, 0x05DC, 0x0000, 0xFFFF, 0x0801, 0x86DC):
        c.append((f"ethertype_{et:04x}", patch(build(), 12, struct.pack("!H", et)), "data"))
    c.append(("tag_then_ethertype_0806", build(tags=[(0x8100, 7)], ethertype=0x0806), "data"))
    c.append(("ipv6_ethertype_with_ipv4_packet", patch(build(), 12, b"\x86\xdd"), "data"))
    c.append(("ipv4_ethertype_with_ipv6_packet", patch(build(v6=True), 12, b"\x08\x00"), "data"))
    return c


def _ipv4_cases():
    c = []
    base = build(pad_to=0)                    # 54 bytes
    for ihl in range(5):
        c.append((f"ihl_{ihl}", pad(patch(base, IP4, bytes([0x40 | ihl]))), "data"))
    c.append(("ihl_5", build(), "ack"))
    # IPv4 options are skipped whatever they hold; such an ACK is not eligible.
    for ihl in range(6, 16):
        c.append((f"ihl_{ihl}_with_nop_options", build(ip_opt_words=ihl - 5), "ack-ineligible"))
    f = build(ip_opt_words=3)
    c.append(("ihl_8_garbage_options", patch(f, IP4 + 20, b"\x44\x0c\xff\xee\xdd\xcc\xbb\xaa\x99\x88\x77\x66"),
              "ack-ineligible"))
    c.append(("ihl_15_with_timestamps", build(ip_opt_words=10, opts=NOP * 2 + ts(1, 2)), "ack-ineligible"))
    big = NOP * 2 + ts(1, 2) + NOP * 2 + sack((1, 2), (3, 4), (5, 6))     # 40 bytes
    c.append(("ihl_13_tcp_options_40_is_126_bytes", build(ip_opt_words=8, opts=big), "ack-ineligible"))
    c.append(("ihl_15_tcp_options_40_is_134_bytes", build(ip_opt_words=10, opts=big), "ack-ineligible"))
    for ihl in (6, 10, 15):
        c.append((f"ihl_{ihl}_without_room_for_tcp", pad(patch(base, IP4, bytes([0x40 | ihl]))), "data"))
    for ver in (0, 5, 6, 15):
        c.append((f"version_{ver}", pad(patch(base, IP4, bytes([ver << 4 | 5]))), "data"))
    c.append(("more_fragments", build(ip=dict(flags="MF")), "data"))
    c.append(("fragment_offset_1", build(ip=dict(frag=1)), "data"))
    c.append(("fragment_offset_1fff", build(ip=dict(frag=0x1FFF)), "data"))
    c.append(("fragment_offset_100", build(ip=dict(frag=0x100)), "data"))
    c.append(("more_fragments_and_offset", build(ip=dict(flags="MF", frag=0x10)), "data"))
    c.append(("dont_fragment", build(ip=dict(flags="DF")), "ack"))
    c.append(("reserved_flag_is_not_a_fragment", build(ip=dict(flags="evil")), "ack"))
    for proto in (17, 1, 0, 255, 41):
        c.append((f"protocol_{proto}", pad(patch(base, IP4 + 9, bytes([proto]))), "data"))
    padded = build()
    for total, cls in ((40, "ack"), (39, "data"), (38, "data"), (36, "data"), (20, "data"), (0, "data"),
                       (41, "data"), (44, "data"), (46, "data"), (47, "data"), (0xFFFF, "data")):
        c.append((f"total_length_{total}_in_60_byte_frame", patch(padded, IP4 + 2, struct.pack("!H", total)), cls))
    c.append(("total_length_41_in_54_byte_frame", patch(base, IP4 + 2, struct.pack("!H", 41)), "data"))
    c.append(("bad_header_checksum", patch(padded, IP4 + 10, b"\x00\x00"), "ack-ineligible"))
    c.append(("header_checksum_one_bit_off", patch(padded, IP4 + 11, bytes([padded[IP4 + 11] ^ 1])),
              "ack-ineligible"))
    c.append(("tcp_checksum_one_bit_off", patch(padded, TCP4 + 17, bytes([padded[TCP4 + 17] ^ 1])),
              "ack-ineligible"))
    c.append(("ttl_changed_without_header_checksum", patch(padded, IP4 + 8, b"\x3f"), "ack-ineligible"))
    for tos in (1, 2, 3, 0xB8, 0xFF):
        c.append((f"tos_{tos:02x}", build(ip=dict(tos=tos)), "ack"))
    c.append(("ttl_0", build(ip=dict(ttl=0)), "ack"))
    return c


def _ipv6_cases():
    from scapy.layers.inet import TCP
    from scapy.layers.inet6 import (IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment,
                                    IPv6ExtHdrHopByHop, IPv6ExtHdrRouting)
    from scapy.layers.l2 import Ether

    c = []
    c.append(("tcp_direct", build(v6=True), "ack"))
    c.append(("tcp_direct_timestamps", build(v6=True, opts=NOP * 2 + ts(5, 6)), "ack"))
    c.append(("tag_ipv6", build(v6=True, tags=[(0x8100, 3)]), "ack"))
    c.append(("traffic_class_and_flow_label", build(v6=True, ip=dict(tc=0xB9, fl=0xABCDE)), "ack"))
    big = NOP * 2 + ts(1, 2) + NOP * 2 + sack((1, 2), (3, 4), (5, 6))
    c.append(("tcp_options_40_is_114_bytes", build(v6=True, opts=big), "ack"))
    c.append(("tag_pppoe_tcp_options_40_is_126_bytes", build(v6=True, tags=[(0x8100, 3)], pppoe=4, opts=big), "ack"))
    tcp = TCP(sport=50000, dport=443, ack=100000, flags="A")
    eth = Ether(**ETH)
    for name, ext in (("hop_by_hop", IPv6ExtHdrHopByHop()), ("routing", IPv6ExtHdrRouting()),
                      ("fragment", IPv6ExtHdrFragment()), ("destination_options", IPv6ExtHdrDestOpt())):
        c.append((f"extension_header_{name}", bytes(eth / IPv6(**V6) / ext / tcp), "data"))
    plain = build(v6=True)                    # 74 bytes; next header at 20, payload length at 18
    for nh in (59, 51, 50, 17, 58, 0):
        c.append((f"next_header_{nh}", patch(plain, 20, bytes([nh])), "data"))
    for plen, cls in ((20, "ack"), (19, "data"), (8, "data"), (0, "data"), (21, "data"), (0xFFFF, "data")):
        c.append((f"payload_length_{plen}", patch(plain, 18, struct.pack("!H", plen)), cls))
    c.append(("payload_length_24_with_4_byte_payload", build(v6=True, payload=b"abcd"), "data"))
    c.append(("two_trailing_bytes_after_74", plain + b"\x00\x00", "ack-ineligible"))
    c.append(("tcp_checksum_one_bit_off", patch(plain, 14 + 40 + 16, bytes([plain[14 + 40 + 16] ^ 0x80])),
              "ack-ineligible"))
    c.append(("flow_label_changed_no_ip_checksum", patch(plain, 17, bytes([plain[17] ^ 1])), "ack"))
    for ver in (4, 0, 7, 15):
        c.append((f"version_{ver}", patch(plain, 14, bytes([ver << 4 | (plain[14] & 0x0F)])), "data"))
    return c


def _tcp_cases():
    c = []
    base = build(pad_to=0)
    for doff in range(5):
        c.append((f"data_offset_{doff}", pad(patch(base, TCP4 + 12, bytes([doff << 4]))), "data"))
    for doff in range(5, 16):
        c.append((f"data_offset_{doff}_nop_options", build(opts=NOP * (4 * (doff - 5))), "ack"))
    c.append(("data_offset_15_past_ip_payload", pad(patch(base, TCP4 + 12, b"\xf0")), "data"))
    for flags, cls in (("A", "ack"), ("FA", "data"), ("SA", "data"), ("RA", "data"), ("PA", "ack-ineligible"),
                       ("UA", "ack-ineligible"), ("", "data"), ("R", "data"), ("S", "data"), ("E", "data"),
                       ("AE", "ack"), ("AC", "ack"), ("AEC", "ack"), ("AN", "ack"),     # AE: RFC 9768 ACE
                       ("AECN", "ack"), ("PAUEC", "ack-ineligible")):
        c.append((f"flags_{flags or 'none'}", build(flags=flags), cls))
    for bit in range(3):
        c.append((f"reserved_bit_{bit}", build(reserved=1 << bit), "ack-ineligible"))
    c.append(("payload_1_byte", build(payload=b"x"), "data"))
    c.append(("urgent_pointer_without_urg", build(urgptr=5), "ack"))
    # Well-formed option sets: pure ACKs (some with other_opts).
    for name, opts in (
            ("timestamps", NOP * 2 + ts(1, 2)),
            ("timestamps_unaligned", NOP + ts(1, 2) + NOP),
            *[(f"sack_{n}_blocks", NOP * 2 + sack(*[(10 * i, 10 * i + 5) for i in range(n)])) for n in (1, 2, 3, 4)],
            *[(f"timestamps_sack_{n}_blocks", NOP * 2 + ts(1, 2) + NOP * 2 + sack(*[(i, i + 1) for i in range(n)]))
              for n in (1, 2, 3)],
            ("sack_then_timestamps", NOP * 2 + sack((1, 2)) + NOP * 2 + ts(1, 2)),
            ("sack_end_before_start_still_parses", NOP * 2 + sack((9, 3))),
            ("mss", MSS), ("window_scale", pad4(NOP + WSCALE)), ("sack_permitted", pad4(SACK_PERM)),
            ("syn_style_mss_sackok_ts_nop_ws", MSS + SACK_PERM + ts(1, 0) + NOP + WSCALE),
            ("fast_open", FAST_OPEN + NOP * 2), ("md5", MD5 + NOP * 2), ("tcp_ao", AO),
            ("unknown_kind_99", pad4(b"\x63\x02")), ("unknown_kind_253_len_4", b"\xfd\x04\xab\xcd"),
            ("unknown_kind_255_len_6", pad4(b"\xff\x06\x00\x00\x00\x00")),
            ("mss_length_3", pad4(b"\x02\x03\x05")),
            ("nops_only", NOP * 8),
            ("eol_first_then_garbage", EOL + b"\x02\x00\xff"),
            ("timestamps_then_eol_then_garbage", NOP * 2 + ts(1, 2) + EOL + b"\x08\x03\x05"),
            ("option_exactly_filling_40_bytes", b"\x63\x28" + bytes(38)),
    ):
        c.append((f"options_{name}", build(opts=opts), "ack"))
    # Malformed option walks: pure ACKs that are not eligible.
    for kind in (2, 3, 5, 8, 99):
        for length in (0, 1):
            c.append((f"option_kind_{kind}_length_{length}", build(opts=bytes([kind, length]) + NOP * 2),
                      "ack-ineligible"))
    for name, opts in (
            ("mss_running_past_header_by_2", NOP * 2 + b"\x02\x04"),
            ("timestamps_running_past_header", NOP * 2 + ts(1, 2)[:6]),
            ("sack_34_with_32_bytes_left", NOP * 8 + sack((1, 2), (3, 4), (5, 6), (7, 8))[:32]),
            ("unknown_length_40_from_byte_1", NOP + b"\x63\x28" + bytes(37)),
            ("kind_in_last_byte", NOP * 3 + b"\x02"),
            ("kind_8_in_last_byte", NOP * 3 + b"\x08"),
            *[(f"timestamps_length_{n}", pad4(NOP * 2 + bytes([8, n]) + bytes(max(0, n - 2)))) for n in (2, 8, 9, 11, 18)],
            *[(f"sack_length_{n}", pad4(NOP * 2 + bytes([5, n]) + bytes(max(0, n - 2)))) for n in (2, 3, 9, 11, 12, 17, 19, 33, 35)],
            ("two_timestamps", NOP * 2 + ts(1, 2) + NOP * 2 + ts(3, 4)),
            ("two_sacks", NOP * 2 + sack((1, 2)) + NOP * 2 + sack((3, 4))),
            ("timestamps_and_4_block_sack_overflow", NOP * 2 + ts(1, 2) + (NOP * 2 + sack((1, 2), (3, 4), (5, 6), (7, 8)))[:28]),
    ):
        c.append((f"options_{name}", build(opts=opts), "ack-ineligible"))
    return c


def _truncation_sources():
    return {
        "qinq_pppoe_ipv4_ihl6_ts_sack": build(tags=[(0x88A8, 10), (0x8100, 20)], pppoe=0x1234, ip_opt_words=1,
                                              opts=NOP * 2 + ts(7, 8) + NOP * 2 + sack((1, 2))),
        "tag_ipv6_ts_sack2": build(tags=[(0x9100, 7)], v6=True,
                                   opts=NOP * 2 + ts(7, 8) + NOP * 2 + sack((1, 2), (3, 4))),
        "ipv4_mss_ws": build(opts=MSS + NOP + WSCALE),
        "pppoe_ipv6": build(pppoe=3, v6=True),
    }


def _frame_length_cases():
    c = []
    srcs = _truncation_sources()
    for name, f in srcs.items():
        c.append((f"{name}_complete_{len(f)}_bytes", f, "ack-ineligible" if "ihl6" in name else "ack"))
        # Ending anywhere inside the headers (or the TCP options): shorter
        # than the IP packet it announces (rule 5), or a runt.
        first = 1 if name == "qinq_pppoe_ipv4_ihl6_ts_sack" else 14
        for n in range(first, len(f)):
            c.append((f"{name}_cut_at_{n}", f[:n], "runt" if n < 14 else "data"))
    c.append(("runt_13_random_bytes", bytes(range(0xF0, 0xFD)), "runt"))
    c.append(("ethernet_header_only_vlan_tpid", build(tags=[(0x8100, 1)])[:14], "data"))
    c.append(("ethernet_header_and_tag", build(tags=[(0x8100, 1)])[:18], "data"))
    ack54 = build(pad_to=0)
    for n, b, cls in ((60, 0, "ack"), (60, 0xAA, "ack"), (60, 0xFF, "ack"), (61, 0, "ack"), (63, 0x55, "ack"),
                      (64, 0, "ack"), (65, 0, "ack-ineligible"), (66, 0, "ack-ineligible"),
                      (100, 0, "ack-ineligible")):
        c.append((f"ack54_padded_to_{n}_with_{b:02x}", pad(ack54, n, b), cls))
    ppp62 = build(pppoe=1, pad_to=0)
    c.append(("pppoe_ack62_padded_to_64", pad(ppp62, 64), "ack"))
    c.append(("pppoe_ack62_padded_to_65", pad(ppp62, 65), "ack-ineligible"))
    tagged = build(tags=[(0x8100, 5)], pad_to=0)
    c.append(("tagged_ack58_padded_to_68", pad(tagged, 68), "ack"))
    c.append(("tagged_ack58_padded_to_69", pad(tagged, 69), "ack-ineligible"))
    qinq = build(tags=[(0x88A8, 5), (0x8100, 6)], pad_to=0)
    c.append(("qinq_ack62_padded_to_72", pad(qinq, 72), "ack"))
    c.append(("qinq_ack62_padded_to_73", pad(qinq, 73), "ack-ineligible"))
    v6 = build(v6=True)
    c.append(("ipv6_ack74_with_one_trailing_byte", v6 + b"\x00", "ack-ineligible"))
    c.append(("ack54_with_trailer_to_256_bytes", pad(ack54, 256), "ack-ineligible"))
    c.append(("ack54_with_trailer_to_257_bytes_over_the_slot", pad(ack54, 257), "data"))
    udp = patch(build(), IP4 + 9, b"\x11")
    for n in (2047, 2048):
        c.append((f"data_{n}_bytes", pad(udp, n, 0x5A), "data"))
    for n in (2049, 2050, 4096, 9000, 16000):
        c.append((f"oversize_{n}_bytes", pad(udp, n, 0x5A), "oversize"))
    c.append(("ack_headers_in_2048_bytes", pad(ack54, 2048), "data"))
    c.append(("ack_headers_in_9000_byte_jumbo", pad(ack54, 9000), "oversize"))
    return c


def parser_cases():
    """``{group: [(name, frame, expected class)]}``; the classes are reasoned
    from spec section 2 (never computed by the model)."""
    return {
        "malformed_cases": [(n, f, cls) for n, (f, cls) in malformed_cases().items()],
        "l2": _l2_cases(),
        "ipv4": _ipv4_cases(),
        "ipv6": _ipv6_cases(),
        "tcp": _tcp_cases(),
        "frame_length": _frame_length_cases(),
    }


GROUPS = ["malformed_cases", "l2", "ipv4", "ipv6", "tcp", "frame_length"]


# --------------------------------------------------------------------------
# Neighbour frames.

def good_ack(i):
    """A pure ACK of a flow of its own (index ``i``), 60 bytes."""
    return build(ip=dict(src=f"10.77.{i >> 8 & 255}.{i & 255}", dst="198.51.100.1"), sport=1024 + i,
                 ack=1000 + i, src_mac="02:77:00:00:00:01")


def good_data(i):
    """A 60-byte data segment (PSH|ACK with 6 bytes), unique by ``i``."""
    return build(ip=dict(src="10.78.0.1", dst="198.51.100.2", id=i & 0xFFFF), seq=i, flags="PA",
                 payload=struct.pack("!HI", 0xDA7A, i), src_mac="02:78:00:00:00:01")


def expected_event(cls, mode):
    if cls == "runt":
        return ("DROP_RUNT",)
    if cls == "oversize":
        return ("DROP_OVERSIZE",)
    if cls in ("ack", "ack-ineligible") and mode != MODES["off"]:
        return ACK_EVENTS
    return ("ARRIVE_DATA",)


def arrivals(tb):
    """The events of the frames that came in (not the departures, nor the
    written ack_mode's MODE_SWITCH, which comes before the first frame)."""
    return [e for _, e in tb.events if e not in DEPARTURES and e != "MODE_SWITCH"]


def describe(name, frame):
    return f"{name} ({len(frame)} bytes: {frame[:80].hex()}{'...' if len(frame) > 80 else ''})"


async def start_tb(dut, mode):
    tb = TB(dut)
    await tb.reset()
    await tb.set_param("ack_mode", mode)
    return tb


def wire_cycles(frame):
    """Cycles ``frame`` occupies at 1 Gb/s, at least a minimum frame's (60
    bytes), rounded up: its bytes + 24 of FCS, preamble and gap, at
    ``F_SYS_HZ / 125e6`` cycles a byte (84 byte times: 34 cycles at 50 MHz)."""
    return math.ceil(frame_cycles(max(60, len(frame))))


async def send_spaced(tb, frame):
    """Offer ``frame`` one word per cycle, then idle for the rest of its
    :func:`wire_cycles`. Spec section 5 promises no ``drop_overrun`` only at
    line rate; an ACK that hits the flow table takes the queue manager about
    30 cycles, more than a back-to-back minimum frame."""
    words = (len(frame) + 3) // 4
    await tb.send(frame, gap=wire_cycles(frame) - words)


def param_names(values):
    return [cocotb.Param(v, name=str(v)) for v in values]


# --------------------------------------------------------------------------
# Bench 1: class of every case, neighbours intact, counters, model.

@cocotb.test(**TEST_TIMEOUT)
@cocotb.parametrize(group=param_names(GROUPS),
                    mode=[cocotb.Param(MODES["conservative"], "conservative"), cocotb.Param(MODES["off"], "off")])
async def test_each_frame_gets_its_class_and_neighbours_pass_intact(dut, group, mode):
    """Each case, then a good pure ACK, then a good data frame, back to back
    (then idle to line rate):
    the hardware's event for each of the three is that of the expected class;
    frames that pass leave byte-identical (data frames in order); the
    counters add up; the trace replays through the model."""
    cases = parser_cases()[group]
    if mode == MODES["off"]:
        # Mode off only turns "ack" into "data": the truncated frames (data
        # or runt whatever the mode) need not run twice.
        cases = [c for c in cases if "_cut_at_" not in c[0]]
    tb = await start_tb(dut, mode)
    plan = []                                        # (name, frame, cls) in send order
    for i, (name, frame, cls) in enumerate(cases):
        plan += [(name, frame, cls), (f"good ACK after {name}", good_ack(i), "ack"),
                 (f"good data after {name}", good_data(i), "data")]
    # Each triple back to back (the parser's frame boundaries at full speed),
    # then idle until the three have taken their time at 1 Gb/s: the queue
    # manager is only promised to keep up at line rate (spec section 5).
    for t in range(0, len(plan), 3):
        start = tb.cycle
        for _, frame, _ in plan[t:t + 3]:
            await tb.send(frame)
        while tb.cycle < start + sum(wire_cycles(f) for _, f, _ in plan[t:t + 3]):
            await RisingEdge(dut.clk)
    await tb.drain()
    counters = await tb.counters()

    errors = []
    got = arrivals(tb)
    if len(got) != len(plan):
        errors.append(f"{len(got)} arrival events for {len(plan)} frames")
    for (name, frame, cls), ev in zip(plan, got):
        if ev not in expected_event(cls, mode):
            errors.append(f"{describe(name, frame)}: expected class {cls!r}, hardware did {ev}")
    passing = [f for (_, f, cls), ev in zip(plan, got) if cls in ("ack", "ack-ineligible", "data")]
    out = [f for _, f in tb.received]
    remaining = Counter(passing)
    for n, f in enumerate(out):
        if remaining[f] <= 0:
            errors.append(f"output frame #{n} was not sent as a passing frame: {f[:80].hex()}")
        remaining[f] -= 1
    if len(out) + counters["acks_superseded"] != len(passing):
        errors.append(f"{len(out)} frames out + {counters['acks_superseded']} superseded != "
                      f"{len(passing)} passing frames")
    data_sent = [f for (_, f, cls) in plan
                 if cls == "data" or (cls.startswith("ack") and mode == MODES["off"])]
    data_out = [f for f in out if f in set(data_sent)]
    if data_order(data_out) != data_order(data_sent):
        errors.append("data frames out differ from data frames in (order, bytes or count)")
    n_cls = Counter(cls for _, _, cls in plan)
    want = {
        "frames_in": len(plan), "bytes_in": sum(len(f) for _, f, _ in plan),
        "acks_in": n_cls["ack"] + n_cls["ack-ineligible"], "acks_ineligible": n_cls["ack-ineligible"],
        "drop_runt": n_cls["runt"], "drop_oversize": n_cls["oversize"],
        "drop_data_full": 0, "drop_ack_front": 0, "drop_overrun": 0,
        "frames_out": len(out), "bytes_out": sum(len(f) for f in out),
    }
    for name, value in want.items():
        if counters[name] != value:
            errors.append(f"counter {name}: hardware {counters[name]}, expected {value}")
    assert not errors, f"{len(errors)} problems:\n  " + "\n  ".join(errors)
    scoreboard(tb, tb.model(ack_mode=mode), counters=counters)


# --------------------------------------------------------------------------
# Bench 2: no state survives a frame.

BUSY_FLOWS = (
    dict(ip=dict(src="10.66.0.1", dst="198.51.100.66"), sport=6601, dport=80),
    dict(tags=[(0x88A8, 66), (0x8100, 67)], pppoe=0x6666, v6=True,
         ip=dict(src="2001:db8:66::1", dst="2001:db8:67::1"), sport=6602, dport=443),
)


def busy_ack(flow, k):
    """The ``k``-th ACK of busy flow ``flow``: ack, TSval advance; the SACK
    blocks stay ahead of the ack and are repeated, so each ACK may supersede
    the one before (spec section 3)."""
    base = 0x7FFF0000 + 0x10000 * flow
    blocks = [(base + 0x100000, base + 0x101000)] + ([(base + 0x200000, base + 0x201000)] if flow else [])
    return build(**BUSY_FLOWS[flow], ack=base + 1448 * k,
                 opts=NOP * 2 + ts(0xFFFFFF00 + k, 0x1234) + NOP * 2 + sack(*blocks),
                 src_mac="02:66:00:00:00:01")


@cocotb.test(**TEST_TIMEOUT)
@cocotb.parametrize(group=param_names(GROUPS))
async def test_frame_leaves_no_parser_state_behind(dut, group):
    """Output held, aggressive mode: each case is followed by the next ACK of
    one of two busy flows, which must supersede its flow's queued ACK (the
    first of each batch is appended). A wrong key, ack, timestamp or SACK
    block, left over from the case before, would append it instead."""
    mode = MODES["aggressive"]
    cases = parser_cases()[group]
    tb = await start_tb(dut, mode)
    errors = []
    k = 0
    # A batch's cases and the two busy flows' ACKs fit the ACK queue and the
    # flow table, with an entry to spare (with per-flow data queues the
    # blocker's flow holds one too).
    batch_size = min(40, P.ACK_SLOTS - 2, P.FLOW_ENTRIES - 3)
    for b0 in range(0, len(cases), batch_size):
        batch = cases[b0:b0 + batch_size]
        tb.o_ready_pattern = itertools.repeat(0)
        first_event = len(arrivals(tb))
        await send_spaced(tb, good_data(100000 + b0))   # granted, then stuck: holds the output
        plan = [("blocker", None, "data")]
        for i, (name, frame, cls) in enumerate(batch):
            flow = i % 2
            k += 1
            plan += [(name, frame, cls), (f"busy flow {flow} ACK after {name}", busy_ack(flow, k),
                                          "ARRIVE_ACK_NEW" if i < 2 else "ARRIVE_ACK_SUPERSEDE")]
        for name, frame, _ in plan[1:]:
            await send_spaced(tb, frame)
        for _ in range(50):
            await RisingEdge(dut.clk)
        got = arrivals(tb)[first_event:]
        if len(got) != len(plan):
            errors.append(f"batch at {b0}: {len(got)} arrival events for {len(plan)} frames")
        for (name, frame, want), ev in zip(plan, got):
            ok = ev == want if want.startswith("ARRIVE_ACK") else ev in expected_event(want, mode)
            if not ok:
                errors.append(f"{describe(name, frame or b'')}: expected {want}, hardware did {ev}")
        tb.o_ready_pattern = itertools.repeat(1)
        await tb.drain()
    assert not errors, f"{len(errors)} problems:\n  " + "\n  ".join(errors)
    counters = await tb.counters()
    scoreboard(tb, tb.model(ack_mode=mode), counters=counters)


# --------------------------------------------------------------------------
# Bench 3: the fields the parser extracts, seen through supersession.

S, N, O = "ARRIVE_ACK_SUPERSEDE", "ARRIVE_ACK_NEW", "other flow"


def supersession_sequences():
    """``[(name, [frame, ...], [expected event of each frame after the first])]``.

    Aggressive mode, output held: the first frame of each sequence is appended
    (``ARRIVE_ACK_NEW``); each next one of the same flow supersedes (``S``)
    or is appended (``N``) as spec section 3 says; ``O`` marks a frame whose
    flow key differs (never a supersession).
    """
    seqs = []
    port = itertools.count(20000)

    def seq(name, specs, expect):
        p = next(port)
        frames = []
        for sp in specs:
            sp = dict(sp)
            sp.setdefault("sport", p)
            sp.setdefault("src_mac", "02:55:00:00:00:01")
            frames.append(build(**sp))
        seqs.append((name, frames, expect))

    a = lambda ack, **kw: dict(ack=ack, **kw)
    seq("newer_ack", [a(1000), a(2000)], [S])
    seq("older_ack", [a(2000), a(1000)], [N])
    seq("duplicate_ack", [a(1000), a(1000)], [N])
    seq("ack_wraps_at_2_32", [a(0xFFFFFF00), a(0x100)], [S])
    seq("ack_byte_order", [a(0x01000000), a(0x00000002)], [N])
    for name, opt in (("mss", MSS), ("window_scale", pad4(NOP + WSCALE)), ("sack_permitted", pad4(SACK_PERM)),
                      ("fast_open", FAST_OPEN + NOP * 2), ("md5", MD5 + NOP * 2), ("tcp_ao", AO),
                      ("unknown_99", pad4(b"\x63\x02")), ("unknown_253", b"\xfd\x04\xab\xcd"),
                      ("mss_length_3", pad4(b"\x02\x03\x05"))):
        seq(f"old_with_{name}_is_not_supersedable", [a(1000, opts=opt), a(2000)], [N])
    seq("new_with_mss_supersedes_then_is_kept", [a(1000), a(2000, opts=MSS), a(3000)], [S, N])
    seq("kind_after_eol_is_padding", [a(1000, opts=EOL + b"\x63\x04\xff\xff" + bytes(3)), a(2000)], [S])
    seq("nops_only", [a(1000, opts=NOP * 4), a(2000)], [S])
    T = lambda v, e: NOP * 2 + ts(v, e)
    seq("tsval_advances", [a(1000, opts=T(100, 200)), a(2000, opts=T(101, 200))], [S])
    seq("tsval_equal", [a(1000, opts=T(100, 200)), a(2000, opts=T(100, 200))], [S])
    seq("tsval_goes_back", [a(1000, opts=T(100, 200)), a(2000, opts=T(99, 200))], [N])
    seq("tsecr_goes_back", [a(1000, opts=T(100, 200)), a(2000, opts=T(100, 199))], [N])
    seq("tsval_wraps", [a(1000, opts=T(0xFFFFFFF0, 5)), a(2000, opts=T(0x10, 5))], [S])
    seq("tsval_byte_order", [a(1000, opts=T(0x01000000, 5)), a(2000, opts=T(2, 5))], [N])
    seq("tsecr_byte_order", [a(1000, opts=T(5, 0x01000000)), a(2000, opts=T(5, 2))], [N])
    seq("timestamps_dropped", [a(1000, opts=T(1, 2)), a(2000)], [N])
    seq("timestamps_added", [a(1000), a(2000, opts=T(1, 2))], [N])
    for lead in (1, 2, 3):          # the option at each byte lane
        opts = lambda v: pad4(NOP * lead + ts(v, 7))
        seq(f"timestamps_at_lane_{lead}_goes_back", [a(1000, opts=opts(100)), a(2000, opts=opts(99))], [N])
        seq(f"timestamps_at_lane_{lead}_advances", [a(1000, opts=opts(100)), a(2000, opts=opts(101))], [S])
    after_sack = lambda v: NOP * 2 + sack((90000, 91000)) + NOP * 2 + ts(v, 7)
    seq("timestamps_after_sack_goes_back", [a(1000, opts=after_sack(100)), a(2000, opts=after_sack(99))], [N])
    seq("timestamps_after_sack_advances", [a(1000, opts=after_sack(100)), a(2000, opts=after_sack(100))], [S])
    K = lambda *blocks: NOP * 2 + sack(*blocks)
    seq("sack_grows", [a(1000, opts=K((5000, 6000))), a(1000, opts=K((5000, 7000)))], [S])
    seq("sack_same", [a(1000, opts=K((5000, 6000))), a(1000, opts=K((5000, 6000)))], [N])
    seq("sack_dropped_below_block", [a(1000, opts=K((5000, 6000))), a(2000)], [N])
    seq("sack_acked_by_cumulative", [a(1000, opts=K((5000, 6000))), a(6000)], [S])
    seq("sack_block_end_before_start", [a(1000, opts=K((6000, 5000))), a(7000)], [N])
    seq("dsack_below_ack", [a(5000, opts=K((3000, 4000))), a(7000)], [N])
    # RFC 2883 duplicate ACKs whose first block reports a duplicate below the
    # ack: only blocks above the ack count as new information (spec section 3,
    # last bullet), so these are duplicates and are appended...
    seq("dsack_on_duplicate_ack_is_a_duplicate", [a(1000), a(1000, opts=K((500, 800)))], [N])
    seq("dsack_on_duplicate_sack_ack_is_a_duplicate",
        [a(1000, opts=K((5000, 6000))), a(1000, opts=K((500, 800), (5000, 6000)))], [N])
    # ... unless a block above the ack is new.
    seq("dsack_and_new_block_on_duplicate_ack",
        [a(1000, opts=K((5000, 6000))), a(1000, opts=K((500, 800), (5000, 7000)))], [S])
    seq("sack_byte_order", [a(1000, opts=K((0x01000000, 0x01000100))), a(2000, opts=K((0x01000000, 0x01000100)))],
        [S])
    blocks = [(9000, 10000), (7000, 8000), (5000, 6000), (3000, 4000)]
    for with_ts in (False, True):
        for k in range(1, 4 if with_ts else 5):
            lead = T(1, 2) if with_ts else b""
            old = blocks[:k]
            grown = [(9000, 11000)] + blocks[1:k]
            s_k, e_k = blocks[k - 1]
            miss_start = grown[:k - 1] + [(s_k + 100, e_k if k > 1 else 11000)]
            miss_end = grown[:k - 1] + [(s_k, e_k - 100)] if k > 1 else [(9000, 9900), (10000, 11000)]
            tag = f"{'timestamps_' if with_ts else ''}sack_{k}_blocks"
            seq(f"{tag}_all_covered", [a(1000, opts=lead + K(*old)), a(1000, opts=lead + K(*grown))], [S])
            seq(f"{tag}_block_{k}_start_uncovered", [a(1000, opts=lead + K(*old)), a(1000, opts=lead + K(*miss_start))],
                [N])
            seq(f"{tag}_block_{k}_end_uncovered", [a(1000, opts=lead + K(*old)), a(1000, opts=lead + K(*miss_end))],
                [N])
    seq("ece_both", [a(1000, flags="AE"), a(2000, flags="AE")], [S])
    seq("ece_cleared", [a(1000, flags="AE"), a(2000)], [N])
    seq("cwr_both", [a(1000, flags="AC"), a(2000, flags="AC")], [S])
    seq("cwr_set", [a(1000), a(2000, flags="AC")], [N])
    seq("ipv4_ecn_same", [a(1000, ip=dict(V4, tos=1)), a(2000, ip=dict(V4, tos=0x21))], [S])
    seq("ipv4_ecn_ce", [a(1000, ip=dict(V4, tos=1)), a(2000, ip=dict(V4, tos=3))], [N])
    seq("ipv6_ecn_same", [a(1000, v6=True, ip=dict(tc=2)), a(2000, v6=True, ip=dict(tc=0xFE))], [S])
    seq("ipv6_ecn_ce", [a(1000, v6=True, ip=dict(tc=2)), a(2000, v6=True, ip=dict(tc=3))], [N])
    # Flow key.
    seq("other_source_mac_same_flow", [a(1000), a(2000, src_mac="02:55:00:00:00:99")], [S])
    seq("tpid_is_in_the_key", [a(1000, tags=[(0x8100, 5)]), a(2000, tags=[(0x88A8, 5)])], [O])
    seq("inner_tpid_is_in_the_key", [a(1000, tags=[(0x88A8, 5), (0x8100, 6)]), a(2000, tags=[(0x88A8, 5), (0x9100, 6)])],
        [O])
    seq("pcp_dei_are_not_in_the_key", [a(1000, tags=[(0x8100, 5)]), a(2000, tags=[(0x8100, 5, 7, 1)])], [S])
    seq("vid_differs", [a(1000, tags=[(0x8100, 5)]), a(2000, tags=[(0x8100, 6)])], [O])
    seq("vid_top_bit_differs", [a(1000, tags=[(0x8100, 5)]), a(2000, tags=[(0x8100, 0x805)])], [O])
    seq("untagged_vs_vid_0", [a(1000), a(2000, tags=[(0x8100, 0)])], [O])
    seq("one_vs_two_tags_vid_0", [a(1000, tags=[(0x8100, 0)]), a(2000, tags=[(0x88A8, 0), (0x8100, 0)])], [O])
    seq("two_tags_same", [a(1000, tags=[(0x88A8, 1), (0x8100, 2)]), a(2000, tags=[(0x88A8, 1, 3, 0), (0x8100, 2, 5, 1)])],
        [S])
    seq("two_tags_swapped", [a(1000, tags=[(0x88A8, 1), (0x8100, 2)]), a(2000, tags=[(0x88A8, 2), (0x8100, 1)])], [O])
    seq("inner_vid_differs", [a(1000, tags=[(0x88A8, 1), (0x8100, 2)]), a(2000, tags=[(0x88A8, 1), (0x8100, 3)])],
        [O])
    seq("pppoe_same_session", [a(1000, pppoe=5), a(2000, pppoe=5)], [S])
    seq("no_pppoe_vs_session_0", [a(1000), a(2000, pppoe=0)], [O])
    seq("pppoe_session_differs", [a(1000, pppoe=0x1234), a(2000, pppoe=0x1235)], [O])
    seq("pppoe_vs_tag_pppoe", [a(1000, pppoe=5), a(2000, pppoe=5, tags=[(0x8100, 0)])], [O])
    seq("ipv4_src_last_byte", [a(1000), a(2000, ip=dict(V4, src="192.168.1.11"))], [O])
    seq("ipv4_src_first_byte", [a(1000), a(2000, ip=dict(V4, src="193.168.1.10"))], [O])
    seq("ipv4_dst_differs", [a(1000), a(2000, ip=dict(V4, dst="203.0.113.6"))], [O])
    seq("dport_differs", [a(1000), a(2000, dport=444)], [O])
    p = next(port)
    seqs.append(("sport_differs", [build(ack=1000, sport=p), build(ack=2000, sport=p + 1)], [O]))
    next(port)
    v6src, v6dst = "2001:db8:1:2:3:4:5:6", "2001:db8:a:b:c:d:e:f"
    for w in range(4):
        def flip(addr, word=w):
            groups = addr.split(":")
            groups[2 * word + 1] = f"{int(groups[2 * word + 1], 16) ^ 1:x}"
            return ":".join(groups)
        seq(f"ipv6_src_word_{w}_differs", [a(1000, v6=True, ip=dict(src=v6src, dst=v6dst)),
                                           a(2000, v6=True, ip=dict(src=flip(v6src), dst=v6dst))], [O])
        seq(f"ipv6_dst_word_{w}_differs", [a(1000, v6=True, ip=dict(src=v6src, dst=v6dst)),
                                           a(2000, v6=True, ip=dict(src=v6src, dst=flip(v6dst)))], [O])
    seq("ipv6_same_flow", [a(1000, v6=True, ip=dict(src=v6src, dst=v6dst)),
                           a(2000, v6=True, ip=dict(src=v6src, dst=v6dst))], [S])
    seq("ip_version_is_in_the_key", [a(1000, ip=dict(src="10.0.0.1", dst="10.0.0.2")),
                                     a(2000, v6=True, ip=dict(src="a00:1::", dst="a00:2::"))], [O])
    seq("pppoe_vs_plain_ipv4", [a(1000), a(2000, pppoe=0x0800)], [O])
    seq("id_ttl_and_seq_are_not_in_the_key", [a(1000), a(2000, ip=dict(V4, id=99, ttl=3), seq=77777)], [S])
    # Not eligible (spec section 2): queued after the flow's ACK, never superseding.
    seq("ip_options_make_it_ineligible", [a(1000), a(2000, ip_opt_words=2)], [N])
    seq("psh_makes_it_ineligible", [a(1000), a(2000, flags="PA"), a(3000)], [N, N])
    seq("bad_tcp_checksum_makes_it_ineligible", [a(1000), a(2000, chksum=0x1234)], [N])
    seq("bad_ip_checksum_makes_it_ineligible", [a(1000), a(2000, ip=dict(V4, chksum=0x1234))], [N])
    return seqs


@cocotb.test(**TEST_TIMEOUT)
async def test_parsed_fields_decide_supersession(dut):
    """Sequences of pure ACKs of one flow (or of two flows differing in one key
    field) with the output held, aggressive mode: each later ACK supersedes or
    is appended exactly as spec section 3 says for the fields the parser
    should have extracted (hand-reasoned, see :func:`supersession_sequences`)."""
    mode = MODES["aggressive"]
    tb = await start_tb(dut, mode)
    seqs = supersession_sequences()
    errors = []
    batch = []

    async def run(batch):
        tb.o_ready_pattern = itertools.repeat(0)
        first_event = len(arrivals(tb))
        await send_spaced(tb, good_data(200000 + len(tb.sent)))
        for _, frames, _ in batch:
            for f in frames:
                await send_spaced(tb, f)
        for _ in range(50):
            await RisingEdge(dut.clk)
        got = iter(arrivals(tb)[first_event:])
        if next(got, None) != "ARRIVE_DATA":
            errors.append("blocker data frame not queued")
        for name, frames, expect in batch:
            evs = [next(got, None) for _ in frames]
            for n, (want, ev) in enumerate(zip([N] + expect, evs)):
                ok = ev in ("ARRIVE_ACK_NEW", "ARRIVE_ACK_UNTRACKED") if want == O else ev == want
                if not ok:
                    errors.append(f"{name}: frame {n} ({frames[n][:80].hex()}): expected {want}, hardware did {ev}")
        tb.o_ready_pattern = itertools.repeat(1)
        await tb.drain()

    # A batch fits the ACK queue and the flow table: each frame takes at most
    # one entry, and one is spared (with per-flow data queues the blocker
    # data frame's flow holds one too).
    room = min(60, P.ACK_SLOTS, P.FLOW_ENTRIES - 1)
    queued = 0
    for s in seqs:
        if queued + len(s[1]) > room:
            await run(batch)
            batch, queued = [], 0
        batch.append(s)
        queued += len(s[1])
    await run(batch)
    assert not errors, f"{len(errors)} problems:\n  " + "\n  ".join(errors)
    counters = await tb.counters()
    scoreboard(tb, tb.model(ack_mode=mode), counters=counters)
