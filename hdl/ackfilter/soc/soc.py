"""The control plane's SoC: SERV, its two buses merged, and the fabric
(RAM with the firmware, the datapath's CSR bank, UART, timer, flash pins).

``csr`` goes to the uplink core's CSR bank; ``pins`` are the UART's and the
SPI flash's (:data:`.periph.PinsSignature`). ``firmware`` is the image the RAM
starts with (``firmware/build/firmware.bin``, :func:`firmware_image`).
"""

import os
import subprocess
from pathlib import Path

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

__all__ = ["SoC", "firmware_image", "build_firmware", "make_firmware", "FirmwareError", "FIRMWARE_DIR",
           "FIRMWARE_BIN"]

FIRMWARE_DIR = Path(__file__).resolve().parents[3] / "firmware"
FIRMWARE_BIN = FIRMWARE_DIR / "build" / "firmware.bin"


class FirmwareError(RuntimeError):
    """The firmware could not be built or read."""


def make_firmware(*targets):
    """``make -C firmware TARGETS...`` under a lock shared by every process of
    this checkout (pytest-xdist workers), so no one runs a file another is
    still writing. Returns the ``CompletedProcess``."""
    from ..sim.verilog import build_dir, file_lock
    # Not the variables of a make that runs us (`make bitstream BOARD=...`
    # passes BOARD down through MAKEFLAGS): the firmware's make has its own.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    with file_lock(build_dir() / "firmware.lock"):
        return subprocess.run(["make", "-s", "-C", str(FIRMWARE_DIR), *targets],
                              capture_output=True, text=True, env=env)


def build_firmware():
    """``make -C firmware`` (it rebuilds only what changed); the image's path."""
    proc = make_firmware()
    if proc.returncode != 0:
        raise FirmwareError(f"`make -C firmware` failed:\n{(proc.stdout + proc.stderr)[-3000:]}")
    if not FIRMWARE_BIN.is_file():
        raise FirmwareError(f"`make -C firmware` made no {FIRMWARE_BIN}")
    return FIRMWARE_BIN


def firmware_image(path=FIRMWARE_BIN):
    """The firmware image's bytes; a clear error when it has not been built."""
    path = Path(path)
    if not path.is_file():
        raise FirmwareError(f"no firmware image at {path}: run `make firmware`")
    return path.read_bytes()


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
