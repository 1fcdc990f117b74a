# amaranth: UnusedElaboratable=no
"""The board's registers (``board.regs``) in the Amaranth simulator:
:class:`BoardRegs` behind :class:`CSRSplit`, with a stand-in for the core's
bank on the split's other side, as the board top wires them.

What each test expects is worked from ``params`` (the addresses of
``BOARD_REGS``, the ``(name, lsb, width)`` fields of each word) by this
file's own packing, and from the bus contract: ``r_data`` two cycles after
``r_stb``, held until the next read; a write of ``mdio_command`` starts one
MDIO frame unless one is under way."""

import random

from amaranth.hdl import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, connect

from ackfilter import params as P
from ackfilter.board.regs import BoardRegs, CSRSplit
from ackfilter.gateware.csr import CSRBusSignature
from blocksim import simulate


def pack(fields, **values):
    """A word from ``(name, lsb, width)`` fields; a value must fit its field."""
    layout = {name: (lsb, width) for name, lsb, width in fields}
    word = 0
    for name, v in values.items():
        lsb, width = layout[name]
        assert 0 <= v < 1 << width, (name, v)
        word |= v << lsb
    return word


def unpack(fields, word):
    return {name: word >> lsb & ((1 << width) - 1) for name, lsb, width in fields}


class CoreStandIn(wiring.Component):
    """The core's side of the split: answers a read of address ``a`` with
    ``0xC0DE0000 | a`` two cycles later, counts its strobes, keeps the last
    write."""
    bus: In(CSRBusSignature)

    def __init__(self):
        super().__init__()
        self.reads = Signal(8)
        self.writes = Signal(8)
        self.w_addr = Signal(8)
        self.w_data = Signal(32)

    def elaborate(self, platform):
        m = Module()
        word = Signal(32)
        read = Signal()
        m.d.sync += read.eq(self.bus.r_stb)
        with m.If(self.bus.r_stb):
            m.d.sync += [word.eq(0xC0DE0000 | self.bus.addr), self.reads.eq(self.reads + 1)]
        with m.If(read):
            m.d.sync += self.bus.r_data.eq(word)
        with m.If(self.bus.w_stb):
            m.d.sync += [self.writes.eq(self.writes + 1), self.w_addr.eq(self.bus.addr),
                         self.w_data.eq(self.bus.w_data)]
        return m


class Bench(Elaboratable):
    def __init__(self):
        self.split = CSRSplit()
        self.regs = BoardRegs()
        self.core = CoreStandIn()
        self.bus = self.split.bus

    def elaborate(self, platform):
        m = Module()
        m.submodules.split, m.submodules.regs, m.submodules.core = self.split, self.regs, self.core
        connect(m, self.split.board, self.regs.bus)
        connect(m, self.split.core, self.core.bus)
        return m


async def read(ctx, bus, addr):
    """A read as a CPU bridge makes it: ``r_stb`` one cycle, the word two
    cycles later. Returns ``(word, word one cycle later)``."""
    ctx.set(bus.addr, addr)
    ctx.set(bus.r_stb, 1)
    await ctx.tick()
    ctx.set(bus.r_stb, 0)
    await ctx.tick()
    await ctx.tick()
    first = ctx.get(bus.r_data)
    await ctx.tick()
    return first, ctx.get(bus.r_data)


async def write(ctx, bus, addr, value):
    ctx.set(bus.addr, addr)
    ctx.set(bus.w_data, value)
    ctx.set(bus.w_stb, 1)
    await ctx.tick()
    ctx.set(bus.w_stb, 0)


LINKS = {
    "lan": dict(speed=2, rxc_ok=1, inband_link=1, inband_speed=2, inband_full_duplex=1),
    "modem": dict(speed=1, rxc_ok=0, inband_link=0, inband_speed=1, inband_full_duplex=0),
}


def test_every_register_reads_its_fields_two_cycles_after_the_strobe_and_holds_them():
    bench = Bench()
    rng = random.Random(30)
    phy = [rng.getrandbits(64) for _ in range(2)]
    got = {}

    async def tb(ctx):
        for role, fields in LINKS.items():
            for k, v in fields.items():
                ctx.set(getattr(getattr(bench.regs, role), k), v)
        for i in range(2):
            ctx.set(bench.regs.phy_status[i], phy[i])
        for name, addr in P.BOARD_REGS.items():
            got[name] = await read(ctx, bench.bus, addr)
        for addr in (P.BOARD_BASE + len(P.BOARD_REGS), 0xFF):
            got[addr] = await read(ctx, bench.bus, addr)

    simulate(bench, tb, name="board_regs_read")
    want = {
        "lan_link": pack(P.LINK_FIELDS, **LINKS["lan"]),
        "modem_link": pack(P.LINK_FIELDS, **LINKS["modem"]),
        "phy0_status": phy[0] & 0xFFFFFFFF, "phy1_status": phy[1] & 0xFFFFFFFF,
        "phy0_id": phy[0] >> 32, "phy1_id": phy[1] >> 32,
        "mdio_result": 0,                     # no frame yet, none under way
        "mdio_command": 0,                    # write-only
        P.BOARD_BASE + len(P.BOARD_REGS): 0, 0xFF: 0,
    }
    assert got == {k: (v, v) for k, v in want.items()}


def test_speed_changes_counts_the_macs_strobes_and_wraps_at_256():
    bench = Bench()
    seen = []

    async def tb(ctx):
        port = bench.regs.modem
        for n in (3, 255, 4):                 # 3, then 258 = 2 after the wrap, then 262 = 6
            for _ in range(n):
                ctx.set(port.speed_changed, 1)
                await ctx.tick()
                ctx.set(port.speed_changed, 0)
                await ctx.tick()              # a strobe is one cycle: one count each
            word, _ = await read(ctx, bench.bus, P.BOARD_REGS["modem_link"])
            lan, _ = await read(ctx, bench.bus, P.BOARD_REGS["lan_link"])
            seen.append((unpack(P.LINK_FIELDS, word)["speed_changes"], unpack(P.LINK_FIELDS, lan)["speed_changes"]))

    simulate(bench, tb, name="board_regs_changes")
    assert seen == [(3, 0), (2, 0), (6, 0)]


def test_an_mdio_command_starts_one_frame_with_its_fields_and_the_result_counts_it():
    bench = Bench()
    log = {}

    async def tb(ctx):
        mdio = bench.regs.mdio
        cmd = pack(P.MDIO_COMMAND_FIELDS, data=0xBEEF, reg=0x1B, phy=0x11, write=1)
        # A write elsewhere on the board, or on the core, starts nothing.
        await write(ctx, bench.bus, P.BOARD_REGS["mdio_result"], cmd)
        await write(ctx, bench.bus, 0x10, cmd)
        log["no_start"] = ctx.get(mdio.start)
        # The command: start in the cycle of the write, with its fields.
        ctx.set(bench.bus.addr, P.BOARD_REGS["mdio_command"])
        ctx.set(bench.bus.w_data, cmd)
        ctx.set(bench.bus.w_stb, 1)
        log["request"] = (ctx.get(mdio.start), ctx.get(mdio.write), ctx.get(mdio.phy_addr),
                          ctx.get(mdio.reg_addr), ctx.get(mdio.w_data))
        await ctx.tick()
        ctx.set(bench.bus.w_stb, 0)
        # The poller takes it: busy. A second command meanwhile is not started.
        ctx.set(mdio.busy, 1)
        log["busy_result"] = unpack(P.MDIO_RESULT_FIELDS, (await read(ctx, bench.bus, P.BOARD_REGS["mdio_result"]))[0])
        ctx.set(bench.bus.addr, P.BOARD_REGS["mdio_command"])
        ctx.set(bench.bus.w_stb, 1)
        log["start_while_busy"] = ctx.get(mdio.start)
        await ctx.tick()
        ctx.set(bench.bus.w_stb, 0)
        # The frame ends: a read's data and whether a PHY answered, kept.
        ctx.set(mdio.busy, 0)
        ctx.set(mdio.r_data, 0x1234)
        ctx.set(mdio.no_phy, 1)
        ctx.set(mdio.done, 1)
        await ctx.tick()
        ctx.set(mdio.done, 0)
        ctx.set(mdio.r_data, 0xFFFF)          # the poller moves on; the result stays
        ctx.set(mdio.no_phy, 0)
        log["result"] = unpack(P.MDIO_RESULT_FIELDS, (await read(ctx, bench.bus, P.BOARD_REGS["mdio_result"]))[0])
        log["core_writes"] = ctx.get(bench.core.writes)

    simulate(bench, tb, name="board_regs_mdio")
    assert log["no_start"] == 0
    assert log["request"] == (1, 1, 0x11, 0x1B, 0xBEEF)
    assert log["busy_result"] == {"data": 0, "no_phy": 0, "busy": 1, "done": 0}
    assert log["start_while_busy"] == 0
    assert log["result"] == {"data": 0x1234, "no_phy": 1, "busy": 0, "done": 1}
    assert log["core_writes"] == 1            # the write to 0x10 went to the core alone


def test_the_split_sends_each_address_to_one_side_and_reads_come_from_that_side():
    bench = Bench()
    log = []

    async def tb(ctx):
        ctx.set(bench.regs.lan.speed, 2)
        lan = pack(P.LINK_FIELDS, speed=2)
        for addr in (0x00, 0x7F, P.BOARD_REGS["lan_link"], 0x05, 0xFF):
            word, held = await read(ctx, bench.bus, addr)
            log.append((addr, word, held, ctx.get(bench.core.reads)))
        await write(ctx, bench.bus, 0x7F, 0xAA55)
        await write(ctx, bench.bus, P.BOARD_REGS["lan_link"], 0x5A5A)   # read-only: ignored
        log.append((ctx.get(bench.core.writes), ctx.get(bench.core.w_addr), ctx.get(bench.core.w_data)))
        log.append(await read(ctx, bench.bus, P.BOARD_REGS["lan_link"]) == (lan, lan))

    simulate(bench, tb, name="board_regs_split")
    lan = pack(P.LINK_FIELDS, speed=2)
    assert log[:5] == [(0x00, 0xC0DE0000, 0xC0DE0000, 1), (0x7F, 0xC0DE007F, 0xC0DE007F, 2),
                       (P.BOARD_REGS["lan_link"], lan, lan, 2), (0x05, 0xC0DE0005, 0xC0DE0005, 3),
                       (0xFF, 0, 0, 3)]
    assert log[5] == (1, 0x7F, 0xAA55)
    assert log[6] is True
