"""Content-addressable table of the flows the queue manager tracks: those
with an ACK queued and, with the flow queues, those with data queued.

Holds a short tag (a hash of the flow key) per entry, so the match stays
small enough to route (docs/design.md, "Flow table": a 64 x 96-bit register CAM congests the
ECP5 router, 64 x 32 bits does not). The full key lives in the queue
manager's flow records in block RAM and is compared there: a tag hit is only
a candidate, so a hash collision can never cause a wrong supersession.

The table is *transposed* into LUT RAM, as FPGA CAMs usually are: the tag is
cut into 4-bit digits, and digit ``d`` has a 16-word RAM whose word ``v`` has
bit ``i`` set when entry ``i``'s digit ``d`` is ``v``. A lookup reads word
``tag[4d:4d+4]`` of every digit's RAM at once and ANDs them with the valid
bits: one match bit per entry, from ``tag_bits / 4`` LUT RAM reads, where a
register CAM has a ``tag_bits``-wide comparator per entry (on the 25F: 64 x
16-bit tags took 1,917 LUT4 and 1,173 FF as registers). Storing a tag
rewrites entry ``i``'s column of every RAM, one word per cycle: ``set``
takes :data:`SET_CYCLES` cycles, during which the lookup answers are
meaningless (``busy``). Clearing an entry only drops its valid bit.
"""

from amaranth.hdl import *
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..params import FLOW_ENTRIES
from .lib.prio import lowest_set

__all__ = ["FlowCAM", "DIGIT_BITS", "SET_CYCLES"]

#: Bits of a tag digit: each digit is the address of one LUT RAM (16 words).
DIGIT_BITS = 4
#: Cycles a ``set`` takes: one per word of a digit's RAM.
SET_CYCLES = 1 << DIGIT_BITS


class FlowCAM(wiring.Component):
    """A transposed LUT-RAM CAM of ``entries`` tags; the match and the
    priority encoders are separate pipeline stages.

    Ports
    -----
    lookup_tag : In(tag_bits)
        Compared against every entry; ``hit``/``hit_index`` answer the
        ``lookup_tag`` of two cycles before, against the table with that
        cycle's ``clear`` applied. The answer is meaningless for a
        ``lookup_tag`` presented while ``busy``.
    free, free_index : Out
        Registered: some entry is unused, and the lowest such entry.
    set_en, set_index, set_tag : In
        Store ``set_tag`` in entry ``set_index`` and mark it valid (``free``
        and ``free_index`` show it two cycles later). The tag is written over the next
        :data:`SET_CYCLES` cycles (``busy``): ``set_tag`` and ``set_index``
        are taken in the ``set_en`` cycle, and no ``set_en`` may come while
        ``busy``.
    clear_en, clear_index : In
        Mark entry ``clear_index`` invalid. ``clear`` and ``set`` may happen in
        one cycle; on the same entry ``set`` wins.
    busy : Out(1)
        A tag is being written.
    ending : Out(1)
        Registered: ``busy`` is in its last cycle (a ``lookup_tag``
        presented in the next one is answered).
    used : Out
        Number of valid entries (a status register), a cycle after the
        ``set`` or ``clear`` that changes it.
    """

    def __init__(self, *, entries=FLOW_ENTRIES, tag_bits=16):
        if not isinstance(entries, int) or entries < 2:
            raise TypeError(f"entries must be an integer >= 2, not {entries!r}")
        if not isinstance(tag_bits, int) or tag_bits <= 0 or tag_bits % DIGIT_BITS:
            raise TypeError(f"tag_bits must be a positive multiple of {DIGIT_BITS}, not {tag_bits!r}")
        self.entries = entries
        self.tag_bits = tag_bits
        idx = range(entries)
        super().__init__({
            "lookup_tag":  In(tag_bits),
            "hit":         Out(1),
            "hit_index":   Out(idx),
            "free":        Out(1),
            "free_index":  Out(idx),
            "set_en":      In(1),
            "set_index":   In(idx),
            "set_tag":     In(tag_bits),
            "clear_en":    In(1),
            "clear_index": In(idx),
            "busy":        Out(1),
            "ending":      Out(1),
            "used":        Out(range(entries + 1)),
        })
        # The valid bits and the word a set is at, here before elaboration
        # so that a proof (ackfilter.formal) can state what they keep.
        self.valid = Signal(entries)
        self.w_word = Signal(DIGIT_BITS)

    def elaborate(self, platform):
        m = Module()
        n = self.entries
        digits = self.tag_bits // DIGIT_BITS
        valid = self.valid

        # The write in progress: the entry, its tag, the word being rewritten.
        w_index = Signal(range(n))
        w_tag = Signal(self.tag_bits)
        w_word = self.w_word
        with m.If(self.set_en):
            m.d.sync += [self.busy.eq(1), w_index.eq(self.set_index), w_tag.eq(self.set_tag),
                         w_word.eq(0)]
        with m.Elif(self.busy):
            m.d.sync += w_word.eq(w_word + 1)
            with m.If(w_word == SET_CYCLES - 1):
                m.d.sync += self.busy.eq(0)
        m.d.sync += self.ending.eq(self.busy & ~self.set_en & (w_word == SET_CYCLES - 2))

        # One RAM per digit; each read port serves the lookup, or the write's
        # read-modify-write of word `w_word` (the entry's bit replaced, the
        # other entries' bits as read).
        w_onehot = Signal(n)
        m.d.comb += w_onehot.eq(1 << w_index)
        hits = Const(-1, n)
        for d in range(digits):
            ram = Memory(shape=n, depth=SET_CYCLES, init=[], attrs={"ram_style": "distributed"})
            m.submodules[f"digit{d}"] = ram
            rd = ram.read_port(domain="comb")
            wr = ram.write_port()
            digit = w_tag[DIGIT_BITS * d:DIGIT_BITS * (d + 1)]
            bit = Mux(digit == w_word, w_onehot, 0)
            m.d.comb += [
                rd.addr.eq(Mux(self.busy, w_word, self.lookup_tag[DIGIT_BITS * d:DIGIT_BITS * (d + 1)])),
                wr.addr.eq(w_word),
                wr.en.eq(self.busy),
                wr.data.eq(rd.data & ~w_onehot | bit),
            ]
            hits = hits & rd.data

        # Stage 1: the match vector, with this cycle's clear applied,
        # registered; the valid bits.
        match = Signal(n)
        clear_mask = Mux(self.clear_en, 1 << self.clear_index, 0)
        set_mask = Mux(self.set_en, 1 << self.set_index, 0)
        m.d.sync += [
            match.eq(hits & valid & ~clear_mask),
            valid.eq(valid & ~clear_mask | set_mask),
        ]

        # Stage 2: registered priority encoders (trees), the lowest matching
        # and the lowest free entry.
        any_match, hit_index = lowest_set(match)
        any_free, free_index = lowest_set(~valid)
        m.d.sync += [
            self.hit.eq(any_match),
            self.hit_index.eq(hit_index),
            self.free.eq(any_free),
            self.free_index.eq(free_index),
        ]

        # The number of valid entries, kept as a count: up by a set of a
        # free entry, down by a clear of a valid one that no set restores.
        # The strobes come late in their cycle (the queue manager's
        # decisions), so the count follows a cycle later: only a statistic
        # reads it, and the adder and its enable were the end of the
        # board's longest system-clock paths.
        set_new = self.set_en & ~valid.bit_select(self.set_index, 1)
        clear_old = (self.clear_en & valid.bit_select(self.clear_index, 1) &
                     ~(self.set_en & (self.set_index == self.clear_index)))
        up, down = Signal(), Signal()
        m.d.sync += [up.eq(set_new & ~clear_old), down.eq(clear_old & ~set_new)]
        with m.If(up):
            m.d.sync += self.used.eq(self.used + 1)
        with m.Elif(down):
            m.d.sync += self.used.eq(self.used - 1)
        return m
