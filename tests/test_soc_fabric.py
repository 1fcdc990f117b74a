"""The SoC without its CPU (``ackfilter.soc.fabric``), driven as the CPU drives
its bus: RAM with its image and byte writes, the datapath's CSR bank through
the bridge, the UART's line checked bit by bit against 8N1 at the divisor's
timing, the receive FIFO and its overrun, the timer's latch, the flash pins,
and the decoder's empty region."""

import pytest
from amaranth.hdl import *
from amaranth.lib.wiring import connect

from ackfilter import params as P
from ackfilter.gateware.csr import CSRBank
from ackfilter.soc import memmap as M
from ackfilter.soc.fabric import Fabric
from ackfilter.soc.uart import divisor_for
from blocksim import simulate

FAST_BAUD = P.F_SYS_HZ // 16           # 16 cycles a bit: short simulations
DIV = 16


class Top(Elaboratable):
    def __init__(self, **kw):
        self.fabric = Fabric(**kw)
        self.bank = CSRBank()

    def elaborate(self, platform):
        m = Module()
        m.submodules.fabric, m.submodules.bank = self.fabric, self.bank
        connect(m, self.fabric.csr, self.bank.bus)
        return m


async def access(ctx, bus, byte_addr, data=None, sel=0xF, limit=20):
    """One bus access as the CPU makes it; the read word (or None) and the cycles it took."""
    ctx.set(bus.adr, byte_addr >> 2)
    ctx.set(bus.we, data is not None)
    ctx.set(bus.dat_w, data or 0)
    ctx.set(bus.sel, sel)
    ctx.set(bus.cyc, 1)
    for n in range(1, limit):
        await ctx.tick()
        if ctx.get(bus.ack):
            word = ctx.get(bus.dat_r)
            ctx.set(bus.cyc, 0)
            await ctx.tick()
            assert not ctx.get(bus.ack), "a second ack after cyc fell"
            return (None if data is not None else word), n
    raise AssertionError(f"no ack at {byte_addr:#x} in {limit} cycles")


async def read(ctx, bus, addr):
    return (await access(ctx, bus, addr))[0]


async def write(ctx, bus, addr, value, sel=0xF):
    await access(ctx, bus, addr, value, sel)


async def wait_for(ctx, signal, value):
    async for _ in ctx.tick():
        if ctx.get(signal) == value:
            return


def run(top, bench):
    simulate(top, bench, name="soc_fabric")


def test_ram_holds_the_image_and_takes_byte_writes():
    image = bytes(range(1, 41))
    top = Top(firmware=image, ram_bytes=256)
    bus = top.fabric.bus

    async def bench(ctx):
        for i in range(0, 40, 4):
            assert await read(ctx, bus, i) == int.from_bytes(image[i:i + 4], "little")
        assert await read(ctx, bus, 60) == 0                  # past the image: zero
        await write(ctx, bus, 8, 0xAABBCCDD, sel=0b0100)      # byte 2 only
        want = bytearray(image[8:12])
        want[2] = 0xBB
        assert await read(ctx, bus, 8) == int.from_bytes(want, "little")
        await write(ctx, bus, 252, 0x12345678)                # the last word
        assert await read(ctx, bus, 252) == 0x12345678

    run(top, bench)


def test_ram_refuses_an_image_that_does_not_fit():
    with pytest.raises(ValueError, match="does not fit"):
        Fabric(firmware=bytes(300), ram_bytes=256)


def test_datapath_csrs_read_and_write_through_the_bridge_with_clamping():
    top = Top(ram_bytes=256)
    bus = top.fabric.bus
    red_max_p = next(p for p in P.PARAMS if p.name == "red_max_p")
    ack_mode = next(p for p in P.PARAMS if p.name == "ack_mode")

    async def bench(ctx):
        assert await read(ctx, bus, M.CSR_BASE + 4 * P.INFO["id"]) == P.ID_VALUE
        assert await read(ctx, bus, M.CSR_BASE + 4 * red_max_p.addr) == red_max_p.default
        await write(ctx, bus, M.CSR_BASE + 4 * red_max_p.addr, 1000)
        assert await read(ctx, bus, M.CSR_BASE + 4 * red_max_p.addr) == 1000
        await write(ctx, bus, M.CSR_BASE + 4 * red_max_p.addr, 10**9)        # clamped
        assert await read(ctx, bus, M.CSR_BASE + 4 * red_max_p.addr) == red_max_p.maximum
        assert ctx.get(top.bank.params.red_max_p) == red_max_p.maximum
        await write(ctx, bus, M.CSR_BASE + 4 * ack_mode.addr, 0)
        await ctx.tick()                # the bank registers a write before it applies it
        assert ctx.get(top.bank.params.ack_mode) == 0
        # past the bank's 256 words: nothing answers but the ack, and nothing changes
        await write(ctx, bus, M.CSR_BASE + 4 * (256 + ack_mode.addr), 2)
        await ctx.tick()
        assert ctx.get(top.bank.params.ack_mode) == 0

    run(top, bench)


def test_the_empty_region_reads_zero_and_acks():
    top = Top(ram_bytes=256)
    bus = top.fabric.bus

    async def bench(ctx):
        word, cycles = await access(ctx, bus, 0x3000_0010)
        assert word == 0 and cycles <= 2
        await write(ctx, bus, 0x3000_0010, 5)

    run(top, bench)


def test_identification_and_clock():
    top = Top(ram_bytes=256)
    bus = top.fabric.bus

    async def bench(ctx):
        assert await read(ctx, bus, M.soc_addr("soc_id")) == M.SOC_ID_VALUE
        assert await read(ctx, bus, M.soc_addr("sys_clk_hz")) == P.F_SYS_HZ

    run(top, bench)


def test_timer_counts_cycles_and_latches_its_high_word():
    top = Top(ram_bytes=256)
    bus = top.fabric.bus

    async def bench(ctx):
        a = await read(ctx, bus, M.soc_addr("timer_lo"))
        b = await read(ctx, bus, M.soc_addr("timer_lo"))
        _, n = await access(ctx, bus, M.soc_addr("timer_lo"))
        assert b - a == n + 1          # one access: its cycles and the idle one after
        assert await read(ctx, bus, M.soc_addr("timer_hi")) == 0

    run(top, bench)


def uart_frame(byte, *, stop=1):
    return [0] + [(byte >> i) & 1 for i in range(8)] + [stop]


def test_uart_sends_8n1_at_the_divisor():
    top = Top(ram_bytes=256, baud=FAST_BAUD)
    bus, tx = top.fabric.bus, top.fabric.pins.tx
    sent = []

    async def bench(ctx):
        for byte in (0x55, 0xA3, 0x00, 0xFF):
            while not (await read(ctx, bus, M.soc_addr("uart_status"))) & 1:
                pass
            await write(ctx, bus, M.soc_addr("uart_data"), 0x100 | byte)   # bit 8 ignored
        for _ in range(60 * DIV):
            await ctx.tick()

    async def line(ctx):
        # decode the line independently: a falling edge, then the middle of each bit
        while len(sent) < 4:
            await wait_for(ctx, tx, 0)
            await ctx.tick().repeat(DIV // 2)
            bits = []
            for i in range(10):
                bits.append(ctx.get(tx))
                if i < 9:
                    await ctx.tick().repeat(DIV)
            assert bits[0] == 0 and bits[9] == 1, bits      # in the middle of the stop bit
            sent.append(sum(b << i for i, b in enumerate(bits[1:9])))

    simulate(top, bench, line, name="soc_uart_tx")
    assert sent == [0x55, 0xA3, 0x00, 0xFF]
    assert divisor_for(P.F_SYS_HZ, FAST_BAUD) == DIV


def test_uart_receives_into_its_fifo_drops_framing_errors_and_flags_overrun():
    top = Top(ram_bytes=256, baud=FAST_BAUD)
    bus, rx = top.fabric.bus, top.fabric.pins.rx
    data = [0x41, 0x0A, 0xFF, 0x00]
    got = {}

    async def drive(ctx, bits):
        for b in bits:
            ctx.set(rx, b)
            await ctx.tick().repeat(DIV)

    async def line(ctx):
        ctx.set(rx, 1)
        await ctx.tick().repeat(3)
        for byte in data:
            await drive(ctx, uart_frame(byte) + [1, 1])
        await drive(ctx, uart_frame(0x77, stop=0) + [0] * 12 + [1, 1])   # a break: no byte
        await drive(ctx, uart_frame(0x42))
        ctx.set(rx, 1)

    async def bench(ctx):
        await ctx.tick().repeat(DIV * 12 * 7 + 100)
        st = await read(ctx, bus, M.soc_addr("uart_status"))
        assert st & 2 and not st & 4
        got["bytes"] = []
        while True:
            w = await read(ctx, bus, M.soc_addr("uart_data"))
            if not w & 0x100:
                break
            got["bytes"].append(w & 0xFF)
        # overrun: more bytes than the FIFO holds, nobody reading
        for i in range(M.UART_RX_FIFO_DEPTH + 2):
            for b in uart_frame(i) + [1]:
                ctx.set(rx, b)
                await ctx.tick().repeat(DIV)
        st = await read(ctx, bus, M.soc_addr("uart_status"))
        assert st & 4, "overrun not flagged"
        assert not (await read(ctx, bus, M.soc_addr("uart_status"))) & 4, "overrun not cleared"
        kept = []
        while (w := await read(ctx, bus, M.soc_addr("uart_data"))) & 0x100:
            kept.append(w & 0x2FF)
        got["kept"] = kept
        # the next byte to arrive carries the mark (bit 9): bytes were lost
        # just before it; the one after it does not
        for byte in (0x61, 0x62):
            for b in uart_frame(byte) + [1]:
                ctx.set(rx, b)
                await ctx.tick().repeat(DIV)
        got["after"] = [await read(ctx, bus, M.soc_addr("uart_data")) & 0x3FF for _ in range(3)]

    simulate(top, bench, line, name="soc_uart_rx")
    assert got["bytes"] == data + [0x42]
    assert got["kept"] == list(range(M.UART_RX_FIFO_DEPTH))      # the oldest kept, unmarked
    assert got["after"][:2] == [0x200 | 0x100 | 0x61, 0x100 | 0x62]
    assert not got["after"][2] & 0x100                            # then empty


def test_flash_pins_follow_the_register_and_its_data_out_is_read():
    top = Top(ram_bytes=256)
    f = top.fabric

    async def bench(ctx):
        assert ctx.get(f.pins.flash_cs_n) == 1 and ctx.get(f.pins.flash_sck) == 0
        await write(ctx, f.bus, M.soc_addr("flash_out"), 0b110)
        assert (ctx.get(f.pins.flash_cs_n), ctx.get(f.pins.flash_sck), ctx.get(f.pins.flash_di)) == (0, 1, 1)
        assert await read(ctx, f.bus, M.soc_addr("flash_out")) == 0b110
        for level in (1, 0, 1):
            ctx.set(f.pins.flash_do, level)
            await ctx.tick().repeat(2)
            assert await read(ctx, f.bus, M.soc_addr("flash_in")) == level

    run(top, bench)


def test_divisor_for_refuses_rates_the_clock_cannot_make():
    assert divisor_for(62_500_000, 115_200) == 543            # 115,101 baud: 0.09 % slow
    with pytest.raises(ValueError, match="not within 2 %"):
        divisor_for(1_000_000, 300_000)
    with pytest.raises(ValueError, match="positive"):
        divisor_for(62_500_000, 0)


def test_the_watchdog_restarts_the_cpu_unless_kicked_and_counts_it():
    """A write starts the count again; at `watchdog_cycles` without one,
    `cpu_reset` holds for WATCHDOG_RESET_CYCLES and the register counts the
    restart; the CSR bank behind the fabric keeps its values through it."""
    wdt = 256
    top = Top(ram_bytes=256, watchdog_cycles=wdt)
    bus, reset = top.fabric.bus, top.fabric.cpu_reset
    ack_mode = M.CSR_BASE + 4 * P.param("ack_mode").addr
    seen = {}

    async def bench(ctx):
        await write(ctx, bus, ack_mode, 1)
        assert await read(ctx, bus, M.soc_addr("watchdog")) == 0
        for _ in range(8):                          # kicked in time: never
            await ctx.tick().repeat(wdt // 2)
            await write(ctx, bus, M.soc_addr("watchdog"), 1)
        pulses, t = [], 0
        while len(pulses) < 2 or ctx.get(reset):    # not kicked: twice
            if ctx.get(reset):
                if not pulses or pulses[-1][1] != t - 1:
                    pulses.append([t, t])
                pulses[-1][1] = t
            await ctx.tick()
            t += 1
            assert t < 4 * wdt
        seen["pulses"] = [(b - a + 1, a) for a, b in pulses]
        seen["restarts"] = await read(ctx, bus, M.soc_addr("watchdog"))
        seen["ack_mode"] = await read(ctx, bus, ack_mode)

    simulate(top, bench, name="soc_watchdog")
    (len0, t0), (len1, t1) = seen["pulses"]
    assert len0 == len1 == M.WATCHDOG_RESET_CYCLES
    assert t1 - t0 == wdt + 1                       # the count starts again with the pulse
    assert seen["restarts"] == 2 and seen["ack_mode"] == 1


def test_the_watchdog_time_must_be_a_power_of_two():
    with pytest.raises(ValueError, match="power of two"):
        Fabric(watchdog_cycles=1000)
