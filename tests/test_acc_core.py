"""ACC in the whole core (spec section 11), through the Verilated RTL in the
replay harness: every decision against the golden model with ACC
(``check_run``: events, output bytes, counters, ``acc_escalated`` and
``acc_marked`` among them), and every ACK that leaves CE checked with Scapy
(IPv4 header checksum right, only the ECN bits and that checksum changed).

The trace is the download side of a busy home uplink: many flows' pure
ACKs, some ECN-capable (ECT(0), ECT(1)), some CE already, most Not-ECT, in
bursts above the uplink rate with pauses between, so the ACK queue's average
climbs over the threshold and falls back under it several times.
"""

import random

import pytest
from scapy.layers.inet import IP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from ackfilter import params
from ackfilter.model import FilterModel
from ackfilter.model.acc import Acc
from ackfilter.model.pktparse import ones_complement_sum
from ackfilter.model.scoreboard import check_run
from ackfilter.sim import traces
from ackfilter.sim.replay import replay

UPLINK_BPS = 1_000_000
FLOWS = [traces.Flow(src=f"192.168.1.{10 + i}", sport=40000 + i) for i in range(12)] + \
        [traces.Flow(src=f"2001:db8::{i + 1:x}", dst="2001:db8::99", sport=41000 + i) for i in range(4)]


def ack_trace(seed, *, n=1500, burst_s=0.05, pause_s=0.08):
    rng = random.Random(seed)
    ack = {i: rng.getrandbits(32) for i in range(len(FLOWS))}
    out, t, burst_end = [], 0.0, burst_s
    for i in range(n):
        k = rng.randrange(len(FLOWS))
        ack[k] = (ack[k] + rng.choice((1448, 2896))) & 0xFFFF_FFFF
        ecn = rng.choice((0, 0, 0, 2, 2, 1, 3))
        frame = traces.tcp_frame(FLOWS[k], seq=1, ack=ack[k], flags="A", ecn=ecn, ip_id=i,
                                 options=[("NOP", None), ("NOP", None), ("Timestamp", (i, i))],
                                 builder="raw")
        out.append((t, frame))
        t += len(frame) * 8 / (4 * UPLINK_BPS)
        if t > burst_end:
            t += pause_s
            burst_end = t + burst_s
    return out


def _ip(frame):
    pkt = Ether(frame)
    return pkt.getlayer(IP) or pkt.getlayer(IPv6)


@pytest.mark.parametrize("mode", ["conservative", "aggressive"])
def test_acc_escalates_and_marks_as_the_model_decides_through_the_whole_core(mode):
    frames = ack_trace(3)
    acc_regs = {"acc_enable": 1, "acc_threshold_acks": 6, "acc_wq_shift": 2}
    res = replay(frames, uplink_rate_bps=UPLINK_BPS, ack_mode=mode, events=True, csr=acc_regs)
    model = FilterModel(ack_mode=params.ACK_FILTER_MODES[mode], acc=Acc(threshold_acks=6, wq_shift=2),
                        **res.model_options())
    check_run(model, [f for _t, f in frames], res.events, [f for _t, f in res.frames_out],
              counters=res.counters)
    c = res.counters
    # The trace did what it is for: escalated and calm arrivals both, marks.
    assert 100 < c["acc_escalated"] < c["acks_in"] - 100, c
    assert c["acc_marked"] > 30, c
    sent = set(f for _t, f in frames)
    ce_marked = 0
    for _t, f in res.frames_out:
        if f in sent:
            continue
        ip = _ip(f)
        assert (ip.tos if ip.version == 4 else ip.tc) & 3 == 3, f.hex()
        if ip.version == 4:
            assert ones_complement_sum(bytes(ip)[:20]) == 0xFFFF
        ce_marked += 1
    assert ce_marked > 10


def test_acc_off_after_reset_marks_nothing():
    frames = ack_trace(4, n=600)
    res = replay(frames, uplink_rate_bps=UPLINK_BPS, ack_mode="conservative", events=True)
    model = FilterModel(ack_mode=params.ACK_FILTER_MODES["conservative"], **res.model_options())
    check_run(model, [f for _t, f in frames], res.events, [f for _t, f in res.frames_out],
              counters=res.counters)
    assert res.counters["acc_escalated"] == res.counters["acc_marked"] == 0
    assert res.params["acc_enable"] == 0
    sent = set(f for _t, f in frames)
    assert all(f in sent for _t, f in res.frames_out)
