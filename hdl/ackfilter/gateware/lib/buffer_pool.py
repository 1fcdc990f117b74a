"""Allocators of numbered resources: the ACK queue's list nodes (a stack in
LUT RAM: a take and a free per cycle) and the ACK slot buffers (two such
stacks: two frees and a take per cycle)."""

from amaranth.hdl import *
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["BufferPool", "FreeStack"]


class BufferPool(wiring.Component):
    """``count`` buffers; buffer ``count - 1`` starts out taken (the first
    staging buffer of the ingress), all others free.

    Two :class:`FreeStack` in LUT RAM, one per free port, so both frees of a
    cycle are kept: the offer is the top of stack ``a`` while it has one,
    else the top of ``b``. (A bitmap with a priority encoder over the 72
    buffers took 636 LUT4; the stacks 240 LUT4 and 20 LUT RAMs of 16 x 4.)

    Ports
    -----
    alloc_valid, alloc_id : Out   a free buffer
    take : In(1)                  ``alloc_id`` is now in use (next offer differs)
    free_a_en, free_a_id, free_b_en, free_b_id : In   buffers given back
                                  (offered from the next cycle)
    ready : Out(1)                built after a reset (``count - 1`` cycles,
                                  :class:`FreeStack`); nothing may take or give before
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
            "ready":       Out(1),
        })
        # The two stacks, here before elaboration for the proofs (ackfilter.formal).
        self.stacks = (FreeStack(count=count, initial=count - 1), FreeStack(count=count, initial=0))

    def elaborate(self, platform):
        m = Module()
        m.submodules.a, m.submodules.b = a, b = self.stacks
        from_a = a.alloc_valid
        m.d.comb += [
            self.alloc_valid.eq(a.alloc_valid | b.alloc_valid),
            self.alloc_id.eq(Mux(from_a, a.alloc_id, b.alloc_id)),
            a.take.eq(self.take & from_a),
            b.take.eq(self.take & ~from_a),
            a.free_en.eq(self.free_a_en), a.free_id.eq(self.free_a_id),
            b.free_en.eq(self.free_b_en), b.free_id.eq(self.free_b_id),
            self.ready.eq(a.ready & b.ready),
        ]
        return m


class FreeStack(wiring.Component):
    """``count`` ids kept free on a stack in LUT RAM: the cheap allocator
    where ids are taken and given back at most one each per cycle (the ACK
    queue's list nodes; each half of the :class:`BufferPool`). Ids
    ``0 .. initial - 1`` start out free (all of them by default), ``initial - 1``
    on top.

    Ports
    -----
    alloc_valid, alloc_id : Out   the id on top of the stack (read from LUT RAM
                                  at a registered address)
    take : In(1)                  ``alloc_id`` is now in use
    free_en, free_id : In         an id given back (with ``take`` in the same
                                  cycle it takes the taken id's place)
    ready : Out(1)                the stack is built: a reset does not clear
                                  LUT RAM, and the ids above the top are stale
                                  copies, so after a reset ids ``0 .. initial - 1``
                                  are written again, one a cycle (``initial``
                                  cycles), and nothing may take or give before
    """

    def __init__(self, *, count, initial=None):
        if not isinstance(count, int) or count < 2:
            raise TypeError(f"count must be an integer >= 2, not {count!r}")
        if initial is None:
            initial = count
        if not isinstance(initial, int) or not 0 <= initial <= count:
            raise TypeError(f"initial must be an integer 0..{count}, not {initial!r}")
        self.count = count
        self.initial = initial
        ids = range(count)
        super().__init__({
            "alloc_valid": Out(1),
            "alloc_id":    Out(ids),
            "take":        In(1),
            "free_en":     In(1),
            "free_id":     In(ids),
            "ready":       Out(1),
        })
        # The stack, and where its top is: here before elaboration so that a
        # proof (ackfilter.formal) can read every word and state it about.
        self.stack = Memory(shape=range(count), depth=count, init=list(range(initial)),
                            attrs={"ram_style": "distributed"})
        self.depth = Signal(range(count + 1), init=initial)        # free ids on the stack
        self.top = Signal(ids, init=max(initial - 1, 0))           # depth - 1 when depth > 0
        self.building = Signal(init=initial > 0)
        self.build_i = Signal(range(max(initial, 1)))

    def elaborate(self, platform):
        m = Module()
        n, k = self.count, self.initial
        m.submodules.stack = stack = self.stack
        w = stack.write_port()
        r = stack.read_port(domain="comb")
        depth, top = self.depth, self.top
        up = Mux(depth == 0, 0, top + 1)
        take = self.take & (depth != 0)
        m.d.comb += [r.addr.eq(top), self.alloc_id.eq(r.data), self.alloc_valid.eq(depth != 0)]
        # After a reset: ids 0 .. k - 1 written again, one a cycle.
        building, build_i = self.building, self.build_i
        m.d.comb += self.ready.eq(~building)
        with m.If(building):
            m.d.comb += [w.en.eq(1), w.addr.eq(build_i), w.data.eq(build_i)]
            m.d.sync += build_i.eq(build_i + 1)
            with m.If(build_i == k - 1):
                m.d.sync += building.eq(0)
        with m.Elif(self.free_en & take):
            m.d.comb += [w.en.eq(1), w.addr.eq(top), w.data.eq(self.free_id)]
        with m.Elif(self.free_en):
            m.d.comb += [w.en.eq(1), w.addr.eq(up), w.data.eq(self.free_id)]
            m.d.sync += [depth.eq(depth + 1), top.eq(up)]
        with m.Elif(take):
            m.d.sync += [depth.eq(depth - 1), top.eq(Mux(top == 0, 0, top - 1))]
        return m
