"""The SoC's own registers (:data:`.memmap.SOC_REGS`): UART, timer, SPI flash
pins and identification, and the slaves for RAM and the datapath's CSR bank."""

from amaranth.hdl import *
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .. import params as P
from ..gateware.csr import READ_LATENCY, CSRBusSignature
from . import memmap as M
from .bus import BusSignature
from .uart import UARTRx, UARTTx, divisor_for

__all__ = ["SoCRegs", "RAM", "CSRBridge", "PinsSignature"]

#: The SoC's pins, seen from the SoC: the UART's lines and the SPI flash's
#: CS#, SCK, DI (to the flash) and DO (from it).
PinsSignature = wiring.Signature({
    "tx":         Out(1, init=1),
    "rx":         In(1, init=1),
    "flash_cs_n": Out(1, init=1),
    "flash_sck":  Out(1),
    "flash_di":   Out(1),
    "flash_do":   In(1),
})

_OFF = {name: off for name, off, _a, _d in M.SOC_REGS}


class SoCRegs(wiring.Component):
    """Bus slave for the SoC registers; ``pins``: the UART's and the SPI
    flash's (:data:`PinsSignature`). ``cpu_reset`` restarts the CPU and its
    bus when the watchdog runs out (these registers keep their state).

    ``watchdog_cycles``: the watchdog's time, a power of two (a smaller one
    for simulations)."""

    bus: In(BusSignature)
    pins: Out(PinsSignature)
    cpu_reset: Out(1)

    def __init__(self, *, clk_hz=P.F_SYS_HZ, baud=M.UART_BAUD, watchdog_cycles=M.WATCHDOG_CYCLES):
        if watchdog_cycles < 2 * M.WATCHDOG_RESET_CYCLES or watchdog_cycles & (watchdog_cycles - 1):
            self._MustUse__silence = True   # never built
            raise ValueError(f"watchdog_cycles must be a power of two of at least "
                             f"{2 * M.WATCHDOG_RESET_CYCLES}, not {watchdog_cycles}")
        self.clk_hz = clk_hz
        self.divisor = divisor_for(clk_hz, baud)
        self.watchdog_cycles = watchdog_cycles
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.submodules.utx = utx = UARTTx(self.divisor)
        m.submodules.urx = urx = UARTRx(self.divisor)
        # Each received byte with a mark: bytes were lost (the FIFO was full)
        # just before it, so that the firmware knows which line they were in.
        m.submodules.rxq = rxq = SyncFIFO(width=9, depth=M.UART_RX_FIFO_DEPTH)
        lost = Signal()
        m.d.comb += [self.pins.tx.eq(utx.tx), urx.rx.eq(self.pins.rx),
                     rxq.w_data.eq(Cat(urx.data, lost)), rxq.w_en.eq(urx.valid)]
        overrun = Signal()
        with m.If(urx.valid & ~rxq.w_rdy):
            m.d.sync += [overrun.eq(1), lost.eq(1)]
        with m.Elif(urx.valid):
            m.d.sync += lost.eq(0)

        timer = Signal(64)
        timer_hi = Signal(32)
        m.d.sync += timer.eq(timer + 1)

        # The watchdog: a count the firmware starts again by writing; at its
        # top bit the CPU and its bus are held in reset for a few cycles.
        wdt = Signal(range(self.watchdog_cycles + 1))
        restarts = Signal(8)
        hold = Signal(range(M.WATCHDOG_RESET_CYCLES + 1))
        m.d.sync += wdt.eq(wdt + 1)
        with m.If(wdt[-1]):
            m.d.sync += [wdt.eq(0), hold.eq(M.WATCHDOG_RESET_CYCLES), restarts.eq(restarts + 1)]
        with m.Elif(hold != 0):
            m.d.sync += hold.eq(hold - 1)
        m.d.comb += self.cpu_reset.eq(hold != 0)

        flash = Signal(3, init=1)
        m.d.comb += [self.pins.flash_cs_n.eq(flash[0]), self.pins.flash_sck.eq(flash[1]),
                     self.pins.flash_di.eq(flash[2])]
        flash_do = Signal()
        m.d.sync += flash_do.eq(self.pins.flash_do)

        bus = self.bus
        ack = Signal()
        m.d.comb += bus.ack.eq(ack)
        m.d.sync += [ack.eq(bus.cyc & ~ack), bus.dat_r.eq(0)]
        off = bus.adr[:4]
        m.d.comb += [utx.data.eq(bus.dat_w[:8]), utx.valid.eq(0), rxq.r_en.eq(0)]
        access = bus.cyc & ~ack            # the one cycle an access takes effect
        with m.If(access & (bus.adr[4:] == 0)):
            with m.If(bus.we):
                with m.Switch(off):
                    with m.Case(_OFF["uart_data"]):
                        m.d.comb += utx.valid.eq(1)     # dropped if the UART is busy
                    with m.Case(_OFF["flash_out"]):
                        m.d.sync += flash.eq(bus.dat_w[:3])
                    with m.Case(_OFF["watchdog"]):
                        m.d.sync += wdt.eq(0)
            with m.Else():
                with m.Switch(off):
                    with m.Case(_OFF["uart_data"]):
                        m.d.sync += bus.dat_r.eq(Cat(rxq.r_data[:8], rxq.r_rdy, rxq.r_data[8]))
                        m.d.comb += rxq.r_en.eq(1)
                    with m.Case(_OFF["uart_status"]):
                        m.d.sync += [bus.dat_r.eq(Cat(utx.ready, rxq.r_rdy, overrun)),
                                     overrun.eq(urx.valid & ~rxq.w_rdy)]
                    with m.Case(_OFF["timer_lo"]):
                        m.d.sync += [bus.dat_r.eq(timer[:32]), timer_hi.eq(timer[32:])]
                    with m.Case(_OFF["timer_hi"]):
                        m.d.sync += bus.dat_r.eq(timer_hi)
                    with m.Case(_OFF["flash_out"]):
                        m.d.sync += bus.dat_r.eq(flash)
                    with m.Case(_OFF["flash_in"]):
                        m.d.sync += bus.dat_r.eq(flash_do)
                    with m.Case(_OFF["soc_id"]):
                        m.d.sync += bus.dat_r.eq(M.SOC_ID_VALUE)
                    with m.Case(_OFF["sys_clk_hz"]):
                        m.d.sync += bus.dat_r.eq(self.clk_hz)
                    with m.Case(_OFF["watchdog"]):
                        m.d.sync += bus.dat_r.eq(restarts)
        return m


class RAM(wiring.Component):
    """Block RAM for code and data, ``init`` the firmware image (bytes)."""

    bus: In(BusSignature)

    def __init__(self, *, size=M.RAM_BYTES, init=b""):
        self._MustUse__silence = True       # not built if refused below
        if size % 4 or size & (size - 1):
            raise ValueError(f"RAM size must be a power of two of words, not {size} bytes")
        if len(init) > size:
            raise ValueError(f"the firmware image ({len(init)} bytes) does not fit the RAM "
                             f"({size} bytes)")
        self._MustUse__silence = False
        self.size = size
        image = bytes(init) + bytes(-len(init) % 4)
        self.words = [int.from_bytes(image[i:i + 4], "little") for i in range(0, len(image), 4)]
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        depth = self.size // 4
        m.submodules.mem = mem = Memory(shape=32, depth=depth, init=self.words)
        rd = mem.read_port()
        wr = mem.write_port(granularity=8)
        bus = self.bus
        ack = Signal()
        m.d.sync += ack.eq(bus.cyc & ~ack)
        m.d.comb += [bus.ack.eq(ack), rd.addr.eq(bus.adr), wr.addr.eq(bus.adr),
                     wr.data.eq(bus.dat_w), bus.dat_r.eq(rd.data)]
        with m.If(bus.cyc & bus.we & ~ack):
            m.d.comb += wr.en.eq(bus.sel)
        return m


class CSRBridge(wiring.Component):
    """The bus onto the datapath's CSR bank: word ``addr`` of the region is
    CSR ``addr``. The bank's bus is driven from registers (the CPU's address
    decode and the bank's write clamp would otherwise be one path across the
    chip): a write is acknowledged in the cycle its strobe reaches the bank,
    a read ``READ_LATENCY`` cycles after its strobe, with the bank's word
    (so a read takes ``READ_LATENCY + 2`` cycles, a write two, and the bank
    sees a strobe at most every other cycle)."""

    bus: In(BusSignature)
    csr: Out(CSRBusSignature)

    def elaborate(self, platform):
        m = Module()
        bus, csr = self.bus, self.csr
        busy = Signal()                     # a transaction is under way
        wait = Signal(READ_LATENCY)         # a read in flight: its cycles since r_stb
        ack = Signal()
        m.d.comb += [bus.ack.eq(ack), bus.dat_r.eq(csr.r_data)]
        m.d.sync += [ack.eq(0), csr.w_stb.eq(0), csr.r_stb.eq(0), wait.eq(wait << 1)]
        inside = bus.adr[len(csr.addr):] == 0
        with m.If(bus.cyc & ~busy & ~ack):
            m.d.sync += [busy.eq(1), csr.addr.eq(bus.adr), csr.w_data.eq(bus.dat_w)]
            with m.If(bus.we):
                m.d.sync += [csr.w_stb.eq(inside), ack.eq(1)]
            with m.Else():
                m.d.sync += [csr.r_stb.eq(inside), wait.eq(1)]
        with m.If(wait[-1]):
            m.d.sync += ack.eq(1)
        with m.If(ack):
            m.d.sync += busy.eq(0)
        return m
