"""The campaign's independent checker (``ackfilter.sim.fuzz.checker``) on hand-built runs.

Frames are built with Scapy; each test states an output a core could produce
and what the rules of issue 9 say about it (data order per flow since the
flow queues of spec section 12; the flows written by hand from section 2,
"Flow key", here and in ``flowkeys.py``). The counters are written by hand
to balance unless the test is about them.
"""

import itertools
import struct

import pytest
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrHopByHop
from scapy.layers.l2 import ARP, Dot1Q, Ether
from scapy.layers.ppp import PPP, PPPoE, PPPoED
from scapy.packet import Raw

import flowkeys
from ackfilter import params
from ackfilter.sim.fuzz.checker import check, flow_key, parse_segment

SLOT = 256
_ids = itertools.count(1)


def ack(n, *, flow=0, flags="A", ts=None, sack=(), ecn=0, opts=(), payload=b"", bad_tcp=False,
        bad_ip=False, v6=False, vlan=None, tpid=0x8100, ip_opts=b""):
    """One TCP segment of flow ``flow`` (distinct bytes each call)."""
    options = list(opts)
    if ts is not None:
        options += [("NOP", None), ("NOP", None), ("Timestamp", ts)]
    if sack:
        options += [("NOP", None), ("NOP", None), ("SAck", tuple(v for b in sack for v in b))]
    uid = next(_ids)
    if v6:
        ip = IPv6(src=f"2001:db8::{flow + 1:x}", dst="2001:db8:ffff::1", tc=ecn, fl=uid)
    else:
        ip = IP(src=f"10.0.0.{flow + 1}", dst="198.51.100.1", tos=ecn, id=uid, options=ip_opts)
    l2 = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    if vlan is not None:
        l2 = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02", type=tpid) / Dot1Q(vlan=vlan)
    tcp = TCP(sport=40000, dport=443, seq=1, ack=n & 0xFFFFFFFF, flags=flags, window=1000, options=options)
    if bad_tcp:
        tcp.chksum = 0x1234
    if bad_ip:
        ip.chksum = 0x4321
    pkt = l2 / ip / tcp
    frame = bytes(pkt / payload) if payload else bytes(pkt)
    return frame + bytes(max(0, 60 - len(frame)))


def udp(size=100):
    uid = next(_ids)
    frame = bytes(Ether() / IP(src="192.168.1.2", dst="8.8.8.8", id=uid) / UDP(sport=uid, dport=53))
    return frame + bytes(size - len(frame))


def counters(n_in, n_out, superseded=0, **drops):
    c = {c.name: 0 for c in params.COUNTERS}
    c.update(frames_in=n_in, frames_out=n_out, acks_superseded=superseded, **drops)
    return c


def run(inputs, output_indices, **kw):
    """Check the run where the inputs at ``output_indices`` left, in that order."""
    outputs = [inputs[i] for i in output_indices]
    kw.setdefault("counters", counters(len(inputs), len(outputs), len(inputs) - len(outputs)))
    return check(inputs, outputs, slot_bytes=SLOT, **kw)


def rules(report):
    return sorted({v.rule for v in report.violations})


def text(report):
    return "\n".join(map(str, report.violations))


def test_a_legal_supersession_chain_is_accepted():
    frames = [
        ack(1000, ts=(10, 5)),
        ack(3000, ts=(11, 5)),                                        # newer ack
        ack(3000, ts=(11, 5), sack=[(4000, 5000)]),                   # same ack, new SACK block
        ack(3000, ts=(12, 6), sack=[(4000, 6000)]),                   # block grows
        ack(6000, ts=(12, 6)),                                        # everything acked
        udp(),
        ack(500, flow=1, v6=True),
        ack(900, flow=1, v6=True),
    ]
    # The queue kept one ACK per flow: the newest; data unaffected.
    report = run(frames, [4, 5, 7])
    assert report.ok, report.violations
    assert report.removed_acks == 5 and report.covered == 5 and report.uncovered == 0


def test_a_chain_superseded_then_dropped_from_the_front_counts_as_one_overload_loss():
    # #0 superseded by #1 in place, #1 dropped from the front; #2 (ECE set, so it
    # carries neither) left.
    frames = [ack(1000), ack(2000), ack(3000, flags="AE")]
    report = run(frames, [2], counters=counters(3, 1, 1, drop_ack_front=1))
    assert report.ok, report.violations
    assert report.handed_on == 1 and report.uncovered == 1
    # Without the drop the same output is a loss.
    assert rules(run(frames, [2], counters=counters(3, 1, 2))) == ["coverage"]
    # Handing on needs the next ACK to carry it: a bad-checksum next ACK does not.
    frames = [ack(1000), ack(2000, bad_tcp=True), ack(3000, flags="AE")]
    assert rules(run(frames, [2], counters=counters(3, 1, 1, drop_ack_front=1))) == ["coverage"]


def test_a_psh_ack_overtaken_by_a_later_pure_ack_of_its_flow_is_flagged():
    frames = [ack(1000, flags="PA"), ack(2000)]
    report = run(frames, [1, 0])
    assert rules(report) == ["ack-order"]
    assert report.violations[0].frames == (0, 1)
    # Other flows may overtake it: that is fine.
    frames = [ack(1000, flags="PA"), ack(2000, flow=1)]
    assert run(frames, [1, 0]).ok


def test_an_ae_flagged_ack_overtaken_is_flagged():
    frames = [ack(1000, flags=0x110), ack(2000)]          # AE (ex-NS) | ACK
    assert rules(run(frames, [1, 0])) == ["ack-order"]


def test_data_may_be_overtaken_by_acks_and_other_flows_but_not_by_its_own_flow():
    frames = [ack(1000, payload=b"x" * 100), ack(2000), udp(), ack(1000, payload=b"y" * 100)]
    assert run(frames, [1, 0, 2, 3]).ok             # its flow's ACK first
    assert run(frames, [1, 2, 0, 3]).ok             # another flow's data first (flow queues)
    report = run(frames, [1, 3, 2, 0])              # its flow's later data first
    assert rules(report) == ["data-order"] and report.violations[0].frames == (0, 3)


def _mac():
    """A distinct source MAC each call (not part of a flow), so that frames differ."""
    return "02:" + ":".join(f"{b:02x}" for b in next(_ids).to_bytes(5, "big"))


def _eth(**kw):
    return Ether(src=_mac(), dst="02:00:00:00:00:02", **kw)


def _pad(pkt):
    frame = bytes(pkt)
    return frame + bytes(max(0, 60 - len(frame)))


def dgram(sport=1000, dport=53, *, vlan=None, tpid=0x8100, prio=0, src="10.0.0.1", **ip):
    """A UDP datagram (data), optionally tagged."""
    l2 = _eth() if vlan is None else _eth(type=tpid) / Dot1Q(vlan=vlan, prio=prio)
    return _pad(l2 / IP(src=src, dst="10.0.0.2", **ip) / UDP(sport=sport, dport=dport) / b"data")


def test_data_of_different_flows_may_leave_in_any_interleaving():
    a = [dgram(1000) for _ in range(3)]
    b = [dgram(2000) for _ in range(3)]
    c = [dgram(1000, vlan=7) for _ in range(3)]
    frames = [x for trio in zip(a, b, c) for x in trio]        # a0 b0 c0 a1 b1 c1 a2 b2 c2
    for order in ([1, 4, 7, 0, 3, 6, 2, 5, 8],                  # b, a, c, a round at a time
                  [2, 5, 8, 1, 0, 4, 3, 7, 6],                  # all of c first
                  [0, 3, 6, 1, 4, 7, 2, 5, 8]):                 # a whole flow after another
        assert run(frames, order).ok, order


def test_a_swap_within_one_data_flow_is_a_data_order_violation_naming_the_flow():
    frames = [dgram(1000), dgram(2000), dgram(1000)]
    report = run(frames, [2, 1, 0])
    assert rules(report) == ["data-order"] and report.counts == {"data-order": 1}
    v = report.violations[0]
    assert v.frames == (0, 2)
    assert str(v).startswith("data-order: #0, #2: data #0 left after the later data #2 of its flow")
    assert "IPv4 proto 17 10.0.0.1 > 10.0.0.2, ports 1000 > 53" in v.reason


def _frag(flags, frag, body, ident=1):
    return _pad(_eth() / IP(src="10.0.0.1", dst="10.0.0.2", proto=17, flags=flags, frag=frag, id=ident) / body)


# (first, second, one flow?) with the expectation written from spec section 2,
# "Flow key": the L2 fields always, then the IP protocol and addresses, the
# ports for TCP/UDP/DCCP/SCTP/UDP-Lite outside fragments; unread bytes are 0.
_ports = struct.pack("!HH", 4000, 5000) + bytes(12)
_arp = ARP(psrc="192.0.2.1", pdst="192.0.2.2")
_udp_whole = bytes(Ether(src="02:00:00:00:00:01") / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1, dport=2))
FLOW_PAIRS = {
    "ports_differ": (dgram(1000), dgram(1001), False),
    "destination_port_differs": (dgram(1000, 53), dgram(1000, 54), False),
    "vlan_id_differs": (dgram(vlan=10), dgram(vlan=11), False),
    "vlan_priority_is_no_part": (dgram(vlan=10, prio=0), dgram(vlan=10, prio=6), True),
    "tpid_differs": (dgram(vlan=10, tpid=0x8100), dgram(vlan=10, tpid=0x88A8), False),
    "tagged_and_untagged": (dgram(vlan=10), dgram(), False),
    "protocol_differs_same_port_bytes": (_pad(_eth() / IP(src="10.0.0.1", dst="10.0.0.2", proto=17) / Raw(_ports)),
                                         _pad(_eth() / IP(src="10.0.0.1", dst="10.0.0.2", proto=136) / Raw(_ports)),
                                         False),
    "protocol_differs_without_ports": (_pad(_eth() / IP(src="10.0.0.1", dst="10.0.0.2", proto=47) / Raw(_ports)),
                                       _pad(_eth() / IP(src="10.0.0.1", dst="10.0.0.2", proto=50) / Raw(_ports)),
                                       False),
    "no_ports_for_icmp": (_pad(_eth() / IP(src="10.0.0.1", dst="10.0.0.2") / ICMP(id=1)),
                          _pad(_eth() / IP(src="10.0.0.1", dst="10.0.0.2") / ICMP(id=2)), True),
    "source_address_differs": (dgram(src="10.0.0.1"), dgram(src="10.0.0.3"), False),
    "ttl_tos_and_id_are_no_part": (dgram(ttl=64, tos=0, id=1), dgram(ttl=3, tos=0xB8, id=2), True),
    "ipv4_first_and_last_fragment": (_frag("MF", 0, UDP(sport=1, dport=2) / (b"a" * 40)),
                                     _frag(0, 6, Raw(b"b" * 8)), True),
    "ipv4_fragments_of_two_datagrams": (_frag("MF", 0, UDP(sport=1, dport=2) / (b"a" * 40), ident=1),
                                        _frag("MF", 0, UDP(sport=3, dport=4) / (b"a" * 40), ident=2), True),
    "ipv4_first_fragment_and_a_whole_datagram": (_frag("MF", 0, UDP(sport=1, dport=2) / (b"a" * 40)),
                                                 _frag(0, 0, UDP(sport=1, dport=2) / (b"a" * 40)), False),
    "ipv4_df_is_no_fragment": (_frag("DF", 0, UDP(sport=1, dport=2)), _frag("DF", 0, UDP(sport=1, dport=3)), False),
    "ipv6_extension_header_has_no_ports": (
        _pad(_eth() / IPv6(src="2001:db8::1", dst="2001:db8::2") / IPv6ExtHdrHopByHop() / UDP(sport=1, dport=2)),
        _pad(_eth() / IPv6(src="2001:db8::1", dst="2001:db8::2") / IPv6ExtHdrHopByHop() / UDP(sport=3, dport=4)),
        True),
    "ipv6_ports_differ": (_pad(_eth() / IPv6(src="2001:db8::1", dst="2001:db8::2") / UDP(sport=1, dport=2)),
                          _pad(_eth() / IPv6(src="2001:db8::1", dst="2001:db8::2") / UDP(sport=3, dport=4)), False),
    "pppoe_sessions_differ": (_pad(_eth() / PPPoE(sessionid=9) / PPP(proto=0x0021) / IP(src="10.0.0.1") / UDP()),
                              _pad(_eth() / PPPoE(sessionid=10) / PPP(proto=0x0021) / IP(src="10.0.0.1") / UDP()),
                              False),
    "non_ip_arp_and_ipx_on_one_link": (_pad(_eth() / _arp), _pad(_eth(type=0x8137) / Raw(bytes(30))), True),
    "non_ip_arp_on_two_vlans": (_pad(_eth() / _arp), _pad(_eth() / Dot1Q(vlan=5) / _arp), False),
    "non_ip_arp_and_pppoe_discovery": (_pad(_eth() / _arp), _pad(_eth(type=0x8863) / PPPoED(code=0x09)), True),
    "non_ip_lcp_of_two_sessions": (_pad(_eth() / PPPoE(sessionid=77) / PPP(proto=0xC021) / Raw(bytes(20))),
                                   _pad(_eth() / PPPoE(sessionid=78) / PPP(proto=0xC021) / Raw(bytes(20))), False),
    "non_ip_ipv4_ethertype_with_version_6_is_arp_s_flow": (
        _pad(_eth(type=0x0800) / IPv6(src="2001:db8::1") / UDP()), _pad(_eth() / _arp), True),
    "cut_in_the_ports_reads_them_as_0": (_udp_whole[:14 + 22], _udp_whole[:14 + 20] + b"\x09\x09", True),
    "cut_in_the_ports_and_whole": (_udp_whole[:14 + 22], _udp_whole, False),
}


@pytest.mark.parametrize("name", FLOW_PAIRS)
def test_a_data_swap_is_a_violation_exactly_when_both_frames_are_one_flow(name):
    first, second, one_flow = FLOW_PAIRS[name]
    assert (flow_key(first) == flow_key(second)) == one_flow
    frames = [first, second]
    assert run(frames, [0, 1]).ok
    assert rules(run(frames, [1, 0])) == (["data-order"] if one_flow else [])


# Key words from the FlowKey fields, packed by the table of spec section 2.
_TPID_CODES = {0x8100: 1, 0x88A8: 2, 0x9100: 3}


def _key_words(key):
    w0 = len(key.tags) << 24 | (key.pppoe_session is not None) << 26 | key.ipv6 << 27
    for i, (tpid, vid) in enumerate(key.tags):
        w0 |= vid << 12 * i | _TPID_CODES[tpid] << 28 + 2 * i
    w1 = (key.pppoe_session or 0) | key.proto << 16 | key.ip << 24
    src, dst = key.src.ljust(16, b"\0"), key.dst.ljust(16, b"\0")
    return (w0, w1, *(flowkeys.le32(a[i:i + 4]) for a in (src, dst) for i in range(0, 16, 4)),
            flowkeys.le32(key.ports))


@pytest.mark.parametrize("name", flowkeys.CASES)
def test_flow_key_matches_the_hand_written_key_words(name):
    frame, words = flowkeys.CASES[name]
    assert _key_words(flow_key(frame)) == words
    assert parse_segment(frame, slot_bytes=SLOT).flow == flow_key(frame)


def test_a_good_ack_replaced_by_a_bad_checksum_ack_is_flagged():
    for bad in (dict(bad_tcp=True), dict(bad_ip=True)):
        frames = [ack(1000), ack(2000, **bad)]
        report = run(frames, [1])
        assert rules(report) == ["coverage"], report.violations
        assert "checksum" in text(report)


def test_a_collapsed_duplicate_ack_is_flagged():
    frames = [ack(1000, ts=(1, 1)), ack(1000, ts=(1, 1))]
    report = run(frames, [1])
    assert rules(report) == ["coverage"]
    assert "duplicate" in text(report)


def test_a_sack_block_that_is_malformed_or_straddles_the_ack_is_no_news():
    frames = [ack(1000), ack(1000, sack=[(5000, 3000)])]
    assert rules(run(frames, [1])) == ["coverage"]
    frames = [ack(1000), ack(1000, sack=[(500, 3000)])]
    assert rules(run(frames, [1])) == ["coverage"]


def test_an_ack_exactly_two_to_the_31_ahead_does_not_carry():
    frames = [ack(1000), ack(1000 + 2**31)]
    assert rules(run(frames, [1])) == ["coverage"]
    frames = [ack(1000), ack(1000 + 2**31 - 1)]
    assert run(frames, [1]).ok


def test_a_dsack_is_never_removed_and_its_blocks_must_be_covered():
    frames = [ack(5000, sack=[(1000, 2000)]), ack(6000)]                # D-SACK below the ack
    assert "D-SACK" in text(run(frames, [1]))
    frames = [ack(5000, sack=[(7000, 8000)]), ack(6000)]                # block above the new ack lost
    assert "not covered" in text(run(frames, [1]))


def test_ecn_timestamps_and_options_must_agree():
    cases = [
        (ack(1000, flags="AE"), ack(2000)),                              # ECE differs
        (ack(1000, ecn=3), ack(2000, ecn=1)),                            # CE mark lost
        (ack(1000, ts=(50, 5)), ack(2000, ts=(49, 5))),                  # TSval goes back
        (ack(1000, ts=(50, 5)), ack(2000)),                              # timestamps on one only
        (ack(1000, opts=[("MSS", 1460)]), ack(2000)),                    # removed has MSS
        (ack(1000, ip_opts=b"\x94\x04\x00\x00"), ack(2000)),             # Router Alert
    ]
    for old, new in cases:
        assert rules(run([old, new], [1])) == ["coverage"], parse_segment(old, slot_bytes=SLOT)


def accecn(kind=172, *counters):
    """An AccECN option (RFC 9768, spec section 3): 24-bit counters in order."""
    return (kind, b"".join(c.to_bytes(3, "big") for c in counters))


def test_ae_is_eligible_and_part_of_the_exact_flag_rule():
    """Spec section 2: ECE, CWR and AE may be either; without AccECN options
    the removed ACK's ECE, CWR and AE must equal the survivor's."""
    assert run([ack(1000, flags=0x110), ack(2000, flags=0x110)], [1]).ok
    assert rules(run([ack(1000, flags=0x110), ack(2000)], [1])) == ["coverage"]
    assert rules(run([ack(1000), ack(2000, flags=0x110)], [1])) == ["coverage"]


def test_accecn_acks_carry_their_counters_not_their_flags():
    """Spec section 3, "AccECN": when both carry the option, ACE (AE, CWR,
    ECE) is a counter and may change, but every byte counter the removed ACK
    carries must be carried by the survivor and not go back; an ACK with the
    option is never replaced by one without; one without may be replaced by
    one with under the exact flag rule."""
    old = ack(1000, flags="A", opts=[accecn(172, 10, 20, 30)])
    assert run([old, ack(2000, flags=0x1D0, opts=[accecn(172, 10, 25, 30)])], [1]).ok
    assert run([old, ack(2000, opts=[accecn(174, 30, 20, 10)])], [1]).ok     # same counters, other order
    for new in (ack(2000, opts=[accecn(172, 10, 19, 30)]),                   # ECEB went back
                ack(2000, opts=[accecn(172, 10, 20)]),                       # EE1B not carried
                ack(2000)):                                                  # no option
        assert rules(run([old, new], [1])) == ["coverage"], parse_segment(new, slot_bytes=SLOT)
    assert run([ack(1000), ack(2000, opts=[accecn(172, 1)])], [1]).ok
    assert rules(run([ack(1000), ack(2000, flags=0x110, opts=[accecn(172, 1)])], [1])) == ["coverage"]
    # A malformed AccECN option makes the ACK ineligible.
    bad = ack(1000, opts=[(172, b"\x00\x00\x01\x00")])
    assert rules(run([bad, ack(2000, opts=[accecn(172, 1)])], [1])) == ["coverage"]


def test_the_survivor_is_the_first_later_ack_of_the_flow_that_left():
    # #1 left; #0 is judged against #1 (a dup ACK), not against #2.
    frames = [ack(1000), ack(1000), ack(3000)]
    assert rules(run(frames, [1, 2])) == ["coverage"]


def test_a_frame_cut_short_is_never_the_survivor():
    # The cut frame left first (as data): it carries nothing, so #0 is judged
    # against #2, which carries it.
    frames = [ack(1000, ts=(1, 1)), ack(1500, ts=(2, 1))[:60], ack(2000, ts=(3, 1))]
    assert run(frames, [1, 2]).ok
    assert rules(run(frames, [1])) == ["coverage"]


def test_overload_losses_are_allowed_up_to_drop_ack_front():
    frames = [ack(1000), ack(5000, flow=1), ack(6000, flow=2)]
    ok = run(frames, [2], counters=counters(3, 1, 0, drop_ack_front=2))
    assert ok.ok and ok.uncovered == 2
    short = run(frames, [2], counters=counters(3, 1, 1, drop_ack_front=1))
    assert rules(short) == ["coverage"]
    assert short.counts == {"coverage": 1}          # one loss more than the overload allows
    assert "candidate: ACK #0" in text(short) and "candidate: ACK #1" in text(short)


def test_a_modified_or_duplicated_output_frame_is_flagged():
    frames = [ack(1000), udp()]
    modified = bytearray(frames[1])
    modified[-1] ^= 1
    report = check(frames, [frames[0], bytes(modified)], counters(2, 2), slot_bytes=SLOT)
    assert "identity" in rules(report)
    report = check(frames, [frames[0], frames[0], frames[1]], counters(2, 3), slot_bytes=SLOT)
    assert "identity" in rules(report)


def test_counters_must_balance_and_match_the_frames():
    frames = [ack(1000), ack(2000), udp()]
    assert run(frames, [1, 2], counters=counters(3, 2, 1)).ok
    assert rules(run(frames, [1, 2], counters=counters(3, 2, 0))) == ["counters"]
    assert rules(run(frames, [1, 2], counters=counters(4, 2, 2))) == ["counters"]
    assert rules(run(frames, [1, 2], counters=counters(3, 2, 0, drop_something_new=1))) == []


def test_the_flow_includes_the_vlan_tpid():
    # An S-tag 10 and a C-tag 10 with the same 5-tuple are two flows: the
    # older one may be overtaken by the other, but never carried by it.
    frames = [ack(1000, vlan=10, tpid=0x88A8), ack(2000, vlan=10, tpid=0x8100)]
    assert run(frames, [1, 0]).ok
    report = run(frames, [1])
    assert rules(report) == ["coverage"] and "no later ACK" in text(report)


def test_with_the_filter_off_every_frame_is_data_and_keeps_its_flow_s_order():
    # An ACK may not overtake its flow's data (both are data); other flows may.
    frames = [ack(1000, payload=b"x" * 100), ack(2000), udp()]
    assert run(frames, [1, 0, 2]).ok
    report = run(frames, [1, 0, 2], filter_off=True)
    assert rules(report) == ["data-order"] and report.violations[0].frames == (0, 1)
    assert "frame #0 left after the later frame #1 of its flow" in text(report)
    assert run(frames, [2, 0, 1], filter_off=True).ok
    # Two ACKs of a flow swapped: a data-order violation then, there is no ACK class.
    assert rules(run([ack(1000), ack(2000)], [1, 0], filter_off=True)) == ["data-order"]


def test_an_unsure_segment_is_in_neither_order_rule_unless_the_filter_is_off():
    # A zero-payload ACK cut short: a core may queue it as an ACK or as data.
    frames = [ack(1000, payload=b"x" * 100), ack(1500, ts=(1, 1))[:60], ack(2000), ack(1000, payload=b"y")]
    assert parse_segment(frames[1], slot_bytes=SLOT).cls == "unsure"
    assert run(frames, [3, 2, 1, 0]).ok is False                  # the data swap still counts
    assert rules(run(frames, [2, 1, 0, 3])) == []                  # overtaken by an ACK, overtakes data
    assert rules(run(frames, [0, 3, 2, 1])) == []                  # overtaken by data and an ACK
    assert rules(run(frames, [0, 2, 1, 3], filter_off=True)) == ["data-order"]


@pytest.mark.parametrize("frame,cls", [
    (ack(1000), "ack"),
    (ack(1000, flags="PA"), "ack"),
    (ack(1000, flags="SA"), "data"),
    (ack(1000, payload=b"x"), "data"),
    (ack(1000, ts=(1, 2))[:60], "unsure"),           # cut inside the TCP options
    (ack(1000) + b"\x00" * 10, "unsure"),            # 70 bytes: more than padding
    (udp(), "data"),
])
def test_classes(frame, cls):
    assert parse_segment(frame, slot_bytes=SLOT).cls == cls
