"""An asynchronous FIFO with registered flags, for the 125 MHz MAC domains.

Same ports and behaviour as Amaranth's ``lib.fifo.AsyncFIFO`` as the MACs use
it (``w_en``/``w_data``/``w_rdy``/``w_level``, ``r_en``/``r_data``/``r_rdy``,
first word fall-through), built for speed on the ECP5: in Amaranth's FIFO a
write (read) enable goes through the full (empty) compare of the synchronized
Gray pointers and the pointer adder into the block RAM address, 8-9 ns on the
-6 part. Here (Cummings, "Simulation and Synthesis Techniques for
Asynchronous FIFO Design", style 1) full and empty are registers, each
pointer keeps its successor ready, and the flags for "moved" and "stayed" are
both precomputed, so an enable only selects: one LUT to the RAM address and
to each flag. A writer that keeps its own account of the room (the receive
path, through ``w_level``) can leave the full flag out (``w_full=False``):
its compare of the synchronized Gray pointer was a 125 MHz domain's critical
path once the chip filled up.
"""

from amaranth.hdl import *
from amaranth.lib import cdc, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["FastAsyncFIFO"]


def _gray(v):
    return v ^ v[1:]


class FastAsyncFIFO(wiring.Component):
    """``depth`` words (a power of 2, at least 4) of ``width`` bits from
    ``w_domain`` to ``r_domain``.

    ``w_level`` is the write side's view of the fill: exact for its own
    writes, behind by the synchronizer and three more cycles for reads (the
    read pointer is decoded from Gray in two registered steps, then
    subtracted), so it never shows less than is in the FIFO; the full flag
    sees the read pointer as late.

    ``w_full=False`` leaves the full flag out: ``w_rdy`` is then always 1 and
    every ``w_en`` writes, so the writer must never write into a FIFO whose
    ``w_level`` (less what it wrote since) has reached ``depth``.
    """

    def __init__(self, *, width, depth, w_domain, r_domain, w_full=True):
        if not isinstance(depth, int) or depth < 4 or depth & (depth - 1):
            raise TypeError(f"depth must be a power of 2 >= 4, not {depth!r}")
        if not isinstance(w_full, bool):
            raise TypeError(f"w_full must be a bool, not {w_full!r}")
        self.width, self.depth = width, depth
        self._w_full = w_full
        self._w_domain, self._r_domain = w_domain, r_domain
        super().__init__({
            "w_en":    In(1),
            "w_data":  In(width),
            "w_rdy":   Out(1),
            "w_level": Out(range(depth + 1)),
            "r_en":    In(1),
            "r_data":  Out(width),
            "r_rdy":   Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        bits = (self.depth - 1).bit_length() + 1      # one more than the address
        w, r = m.d[self._w_domain], m.d[self._r_domain]

        m.submodules.storage = storage = Memory(shape=self.width, depth=self.depth, init=[])
        wp = storage.write_port(domain=self._w_domain)
        rp = storage.read_port(domain=self._r_domain, transparent_for=())

        # Write side.
        wbin, wbin1 = Signal(bits), Signal(bits, init=1)
        wgray, wgray1 = Signal(bits), Signal(bits, init=1)
        rgray, rgray_w = Signal(bits), Signal(bits)    # rgray: the read side's pointer
        m.submodules.rgray_cdc = cdc.FFSynchronizer(rgray, rgray_w, o_domain=self._w_domain)
        full = Signal()
        do_write = Signal()
        # The read pointer in binary, in two registered steps of one LUT
        # each (a bit is the XOR of the Gray bits from it up: first within
        # groups of four bits, then across the groups), not a chain of XORs.
        groups = [(lo, min(lo + 4, bits)) for lo in range(0, bits, 4)]
        part = Signal(bits)                     # XOR from the bit to its group's top
        group_par = Signal(len(groups))         # XOR of each whole group
        w += [part.eq(Cat(*[rgray_w[i:hi].xor() for lo, hi in groups for i in range(lo, hi)])),
              group_par.eq(Cat(*[rgray_w[lo:hi].xor() for lo, hi in groups]))]
        rbin_w = Signal(bits)
        w += rbin_w.eq(Cat(*[part[i] ^ group_par[g + 1:].xor()
                             for g, (lo, hi) in enumerate(groups) for i in range(lo, hi)]))
        m.d.comb += [
            do_write.eq(self.w_en & ~full),
            self.w_rdy.eq(~full),
            wp.en.eq(do_write), wp.addr.eq(wbin[:-1]), wp.data.eq(self.w_data),
        ]
        with m.If(do_write):
            w += [wbin.eq(wbin1), wbin1.eq(wbin1 + 1), wgray.eq(wgray1), wgray1.eq(_gray((wbin1 + 1)[:bits]))]
        if self._w_full:
            # Full: the write pointer one lap ahead of the read pointer (Gray:
            # the two top bits inverted, the rest equal).
            # The pointer as old as the one `w_level` subtracts, so the two
            # agree (a write past a full `w_level` would overrun it).
            rgray_d = [Signal(bits, name=f"rgray_d{i}") for i in (1, 2)]
            w += [rgray_d[0].eq(rgray_w), rgray_d[1].eq(rgray_d[0])]
            lap = rgray_d[1] ^ (0b11 << (bits - 2))
            w += full.eq(Mux(do_write, wgray1 == lap, wgray == lap))
        w += self.w_level.eq(Mux(do_write, wbin1, wbin) - rbin_w)

        # Read side.
        rbin, rbin1 = Signal(bits), Signal(bits, init=1)
        rgray1 = Signal(bits, init=1)
        wgray_r = Signal(bits)
        m.submodules.wgray_cdc = cdc.FFSynchronizer(wgray, wgray_r, o_domain=self._r_domain)
        empty = Signal(init=1)
        do_read = Signal()
        m.d.comb += [
            do_read.eq(self.r_en & ~empty),
            self.r_rdy.eq(~empty),
            # The RAM reads the head every cycle: r_data is the word at rbin.
            rp.addr.eq(Mux(do_read, rbin1, rbin)[:-1]),
            self.r_data.eq(rp.data),
        ]
        with m.If(do_read):
            r += [rbin.eq(rbin1), rbin1.eq(rbin1 + 1), rgray.eq(rgray1), rgray1.eq(_gray((rbin1 + 1)[:bits]))]
        r += empty.eq(Mux(do_read, rgray1 == wgray_r, rgray == wgray_r))
        return m
