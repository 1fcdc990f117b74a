"""A FIFO of plain registers for wide, shallow queues.

On the ECP5 a LUT RAM (TRELLIS_DPR16X4) stores 16 words of 4 bits in six
LUT positions (four for the two ports, two blocked by its write logic), so a
4-deep FIFO of wide words uses a quarter of what it pays for: the ingress's
969-bit entries took 243 of them, about 1,460 of the 25F's 24,288 LUT
positions. Here each entry sits in a stage of registers and moves one stage
per cycle towards the output, into a stage that is empty or being emptied.
Every data bit is a flip-flop whose input is the previous stage's output and
whose enable is its stage's: no LUT on the data at all.

The price is latency: an entry written into an empty queue reaches the
output ``depth`` cycles later. Throughput is one entry per cycle.
"""

from amaranth.hdl import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["RegisterQueue"]


class RegisterQueue(wiring.Component):
    """``depth`` entries of ``width`` bits, first in first out.

    Ports (as Amaranth's FIFOs name them)
    -----
    w_en, w_data, w_rdy : write side; ``w_rdy`` says the input stage is free
        or frees this cycle.
    r_en, r_data, r_rdy : read side; ``r_data`` is the output stage, valid
        while ``r_rdy``.
    level : Out(range(depth + 1))
        Entries held (in any stage).
    """

    def __init__(self, *, width, depth):
        if not isinstance(width, int) or width < 1:
            raise TypeError(f"width must be a positive integer, not {width!r}")
        if not isinstance(depth, int) or depth < 1:
            raise TypeError(f"depth must be a positive integer, not {depth!r}")
        self.width, self.depth = width, depth
        super().__init__({
            "w_en":   In(1),
            "w_data": In(width),
            "w_rdy":  Out(1),
            "r_en":   In(1),
            "r_data": Out(width),
            "r_rdy":  Out(1),
            "level":  Out(range(depth + 1)),
        })

    def elaborate(self, platform):
        m = Module()
        n = self.depth
        # Stage 0 takes the input, stage n - 1 is the output. The data has no
        # reset: its valid bit has.
        valid = Signal(n)
        stage = [Signal(self.width, name=f"stage{k}", reset_less=True) for k in range(n)]
        # space[k]: stage k is empty or its entry leaves this cycle.
        space = [Signal(name=f"space{k}") for k in range(n)]
        m.d.comb += space[n - 1].eq(~valid[n - 1] | self.r_en)
        for k in reversed(range(n - 1)):
            m.d.comb += space[k].eq(~valid[k] | space[k + 1])
        m.d.comb += [
            self.w_rdy.eq(space[0]),
            self.r_rdy.eq(valid[n - 1]),
            self.r_data.eq(stage[n - 1]),
        ]
        for k in range(n):
            arrives = (self.w_en & self.w_rdy) if k == 0 else valid[k - 1]
            with m.If(space[k]):
                m.d.sync += valid[k].eq(arrives)
                with m.If(arrives):
                    m.d.sync += stage[k].eq(self.w_data if k == 0 else stage[k - 1])
        level = 0
        for k in range(n):
            level = level + valid[k]
        m.d.comb += self.level.eq(level)
        return m
