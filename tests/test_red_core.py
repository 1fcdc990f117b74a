"""RED in the whole core (spec section 10), through the Verilated RTL in the
replay harness: every decision against the golden model with RED
(``check_run``: the events, ``DROP_RED`` and ``ARRIVE_DATA_MARKED`` among
them, every output byte, every counter), and every marked frame that leaves
parsed by Scapy, independently of the model: CE set, the IPv4 header
checksum right, nothing else changed.

The traces mix what RED must tell apart: ECT(0), ECT(1), CE and Not-ECT
frames, IPv4 and IPv6, VLAN tags and PPPoE, frames with no IP header for
RED (ARP), pure ACKs (never RED's with the filter on), and pauses in which
the data queue empties and the average decays (the harness skips the clock
while the core is idle: the decay runs on the core's time).
"""

import random

import pytest

from ackfilter import params
from ackfilter.cli import red_registers
from ackfilter.model import FilterModel
from ackfilter.model.red import idle_decay
from ackfilter.model.scoreboard import check_run
from ackfilter.sim import traces
from ackfilter.sim.redcheck import FLOWS, CountingRed, check_marks, queued_marks
from ackfilter.sim.replay import replay

UPLINK_BPS = 2_000_000


def upload_trace(seed, *, n=1500, burst_s=0.25, pause_s=0.3):
    """Data frames of the five flows with random ECN fields and sizes, in
    bursts at about three times the uplink rate with pauses between (the
    queue fills, then drains and sits empty), plus ARP frames and the
    download's pure ACKs."""
    rng = random.Random(seed)
    out, t, seq = [], 0.0, {i: 1 for i in range(len(FLOWS))}
    burst_end = burst_s
    for i in range(n):
        k = rng.randrange(len(FLOWS))
        r = rng.random()
        if r < 0.05:
            frame = traces.arp_frame("02:00:00:00:00:%02x" % (i % 200 + 1), "192.168.1.10", "192.168.1.1")
        elif r < 0.15:
            frame = traces.tcp_frame(FLOWS[k], seq=9, ack=1000 + i * 1448, flags="A",
                                     ecn=rng.choice((0, 2)), ip_id=i, builder="raw")
        else:
            size = rng.choice((200, 600, 1000, 1400))
            frame = traces.tcp_frame(FLOWS[k], seq=seq[k], ack=1, flags="PA", payload=bytes(size),
                                     ecn=rng.choice((0, 1, 2, 3, 2, 2)), ip_id=i, builder="raw")
            seq[k] += size
        out.append((t, frame))
        t += len(frame) * 8 / (3 * UPLINK_BPS)
        if t > burst_end:
            t += pause_s
            burst_end = t + burst_s
    return out


def _checked_run(frames, *, red_regs, mode="aggressive"):
    res = replay(frames, uplink_rate_bps=UPLINK_BPS, ack_mode=mode, events=True, csr=red_regs)
    red = CountingRed(min_bytes=red_regs["red_min_bytes"], max_bytes=red_regs["red_max_bytes"],
                      max_p=red_regs["red_max_p"], wq_shift=red_regs.get("red_wq_shift", 9),
                      gentle=bool(red_regs.get("red_gentle", 1)), idle_shift=red_regs["red_idle_shift"])
    model = FilterModel(ack_mode=params.ACK_FILTER_MODES[mode], red=red, **res.model_options())
    check_run(model, [f for _t, f in frames], res.events, [f for _t, f in res.frames_out],
              counters=res.counters)
    assert res.protocol_errors == 0
    return res, model


@pytest.mark.parametrize("seed,gentle", [(1, 1), (2, 0)])
def test_red_marks_and_drops_as_the_model_decides_through_the_whole_core(seed, gentle):
    frames = upload_trace(seed)
    regs = red_registers({"red_enable": 1, "red_min_bytes": 3000, "red_max_bytes": 9000,
                          "red_max_p": 13107}, UPLINK_BPS)
    regs.update(red_wq_shift=3, red_gentle=gentle)
    res, model = _checked_run(frames, red_regs=regs)
    c = res.counters
    # The trace did what it is for: marks of ECT frames, CE frames passed
    # on, drops of Not-ECT and non-IP frames, the queue drained between bursts.
    assert c["red_marked"] > 20 and c["red_ce_already"] > 3 and c["drop_red"] > 20, c
    assert model.red.decays >= 3
    # The information word red_avg_bytes is RED's average, as the model has it,
    # decayed for the idle time between the last departure and the read-out.
    r = model.red

    def avg_at(cycle):
        due = max(0, (cycle - r.idle_since) >> r.idle_shift)
        return idle_decay(r.avg_q16, max(0, due - r.idle_steps), r.wq_shift) >> 16

    assert model.data_queue_frames == 0 and r.avg_q16 >> 16 > 0
    assert avg_at(res.cycles + 10_000) <= res.info["red_avg_bytes"] <= avg_at(res.cycles), \
        (res.info["red_avg_bytes"], avg_at(res.cycles), r.avg_q16 >> 16)
    sent = [f for _t, f in frames]
    marked = check_marks(sent, [f for _t, f in res.frames_out])
    assert marked == queued_marks(sent, res.events) > 10, (marked, c)


def test_frames_red_drops_give_their_ring_space_back():
    # Not-ECT data only, at three times the uplink rate, then a pause and ten
    # frames slower than the uplink. RED drops many times the ring's size
    # of frames that were already written into it. Each gives its space
    # back only in its turn (as a discard), so meanwhile the ring can fill
    # (drop_data_full) with a short queue; but once the queue has drained,
    # the ring is empty again: the last ten frames are all queued. A lost
    # discard would hold the ring full for good.
    flow = FLOWS[0]
    frames, t = [], 0.0
    for i in range(810):
        frame = traces.tcp_frame(flow, seq=1 + 1400 * i, ack=1, flags="PA", payload=bytes(1400),
                                 ip_id=i, builder="raw")
        if i == 800:
            t += 1.0
        frames.append((t, frame))
        t += len(frame) * 8 / (3 * UPLINK_BPS if i < 800 else UPLINK_BPS / 2)
    regs = red_registers({"red_enable": 1, "red_min_bytes": 3000, "red_max_bytes": 9000,
                          "red_max_p": 13107}, UPLINK_BPS)
    res, _model = _checked_run(frames, red_regs={**regs, "red_wq_shift": 2})
    c = res.counters
    assert c["drop_red"] * len(frames[0][1]) > 10 * params.DATA_BUFFER_BYTES, c
    arrivals = [e for _c, e in res.events if e in params.ARRIVAL_EVENTS]
    assert arrivals[-10:] == ["ARRIVE_DATA"] * 10, arrivals[-10:]
    assert c["frames_out"] + c["drop_red"] + c["drop_data_full"] == len(frames), c


def test_red_off_changes_nothing():
    # The reset values: RED is off, no frame is marked or dropped by it,
    # and the model without RED agrees decision by decision.
    frames = upload_trace(3, n=600)
    res = replay(frames, uplink_rate_bps=UPLINK_BPS, ack_mode="aggressive", events=True)
    model = FilterModel(ack_mode=params.ACK_FILTER_MODES["aggressive"], **res.model_options())
    check_run(model, [f for _t, f in frames], res.events, [f for _t, f in res.frames_out],
              counters=res.counters)
    assert res.counters["red_marked"] == res.counters["drop_red"] == 0
    assert res.params["red_enable"] == 0
