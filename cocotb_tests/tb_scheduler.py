"""Scheduler and shaper of ``ackfilter_core`` (``docs/spec.md`` sections 4, 6).

* Acks first with a guaranteed data share: both queues are kept backlogged
  (input faster than a throttled output) and the departures are checked
  against the rule of section 4, recomputed here from the departure sequence
  alone: while both queues hold a frame, data goes iff ``credit > 0``; an ACK
  adds ``len * data_share``, data subtracts ``len * (256 - data_share)``;
  ``credit := 0`` whenever only one queue holds a frame. From that rule:
  data gets ``data_share / 256`` of the bytes under contention (to within
  one frame's credit), none at all for ``data_share == 0``, and waits at most
  ``(256 - data_share) * len / data_share`` ACK bytes (+ one ACK) after a
  data frame of ``len`` bytes.
* Shaper: the departure cycles of a burst of frames are compared with the
  GCRA reference :func:`ackfilter.model.shaper.gcra_departures`, and the
  long-run rate with the configured one, in the bytes the link accounting
  charges (the Ethernet wire by default; tc-cake's words).

Every test also replays its event trace through the golden model
(:func:`ackfilter_tb.scoreboard`).
"""

import random

import cocotb
from cocotb.triggers import RisingEdge

from ackfilter import params as P
from ackfilter.model.cake import cake_accounting
from ackfilter.model import GcraShaper, LinkAccounting, gcra_departures
from ackfilter.sim.traces import Flow, tcp_frame
from ackfilter_tb import CLK_NS, FLOW_QUEUES, TB, scoreboard
from tb_random import send_paced

CONSERVATIVE = P.ACK_FILTER_MODES["conservative"]


# --------------------------------------------------------------------------
# Frames

def _mac(n):
    return "02:22:" + ":".join(f"{b:02x}" for b in n.to_bytes(4, "big"))


def big_acks(n, *, n_flows=200, seed=0):
    """``n`` pure ACKs of 114 bytes (IPv6, timestamps, three SACK blocks) from
    ``n_flows`` flows in turn: more than the 64 queue places, so a flow never
    has two queued and no ACK is superseded (conservative mode)."""
    rng = random.Random(seed)
    flows = [Flow(src=f"2001:db8:22::{i + 1:x}", dst="2001:db8:ffff::22", sport=30000 + i, dport=443)
             for i in range(n_flows)]
    acks = [rng.getrandbits(32) for _ in flows]
    out = []
    for k in range(n):
        i = k % n_flows
        acks[i] = (acks[i] + 2896) & 0xFFFF_FFFF
        a = acks[i]
        sack = tuple((a + d) & 0xFFFF_FFFF for d in (10000, 11000, 7000, 8000, 4000, 5000))
        opts = [("NOP", None), ("NOP", None), ("Timestamp", (k, 77)), ("NOP", None), ("NOP", None),
                ("SAck", sack)]
        f = tcp_frame(flows[i], ack=a, options=opts, flow_label=k, src_mac=_mac(k), builder="raw")
        assert len(f) == 114, len(f)
        out.append(f)
    return out


def data_frames(sizes, *, first=0):
    """TCP PSH|ACK segments of the given frame sizes, unique by their MACs."""
    fl = Flow(src="192.168.22.2", dst="203.0.113.22", sport=22000, dport=22001)
    hdr = len(tcp_frame(fl, builder="raw", pad_to=0))
    out = []
    for k, size in enumerate(sizes, first):
        f = tcp_frame(fl, seq=1 + 1000 * k, ack=5, flags="PA", payload=bytes((k + j) & 0xFF for j in range(size - hdr)),
                      ip_id=k, src_mac=_mac(0x8000_0000 + k), builder="raw")
        assert len(f) == size
        out.append(f)
    return out


# --------------------------------------------------------------------------
# Departures, from the event trace alone

def departures(tb):
    """``[(cycle, kind, length, acks_queued, data_queued), ...]`` for every
    departure, the queue levels counted from the event trace just before it
    (an ACK enters on NEW/UNTRACKED and leaves on DROP_ACK_FRONT/DEPART_ACK;
    a data frame enters on ARRIVE_DATA and leaves on DEPART_DATA)."""
    acks = data = 0
    out = []
    lengths = iter(len(f) for _, f in tb.received)
    for cycle, ev in tb.events:
        if ev in ("ARRIVE_ACK_NEW", "ARRIVE_ACK_UNTRACKED"):
            acks += 1
        elif ev == "DROP_ACK_FRONT":
            acks -= 1
        elif ev == "ARRIVE_DATA":
            data += 1
        elif ev in ("DEPART_ACK", "DEPART_DATA"):
            out.append((cycle, ev, next(lengths), acks, data))
            if ev == "DEPART_ACK":
                acks -= 1
            else:
                data -= 1
    return out


def check_acks_first_rule(deps, share):
    """Every departure follows the rule of spec section 4 (recomputed here).

    Returns ``(ack_bytes, data_bytes, longest_ack_bytes_without_data)`` over
    the departures that had both queues non-empty."""
    credit = 0
    ack_bytes = data_bytes = 0
    since_data = worst_wait = 0
    last_data_len = None
    for n, (cycle, kind, length, acks, data) in enumerate(deps):
        assert acks > 0 or data > 0, f"departure #{n} at cycle {cycle} from empty queues"
        if acks and data:
            want = "DEPART_DATA" if credit > 0 else "DEPART_ACK"
            assert kind == want, (f"departure #{n} at cycle {cycle}: {kind} with both queues busy "
                                  f"and credit {credit}; acks first with data share {share} says {want}")
            if kind == "DEPART_ACK":
                credit += length * share
                ack_bytes += length
                since_data += length
            else:
                credit -= length * (256 - share)
                data_bytes += length
                if last_data_len is not None:
                    worst_wait = max(worst_wait, since_data)
                since_data = 0
                last_data_len = length
        else:
            assert kind == ("DEPART_ACK" if acks else "DEPART_DATA")
            credit = 0
    return ack_bytes, data_bytes, worst_wait


# --------------------------------------------------------------------------
# Acks first with a guaranteed data share

@cocotb.test(timeout_time=1, timeout_unit="sec")
@cocotb.parametrize(data_share=[0, 64, 128])
async def test_data_share_under_contention(dut, data_share):
    """Both queues backlogged: 114-byte ACKs and 60..600-byte data frames,
    each offered faster than the output (one word in four cycles, 1
    byte/cycle) can take them. Every departure follows the rule (see
    :func:`check_acks_first_rule`); under contention data gets
    ``data_share / 256`` of the bytes: 0 %, 25 %, 50 %, to within the credit
    bound (one data frame's or one ACK's credit over the bytes measured)."""
    tb = TB(dut)
    tb.o_ready_pattern = iter(lambda: tb.cycle % 4 == 0, None)
    await tb.reset()
    await tb.set_param("ack_mode", CONSERVATIVE)
    await tb.set_param("data_share", data_share)
    await tb.set_param("shaper_cpb_q16", 0)
    model = tb.model(ack_mode=CONSERVATIVE, data_share=data_share)

    rng = random.Random(data_share)
    rounds = 320
    acks = big_acks(3 * rounds, seed=data_share)
    data = data_frames([rng.randrange(60, 601) for _ in range(rounds)])
    frames = []
    for k in range(rounds):          # one data frame, three ACKs
        frames += [data[k]] + acks[3 * k:3 * k + 3]
    c0 = tb.cycle
    await send_paced(tb, frames)
    c_end = tb.cycle
    c_in = c_end - c0
    await tb.drain(timeout_cycles=1_000_000)
    cnt = await tb.counters()
    model = scoreboard(tb, model, counters=cnt)

    deps = departures(tb)
    ack_bytes, data_bytes, worst_wait = check_acks_first_rule(deps, data_share)
    busy = ack_bytes + data_bytes
    share = data_bytes / busy
    dut._log.info(f"data_share {data_share}: {c_in} cycles of input, {len(deps)} departures, "
                  f"{busy} bytes under contention, data {share:.4f} (expected {data_share / 256:.4f}); "
                  f"longest ACK run between data frames {worst_wait} bytes; counters {cnt}")
    # While frames came in, both queues were backlogged (almost) all the time.
    sent_while_fed = [d for d in deps if d[0] <= c_end]
    contended = sum(d[2] for d in sent_while_fed if d[3] and d[4])
    assert contended >= 0.95 * sum(d[2] for d in sent_while_fed), "too little contention"
    assert cnt["acks_superseded"] == 0 and cnt["drop_overrun"] == 0, cnt
    # Share: the credit stays within (-(256 - s) * max data len, s * max ACK
    # len], and credit = s * ack_bytes - (256 - s) * data_bytes, so
    # share - s/256 = -credit / (256 * busy).
    max_data, max_ack = 600, 114
    credit = data_share * ack_bytes - (256 - data_share) * data_bytes
    assert -(256 - data_share) * max_data < credit <= data_share * max_ack, credit
    if data_share == 0:
        assert data_bytes == 0, "data left while ACKs were queued with data_share 0"
        # (The FIFO drops arrivals; flow queues drop from the fattest queue's head.)
        assert cnt["drop_data_full"] + cnt["drop_data_overflow"] > 0, \
            "data was expected to back up (strict acks first)"
    else:
        bound = max((256 - data_share) * max_data, data_share * max_ack) / (256 * busy)
        assert bound < 0.01, f"too few bytes under contention for a 1 % measurement ({bound:.4f})"
        assert abs(share - data_share / 256) <= bound, (share, bound)
        # Never starved: after a data frame, at most (256 - s) * len / s ACK
        # bytes (+ one ACK) go before the next.
        assert worst_wait <= (256 - data_share) * max_data / data_share + max_ack, worst_wait


# --------------------------------------------------------------------------
# Shaper

#: Cycles from the ``now`` at which a frame may start at the earliest (the
#: GCRA allows it, it is queued and the output is free) to the ``now`` at
#: which the queue manager grants it (its DEPART event, the cycle the shaper
#: is charged): the shaper's registered ``eligible`` and the manager's Idle ->
#: Depart step. Measured: 2 when the shaper is the limit, 2..3 otherwise.
SHAPER_LATENCY_CYCLES = 3
#: A departure also waits for the operation the manager is in when the
#: shaper opens: with data frames arriving, a data arrival, whose RED
#: decision takes ``RED_DECISION_LEAD`` cycles between Arrive and Idle.
ARRIVAL_HOLD_CYCLES = P.RED_DECISION_LEAD + 2
#: With flow queues (spec section 12) a data arrival of a queued flow looks
#: the flow up first (RED starts after Lookup and Await-Lookup, three cycles
#: after Arrive, where it starts without them), and a departure waits for the
#: DRR's pick (Pick-Wait, Pick-Chunk: two cycles).
if FLOW_QUEUES:
    ARRIVAL_HOLD_CYCLES += 3
    SHAPER_LATENCY_CYCLES += 2
#: Allowed lateness against :func:`gcra_departures` fed with the ideal ready
#: cycles: a frame's own latency plus that of the charge that last set
#: ``tat`` from ``now`` (``tat := max(tat, now) + cost`` takes the late
#: ``now``; later charges add to ``tat`` and do not accumulate lateness),
#: and one arrival's hold. Measured: 5 without a hold, 12 with one.
GCRA_REFERENCE_TOLERANCE = 2 * SHAPER_LATENCY_CYCLES + ARRIVAL_HOLD_CYCLES


class Probe:
    """Records the core's ``now`` at every event and at the end of every
    frame on the output (the values the design sampled at that edge)."""

    def __init__(self, dut):
        self.dut = dut
        self.events = []          # (now, kind number)
        self.frame_ends = []      # now of each o_last handshake
        cocotb.start_soon(self._run())

    async def _run(self):
        dut = self.dut
        while True:
            await RisingEdge(dut.clk)
            if dut.ev_valid.value:
                self.events.append((int(dut.now.value), int(dut.ev_kind.value)))
            if dut.o_valid.value and dut.o_ready.value and dut.o_last.value:
                self.frame_ends.append(int(dut.now.value))


ARRIVE_DATA, DEPART_DATA = 0, 9


async def shaped_burst(dut, *, rate_bps, burst_bytes, accounting, sizes):
    """Send data frames of ``sizes`` back to back through the shaper, with
    the link accounting registers set from ``accounting``.

    Returns ``(cpb_q16, rows)`` with a row ``(depart_now, frame, ready_now)``
    per frame, in ``now`` units: ``ready_now`` is when the frame could start
    if the shaper were open: queued (its ARRIVE event) and the output free
    (the previous frame's last word gone)."""
    tb = TB(dut)
    probe = Probe(dut)
    await tb.reset()
    cpb = P.cpb_q16_for_rate(rate_bps)
    await tb.set_param("shaper_cpb_q16", cpb)
    await tb.set_param("shaper_burst_bytes", burst_bytes)
    for name, value in accounting.registers().items():
        await tb.set_param(name, P.param(name).to_word(value))
    await tb.set_param("ack_mode", CONSERVATIVE)
    model = tb.model(ack_mode=CONSERVATIVE)
    frames = data_frames(sizes)
    await send_paced(tb, frames)
    await tb.drain(quiet_cycles=50, timeout_cycles=10_000_000)
    model = scoreboard(tb, model, counters=await tb.counters())
    queued = [now for now, kind in probe.events if kind == ARRIVE_DATA]
    deps = [now for now, kind in probe.events if kind == DEPART_DATA]
    ends = probe.frame_ends
    assert len(queued) == len(deps) == len(ends) == len(frames)
    rows = [(deps[i], frames[i], max(queued[i], ends[i - 1] if i else 0)) for i in range(len(frames))]
    out_cycles = [e - d for d, e in zip(deps, ends)]
    dut._log.info(f"grant to last word out, cycles: {out_cycles} for frames of {sizes} bytes")
    return cpb, rows


def check_gcra(dut, rows, *, cpb, burst_bytes, accounting, latency=SHAPER_LATENCY_CYCLES + ARRIVAL_HOLD_CYCLES,
               tolerance=GCRA_REFERENCE_TOLERANCE):
    """Departures against :func:`gcra_departures` (0..``tolerance`` cycles
    late) and, frame by frame, against a GCRA charged at the hardware's own
    departures: never early, at most ``latency`` cycles late."""
    got = [r[0] for r in rows]
    frames = [r[1] for r in rows]
    ready = [r[2] for r in rows]
    want = gcra_departures(frames, ready, cpb_q16=cpb, burst_bytes=burst_bytes, accounting=accounting)
    diffs = [g - w for g, w in zip(got, want)]
    dut._log.info(f"departures - gcra_departures: {diffs}")
    assert all(0 <= d <= tolerance for d in diffs), (
        f"departures - gcra_departures = {diffs} (allowed 0..{tolerance} cycles)\n got {got}\n want {want}")
    shaper = GcraShaper(cpb_q16=cpb, burst_bytes=burst_bytes, accounting=accounting)
    late = []
    for n, (now, frame, rdy) in enumerate(zip(got, frames, ready)):
        earliest = max(rdy, shaper.wake_at())
        assert shaper.may_start(now), f"frame #{n} started at {now}, before the GCRA allows ({shaper.wake_at()})"
        late.append(now - earliest)
        shaper.start(now, frame)
    dut._log.info(f"cycles after the GCRA (charged at the actual departures) allowed each frame: {late}")
    assert all(d <= latency for d in late), f"departures late by {late} cycles (allowed {latency})"
    return got


@cocotb.test(timeout_time=1, timeout_unit="sec")
async def test_shaper_departures_follow_gcra_at_10_mbps(dut):
    """10 Mb/s (cpb_q16 = 2621440: 40 cycles of 50 MHz per byte), burst 2000 bytes,
    overhead 38 bytes on the frame: 18 data frames of 60..400 bytes sent at
    once. The first ones go on the burst, the rest one GCRA step apart;
    every departure within 0..17 cycles of ``gcra_departures`` (see
    :data:`GCRA_REFERENCE_TOLERANCE`), never before and at most 14 cycles
    (3, and an arrival's hold) after the GCRA allows it given the earlier
    departures; the rate once the
    bucket is spent within 1 % of 10 Mb/s."""
    rate, burst, acc = 10_000_000, 2000, LinkAccounting(overhead_bytes=38)
    sizes = [400, 60, 64, 128, 300, 60, 90, 400, 60, 200, 61, 333, 60, 150, 64, 250, 60, 399]
    cpb, rows = await shaped_burst(dut, rate_bps=rate, burst_bytes=burst, accounting=acc, sizes=sizes)
    assert P.F_SYS_HZ == 50_000_000 and cpb == 40 << 16
    check_gcra(dut, rows, cpb=cpb, burst_bytes=burst, accounting=acc)
    check_rate(dut, rows, accounting=acc, rate_bps=rate, burst_bytes=burst)


@cocotb.test(timeout_time=1, timeout_unit="sec")
async def test_shaper_departures_follow_gcra_at_a_fractional_rate(dut):
    """33 Mb/s: cpb_q16 = 794376 (12.12 cycles of 50 MHz per byte, the fraction
    in the 16 low bits), burst 1514 bytes, the default accounting (the frame + 24):
    14 frames of 60..1514 bytes; same checks."""
    rate, burst, acc = 33_000_000, 1514, LinkAccounting()
    sizes = [1514, 60, 1514, 700, 64, 1514, 1000, 60, 1514, 128, 1514, 61, 999, 1514]
    cpb, rows = await shaped_burst(dut, rate_bps=rate, burst_bytes=burst, accounting=acc, sizes=sizes)
    assert P.F_SYS_HZ == 50_000_000 and cpb == 794_376 and cpb & 0xFFFF
    check_gcra(dut, rows, cpb=cpb, burst_bytes=burst, accounting=acc)
    check_rate(dut, rows, accounting=acc, rate_bps=rate, burst_bytes=burst)


@cocotb.test(timeout_time=1, timeout_unit="sec")
@cocotb.parametrize(words=["pppoa-vcmux", "pppoe-ptm ether-vlan", "docsis", "overhead -40"])
async def test_shaper_departures_follow_gcra_with_cake_accounting(dut, words):
    """tc-cake's accounting (``words`` as tc reads them: ATM cells, PTM,
    docsis's mpu, a negative overhead on the IP packet) at 40 Mb/s (a quarter
    of the cycles 10 Mb/s takes; the 10 Mb/s test checks the slow rate), burst
    1514: 16 frames of 60..1514 bytes; same checks, in the charged bytes."""
    rate, burst, acc = 40_000_000, 1514, cake_accounting(words)
    sizes = [60, 1514, 60, 61, 64, 100, 101, 1000, 60, 1514, 90, 130, 700, 60, 1514, 66]
    cpb, rows = await shaped_burst(dut, rate_bps=rate, burst_bytes=burst, accounting=acc, sizes=sizes)
    check_gcra(dut, rows, cpb=cpb, burst_bytes=burst, accounting=acc)
    check_rate(dut, rows, accounting=acc, rate_bps=rate, burst_bytes=burst)


def check_rate(dut, rows, *, accounting, rate_bps, burst_bytes):
    """Charged rate (the link accounting's bytes) over the frames that waited
    for the shaper (the bucket spent: each starts one GCRA step after the
    previous), against ``rate_bps``. A frame waited when the GCRA, charged
    at the hardware's departures, would not let it start when it was ready
    (not when it only left late: an arrival's hold, say)."""
    shaper = GcraShaper(cpb_q16=P.cpb_q16_for_rate(rate_bps), burst_bytes=burst_bytes,
                        accounting=accounting)
    waited = []
    for dep, frame, ready in rows:
        waited.append(not shaper.may_start(ready))
        shaper.start(dep, frame)
    k = len(rows) - 1
    while k > 0 and waited[k - 1]:
        k -= 1
    assert len(rows) - k >= 5, f"only {len(rows) - k} frames waited for the shaper"
    bits = 8 * sum(accounting.charge(frame) for _, frame, _ in rows[k:-1])
    seconds = (rows[-1][0] - rows[k][0]) * CLK_NS * 1e-9
    measured = bits / seconds
    dut._log.info(f"rate over frames {k}..{len(rows) - 1} ({bits} bits): {measured:.0f} bit/s "
                  f"(configured {rate_bps})")
    assert abs(measured / rate_bps - 1) < 0.01, measured
