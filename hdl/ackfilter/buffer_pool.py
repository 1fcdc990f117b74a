"""Allocator of the ACK slot buffers: a free bitmap with a priority encoder."""

from amaranth.hdl import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .prio import lowest_set

__all__ = ["BufferPool"]


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
        nxt = Signal(n)
        # Frees are registered first: a buffer given back is offered one
        # cycle later, which costs nothing and keeps the queue manager's
        # decision logic out of this block's timing path.
        free_a_en, free_b_en = Signal(), Signal()
        free_a_id, free_b_id = Signal.like(self.free_a_id), Signal.like(self.free_b_id)
        m.d.sync += [
            free_a_en.eq(self.free_a_en), free_a_id.eq(self.free_a_id),
            free_b_en.eq(self.free_b_en), free_b_id.eq(self.free_b_id),
        ]
        m.d.comb += nxt.eq(free)
        for i in range(n):
            with m.If(self.take & (self.alloc_id == i)):
                m.d.comb += nxt[i].eq(0)
            with m.If((free_a_en & (free_a_id == i)) | (free_b_en & (free_b_id == i))):
                m.d.comb += nxt[i].eq(1)
        m.d.sync += free.eq(nxt)

        # Offer the lowest free buffer, already counting this cycle's take.
        any_free, lowest = lowest_set(nxt)
        m.d.sync += [
            self.alloc_valid.eq(any_free),
            self.alloc_id.eq(lowest),
        ]
        return m
