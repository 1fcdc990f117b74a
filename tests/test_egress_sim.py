"""The egress (``gateware.egress.Egress``) in the Amaranth simulator, alone.

A wrapper gives it the two memories of the core (the data ring and the ACK
slot buffers, with the same synchronous read ports), preloaded with random
words. The testbench starts frames as the queue manager does (a one-cycle
``start`` while ``busy`` is low) and takes the output under random
``o.ready``. Expectations, from the egress's port contract and spec section 1:

* each frame leaves byte-exact: the memory's bytes from its start (the ring
  wrapping around), ``keep`` all ones but on a partial last word (0b0001,
  0b0011, 0b0111), ``first`` on the first word only, ``last`` on the last;
* ``busy`` is high from the cycle after ``start`` until the cycle after the
  last word was taken, and only then;
* with the last word's handshake, once per frame and never otherwise:
  ``stat_frame`` with ``stat_bytes``; ``release_buf_en``/``release_buf_id``
  for an ACK buffer, ``data_frame_released`` for a data frame; and
  ``data_rd_ptr`` moves on by the frame's words (data frames only), on the
  next cycle.
"""

import random

import pytest
from amaranth.hdl import Elaboratable, Module
from amaranth.lib.memory import Memory

from blocksim import nwords, simulate
from ackfilter.gateware.egress import Egress
from ackfilter.params import ACK_SLOT_BYTES
from ackfilter.sim.wire import cycles_per_byte

RING_WORDS = 512
BUF_COUNT = 8
SLOT_WORDS = ACK_SLOT_BYTES // 4


class EgressBench(Elaboratable):
    """The egress with a preloaded data ring and ACK buffer memory."""

    def __init__(self, ring_init, ack_init):
        self.ring_init, self.ack_init = ring_init, ack_init
        self.egress = Egress(ring_bits=(RING_WORDS - 1).bit_length(),
                             buf_bits=(BUF_COUNT - 1).bit_length(), slot_words=SLOT_WORDS)

    def elaborate(self, platform):
        m = Module()
        m.submodules.egress = eg = self.egress
        m.submodules.ring = ring = Memory(shape=32, depth=RING_WORDS, init=self.ring_init)
        m.submodules.acks = acks = Memory(shape=32, depth=BUF_COUNT * SLOT_WORDS, init=self.ack_init)
        ring_r, ack_r = ring.read_port(), acks.read_port()
        m.d.comb += [
            ring_r.addr.eq(eg.ring_rd_addr), eg.ring_rd_data.eq(ring_r.data),
            ack_r.addr.eq(eg.ack_rd_addr), eg.ack_rd_data.eq(ack_r.data),
        ]
        return m


def frame_bytes(words, start, nbytes, depth):
    return b"".join(words[(start + k) % depth].to_bytes(4, "little") for k in range(nwords(nbytes)))[:nbytes]


def make_plan(rng, data_lengths, ack_lengths, data_start):
    """Frames to send, ``(is_ack, addr, nbytes)``: data frames one after the
    other in the ring from ``data_start`` (as the ingress stores them), ACKs
    in random buffers; interleaved at random."""
    data, at = [], data_start
    for n in data_lengths:
        data.append((False, at, n))
        at = (at + nwords(n)) % RING_WORDS
    acks = [(True, rng.randrange(BUF_COUNT), n) for n in ack_lengths]
    plan = []
    while data or acks:
        src = data if data and (not acks or rng.random() < 0.6) else acks
        plan.append(src.pop(0))
    return plan


def run_egress(plan, *, seed, ready_p, max_gap=3):
    """Send ``plan``; returns ``(frames, per_frame)``: the beats of each frame
    as received, and per frame what the strobes said and when."""
    rng = random.Random(seed)
    ring_init = [rng.getrandbits(32) for _ in range(RING_WORDS)]
    ack_init = [rng.getrandbits(32) for _ in range(BUF_COUNT * SLOT_WORDS)]
    top = EgressBench(ring_init, ack_init)
    dut = top.egress
    ptr_mod = 2 * RING_WORDS
    received = [[] for _ in plan]
    strobes = [[] for _ in plan]
    timing = [{} for _ in plan]

    async def bench(ctx):
        cur = None                   # frame being sent
        nxt = 0                      # next frame to start
        wait = 0
        busy_want = False
        rd_ptr = 0
        cycle = 0
        while nxt < len(plan) or cur is not None:
            cycle += 1
            assert cycle < 100_000, "the egress hangs"
            assert ctx.get(dut.busy) == busy_want, f"cycle {cycle}: busy {ctx.get(dut.busy)}"
            assert ctx.get(dut.data_rd_ptr) == rd_ptr, f"cycle {cycle}: data_rd_ptr"
            ctx.set(dut.start, 0)
            if cur is None and nxt < len(plan):
                if wait:
                    wait -= 1
                else:
                    is_ack, addr, n = plan[nxt]
                    ctx.set(dut.start, 1)
                    ctx.set(dut.start_is_ack, is_ack)
                    ctx.set(dut.start_addr, addr)
                    ctx.set(dut.start_bytes, n)
                    cur, nxt = nxt, nxt + 1
                    timing[cur]["start"] = cycle
                    wait = rng.randrange(max_gap + 1)
            elif rng.random() < 0.3:
                # Between starts the start fields carry junk.
                ctx.set(dut.start_is_ack, rng.getrandbits(1))
                ctx.set(dut.start_addr, rng.getrandbits(len(dut.start_addr)))
                ctx.set(dut.start_bytes, rng.getrandbits(16))
            ready = rng.random() < ready_p
            ctx.set(dut.o.ready, ready)
            took_last = False
            if ctx.get(dut.o.valid):
                assert cur is not None, f"cycle {cycle}: o.valid with no frame started"
                if ready:
                    beat = ctx.get(dut.o.payload)
                    received[cur].append((beat.data, beat.keep, beat.first, beat.last))
                    timing[cur].setdefault("first", cycle)
                    took_last = bool(beat.last)
            s = dict(stat=ctx.get(dut.stat_frame), bytes=ctx.get(dut.stat_bytes),
                     rel=ctx.get(dut.release_buf_en), rel_id=ctx.get(dut.release_buf_id),
                     data_rel=ctx.get(dut.data_frame_released))
            if s["stat"] or s["rel"] or s["data_rel"] or s["bytes"]:
                assert cur is not None, f"cycle {cycle}: strobes {s} with no frame"
                strobes[cur].append((cycle, s))
            await ctx.tick()
            if ctx.get(dut.start):
                busy_want = True
            if took_last:
                timing[cur]["last"] = cycle
                is_ack, _addr, n = plan[cur]
                if not is_ack:
                    rd_ptr = (rd_ptr + nwords(n)) % ptr_mod
                busy_want = False
                cur = None
        for _ in range(4):                                    # nothing more comes out
            ctx.set(dut.o.ready, 1)
            assert not ctx.get(dut.o.valid) and not ctx.get(dut.busy)
            await ctx.tick()

    simulate(top, bench, name="egress")
    return ring_init, ack_init, received, strobes, timing


def check(plan, ring_init, ack_init, received, strobes, timing):
    for i, ((is_ack, addr, n), beats, st, t) in enumerate(zip(plan, received, strobes, timing)):
        where = f"frame #{i} ({'ACK buffer' if is_ack else 'ring word'} {addr}, {n} bytes)"
        if is_ack:
            want = frame_bytes(ack_init, addr * SLOT_WORDS, n, BUF_COUNT * SLOT_WORDS)
        else:
            want = frame_bytes(ring_init, addr, n, RING_WORDS)
        nw = nwords(n)
        assert len(beats) == nw, f"{where}: {len(beats)} words, want {nw}"
        got = b"".join(d.to_bytes(4, "little") for d, _k, _f, _l in beats)[:n]
        assert got == want, f"{where}: bytes differ"
        keeps = [k for _d, k, _f, _l in beats]
        tail = n % 4
        assert keeps == [0b1111] * (nw - 1) + [(1 << tail) - 1 if tail else 0b1111], f"{where}: keep {keeps}"
        assert [f for _d, _k, f, _l in beats] == [1] + [0] * (nw - 1), f"{where}: first"
        assert [l for _d, _k, _f, l in beats] == [0] * (nw - 1) + [1], f"{where}: last"
        # The strobes: once, with the last word's handshake.
        want_st = dict(stat=1, bytes=n, rel=int(is_ack), rel_id=addr if is_ack else st[0][1]["rel_id"],
                       data_rel=int(not is_ack))
        assert [c for c, _s in st] == [t["last"]], f"{where}: strobes at {st}, last word at {t['last']}"
        assert st[0][1] == want_st, f"{where}: strobes {st[0][1]}, want {want_st}"


def lengths_plan(seed):
    rng = random.Random(seed)
    data_lengths = list(range(1, 72)) + [1514, 2048, 2047, 61, 60]
    ack_lengths = list(range(1, 18)) + [53, 54, 60, 64, 65, 66, 150, 253, 254, 255, 256]
    rng.shuffle(data_lengths)
    rng.shuffle(ack_lengths)
    return make_plan(rng, data_lengths, ack_lengths, data_start=RING_WORDS - 37)


@pytest.mark.parametrize("ready_p", [0.35, 0.8])
def test_frames_leave_byte_exact_under_back_pressure(ready_p):
    # Every length 1..71 (every keep, every tail), the largest frames, ACKs
    # of 1..256 bytes; the data frames wrap around the ring more than once.
    plan = lengths_plan(int(ready_p * 100))
    assert sum(nwords(n) for a, _s, n in plan if not a) > 2 * RING_WORDS
    result = run_egress(plan, seed=int(ready_p * 10), ready_p=ready_p)
    check(plan, *result)


def test_full_rate_without_back_pressure_and_back_to_back_starts():
    # o.ready always high, each frame started as soon as busy falls: the
    # contract above still holds, and a frame streams at least as fast as its words
    # take on the 1 Gb/s port (4 bytes at F_SYS_HZ / 125e6 cycles a byte:
    # 1.6 cycles at 50 MHz).
    plan = lengths_plan(3)
    ring_init, ack_init, received, strobes, timing = run_egress(plan, seed=4, ready_p=1.0, max_gap=0)
    check(plan, ring_init, ack_init, received, strobes, timing)
    for (is_ack, _a, n), t in zip(plan, timing):
        span = t["last"] - t["first"] + 1
        assert span <= 4 * nwords(n) * cycles_per_byte(), f"{n} bytes took {span} cycles from first to last word"
