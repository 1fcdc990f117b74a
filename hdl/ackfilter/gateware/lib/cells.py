"""The data buffer's cells: a free list linked through one LUT RAM.

The data buffer is ``cells`` cells of ``DATA_CELL_BYTES`` (spec section 12).
A frame is a chain of cells linked by ``next``; so is the free list, from
``head`` to ``tail``. The ingress writes a frame into the free list's cells
from ``head`` on as it arrives, following ``next``, and commits it by moving
``head`` past its last cell (a frame it does not keep costs nothing: the
next one is written over it). A frame that has left, or is dropped, is
given back whole in one cycle: ``next[tail]`` is its first cell and its
last becomes ``tail``. Nothing is ever copied, and a cell's ``next`` is
written only while the cell is the free list's tail, so a queued frame's
chain never changes under its reader.

The free list always keeps one cell (the tail) the ingress may not write:
``tail`` is then always a free cell to append to.
"""

from types import SimpleNamespace

from amaranth.hdl import *
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["CellList", "chain_layout"]


def chain_layout(cells, max_cells):
    """A chain of cells: its first and last cell and how many."""
    return data.StructLayout({"first": range(cells), "last": range(cells), "n": range(max_cells + 1)})


class CellList(wiring.Component):
    """``cells`` cells, all free after reset (chain ``0 -> 1 -> ... -> cells - 1``).

    Parameters
    ----------
    cells : int        cells in the buffer
    max_cells : int    most cells of one frame

    Ports
    -----
    head : Out         the first free cell (the ingress writes there first)
    free : Out         free cells (the ingress may write ``free - 1`` of them)
    ing_req, ing_addr : In   the ingress reads ``next[ing_addr]`` (it has the port when it asks)
    eg_addr : In             else the egress reads ``next[eg_addr]`` (``eg_ok``)
    rd_next, eg_ok : Out     ``next`` at the address read, combinational (one read port)
    take_en, take_head, take_n : In   the ingress kept a frame of ``take_n`` cells from
                       ``head`` on; ``take_head`` is the cell after its last
    rel_en, rel : In   a chain the egress sent is free again
    dis_en, dis : In   a chain the queue manager dropped is free again
                       (each of ``rel_en`` and ``dis_en`` at most every other
                       cycle; in the same cycle, ``dis`` waits one)
    ready : Out        the free list is built: after a reset ``next`` is
                       rewritten to the chain ``0 -> 1 -> ... -> cells - 1``,
                       a cell a cycle (a reset finds it in whatever order the
                       frames left), and nothing may take or give cells before
    """

    def __init__(self, *, cells, max_cells):
        if not isinstance(cells, int) or not 4 <= cells <= 4096:
            raise TypeError(f"cells must be an integer 4..4096, not {cells!r}")
        if not isinstance(max_cells, int) or not 1 <= max_cells < cells:
            raise TypeError(f"max_cells must be an integer 1..{cells - 1}, not {max_cells!r}")
        self.cells = cells
        self.max_cells = max_cells
        ids = range(cells)
        chain = chain_layout(cells, max_cells)
        super().__init__({
            "head":      Out(ids),
            "free":      Out(range(cells + 1), init=cells),
            "ing_req":   In(1),
            "ing_addr":  In(ids),
            "eg_addr":   In(ids),
            "eg_ok":     Out(1),
            "rd_next":   Out(ids),
            "take_en":   In(1),
            "take_head": In(ids),
            "take_n":    In(range(max_cells + 1)),
            "rel_en":    In(1),
            "rel":       In(chain),
            "dis_en":    In(1),
            "dis":       In(chain),
            "ready":     Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        n = self.cells
        m.submodules.next = nxt = Memory(shape=range(n), depth=n, init=[(i + 1) % n for i in range(n)],
                                         attrs={"ram_style": "distributed"})
        w = nxt.write_port()
        # One read port (a LUT RAM's copy per port): the ingress reads once
        # per cell it fills and once per frame; the egress walks a frame's
        # chain when the ingress does not read.
        r = nxt.read_port(domain="comb")
        m.d.comb += [r.addr.eq(Mux(self.ing_req, self.ing_addr, self.eg_addr)), self.rd_next.eq(r.data),
                     self.eg_ok.eq(~self.ing_req)]

        tail = Signal(range(n), init=n - 1)
        # A drop in the cycle of a release waits here one cycle.
        held_en = Signal()
        held = Signal.like(self.dis)
        give = Signal.like(self.dis)
        give_en = Signal()
        with m.If(self.rel_en):
            m.d.comb += [give_en.eq(1), give.eq(self.rel)]
            m.d.sync += [held_en.eq(self.dis_en), held.eq(self.dis)]
        with m.Elif(held_en):
            m.d.comb += [give_en.eq(1), give.eq(held)]
            m.d.sync += [held_en.eq(self.dis_en), held.eq(self.dis)]
        with m.Else():
            m.d.comb += [give_en.eq(self.dis_en), give.eq(self.dis)]
        m.d.comb += [w.en.eq(give_en), w.addr.eq(tail), w.data.eq(give.first)]
        # After a reset: the chain rewritten, a cell a cycle.
        init_busy = Signal(init=1)
        init_i = Signal(range(n))
        m.d.comb += self.ready.eq(~init_busy)
        with m.If(init_busy):
            m.d.comb += [w.en.eq(1), w.addr.eq(init_i), w.data.eq(Mux(init_i == n - 1, 0, init_i + 1))]
            m.d.sync += init_i.eq(init_i + 1)
            with m.If(init_i == n - 1):
                m.d.sync += init_busy.eq(0)
        with m.If(give_en):
            m.d.sync += tail.eq(give.last)
        with m.If(self.take_en):
            m.d.sync += self.head.eq(self.take_head)
        m.d.sync += self.free.eq(self.free + Mux(give_en, give.n, 0) - Mux(self.take_en, self.take_n, 0))
        # Every name above, for the proof (ackfilter.formal.cells), which
        # elaborates this and then states facts about them.
        self.internals = SimpleNamespace(**locals())
        return m
