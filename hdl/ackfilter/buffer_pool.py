"""Allocator of numbered resources (the ACK slot buffers, the ACK queue's
list nodes): a free bitmap with a priority encoder."""

from amaranth.hdl import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .prio import lowest_set

__all__ = ["BufferPool"]


class BufferPool(wiring.Component):
    """``count`` buffers; the last ``reserved`` start out taken (for the ACK
    buffers: the first staging buffer of the ingress), all others free.

    Ports
    -----
    alloc_valid, alloc_id : Out   a free buffer (registered, lowest id)
    take : In(1)                  ``alloc_id`` is now in use (next offer differs)
    free_a_en, free_a_id, free_b_en, free_b_id : In   buffers given back
    """

    def __init__(self, *, count, reserved=1):
        if not isinstance(count, int) or count < 2:
            raise TypeError(f"count must be an integer >= 2, not {count!r}")
        if not isinstance(reserved, int) or not 0 <= reserved < count:
            raise TypeError(f"reserved must be an integer in 0..{count - 1}, not {reserved!r}")
        self.count = count
        self.reserved = reserved
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
        free = Signal(n, init=(1 << (n - self.reserved)) - 1)
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
