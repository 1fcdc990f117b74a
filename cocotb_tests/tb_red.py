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
from scapy.layers.inet import IP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.layers.ppp import PPPoE  # noqa: F401 (binds PPPoE sessions to PPP, IP, IPv6)

from ackfilter import params as P
from ackfilter.model import FilterModel
from ackfilter.model.red import ECN_CE, Red, ecn_codepoint, ip_header
from ackfilter.sim.traces import Flow, _arp_frame, tcp_frame
from ackfilter_tb import TB, scoreboard
from tb_linerate import send_at_line_rate

TEST_TIMEOUT = dict(timeout_time=60, timeout_unit="ms")

FLOWS = [
    Flow(),
    Flow(src="2001:db8::10", dst="2001:db8::5", sport=50001),
    Flow(sport=50002, vlans=((0x8100, 7),)),
    Flow(sport=50003, pppoe_session=0x1234),
    Flow(src="2001:db8::11", dst="2001:db8::5", sport=50004, vlans=((0x88A8, 3), (0x8100, 4)),
         pppoe_session=0x55),
]

RED = dict(red_enable=1, red_min_bytes=3000, red_max_bytes=9000, red_max_p=13107, red_wq_shift=2,
           red_gentle=1, red_idle_shift=10)
UPLINK_BPS = 400_000_000


class CountingRed(Red):
    """The model, counting arrivals at an empty queue that found the average
    decayed (the idle decay was exercised)."""
    decays = 0

    def arrive(self, frame, qlen_bytes, now_cycles):
        before = self.avg_q16
        out = super().arrive(frame, qlen_bytes, now_cycles)
        self.decays += qlen_bytes == 0 and self.avg_q16 < before
        return out


def frames_of_burst(rng, n, base):
    out = []
    for i in range(n):
        flow = FLOWS[rng.randrange(len(FLOWS))]
        r = rng.random()
        if r < 0.04:
            out.append(_arp_frame("02:00:00:00:01:%02x" % (i % 250), "192.168.1.10", "192.168.1.1"))
        elif r < 0.07:
            # an IPv4 header cut short: no IP header RED can mark (dropped when notified)
            out.append(tcp_frame(flow, seq=base + i, flags="PA", payload=bytes(20), builder="raw")[:30])
        elif r < 0.15:
            out.append(tcp_frame(flow, seq=9, ack=1000 + (base + i) * 1448, flags="A", ecn=2,
                                 ip_id=base + i, builder="raw"))
        else:
            out.append(tcp_frame(flow, seq=(base + i) * 1400, ack=1, flags="PA",
                                 payload=bytes(rng.choice((100, 400, 900, 1400))),
                                 ecn=rng.choice((0, 1, 2, 3, 2, 1)), ip_id=base + i, builder="raw"))
    return out


def _masked(frame):
    """The frame with its ECN bits (and IPv4 checksum) cleared: what a mark leaves alone."""
    hdr = ip_header(frame)
    if hdr is None:
        return frame
    off, v = hdr
    f = bytearray(frame)
    f[off + 1] &= 0xFC if v == 4 else 0xCF
    if v == 4:
        f[off + 10:off + 12] = b"\0\0"
    return bytes(f)


def check_marks_with_scapy(sent, received):
    """Each output frame that is CE where its input was ECT: Scapy reads CE
    and a right IPv4 checksum, and no byte but the ECN field and the
    checksum differs. Returns how many."""
    by_body = {_masked(f): f for f in sent}
    marked = 0
    for f in received:
        orig = by_body[_masked(f)]
        if f == orig:
            continue
        assert ecn_codepoint(f) == ECN_CE and ecn_codepoint(orig) in (1, 2), f.hex()
        off, v = ip_header(f)
        pkt = Ether(f)
        if v == 4:
            ip = pkt[IP]
            assert ip.tos & 3 == 3 and ip.tos >> 2 == Ether(orig)[IP].tos >> 2
            got = ip.chksum
            del ip.chksum
            assert IP(bytes(ip)).chksum == got, f"wrong IPv4 checksum after the mark: {f.hex()}"
        else:
            ip = pkt[IPv6]
            assert ip.tc & 3 == 3 and ip.tc >> 2 == Ether(orig)[IPv6].tc >> 2
        diff = {i for i in range(len(f)) if f[i] != orig[i]}
        assert diff <= {off + 1, off + 10, off + 11} if v == 4 else diff <= {off + 1}, diff
        marked += 1
    return marked


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
    scoreboard(tb, FilterModel(ack_mode=P.ACK_FILTER_MODES["aggressive"], red=red), counters=counters)
    # Every rule happened: marks, CE passed on, drops of Not-ECT and of
    # frames without a markable IP header, and the average decayed.
    arrivals = list(zip(tb.sent, [e for _c, e in tb.events if e in P.ARRIVAL_EVENTS]))
    drops = [f for f, e in arrivals if e == "DROP_RED"]
    # (a notified frame may still be dropped for want of room: only those queued leave marked)
    queued_marks = sum(e == "ARRIVE_DATA_MARKED" and ecn_codepoint(f) != ECN_CE for f, e in arrivals)
    assert counters["red_marked"] > 10 and counters["red_ce_already"] > 0, counters
    assert any(ip_header(f) is None for f in drops) and any(ecn_codepoint(f) == 0 for f in drops), counters
    assert red.decays > 0
    marked = check_marks_with_scapy(tb.sent, [f for _c, f in tb.received])
    assert marked == queued_marks > 10, (marked, queued_marks, counters)
    dut._log.info(f"RED: {counters['red_marked']} marked ({counters['red_ce_already']} CE already), "
                  f"{counters['drop_red']} dropped, {red.decays} decays seen")
