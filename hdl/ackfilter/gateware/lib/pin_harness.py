"""A four-pin harness for synthesising one block alone."""

from amaranth.hdl import Cat, Module, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["PinHarness"]


class PinHarness(wiring.Component):
    """Wrap a ``wiring.Component`` so it needs four pins, for synthesis of a
    block alone (``make reports``).

    Every input bit of ``core`` is a flip-flop of a shift register fed from
    pin ``sin``; every output bit is captured (``load``) into a register that
    shifts out on ``sout``. Nothing is constant, so nothing is optimized away.
    """
    sin:  In(1)
    load: In(1)
    sout: Out(1)

    def __init__(self, core):
        self.core = core
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self.core
        ins, outs = [], []
        for _path, member, port in core.signature.flatten(core):
            (ins if member.flow == In else outs).append(Value.cast(port))   # views too
        in_chain = Signal(sum(len(p) for p in ins))
        m.d.sync += in_chain.eq(Cat(self.sin, in_chain[:-1]))
        offset = 0
        for port in ins:
            m.d.comb += port.eq(in_chain[offset:offset + len(port)])
            offset += len(port)
        out_bits = Cat(*outs)
        out_chain = Signal(len(out_bits))
        with m.If(self.load):
            m.d.sync += out_chain.eq(out_bits)
        with m.Else():
            m.d.sync += out_chain.eq(out_chain[1:])
        m.d.comb += self.sout.eq(out_chain[0])
        return m
