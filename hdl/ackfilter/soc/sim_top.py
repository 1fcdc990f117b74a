"""The whole control plane and datapath for Verilator (``make sim-soc``):
the SoC with its firmware and the uplink core, module ``soc_top``.

Ports: ``clk``, ``rst`` (registered before it resets anything, as the replay
top's), the core's streams ``i_*``/``o_*`` and ``now`` (docs/spec.md section
8), ``uart_tx``/``uart_rx``, and the SPI flash's ``flash_cs_n``,
``flash_sck``, ``flash_di`` (to the flash) and ``flash_do`` (from it). The
CSR bank belongs to the CPU here: the harness sees the datapath only through
its streams and the firmware.

``baud``: the simulated UART's rate. The harness moves bytes, not volts, so
it runs the UART at 16 clock cycles a bit (3.9 Mbaud) by default: a reply
then takes the CPU's time, not the line's. The firmware does not depend on
the rate.
"""

from amaranth.hdl import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .. import params as P
from ..gateware.core import UplinkCore, flat_streams
from .soc import SoC

__all__ = ["SoCSimTop", "SIM_BAUD", "SIM_WATCHDOG_CYCLES"]

SIM_BAUD = P.F_SYS_HZ // 16
#: The watchdog's time in simulation: 168 ms of the simulated clock (the
#: board's 2.7 s would take minutes to run out), still far above the longest
#: stretch the firmware goes without a kick (a `list` printed at SIM_BAUD).
SIM_WATCHDOG_CYCLES = 1 << 23


class SoCSimTop(wiring.Component):
    def __init__(self, *, firmware, baud=SIM_BAUD, watchdog_cycles=SIM_WATCHDOG_CYCLES, **sizes):
        self._sizes = sizes
        self.soc = SoC(firmware=firmware, baud=baud, watchdog_cycles=watchdog_cycles)
        super().__init__({
            "clk": In(1), "rst": In(1),
            "i_valid": In(1), "i_ready": Out(1), "i_data": In(32), "i_keep": In(4),
            "i_first": In(1), "i_last": In(1),
            "o_valid": Out(1), "o_ready": In(1), "o_data": Out(32), "o_keep": Out(4),
            "o_first": Out(1), "o_last": Out(1),
            "now": In(48), "idle": Out(1),
            "uart_tx": Out(1, init=1), "uart_rx": In(1, init=1),
            "flash_cs_n": Out(1, init=1), "flash_sck": Out(1), "flash_di": Out(1),
            "flash_do": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = sync = ClockDomain("sync")
        rst_q = Signal(init=1, reset_less=True)
        m.d.sync += rst_q.eq(self.rst)
        m.d.comb += [sync.clk.eq(self.clk), sync.rst.eq(rst_q)]
        m.submodules.core = core = UplinkCore(**self._sizes)
        m.submodules.soc = soc = self.soc
        wiring.connect(m, soc.csr, core.csr)
        m.d.comb += flat_streams(core, self)
        m.d.comb += [
            self.idle.eq(core.idle),
            self.uart_tx.eq(soc.pins.tx), soc.pins.rx.eq(self.uart_rx),
            self.flash_cs_n.eq(soc.pins.flash_cs_n), self.flash_sck.eq(soc.pins.flash_sck),
            self.flash_di.eq(soc.pins.flash_di), soc.pins.flash_do.eq(self.flash_do),
        ]
        return m
