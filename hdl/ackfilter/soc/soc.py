"""The control plane's SoC: SERV, its two buses merged, and the fabric
(RAM with the firmware, the datapath's CSR bank, UART, timer, flash pins).

``csr`` goes to the uplink core's CSR bank; ``pins`` are the UART's and the
SPI flash's (:data:`.periph.PinsSignature`). ``firmware`` is the image the RAM
starts with (``firmware/build/firmware.bin``, :func:`ackfilter.firmware.firmware_image`).
"""

from amaranth.hdl import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out, connect

from .. import params as P
from ..gateware.csr import CSRBusSignature
from . import memmap as M
from .bus import Arbiter
from .cpu import SERV
from .fabric import Fabric
from .periph import PinsSignature

__all__ = ["SoC"]

class SoC(wiring.Component):
    csr: Out(CSRBusSignature)
    pins: Out(PinsSignature)

    def __init__(self, *, firmware, ram_bytes=M.RAM_BYTES, clk_hz=P.F_SYS_HZ, baud=M.UART_BAUD,
                 watchdog_cycles=M.WATCHDOG_CYCLES):
        self.fabric = Fabric(firmware=firmware, ram_bytes=ram_bytes, clk_hz=clk_hz, baud=baud,
                             watchdog_cycles=watchdog_cycles)
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        # The watchdog restarts the CPU and the arbiter between it and the
        # bus; the RAM, the SoC's registers and the datapath run on.
        m.submodules.cpu = cpu = SERV()
        m.submodules.arbiter = arb = ResetInserter(self.fabric.cpu_reset)(Arbiter())
        m.d.comb += cpu.rst.eq(self.fabric.cpu_reset)
        m.submodules.fabric = fab = self.fabric
        connect(m, cpu.ibus, arb.ibus)
        connect(m, cpu.dbus, arb.dbus)
        connect(m, arb.bus, fab.bus)
        connect(m, fab.csr, wiring.flipped(self.csr))
        connect(m, fab.pins, wiring.flipped(self.pins))
        return m
