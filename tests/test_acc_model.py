"""ACC in the golden model (``ackfilter.model.acc``, ``docs/spec.md`` section
11), against expectations reasoned by hand from the spec, and each marked
ACK checked with Scapy (CE set, IPv4 header checksum right, nothing else
changed)."""

import pytest
from scapy.layers.inet import IP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from ackfilter import params
from ackfilter.model import FilterModel
from ackfilter.model.acc import Acc, acc_ewma_step
from ackfilter.model.pktparse import ones_complement_sum

from test_model import CONSERVATIVE, AGGRESSIVE, mk_ack


def fill(model, n, *, first_flow=100):
    """``n`` pure ACKs of ``n`` other flows (one each), queued: the ACK queue grows."""
    for i in range(n):
        model.arrive(mk_ack(1000, flow=first_flow + i))


def test_the_average_is_the_exact_integer_ewma():
    # By hand: from 0, samples of 10 ACKs with w = 1/4 (shift 2), in 1/256 ACK.
    avg = 0
    for want in (640, 1120, 1480, 1750):
        avg = acc_ewma_step(avg, 10, 2)
        assert avg == want
    # A negative step rounds towards minus infinity (an arithmetic shift).
    assert acc_ewma_step(1, 0, 4) == 0
    assert acc_ewma_step(100, 0, 1) == 50


def test_registers_are_checked_against_the_table():
    with pytest.raises(ValueError, match="threshold_acks must be an integer 1..255, not 0"):
        Acc(threshold_acks=0)
    with pytest.raises(ValueError, match="wq_shift"):
        Acc(wq_shift=16)
    assert Acc().threshold_acks == params.param("acc_threshold_acks").default


def test_below_the_threshold_conservative_keeps_two_acks_per_flow():
    m = FilterModel(ack_mode=CONSERVATIVE, acc=Acc(threshold_acks=8, wq_shift=1))
    fill(m, 3)
    evs = [m.arrive(mk_ack(a))[0] for a in (2000, 3000, 4000)]
    assert evs == ["ARRIVE_ACK_NEW", "ARRIVE_ACK_NEW", "ARRIVE_ACK_SUPERSEDE"]
    assert m.counters["acc_escalated"] == 0


def test_escalated_conservative_mode_supersedes_with_one_ack_queued():
    # Ten ACKs of other flows raise the average above 4 ACKs (w = 1/2):
    # samples 0..9 give 8.0 ACKs; the flow's second ACK then supersedes its
    # first although conservative mode would keep both.
    m = FilterModel(ack_mode=CONSERVATIVE, acc=Acc(threshold_acks=4, wq_shift=1))
    fill(m, 10)
    assert m.acc.avg_q8 > 4 * 256
    assert m.arrive(mk_ack(2000)) == ["ARRIVE_ACK_NEW"]
    assert m.arrive(mk_ack(3000)) == ["ARRIVE_ACK_SUPERSEDE"]
    assert m.counters["acc_escalated"] >= 2


def test_acc_off_changes_nothing():
    m = FilterModel(ack_mode=CONSERVATIVE, acc=None)
    fill(m, 10)
    ect = mk_ack(3000, ecn=2)
    assert [m.arrive(f)[0] for f in (mk_ack(2000), ect)] == ["ARRIVE_ACK_NEW", "ARRIVE_ACK_NEW"]
    assert [f for _k, f in m.drain()][-1] == ect
    assert m.counters["acc_escalated"] == m.counters["acc_marked"] == 0


def _ecn(frame):
    pkt = Ether(frame)
    ip = pkt.getlayer(IP) or pkt.getlayer(IPv6)
    return (ip.tos if ip.version == 4 else ip.tc) & 3


def _same_but_ecn_and_checksum(before, after):
    """Only the ECN bits (and for IPv4 its header checksum) differ."""
    diff = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
    return len(before) == len(after) and all(i in (15, 24, 25) for i in diff)


@pytest.mark.parametrize("ecn", [1, 2])
def test_escalated_ect_acks_leave_ce_with_a_right_ip_checksum(ecn):
    m = FilterModel(ack_mode=AGGRESSIVE, acc=Acc(threshold_acks=4, wq_shift=1))
    fill(m, 10)
    ack = mk_ack(2000, ecn=ecn)
    m.arrive(ack)
    out = [f for _k, f in m.drain()]
    marked = out[-1]
    assert _ecn(marked) == 3
    ip = Ether(marked)[IP]
    assert ones_complement_sum(bytes(ip)[:20]) == 0xFFFF
    assert _same_but_ecn_and_checksum(ack, marked)
    assert m.counters["acc_marked"] == 1
    # The ten before it were Not-ECT: never changed, never dropped.
    assert all(_ecn(f) == 0 for f in out[:-1]) and len(out) == 11


def test_not_ect_and_ce_acks_are_never_changed():
    m = FilterModel(ack_mode=AGGRESSIVE, acc=Acc(threshold_acks=4, wq_shift=1))
    fill(m, 10)
    a, b = mk_ack(2000, flow=1), mk_ack(2000, flow=2, ecn=3)
    before = m.counters["acc_escalated"]
    m.arrive(a)
    m.arrive(b)
    out = [f for _k, f in m.drain()]
    assert out[-2:] == [a, b]
    assert m.counters["acc_marked"] == 0 and m.counters["acc_escalated"] == before + 2


def test_ipv6_ect_ack_is_marked_in_its_traffic_class():
    m = FilterModel(ack_mode=AGGRESSIVE, acc=Acc(threshold_acks=4, wq_shift=1))
    fill(m, 10)
    ack = mk_ack(2000, ecn=2, v6=True)
    m.arrive(ack)
    marked = [f for _k, f in m.drain()][-1]
    assert _ecn(marked) == 3
    assert [i for i, (x, y) in enumerate(zip(ack, marked)) if x != y] == [15]


def test_a_marked_ack_is_never_superseded_by_an_unmarked_one():
    # Escalated: A and B of one flow are ECT and both leave CE, so B may
    # supersede A. The average then falls (short queue): C is not escalated,
    # leaves ECT(0), and must not overwrite B (it would lose B's mark).
    m = FilterModel(ack_mode=AGGRESSIVE, acc=Acc(threshold_acks=4, wq_shift=1))
    fill(m, 10)
    assert m.arrive(mk_ack(2000, ecn=2)) == ["ARRIVE_ACK_NEW"]
    for _ in range(10):
        assert m.depart()[0] == "DEPART_ACK"
    assert m.arrive(mk_ack(3000, ecn=2)) == ["ARRIVE_ACK_SUPERSEDE"]
    assert m.acc.avg_q8 == 1280          # 2304, then a sample of 1 ACK: by hand
    assert m.arrive(mk_ack(4000, ecn=2)) == ["ARRIVE_ACK_NEW"]
    assert m.acc.avg_q8 == 768
    out = [f for _k, f in m.drain()]
    assert [_ecn(f) for f in out] == [3, 2]
    assert m.counters["acc_marked"] == 2
    m.check_invariants()
