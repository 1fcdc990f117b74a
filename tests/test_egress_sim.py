"""The egress (``gateware.egress.Egress``) in the Amaranth simulator, alone.

A wrapper gives it the memories of the core: the data buffer of ``CELLS``
cells and the ACK slot buffers, with the same synchronous read ports, and
the cells' ``next`` table with a combinational read port, as the free list
(``lib.cells.CellList``) has it. The testbench plays the ingress and the free
list: a few data frames ahead of the one being sent are stored, each in
cells drawn at random from those free (so a frame's cells are scattered and
every cell is used many times over), the frame's words at ``cell * 32 +
word`` and ``next`` linking its cells in order; everything else in the
memories is random junk (the ``next`` of a frame's last cell, the words
past its end), and a frame's cells are filled with new junk when they come
back. It starts frames as the queue manager does (a one-cycle ``start``
while ``busy`` is low; a data frame named by its first cell) and takes the
output under random ``o.ready``. Expectations, from the egress's port
contract and spec sections 1 and 12:

* each frame leaves byte-exact: its bytes from its cells in chain order (or
  from its ACK buffer), ``keep`` all ones but on a partial last word
  (0b0001, 0b0011, 0b0111), ``first`` on the first word only, ``last`` on
  the last;
* ``busy`` is high from the cycle after ``start`` until the cycle after the
  last word was taken, and only then;
* with the last word's handshake, once per frame and never otherwise:
  ``stat_frame`` with ``stat_bytes``; ``release_buf_en``/``release_buf_id``
  for an ACK buffer; ``release_cells_en`` with ``release_cells`` the data
  frame's first cell, last cell and cell count.
"""

import random

import pytest
from amaranth.hdl import Cat, Elaboratable, Module, Mux, Signal
from amaranth.lib.memory import Memory

from blocksim import nwords, simulate
from ackfilter.gateware.egress import Egress
from ackfilter.gateware.ingress import CELL_WORDS
from ackfilter.params import ACK_SLOT_BYTES, DATA_CELL_BYTES
from ackfilter.sim.wire import cycles_per_byte

CELLS = 32
BUF_COUNT = 8
SLOT_WORDS = ACK_SLOT_BYTES // 4
STORED_AHEAD = 3                    # data frames stored before their turn


def ncells(nbytes):
    """Cells a frame of ``nbytes`` bytes takes (spec section 12)."""
    return -(-nbytes // DATA_CELL_BYTES)


class EgressBench(Elaboratable):
    """The egress with the data buffer, the cells' ``next`` table and the ACK
    buffer memory, all preloaded."""

    def __init__(self, data_init, next_init, ack_init, *, steal=True):
        self.steal = steal
        self.egress = Egress(cells=CELLS, buf_bits=(BUF_COUNT - 1).bit_length(), slot_words=SLOT_WORDS)
        self.data = Memory(shape=32, depth=CELLS * CELL_WORDS, init=data_init)
        self.next = Memory(shape=range(CELLS), depth=CELLS, init=next_init)
        self.acks = Memory(shape=32, depth=BUF_COUNT * SLOT_WORDS, init=ack_init)

    def elaborate(self, platform):
        m = Module()
        m.submodules.egress = eg = self.egress
        lfsr = Signal(16, init=0xACE1)
        m.d.sync += lfsr.eq(Cat(lfsr[1:], lfsr[0] ^ lfsr[2] ^ lfsr[3] ^ lfsr[5]))
        m.submodules.data, m.submodules.next, m.submodules.acks = self.data, self.next, self.acks
        data_r, ack_r = self.data.read_port(), self.acks.read_port()
        next_r = self.next.read_port(domain="comb")
        m.d.comb += [
            data_r.addr.eq(eg.ring_rd_addr), eg.ring_rd_data.eq(data_r.data),
            next_r.addr.eq(eg.cell_addr),
            # The ingress has `next`'s read port first: with `steal`, a
            # pseudo-random quarter of the cycles; `cell_next` is then wrong.
            eg.cell_ok.eq(~(lfsr[0] & lfsr[1]) if self.steal else 1),
            eg.cell_next.eq(Mux(eg.cell_ok, next_r.data, ~next_r.data)),
            ack_r.addr.eq(eg.ack_rd_addr), eg.ack_rd_data.eq(ack_r.data),
        ]
        return m


def make_plan(rng, data_lengths, ack_lengths):
    """Frames to send, ``(is_ack, buf, nbytes)``: the data frames (their cells
    are drawn when they are stored), ACKs in random buffers; interleaved at
    random."""
    data = [(False, None, n) for n in data_lengths]
    acks = [(True, rng.randrange(BUF_COUNT), n) for n in ack_lengths]
    plan = []
    while data or acks:
        src = data if data and (not acks or rng.random() < 0.6) else acks
        plan.append(src.pop(0))
    return plan


def run_egress(plan, *, seed, ready_p, max_gap=3):
    """Send ``plan``; returns ``(ack_init, stored, received, strobes, timing)``:
    the ACK buffers, per data frame its cells and bytes, and per frame the
    beats received and what the strobes said and when."""
    rng = random.Random(seed)
    data_init = [rng.getrandbits(32) for _ in range(CELLS * CELL_WORDS)]
    next_init = [rng.randrange(CELLS) for _ in range(CELLS)]
    ack_init = [rng.getrandbits(32) for _ in range(BUF_COUNT * SLOT_WORDS)]
    top = EgressBench(data_init, next_init, ack_init)
    dut = top.egress
    received = [[] for _ in plan]
    strobes = [[] for _ in plan]
    timing = [{} for _ in plan]
    stored = {}                      # plan index -> (cells, bytes) of a data frame

    async def bench(ctx):
        free = list(range(CELLS))    # cells no stored frame holds
        cur = None                   # frame being sent
        nxt = 0                      # next frame to start
        wait = 0
        busy_want = False
        cycle = 0

        def junk(cells):
            for c in cells:
                ctx.set(top.next.data[c], rng.randrange(CELLS))
                for w in range(CELL_WORDS):
                    ctx.set(top.data.data[c * CELL_WORDS + w], rng.getrandbits(32))

        def store(i):
            """The ingress writes data frame ``i`` into cells from the free list."""
            n = plan[i][2]
            cells = rng.sample(free, ncells(n))
            for c in cells:
                free.remove(c)
            junk(cells)
            body = rng.randbytes(n)
            for w in range(nwords(n)):
                word = int.from_bytes(body[4 * w:4 * w + 4].ljust(4, rng.randbytes(1)), "little")
                ctx.set(top.data.data[cells[w // CELL_WORDS] * CELL_WORDS + w % CELL_WORDS], word)
            for a, b in zip(cells, cells[1:]):
                ctx.set(top.next.data[a], b)
            stored[i] = (cells, body)

        ahead = 0                    # frames stored so far
        while nxt < len(plan) or cur is not None:
            cycle += 1
            assert cycle < 100_000, "the egress hangs"
            assert ctx.get(dut.busy) == busy_want, f"cycle {cycle}: busy {ctx.get(dut.busy)}"
            # The ingress keeps a few data frames stored ahead of their turn.
            while ahead < len(plan) and ahead < nxt + 1 + STORED_AHEAD:
                if not plan[ahead][0]:
                    store(ahead)
                ahead += 1
            ctx.set(dut.start, 0)
            if cur is None and nxt < len(plan):
                if wait:
                    wait -= 1
                else:
                    is_ack, buf, n = plan[nxt]
                    ctx.set(dut.start, 1)
                    ctx.set(dut.start_is_ack, is_ack)
                    ctx.set(dut.start_addr, buf if is_ack else stored[nxt][0][0])
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
            rel_cells = ctx.get(dut.release_cells)
            s = dict(stat=ctx.get(dut.stat_frame), bytes=ctx.get(dut.stat_bytes),
                     rel=ctx.get(dut.release_buf_en), rel_id=ctx.get(dut.release_buf_id),
                     cells_rel=ctx.get(dut.release_cells_en),
                     cells=(rel_cells.first, rel_cells.last, rel_cells.n))
            if s["stat"] or s["rel"] or s["cells_rel"] or s["bytes"]:
                assert cur is not None, f"cycle {cycle}: strobes {s} with no frame"
                strobes[cur].append((cycle, s))
            await ctx.tick()
            if ctx.get(dut.start):
                busy_want = True
            if took_last:
                timing[cur]["last"] = cycle
                if s["cells_rel"] and cur in stored:
                    # The free list has the frame's cells back: new junk in them.
                    cells = stored[cur][0]
                    junk(cells)
                    free.extend(cells)
                busy_want = False
                cur = None
        for _ in range(4):                                    # nothing more comes out
            ctx.set(dut.o.ready, 1)
            assert not ctx.get(dut.o.valid) and not ctx.get(dut.busy)
            await ctx.tick()

    simulate(top, bench, name="egress")
    return ack_init, stored, received, strobes, timing


def check(plan, ack_init, stored, received, strobes, timing):
    for i, ((is_ack, buf, n), beats, st, t) in enumerate(zip(plan, received, strobes, timing)):
        if is_ack:
            where = f"frame #{i} (ACK buffer {buf}, {n} bytes)"
            want = b"".join(ack_init[buf * SLOT_WORDS + k].to_bytes(4, "little") for k in range(nwords(n)))[:n]
        else:
            cells, want = stored[i]
            where = f"frame #{i} (cells {cells}, {n} bytes)"
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
        s = st[0][1] if st else {}
        want_st = dict(stat=1, bytes=n, rel=int(is_ack), rel_id=buf if is_ack else s.get("rel_id"),
                       cells_rel=int(not is_ack),
                       cells=s.get("cells") if is_ack else (cells[0], cells[-1], len(cells)))
        assert [c for c, _s in st] == [t["last"]], f"{where}: strobes at {st}, last word at {t['last']}"
        assert s == want_st, f"{where}: strobes {s}, want {want_st}"


def lengths_plan(seed):
    rng = random.Random(seed)
    data_lengths = list(range(1, 72)) + [1514, 2048, 2047, 61, 60, 127, 128, 129, 255, 256, 257,
                                            511, 512, 513, 1023, 1024, 1025, 1500, 1800]
    ack_lengths = list(range(1, 18)) + [53, 54, 60, 64, 65, 66, 150, 253, 254, 255, 256]
    rng.shuffle(data_lengths)
    rng.shuffle(ack_lengths)
    return make_plan(rng, data_lengths, ack_lengths)


@pytest.mark.parametrize("ready_p", [0.35, 0.8])
def test_frames_leave_byte_exact_under_back_pressure(ready_p):
    # Every length 1..71 (every keep, every tail), the largest frames, a
    # cell's end and its neighbours, ACKs of 1..256 bytes; each data frame
    # in scattered cells, the cells used more than twice over.
    plan = lengths_plan(int(ready_p * 100))
    assert sum(ncells(n) for a, _b, n in plan if not a) > 2 * CELLS
    result = run_egress(plan, seed=int(ready_p * 10), ready_p=ready_p)
    check(plan, *result)
    stored = result[1]
    assert sum(any(b != a + 1 for a, b in zip(c, c[1:])) for c, _b in stored.values()) > 5


def test_full_rate_without_back_pressure_and_back_to_back_starts():
    # o.ready always high, each frame started as soon as busy falls: the
    # contract above still holds, and a frame streams at least as fast as its words
    # take on the 1 Gb/s port (4 bytes at F_SYS_HZ / 125e6 cycles a byte:
    # 1.6 cycles at 50 MHz), whatever cells it is in.
    plan = lengths_plan(3)
    ack_init, stored, received, strobes, timing = run_egress(plan, seed=4, ready_p=1.0, max_gap=0)
    check(plan, ack_init, stored, received, strobes, timing)
    for (is_ack, _a, n), t in zip(plan, timing):
        span = t["last"] - t["first"] + 1
        assert span <= 4 * nwords(n) * cycles_per_byte(), f"{n} bytes took {span} cycles from first to last word"
