"""The proofs and their mutations (``python -m ackfilter.formal``): the
small blocks' here, the queue manager's in :mod:`.queue`."""

from amaranth.hdl import *
from amaranth.hdl._ast import AnyConst, AnySeq   # (amaranth.asserts is deprecated; 0.5 keeps them here)

from .. import params as P
from ..gateware import csr, shaper
from ..gateware.lib import buffer_pool
from . import Proof
from .cells import CELL_PROOFS
from .egress import EGRESS_PROOFS
from .flowq import FLOWQ_PROOFS
from .give_back import GIVE_BACK_PROOFS
from .ingress import INGRESS_PROOFS
from .harness import popcount, mutant, stack_facts
from .queue import QUEUE_PROOFS

__all__ = ["PROOFS"]


class FreeStackProof(Elaboratable):
    """:class:`~ackfilter.gateware.lib.buffer_pool.FreeStack` of ``n`` ids
    (:func:`stack_facts`). Shadow: ``used``, the ids handed out and not
    given back. The neighbours take and give nothing before ``ready``, and
    give back only ids in use. Also proven: the free ids on the stack and
    the ids in use are ``n`` together (none lost)."""

    def __init__(self, *, n=4, initial=None, block=buffer_pool.FreeStack):
        self.dut = block(count=n, initial=initial)

    def elaborate(self, platform):
        m = Module()
        dut = self.dut
        n, k = dut.count, dut.initial
        m.submodules.dut = dut
        take, free_en, free_id = AnySeq(1), AnySeq(1), AnySeq(range(n))
        m.d.comb += [dut.take.eq(take), dut.free_en.eq(free_en), dut.free_id.eq(free_id)]
        used = Signal(n, init=((1 << n) - 1) & ~((1 << k) - 1))      # ids k.. start in use
        m.d.comb += [
            Assume(~ResetSignal()),
            Assume(dut.ready | (~take & ~free_en)),
            Assume(~free_en | (used.bit_select(free_id, 1) == 1)),
        ]
        taken = Mux(take & dut.alloc_valid, 1 << dut.alloc_id, 0)
        freed = Mux(free_en, 1 << free_id, 0)
        m.d.sync += used.eq((used | taken) & ~freed)
        stack_facts(m, dut, used)
        with m.If(dut.building):
            m.d.comb += Assert(used == used.init)
        with m.Else():
            m.d.comb += [
                Assert(dut.depth + popcount(used, n) == n),                          # never lost
                Cover(dut.depth == 0),
                Cover((dut.depth == 1) & take & free_en),
                Cover(used == 0b1010),
            ]
        return m


class BufferPoolProof(Elaboratable):
    """:class:`~ackfilter.gateware.lib.buffer_pool.BufferPool` of ``n`` ACK
    buffers, two stacks (:func:`stack_facts` each) with a give-back port
    each. Shadow: ``used``; buffer ``n - 1`` starts in use (the ingress's
    first staging buffer). The neighbours give back only buffers in use, two
    different ones when both ports give in one cycle. Proven besides: no id
    is on both stacks, and the free ids on them and those in use are ``n``
    together; the one offered comes from the first stack while it has one."""

    def __init__(self, *, n=5, block=buffer_pool.BufferPool):
        self.dut = block(count=n)

    def elaborate(self, platform):
        m = Module()
        dut = self.dut
        n = dut.count
        m.submodules.dut = dut
        take = AnySeq(1)
        fa, fa_id, fb, fb_id = AnySeq(1), AnySeq(range(n)), AnySeq(1), AnySeq(range(n))
        m.d.comb += [dut.take.eq(take), dut.free_a_en.eq(fa), dut.free_a_id.eq(fa_id),
                     dut.free_b_en.eq(fb), dut.free_b_id.eq(fb_id)]
        used = Signal(n, init=1 << (n - 1))
        m.d.comb += [
            Assume(~ResetSignal()),
            Assume(dut.ready | (~take & ~fa & ~fb)),
            Assume(~fa | (used.bit_select(fa_id, 1) == 1)),
            Assume(~fb | (used.bit_select(fb_id, 1) == 1)),
            Assume(~(fa & fb) | (fa_id != fb_id)),
        ]
        taken = Mux(take & dut.alloc_valid, 1 << dut.alloc_id, 0)
        freed = Mux(fa, 1 << fa_id, 0) | Mux(fb, 1 << fb_id, 0)
        m.d.sync += used.eq((used | taken) & ~freed)
        a, b = dut.stacks
        wa = stack_facts(m, a, used)
        wb = stack_facts(m, b, used)
        m.d.comb += Assert(a.depth + b.depth + popcount(used, n) == n)               # never lost
        with m.If(~dut.ready):
            m.d.comb += Assert(used == used.init)
        with m.Else():
            m.d.comb += [
                Assert(dut.alloc_valid == ((a.depth != 0) | (b.depth != 0))),
                Assert(~dut.alloc_valid | (used.bit_select(dut.alloc_id, 1) == 0)),   # never twice
            ]
            for i in range(n):
                for j in range(n):
                    with m.If((i < a.depth) & (j < b.depth)):
                        m.d.comb += Assert(wa[i] != wb[j])                            # never on both
            m.d.comb += [
                Cover(~dut.alloc_valid),
                Cover(fa & fb & take),
                Cover((a.depth == 0) & (b.depth == 2)),
            ]
        return m


class CSRParamsProof(Elaboratable):
    """The parameter registers of :class:`~ackfilter.gateware.csr.CSRBank`:
    whatever the bus writes, whenever, every parameter holds a value of its
    range (``params.PARAMS``), from reset on; and a write sets it, two
    cycles after the strobe, to the written word clamped to that range (a
    signed parameter reading the word as signed). Covers: each parameter at
    its maximum and at its minimum."""

    def __init__(self, *, block=None):
        self.dut = (block or csr.CSRBank)()

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        bus = dut.bus
        m.d.comb += [bus.addr.eq(AnySeq(len(bus.addr))), bus.w_stb.eq(AnySeq(1)),
                     bus.w_data.eq(AnySeq(len(bus.w_data))), bus.r_stb.eq(AnySeq(1)),
                     Assume(~ResetSignal())]
        # The writes, two cycles on: when the bank's value must show them.
        stb = [Signal(name=f"w_stb_{i}") for i in range(2)]
        addr = [Signal.like(bus.addr, name=f"w_addr_{i}") for i in range(2)]
        word = [Signal.like(bus.w_data, name=f"w_data_{i}") for i in range(2)]
        m.d.sync += [stb[0].eq(bus.w_stb), addr[0].eq(bus.addr), word[0].eq(bus.w_data),
                     stb[1].eq(stb[0]), addr[1].eq(addr[0]), word[1].eq(word[0])]
        init = Signal(2, init=0b11)              # the first two cycles: no write seen yet
        m.d.sync += init.eq(init >> 1)
        for p in P.PARAMS:
            v = dut.params[p.name]
            w = word[1].as_signed() if p.signed else word[1]
            want = Mux(w < p.minimum, p.minimum, Mux(w > p.maximum, p.maximum, w))
            m.d.comb += [Assert((v >= p.minimum) & (v <= p.maximum)),
                         Cover(v == p.maximum), Cover(v == p.minimum)]
            with m.If(~init[0] & stb[1] & (addr[1] == p.addr)):
                m.d.comb += Assert(v == want)
        return m


class CSRCounterReadProof(Elaboratable):
    """A 64-bit counter read through the 32-bit bus of
    :class:`~ackfilter.gateware.csr.CSRBank` (the whole bank): the low
    word's read returns the counter's value in block RAM as it was when
    read, and latches its high word; a later read of a high word returns
    that latched word, whatever the sweep adds meanwhile, so low then high
    is one 64-bit value (atomic). The bus strobes a read at most every
    other cycle, as its contract says; increments, writes and reads are
    otherwise free."""

    def __init__(self, *, block=None):
        self.dut = (block or csr.CSRBank)()

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        bus = dut.bus
        addr, r_stb = AnySeq(len(bus.addr)), AnySeq(1)
        prev_r = Signal()
        m.d.sync += prev_r.eq(r_stb)
        m.d.comb += [bus.addr.eq(addr), bus.r_stb.eq(r_stb), bus.w_stb.eq(AnySeq(1)),
                     bus.w_data.eq(AnySeq(len(bus.w_data))),
                     Assume(~ResetSignal()), Assume(~(r_stb & prev_r))]
        for c in P.COUNTERS:
            m.d.comb += dut.inc[c.name].eq(AnySeq(c.inc_bits))
        # The harness's own read of the RAM, at the bus's counter reads.
        counters = {(c.addr - P.COUNTER_BASE) // 2 for c in P.COUNTERS}
        is_counter = Array([C(int(i in counters), 1) for i in range(32)])[addr[1:6]]
        counter_region = addr[6:8] == 1          # 0x40 .. 0x7f
        lo_read = r_stb & counter_region & ~addr[0]
        hi_read = r_stb & counter_region & addr[0]
        rp = dut.values.read_port(transparent_for=())
        m.d.comb += [rp.addr.eq(addr[1:6]), rp.en.eq(lo_read)]
        lo_q, lo_q2, hi_q, hi_q2, at_q = Signal(), Signal(), Signal(), Signal(), Signal()
        hi_at_q, hi_at_q2 = Signal(), Signal()
        m.d.sync += [lo_q.eq(lo_read), at_q.eq(is_counter), lo_q2.eq(lo_q), hi_q.eq(hi_read),
                     hi_q2.eq(hi_q), hi_at_q.eq(is_counter), hi_at_q2.eq(hi_at_q)]
        word = Signal(64)                    # the RAM word the last low read got
        want_lo = Signal(32)
        with m.If(lo_q & at_q):
            m.d.sync += [word.eq(rp.data), want_lo.eq(rp.data[:32])]
        with m.Elif(lo_q):
            m.d.sync += [word.eq(0), want_lo.eq(0)]
        m.d.comb += Assert(dut.hi_latch == word[32:])
        with m.If(lo_q2):
            m.d.comb += Assert(bus.r_data == want_lo)
        with m.If(hi_q2):
            m.d.comb += Assert(bus.r_data == Mux(hi_at_q2, word[32:], 0))
        # (The values are 0 until the first sweep has cleared the RAM, 23
        # counters on: the covers show the reads, not their values.)
        m.d.comb += [Cover(hi_q2 & hi_at_q2), Cover(lo_q2 & at_q), Cover(lo_q2 & hi_read)]
        return m


class ShaperProof(Elaboratable):
    """The :class:`~ackfilter.gateware.shaper.Shaper`'s rate: from any cycle
    ``t1`` on (chosen freely), the frames that start cost the link, all
    but the one starting now, at most ``(now - t1)`` cycles plus the burst:
    ``sum(charge * cpb_q16) <= (now - t1) * 2^16 + burst_bytes * cpb_q16``
    at every start. The registers are any constants (the rate not 0), the
    egress starts a frame only when ``eligible``, frames are at most
    ``MAX_FRAME_BYTES``, and ``now`` counts cycles (below 2^44: 4 days)."""

    def __init__(self, *, block=None):
        self.dut = (block or shaper.Shaper)()

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        now = Signal(48)
        m.d.sync += now.eq(now + 1)
        cpb, burst = AnyConst(32), AnyConst(16)
        base, ovh, mpu, layer = (AnyConst(len(dut.charge_base)), AnyConst(signed(len(dut.overhead_bytes))),
                                 AnyConst(len(dut.mpu_bytes)), AnyConst(len(dut.link_layer)))
        charge, nbytes, l3 = AnySeq(1), AnySeq(16), AnySeq(16)
        o, mp = P.param("shaper_overhead_bytes"), P.param("shaper_mpu_bytes")
        m.d.comb += [
            dut.now.eq(now), dut.cpb_q16.eq(cpb), dut.burst_bytes.eq(burst),
            dut.charge_base.eq(base), dut.overhead_bytes.eq(ovh), dut.mpu_bytes.eq(mpu),
            dut.link_layer.eq(layer), dut.charge.eq(charge), dut.charge_bytes.eq(nbytes),
            dut.charge_l3_bytes.eq(l3),
            Assume(~ResetSignal()), Assume(now < (1 << 44)), Assume(cpb != 0),
            Assume((ovh >= o.minimum) & (ovh <= o.maximum) & (mpu <= mp.maximum)),
            Assume(base <= P.param("shaper_charge_base").maximum),
            Assume(layer <= P.param("shaper_link_layer").maximum),
            Assume(~charge | dut.eligible),
            Assume((nbytes <= P.MAX_FRAME_BYTES) & (l3 <= nbytes)),
        ]
        # The window: charges started at t1 or later, and their costs as the
        # shaper applies them to `tat` (a step after it tells the charge).
        t1 = AnyConst(48)
        lat = shaper.LinkCharge.LATENCY
        inwin = Signal(lat + 2)
        cost = Signal(64)
        spent = Signal(64)                   # the window's costs applied so far
        m.d.sync += inwin.eq(Cat(charge & (now >= t1), inwin[:-1]))
        with m.If(dut.charged):
            m.d.sync += cost.eq(dut.charged_bytes * cpb)
        with m.If(inwin[lat]):
            m.d.sync += spent.eq(spent + cost)
        t1_q16 = Cat(C(0, 16), t1)
        burst_q16 = burst * cpb
        first = Signal(init=1)               # the cycle after reset: registers still filling
        m.d.sync += first.eq(0)
        m.d.comb += [
            Assert((inwin & ~dut.step) == 0),
            Assert((spent == 0) | (now >= t1)),
            Assert((spent == 0) | (dut.tat >= t1_q16 + spent)),                 # tat owes the window
            Cover((spent != 0) & (inwin != 0)),
            Cover(charge & (now > t1) & (spent > burst_q16)),
        ]
        with m.If(charge & (now >= t1) & ~first):
            m.d.comb += Assert(spent <= Cat(C(0, 16), now - t1) + burst_q16)    # the rate
        return m


def _free_stack(**kw):
    return lambda: FreeStackProof(**kw)


def _free_stack_mutant(old, new):
    return lambda: FreeStackProof(block=mutant(buffer_pool, old, new).FreeStack)


def _pool_mutant(old, new):
    return lambda: BufferPoolProof(block=mutant(buffer_pool, old, new).BufferPool)


PROOFS = [
    Proof("free_stack", "the ACK queue's list nodes (FreeStack of 4): an offered id is never in use, "
          "the free ids on the stack and those in use are 4 together, the stack's are distinct; "
          "rebuilt after a reset before anything is offered", _free_stack(), depth=10,
          mutations={
              "a give-back written over the top (an id lost)": _free_stack_mutant(
                  "m.d.comb += [w.en.eq(1), w.addr.eq(up), w.data.eq(self.free_id)]",
                  "m.d.comb += [w.en.eq(1), w.addr.eq(top), w.data.eq(self.free_id)]"),
              "a take that does not pop (an id handed out twice)": _free_stack_mutant(
                  "m.d.sync += [depth.eq(depth - 1), top.eq(Mux(top == 0, 0, top - 1))]",
                  "m.d.sync += []"),
              "a take and a give-back in one cycle push (an id twice on the stack)": _free_stack_mutant(
                  "with m.Elif(self.free_en & take):",
                  "with m.Elif(self.free_en & take & 0):"),
          }),
    Proof("free_stack_partial", "FreeStack of 4 with 2 ids free after a reset (the ACK buffers' "
          "second stack starts empty, the first with all but one): as above", _free_stack(initial=2),
          depth=10),
    Proof("buffer_pool", "the ACK buffers (BufferPool of 5, two stacks, two give-back ports): a "
          "buffer offered is never in use, none is lost or on both stacks, both give-backs of a cycle "
          "kept", lambda: BufferPoolProof(), depth=12,
          mutations={
              "both give-backs into one stack (one lost)": _pool_mutant(
                  "b.free_en.eq(self.free_b_en), b.free_id.eq(self.free_b_id),",
                  "b.free_en.eq(0), b.free_id.eq(self.free_b_id),"),
              "the take goes to the other stack (a buffer handed out twice)": _pool_mutant(
                  "a.take.eq(self.take & from_a),",
                  "a.take.eq(self.take & ~from_a),"),
          }),
    Proof("csr_params", "the CSR bank's parameters: every one in its range (params.PARAMS) whatever "
          "the bus writes, signed ones sign-extended", lambda: CSRParamsProof(), depth=3,
          mutations={
              "writes not clamped": lambda: CSRParamsProof(block=mutant(csr, 
                  "w_clamped.eq(Mux(w_value < w_min, w_min, Mux(w_value > w_max, w_max, w_value))),",
                  "w_clamped.eq(Mux(w_value > w_max, w_max, w_value)),").CSRBank),
              "a signed write read unsigned": lambda: CSRParamsProof(block=mutant(csr,
                  "w_value.eq(Mux(w_signed, w_data.as_signed(), w_data)),",
                  "w_value.eq(w_data),").CSRBank),
          }),
    Proof("shaper_rate", "the shaper (GCRA): from any cycle on, the frames that start cost at most "
          "the elapsed cycles plus the burst (all but the one starting), for any registers and frames",
          lambda: ShaperProof(), depth=14,
          mutations={
              "a start allowed while the charge is still in the pipeline": lambda: ShaperProof(
                  block=mutant(shaper, "self.eligible.eq(~self.charge & ~step.any() & ",
                               "self.eligible.eq(~self.charge & ").Shaper),
              "the burst counted twice": lambda: ShaperProof(block=mutant(shaper,
                  "m.d.sync += due.eq(Mux(tat > burst_q16, tat - burst_q16, 0))",
                  "m.d.sync += due.eq(Mux(tat > (burst_q16 << 1), tat - (burst_q16 << 1), 0))").Shaper),
          }),
    Proof("csr_counter_read", "the CSR bank's counters: a low word's read returns the value in RAM "
          "then and latches its high word; the high word's read returns the latch: low then high is "
          "one 64-bit value, whatever the sweep adds between", lambda: CSRCounterReadProof(), depth=4,
          mutations={
              "the high word read live from the RAM (torn)": lambda: CSRCounterReadProof(
                  block=mutant(csr, "word_q.eq(Mux(counter_at & bus.addr[0], hi_latch, 0)),",
                               "word_q.eq(Mux(counter_at & bus.addr[0], rd.data[32:64], 0)),").CSRBank),
              "the latch not taken (a stale high word)": lambda: CSRCounterReadProof(
                  block=mutant(csr, "hi_latch.eq(Mux(lo_at_q, rd.data[32:64], 0))]",
                               "hi_latch.eq(hi_latch)]").CSRBank),
          }),
]

PROOFS += CELL_PROOFS
PROOFS += EGRESS_PROOFS
PROOFS += FLOWQ_PROOFS
PROOFS += GIVE_BACK_PROOFS
PROOFS += INGRESS_PROOFS
#: The queue manager's, last (the longest).
PROOFS += QUEUE_PROOFS
