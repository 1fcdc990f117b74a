"""Seeded random traces through the real RTL, scoreboarded against the model.

Each test replays ``random_trace(seed, 10_000, 200)`` (every
supersession corner, many encapsulations, malformed and oversize frames)
into ``ackfilter_core`` as fast as the queue manager allows, with the output
throttled (a shaper rate or an ``o_ready`` pattern) so that both queues build
up: ACKs are superseded, dropped from the front, data is dropped when its
buffer is full. :func:`ackfilter_tb.scoreboard` then replays the hardware's
event trace through the golden model and checks every decision, every frame
that left (bytes and order) and every counter; the test also asserts that
the interesting paths were taken.

Input pacing: frames go back to back (one word per cycle, no gap) while the
queue manager keeps up. Some ACKs take it longer than the 19 cycles a
60-byte frame lasts at the input (record read, drop from front, second
record read, record write: up to about 50 cycles for an IPv6 ACK with SACK
blocks, timestamps and the AccECN option) and the FIFO in front of
it holds :data:`ENTRY_FIFO_DEPTH` frames, so a run of 60-byte ACKs back to
back (19 cycles each, faster than line rate's 84 byte times: 33.6 cycles
at 50 MHz) would overflow it (``drop_overrun``,
which spec section 5 allows above line rate). So the next frame waits while
``sent - reported`` (frames sent minus arrival events reported) exceeds
``ENTRY_FIFO_DEPTH - 1``: every reported frame has left the FIFO, so it then
holds at most ``ENTRY_FIFO_DEPTH - 1`` frames when the next one commits.
"""

import itertools
import time

import cocotb
from cocotb.triggers import RisingEdge

from ackfilter import params as P


from ackfilter_tb import TB, scoreboard
from ackfilter.params import ARRIVAL_EVENTS
from ackfilter.gateware.core import ENTRY_FIFO_DEPTH     # the ingress -> queue manager FIFO
from ackfilter.sim.random_trace import random_trace


N_FRAMES = 10_000
N_FLOWS = 200
ARRIVALS = ARRIVAL_EVENTS


class ArrivalCounter:
    """Arrival events reported so far (reads ``tb.events`` incrementally)."""

    def __init__(self, tb):
        self.tb = tb
        self.seen = 0
        self.count = 0

    def __call__(self):
        events = self.tb.events
        for _, ev in events[self.seen:]:
            self.count += ev in ARRIVALS
        self.seen = len(events)
        return self.count


async def send_paced(tb, frames):
    """Send ``frames`` back to back, waiting only while the queue manager is
    ``ENTRY_FIFO_DEPTH - 1`` frames behind (see the module docstring)."""
    reported = ArrivalCounter(tb)
    clk = tb.dut.clk
    for f in frames:
        while len(tb.sent) - reported() > ENTRY_FIFO_DEPTH - 1:
            await RisingEdge(clk)
        await tb.send(f)


async def run_trace(dut, *, seed, mode, ack_queue_limit=64, data_share=64, rate_bps=0,
                    burst_bytes=3000, o_ready=None, n_frames=N_FRAMES, n_flows=N_FLOWS):
    """Send the trace, drain, scoreboard; returns ``(counters, model)``."""
    tb = TB(dut)
    if o_ready is not None:
        tb.o_ready_pattern = o_ready
    await tb.reset()
    await tb.set_param("ack_mode", mode)
    await tb.set_param("ack_queue_limit", ack_queue_limit)
    await tb.set_param("data_share", data_share)
    await tb.set_param("shaper_cpb_q16", P.cpb_q16_for_rate(rate_bps))
    await tb.set_param("shaper_burst_bytes", burst_bytes)
    await tb.set_param("shaper_overhead_bytes", 24)
    model = tb.model(ack_mode=mode, ack_queue_limit=ack_queue_limit, data_share=data_share)

    frames = [f for _, f in random_trace(seed, n_frames, n_flows)]
    t0, c0 = time.monotonic(), tb.cycle
    await send_paced(tb, frames)
    c_in = tb.cycle - c0
    await tb.drain(quiet_cycles=200, timeout_cycles=5_000_000)
    cnt = await tb.counters()
    elapsed = time.monotonic() - t0
    model = scoreboard(tb, model, counters=cnt)
    model.check_invariants()
    dut._log.info(f"seed {seed} mode {mode}: {len(frames)} frames in {c_in} cycles, "
                  f"{tb.cycle - c0} with the drain, {elapsed:.1f} s; counters {cnt}")
    assert cnt["frames_in"] == len(frames) and cnt["drop_overrun"] == 0, cnt
    assert model.ack_queue_depth == 0 and model.data_queue_frames == 0
    return cnt, model


@cocotb.test(timeout_time=1, timeout_unit="sec")
async def test_random_trace_conservative_shaped(dut):
    """Conservative mode, shaper at 1 Gb/s (burst 3000 bytes; the trace comes
    in at ~1.9 Gb/s), default ACK queue limit 64 and data share 64/256."""
    cnt, _ = await run_trace(dut, seed=1, mode=P.ACK_FILTER_MODES["conservative"], rate_bps=1_000_000_000)
    assert cnt["acks_superseded"] > 0, cnt
    assert cnt["drop_data_full"] > 0, cnt


@cocotb.test(timeout_time=1, timeout_unit="sec")
async def test_random_trace_aggressive_backpressured(dut):
    """Aggressive mode, unshaped, the output accepting one word in four
    (``o_ready`` pattern ``1000``, ~500 Mb/s), data share 128/256."""
    cnt, _ = await run_trace(dut, seed=2, mode=P.ACK_FILTER_MODES["aggressive"], data_share=128,
                             o_ready=itertools.cycle([1, 0, 0, 0]))
    assert cnt["acks_superseded"] > 0, cnt
    assert cnt["drop_data_full"] > 0, cnt


@cocotb.test(timeout_time=1, timeout_unit="sec")
async def test_random_trace_small_ack_queue_drops_from_front(dut):
    """Aggressive mode with ack_queue_limit 4, shaper at 400 Mb/s and data
    share 192/256: the ACK queue is full most of the time, so drop from the
    front (and its re-processing) happens often."""
    cnt, _ = await run_trace(dut, seed=3, mode=P.ACK_FILTER_MODES["aggressive"], ack_queue_limit=4,
                             data_share=192, rate_bps=400_000_000)
    assert cnt["acks_superseded"] > 0, cnt
    assert cnt["drop_ack_front"] > 0, cnt
