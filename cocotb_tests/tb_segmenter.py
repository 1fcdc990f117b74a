"""The segmenter through the RTL at 1 Gb/s (spec section 9): every edge case
of the cut, decided and written by the core as the model does (the
scoreboard: events, output bytes, counters), and every frame that leaves
read by Scapy, independently of the model (``ackfilter.sim.segcheck``):
IPv4 header and TCP checksums right, chunks of at most ``chunk_bytes`` at
consecutive sequence numbers with FIN and PSH only on the last, each flow's
byte stream unchanged.

The edge cases: a chunk larger than the payload, a payload equal to it, not
a multiple of it, an exact multiple, a one-byte last chunk (padded to 60
bytes), odd lengths, TCP timestamps and SACK options, IPv4 options, FIN on
the last chunk, IPv6, a VLAN tag, QinQ, PPPoE (IPv4 and IPv6), the sequence
number and the IPv4 identification wrapping, and what is never cut (SYN,
CWR, a bad TCP checksum, TCP-MD5, UDP). Frames arrive at line rate into a
shaper at 400 Mb/s, so queues form and ACKs compete with chunks.
"""

import random

import cocotb

from ackfilter import params as P

from ackfilter.model.segmenter import why_whole
from ackfilter.sim.segcheck import check_segmented, data_between_chunks, splits_between_chunks
from ackfilter.sim.traces import Flow, tcp_frame
from ackfilter_tb import FLOW_QUEUES, TB, scoreboard
from tb_linerate import send_at_line_rate

TEST_TIMEOUT = dict(timeout_time=60, timeout_unit="ms")
UPLINK_BPS = 400_000_000
CHUNK = 256
TS = [("NOP", None), ("NOP", None), ("Timestamp", (77, 88))]
SACK = [("NOP", None), ("NOP", None), ("SAck", (5000, 6000))]
FLOWS = {
    "ipv4": Flow(sport=50000),
    "ipv6": Flow(src="2001:db8::10", dst="2001:db8::5", sport=50001),
    "vlan": Flow(sport=50002, vlans=((0x8100, 7),)),
    "qinq": Flow(sport=50003, vlans=((0x88A8, 3), (0x8100, 4))),
    "pppoe": Flow(sport=50004, pppoe_session=0x1234),
    "pppoe-ipv6": Flow(src="2001:db8::11", dst="2001:db8::5", sport=50005, pppoe_session=0x55),
}
DOWNLOAD = Flow(src="192.168.1.20", dst="198.51.100.9", sport=40000, dport=80)


class Uploads:
    """Consecutive segments of each flow (the sequence numbers start near
    2^32, so they wrap; IPv4 identifications near 2^16)."""

    def __init__(self, rng):
        self.rng = rng
        self.seq = {k: 2**32 - 3000 - 977 * i for i, k in enumerate(FLOWS)}
        self.ip_id = 0xFFF0

    def segment(self, name, size, *, flags="PA", options=(), ip_words=0):
        payload = self.rng.randbytes(size)
        self.ip_id = (self.ip_id + 1) & 0xFFFF
        frame = tcp_frame(FLOWS[name], seq=self.seq[name], ack=1, flags=flags, options=options,
                          payload=payload, ip_id=self.ip_id, ip_option_words=ip_words, builder="raw")
        self.seq[name] = (self.seq[name] + size) & 0xFFFF_FFFF
        return frame


def edge_cases(up, labels):
    """The edge cases of every flow, the flows' frames in turn (so each
    flow's queue stays busy and, with flow queues, leaves the new list after
    its first frames); ``labels`` gets each frame's (flow, case number)."""
    c = CHUNK
    per_flow = []
    for name in FLOWS:
        cases = [
            up.segment(name, c + 100),                   # not a multiple
            up.segment(name, 4 * c),                     # an exact multiple
            up.segment(name, c),                         # equal: whole
            up.segment(name, c - 56),                    # smaller: whole
            up.segment(name, 2 * c + 1),                 # a one-byte last chunk, padded
            up.segment(name, 3 * c + 7, options=TS),     # odd, timestamps
            up.segment(name, 1400, options=TS + SACK),
            up.segment(name, 5 * c - 1, flags="FPA"),    # FIN and PSH on the last chunk only
        ]
        if "ipv6" not in name:
            cases.append(up.segment(name, 2 * c + 30, ip_words=3))   # IPv4 options
        labels.update({f: (name, i) for i, f in enumerate(cases)})
        per_flow.append(cases)
    out = [cases[i] for i in range(max(map(len, per_flow))) for cases in per_flow if i < len(cases)]
    # Never cut.
    out += [
        up.segment("ipv4", 1000, flags="PAC"),           # CWR
        tcp_frame(Flow(sport=51000), seq=5, flags="S", payload=bytes(700), builder="raw"),
        up.segment("ipv4", 900, options=[(19, bytes(16)), ("NOP", None), ("NOP", None)]),  # TCP-MD5
    ]
    bad = bytearray(tcp_frame(Flow(sport=51001), seq=9, ack=1, flags="PA", payload=bytes(800),
                              builder="raw"))
    bad[-1] ^= 0x55
    out.append(bytes(bad))
    return out


def with_acks(frames, rng):
    """The frames with a download's pure ACKs between them."""
    out, ack = [], 1000
    for f in frames:
        out.append(f)
        for _ in range(rng.randint(0, 3)):
            ack += 1448
            out.append(tcp_frame(DOWNLOAD, seq=7, ack=ack, flags="A", builder="raw"))
    return out


@cocotb.test(**TEST_TIMEOUT)
async def test_the_segmenter_cuts_every_edge_case_as_the_model_at_line_rate(dut):
    tb = TB(dut)
    await tb.reset()
    await tb.set_param("ack_mode", P.ACK_FILTER_MODES["aggressive"])
    await tb.set_param("shaper_cpb_q16", P.cpb_q16_for_rate(UPLINK_BPS))
    await tb.set_param("chunk_bytes", CHUNK)
    rng = random.Random(3)
    up = Uploads(rng)
    labels = {}
    frames = with_acks(edge_cases(up, labels) + edge_cases(up, labels), rng)
    await send_at_line_rate(tb, frames)
    await tb.drain()
    counters = await tb.counters()
    model = scoreboard(tb, tb.model(ack_mode=P.ACK_FILTER_MODES["aggressive"], chunk_bytes=CHUNK),
                       counters=counters)
    # At 1 Gb/s into a 400 Mb/s uplink the data buffer fills now and then:
    # only the frames it kept are cut (with flow queues an overflow drops
    # queued frames from the head of the fattest queue, spec section 12:
    # which ones, the scoreboard has checked drop by drop).
    arrivals = [e for _c, e in tb.events if e in P.ARRIVAL_EVENTS]
    assert len(arrivals) == len(frames)
    overflowed = set(model.overflow_dropped)
    assert len(overflowed) == counters["drop_data_overflow"]
    queued = [f for f, e in zip(frames, arrivals)
              if e in ("ARRIVE_DATA", "ARRIVE_DATA_MARKED") and f not in overflowed]
    cuttable = [f for f in queued if why_whole(f, CHUNK) is None]
    out = [f for _c, f in tb.received]
    # With flow queues a new flow's frame leaves whole between two chunks of
    # another's (spec section 12): those left as they came, between chunks.
    between = data_between_chunks(out, CHUNK, frames)
    out_whole = set(out)
    cut = [f for f in cuttable if f not in out_whole]
    assert all(f in between for f in cuttable if f in out_whole)
    assert bool(between) == FLOW_QUEUES, len(between)
    assert counters["seg_frames"] == len(cut) > 40
    # Every edge case of every flow was cut at least once (it is sent twice:
    # with flow queues a flow's first frames may leave whole).
    cases_cut = {labels[f] for f in cut if f in labels}
    assert cases_cut == {labels[f] for f in cuttable if f in labels}, \
        sorted({labels[f] for f in cuttable if f in labels} - cases_cut)
    kept = [f for f, e in zip(frames, arrivals) if e != "DROP_DATA_FULL" and f not in overflowed]
    assert check_segmented(kept, out, CHUNK, cut) == counters["seg_chunks"]
    # ACKs left between two chunks of one frame (the scheduler chooses per chunk).
    download = (DOWNLOAD.src, DOWNLOAD.dst, DOWNLOAD.sport, DOWNLOAD.dport)
    assert splits_between_chunks(out, CHUNK, download) > 5
