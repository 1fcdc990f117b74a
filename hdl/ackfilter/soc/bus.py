"""The SoC's bus: a Wishbone classic subset, 32-bit words, one access at a time.

A master raises ``cyc`` with ``adr`` (a word address), ``we``, ``sel`` and
``dat_w`` and holds them until a cycle with ``ack``, in which ``dat_r``
carries the read word. No bursts, no errors, no wait before the request is
seen: the subset SERV's and PicoRV32's buses need, in the names the
Wishbone B4 specification uses.

* :class:`Arbiter` merges the CPU's instruction and data buses (the CPU never
  has both in flight; the data bus wins a tie);
* :class:`Decoder` sends a request to one of the regions by address bits
  29-28 (:mod:`.memmap`); a region nobody answers acks with 0.

Every slave here acks one cycle after it sees ``cyc`` and never in two
cycles running (``ack := cyc & ~ack``), so a master that drops ``cyc`` the
cycle after its ``ack`` never sees a second one.
"""

from amaranth.hdl import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["BusSignature", "Arbiter", "Decoder"]

ADR_BITS = 30

#: Seen from the master.
BusSignature = wiring.Signature({
    "adr":   Out(ADR_BITS),
    "dat_w": Out(32),
    "sel":   Out(4),
    "we":    Out(1),
    "cyc":   Out(1),
    "dat_r": In(32),
    "ack":   In(1),
})


class Arbiter(wiring.Component):
    """Two masters, one bus. A master keeps the bus from its first cycle to
    its ``ack``; between requests the data bus has priority."""

    ibus: In(BusSignature)
    dbus: In(BusSignature)
    bus: Out(BusSignature)

    def elaborate(self, platform):
        m = Module()
        owner_d = Signal()          # the data bus holds the bus
        busy = Signal()
        pick_d = Mux(busy, owner_d, self.dbus.cyc)
        with m.If(~busy & (self.ibus.cyc | self.dbus.cyc)):
            m.d.sync += [busy.eq(1), owner_d.eq(self.dbus.cyc)]
        with m.If(self.bus.ack):
            m.d.sync += busy.eq(0)
        src = [self.ibus, self.dbus]
        m.d.comb += [
            self.bus.adr.eq(Mux(pick_d, self.dbus.adr, self.ibus.adr)),
            self.bus.dat_w.eq(self.dbus.dat_w),
            self.bus.sel.eq(Mux(pick_d, self.dbus.sel, 0xF)),
            self.bus.we.eq(pick_d & self.dbus.we),
            self.bus.cyc.eq(Mux(pick_d, self.dbus.cyc, self.ibus.cyc)),
        ]
        for i, s in enumerate(src):
            m.d.comb += [s.dat_r.eq(self.bus.dat_r),
                         s.ack.eq(self.bus.ack & (pick_d if i else ~pick_d))]
        return m


class Decoder(wiring.Component):
    """Route ``bus`` to ``regions[i]`` when address bits 29-28 are ``i``.

    Parameters
    ----------
    n : int
        Number of regions (1..4); a request to a region ``>= n`` is
        answered with ``dat_r`` 0.
    """

    def __init__(self, n):
        if not 1 <= n <= 4:
            raise ValueError(f"n must be 1..4 regions, not {n}")
        self.n = n
        super().__init__({"bus": In(BusSignature),
                          **{f"r{i}": Out(BusSignature) for i in range(n)}})

    def region(self, i):
        return getattr(self, f"r{i}")

    def elaborate(self, platform):
        m = Module()
        sel = self.bus.adr[ADR_BITS - 4:ADR_BITS - 2]     # byte address bits 29-28
        for i in range(self.n):
            r = self.region(i)
            m.d.comb += [r.adr.eq(self.bus.adr[:ADR_BITS - 4]), r.dat_w.eq(self.bus.dat_w),
                         r.sel.eq(self.bus.sel), r.we.eq(self.bus.we),
                         r.cyc.eq(self.bus.cyc & (sel == i))]
            with m.If(sel == i):
                m.d.comb += [self.bus.dat_r.eq(r.dat_r), self.bus.ack.eq(r.ack)]
        nobody_ack = Signal()
        m.d.sync += nobody_ack.eq(self.bus.cyc & (sel >= self.n) & ~nobody_ack)
        with m.If(sel >= self.n):
            m.d.comb += [self.bus.dat_r.eq(0), self.bus.ack.eq(nobody_ack)]
        return m
