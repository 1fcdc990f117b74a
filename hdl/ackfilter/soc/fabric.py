"""Everything of the SoC but the CPU: the decoder and its three slaves.

``bus`` comes from the CPU (through :class:`.bus.Arbiter`), ``csr`` goes to
the datapath's CSR bank; ``pins`` are the UART's and the SPI flash's. The
tests drive ``bus`` as the CPU would (``tests/test_soc_fabric.py``).
"""

from amaranth.hdl import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out, connect

from .. import params as P
from ..gateware.csr import CSRBusSignature
from . import memmap as M
from .bus import BusSignature, Decoder
from .periph import RAM, CSRBridge, PinsSignature, SoCRegs

__all__ = ["Fabric"]


class Fabric(wiring.Component):
    bus: In(BusSignature)
    csr: Out(CSRBusSignature)
    pins: Out(PinsSignature)
    cpu_reset: Out(1)                   # the watchdog's (:class:`.periph.SoCRegs`)

    def __init__(self, *, firmware=b"", ram_bytes=M.RAM_BYTES, clk_hz=P.F_SYS_HZ,
                 baud=M.UART_BAUD, watchdog_cycles=M.WATCHDOG_CYCLES):
        self._MustUse__silence = True       # not built if the RAM or the registers refuse
        self.regs = SoCRegs(clk_hz=clk_hz, baud=baud, watchdog_cycles=watchdog_cycles)
        self.regs._MustUse__silence = True
        self.ram = RAM(size=ram_bytes, init=firmware)
        self._MustUse__silence = self.regs._MustUse__silence = False
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        regions = {M.RAM_BASE: 0, M.CSR_BASE: 1, M.SOC_BASE: 2}
        assert all(base >> M.REGION_SHIFT == i for base, i in regions.items())
        m.submodules.decoder = dec = Decoder(3)
        m.submodules.ram = ram = self.ram
        m.submodules.bridge = bridge = CSRBridge()
        m.submodules.regs = regs = self.regs
        connect(m, wiring.flipped(self.bus), dec.bus)
        connect(m, dec.region(0), ram.bus)
        connect(m, dec.region(1), bridge.bus)
        connect(m, dec.region(2), regs.bus)
        connect(m, bridge.csr, wiring.flipped(self.csr))
        connect(m, regs.pins, wiring.flipped(self.pins))
        m.d.comb += self.cpu_reset.eq(regs.cpu_reset)
        return m
