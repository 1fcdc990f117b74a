"""The frame stream shared by every block: 32-bit words, byte lane 0 first."""

from amaranth.hdl import Module
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["WORD_BYTES", "frame_layout", "FrameStream", "keep_for_bytes", "StreamRegister"]

WORD_BYTES = 4

#: One beat of a frame. Only the ``last`` beat may be partial; its ``keep`` is
#: 0b0001, 0b0011, 0b0111 or 0b1111 (byte lanes in wire order from lane 0).
frame_layout = data.StructLayout({
    "data":  8 * WORD_BYTES,
    "keep":  WORD_BYTES,
    "first": 1,
    "last":  1,
})


def FrameStream(*, always_ready=False):
    """The stream signature of a frame port (``valid`` never waits for ``ready``)."""
    return stream.Signature(frame_layout, always_ready=always_ready)


def keep_for_bytes(n):
    """``keep`` of a last word holding ``n`` (1..4) bytes."""
    if not 1 <= n <= WORD_BYTES:
        raise ValueError(f"a word holds 1..{WORD_BYTES} bytes, not {n!r}")
    return (1 << n) - 1


class StreamRegister(wiring.Component):
    """A register stage on a frame stream, at full throughput: ``o`` is ``i``
    one cycle later. ``valid`` and the payload are registered (the forward
    path ends here); ``i.ready`` is ``o.ready`` or an empty register.

    Ports
    -----
    i : In(FrameStream())
    o : Out(FrameStream())
    """

    i: In(FrameStream())
    o: Out(FrameStream())

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.i.ready.eq(~self.o.valid | self.o.ready)
        with m.If(self.i.ready):
            m.d.sync += [self.o.valid.eq(self.i.valid), self.o.payload.eq(self.i.payload)]
        return m
