"""RED through the RTL at 1 Gb/s (spec section 10): every marking and drop
rule, decided by the core as the model decides (the scoreboard: events with
their cycles, output bytes, counters), and every frame that leaves marked
parsed by Scapy, independently of the model: CE set, the IPv4 header
checksum right, no other byte changed.

Bursts at 1 Gb/s into a 400 Mb/s shaper build the data queue; pauses let it
drain and sit empty, so the average decays. The frames cover each rule:
ECT(0) and ECT(1) (marked), CE (passed on as CE, counted), Not-ECT and
frames with no IP header RED can mark (ARP, a truncated IPv4 header;
dropped), in IPv4 and IPv6, bare, under VLAN tags and in PPPoE, and pure
ACKs, which RED never sees with the filter on.
"""

import random

import cocotb
from cocotb.triggers import ClockCycles

from ackfilter import params as P

from ackfilter.model.red import ecn_codepoint, ip_header
from ackfilter.sim.redcheck import FLOWS, CountingRed, check_marks, queued_marks
from ackfilter.sim.traces import arp_frame, tcp_frame
from ackfilter_tb import TB, scoreboard
from tb_linerate import send_at_line_rate

TEST_TIMEOUT = dict(timeout_time=60, timeout_unit="ms")

RED = dict(red_enable=1, red_min_bytes=3000, red_max_bytes=9000, red_max_p=13107, red_wq_shift=2,
           red_gentle=1, red_idle_shift=10)
UPLINK_BPS = 400_000_000


def frames_of_burst(rng, n, base):
    out = []
    for i in range(n):
        flow = FLOWS[rng.randrange(len(FLOWS))]
        r = rng.random()
        if r < 0.04:
            out.append(arp_frame("02:00:00:00:01:%02x" % (i % 250), "192.168.1.10", "192.168.1.1"))
        elif r < 0.07:
            # an IP header cut short: no IP header RED can mark (dropped when notified)
            out.append(tcp_frame(flow, seq=base + i, flags="PA", payload=bytes(20), builder="raw")[:30])
        elif r < 0.15:
            out.append(tcp_frame(flow, seq=9, ack=1000 + (base + i) * 1448, flags="A", ecn=2,
                                 ip_id=base + i, builder="raw"))
        else:
            out.append(tcp_frame(flow, seq=(base + i) * 1400, ack=1, flags="PA",
                                 payload=bytes(rng.choice((100, 400, 900, 1400))),
                                 ecn=rng.choice((0, 1, 2, 3, 2, 1)), ip_id=base + i, builder="raw"))
    return out


@cocotb.test(**TEST_TIMEOUT)
async def test_red_marks_and_drops_as_the_model_decides_at_line_rate(dut):
    tb = TB(dut)
    await tb.reset()
    await tb.set_param("ack_mode", P.ACK_FILTER_MODES["aggressive"])
    await tb.set_param("shaper_cpb_q16", P.cpb_q16_for_rate(UPLINK_BPS))
    for name, value in RED.items():
        await tb.set_param(name, value)
    rng = random.Random(12)
    for burst in range(6):
        await send_at_line_rate(tb, frames_of_burst(rng, 60, 100 * burst))
        # idle: the queue drains (32 KiB at 400 Mb/s: 0.66 ms, 41,000 cycles)
        # and sits empty for dozens of decay steps (one per 1024 cycles)
        await ClockCycles(dut.clk, rng.choice((60_000, 75_000)))
    await tb.drain()
    counters = await tb.counters()
    red = CountingRed(min_bytes=RED["red_min_bytes"], max_bytes=RED["red_max_bytes"],
                      max_p=RED["red_max_p"], wq_shift=RED["red_wq_shift"], gentle=True,
                      idle_shift=RED["red_idle_shift"])
    scoreboard(tb, tb.model(ack_mode=P.ACK_FILTER_MODES["aggressive"], red=red), counters=counters)
    # Every rule happened: marks, CE passed on, drops of Not-ECT and of
    # frames without a markable IP header, and the average decayed.
    arrivals = zip(tb.sent, [e for _c, e in tb.events if e in P.ARRIVAL_EVENTS])
    drops = [f for f, e in arrivals if e == "DROP_RED"]
    assert counters["red_marked"] > 10 and counters["red_ce_already"] > 0, counters
    assert any(ip_header(f) is None for f in drops) and any(ecn_codepoint(f) == 0 for f in drops), counters
    assert red.decays > 0
    # (a notified frame may still be dropped for want of room: only those queued leave marked)
    marked = check_marks(tb.sent, [f for _c, f in tb.received])
    assert marked == queued_marks(tb.sent, tb.events) > 10, (marked, counters)
    dut._log.info(f"RED: {counters['red_marked']} marked ({counters['red_ce_already']} CE already), "
                  f"{counters['drop_red']} dropped, {red.decays} decays seen")
