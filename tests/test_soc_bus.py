# amaranth: UnusedElaboratable=no
"""The SoC's bus (``soc.bus``) in the Amaranth simulator: the arbiter in
front of the decoder in front of three slaves, as the SoC wires them.

Each slave acks one cycle after it sees ``cyc`` and never twice running
(``ack := cyc & ~ack``), answers a read with its number in the top byte and
the word address it saw below, and keeps the last word written to it with
its address and select: what each test expects is worked from the module's
rules (Wishbone classic, one access at a time; the data bus wins a tie; a
master keeps the bus from its first cycle to its ack; the region is byte
address bits 29-28; a region nobody answers acks with 0)."""

import pytest
from amaranth.hdl import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, connect

from ackfilter.soc.bus import ADR_BITS, Arbiter, BusSignature, Decoder
from blocksim import simulate

REGIONS = 3


class Slave(wiring.Component):
    bus: In(BusSignature)

    def __init__(self, number):
        super().__init__()
        self.number = number
        self.cycles = Signal(16)            # cycles with cyc seen
        self.w_adr = Signal(ADR_BITS)
        self.w_dat = Signal(32)
        self.w_sel = Signal(4)
        self.writes = Signal(8)

    def elaborate(self, platform):
        m = Module()
        b = self.bus
        m.d.sync += b.ack.eq(b.cyc & ~b.ack)
        m.d.comb += b.dat_r.eq(Cat(b.adr[:24], C(self.number, 8)))
        with m.If(b.cyc):
            m.d.sync += self.cycles.eq(self.cycles + 1)
        with m.If(b.cyc & b.we & ~b.ack):
            m.d.sync += [self.w_adr.eq(b.adr), self.w_dat.eq(b.dat_w), self.w_sel.eq(b.sel),
                         self.writes.eq(self.writes + 1)]
        return m


class Bench(Elaboratable):
    def __init__(self, regions=REGIONS):
        self.arbiter = Arbiter()
        self.decoder = Decoder(regions)
        self.slaves = [Slave(0xA0 + i) for i in range(regions)]

    def elaborate(self, platform):
        m = Module()
        m.submodules.arbiter, m.submodules.decoder = self.arbiter, self.decoder
        connect(m, self.arbiter.bus, self.decoder.bus)
        for i, s in enumerate(self.slaves):
            m.submodules[f"slave{i}"] = s
            connect(m, self.decoder.region(i), s.bus)
        return m


def byte_address(region, offset):
    """The word address of byte ``offset`` of ``region`` (bits 29-28)."""
    return ((region << 28) | offset) >> 2


async def access(ctx, master, adr, *, we=0, dat_w=0, sel=0xF):
    """One Wishbone classic access: ``cyc`` until ``ack``; returns
    ``(cycles until ack, dat_r in the ack's cycle)``."""
    ctx.set(master.adr, adr)
    ctx.set(master.we, we)
    ctx.set(master.dat_w, dat_w)
    ctx.set(master.sel, sel)
    ctx.set(master.cyc, 1)
    cycles = 0
    while True:
        await ctx.tick()
        cycles += 1
        if ctx.get(master.ack):
            data = ctx.get(master.dat_r)
            ctx.set(master.cyc, 0)
            return cycles, data
        assert cycles < 20, "no ack"


def test_a_read_goes_to_the_region_of_bits_29_28_and_nowhere_else():
    bench = Bench()
    got = []

    async def tb(ctx):
        for region in range(REGIONS):
            got.append(await access(ctx, bench.arbiter.dbus, byte_address(region, 0x1234)))
        got.append([ctx.get(s.cycles) for s in bench.slaves])

    simulate(bench, tb, name="bus_regions")
    # Each access: the slave's ack one cycle after cyc reaches it.
    assert got[:REGIONS] == [(1, (0xA0 + r) << 24 | 0x1234 >> 2) for r in range(REGIONS)]
    assert got[REGIONS] == [1, 1, 1]        # one cycle of cyc each, its own


def test_a_write_reaches_its_slave_with_address_data_and_select():
    bench = Bench()
    seen = {}

    async def tb(ctx):
        await access(ctx, bench.arbiter.dbus, byte_address(2, 0x40), we=1, dat_w=0xDEADBEEF, sel=0b0110)
        s = bench.slaves[2]
        seen.update(adr=ctx.get(s.w_adr), dat=ctx.get(s.w_dat), sel=ctx.get(s.w_sel),
                    writes=[ctx.get(x.writes) for x in bench.slaves])

    simulate(bench, tb, name="bus_write")
    assert seen == {"adr": 0x40 >> 2, "dat": 0xDEADBEEF, "sel": 0b0110, "writes": [0, 0, 1]}


def test_a_region_nobody_answers_acks_with_0_and_never_twice_running():
    bench = Bench(regions=2)
    acks = []

    async def tb(ctx):
        assert await access(ctx, bench.arbiter.dbus, byte_address(3, 8)) == (1, 0)
        ctx.set(bench.arbiter.dbus.cyc, 1)         # cyc raised again in the ack's cycle, then held
        for _ in range(6):
            await ctx.tick()
            acks.append(ctx.get(bench.arbiter.dbus.ack))

    simulate(bench, tb, name="bus_unmapped")
    # ack := cyc & ~ack, from the ack of the first access: never two running.
    assert acks == [0, 1, 0, 1, 0, 1]


def test_the_data_bus_wins_a_tie_and_the_instruction_bus_gets_the_bus_after_it():
    bench = Bench()
    log = []

    async def tb(ctx):
        ib, db = bench.arbiter.ibus, bench.arbiter.dbus
        for master, adr in ((ib, byte_address(0, 0x100)), (db, byte_address(1, 0x200))):
            ctx.set(master.adr, adr)
            ctx.set(master.cyc, 1)
        for _ in range(4):
            await ctx.tick()
            log.append((ctx.get(ib.ack), ctx.get(db.ack), ctx.get(ib.dat_r) if ctx.get(ib.ack) else None,
                        ctx.get(db.dat_r) if ctx.get(db.ack) else None))
            if ctx.get(db.ack):
                ctx.set(db.cyc, 0)
            if ctx.get(ib.ack):
                ctx.set(ib.cyc, 0)

    simulate(bench, tb, name="bus_tie")
    # The data bus's access first (acked in the first cycle), then the
    # instruction bus's: it is taken in the cycle after, acked in the next.
    assert log == [(0, 1, None, 0xA1 << 24 | 0x200 >> 2), (0, 0, None, None),
                   (1, 0, 0xA0 << 24 | 0x100 >> 2, None), (0, 0, None, None)]


def test_a_master_keeps_the_bus_until_its_ack_and_fetches_only_read():
    bench = Bench()
    log = []

    async def tb(ctx):
        ib, db = bench.arbiter.ibus, bench.arbiter.dbus
        # The instruction bus asks first (with `we` set: a fetch never writes).
        ctx.set(ib.adr, byte_address(2, 0x10))
        ctx.set(ib.we, 1)
        ctx.set(ib.sel, 0b0001)
        ctx.set(ib.cyc, 1)
        await ctx.tick()
        # The data bus asks while the fetch waits for its ack.
        ctx.set(db.adr, byte_address(2, 0x20))
        ctx.set(db.we, 1)
        ctx.set(db.dat_w, 0x12345678)
        ctx.set(db.sel, 0b1100)
        ctx.set(db.cyc, 1)
        log.append((ctx.get(ib.ack), ctx.get(db.ack)))
        ctx.set(ib.cyc, 0)
        for _ in range(3):
            await ctx.tick()
            log.append((ctx.get(ib.ack), ctx.get(db.ack)))
            if ctx.get(db.ack):
                ctx.set(db.cyc, 0)
        s = bench.slaves[2]
        log.append((ctx.get(s.writes), ctx.get(s.w_adr), ctx.get(s.w_dat), ctx.get(s.w_sel)))

    simulate(bench, tb, name="bus_hold")
    assert log[0] == (1, 0)                 # the fetch's ack, not the data bus's
    assert log[1:4] == [(0, 0), (0, 1), (0, 0)]
    # One write, the data bus's, with its own select; the fetch wrote nothing.
    assert log[4] == (1, 0x20 >> 2, 0x12345678, 0b1100)


@pytest.mark.parametrize("n", [0, 5])
def test_the_decoder_takes_1_to_4_regions(n):
    with pytest.raises(ValueError, match="1..4 regions"):
        Decoder(n)
