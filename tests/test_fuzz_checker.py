"""The campaign's independent checker (``ackfilter.sim.fuzz.checker``) on hand-built runs.

Frames are built with Scapy; each test states an output a core could produce
and what the rules of issue 9 say about it. The counters are written by hand
to balance unless the test is about them.
"""

import itertools

import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether

from ackfilter import params
from ackfilter.sim.fuzz.checker import check, parse_segment

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


def test_data_may_be_overtaken_by_acks_but_not_by_data():
    frames = [ack(1000, payload=b"x" * 100), ack(2000), udp()]
    assert run(frames, [1, 0, 2]).ok
    assert rules(run(frames, [1, 2, 0])) == ["data-order"]


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


def test_with_the_filter_off_nothing_overtakes():
    frames = [udp(), ack(1000)]
    assert rules(run(frames, [1, 0], filter_off=True)) == ["data-order"]


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
