"""The four-pin synthesis harness (``gateware.lib.pin_harness``), which
`make reports` and `scripts/depth_check.py` wrap a block in: every input
bit of the block, structured ports included, comes from the shift register
fed by ``sin``, and every output bit leaves on ``sout``, in port order.

The block here copies its inputs to its outputs (a struct and a plain
signal each way), so what shifts out must be exactly what shifted in.
"""

import random

from amaranth.hdl import Cat, Module
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

import blocksim
from ackfilter.gateware.lib.pin_harness import PinHarness

PAIR = data.StructLayout({"a": 3, "b": 5})


class Echo(wiring.Component):
    i_struct: In(PAIR)
    i_flag:   In(1)
    o_struct: Out(PAIR)
    o_flag:   Out(1)

    def elaborate(self, platform):
        m = Module()
        m.d.comb += [self.o_struct.eq(self.i_struct), self.o_flag.eq(self.i_flag)]
        return m


def test_bits_shifted_in_come_back_out_in_port_order():
    dut = PinHarness(Echo())
    n = PAIR.size + 1
    bits = [random.Random(7).randrange(2) for _ in range(n)]
    got = []

    async def tb(ctx):
        # The chain shifts toward its top bit: the first bit in ends up in
        # the last input bit.
        for b in bits:
            ctx.set(dut.sin, b)
            await ctx.tick()
        core = dut.core
        value = ctx.get(Cat(core.i_struct.as_value(), core.i_flag))
        assert value == int("".join(map(str, bits)), 2), "inputs in port order"
        ctx.set(dut.load, 1)
        await ctx.tick()
        ctx.set(dut.load, 0)
        for _ in range(n):
            got.append(ctx.get(dut.sout))
            await ctx.tick()

    blocksim.simulate(dut, tb, name="pin_harness")
    # Out bit k leaves k-th; it is input bit k, which entered n - 1 - k th.
    assert got == bits[::-1]
