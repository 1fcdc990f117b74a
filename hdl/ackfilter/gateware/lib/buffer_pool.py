"""Allocators of numbered resources: the ACK slot buffers (a free bitmap with
a priority encoder: two frees and a take in one cycle) and the ACK queue's
list nodes (a stack in LUT RAM: one operation per cycle)."""

from amaranth.hdl import *
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .prio import lowest_set

__all__ = ["BufferPool", "FreeStack"]


class BufferPool(wiring.Component):
    """``count`` buffers; buffer ``count - 1`` starts out taken (the first
    staging buffer of the ingress), all others free.

    Ports
    -----
    alloc_valid, alloc_id : Out   a free buffer (registered, lowest id)
    take : In(1)                  ``alloc_id`` is now in use (next offer differs)
    free_a_en, free_a_id, free_b_en, free_b_id : In   buffers given back
    """

    def __init__(self, *, count):
        if not isinstance(count, int) or count < 2:
            raise TypeError(f"count must be an integer >= 2, not {count!r}")
        self.count = count
        ids = range(count)
        super().__init__({
            "alloc_valid": Out(1),
            "alloc_id":    Out(ids),
            "take":        In(1),
            "free_a_en":   In(1),
            "free_a_id":   In(ids),
            "free_b_en":   In(1),
            "free_b_id":   In(ids),
        })

    def elaborate(self, platform):
        m = Module()
        n = self.count
        free = Signal(n, init=(1 << (n - 1)) - 1)
        # Frees are registered first (as a bitmap): a buffer given back is
        # offered one cycle later, which costs nothing and keeps the queue
        # manager's decision logic out of this block's timing path.
        returned = Signal(n)
        m.d.sync += returned.eq(Cat((self.free_a_en & (self.free_a_id == i)) |
                                    (self.free_b_en & (self.free_b_id == i)) for i in range(n)))
        offered = Cat(self.alloc_id == i for i in range(n))

        # Both possible next bitmaps and their lowest free buffer are worked
        # out from registers; ``take`` (late: it depends on the entry FIFO's
        # ``w_rdy`` through the ingress) only selects between them.
        for nxt, cond in (((free & ~offered) | returned, self.take),
                          (free | returned, ~self.take)):
            any_free, lowest = lowest_set(nxt)
            with m.If(cond):
                m.d.sync += [free.eq(nxt), self.alloc_valid.eq(any_free), self.alloc_id.eq(lowest)]
        return m


class FreeStack(wiring.Component):
    """``count`` ids kept free on a stack in LUT RAM: the cheap allocator
    where ids are taken and given back at most one per cycle (the ACK
    queue's list nodes). All ids start out free.

    Ports
    -----
    alloc_valid, alloc_id : Out   the id on top of the stack (read from LUT RAM
                                  at a registered address)
    take : In(1)                  ``alloc_id`` is now in use
    free_en, free_id : In         an id given back; never in a cycle with ``take``
    """

    def __init__(self, *, count):
        if not isinstance(count, int) or count < 2:
            raise TypeError(f"count must be an integer >= 2, not {count!r}")
        self.count = count
        ids = range(count)
        super().__init__({
            "alloc_valid": Out(1),
            "alloc_id":    Out(ids),
            "take":        In(1),
            "free_en":     In(1),
            "free_id":     In(ids),
        })

    def elaborate(self, platform):
        m = Module()
        n = self.count
        m.submodules.stack = stack = Memory(shape=range(n), depth=n, init=list(range(n)),
                                            attrs={"ram_style": "distributed"})
        w = stack.write_port()
        r = stack.read_port(domain="comb")
        depth = Signal(range(n + 1), init=n)      # free ids on the stack
        top = Signal(range(n), init=n - 1)        # the top's address (depth - 1 when depth > 0)
        up = Mux(depth == 0, 0, top + 1)
        m.d.comb += [r.addr.eq(top), self.alloc_id.eq(r.data), self.alloc_valid.eq(depth != 0)]
        with m.If(self.free_en):
            m.d.comb += [w.en.eq(1), w.addr.eq(up), w.data.eq(self.free_id)]
            m.d.sync += [depth.eq(depth + 1), top.eq(up)]
        with m.Elif(self.take):
            m.d.sync += [depth.eq(depth - 1), top.eq(Mux(top == 0, 0, top - 1))]
        return m
