"""Every register written while frames are queued, through the real RTL.

Six TCP flows (four IPv4, two IPv6) each send upload data and pure ACKs
(rising acks with timestamps: the ACKs supersede one another), in bursts
faster than the shaper lets out, so that both queues hold frames of every
flow. Between bursts one register changes: `ack_mode` through every
transition (with pure ACKs queued as data when the filter comes on, and ACKs
in the ACK queue when it goes off: spec section 4, "Changing ack_mode"), and
every other parameter at least once. :meth:`ackfilter_tb.TB.set_param_live`
writes each at a moment the scoreboard can place, which then checks every
decision, every frame that left and every counter against the model (with
the writes applied where they happened), and the independent checker of
the reliability campaign (its own parser, no model) checks what left:
per-flow ACK and data order, nothing invented, every ACK that did not leave
covered. The checker does not understand chunks, so the run with the
segmenter's size changing is checked by the scoreboard alone.
"""

import random

import cocotb
from scapy.layers.inet import IP, TCP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from ackfilter import params as P
from ackfilter.model.red import Red
from ackfilter.params import ARRIVAL_EVENTS
from ackfilter.sim.fuzz.checker import check
from ackfilter.gateware.core import ENTRY_FIFO_DEPTH     # the ingress -> queue manager FIFO
from ackfilter_tb import FLOW_QUEUES, TB, scoreboard

FLOWS = 6
BURSTS = 52
BURST = 40


class Flow:
    """One TCP connection's upload segments and pure ACKs (Not-ECT: RED
    drops, ACC marks nothing, so every frame leaves as it came)."""

    def __init__(self, n, rng):
        self.n, self.rng = n, rng
        self.seq, self.ack, self.ts = 1000 * n, 5000 * n, 100 * n
        v6 = n >= 4
        self.ip = (IPv6(src=f"2001:db8::{n + 1:x}", dst="2001:db8:ffff::1") if v6
                   else IP(src=f"10.0.0.{n + 1}", dst="198.51.100.1"))

    def _frame(self, flags, payload=b""):
        self.ts += 1
        tcp = TCP(sport=40000 + self.n, dport=443, seq=self.seq, ack=self.ack, flags=flags, window=1000,
                  options=[("NOP", None), ("NOP", None), ("Timestamp", (self.ts, 7 * self.ts))])
        f = bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / self.ip / tcp / payload)
        return f + bytes(max(0, 60 - len(f)))

    def next(self):
        if self.rng.random() < 0.5:
            n = self.rng.randrange(100, 1400)
            f = self._frame("PA", bytes(self.rng.randrange(256) for _ in range(n)))
            self.seq += n
            return f
        self.ack += self.rng.choice((0, 1448, 2896))      # some duplicates: never superseded
        return self._frame("A")


def schedule(rng, *, chunks):
    """The writes, one after each burst: every ack_mode transition, every
    other parameter at least once (chunk_bytes only with ``chunks``)."""
    modes = [0, 2, 1, 0, 1, 2, 0, 2, 1, 2, 0, 1, 2]
    others = [
        ("data_share", 0), ("data_share", 192), ("data_share", 256), ("data_share", 64),
        ("ack_queue_limit", 4), ("ack_queue_limit", 64), ("ack_queue_limit", 12),
        ("shaper_cpb_q16", P.cpb_q16_for_rate(150_000_000)), ("shaper_burst_bytes", 600),
        ("shaper_overhead_bytes", 38), ("shaper_mpu_bytes", 84), ("shaper_charge_base", 1),
        ("shaper_link_layer", 1), ("shaper_cpb_q16", P.cpb_q16_for_rate(300_000_000)),
        ("shaper_link_layer", 0), ("shaper_charge_base", 0),
        ("red_min_bytes", 3000), ("red_max_bytes", 12000), ("red_max_p", 30000), ("red_wq_shift", 2),
        ("red_gentle", 0), ("red_idle_shift", 10), ("red_enable", 1), ("red_max_p", 6000),
        ("red_enable", 0),
        ("acc_wq_shift", 1), ("acc_threshold_acks", 2), ("acc_enable", 1), ("acc_enable", 0),
    ]
    if chunks:
        others += [("chunk_bytes", 256), ("chunk_bytes", 0), ("chunk_bytes", 512), ("chunk_bytes", 64)]
    writes = [("ack_mode", m) for m in modes] + others
    rng.shuffle(writes)
    # First the filter off with data owed its share in full (data_share 256:
    # by the credit alone data would go before the ACKs still queued), so
    # that the "ACKs first" rule decides in every run.
    return [("ack_mode", 2), ("data_share", 256), ("ack_mode", 0)] + writes


async def run(dut, *, seed, chunks):
    rng = random.Random(seed)
    tb = TB(dut)
    await tb.reset()
    start = {"shaper_cpb_q16": P.cpb_q16_for_rate(200_000_000), "shaper_burst_bytes": 3000,
             "ack_mode": 2, "data_share": 128}
    for name, value in start.items():
        await tb.set_param(name, value)
    d = {p.name: p.default for p in P.PARAMS}
    red = Red(min_bytes=d["red_min_bytes"], max_bytes=d["red_max_bytes"], max_p=d["red_max_p"],
              wq_shift=d["red_wq_shift"], gentle=d["red_gentle"], idle_shift=d["red_idle_shift"],
              enable=bool(d["red_enable"]))
    model = tb.model(ack_mode=2, data_share=128, red=red)

    arrived = [0, 0]                            # events seen, arrivals among them

    def arrivals():
        for _, ev in tb.events[arrived[0]:]:
            arrived[1] += ev in ARRIVAL_EVENTS
        arrived[0] = len(tb.events)
        return arrived[1]

    flows = [Flow(n, rng) for n in range(FLOWS)]
    writes = schedule(rng, chunks=chunks)
    assert len(writes) <= BURSTS
    for b in range(BURSTS):
        for _ in range(BURST):
            # Back to back, but never more than the entry FIFO holds ahead of
            # the queue manager (tb_random's pacing: no drop_overrun).
            while len(tb.sent) - arrivals() > ENTRY_FIFO_DEPTH - 1:
                await tb.edge
            await tb.send(rng.choice(flows).next())
        if b < len(writes):
            await tb.set_param_live(*writes[b], arrivals=arrivals)
    await tb.drain(quiet_cycles=300, timeout_cycles=5_000_000)
    cnt = await tb.counters()
    model = scoreboard(tb, model, counters=cnt)
    model.check_invariants()
    # Every written mode came into force (the drain empties the queues the
    # switch waits for): the last one is the one in force.
    assert model.ack_mode == model.ack_mode_reg == tb.params["ack_mode"], \
        (model.ack_mode, model.ack_mode_reg, tb.params["ack_mode"])
    written = {name for _, name, _, _ in tb.live_writes}
    every = {p.name for p in P.PARAMS} - ({"chunk_bytes"} if not chunks else set())
    assert written == every, sorted(every - written)
    dut._log.info(f"seed {seed}, flow queues {FLOW_QUEUES}: {len(tb.sent)} frames, counters {cnt}; "
                  f"mode rule decisions {model.mode_rule_decisions}")
    # The change rules did decide, both ways, and the queues held what they guard.
    assert model.mode_rule_decisions["acks_first"] > 0 and model.mode_rule_decisions["data_first"] > 0
    assert cnt["acks_superseded"] > 0 and cnt["drop_red"] > 0 and cnt["frames_out"] > 0
    if not chunks:
        report = check(tb.sent, [f for _, f in tb.received], cnt, slot_bytes=P.ACK_SLOT_BYTES)
        assert report.ok, report
    return cnt


@cocotb.test(timeout_time=4, timeout_unit="sec")
async def test_every_register_written_mid_traffic(dut):
    await run(dut, seed=1, chunks=False)


@cocotb.test(timeout_time=4, timeout_unit="sec")
async def test_every_register_written_mid_traffic_with_the_segmenter(dut):
    await run(dut, seed=2, chunks=True)
