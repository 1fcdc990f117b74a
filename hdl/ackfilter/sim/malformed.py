"""Every parser edge case of spec section 2, built with Scapy, with the
class reasoned by hand for it (:func:`malformed_cases`)."""


from .traces import MIN_FRAME_BYTES, inet_checksum

__all__ = ["malformed_cases", "expected_class"]


def expected_class(expected):
    """``(cls, eligible)`` of a :func:`malformed_cases` expectation."""
    if expected in ("ack", "ack-ineligible"):
        return "ack", expected == "ack"
    return expected, False


def malformed_cases():
    """Every parser edge case of spec section 2, built with Scapy, with its expected class.

    Returns ``{name: (frame_bytes, expected)}`` where ``expected`` is the class
    a filtering mode (conservative or aggressive) gives, ``"ack"`` for an
    eligible pure ACK and ``"ack-ineligible"`` for a pure ACK that may neither
    supersede nor be superseded; in mode ``off`` every pure ACK is ``data``.
    Each expectation is reasoned by hand from the spec and noted in the name.
    """
    from scapy.layers.l2 import Ether, Dot1Q, ARP
    from scapy.layers.inet import IP, TCP, UDP, IPOption_NOP, IPOption_Router_Alert
    from scapy.layers.inet6 import IPv6, IPv6ExtHdrHopByHop
    from scapy.layers.ppp import PPPoE, PPPoED, PPP

    eth = dict(dst="02:00:00:00:00:fe", src="02:00:00:00:00:01")
    ip4 = dict(src="192.168.1.10", dst="203.0.113.5", id=7)
    ip6 = dict(src="2001:db8::10", dst="2001:db8::20")
    ts = [("NOP", None), ("NOP", None), ("Timestamp", (1000, 2000))]

    def tcp(**kw):
        base = dict(sport=50000, dport=443, seq=1, ack=100000, flags="A", window=65535)
        base.update(kw)
        return TCP(**base)

    def pad(b, to=MIN_FRAME_BYTES, byte=0):
        return b + bytes([byte]) * max(0, to - len(b))

    def v4(raw_opts=None, **kw):
        """``raw_opts`` replaces the last ``len(raw_opts)`` option bytes, with the TCP checksum fixed."""
        pkt = Ether(**eth) / IP(**ip4) / tcp(**kw)
        if raw_opts is None:
            return bytes(pkt)
        b = bytearray(bytes(pkt))
        b[len(b) - len(raw_opts):] = raw_opts
        b[50:52] = b"\0\0"
        b[50:52] = inet_checksum(bytes(b[26:34]) + b"\x00\x06" + (len(b) - 34).to_bytes(2, "big") +
                         bytes(b[34:])).to_bytes(2, "big")
        return bytes(b)

    def patch(b, offset, value):
        b = bytearray(b)
        b[offset:offset + len(value)] = value
        return bytes(b)

    c = {}
    # -- frame size classes
    c["runt_1_byte"] = (b"\x02", "runt")
    c["runt_13_bytes"] = (bytes(Ether(**eth))[:13], "runt")
    c["ethernet_header_only_14_bytes_is_data"] = (bytes(Ether(**eth, type=0x0800))[:14], "data")
    c["oversize_2049_bytes"] = (pad(bytes(Ether(**eth) / IP(**ip4) / UDP(sport=1, dport=2)), 2049), "oversize")
    c["data_2048_bytes_is_largest_accepted"] = (pad(bytes(Ether(**eth) / IP(**ip4) / UDP(sport=1, dport=2)), 2048), "data")
    # -- the plain pure ACK and padding (rule 5)
    c["ack_ipv4_54_bytes_unpadded"] = (v4(), "ack")
    c["ack_ipv4_padded_to_60_with_zeros"] = (pad(v4()), "ack")
    c["ack_ipv4_padded_with_nonzero_bytes"] = (pad(v4(), byte=0xAA), "ack")
    c["ack_ipv4_padded_to_64"] = (pad(v4(), 64), "ack")
    c["padding_to_65_bytes_is_ineligible"] = (pad(v4(), 65), "ack-ineligible")
    c["ack_66_bytes_with_2_trailing_bytes_is_ineligible"] = (v4(options=ts) + b"\x00\x00", "ack-ineligible")
    c["ack_vlan_padded_to_68"] = (pad(bytes(Ether(**eth, type=0x8100) / Dot1Q(vlan=5, type=0x0800) /
                                             IP(**ip4) / tcp()), 68), "ack")
    c["ack_vlan_padded_to_69_is_ineligible"] = (pad(bytes(Ether(**eth, type=0x8100) / Dot1Q(vlan=5, type=0x0800) /
                                                          IP(**ip4) / tcp()), 69), "ack-ineligible")
    c["ack_qinq_padded_to_72"] = (pad(bytes(Ether(**eth, type=0x88A8) / Dot1Q(vlan=10, type=0x8100) /
                                            Dot1Q(vlan=20, type=0x0800) / IP(**ip4) / tcp()), 72), "ack")
    c["ack_with_timestamps_66_bytes"] = (v4(options=ts), "ack")
    c["frame_shorter_than_ip_total_length_is_data"] = (v4(options=ts)[:-4], "data")
    c["padded_frame_shorter_than_ip_total_length_is_data"] = (
        pad(bytes(Ether(**eth) / IP(**ip4, len=64) / tcp())), "data")
    c["ip_total_length_4_more_than_tcp_header_is_payload_data"] = (
        pad(bytes(Ether(**eth) / IP(**ip4, len=44) / tcp())), "data")
    c["ip_total_length_below_ihl_plus_20_is_data"] = (
        pad(bytes(Ether(**eth) / IP(**ip4, len=36) / tcp())), "data")
    # -- L2 (rule 1)
    for tpid in (0x8100, 0x88A8, 0x9100):
        c[f"ack_vlan_tpid_{tpid:04x}"] = (
            pad(bytes(Ether(**eth, type=tpid) / Dot1Q(vlan=100, type=0x0800) / IP(**ip4) / tcp())), "ack")
    c["ack_qinq_88a8_8100"] = (bytes(Ether(**eth, type=0x88A8) / Dot1Q(vlan=10, type=0x8100) /
                                     Dot1Q(vlan=20, type=0x0800) / IP(**ip4) / tcp(options=ts)), "ack")
    c["ack_qinq_9100_9100"] = (bytes(Ether(**eth, type=0x9100) / Dot1Q(vlan=10, type=0x9100) /
                                     Dot1Q(vlan=20, type=0x0800) / IP(**ip4) / tcp(options=ts)), "ack")
    c["three_vlan_tags_is_data"] = (bytes(Ether(**eth, type=0x8100) / Dot1Q(vlan=1, type=0x8100) /
                                          Dot1Q(vlan=2, type=0x8100) / Dot1Q(vlan=3, type=0x0800) /
                                          IP(**ip4) / tcp()), "data")
    c["vlan_tpid_88b5_is_data"] = (pad(patch(bytes(Ether(**eth, type=0x8100) / Dot1Q(vlan=100, type=0x0800) /
                                                   IP(**ip4) / tcp()), 12, b"\x88\xb5")), "data")
    c["arp_is_data"] = (pad(bytes(Ether(dst="ff:ff:ff:ff:ff:ff", src=eth["src"]) /
                                  ARP(psrc="192.168.1.10", pdst="192.168.1.1"))), "data")
    c["ieee_802_3_length_field_is_data"] = (pad(patch(v4(), 12, b"\x00\x2e")), "data")
    ppp4 = Ether(**eth, type=0x8864) / PPPoE(sessionid=0x1234) / PPP(proto=0x0021) / IP(**ip4) / tcp()
    c["ack_pppoe_ipv4"] = (pad(bytes(ppp4)), "ack")
    c["ack_pppoe_ipv6"] = (bytes(Ether(**eth, type=0x8864) / PPPoE(sessionid=0x1234) / PPP(proto=0x0057) /
                                 IPv6(**ip6) / tcp(options=ts)), "ack")
    c["ack_vlan_pppoe_ipv4"] = (bytes(Ether(**eth, type=0x8100) / Dot1Q(vlan=7, type=0x8864) /
                                      PPPoE(sessionid=9) / PPP(proto=0x0021) / IP(**ip4) / tcp(options=ts)), "ack")
    c["pppoe_discovery_is_data"] = (pad(bytes(Ether(**eth, type=0x8863) / PPPoED(code=0x09))), "data")
    c["pppoe_discovery_ethertype_with_session_body_is_data"] = (pad(patch(bytes(ppp4), 12, b"\x88\x63")), "data")
    c["pppoe_version_2_is_data"] = (pad(patch(bytes(ppp4), 14, b"\x21")), "data")
    c["pppoe_type_2_is_data"] = (pad(patch(bytes(ppp4), 14, b"\x12")), "data")
    c["pppoe_code_nonzero_is_data"] = (pad(patch(bytes(ppp4), 15, b"\x09")), "data")
    c["ppp_protocol_lcp_is_data"] = (pad(patch(bytes(ppp4), 20, b"\xc0\x21")), "data")
    c["ppp_ipv4_protocol_with_ipv6_packet_is_data"] = (
        patch(c["ack_pppoe_ipv6"][0], 20, b"\x00\x21"), "data")
    # -- IPv4 (rule 2)
    c["ipv4_ihl_4_is_data"] = (pad(patch(v4(), 14, b"\x44")), "data")
    c["ipv4_ihl_0_is_data"] = (pad(patch(v4(), 14, b"\x40")), "data")
    c["ack_ipv4_with_options_ihl_6_is_ineligible"] = (
        bytes(Ether(**eth) / IP(**ip4, options=[IPOption_NOP()] * 4) / tcp(options=ts)), "ack-ineligible")
    c["ack_ipv4_with_router_alert_is_ineligible"] = (
        bytes(Ether(**eth) / IP(**ip4, options=[IPOption_Router_Alert()]) / tcp(options=ts)), "ack-ineligible")
    c["ipv4_ihl_6_without_room_for_tcp_is_data"] = (pad(patch(v4(), 14, b"\x46")), "data")
    c["ipv4_version_6_in_ipv4_ethertype_is_data"] = (pad(patch(v4(), 14, b"\x65")), "data")
    c["ipv4_more_fragments_is_data"] = (pad(bytes(Ether(**eth) / IP(**ip4, flags="MF") / tcp())), "data")
    c["ipv4_fragment_offset_is_data"] = (pad(bytes(Ether(**eth) / IP(**ip4, frag=1) / tcp())), "data")
    c["ack_ipv4_dont_fragment_set"] = (pad(bytes(Ether(**eth) / IP(**ip4, flags="DF") / tcp())), "ack")
    c["ipv4_udp_is_data"] = (pad(bytes(Ether(**eth) / IP(**ip4) / UDP(sport=1, dport=53))), "data")
    c["ipv4_bad_header_checksum_is_ineligible"] = (pad(patch(v4(), 24, b"\xde\xad")), "ack-ineligible")
    c["tcp_bad_checksum_is_ineligible"] = (pad(patch(v4(), 50, b"\xde\xad")), "ack-ineligible")
    c["ipv6_tcp_bad_checksum_is_ineligible"] = (
        bytes(Ether(**eth) / IPv6(**ip6) / tcp(options=ts, chksum=0x1234)), "ack-ineligible")
    c["ipv4_truncated_header_is_data"] = (v4()[:30], "data")
    # -- IPv6 (rule 3)
    c["ack_ipv6"] = (bytes(Ether(**eth) / IPv6(**ip6) / tcp(options=ts)), "ack")
    c["ack_ipv6_no_options_74_bytes"] = (bytes(Ether(**eth) / IPv6(**ip6) / tcp()), "ack")
    c["ipv6_hop_by_hop_header_is_data"] = (bytes(Ether(**eth) / IPv6(**ip6) / IPv6ExtHdrHopByHop() / tcp()), "data")
    c["ipv6_payload_length_16_is_data"] = (patch(bytes(Ether(**eth) / IPv6(**ip6) / tcp()), 18, b"\x00\x10"), "data")
    c["ipv6_version_4_in_ipv6_ethertype_is_data"] = (patch(bytes(Ether(**eth) / IPv6(**ip6) / tcp()), 14, b"\x40"), "data")
    c["ipv6_truncated_header_is_data"] = (bytes(Ether(**eth) / IPv6(**ip6) / tcp())[:50], "data")
    # -- TCP (rule 4)
    for name, flags in (("fin", "FA"), ("syn", "SA"), ("rst", "RA")):
        c[f"tcp_{name}_with_ack_is_data"] = (pad(v4(flags=flags)), "data")
    for name, flags in (("psh", "PA"), ("urg", "UA")):
        c[f"tcp_{name}_with_ack_is_ineligible"] = (pad(v4(flags=flags)), "ack-ineligible")
    c["ack_with_ae"] = (pad(v4(flags="AN")), "ack")               # RFC 9768: part of the ACE counter
    c["tcp_without_ack_flag_is_data"] = (pad(v4(flags="")), "data")
    c["tcp_rst_alone_is_data"] = (pad(v4(flags="R")), "data")
    for bit in range(3):
        c[f"tcp_reserved_bit_{bit}_is_ineligible"] = (pad(v4(reserved=1 << bit)), "ack-ineligible")
    c["ack_with_ece"] = (pad(v4(flags="AE")), "ack")
    c["ack_with_cwr"] = (pad(v4(flags="AC")), "ack")
    c["ack_with_ece_and_cwr"] = (pad(v4(flags="AEC")), "ack")
    c["tcp_data_offset_4_is_data"] = (pad(v4(dataofs=4)), "data")
    c["tcp_data_offset_past_ip_payload_is_data"] = (pad(v4(dataofs=6)), "data")
    c["ack_with_1_byte_payload_is_data"] = (pad(bytes(Ether(**eth) / IP(**ip4) / tcp() / b"x")), "data")
    c["psh_ack_without_payload_is_ineligible"] = (pad(v4(flags="PA", ack=200000)), "ack-ineligible")
    # -- TCP options (rule 6)
    c["ack_with_sack_1_block"] = (v4(options=ts + [("NOP", None), ("NOP", None), ("SAck", (1, 2))]), "ack")
    c["ack_with_sack_3_blocks"] = (v4(options=ts + [("NOP", None), ("NOP", None), ("SAck", (1, 2, 3, 4, 5, 6))]), "ack")
    c["ack_with_sack_4_blocks_no_ts"] = (v4(options=[("NOP", None), ("NOP", None),
                                                     ("SAck", (1, 2, 3, 4, 5, 6, 7, 8))]), "ack")
    c["ack_with_eol_then_garbage"] = (v4(options=[("EOL", None), (99, b"\xff\xff")]), "ack")
    c["ack_with_mss_option_other_opts"] = (v4(options=[("MSS", 1460)]), "ack")
    c["ack_with_window_scale_option"] = (v4(options=[("NOP", None), ("WScale", 7)]), "ack")
    c["ack_with_unknown_option_kind_99"] = (v4(options=[(99, b"\x01\x02")]), "ack")
    c["ack_with_mss_length_3_is_still_well_formed"] = (v4(options=[(2, b"\x05"), ("NOP", None)]), "ack")
    c["option_length_0_is_ineligible"] = (v4(options=[(2, b"\x05\xb4")], raw_opts=b"\x02\x00\x05\xb4"),
                                          "ack-ineligible")
    c["option_length_1_is_ineligible"] = (v4(options=[(2, b"\x05\xb4")], raw_opts=b"\x02\x01\x05\xb4"),
                                          "ack-ineligible")
    c["option_running_past_header_is_ineligible"] = (v4(options=[(2, b"\x05\xb4")], raw_opts=b"\x01\x01\x02\x04"),
                                                     "ack-ineligible")
    c["option_kind_without_length_byte_is_ineligible"] = (
        v4(options=[(2, b"\x05\xb4")], raw_opts=b"\x01\x01\x01\x03"), "ack-ineligible")
    c["timestamps_length_8_is_ineligible"] = (v4(options=ts, raw_opts=b"\x01\x01\x08\x08" + bytes(8)),
                                              "ack-ineligible")
    c["sack_length_12_is_ineligible"] = (v4(options=[(5, bytes(10))]), "ack-ineligible")
    c["sack_length_2_is_ineligible"] = (v4(options=[(5, b""), ("NOP", None), ("NOP", None)]), "ack-ineligible")
    c["two_timestamps_options_is_ineligible"] = (v4(options=ts + ts), "ack-ineligible")
    c["two_sack_options_is_ineligible"] = (v4(options=[("NOP", None), ("NOP", None), ("SAck", (1, 2)),
                                                       ("NOP", None), ("NOP", None), ("SAck", (3, 4))]),
                                           "ack-ineligible")
    # AccECN (RFC 9768 section 3.2.3): kind 172 and 174, 0 to 3 24-bit counters.
    for kind in (172, 174):
        for n in range(4):
            body = bytes.fromhex("0a0b0c1a1b1c2a2b2c")[:3 * n]
            c[f"ack_with_accecn{kind - 172 >> 1}_{n}_counters"] = (
                v4(options=ts + [(kind, body)] + [("NOP", None)] * (-(2 + 3 * n) % 4)), "ack")
    c["accecn_length_6_is_ineligible"] = (v4(options=[(172, bytes(4)), ("NOP", None), ("NOP", None)]),
                                          "ack-ineligible")
    c["two_accecn_options_is_ineligible"] = (v4(options=[(172, b""), (174, b"")]), "ack-ineligible")
    # -- PPPoE length (eligibility)
    bad_len = bytearray(pad(bytes(ppp4)))
    bad_len[18:20] = (len(bytes(ppp4)) - 22 + 2 + 4).to_bytes(2, "big")
    c["pppoe_length_not_matching_ip_is_ineligible"] = (bytes(bad_len), "ack-ineligible")
    # -- slot size (rule 5)
    big = [("NOP", None), ("NOP", None), ("Timestamp", (1, 2)), ("NOP", None), ("NOP", None),
           ("SAck", (1, 2, 3, 4, 5, 6))]                          # 40 bytes of options: doff 15
    c["ack_126_bytes_with_ip_options_is_ineligible"] = (bytes(Ether(**eth, type=0x88A8) / Dot1Q(vlan=1, type=0x8100) /
                                          Dot1Q(vlan=2, type=0x0800) / IP(**ip4, options=[IPOption_NOP()] * 24) /
                                          tcp(options=big)), "ack-ineligible")
    c["ack_130_bytes_qinq_pppoe_ipv6"] = (bytes(Ether(**eth, type=0x88A8) / Dot1Q(vlan=1, type=0x8100) /
                                                Dot1Q(vlan=2, type=0x8864) / PPPoE(sessionid=5) /
                                                PPP(proto=0x0057) / IPv6(**ip6) / tcp(options=big)), "ack")
    longest = bytes(Ether(**eth, type=0x88A8) / Dot1Q(vlan=1, type=0x8100) / Dot1Q(vlan=2, type=0x8864) /
                    PPPoE(sessionid=5) / PPP(proto=0x0021) / IP(**ip4, options=[IPOption_NOP()] * 40) /
                    tcp(options=big))
    c["ack_150_bytes_longest_fits_a_slot_ineligible"] = (longest, "ack-ineligible")
    c["pure_ack_with_trailer_over_the_256_byte_slot_is_data"] = (longest + bytes(107), "data")
    return c
