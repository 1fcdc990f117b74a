"""Tests of the RED golden model (``ackfilter.model.red``, ``docs/spec.md`` section 10).

Marked frames are checked against Scapy (dissected, IPv4 header checksum
recomputed with ``del ...chksum``: the same bytes must come back). The
average is checked against a floating-point EWMA, the notification rate
against the theory of Floyd and Jacobson's count-based spacing, the PRNG's
period by linear algebra over GF(2).
"""

import decimal
import math
import random
import re
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest
from encaps import ENCAPS, L2_BYTES, MACS, dissect, l2_header
from scapy.layers.inet import IP, TCP, UDP, IPOption_Router_Alert
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Dot1Q, Ether
from scapy.layers.ppp import PPPoED

from ackfilter import params
from ackfilter.model.pktparse import ones_complement_sum
from ackfilter.model.red import (COUNT_MAX, ECN_CE, ECN_ECT0, ECN_ECT1, ECN_NOT_ECT, P_ONE,
                                 RED_COUNTERS, RED_PARAMS, RED_PRNG_SEED, Red, checksum_update,
                                 early_notify, ecn_codepoint, ewma_step, idle_decay,
                                 idle_shift_for_rate, ip_header, pb_terms, region, registers_for_rate, set_ce,
                                 xorshift32)

SPEC = Path(__file__).resolve().parent.parent / "docs" / "spec.md"


def _red_section(text):
    """Spec section 10, up to the next section."""
    start = text.index("## 10. RED")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else None]
MAX_BYTES = (1 << 20) - 1


def mk_frame(*, encap="eth", v6=False, ecn=ECN_ECT0, dscp=10, ip_opts=False, udp=False, payload=100):
    """An IP packet (TCP, or UDP) with ``payload`` bytes in an Ethernet frame padded to 60 bytes."""
    l2 = l2_header(encap, v6=v6)
    tos = (dscp << 2) | ecn
    if v6:
        ip = IPv6(src="2001:db8::1", dst="2001:db8:ffff::2", tc=tos, fl=0xABCDE)
    else:
        ip = IP(src="192.0.2.1", dst="198.51.100.2", id=4321, tos=tos, ttl=61, flags="DF",
                 options=[IPOption_Router_Alert()] if ip_opts else [])
    l4 = UDP(sport=5353, dport=53) if udp else TCP(sport=40000, dport=443, seq=1000, ack=777, flags="PA")
    data = random.Random(payload).randbytes(payload)
    return bytes(l2 / ip / l4 / data).ljust(60, b"\0")


def scapy_rebuilt(frame):
    """``frame`` with Scapy's IPv4 header checksum (and TCP/UDP checksum) in place of its own."""
    pkt = dissect(frame)
    if IP in pkt:
        del pkt[IP].chksum
    for layer in (TCP, UDP):
        if layer in pkt:
            del pkt[layer].chksum
    return bytes(pkt)


def mk_red(**kw):
    args = dict(min_bytes=1000, max_bytes=2000, max_p=32768, wq_shift=4, gentle=False, idle_shift=10)
    args.update(kw)
    return Red(**args)


#: An average in the gentle early region where, with max_p = 1, p_b is exactly 1: every
#: frame is notified, by a mark if it can be (the forced region drops every frame).
CERTAIN_EARLY = 3000


def mk_certain(**kw):
    return mk_red(max_p=P_ONE, gentle=True, **kw)


def run_at(red, avg_bytes, frames):
    """Arrivals, one per cycle, with the average held at exactly ``avg_bytes`` (a sample
    equal to the average leaves it as it is); the outcomes in order."""
    red.avg_q16 = avg_bytes << 16
    out = []
    for frame in frames:
        out.append(red.arrive(frame, avg_bytes, red.now + 1))
        assert red.avg_q16 == avg_bytes << 16
    return out


ECT0 = mk_frame()


# --- regions ---------------------------------------------------------------------------------

@pytest.mark.parametrize("avg", [1, 500, 999])
def test_below_min_threshold_never_notifies(avg):
    red = mk_red(max_p=P_ONE)
    frames = [ECT0, mk_frame(ecn=ECN_NOT_ECT), b"\x01" * 64]
    outs = run_at(red, avg, frames * 3000)
    assert all(o == ("pass", f) for o, f in zip(outs, frames * 3000))
    assert red.counters == {"red_marked": 0, "red_ce_already": 0, "drop_red": 0}
    assert red.count == 0


def test_a_fraction_of_a_byte_below_min_threshold_is_below():
    red = mk_red(max_p=P_ONE)
    red.avg_q16 = (1000 << 16) - 1                  # 999.99998 bytes
    assert red.arrive(ECT0, 999, 1)[0] == "pass"    # the sample (999) keeps it below 1000


def test_the_probability_is_zero_at_min_threshold():
    red = mk_red(max_p=P_ONE)
    outs = run_at(red, 1000, [ECT0] * 2000)
    assert {o for o, _ in outs} == {"pass"}
    assert red.count == 2000                        # in the early region, never notified


FORCED_MIX = [ECT0, mk_frame(ecn=ECN_ECT1), mk_frame(ecn=ECN_CE), mk_frame(ecn=ECN_NOT_ECT)]


@pytest.mark.parametrize("avg", [2000, 2001, 3999, 4000, 100000])
def test_above_max_threshold_without_gentle_every_frame_is_dropped_ecn_capable_or_not(avg):
    """The forced region drops: a sender ignoring marks must not hold the queue where
    its Not-ECT retransmissions are always lost (spec section 10, ns-2's forced drop)."""
    red = mk_red(max_p=1, gentle=False)
    outs = run_at(red, avg, FORCED_MIX * 250)
    assert [o for o, _ in outs] == ["drop"] * 1000
    assert [f for _, f in outs] == FORCED_MIX * 250           # dropped as they came
    assert red.counters == {"red_marked": 0, "red_ce_already": 0, "drop_red": 1000}


def test_just_below_max_threshold_ecn_capable_frames_are_marked_not_dropped():
    red = mk_red(max_p=P_ONE, gentle=False)                   # p_b = 1 at the top of the ramp
    outs = run_at(red, 1999, FORCED_MIX * 250)
    assert [o for o, _ in outs] == ["mark", "mark", "mark", "drop"] * 250
    assert red.counters == {"red_marked": 750, "red_ce_already": 250, "drop_red": 250}


@pytest.mark.parametrize("avg", [4000, 4001, 10**6])
def test_gentle_drops_every_frame_from_twice_max_threshold(avg):
    red = mk_red(max_p=1, gentle=True)
    assert {o for o, _ in run_at(red, avg, [ECT0] * 1000)} == {"drop"}
    assert red.counters["drop_red"] == 1000 and red.counters["red_marked"] == 0


def test_the_average_is_updated_by_the_arrival_before_it_is_decided():
    red = mk_red(wq_shift=1)
    red.avg_q16 = 999 << 16
    assert red.arrive(mk_frame(ecn=ECN_NOT_ECT), 5000, 1)[0] == "drop"   # (999 + 5000) / 2 >= 2000
    assert red.avg_bytes == 2999


def test_regions_change_at_min_max_and_twice_max_threshold():
    kw = dict(min_bytes=1000, max_bytes=2000)
    assert [region(a, gentle=False, **kw) for a in (999, 1000, 1999, 2000, 3999, 4000)] == \
        ["below", "early", "early", "forced", "forced", "forced"]
    assert [region(a, gentle=True, **kw) for a in (999, 1000, 1999, 2000, 3999, 4000)] == \
        ["below", "early", "early", "early", "early", "forced"]


def test_pb_is_linear_to_max_p_then_gentle_to_one():
    kw = dict(min_bytes=1000, max_bytes=2000, max_p=6554)

    def pb(avg):
        num, den = pb_terms(avg, **kw)
        return Fraction(num, den << 16)

    assert pb(1000) == 0
    assert pb(1500) == Fraction(6554, 65536) / 2
    assert pb(1999) == Fraction(6554, 65536) * Fraction(999, 1000)
    assert pb(2000) == Fraction(6554, 65536)                    # continuous at max_th
    assert pb(3000) == Fraction(6554, 65536) + (1 - Fraction(6554, 65536)) / 2
    assert pb(3999) < 1 and pb(4000) == 1
    for avg in range(1000, 4000, 37):                            # non-decreasing
        assert pb(avg) <= pb(avg + 37)


# --- the count-based spacing -----------------------------------------------------------------

def spacing_theory(num, den):
    """Mean gap between notifications and the gap's variance under the integer rule:
    at ``count`` c, ``min(65536, ceil(65536 num / room))`` of the 65536 values of
    ``rand16`` notify (``room = (den << 16) - c num``; certain when ``room <= 0``)."""
    survive, mean, second, c = 1.0, 0.0, 0.0, 0
    while survive > 1e-18:
        room = (den << 16) - c * num
        p = 1.0 if room <= 0 else min(P_ONE, -(-(num << 16) // room)) / P_ONE
        n = c + 1
        mean += n * survive * p
        second += n * n * survive * p
        survive *= 1 - p
        c += 1
    return mean, second - mean * mean


def notified_gaps(outs):
    idx = [i for i, (o, _) in enumerate(outs) if o != "pass"]
    return [b - a for a, b in zip([-1] + idx, idx)]


def test_count_based_spacing_gives_the_uniform_gap_rate_2pb_over_1_plus_pb():
    # p_b = 0.5 * (1040 - 1000) / (2000 - 1000) = 1/50 exactly.
    red = mk_red(max_p=P_ONE // 2)
    num, den = pb_terms(1040, min_bytes=1000, max_bytes=2000, max_p=P_ONE // 2)
    assert Fraction(num, den << 16) == Fraction(1, 50)
    n = 100_000
    outs = run_at(red, 1040, [ECT0] * n)
    marks = sum(o == "mark" for o, _ in outs)
    # Floyd and Jacobson section 7: gaps uniform on 1..1/p_b, mean (1 + 1/p_b) / 2.
    pb = 1 / 50
    rate = 2 * pb / (1 + pb)
    mu, var = 25.5, (50 ** 2 - 1) / 12
    se = math.sqrt(n * var / mu ** 3)                  # renewal process: Var N(n) ~ n var / mu^3
    assert abs(marks - n * rate) < 3 * se, (marks, n * rate, se)
    gaps = notified_gaps(outs)
    assert max(gaps) <= 50 and min(gaps) >= 1
    assert set(gaps) == set(range(1, 51))              # every gap length occurs
    # The exact integer rule's own prediction agrees with the continuous one here.
    assert abs(spacing_theory(num, den)[0] - mu) < 0.01


@pytest.mark.parametrize("avg, max_p", [(1300, 6554), (3000, 6554), (2000, 1000), (3900, 0)])
def test_notification_rate_matches_the_integer_rule_in_the_early_and_gentle_regions(avg, max_p):
    red = mk_red(max_p=max_p, gentle=True)
    num, den = pb_terms(avg, min_bytes=1000, max_bytes=2000, max_p=max_p)
    mu, var = spacing_theory(num, den)
    n = 30_000
    marks = sum(o == "mark" for o, _ in run_at(red, avg, [ECT0] * n))
    se = math.sqrt(n * var / mu ** 3)
    assert abs(marks - n / mu) < 3 * se + 1, (marks, n / mu, se)
    pb = num / (den << 16)
    assert max(notified_gaps(run_at(mk_red(max_p=max_p, gentle=True), avg, [ECT0] * 3000))) \
        <= math.ceil(1 / pb)


def test_early_notify_is_exactly_rand_below_pa():
    rng = random.Random(5)
    for _ in range(3000):
        den = rng.randrange(1, 1 << 21)
        num = rng.randrange(0, den << 16)                 # p_b < 1
        count = rng.choice([0, 1, 2, rng.randrange(COUNT_MAX + 1)])
        pb = Fraction(num, den << 16)
        certain = count * pb >= 1
        pa = Fraction(1) if certain else pb / (1 - count * pb)
        edge = min(P_ONE - 1, math.floor(pa * P_ONE))
        for r in {0, max(0, edge - 1), edge, min(P_ONE - 1, edge + 1), P_ONE - 1}:
            assert early_notify(r, count, num, den) == (certain or Fraction(r, P_ONE) < pa)


def test_count_is_zero_below_min_and_after_a_notification_and_saturates():
    red = mk_red(max_p=1, min_bytes=0, max_bytes=MAX_BYTES)
    run_at(red, 1, [ECT0] * 10)
    assert red.count == 10
    run_at(red, MAX_BYTES, [ECT0])                     # forced
    assert red.count == 0
    red.count = COUNT_MAX
    run_at(red, 1, [ECT0])                             # p_b ~ 2^-36 (rand16 = 0 only): not this time
    assert red.count == COUNT_MAX
    red2 = mk_red()
    red2.count = 77
    run_at(red2, 999, [ECT0])
    assert red2.count == 0



# --- the frame -------------------------------------------------------------------------------

@pytest.mark.parametrize("ecn", [ECN_ECT0, ECN_ECT1])
@pytest.mark.parametrize("ip_opts", [False, True])
@pytest.mark.parametrize("dscp", [0, 10, 46, 63])
def test_ect_ipv4_becomes_ce_with_a_valid_header_checksum(ecn, ip_opts, dscp):
    frame = mk_frame(ecn=ecn, ip_opts=ip_opts, dscp=dscp)
    red = mk_certain()
    outcome, out = run_at(red, CERTAIN_EARLY, [frame])[0]
    assert outcome == "mark" and out == set_ce(frame)
    pkt = dissect(out)
    assert pkt[IP].tos == (dscp << 2) | ECN_CE
    assert scapy_rebuilt(out) == out                    # Scapy's own checksum: the same bytes
    assert [i for i in range(len(frame)) if frame[i] != out[i]] in ([15, 24], [15, 25], [15, 24, 25])
    assert red.counters == {"red_marked": 1, "red_ce_already": 0, "drop_red": 0}


def random_ipv4_header(rng):
    ihl = rng.randrange(5, 16)
    h = bytearray(rng.randbytes(4 * ihl))
    h[0] = 0x40 | ihl
    h[1] = (h[1] & 0xFC) | rng.choice([ECN_ECT0, ECN_ECT1])
    h[10:12] = b"\0\0"
    h[10:12] = (~ones_complement_sum(h) & 0xFFFF).to_bytes(2, "big")
    return h


def full_checksum(h):
    h = bytearray(h)
    h[10:12] = b"\0\0"
    return ~ones_complement_sum(h) & 0xFFFF


def test_rfc1624_incremental_update_equals_full_recomputation_for_random_headers():
    rng = random.Random(1624)
    for _ in range(5000):
        h = random_ipv4_header(rng)
        frame = bytes(12) + b"\x08\x00" + bytes(h)
        out = set_ce(frame)
        assert out[15] & 3 == ECN_CE and out[14] == frame[14] and out[15] >> 2 == frame[15] >> 2
        assert out[16:24] == frame[16:24] and out[26:] == frame[26:]
        assert int.from_bytes(out[24:26], "big") == full_checksum(out[14:])


@pytest.mark.parametrize("target", [0x0000, 0xFFFF])
def test_rfc1624_update_is_right_when_a_checksum_is_zero(target):
    """Headers whose checksum is 0 after the mark (``target`` 0) or before it: the cases
    where ones' complement's two zeros matter (RFC 1624 section 3)."""
    rng = random.Random(target)
    for _ in range(200):
        h = random_ipv4_header(rng)
        marked = bytearray(h)
        marked[1] |= 3
        # Choose the identification so that the header's sum is 0xFFFF after the mark
        # (checksum 0) or before it.
        base = marked if target == 0 else h
        rest = bytearray(base)
        rest[4:6] = rest[10:12] = b"\0\0"
        h[4:6] = (0xFFFF - ones_complement_sum(rest)).to_bytes(2, "big")
        h[10:12] = full_checksum(h).to_bytes(2, "big")
        out = set_ce(bytes(12) + b"\x08\x00" + bytes(h))[14:]
        got = int.from_bytes(out[10:12], "big")
        assert got == full_checksum(out) and got != 0xFFFF
        if target == 0:
            assert got == 0


def test_checksum_update_keeps_a_wrong_checksum_wrong_by_the_same_amount():
    rng = random.Random(3)
    for _ in range(500):
        h = random_ipv4_header(rng)
        good = int.from_bytes(h[10:12], "big")
        bad = (good + rng.randrange(1, 0xFFFF)) & 0xFFFF
        old, new = int.from_bytes(h[0:2], "big"), int.from_bytes(h[0:2], "big") | 3
        assert ones_complement_sum(b"", (~checksum_update(good, old, new) & 0xFFFF)
                                   + checksum_update(bad, old, new)) \
            == ones_complement_sum(b"", (~good & 0xFFFF) + bad)


@pytest.mark.parametrize("ecn", [ECN_ECT0, ECN_ECT1])
def test_ipv6_is_marked_ce_in_the_traffic_class_and_nothing_else_changes(ecn):
    frame = mk_frame(v6=True, ecn=ecn, dscp=46, payload=300)
    outcome, out = run_at(mk_certain(), CERTAIN_EARLY, [frame])[0]
    assert outcome == "mark"
    assert [i for i in range(len(frame)) if frame[i] != out[i]] == [15]
    pkt = Ether(out)
    assert pkt[IPv6].tc == (46 << 2) | ECN_CE and pkt[IPv6].fl == 0xABCDE
    assert scapy_rebuilt(out) == out                    # the TCP checksum does not cover the class


@pytest.mark.parametrize("v6", [False, True])
@pytest.mark.parametrize("encap", sorted(ENCAPS))
def test_vlan_qinq_and_pppoe_frames_are_marked_at_their_ip_header(encap, v6):
    frame = mk_frame(encap=encap, v6=v6)
    ip = L2_BYTES[encap]
    assert ip_header(frame) == (ip, 6 if v6 else 4)
    assert ecn_codepoint(frame) == ECN_ECT0
    outcome, out = run_at(mk_certain(), CERTAIN_EARLY, [frame])[0]
    assert outcome == "mark" and ecn_codepoint(out) == ECN_CE
    changed = {i for i in range(len(frame)) if frame[i] != out[i]}
    assert ip + 1 in changed and changed <= ({ip + 1} if v6 else {ip + 1, ip + 10, ip + 11})
    assert scapy_rebuilt(out) == out
    pkt = dissect(out)
    assert (pkt[IPv6].tc if v6 else pkt[IP].tos) & 3 == ECN_CE


@pytest.mark.parametrize("v6", [False, True])
@pytest.mark.parametrize("encap", ["eth", "qinq", "pppoe-dot1q"])
def test_not_ect_frames_are_dropped(encap, v6):
    frame = mk_frame(encap=encap, v6=v6, ecn=ECN_NOT_ECT, udp=True)
    red = mk_certain()
    assert run_at(red, CERTAIN_EARLY, [frame]) == [("drop", frame)]
    assert red.counters == {"red_marked": 0, "red_ce_already": 0, "drop_red": 1}


@pytest.mark.parametrize("v6", [False, True])
def test_ce_frames_are_forwarded_unchanged_and_counted_as_marked_and_already_ce(v6):
    frame = mk_frame(v6=v6, ecn=ECN_CE)
    red = mk_certain()
    assert run_at(red, CERTAIN_EARLY, [frame] * 3) == [("mark", frame)] * 3
    assert red.counters == {"red_marked": 3, "red_ce_already": 3, "drop_red": 0}
    assert set_ce(frame) == frame


def _patched(frame, at, value):
    b = bytearray(frame)
    b[at:at + len(value)] = value
    return bytes(b)


NON_IP = {
    "arp": bytes(Ether(**MACS) / ARP(pdst="192.0.2.9")).ljust(60, b"\0"),
    "pppoe discovery": bytes(Ether(**MACS) / PPPoED(code=0x09)).ljust(60, b"\0"),
    "ppp lcp": _patched(mk_frame(encap="pppoe"), 20, b"\xc0\x21"),
    "pppoe code not 0": _patched(mk_frame(encap="pppoe"), 15, b"\x07"),
    "pppoe ver/type not 0x11": _patched(mk_frame(encap="pppoe"), 14, b"\x12"),
    "third vlan tag": bytes(Ether(**MACS) / Dot1Q(vlan=1) / Dot1Q(vlan=2) / Dot1Q(vlan=3)
                            / IP(tos=ECN_ECT0) / TCP()).ljust(64, b"\0"),
    "ipv4 ethertype, version 6": _patched(mk_frame(), 14, b"\x65"),
    "ipv6 ethertype, version 4": _patched(mk_frame(v6=True), 14, b"\x4e"),
    "ipv4 ihl 4": _patched(mk_frame(), 14, b"\x44"),
    "ipv4 header cut short": mk_frame()[:14 + 19],
    "ipv6 header cut short": mk_frame(v6=True)[:14 + 39],
    "vlan tag cut short": mk_frame(encap="dot1q")[:17],
    "runt": b"\x02" * 13,
}


@pytest.mark.parametrize("name", sorted(NON_IP))
def test_frames_without_an_ip_header_are_dropped_when_notified_and_pass_untouched_otherwise(name):
    frame = NON_IP[name]
    assert ip_header(frame) is None and ecn_codepoint(frame) is None
    with pytest.raises(ValueError, match="no IP header"):
        set_ce(frame)
    red = mk_certain()
    assert run_at(red, CERTAIN_EARLY, [frame]) == [("drop", frame)]
    assert run_at(red, 10, [frame]) == [("pass", frame)]
    assert red.counters["drop_red"] == 1


def test_the_markable_counterparts_of_the_non_ip_cases_have_an_ip_header():
    assert ip_header(mk_frame(encap="pppoe")) == (22, 4)
    assert ip_header(mk_frame(encap="pppoe")[:14 + 8 + 20]) == (22, 4)
    assert ip_header(mk_frame(v6=True)[:14 + 40]) == (14, 6)
    assert ip_header(bytes(Ether(**MACS) / Dot1Q(vlan=1) / Dot1Q(vlan=2) / IP(tos=2) / TCP())) == (22, 4)


def test_set_ce_refuses_a_not_ect_frame():
    with pytest.raises(ValueError, match="Not-ECT"):
        set_ce(mk_frame(ecn=ECN_NOT_ECT))


# --- the average -----------------------------------------------------------------------------

@pytest.mark.parametrize("wq_shift", [1, 4, 9, 15])
def test_the_average_matches_an_exact_ewma_within_the_rounding_bound(wq_shift):
    """``-2^wq_shift < avg_q16 - 2^16 * exact <= 0`` over a long trace of busy and idle
    periods; the reference is ``avg := (1 - w) avg + w q`` and ``(1 - w)^m avg`` in
    50-digit decimal arithmetic (binary floating point would itself be off by about
    2^-17 / w units here)."""
    rng = random.Random(wq_shift)
    s = 5
    red = mk_red(wq_shift=wq_shift, idle_shift=s, enable=False)
    with decimal.localcontext(prec=50):
        w = Decimal(2) ** -wq_shift
        exact, t, idle_since, done, q, worst = Decimal(0), 0, 0, 0, 0, 0
        for _ in range(20_000):
            t += rng.randrange(1, 400)
            if q and rng.random() < 0.02:                   # the queue drains
                q, idle_since, done = 0, t, 0
                red.emptied(t)
                t += rng.choice([1, 50, 1000, 30_000])
            assert red.arrive(ECT0, q, t) == ("pass", ECT0)
            if q == 0:
                due = (t - idle_since) >> s
                exact *= (1 - w) ** (due - done)
                done = due
            else:
                exact += (q - exact) * w
            err = red.avg_q16 - exact * 65536
            assert -(2 ** wq_shift) < err <= 0, (err, red.avg_q16, exact)
            worst = min(worst, err)
            if q == 0 and rng.random() < 0.3:               # an arrival at an empty queue was dropped
                continue
            q = min(MAX_BYTES, max(1, q + rng.randrange(-3000, 3200)) if q else rng.randrange(60, 1515))
    assert worst < -(2 ** wq_shift) / 4                     # the bound is not vacuous


def test_a_queue_held_at_q_brings_the_average_to_just_below_q_and_an_empty_one_to_zero():
    for n in (1, 9, 15):
        avg, prev = 0, -1
        while avg != prev:                                  # until the update changes nothing
            prev, avg = avg, ewma_step(avg, 1234, n)
        assert (1234 << 16) - (1 << n) < avg <= 1234 << 16
        assert idle_decay(avg, 10**9, n) == 0


def test_idle_decay_applies_one_step_per_2_to_the_idle_shift_cycles_since_the_queue_emptied():
    s, n, x = 8, 3, 3000 << 16
    red = mk_red(wq_shift=n, idle_shift=s)
    red.avg_q16 = x
    red.emptied(1000)
    red.arrive(ECT0, 0, 1000 + 3 * 256 - 1)             # two steps due
    assert red.avg_q16 == idle_decay(x, 2, n)
    red.arrive(ECT0, 0, 1000 + 3 * 256)                 # the third falls due in this very cycle
    assert red.avg_q16 == idle_decay(x, 3, n)
    red.arrive(ECT0, 0, 1000 + 10 * 256 + 5)            # arrivals at an empty queue do not restart it
    assert red.avg_q16 == idle_decay(x, 10, n)


def test_idle_decay_does_not_depend_on_how_many_arrivals_see_the_empty_queue():
    one, many = mk_red(idle_shift=6), mk_red(idle_shift=6)
    for red in (one, many):
        red.avg_q16 = 7777 << 16
        red.emptied(50)
    one.arrive(ECT0, 0, 50 + 1000)
    for t in (51, 100, 333, 640, 1049, 1050):
        many.arrive(ECT0, 0, t)
    assert one.avg_q16 == many.avg_q16 == idle_decay(7777 << 16, 1000 >> 6, 4)


def test_no_idle_decay_at_the_cycle_the_queue_emptied_or_while_it_is_not_empty():
    red = mk_red(idle_shift=1)
    red.avg_q16 = 5000 << 16
    red.emptied(10)
    red.arrive(ECT0, 0, 10)
    assert red.avg_q16 == 5000 << 16
    red.arrive(ECT0, 5000, 10**9)                       # non-empty: one sample, no decay
    assert red.avg_q16 == 5000 << 16


def test_a_long_idle_period_takes_the_average_to_exactly_zero():
    assert idle_decay((1 << 36) - 1, 10**9, 15) == 0
    assert idle_decay((1 << 36) - 1, 10**9, 1) == 0
    red = mk_red(wq_shift=15, idle_shift=1)
    red.avg_q16 = MAX_BYTES << 16
    red.emptied(0)
    red.arrive(ECT0, 0, 10**12)
    assert red.avg_q16 == 0


def test_idle_decay_follows_one_minus_wq_to_the_m():
    for n in (1, 4, 9, 15):
        for m in (0, 1, 7, 100, 5000):
            x = 123456789
            exact = x * (1 - 2.0 ** -n) ** m
            assert exact - 2 ** n < idle_decay(x, m, n) <= exact + 1e-6


def test_red_off_never_notifies_but_keeps_the_average_and_steps_the_prng():
    red = mk_red(enable=False, wq_shift=1)
    outs = [red.arrive(mk_frame(ecn=ECN_NOT_ECT), 50_000, t) for t in range(1, 40)]
    assert {o for o, _ in outs} == {"pass"}
    assert red.avg_bytes == 50_000 - 1 and red.counters["drop_red"] == 0
    state = RED_PRNG_SEED
    for _ in range(39):
        state = xorshift32(state)
    assert red.prng == state


# --- the random numbers ----------------------------------------------------------------------

def _matrix_of(step):
    """The 32 columns of a linear map of GF(2)^32."""
    return [step(1 << i) for i in range(32)]


def _apply(cols, v):
    out = 0
    for i in range(32):
        if v >> i & 1:
            out ^= cols[i]
    return out


def _power_apply(cols, e, v):
    """``step^e (v)`` by repeated squaring of the matrix."""
    while e:
        if e & 1:
            v = _apply(cols, v)
        cols = [_apply(cols, c) for c in cols]
        e >>= 1
    return v


def test_xorshift32_is_linear_and_every_nonzero_state_has_period_2_to_the_32_minus_1():
    cols = _matrix_of(xorshift32)
    rng = random.Random(32)
    for _ in range(200):
        v = rng.getrandbits(32)
        assert _apply(cols, v) == xorshift32(v)
    order = 2 ** 32 - 1                                 # = 3 * 5 * 17 * 257 * 65537
    primes = (3, 5, 17, 257, 65537)
    assert math.prod(primes) == order
    for v in (RED_PRNG_SEED, 1):
        assert _power_apply(cols, order, v) == v
        for p in primes:
            assert _power_apply(cols, order // p, v) != v
    # So the orbit of the seed is all 2^32 - 1 non-zero states: 0 is never reached.


def test_prng_is_deterministic_from_the_seed_and_never_zero():
    a, b, c = mk_red(), mk_red(), mk_red(seed=12345)
    seq = []
    for t in range(1, 2001):
        for red in (a, b, c):
            red.arrive(ECT0, 10, t)
        assert a.prng == b.prng != 0 and a.prng != c.prng
        seq.append(a.prng >> 16)
    assert len(set(seq)) > 1900                        # 16-bit numbers, few repeats


def test_prng_upper_half_is_uniform_enough():
    x, counts = RED_PRNG_SEED, [0] * 16
    for _ in range(64_000):
        x = xorshift32(x)
        counts[x >> 28] += 1
    chi2 = sum((c - 4000) ** 2 / 4000 for c in counts)
    assert chi2 < 37.7                                  # 15 degrees of freedom, p = 0.001


# --- parameters ------------------------------------------------------------------------------

@pytest.mark.parametrize("kw, message", [
    (dict(min_bytes=-1), r"min_bytes must be 0 \.\. 1048574 \(bytes\), not -1$"),
    (dict(min_bytes=1048575, max_bytes=1048575),
     r"min_bytes must be 0 \.\. 1048574 \(bytes\), not 1048575$"),
    (dict(min_bytes=2000, max_bytes=2000),
     r"max_bytes must be 2001 \.\. 1048575 \(bytes, above min_bytes\), not 2000$"),
    (dict(min_bytes=3000, max_bytes=2000),
     r"max_bytes must be 3001 \.\. 1048575 \(bytes, above min_bytes\), not 2000$"),
    (dict(max_bytes=1 << 20),
     r"max_bytes must be 1001 \.\. 1048575 \(bytes, above min_bytes\), not 1048576$"),
    (dict(max_p=-1), r"max_p must be 0 \.\. 65536 \(in 1/65536\), not -1$"),
    (dict(max_p=65537), r"max_p must be 0 \.\. 65536 \(in 1/65536\), not 65537$"),
    (dict(wq_shift=0), r"wq_shift must be 1 \.\. 15, not 0$"),
    (dict(wq_shift=16), r"wq_shift must be 1 \.\. 15, not 16$"),
    (dict(idle_shift=0), r"idle_shift must be 1 \.\. 31, not 0$"),
    (dict(idle_shift=32), r"idle_shift must be 1 \.\. 31, not 32$"),
    (dict(gentle=2), r"gentle must be 0, 1, False or True, not 2$"),
    (dict(enable=-1), r"enable must be 0, 1, False or True, not -1$"),
    (dict(seed=0), r"seed must be 1 \.\. 4294967295 \(0 is a fixed point of xorshift32\), not 0$"),
    (dict(seed=1 << 32), r"seed must be 1 \.\. 4294967295 .*, not 4294967296$"),
])
def test_bad_parameters_raise_naming_the_value_and_the_range(kw, message):
    with pytest.raises(ValueError, match=message):
        mk_red(**kw)


@pytest.mark.parametrize("kw", [dict(min_bytes=1.5), dict(max_bytes="2000"), dict(wq_shift=9.0),
                                dict(max_p=True), dict(gentle="yes"), dict(idle_shift=None)])
def test_parameters_of_the_wrong_type_raise_type_error(kw):
    name = next(iter(kw))
    with pytest.raises(TypeError, match=rf"^{name} must be .*, not {re.escape(repr(kw[name]))}$"):
        mk_red(**kw)


def test_bad_arrivals_raise_naming_the_value_and_the_range():
    red = mk_red()
    with pytest.raises(ValueError, match=r"qlen_bytes must be 0 \.\. 1048575 \(bytes\), not -1$"):
        red.arrive(ECT0, -1, 1)
    with pytest.raises(ValueError, match=r"qlen_bytes must be 0 \.\. 1048575 \(bytes\), not 1048576$"):
        red.arrive(ECT0, 1 << 20, 1)
    red.arrive(ECT0, 10, 100)
    with pytest.raises(ValueError,
                       match=r"now_cycles must be 100 \(the latest cycle given\) or later, not 99$"):
        red.arrive(ECT0, 10, 99)
    with pytest.raises(ValueError, match=r"now_cycles must be 100 .* not 5$"):
        red.emptied(5)
    with pytest.raises(TypeError, match=r"now_cycles must be an integer number of cycles, not 1\.5$"):
        red.arrive(ECT0, 10, 1.5)


def test_the_ends_of_every_range_are_accepted():
    Red(min_bytes=0, max_bytes=1, max_p=0, wq_shift=1, gentle=0, idle_shift=1, enable=0, seed=1)
    Red(min_bytes=MAX_BYTES - 1, max_bytes=MAX_BYTES, max_p=P_ONE, wq_shift=15, gentle=True,
        idle_shift=31, seed=2 ** 32 - 1)


def test_idle_shift_for_rate_is_log2_of_a_500_byte_packet_time_clamped():
    # At 50 MHz (hand numbers): 500 bytes at 1 Mb/s are 200000 cycles (2^17.6),
    # at 10 Mb/s 20000 (2^14.3), at 1 Gb/s 200 (2^7.6); 64 bytes 25.6 (2^4.7).
    assert params.F_SYS_HZ == 50_000_000
    assert idle_shift_for_rate(1e6) == 18
    assert idle_shift_for_rate(10e6) == 14
    assert idle_shift_for_rate(1e9) == 8
    assert idle_shift_for_rate(1e9, packet_bytes=64) == 5
    assert idle_shift_for_rate(1) == 31               # clamped
    for bad in (0, -1, math.nan, math.inf):
        with pytest.raises(ValueError, match=rf"rate must be a positive finite number of bit/s, not {bad!r}"):
            idle_shift_for_rate(bad)
    with pytest.raises(TypeError, match="rate must be a number of bit/s, not '1M'"):
        idle_shift_for_rate("1M")


# --- the spec's tables -----------------------------------------------------------------------

def _table_rows(text, first_cell):
    return [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in text.splitlines() if re.match(rf"\|\s*`{first_cell}", line)]


def test_the_register_table_in_the_spec_is_the_models():
    rows = _table_rows(_red_section(SPEC.read_text()), "red_")
    table = {r[0].strip("`"): r for r in rows if r[1].isdigit()}
    assert list(table) == [p.name for p in RED_PARAMS]
    for p in RED_PARAMS:
        assert table[p.name][1:4] == [str(p.width), f"{p.minimum}..{p.maximum}", str(p.default)], p.name


def test_the_counter_table_in_the_spec_is_the_models():
    text = _red_section(SPEC.read_text())
    names = [r[0].strip("`") for r in _table_rows(text, "(red_|drop_red)") if len(r) == 2]
    assert names == [c.name for c in RED_COUNTERS]
    assert text.splitlines()[0] == "## 10. RED (random early detection with ECN marking)"


def test_registers_for_rate_follow_adaptive_reds_rules():
    # C packets of 1500 bytes per second; w_q about 1/C (one-second time constant)
    r = registers_for_rate(1e6)                      # C = 83.3: log2 = 6.38
    assert r == {"red_enable": 1, "red_min_bytes": 3000, "red_max_bytes": 9000, "red_max_p": 6554,
                 "red_wq_shift": 6, "red_gentle": 1, "red_idle_shift": 18}
    assert registers_for_rate(28800)["red_wq_shift"] == 1          # C = 2.4: the floor
    assert registers_for_rate(1e9)["red_wq_shift"] == 15           # C = 83333: log2 = 16.3, capped
    assert registers_for_rate(10e6)["red_wq_shift"] == 10          # C = 833: log2 = 9.7
    Red(**{k[4:]: v for k, v in registers_for_rate(64000).items() if k != "red_enable"})
    for bad in (0, -1, "1M", True):
        with pytest.raises(ValueError, match="rate must be a positive number of bit/s"):
            registers_for_rate(bad)


def test_certain_early_is_in_the_early_region_with_p_b_one():
    assert region(CERTAIN_EARLY, min_bytes=1000, max_bytes=2000, gentle=True) == "early"
    num, den = pb_terms(CERTAIN_EARLY, min_bytes=1000, max_bytes=2000, max_p=P_ONE)
    assert num == den << 16
