"""Unit tests of the golden model (``ackfilter.model``) and the trace generators.

Packets are built with Scapy and the expectations are reasoned by hand from
``docs/spec.md``, independently of the model's parser.
"""

import itertools

import pytest
from scapy.layers.inet import IP, TCP, UDP, IPOption_Router_Alert
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether

import flowkeys
from ackfilter.sim import traces
from ackfilter.sim.malformed import expected_class, malformed_cases
from ackfilter.sim.random_trace import random_trace
from ackfilter.sim.pcap import read_pcap, write_pcap
from ackfilter.model import FilterModel, classify, gcra_departures, GcraShaper, before, after

CONSERVATIVE, AGGRESSIVE = 1, 2
_ids = itertools.count(1)


def mk_ack(ack, *, flow=0, ts=None, sack=(), flags="A", ecn=0, opts=(), payload=b"", v6=False,
           vlan=None, tpid=0x8100, ip_opts=False, sport=40000, reserved=0):
    """A pure ACK (unless told otherwise) of flow number ``flow``, padded to 60 bytes.

    ``ts=(tsval, tsecr)``, ``sack=[(start, end), ...]``; every frame gets a
    fresh IP id (or flow label) so all frames are distinct.
    """
    options = list(opts)
    if ts is not None:
        options += [("NOP", None), ("NOP", None), ("Timestamp", ts)]
    if sack:
        options += [("NOP", None), ("NOP", None), ("SAck", tuple(v for b in sack for v in b))]
    uid = next(_ids)
    if v6:
        ip = IPv6(src=f"2001:db8::{flow + 1:x}", dst="2001:db8:ffff::1", tc=ecn, fl=uid)
    else:
        ip = IP(src=f"10.0.{flow >> 8}.{flow & 255}", dst="198.51.100.1", tos=ecn, id=uid & 0xFFFF,
                options=[IPOption_Router_Alert()] if ip_opts else [])
    l2 = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    if vlan is not None:
        l2 = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02", type=tpid) / Dot1Q(vlan=vlan)
    pkt = l2 / ip / TCP(sport=sport, dport=443, seq=1, ack=ack & 0xFFFFFFFF, flags=flags, window=1000,
                        options=options, reserved=reserved)
    frame = bytes(pkt / payload) if payload else bytes(pkt)
    return frame + bytes(max(0, 60 - len(frame)))


def bad_tcp_checksum(frame):
    """``frame`` (an untagged IPv4 TCP frame) with its TCP checksum off by one."""
    f = bytearray(frame)
    f[51] ^= 1
    return bytes(f)


def bad_ip_checksum(frame):
    f = bytearray(frame)
    f[25] ^= 1
    return bytes(f)


def mk_data(size, *, uid=None):
    """A UDP data frame of exactly ``size`` bytes."""
    uid = next(_ids) if uid is None else uid
    frame = bytes(Ether() / IP(src="192.168.1.2", dst="8.8.8.8", id=uid & 0xFFFF) / UDP(sport=uid & 0xFFFF, dport=53))
    return frame + bytes(size - len(frame))


def run(model, frames):
    """Arrive every frame; return the list of event lists."""
    return [model.arrive(f) for f in frames]


def queued(model):
    return model.queued_ack_frames()


# ---------------------------------------------------------------------------
# Serial arithmetic

def test_serial_arithmetic_follows_rfc_1982_at_the_wrap():
    assert before(0xFFFFFF00, 0x00000100)
    assert after(0x00000100, 0xFFFFFF00)
    assert not before(5, 5) and not after(5, 5)
    assert before(0, 0x7FFFFFFF) and not before(0x7FFFFFFF, 0)
    # Exactly 2^31 apart (undefined in RFC 1982): the spec's formula says each is before the other.
    assert before(0, 0x80000000) and before(0x80000000, 0)


# ---------------------------------------------------------------------------
# Supersession rules

@pytest.mark.parametrize("mode", [CONSERVATIVE, AGGRESSIVE])
def test_dup_acks_are_never_superseded(mode):
    m = FilterModel(ack_mode=mode)
    frames = [mk_ack(1000, ts=(5, 6)) for _ in range(5)]
    assert run(m, frames) == [["ARRIVE_ACK_NEW"]] * 5
    assert queued(m) == frames
    assert m.counters["acks_superseded"] == 0


def test_greater_ack_supersedes_in_aggressive_mode_keeping_one():
    m = FilterModel(ack_mode=AGGRESSIVE)
    frames = [mk_ack(1000 * i) for i in range(1, 6)]
    assert run(m, frames) == [["ARRIVE_ACK_NEW"]] + [["ARRIVE_ACK_SUPERSEDE"]] * 4
    assert queued(m) == [frames[-1]]
    assert m.counters["acks_superseded"] == 4


def test_greater_ack_supersedes_in_conservative_mode_keeping_two():
    m = FilterModel(ack_mode=CONSERVATIVE)
    frames = [mk_ack(1000 * i) for i in range(1, 6)]
    assert run(m, frames) == [["ARRIVE_ACK_NEW"]] * 2 + [["ARRIVE_ACK_SUPERSEDE"]] * 3
    assert queued(m) == [frames[0], frames[-1]]


def test_dup_ack_with_growing_sack_acknowledges_more_and_supersedes():
    m = FilterModel(ack_mode=AGGRESSIVE)
    a = mk_ack(1000, sack=[(2000, 3000)])
    b = mk_ack(1000, sack=[(2000, 4000)])          # same ack, block not inside any old block
    assert run(m, [a, b]) == [["ARRIVE_ACK_NEW"], ["ARRIVE_ACK_SUPERSEDE"]]


def test_dup_ack_with_same_sack_is_not_superseded():
    m = FilterModel(ack_mode=AGGRESSIVE)
    a = mk_ack(1000, sack=[(2000, 3000)])
    b = mk_ack(1000, sack=[(2000, 3000)])
    assert run(m, [a, b]) == [["ARRIVE_ACK_NEW"]] * 2


def test_dup_ack_losing_a_sack_block_is_not_superseded():
    m = FilterModel(ack_mode=AGGRESSIVE)
    a = mk_ack(1000, sack=[(5000, 6000), (2000, 3000)])
    b = mk_ack(1000, sack=[(2000, 4000)])          # old block [5000,6000) not covered
    assert run(m, [a, b]) == [["ARRIVE_ACK_NEW"]] * 2


def test_old_sack_block_covered_by_new_cumulative_ack_allows_supersession():
    m = FilterModel(ack_mode=AGGRESSIVE)
    a = mk_ack(1000, sack=[(2000, 3000)])
    b = mk_ack(3000)                               # !after(3000, 3000): covered by the ack
    assert run(m, [a, b]) == [["ARRIVE_ACK_NEW"], ["ARRIVE_ACK_SUPERSEDE"]]


def test_old_sack_block_above_new_ack_and_not_resacked_blocks_supersession():
    m = FilterModel(ack_mode=AGGRESSIVE)
    a = mk_ack(1000, sack=[(2000, 3000)])
    b = mk_ack(1500)                               # greater ack, but [2000,3000) is lost
    assert run(m, [a, b]) == [["ARRIVE_ACK_NEW"]] * 2


def test_dsack_below_ack_is_never_superseded():
    m = FilterModel(ack_mode=AGGRESSIVE)
    a = mk_ack(5000, sack=[(1000, 2000)])          # before(s0, ack): D-SACK
    b = mk_ack(9000)
    assert run(m, [a, b]) == [["ARRIVE_ACK_NEW"]] * 2
    assert not m.classify(a).supersedable


def test_a_newer_dsack_alone_does_not_collapse_a_dup_ack():
    # Same ack; the newer only reports a duplicate segment below the ack
    # (D-SACK): it is another duplicate ACK, so both must leave.
    m = FilterModel(ack_mode=AGGRESSIVE)
    a = mk_ack(5000)
    b = mk_ack(5000, sack=[(4000, 4500)])
    assert run(m, [a, b]) == [["ARRIVE_ACK_NEW"]] * 2


def test_same_ack_with_new_sack_data_above_it_supersedes():
    m = FilterModel(ack_mode=AGGRESSIVE)
    a = mk_ack(5000, sack=[(6000, 7000)])
    b = mk_ack(5000, sack=[(6000, 8000)])
    assert run(m, [a, b]) == [["ARRIVE_ACK_NEW"], ["ARRIVE_ACK_SUPERSEDE"]]


def test_dsack_inside_second_block_is_never_superseded():
    m = FilterModel(ack_mode=AGGRESSIVE)
    a = mk_ack(1000, sack=[(3000, 3500), (2000, 4000)])   # block 0 inside block 1
    b = mk_ack(9000)
    assert run(m, [a, b]) == [["ARRIVE_ACK_NEW"]] * 2


def test_sack_block_ending_before_its_start_is_never_superseded():
    m = FilterModel(ack_mode=AGGRESSIVE)
    a = mk_ack(1000, sack=[(3000, 2000)])
    b = mk_ack(9000)
    assert run(m, [a, b]) == [["ARRIVE_ACK_NEW"]] * 2


@pytest.mark.parametrize("block", [
    (5000, 3000),                 # start after end
    (500, 3000),                  # straddles the ack
    (1000 + (1 << 31), 1100 + (1 << 31)),   # "above" only by serial arithmetic's half circle
    (2000, 2000 + (1 << 30)),     # ends 2^30 or more above the ack
])
def test_malformed_or_straddling_sack_blocks_are_no_new_information(block):
    # Issue 9, item 3: ack 1000 then ack 1000 with a malformed block: a
    # duplicate ACK, both leave. The same block makes the older unsupersedable.
    m = FilterModel(ack_mode=AGGRESSIVE)
    assert run(m, [mk_ack(1000), mk_ack(1000, sack=[block])]) == [["ARRIVE_ACK_NEW"]] * 2
    m = FilterModel(ack_mode=AGGRESSIVE)
    assert run(m, [mk_ack(1000, sack=[block]), mk_ack(9000)]) == [["ARRIVE_ACK_NEW"]] * 2


def test_a_well_formed_block_wholly_above_the_ack_is_new_information():
    m = FilterModel(ack_mode=AGGRESSIVE)
    assert run(m, [mk_ack(1000), mk_ack(1000, sack=[(1000, 3000)])]) == [["ARRIVE_ACK_NEW"],
                                                                         ["ARRIVE_ACK_SUPERSEDE"]]


@pytest.mark.parametrize("delta,ok", [((1 << 31) - 1, False), (1 << 31, False), ((1 << 30) - 1, True)])
def test_an_ack_2_31_ahead_never_supersedes(delta, ok):
    # Issue 9, item 3: exactly 2^31 apart is undefined in RFC 1982 (each is
    # "after" the other); the floor window (2^30) refuses it, and more.
    m = FilterModel(ack_mode=AGGRESSIVE)
    ev = run(m, [mk_ack(1000), mk_ack(1000 + delta)])
    assert ev[1] == (["ARRIVE_ACK_SUPERSEDE"] if ok else ["ARRIVE_ACK_NEW"])


def test_a_chain_of_supersessions_stays_within_2_30_of_its_floor():
    # Each step is a valid supersession, but the survivor must still carry the
    # first ACK's news by serial arithmetic: the ack may not run 2^30 or
    # more past the floor (the first ack of the chain), nor TSval/TSecr.
    m = FilterModel(ack_mode=AGGRESSIVE)
    step = (1 << 29) + 1
    ev = run(m, [mk_ack(0), mk_ack(step), mk_ack(2 * step)])
    assert ev == [["ARRIVE_ACK_NEW"], ["ARRIVE_ACK_SUPERSEDE"], ["ARRIVE_ACK_NEW"]]
    m = FilterModel(ack_mode=AGGRESSIVE)
    ev = run(m, [mk_ack(100, ts=(0, 5)), mk_ack(200, ts=(step, 5)), mk_ack(300, ts=(2 * step, 5))])
    assert ev == [["ARRIVE_ACK_NEW"], ["ARRIVE_ACK_SUPERSEDE"], ["ARRIVE_ACK_NEW"]]
    # A new chain starts at the appended ACK: its floor is its own.
    assert m.arrive(mk_ack(400, ts=(2 * step + 1, 5))) == ["ARRIVE_ACK_SUPERSEDE"]


@pytest.mark.parametrize("old_kw,new_kw", [
    (dict(flags="A"), dict(flags="AE")),
    (dict(flags="AE"), dict(flags="A")),
    (dict(flags="AC"), dict(flags="A")),
    (dict(flags="A"), dict(flags="AN")),          # AE without the AccECN option: the exact rule
    (dict(flags="AN"), dict(flags="ANE")),
    (dict(ecn=0), dict(ecn=3)),
    (dict(ecn=1), dict(ecn=2)),
])
def test_ece_cwr_or_ecn_mismatch_blocks_supersession(old_kw, new_kw):
    m = FilterModel(ack_mode=AGGRESSIVE)
    assert run(m, [mk_ack(1000, **old_kw), mk_ack(2000, **new_kw)]) == [["ARRIVE_ACK_NEW"]] * 2


def test_equal_ece_cwr_and_ecn_allow_supersession():
    m = FilterModel(ack_mode=AGGRESSIVE)
    ev = run(m, [mk_ack(1000, flags="AEC", ecn=3), mk_ack(2000, flags="AEC", ecn=3)])
    assert ev == [["ARRIVE_ACK_NEW"], ["ARRIVE_ACK_SUPERSEDE"]]


@pytest.mark.parametrize("old_ts,new_ts,ok", [
    ((100, 50), (100, 50), True),
    ((100, 50), (101, 51), True),
    ((100, 50), (99, 50), False),                 # TSval went backwards
    ((100, 50), (100, 49), False),                # TSecr went backwards
    ((0xFFFFFFF0, 50), (0x10, 50), True),         # TSval wraps at 2^32
    ((100, 0xFFFFFFFF), (100, 0), True),          # TSecr wraps
    ((0x10, 50), (0xFFFFFFF0, 50), False),        # "earlier" across the wrap
])
def test_timestamps_must_not_go_backwards_in_serial_arithmetic(old_ts, new_ts, ok):
    m = FilterModel(ack_mode=AGGRESSIVE)
    ev = run(m, [mk_ack(1000, ts=old_ts), mk_ack(2000, ts=new_ts)])
    assert ev[1] == (["ARRIVE_ACK_SUPERSEDE"] if ok else ["ARRIVE_ACK_NEW"])


def test_timestamp_presence_must_match():
    m = FilterModel(ack_mode=AGGRESSIVE)
    assert run(m, [mk_ack(1000, ts=(1, 1)), mk_ack(2000)]) == [["ARRIVE_ACK_NEW"]] * 2
    m = FilterModel(ack_mode=AGGRESSIVE)
    assert run(m, [mk_ack(1000), mk_ack(2000, ts=(1, 1))]) == [["ARRIVE_ACK_NEW"]] * 2


def test_ack_wrap_at_2_32_supersedes():
    m = FilterModel(ack_mode=AGGRESSIVE)
    assert run(m, [mk_ack(0xFFFFFF00), mk_ack(0x00000100)]) == [["ARRIVE_ACK_NEW"], ["ARRIVE_ACK_SUPERSEDE"]]


def test_older_ack_never_supersedes_a_newer_one():
    m = FilterModel(ack_mode=AGGRESSIVE)
    assert run(m, [mk_ack(0x00000100), mk_ack(0xFFFFFF00)]) == [["ARRIVE_ACK_NEW"]] * 2


@pytest.mark.parametrize("opts", [
    [("MSS", 1460)],
    [("NOP", None), ("WScale", 7)],
    [("SAckOK", b""), ("NOP", None), ("NOP", None)],
    [(34, b"\x00" * 6)],                          # TCP Fast Open cookie
    [(19, b"\x00" * 16)],                         # MD5 signature
    [(99, b"\x01\x02")],                          # unknown
])
def test_older_ack_with_other_options_is_never_superseded(opts):
    m = FilterModel(ack_mode=AGGRESSIVE)
    old = mk_ack(1000, opts=opts)
    assert m.classify(old).cls == "ack" and m.classify(old).other_opts
    assert run(m, [old, mk_ack(2000)]) == [["ARRIVE_ACK_NEW"]] * 2


def test_newer_ack_with_other_options_may_supersede_but_not_be_superseded():
    m = FilterModel(ack_mode=AGGRESSIVE)
    ev = run(m, [mk_ack(1000), mk_ack(2000, opts=[("MSS", 1460)]), mk_ack(3000)])
    assert ev == [["ARRIVE_ACK_NEW"], ["ARRIVE_ACK_SUPERSEDE"], ["ARRIVE_ACK_NEW"]]


@pytest.mark.parametrize("kind", ["psh", "reserved", "urg", "mss_option", "bad_tcp_checksum", "ipv4_options"])
def test_a_flows_ineligible_acks_keep_their_place_among_its_pure_acks(kind):
    # Issue 9, item 1: an ineligible zero-payload ACK goes to the ACK queue
    # too, so the later pure ACKs of its flow cannot overtake it; it is
    # neither superseded nor does it supersede.
    m = FilterModel(ack_mode=AGGRESSIVE)
    a1 = mk_ack(1000)
    odd = {"psh": lambda: mk_ack(2000, flags="PA"), "reserved": lambda: mk_ack(2000, reserved=4),
           "urg": lambda: mk_ack(2000, flags="AU"), "mss_option": lambda: mk_ack(2000, opts=[("MSS", 1400)]),
           "bad_tcp_checksum": lambda: bad_tcp_checksum(mk_ack(2000)),
           "ipv4_options": lambda: mk_ack(2000, ip_opts=True)}[kind]()
    a3, a4 = mk_ack(3000), mk_ack(4000)
    ev = run(m, [a1, odd, a3, a4])
    newest_blocks = kind != "mss_option"     # an MSS option only stops *being* superseded
    assert ev[:3] == [["ARRIVE_ACK_NEW"], ["ARRIVE_ACK_NEW"] if newest_blocks else ["ARRIVE_ACK_SUPERSEDE"],
                      ["ARRIVE_ACK_NEW"]]
    assert ev[3] == ["ARRIVE_ACK_SUPERSEDE"]
    left = [f for _, f in m.drain()]
    if newest_blocks:
        assert left == [a1, odd, a4]
        assert m.counters["acks_ineligible"] == 1
    else:
        assert left == [odd, a4]
    m.check_invariants()


def test_a_good_ack_is_never_overwritten_by_one_with_a_bad_checksum():
    # Issue 9, item 2: ack 1000 then ack 2000 with a bad TCP (or IPv4 header)
    # checksum: both stay, in order.
    for corrupt in (bad_tcp_checksum, bad_ip_checksum):
        m = FilterModel(ack_mode=AGGRESSIVE)
        good, bad = mk_ack(1000), corrupt(mk_ack(2000))
        assert run(m, [good, bad]) == [["ARRIVE_ACK_NEW"]] * 2
        assert queued(m) == [good, bad]
        assert not classify(bad, ack_mode=2).eligible


def test_ipv4_options_make_an_ack_ineligible_both_ways():
    m = FilterModel(ack_mode=AGGRESSIVE)
    ra = mk_ack(1000, ip_opts=True)
    assert run(m, [ra, mk_ack(2000), mk_ack(3000)]) == [["ARRIVE_ACK_NEW"]] * 2 + [["ARRIVE_ACK_SUPERSEDE"]]
    assert queued(m)[0] == ra


def test_ack_with_payload_is_data():
    m = FilterModel(ack_mode=AGGRESSIVE)
    assert m.arrive(mk_ack(1000, payload=b"hello")) == ["ARRIVE_DATA"]


def test_different_flows_do_not_supersede_each_other():
    m = FilterModel(ack_mode=AGGRESSIVE)
    assert run(m, [mk_ack(1000, flow=1), mk_ack(2000, flow=2), mk_ack(3000, flow=1, v6=True)]) == \
        [["ARRIVE_ACK_NEW"]] * 3


def test_flow_key_includes_the_vlan_id_and_the_tag_type():
    # Issue 9, item 3: an S-tag 10 and a C-tag 10 are different links.
    m = FilterModel(ack_mode=AGGRESSIVE)
    ev = run(m, [mk_ack(1000, vlan=5), mk_ack(2000, vlan=6), mk_ack(3000, vlan=5, tpid=0x88A8),
                 mk_ack(4000, vlan=5, tpid=0x8100)])
    assert ev == [["ARRIVE_ACK_NEW"], ["ARRIVE_ACK_NEW"], ["ARRIVE_ACK_NEW"], ["ARRIVE_ACK_SUPERSEDE"]]


# ---------------------------------------------------------------------------
# Flow table and queue

def test_more_flows_than_flow_entries_are_untracked_and_never_superseded():
    m = FilterModel(ack_mode=AGGRESSIVE, flow_entries=2)
    ev = run(m, [mk_ack(1000, flow=1), mk_ack(1000, flow=2), mk_ack(1000, flow=3),
                 mk_ack(2000, flow=3), mk_ack(2000, flow=1)])
    assert ev == [["ARRIVE_ACK_NEW"], ["ARRIVE_ACK_NEW"], ["ARRIVE_ACK_UNTRACKED"],
                  ["ARRIVE_ACK_UNTRACKED"], ["ARRIVE_ACK_SUPERSEDE"]]
    assert m.counters["cam_full"] == 2
    assert m.flows_active == 2


def test_entry_is_freed_when_the_flows_last_ack_departs():
    m = FilterModel(ack_mode=AGGRESSIVE, flow_entries=1)
    m.arrive(mk_ack(1000, flow=1))
    assert m.arrive(mk_ack(1000, flow=2)) == ["ARRIVE_ACK_UNTRACKED"]
    assert m.depart()[0] == "DEPART_ACK"
    assert m.flows_active == 0
    assert m.arrive(mk_ack(2000, flow=2)) == ["ARRIVE_ACK_NEW"]
    m.check_invariants()


def test_drop_from_front_when_the_queue_is_full():
    m = FilterModel(ack_mode=AGGRESSIVE, ack_queue_limit=3)
    frames = [mk_ack(1000, flow=i) for i in range(5)]
    ev = run(m, frames)
    assert ev == [["ARRIVE_ACK_NEW"]] * 3 + [["DROP_ACK_FRONT", "ARRIVE_ACK_NEW"]] * 2
    assert queued(m) == frames[2:]
    assert m.counters["drop_ack_front"] == 2
    m.check_invariants()


def test_queue_limit_is_clamped_to_ack_slots():
    m = FilterModel(ack_mode=AGGRESSIVE, ack_queue_limit=200, ack_slots=2)
    ev = run(m, [mk_ack(1000, flow=i) for i in range(3)])
    assert ev[2] == ["DROP_ACK_FRONT", "ARRIVE_ACK_NEW"]


def test_supersession_needs_no_queue_space():
    m = FilterModel(ack_mode=AGGRESSIVE, ack_queue_limit=1)
    assert run(m, [mk_ack(1000), mk_ack(2000)]) == [["ARRIVE_ACK_NEW"], ["ARRIVE_ACK_SUPERSEDE"]]


def test_drop_from_front_frees_an_entry_and_the_arrival_is_looked_up_again():
    # One flow entry, held by flow 1 at the head. Flow 2 misses with the table
    # full; the drop frees flow 1's entry, and the second pass finds it free.
    m = FilterModel(ack_mode=AGGRESSIVE, ack_queue_limit=1, flow_entries=1)
    m.arrive(mk_ack(1000, flow=1))
    assert m.arrive(mk_ack(1000, flow=2)) == ["DROP_ACK_FRONT", "ARRIVE_ACK_NEW"]
    assert m.counters["cam_full"] == 0
    m.check_invariants()


def test_a_full_queue_drops_a_covered_ack_before_the_front():
    # Issue 9, item 4. Conservative, limit 3: [B1, A1, A2] where A2 carries
    # A1's news. C1 arrives: A1 goes, not B1, the only ACK of its flow.
    m = FilterModel(ack_mode=CONSERVATIVE, ack_queue_limit=3)
    b1, a1, a2, c1 = mk_ack(500, flow=2), mk_ack(1000), mk_ack(2000), mk_ack(700, flow=3)
    assert run(m, [b1, a1, a2, c1]) == [["ARRIVE_ACK_NEW"]] * 3 + [["DROP_ACK_COVERED", "ARRIVE_ACK_NEW"]]
    assert queued(m) == [b1, a2, c1]
    assert (m.counters["drop_ack_covered"], m.counters["drop_ack_front"]) == (1, 0)
    # Nothing covered left: the next arrival drops from the front.
    assert m.arrive(mk_ack(900, flow=4)) == ["DROP_ACK_FRONT", "ARRIVE_ACK_NEW"]
    m.check_invariants()


def test_a_covered_ack_is_dropped_from_the_middle_and_its_coverer_keeps_its_place():
    # [A1, B1, A2, C1]: A1 covered by A2. D1 arrives: A1 goes from the head,
    # A2 stays behind B1.
    m = FilterModel(ack_mode=CONSERVATIVE, ack_queue_limit=4)
    a1, b1, a2, c1, d1 = mk_ack(1000), mk_ack(500, flow=2), mk_ack(2000), mk_ack(700, flow=3), mk_ack(9, flow=4)
    assert run(m, [a1, b1, a2, c1, d1])[-1] == ["DROP_ACK_COVERED", "ARRIVE_ACK_NEW"]
    assert queued(m) == [b1, a2, c1, d1]
    # [B1, E1, E2, C1, D1] style: a covered ACK behind the head.
    m = FilterModel(ack_mode=CONSERVATIVE, ack_queue_limit=4)
    e1, e2, f1 = mk_ack(100, flow=5), mk_ack(200, flow=5), mk_ack(1, flow=6)
    assert run(m, [b1, e1, c1, e2, f1])[-1] == ["DROP_ACK_COVERED", "ARRIVE_ACK_NEW"]
    assert queued(m) == [b1, c1, e2, f1]
    m.check_invariants()


def test_a_covered_drop_of_the_arrivals_own_flow_is_looked_up_again():
    # Conservative, limit 2: [A1, A2], A2 covers A1. A dup A3 cannot
    # supersede; A1 is dropped as covered (count 1), A3 is appended tracked.
    m = FilterModel(ack_mode=CONSERVATIVE, ack_queue_limit=2)
    a1, a2, a3 = mk_ack(1000), mk_ack(2000), mk_ack(2000)
    assert run(m, [a1, a2, a3]) == [["ARRIVE_ACK_NEW"]] * 2 + [["DROP_ACK_COVERED", "ARRIVE_ACK_NEW"]]
    assert queued(m) == [a2, a3]
    # A4 greater: count 2 -> supersedes A3 (the newest), not A2.
    a4 = mk_ack(3000)
    assert m.arrive(a4) == ["ARRIVE_ACK_SUPERSEDE"]
    assert queued(m) == [a2, a4]
    m.check_invariants()


def test_under_overload_no_flow_loses_its_only_ack_while_covered_ones_exist():
    # 40 flows, each sends two ACKs (the second covers the first) into a
    # 50-ACK queue of a table with 64 entries, nothing departs: 30 covered
    # ACKs go, every flow keeps its newest ACK and no ACK is dropped from the
    # front.
    m = FilterModel(ack_mode=CONSERVATIVE, ack_queue_limit=50, flow_entries=64, ack_slots=64)
    for ack in (1000, 2000):
        for flow in range(40):
            m.arrive(mk_ack(ack + flow, flow=flow))
    assert (m.counters["drop_ack_covered"], m.counters["drop_ack_front"]) == (30, 0)
    assert {classify(f, ack_mode=1).ack for f in queued(m)} >= {2000 + flow for flow in range(40)}
    m.check_invariants()


def test_only_the_newest_may_be_overwritten_and_order_is_preserved():
    m = FilterModel(ack_mode=AGGRESSIVE)
    a1 = mk_ack(1000, flow=1, opts=[("MSS", 1460)])     # never supersedable
    b1 = mk_ack(1000, flow=2)
    a2 = mk_ack(2000, flow=1)
    a3 = mk_ack(3000, flow=1)
    b2 = mk_ack(2000, flow=2)
    ev = run(m, [a1, b1, a2, a3, b2])
    assert ev == [["ARRIVE_ACK_NEW"], ["ARRIVE_ACK_NEW"], ["ARRIVE_ACK_NEW"],
                  ["ARRIVE_ACK_SUPERSEDE"], ["ARRIVE_ACK_SUPERSEDE"]]
    # a3 took a2's place (behind b1), b2 took b1's place (ahead of a3).
    assert queued(m) == [a1, b2, a3]
    assert [f for _, f in m.drain()] == [a1, b2, a3]


def test_newest_not_supersedable_blocks_even_if_an_older_one_would_be():
    m = FilterModel(ack_mode=AGGRESSIVE)
    a1, a2, a3 = mk_ack(1000), mk_ack(1000), mk_ack(5000, ts=(1, 1))   # a2 is a dup of a1
    ev = run(m, [a1, a2])
    assert ev == [["ARRIVE_ACK_NEW"]] * 2
    # a3 has timestamps, a2 not: a2 may not be overwritten; a1 is not considered.
    assert m.arrive(a3) == ["ARRIVE_ACK_NEW"]
    assert queued(m) == [a1, a2, a3]


def _colliding_flows():
    """Two ``(flow, sport)`` of :func:`mk_ack` whose keys differ and tags agree
    (searched with the tag function; the model must find it from the bytes)."""
    from ipaddress import IPv4Address
    from ackfilter.flowkey import flow_key_words, flow_tag
    seen = {}
    dst = IPv4Address("198.51.100.1").packed
    for flow in range(256):
        src = IPv4Address(f"10.0.0.{flow}").packed
        for sport in range(40000, 40512):
            key = flow_key_words(ip=True, proto=6, src=src, dst=dst,
                                 ports=sport.to_bytes(2, "big") + (443).to_bytes(2, "big"))
            tag = flow_tag(key)
            if tag in seen:
                return seen[tag], (flow, sport)
            seen[tag] = (flow, sport)
    raise AssertionError("no collision among 2^17 flows")


def test_the_model_predicts_tag_collisions_and_leaves_the_entry_alone():
    (fa, pa), (fb, pb) = _colliding_flows()
    a = [mk_ack(ack, flow=fa, sport=pa) for ack in (1000, 2000)]
    b = mk_ack(1000, flow=fb, sport=pb)
    assert classify(a[0], ack_mode=2).key != classify(b, ack_mode=2).key
    assert classify(a[0], ack_mode=2).tag == classify(b, ack_mode=2).tag
    m = FilterModel(ack_mode=AGGRESSIVE)
    assert run(m, [a[0], b, a[1]]) == [
        ["ARRIVE_ACK_NEW"], ["ARRIVE_ACK_UNTRACKED"], ["ARRIVE_ACK_SUPERSEDE"]]
    assert m.counters["cam_collisions"] == 1 and m.counters["cam_full"] == 0
    assert m.flows_active == 1
    m.check_invariants()


def test_data_full_drops_a_data_frame_and_rejects_any_other_class():
    m = FilterModel()
    assert m.arrive(mk_data(100), data_full=True) == ["DROP_DATA_FULL"]
    assert m.counters["drop_data_full"] == 1
    with pytest.raises(AssertionError, match="classes 'ack'"):
        m.arrive(mk_ack(1000), data_full=True)


def test_mode_off_is_a_plain_fifo_that_still_counts_pure_acks():
    m = FilterModel(ack_mode=0)
    frames = [mk_ack(1000 * i) for i in range(1, 4)] + [mk_ack(1, flags="PA"), mk_ack(1, flags="FA")]
    assert run(m, frames) == [["ARRIVE_DATA"]] * 5
    assert (m.counters["acks_in"], m.counters["acks_ineligible"]) == (4, 1)
    assert [f for _, f in m.drain()] == frames


def test_acks_in_excludes_pure_acks_longer_than_a_slot():
    frame, cls = malformed_cases()["pure_ack_with_trailer_over_the_256_byte_slot_is_data"]
    for mode in (0, 1, 2):
        m = FilterModel(ack_mode=mode)
        assert m.arrive(frame) == ["ARRIVE_DATA"]
        assert m.counters["acks_in"] == 0


# ---------------------------------------------------------------------------
# Scheduler

def _loaded(data_share, n_acks, data_sizes):
    m = FilterModel(ack_mode=CONSERVATIVE, data_share=data_share, ack_queue_limit=10**6, ack_slots=10**6,
                    flow_entries=0)                       # untracked: nothing is superseded
    ack = mk_ack(1000)                                    # the same bytes will do here
    for _ in range(n_acks):
        m.arrive(ack)
    data = {s: mk_data(s) for s in set(data_sizes)}
    for s in data_sizes:
        m.arrive(data[s])
    return m


def test_scheduler_credit_with_data_share_64():
    # ACK 60 B adds 60*64 = 3840; data 100 B subtracts 100*192 = 19200:
    # A (3840) D (-15360) A A A A (0) A (3840) D (-15360) ...
    m = _loaded(64, 20, [100] * 3)
    kinds = [m.depart()[0][7] for _ in range(14)]
    assert "".join(kinds) == "ADAAAAADAAAAAD"
    assert m.credit == -15360


def test_data_gets_a_quarter_of_the_bytes_under_contention_with_data_share_64():
    m = _loaded(64, 4000, [1514] * 60)
    sent = {"A": 0, "D": 0}
    while m.ack_queue and m.data_queue:
        kind, frame = m.depart()
        sent[kind[7]] += len(frame)
    share = sent["D"] / (sent["A"] + sent["D"])
    assert abs(share - 0.25) < 0.01


def test_data_share_0_is_strict_acks_first():
    m = _loaded(0, 5, [100] * 2)
    assert "".join(m.depart()[0][7] for _ in range(7)) == "AAAAADD"


def test_data_share_256_sends_data_after_any_ack():
    m = _loaded(256, 3, [100] * 3)
    assert "".join(m.depart()[0][7] for _ in range(6)) == "ADDDAA"


def test_one_class_alone_resets_the_credit():
    m = _loaded(64, 1, [100, 100])
    assert m.depart()[0] == "DEPART_ACK" and m.credit == 3840
    assert m.depart()[0] == "DEPART_DATA" and m.credit == 0      # only data queued: reset
    m.arrive(mk_ack(5000, flow=77))
    assert m.depart()[0] == "DEPART_ACK"                          # credit 0 -> ACK first
    assert m.depart()[0] == "DEPART_DATA"
    assert m.depart() is None


def test_depart_returns_none_when_both_queues_are_empty():
    m = FilterModel()
    assert m.depart() is None
    assert m.counters["frames_out"] == 0


# ---------------------------------------------------------------------------
# Shaper

def test_gcra_without_burst_spaces_frames_by_their_length():
    # 1 cycle per byte (cpb_q16 = 2^16), no overhead, no burst.
    assert gcra_departures([100, 100, 50], [0, 0, 0], cpb_q16=65536, burst_bytes=0, overhead_bytes=0) == [0, 100, 200]


def test_gcra_burst_lets_a_frame_start_early_and_overhead_counts():
    assert gcra_departures([100, 100, 100], [0, 0, 0], cpb_q16=65536, burst_bytes=100,
                           overhead_bytes=0) == [0, 0, 100]
    assert gcra_departures([100, 100], [0, 0], cpb_q16=65536, burst_bytes=0, overhead_bytes=24) == [0, 124]


def test_gcra_idle_time_does_not_bank_credit_beyond_the_burst():
    assert gcra_departures([100, 100, 100], [0, 1000, 1000], cpb_q16=65536, burst_bytes=0,
                           overhead_bytes=0) == [0, 1000, 1100]


def test_gcra_fractional_rate_and_unshaped():
    # 1.5 cycles per byte: tat after 10 bytes = 15 cycles.
    assert gcra_departures([10, 10], [0, 0], cpb_q16=98304, burst_bytes=0, overhead_bytes=0) == [0, 15]
    assert gcra_departures([1500] * 3, [0, 1, 2], cpb_q16=0, burst_bytes=0, overhead_bytes=24) == [0, 1, 2]
    s = GcraShaper(cpb_q16=98304, burst_bytes=0, overhead_bytes=0)
    s.start(0, 11)                                  # tat = 16.5 cycles
    assert s.wake_at() == 17 and not s.may_start(16) and s.may_start(17)


# ---------------------------------------------------------------------------
# Classification edge cases

CASES = malformed_cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_malformed_case_classification(name):
    frame, expected = CASES[name]
    cls, eligible = expected_class(expected)
    for mode in (CONSERVATIVE, AGGRESSIVE):
        p = classify(frame, ack_mode=mode)
        assert (p.cls, p.eligible) == (cls, eligible), p.reason
    off = classify(frame, ack_mode=0)
    assert off.cls == ("data" if cls == "ack" else cls)
    assert off.pure_ack == (cls == "ack")
    event = {"runt": "DROP_RUNT", "oversize": "DROP_OVERSIZE", "data": "ARRIVE_DATA",
             "ack": "ARRIVE_ACK_NEW"}[cls]
    m = FilterModel(ack_mode=CONSERVATIVE)
    assert m.arrive(frame) == [event]
    assert (m.counters["acks_in"], m.counters["acks_ineligible"]) == (cls == "ack", cls == "ack" and not eligible)


def test_malformed_cases_are_distinct_frames():
    frames = [f for f, _ in CASES.values()]
    assert len(set(frames)) == len(frames)


def test_pure_ack_fields_are_parsed():
    p = classify(mk_ack(0xDEADBEEF, ts=(7, 8), sack=[(1, 2), (3, 4)], flags="AE", ecn=2, vlan=100),
                 ack_mode=1)
    assert (p.cls, p.ack, p.has_ts, p.tsval, p.tsecr, p.sack) == ("ack", 0xDEADBEEF, True, 7, 8, [(1, 2), (3, 4)])
    assert (p.ece, p.cwr, p.ecn, p.other_opts, p.eligible) == (True, False, 2, False, True)
    # Key word 0: VLAN ID 100 of a 0x8100 tag (code 1), one tag, IPv4, no PPPoE;
    # word 1: protocol 6 (bits 16-23), an IP header (bit 24), no session ID;
    # word 2: source address 10.0.0.0 in arrival byte order; word 10: ports.
    assert p.key[0] == 100 | 1 << 24 | 1 << 28
    assert p.key[1] == 6 << 16 | 1 << 24
    assert p.key[2] == int.from_bytes(bytes([10, 0, 0, 0]), "little")
    assert p.key[10] == int.from_bytes((40000).to_bytes(2, "big") + (443).to_bytes(2, "big"), "little")


# ---------------------------------------------------------------------------
# The flow key of every frame (spec section 2, "Flow key")

@pytest.mark.parametrize("name", sorted(flowkeys.CASES))
def test_every_frame_gets_the_flow_key_the_spec_gives_it(name):
    from ackfilter.flowkey import flow_tag
    frame, words = flowkeys.CASES[name]
    for mode in (0, 1, 2):
        p = classify(frame, ack_mode=mode)
        assert [hex(w) for w in p.key] == [hex(w) for w in words], name
        assert p.tag == flow_tag(words), name


def test_the_flow_key_cases_cover_every_class_of_frame():
    classes = {classify(f, ack_mode=1).cls for f, _w in flowkeys.CASES.values()}
    assert classes == {"runt", "ack", "data"}
    big = bytes(flowkeys.CASES["udp4"][0]) + bytes(2100)
    p = classify(big, ack_mode=1)
    assert p.cls == "oversize" and p.key == flowkeys.CASES["udp4"][1]


def test_a_flow_is_its_five_tuple_and_link_and_fragments_share_their_pair():
    import struct
    from scapy.layers.inet import IP, UDP, fragment
    from scapy.layers.l2 import Dot1Q, Ether
    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    ip = dict(src="192.0.2.1", dst="198.51.100.2")

    def key(pkt):
        return classify(bytes(pkt), ack_mode=1).key

    dns = [key(eth / IP(**ip, id=i) / UDP(sport=40000 + i % 2, dport=53) / b"q") for i in range(4)]
    assert dns[0] == dns[2] != dns[1] == dns[3]         # one flow per source port
    assert key(eth / IP(**ip) / UDP(sport=40000, dport=53)) != key(eth / Dot1Q(vlan=2) / IP(**ip) /
                                                                 UDP(sport=40000, dport=53))
    # Every fragment of a datagram: one key, its protocol and address pair.
    frags = fragment(eth / IP(**ip) / UDP(sport=4500, dport=4500) / bytes(3000), fragsize=1400)
    keys = {key(f) for f in frags}
    assert len(frags) == 3 and len(keys) == 1
    (k,) = keys
    assert k[1] == 17 << 16 | 1 << 24 and k[10] == 0
    assert k[2] == struct.unpack("<I", bytes([192, 0, 2, 1]))[0]


# ---------------------------------------------------------------------------
# Traces

def test_raw_builder_matches_scapy():
    import random
    rng = random.Random(7)
    flows = [traces.Flow(), traces.Flow(src="2001:db8::1", dst="2001:db8::2"),
             traces.Flow(vlans=((0x88A8, 5), (0x8100, 4095))), traces.Flow(pppoe_session=0x1234),
             traces.Flow(src="2001:db8::1", dst="2001:db8::2", vlans=((0x9100, 7),), pppoe_session=1)]
    for flow in flows:
        for _ in range(10):
            kw = dict(seq=rng.getrandbits(32), ack=rng.getrandbits(32), window=rng.randrange(65536),
                      flags=rng.choice(["A", "PA", "AEC", "AN", 0x1FF]),
                      options=rng.choice([(), [("NOP", None), ("NOP", None), ("Timestamp", (rng.getrandbits(32), 5))],
                                          [("MSS", 1460), ("SAckOK", b""), ("WScale", 7)],
                                          [("NOP", None), ("NOP", None), ("SAck", (1, 2, 3, 4))]]),
                      payload=bytes(rng.randrange(0, 30)), ip_id=rng.getrandbits(16), ecn=rng.randrange(4),
                      flow_label=rng.getrandbits(20), ip_option_words=rng.randrange(3),
                      frag=rng.choice([0, 0x4000, 0x2000]), reserved=rng.randrange(8), pad_byte=rng.randrange(256))
            assert traces.tcp_frame(flow, builder="raw", **kw) == traces.tcp_frame(flow, builder="scapy", **kw)


def test_ack_stream_is_padded_and_advances():
    s = traces.ack_stream(traces.Flow(), 4, 0xFFFFF000, 2 * traces.MSS, ts=(10, 20), interval=0.5e-3)
    assert [t for t, _ in s] == [0.0, 0.5e-3, 1e-3, 1.5e-3]
    parsed = [classify(f, ack_mode=1) for _, f in s]
    assert all(p.cls == "ack" for p in parsed)
    assert [p.ack for p in parsed] == [(0xFFFFF000 + i * 2896) & 0xFFFFFFFF for i in range(4)]
    plain = traces.ack_stream(traces.Flow(), 1, 1, 1)
    assert len(plain[0][1]) == 60


def test_random_trace_is_deterministic_unique_and_conserved():
    a = random_trace(1234, 10000, 200)
    assert a == random_trace(1234, 10000, 200)
    assert len(a) >= 10000
    assert len({f for _, f in a}) == len(a)
    assert all(t1 < t2 for (t1, _), (t2, _) in zip(a, a[1:]))
    classes = {classify(f, ack_mode=1).cls for _, f in a}
    assert classes == {"runt", "oversize", "ack", "data"}
    import random
    for mode in (0, 1, 2):
        rng = random.Random(mode)
        m = FilterModel(ack_mode=mode, ack_queue_limit=16, flow_entries=8)
        for _, f in a:
            m.arrive(f, data_full=(m.classify(f).cls == "data" and rng.random() < 0.01))
            for _ in range(rng.choice((0, 0, 1, 2))):
                m.depart()
        m.check_invariants()
        m.drain()
        c = m.counters
        assert c["frames_in"] == len(a)
        assert c["frames_in"] == c["frames_out"] + c["acks_superseded"] + m.dropped()
        if mode:
            assert c["acks_superseded"] > 0 and c["drop_ack_front"] > 0 and c["cam_full"] > 0


def test_demo_scenario_is_sorted_unique_and_mostly_acks():
    d = traces.demo_scenario(1)
    assert d == sorted(d, key=lambda x: x[0]) and 1.9 < d[-1][0] < 2.2
    assert len({f for _, f in d}) == len(d)
    cls = [classify(f, ack_mode=1).cls for _, f in d]
    assert cls.count("ack") > 0.8 * len(d)
    assert sum(1 for _, f in d if len(f) == 1514) > 100
    # The ACKs alone exceed a 1 Mb/s uplink (what makes the filter matter).
    ack_bits = sum(8 * (len(f) + 24) for (_, f), c in zip(d, cls) if c == "ack")
    assert ack_bits / 2.0 > 1_000_000


def test_pcap_round_trip_keeps_nanosecond_times(tmp_path):
    trace = [(1.000000001, mk_ack(1)), (2.5, mk_data(100))]
    write_pcap(tmp_path / "t.pcap", trace, seconds=True)
    back = read_pcap(tmp_path / "t.pcap", seconds=True)
    assert [f for _, f in back] == [f for _, f in trace]
    assert abs(back[0][0] - 1.000000001) < 1e-12 * 10 and back[1][0] == 2.5


# ---------------------------------------------------------------------------
# IP packet length (the shaper's link accounting, spec section 6)

def test_ip_packet_length_is_the_announced_ip_length_without_l2_header_or_padding():
    from scapy.layers.l2 import ARP
    from scapy.layers.ppp import PPP, PPPoE
    from ackfilter.model.pktparse import ip_packet_length
    ack = mk_ack(1000)                                    # 54 bytes + 6 of padding
    assert len(ack) == 60 and ip_packet_length(ack) == 40
    assert ip_packet_length(mk_ack(1000, v6=True)) == 60
    tagged = mk_ack(1000, vlan=7, tpid=0x88A8)
    assert ip_packet_length(tagged) == 40
    pppoe = bytes(Ether() / Dot1Q(vlan=3) / PPPoE(sessionid=9) / PPP(proto=0x0021) /
                  IP(src="10.0.0.1", dst="10.0.0.2") / TCP(flags="A"))
    assert ip_packet_length(pppoe) == 40                  # 14 + 4 + 8 bytes of L2 header
    arp = bytes(Ether() / ARP()).ljust(60, b"\0")
    assert ip_packet_length(arp) == 46                    # not IP: all after the Ethernet header
    cut = mk_ack(1000)[:40]                               # IPv4 header announces 40, 26 present
    assert ip_packet_length(cut) == 26
    full = mk_ack(1000, flags="PA", payload=bytes(1460))
    assert len(full) == 1514 and ip_packet_length(full) == 1500
    assert ip_packet_length(mk_data(200)) == 28           # UDP header only: the trailer is not charged


# ---- ack_mode changed while frames are queued (spec section 4) ----

def mk_flow_data(flow, size=400):
    """A TCP segment with payload of flow ``flow`` (the same flow as mk_ack's)."""
    return mk_ack(1, flow=flow, flags="PA", payload=bytes(size))


@pytest.mark.parametrize("flow_queues", [False, True])
def test_turning_the_filter_on_holds_new_acks_behind_the_pure_acks_queued_as_data(flow_queues):
    """Filter off: a flow's data and pure ACK go to its data queue. Filter on:
    the flow's next ACK goes to the ACK queue, which must wait until the
    older ACK queued as data has left (else the sender would see ack 200
    before ack 100 and ignore the older's news)."""
    m = FilterModel(ack_mode=0, data_share=128, flow_queues=flow_queues)
    d, a1 = mk_flow_data(1), mk_ack(100, flow=1)
    assert run(m, [d, a1]) == [["ARRIVE_DATA"], ["ARRIVE_DATA"]] and m.acks_in_data == 1
    m.set("ack_mode", AGGRESSIVE)
    assert m.ack_mode == 0 and m.may_switch_mode()      # in force at the core's next quiet point
    m.switch_mode()
    a2 = mk_ack(200, flow=1)
    assert run(m, [a2]) == [["ARRIVE_ACK_NEW"]]
    out = [f for _, f in m.drain()]
    assert out == [d, a1, a2]                   # credit 0 alone would have sent a2 first
    assert m.acks_in_data == 0


@pytest.mark.parametrize("flow_queues", [False, True])
def test_turning_the_filter_off_sends_the_ack_queue_first(flow_queues):
    """Filter on: an ACK in the ACK queue, the flow's data in its queue, and
    credit for data. Filter off: the flow's next pure ACK is data, behind
    the data; the ACK queue's ACK must still leave before it."""
    m = FilterModel(ack_mode=AGGRESSIVE, data_share=256, flow_queues=flow_queues)
    d1, d2, a1 = mk_flow_data(1), mk_flow_data(1), mk_ack(100, flow=1)
    run(m, [d1, d2])
    assert run(m, [a1]) == [["ARRIVE_ACK_NEW"]]
    assert m.depart()[1] == a1 and m.credit > 0  # an ACK while data waits: data's turn next
    a2, a3 = mk_ack(200, flow=1), mk_ack(300, flow=1)
    assert run(m, [a2]) == [["ARRIVE_ACK_NEW"]]
    m.set("ack_mode", 0)
    m.switch_mode()
    assert run(m, [a3]) == [["ARRIVE_DATA"]]
    out = [f for _, f in m.drain()]
    assert out == [a2, d1, d2, a3]              # by credit alone: d1, d2, a3, then a2
    m.check_invariants()


def test_the_mode_switches_only_when_one_kind_of_leftover_remains():
    """Off with a pure ACK queued as data, then on (allowed: the ACK queue is
    empty), an ACK queued: off again must wait for the data's ACK to leave,
    and on again for the ACK queue to empty (else three generations of a
    flow's ACKs would wait in two places and no rule could order them)."""
    m = FilterModel(ack_mode=0, data_share=128)
    d, a1, a2 = mk_flow_data(1), mk_ack(100, flow=1), mk_ack(200, flow=1)
    run(m, [d, a1])
    m.set("ack_mode", AGGRESSIVE)
    m.switch_mode()
    run(m, [a2])
    m.set("ack_mode", 0)
    assert not m.may_switch_mode()
    with pytest.raises(AssertionError, match="pure ACKs queued as data"):
        m.switch_mode()
    assert [f for _, f in (m.depart(), m.depart())] == [d, a1]    # the data's ACK first
    assert m.may_switch_mode()
    m.switch_mode()
    m.set("ack_mode", CONSERVATIVE)
    assert not m.may_switch_mode()                     # a2 still in the ACK queue
    assert m.depart()[1] == a2 and m.may_switch_mode()


def test_set_refuses_what_it_cannot_change_live():
    m = FilterModel()
    with pytest.raises(ValueError, match="not a live register"):
        m.set("shaper_cpb_q16", 1)
    with pytest.raises(ValueError, match="no RED"):
        m.set("red_max_p", 1)
    m.set("ack_queue_limit", 2)
    assert m.ack_limit == 2
