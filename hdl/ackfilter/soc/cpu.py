"""The control plane's CPU: SERV, the bit-serial RISC-V, from PyPI's
``pythondata-cpu-serv`` (Verilog, instantiated as it is).

Chosen by measured area on the LFE5U-25F-6 (``python -m
ackfilter.reports.cpu_eval``; ``docs/design.md``, "Control plane"): 247 LUT4,
162 FF and one block RAM (the register file) without CSRs, against 1453 LUT4
for PicoRV32 and 1600 for VexRiscv's smallest; the firmware needs neither
interrupts nor speed. Configuration: RV32I, no compressed instructions, no
multiplier, no CSRs (so no traps and no timer interrupt), the register file
two bits wide in block RAM, ``RESET_STRATEGY`` MINI.

SERV's buses follow the Wishbone subset of :mod:`.bus`: ``cyc`` held to a
one-cycle ``ack``, the read word valid in the ack cycle, the data bus's write
data already in its byte lanes with ``sel``. The bus addresses are bytes;
``adr`` here is the word address (SERV's bits 31-2).
"""

from pathlib import Path

from amaranth.hdl import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .bus import BusSignature

__all__ = ["SERV", "serv_sources", "SERV_FILES", "SERV_PARAMETERS"]

#: The files of ``serv_rf_top`` (``serv_csr`` is not instantiated without CSRs,
#: but a ``hierarchy -check`` wants its module to exist).
SERV_FILES = ("serv_rf_top", "serv_rf_ram_if", "serv_rf_ram", "serv_top", "serv_state",
              "serv_decode", "serv_immdec", "serv_bufreg", "serv_bufreg2", "serv_ctrl",
              "serv_alu", "serv_rf_if", "serv_mem_if", "serv_csr")

SERV_PARAMETERS = {"RESET_PC": 0, "COMPRESSED": 0, "ALIGN": 0, "MDU": 0, "PRE_REGISTER": 1,
                   "RESET_STRATEGY": "MINI", "WITH_CSR": 0, "RF_WIDTH": 2}


def serv_sources():
    """``[(file name, Verilog text)]`` of SERV, from the installed package."""
    try:
        import pythondata_cpu_serv
    except ImportError:
        raise RuntimeError("the control plane needs pythondata-cpu-serv (in requirements.txt: "
                           "run `make venv`)") from None
    rtl = Path(pythondata_cpu_serv.data_location) / "rtl"
    return [(f"{name}.v", (rtl / f"{name}.v").read_text()) for name in SERV_FILES]


class SERV(wiring.Component):
    """``ibus`` and ``dbus``: SERV's two bus masters; ``rst`` restarts it
    (as the domain's reset does)."""

    ibus: Out(BusSignature)
    dbus: Out(BusSignature)
    rst: In(1)

    def elaborate(self, platform):
        m = Module()
        iadr = Signal(32)
        dadr = Signal(32)
        m.submodules.serv = Instance(
            "serv_rf_top",
            **{f"p_{k}": v for k, v in SERV_PARAMETERS.items()},
            i_clk=ClockSignal(), i_i_rst=ResetSignal() | self.rst, i_i_timer_irq=0,
            o_o_ibus_adr=iadr, o_o_ibus_cyc=self.ibus.cyc,
            i_i_ibus_rdt=self.ibus.dat_r, i_i_ibus_ack=self.ibus.ack,
            o_o_dbus_adr=dadr, o_o_dbus_dat=self.dbus.dat_w, o_o_dbus_sel=self.dbus.sel,
            o_o_dbus_we=self.dbus.we, o_o_dbus_cyc=self.dbus.cyc,
            i_i_dbus_rdt=self.dbus.dat_r, i_i_dbus_ack=self.dbus.ack,
            i_i_ext_rd=0, i_i_ext_ready=0,
        )
        m.d.comb += [self.ibus.adr.eq(iadr[2:]), self.ibus.sel.eq(0xF), self.ibus.we.eq(0),
                     self.dbus.adr.eq(dadr[2:])]
        return m
