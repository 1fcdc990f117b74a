"""Line rate, back-pressure and data-buffer-full behaviour of ``ackfilter_core``.

Checks ``docs/spec.md`` sections 1 (one word per cycle in, ``ready`` low for
a few cycles after ``last``), 5 and 12 (data buffer in cells, drop when
full, room freed when a frame has left; no ``drop_overrun`` at line rate) and
that no frame is lost at 1 Gb/s line rate: every test replays the event trace through the
golden model (:func:`ackfilter_tb.scoreboard`) and ends with the core drained
and the sink empty.

1 Gb/s at ``F_SYS_HZ``: a byte lasts 8 ns, ``F_SYS_HZ / 125e6`` cycles (0.4
at 50 MHz). A frame of ``L`` bytes (without FCS) occupies ``L + 24`` byte
times on the wire (FCS 4, preamble and SFD 8, inter-frame gap 12: IEEE 802.3
clauses 3 and 4), so a minimum frame (60 bytes + FCS) occupies 84 byte times
(33.6 cycles at 50 MHz; :mod:`ackfilter.sim.wire`). :func:`send_at_line_rate`
offers every word from the first cycle at or after its exact 1 Gb/s wire
time, so that each frame starts on the ideal schedule, rounded up.
"""

import itertools
import math
from collections import Counter
import random
from fractions import Fraction

import cocotb
from cocotb.triggers import RisingEdge

from ackfilter import params as P
from ackfilter.model import classify
from ackfilter.sim.traces import Flow, tcp_frame
from ackfilter.sim.random_trace import random_trace
from ackfilter.sim.wire import frame_cycles, word_due_cycles
from ackfilter_tb import FLOW_QUEUES, TB, frame_words, scoreboard

#: Data buffer of the default elaboration (``DATA_BUFFER_BYTES``), in cells.
DATA_CELLS = P.DATA_CELLS

DROP_COUNTERS = tuple(c.name for c in P.COUNTERS if c.is_drop)


def named(*values):
    """Parameter values that name the generated cocotb tests by themselves."""
    return [cocotb.Param(v, name=str(v)) for v in values]
TEST_TIMEOUT = dict(timeout_time=20, timeout_unit="ms")


# --------------------------------------------------------------------------
# Frames

def _mac(n):
    """A locally administered source MAC carrying ``n`` (makes frames unique)."""
    return "02:11:" + ":".join(f"{b:02x}" for b in n.to_bytes(4, "big"))


def data_frame(size, n, *, flow=None):
    """A TCP PSH|ACK segment of exactly ``size`` bytes (without FCS), unique by ``n``."""
    flow = flow or Flow(src="192.168.1.50", dst="203.0.113.80", sport=53000, dport=22)
    hdr = len(tcp_frame(flow, builder="raw", pad_to=0))
    payload = bytes((n + k) & 0xFF for k in range(size - hdr))
    frame = tcp_frame(flow, seq=1 + 1460 * n, ack=7, flags="PA", payload=payload, ip_id=n,
                      src_mac=_mac(n), builder="raw")
    assert len(frame) == size, (len(frame), size)
    return frame


def ack_flows(n_flows):
    return [Flow(src=f"10.1.{i >> 8}.{i & 255}", dst="198.51.100.7", sport=40000 + i, dport=443)
            for i in range(n_flows)]


def min_size_acks(n_frames, n_flows, seed):
    """``n_frames`` 60-byte pure ACKs (54 bytes + padding), flows in random order,
    each flow's ack number advancing by two segments per ACK."""
    rng = random.Random(seed)
    flows = ack_flows(n_flows)
    acks = [rng.getrandbits(32) for _ in flows]
    out = []
    for n in range(n_frames):
        i = rng.randrange(n_flows)
        acks[i] = (acks[i] + 2 * 1448) & 0xFFFFFFFF
        out.append(tcp_frame(flows[i], ack=acks[i], ip_id=n, src_mac=_mac(n), builder="raw"))
        assert len(out[-1]) == 60
    return out


# --------------------------------------------------------------------------
# Drivers

async def send_at_line_rate(tb, frames):
    """Offer ``frames`` back to back at exactly 1 Gb/s from now: each word
    from the first cycle at or after its wire time
    (:func:`ackfilter.sim.wire.word_due_cycles`: the frames before it with
    their overhead, then 4 byte times per word, ``F_SYS_HZ / 125e6`` cycles a
    byte) until the core takes it. A word the core takes late delays no later
    one: the wire does not wait. Returns, once the wire is free again, the
    cycle each frame started."""
    dut = tb.dut
    start = Fraction(tb.cycle)          # the frame's first byte on the wire
    starts = []
    for frame in frames:
        tb.sent.append(frame)
        dues = word_due_cycles(len(frame), start)
        for n, ((data, keep, last), due) in enumerate(zip(frame_words(frame), dues)):
            if tb.cycle < due:
                dut.i_valid.value = 0
                while tb.cycle < due:
                    await tb.edge
            if n == 0:
                starts.append(tb.cycle)
            dut.i_valid.value = 1
            dut.i_data.value = data
            dut.i_keep.value = keep
            dut.i_first.value = int(n == 0)
            dut.i_last.value = int(last)
            while True:
                await tb.edge
                if dut.i_ready.value:
                    break
        start += frame_cycles(len(frame))
    dut.i_valid.value = 0
    # The last frame's FCS, preamble and gap: the wire is free again after them.
    while tb.cycle < math.ceil(start):
        await tb.edge
    return starts


async def send_with_idle(tb, frame, valid_pattern):
    """Offer ``frame`` one word per cycle, but only in cycles where
    ``next(valid_pattern)`` is true (cocotbext-eth's idle inserter)."""
    dut = tb.dut
    tb.sent.append(frame)
    for n, (data, keep, last) in enumerate(frame_words(frame)):
        while not next(valid_pattern):
            dut.i_valid.value = 0
            await RisingEdge(dut.clk)
        dut.i_valid.value = 1
        dut.i_data.value = data
        dut.i_keep.value = keep
        dut.i_first.value = int(n == 0)
        dut.i_last.value = int(last)
        while True:
            await RisingEdge(dut.clk)
            if dut.i_ready.value:
                break
    dut.i_valid.value = 0


async def start_tb(dut, **params):
    tb = TB(dut)
    await tb.reset()
    for name, value in params.items():
        await tb.set_param(name, value)
    return tb


def check_zero_loss(tb, counters, n_in):
    assert not [e for _, e in tb.events if e == P.OVERRUN_EVENT], "drop_overrun at line rate"
    for name in DROP_COUNTERS:
        assert counters[name] == 0, f"{name} = {counters[name]} at line rate"
    assert counters["frames_in"] == n_in, counters
    assert counters["frames_out"] + counters["acks_superseded"] == counters["frames_in"], counters
    assert len(tb.received) == counters["frames_out"], (len(tb.received), counters)


def check_output_keeps_up(tb, in_starts, frames):
    """Measure the input and output frame rates (frames per cycle, from the
    start cycles of the first and last frame on each side); returns both.
    Also checks that the driver really offered 1 Gb/s."""
    # The driver is exact: the span is the ideal 1 Gb/s span, its ends rounded up to cycles.
    ideal_span = sum(frame_cycles(len(f)) for f in frames[:-1])
    in_span = in_starts[-1] - in_starts[0]
    assert abs(in_span - ideal_span) <= 1, \
        f"driver off line rate: {in_span} cycles, ideal {float(ideal_span):.1f}"
    out_starts = [c for c, _ in tb.received]
    out_span = out_starts[-1] - out_starts[0]
    in_rate = (len(frames) - 1) / in_span
    out_rate = (len(out_starts) - 1) / out_span
    tb.dut._log.info(f"input {in_rate:.5f} frames/cycle ({1 / in_rate:.2f} cycles/frame), "
                     f"output {out_rate:.5f} frames/cycle ({1 / out_rate:.2f} cycles/frame), "
                     f"{len(frames)} in, {len(out_starts)} out")
    return in_rate, out_rate


# --------------------------------------------------------------------------
# (a), (b), (c): zero loss at 1 Gb/s

@cocotb.test(**TEST_TIMEOUT)
async def test_min_size_data_frames_at_line_rate_lose_nothing(dut):
    """2,000 back-to-back 60-byte data frames at 1 Gb/s: all leave, intact,
    in order, at the input rate."""
    tb = await start_tb(dut)
    frames = [data_frame(60, n) for n in range(2000)]
    starts = await send_at_line_rate(tb, frames)
    await tb.drain()
    counters = await tb.counters()
    check_zero_loss(tb, counters, len(frames))
    scoreboard(tb, tb.model(), counters=counters)
    assert [f for _, f in tb.received] == frames
    in_rate, out_rate = check_output_keeps_up(tb, starts, frames)
    assert abs(out_rate - in_rate) / in_rate < 0.001
    # Each frame leaves a bounded time after it started arriving: no backlog.
    latency = [o - i for (o, _), i in zip(tb.received, starts)]
    assert max(latency) - min(latency) <= 2, (min(latency), max(latency))


@cocotb.test(**TEST_TIMEOUT)
@cocotb.parametrize(mode=named("conservative", "aggressive"))
async def test_min_size_acks_of_many_flows_at_line_rate_lose_nothing(dut, mode):
    """2,000 60-byte pure ACKs of 150 flows at 1 Gb/s: each is queued
    (``acks_in`` counts all of them), none is dropped, the output keeps up."""
    tb = await start_tb(dut, ack_mode=P.ACK_FILTER_MODES[mode])
    frames = min_size_acks(2000, 150, seed=2)
    starts = await send_at_line_rate(tb, frames)
    await tb.drain()
    counters = await tb.counters()
    check_zero_loss(tb, counters, len(frames))
    assert counters["acks_in"] == len(frames)
    scoreboard(tb, tb.model(ack_mode=P.ACK_FILTER_MODES[mode]), counters=counters)
    # The unshaped output (4 bytes per cycle) outruns 1 Gb/s: an ACK has left
    # before the next one of its flow arrives, so nothing is superseded.
    assert counters["acks_superseded"] == 0
    assert [f for _, f in tb.received] == frames
    in_rate, out_rate = check_output_keeps_up(tb, starts, frames)
    assert abs(out_rate - in_rate) / in_rate < 0.001


@cocotb.test(**TEST_TIMEOUT)
async def test_mixed_trace_at_line_rate_loses_nothing(dut):
    """A random trace's ACKs (VLAN, QinQ, PPPoE, IPv6, SACK, timestamps) and
    data frames of 60..1514 bytes at 1 Gb/s, aggressive mode: zero loss and
    every decision and output frame as the model's."""
    mode = P.ACK_FILTER_MODES["aggressive"]
    tb = await start_tb(dut, ack_mode=mode)
    frames = [f for _, f in random_trace(5, n_frames=900)
              if classify(f, ack_mode=mode).cls in ("ack", "data")]
    starts = await send_at_line_rate(tb, frames)
    await tb.drain()
    counters = await tb.counters()
    check_zero_loss(tb, counters, len(frames))
    scoreboard(tb, tb.model(ack_mode=mode), counters=counters)
    # Output frames per cycle: the input's, less the superseded ACKs.
    in_rate, out_rate = check_output_keeps_up(tb, starts, frames)
    expected = in_rate * counters["frames_out"] / counters["frames_in"]
    assert abs(out_rate - expected) / expected < 0.02, (out_rate, expected)


@cocotb.test(**TEST_TIMEOUT)
@cocotb.parametrize(mode=[cocotb.Param(P.ACK_FILTER_MODES[m], m) for m in ("conservative", "aggressive")])
async def test_full_ack_queue_at_line_rate_drops_from_front_without_overrun(dut, mode):
    """The queue manager's slowest path at line rate: a 1 Mb/s uplink (the
    shaper) and ``ack_queue_limit`` 8, while 1,000 60-byte duplicate ACKs of
    three flows arrive at 1 Gb/s. Each arrival hits its flow, may not
    supersede (same ack), finds the queue full, drops the head, looks up
    again and appends. Spec section 5: no ``drop_overrun`` at line rate."""
    tb = await start_tb(dut, ack_mode=mode, ack_queue_limit=8,
                        shaper_cpb_q16=P.cpb_q16_for_rate(1_000_000))
    flows = ack_flows(3)
    frames = [tcp_frame(flows[n % 3], ack=5000 + n % 3, ip_id=n, src_mac=_mac(n), builder="raw")
              for n in range(1000)]
    await send_at_line_rate(tb, frames)
    await tb.set_param("shaper_cpb_q16", 0)            # open, so that the rest drains quickly
    await tb.drain()
    counters = await tb.counters()
    assert not [e for _, e in tb.events if e == P.OVERRUN_EVENT], \
        f"{counters['drop_overrun']} frames dropped for drop_overrun at line rate"
    assert counters["drop_ack_front"] > 900, counters      # nearly every arrival
    scoreboard(tb, tb.model(ack_mode=mode, ack_queue_limit=8), counters=counters)


# --------------------------------------------------------------------------
# cocotbext-eth style: sizes, idle and back-pressure inserters

def _pattern(name):
    return {
        "none": lambda: itertools.repeat(1),
        "cycle_1110": lambda: itertools.cycle([1, 1, 1, 0]),
        "cycle_10": lambda: itertools.cycle([1, 0]),
    }[name]()


SIZE_SETS = {
    "60_to_127": list(range(60, 128)),
    "512": [512] * 8,
    "1514": [1514] * 6,
    "ten_back_to_back_60": [60] * 10,
}


#: How the frames are offered: a word every cycle (1.6 Gb/s, faster than
#: any MAC), or in three cycles of four (1.2 Gb/s). The core is promised
#: line rate (spec section 5); the FIFO core keeps up with words back to
#: back, the flow-queue core (whose data arrivals look their flow up, and
#: whose departures wait for the DRR's pick) with 1.2 Gb/s here, and
#: `make bench` measures how far beyond line rate each keeps up.
IDLE_PATTERNS = ("cycle_1110",) if FLOW_QUEUES else ("none", "cycle_1110")


@cocotb.test(**TEST_TIMEOUT)
@cocotb.parametrize(sizes=named(*SIZE_SETS), idle=named(*IDLE_PATTERNS),
                    backpressure=named("none", "cycle_1110", "cycle_10"))
async def test_frame_sizes_pass_intact_with_idle_and_backpressure(dut, sizes, idle, backpressure):
    """Data frames of the given sizes, each followed by a pure ACK of one flow,
    offered back-to-back (or with an idle inserter, :data:`IDLE_PATTERNS`)
    while ``o_ready`` follows a back-pressure pattern: every data frame
    leaves intact and in order, the ACKs as the model decides, and the sink
    ends empty."""
    mode = P.ACK_FILTER_MODES["conservative"]
    tb = await start_tb(dut, ack_mode=mode)
    tb.o_ready_pattern = _pattern(backpressure)
    flow = Flow(src="192.168.1.77", dst="198.51.100.9", sport=41000, dport=443)
    data, frames = [], []
    for n, size in enumerate(SIZE_SETS[sizes]):
        d = data_frame(size, n)
        data.append(d)
        frames += [d, tcp_frame(flow, ack=1000 + 1448 * n, ip_id=n, builder="raw")]
    valid = _pattern(idle)
    for f in frames:
        await send_with_idle(tb, f, valid)
    await tb.drain()
    counters = await tb.counters()
    check_zero_loss(tb, counters, len(frames))
    scoreboard(tb, tb.model(ack_mode=mode), counters=counters)
    out = [f for _, f in tb.received]
    assert [f for f in out if f in data] == data, "data frames reordered, lost or corrupted"
    assert int(dut.o_valid.value) == 0 and tb.dut.backlog.value == 0


# --------------------------------------------------------------------------
# Data buffer full (spec sections 5 and 12)

@cocotb.test(**TEST_TIMEOUT)
@cocotb.parametrize(hold=named("o_ready_low", "shaper_closed"))
async def test_full_data_buffer_drops_excess_1514_byte_frames_and_keeps_the_rest_intact(dut, hold):
    """40 data frames of 1514 bytes into the 32 KiB buffer while nothing can
    leave: exactly as many as fit are kept (a 1514-byte frame takes 6 cells
    of 256 bytes; the free list keeps one of the 128), the rest are counted
    ``drop_data_full``; once the output opens the kept ones leave intact and
    in order.

    * ``o_ready_low``: the first frame is granted but cannot leave, so its
      room is not freed (spec 5: room is freed when a frame has left):
      floor(127 / 6) = 21 kept.
    * ``shaper_closed``: the first frame leaves (the shaper's bucket starts
      full), then the rate is ~0: 1 + 21 = 22 kept.
    """
    cells = math.ceil(1514 / P.DATA_CELL_BYTES)
    fit = (DATA_CELLS - 1) // cells
    kept = fit if hold == "o_ready_low" else 1 + fit
    assert (cells, fit) == (6, 21)
    if FLOW_QUEUES and hold == "shaper_closed":
        await full_buffer_drops_from_the_head(dut)
        return
    tb = await start_tb(dut)
    if hold == "o_ready_low":
        tb.o_ready_pattern = itertools.repeat(0)
    else:
        await tb.set_param("shaper_cpb_q16", 2**32 - 1)
    frames = [data_frame(1514, n) for n in range(40)]
    await tb.send_all(frames)
    for _ in range(100):
        await RisingEdge(dut.clk)
    arrivals = [e for _, e in tb.events if not e.startswith("DEPART")]
    assert arrivals == ["ARRIVE_DATA"] * kept + ["DROP_DATA_FULL"] * (40 - kept), arrivals
    held = await tb.counters()
    assert held["drop_data_full"] == 40 - kept
    assert held["frames_out"] == kept - fit       # 0, or the first frame
    # Open the output.
    if hold == "o_ready_low":
        tb.o_ready_pattern = itertools.repeat(1)
    else:
        await tb.set_param("shaper_cpb_q16", 0)
    await tb.drain()
    counters = await tb.counters()
    assert [f for _, f in tb.received] == frames[:kept]
    assert counters["frames_out"] == kept and counters["drop_data_full"] == 40 - kept
    scoreboard(tb, tb.model(), counters=counters)


async def full_buffer_drops_from_the_head(dut):
    """With flow queues (spec section 12, "Buffer"): 40 frames of 1514 bytes
    (6 cells each) of one flow; the first leaves, then the shaper holds the
    rest. The queue may hold DATA_CELLS - DATA_CELL_RESERVE = 120 cells:
    frames 1-20. Frame 21 would overfill it, so the fattest queue (the only
    one) drops from its head until half its cells are gone (frames 1-10),
    then 21 joins (66 cells); 22-30 fill it again, 31 drops 11-20, and
    32-39 join: every frame arrives, 20 are dropped from the head, and once
    the shaper opens frames 0 and 21-39 leave, in order."""
    assert P.DATA_CELLS - P.DATA_CELL_RESERVE == 120
    tb = await start_tb(dut)
    await tb.set_param("shaper_cpb_q16", 2**32 - 1)
    frames = [data_frame(1514, n) for n in range(40)]
    arrivals = await arrival_events(tb, frames)
    drops = ["DROP_DATA_OVERFLOW"] * 10
    assert arrivals == (["ARRIVE_DATA"] * 21 + drops + ["ARRIVE_DATA"] * 10 + drops
                        + ["ARRIVE_DATA"] * 9), arrivals
    await tb.set_param("shaper_cpb_q16", 0)
    await tb.drain()
    counters = await tb.counters()
    assert [f for _, f in tb.received] == [frames[0]] + frames[21:]
    assert counters["drop_data_overflow"] == 20 and counters["drop_data_full"] == 0
    scoreboard(tb, tb.model(), counters=counters)


async def full_buffer_of_min_size_frames_drops_batches_from_the_head(dut):
    """With flow queues (spec section 12, "Buffer"): 142 60-byte frames (a
    cell each) of one flow, offered faster than line rate while the output
    is held. Frame 0 is granted and leaves the queue (its cell stays taken
    until it has left); 1-120 fill the queue's DATA_CELLS -
    DATA_CELL_RESERVE = 120 cells; 121 would overfill it, so the queue drops
    from its head until half its cells are gone or OVERFLOW_BATCH (16)
    frames: 1-16; 121-136 fill it again, 137 drops 17-32, and 138-141 join.
    Nothing is lost otherwise (no overrun while it drops); then 0 and 33-141
    leave, in order."""
    assert (P.DATA_CELLS - P.DATA_CELL_RESERVE, P.OVERFLOW_BATCH) == (120, 16)
    tb = await start_tb(dut)
    tb.o_ready_pattern = itertools.repeat(0)
    frames = [data_frame(60, n) for n in range(142)]
    arrivals = await arrival_events(tb, frames)
    batch = ["DROP_DATA_OVERFLOW"] * 16
    assert arrivals == (["ARRIVE_DATA"] * 121 + batch + ["ARRIVE_DATA"] * 16 + batch
                        + ["ARRIVE_DATA"] * 5), \
        f"{arrivals.count('ARRIVE_DATA')} arrived, {arrivals.count('DROP_DATA_OVERFLOW')} dropped from the head"
    tb.o_ready_pattern = itertools.repeat(1)
    await tb.drain()
    counters = await tb.counters()
    assert [f for _, f in tb.received] == [frames[0]] + frames[33:]
    assert counters["drop_data_overflow"] == 32 and counters["drop_data_full"] == 0
    scoreboard(tb, tb.model(), counters=counters)


async def arrival_events(tb, frames, *, timeout_cycles=20_000):
    """Send ``frames``, wait until the core has reported each one's arrival,
    and return the events so far but the departures, in order."""
    await tb.send_all(frames)
    for _ in range(timeout_cycles):
        if sum(e in P.ARRIVAL_EVENTS for _, e in tb.events) >= len(frames):
            return [e for _, e in tb.events if not e.startswith("DEPART")]
        await RisingEdge(tb.dut.clk)
    raise AssertionError(f"{len(frames)} arrivals not reported within {timeout_cycles} cycles: "
                         f"{Counter(e for _, e in tb.events)}")


@cocotb.test(**TEST_TIMEOUT)
async def test_full_buffer_drops_min_size_frames_beyond_its_cells(dut):
    """142 60-byte data frames while the output is held: each takes one cell
    of DATA_CELL_BYTES, and the free list always keeps one of the DATA_CELLS
    cells (spec section 12, "Buffer"; the frame granted to the output holds
    its cell until it has left): 127 kept, 15 dropped, then all 127 leave in
    order."""
    kept = DATA_CELLS - 1
    assert kept == 127
    if FLOW_QUEUES:
        await full_buffer_of_min_size_frames_drops_batches_from_the_head(dut)
        return
    tb = await start_tb(dut)
    tb.o_ready_pattern = itertools.repeat(0)
    frames = [data_frame(60, n) for n in range(kept + 15)]
    await tb.send_all(frames)
    for _ in range(50):
        await RisingEdge(dut.clk)
    arrivals = [e for _, e in tb.events if not e.startswith("DEPART")]
    assert arrivals == ["ARRIVE_DATA"] * kept + ["DROP_DATA_FULL"] * 15, \
        f"{arrivals.count('ARRIVE_DATA')} kept, {arrivals.count('DROP_DATA_FULL')} dropped"
    tb.o_ready_pattern = itertools.repeat(1)
    await tb.drain()
    counters = await tb.counters()
    assert [f for _, f in tb.received] == frames[:kept]
    assert counters["drop_data_full"] == 15
    scoreboard(tb, tb.model(), counters=counters)
