# amaranth: UnusedElaboratable=no
# (The harness elaborates the block itself, to reach its memories.)
"""The data buffer's cells (:class:`~ackfilter.gateware.lib.cells.CellList`):
the free list stays a well-formed chain and never holds a cell of a queued
frame, through any takes and give-backs its neighbours' contracts allow.

The harness elaborates the block itself and reads its ``next`` memory at
every address (``CellList.internals``), as the queue manager's proof does.
"""

from functools import reduce
from operator import or_

from amaranth.hdl import *
from amaranth.hdl._ast import AnySeq

from ..gateware.lib import cells
from . import Proof
from .harness import mutant, popcount

__all__ = ["CellListProof", "CELL_PROOFS"]


class CellListProof(Elaboratable):
    """:class:`~ackfilter.gateware.lib.cells.CellList` of ``n`` cells, frames
    of at most ``max_cells``. Shadow: ``used``, the cells of frames taken
    and not yet given back, and ``handed``, those of a drop the block holds
    for a cycle (a release took its write port). The neighbours keep their
    contracts: nothing before ``ready``; the ingress keeps a frame of
    ``1 .. free - 1`` cells written from ``head`` on along ``next``
    (``take_head`` the cell after its last); a release or a drop gives back
    a chain of cells in use (``first``, ``n`` cells along ``next``,
    ``last``), a release and a drop of one cycle different ones, each port
    at most every other cycle.

    Proven: walking ``free`` steps of ``next`` from ``head`` meets ``free``
    different cells and ends at ``tail``; no cell in use or handed is among
    them; the free cells, those in use and those handed are ``n`` together
    (none lost); and a cell in use keeps its ``next`` (a queued frame's
    chain never changes under its reader)."""

    def __init__(self, *, n=5, max_cells=2, module=cells):
        self.dut = module.CellList(cells=n, max_cells=max_cells)

    def elaborate(self, platform):
        m = Module()
        dut = self.dut
        n, mc = dut.cells, dut.max_cells
        m.submodules.dut = dut.elaborate(platform)
        v = dut.internals

        take_en, take_n, take_head = AnySeq(1), AnySeq(range(mc + 1)), AnySeq(range(n))
        rel_en, dis_en = AnySeq(1), AnySeq(1)
        rel, dis = AnySeq(len(dut.rel.as_value())), AnySeq(len(dut.dis.as_value()))
        m.d.comb += [dut.take_en.eq(take_en), dut.take_n.eq(take_n), dut.take_head.eq(take_head),
                     dut.rel_en.eq(rel_en), dut.rel.eq(rel), dut.dis_en.eq(dis_en), dut.dis.eq(dis),
                     dut.ing_req.eq(AnySeq(1)), dut.ing_addr.eq(AnySeq(range(n))),
                     dut.eg_addr.eq(AnySeq(range(n)))]

        # `next` at every address, walked through multiplexers.
        words = []
        for a in range(n):
            rp = v.nxt.read_port(domain="comb")
            m.d.comb += rp.addr.eq(a)
            words.append(rp.data)
        nxt = Array(words)

        def walk(start, steps):
            p = [start]
            for _ in range(steps):
                p.append(nxt[p[-1]])
            return p

        def cells_of(p, count):
            return reduce(or_, [Mux(i < count, 1 << p[i], 0) for i in range(len(p))])

        # The free list: p[0] = head ... p[free - 1] = tail.
        free = dut.free
        p = walk(dut.head, n - 1)
        on_list = Signal(n)
        m.d.comb += on_list.eq(cells_of(p, free))

        used = Signal(n)
        handed = Signal(n)

        # The ingress's contract.
        m.d.comb += [
            Assume(~ResetSignal()),
            Assume(dut.ready | (~take_en & ~rel_en & ~dis_en)),
            Assume(~take_en | ((take_n >= 1) & (take_n < free))),
            Assume(~take_en | (dut.take_head == Array(p)[take_n])),
        ]
        # A give-back: a chain of cells in use, not handed already.
        gives = {}
        for name, en, chain in (("rel", rel_en, dut.rel), ("dis", dis_en, dut.dis)):
            q = walk(chain.first, mc - 1)
            chain_cells = Signal(n, name=f"{name}_cells")
            m.d.comb += chain_cells.eq(cells_of(q, chain.n))
            gives[name] = chain_cells
            m.d.comb += Assume(~en | ((chain.n >= 1) & (chain.n <= mc) & (chain.first < n) & (chain.last < n)
                                      & (Array(q)[chain.n - 1] == chain.last)
                                      & ((chain_cells & ~used) == 0) & ((chain_cells & handed) == 0)))
            for i in range(mc):
                for j in range(i + 1, mc):
                    with m.If(en & (j < chain.n)):
                        m.d.comb += Assume(q[i] != q[j])
            was = Signal(name=f"{name}_was")
            m.d.sync += was.eq(en)
            m.d.comb += Assume(~(was & en))                     # at most every other cycle
        m.d.comb += Assume(~(rel_en & dis_en) | ((gives["rel"] & gives["dis"]) == 0))

        # The shadow. A drop in a release's cycle is handed over and waits;
        # the cells of a give-back leave `used` as it is made.
        taken = Mux(take_en, cells_of(p, take_n), 0)
        rel_cells = Mux(rel_en, gives["rel"], 0)
        dis_cells = Mux(dis_en, gives["dis"], 0)
        m.d.sync += [
            used.eq((used | taken) & ~rel_cells & ~dis_cells),
            handed.eq(Mux(rel_en | v.held_en, dis_cells, 0)),
        ]

        # A cell in use keeps its next (remembered as it was taken).
        kept = [Signal(range(n), name=f"kept{i}") for i in range(n)]
        for i in range(n):
            with m.If(taken.bit_select(i, 1)):
                m.d.sync += kept[i].eq(words[i])

        with m.If(v.init_busy):
            # (Rewriting the chain 0 -> 1 -> ... -> n - 1 -> 0, a cell a cycle.)
            m.d.comb += [Assert(~dut.ready), Assert(free == n), Assert(used == 0), Assert(handed == 0),
                         Assert((dut.head == 0) & (v.tail == n - 1) & (v.init_i < n) & ~v.held_en)]
            for i in range(n):
                with m.If(i < v.init_i):
                    m.d.comb += Assert(words[i] == (i + 1) % n)
        with m.Else():
            m.d.comb += [
                Assert(dut.ready),
                *[Assert(w < n) for w in words],
                Assert((dut.head < n) & (v.tail < n)),
                Assert((free >= 1) & (free <= n)),
                Assert(Array(p)[free - 1] == v.tail),
                Assert(v.held_en == (handed != 0)),
                Assert((on_list & used) == 0),
                Assert((on_list & handed) == 0),
                Assert((used & handed) == 0),
                Assert(free + popcount(used, n) + popcount(handed, n) == n),      # none lost
            ]
            with m.If(v.held_en):
                q = walk(v.held.first, mc - 1)
                m.d.comb += [Assert(cells_of(q, v.held.n) == handed),
                             Assert(Array(q)[v.held.n - 1] == v.held.last),
                             Assert((v.held.n >= 1) & (v.held.n <= mc)),
                             Assert((v.held.first < n) & (v.held.last < n))]
            for i in range(n):
                for j in range(i + 1, n):
                    with m.If(j < free):
                        m.d.comb += Assert(p[i] != p[j])
                with m.If(used.bit_select(i, 1)):
                    m.d.comb += Assert(words[i] == kept[i])
            m.d.comb += [
                Cover(free == 1),                                   # all but the tail in use
                Cover(take_en & rel_en & dis_en),                   # a take and both give-backs
                Cover(v.held_en & (popcount(handed, n) == mc)),     # a drop of 2 cells held
            ]
        return m


def _mutant(old, new):
    return lambda: CellListProof(module=mutant(cells, old, new))


CELL_PROOFS = [
    Proof("cell_list", "the data buffer's cells (CellList of 5, frames of up to 2 cells): the free "
          "list is a chain of `free` different cells from head to tail, holds no cell of a queued "
          "frame or of a drop waiting its turn, none is lost, and a queued frame's chain never "
          "changes", lambda: CellListProof(), depth=8,
          mutations={
              "a give-back linked at the head (the free list cut)": _mutant(
                  "m.d.comb += [w.en.eq(give_en), w.addr.eq(tail), w.data.eq(give.first)]",
                  "m.d.comb += [w.en.eq(give_en), w.addr.eq(self.head), w.data.eq(give.first)]"),
              "a drop in a release's cycle not held (its cells lost)": _mutant(
                  "m.d.sync += [held_en.eq(self.dis_en), held.eq(self.dis)]\n        with m.Elif",
                  "m.d.sync += [held_en.eq(0), held.eq(self.dis)]\n        with m.Elif"),
              "the tail left where it was (the next give-back overwrites a free cell's link)": _mutant(
                  "m.d.sync += tail.eq(give.last)", "m.d.sync += tail.eq(tail)"),
              "a take not counted (the ingress may write cells of queued frames)": _mutant(
                  "- Mux(self.take_en, self.take_n, 0))", ")"),
          }),
]
