"""The control plane's memory map: the one definition of every SoC address.

The gateware decodes with these numbers, ``python -m ackfilter.regmap``
writes them into ``firmware/include/ackfilter_regs.h`` for the firmware, and
the tests read them from here. Byte addresses; every register is a 32-bit
word.

=================  ===========  ==================================================
region             base         what
=================  ===========  ==================================================
RAM                0x00000000   code and data, block RAM initialised with the
                                firmware image at build time (``RAM_BYTES``)
datapath CSRs      0x10000000   the core's parameter/counter bank: the word at
                                ``CSR_BASE + 4 * addr`` is CSR ``addr``
                                (``ackfilter_regs.h``'s ``ACKFILTER_CSR_*``)
SoC registers      0x20000000   UART, timer, SPI flash pins, identification
=================  ===========  ==================================================

The region is chosen by address bits 29-28; an address past the end of a
region reads 0 and ignores writes, so a stray access never hangs the CPU.
"""

__all__ = ["RAM_BASE", "RAM_BYTES", "CSR_BASE", "SOC_BASE", "SOC_REGS", "UART_BAUD",
           "UART_RX_FIFO_DEPTH", "REGION_SHIFT", "soc_addr", "FLASH_PARAMS_OFFSET",
           "FLASH_SECTOR_BYTES", "FLASH_PARAMS_SECTORS", "WATCHDOG_CYCLES",
           "WATCHDOG_RESET_CYCLES"]

REGION_SHIFT = 28                      # address bits 29-28 pick the region

RAM_BASE = 0x0000_0000
RAM_BYTES = 16 * 1024                  # 8 ECP5 block RAMs
CSR_BASE = 0x1000_0000
SOC_BASE = 0x2000_0000

#: SoC registers, word offsets from SOC_BASE: (name, offset, access, meaning).
SOC_REGS = (
    ("uart_data",    0, "rw", "write: send the byte (bits 7-0) when uart_status.tx_ready; "
                              "read: the oldest received byte (bits 7-0), bit 8 set if one was "
                              "there (reading takes it), bit 9 set if bytes were lost (the "
                              "receive FIFO was full) just before it"),
    ("uart_status",  1, "r",  "bit 0 tx_ready (a write to uart_data is taken), bit 1 rx_valid "
                              "(a byte waits), bit 2 rx_overrun (a byte was lost since the last "
                              "read of this register; reading clears it)"),
    ("timer_lo",     2, "r",  "cycles since reset, low word; reading it latches timer_hi"),
    ("timer_hi",     3, "r",  "the high word latched by the last read of timer_lo"),
    ("flash_out",    4, "rw", "SPI flash pins driven: bit 0 CS# (1 after reset), bit 1 SCK, "
                              "bit 2 data to the flash (its DI, IO0)"),
    ("flash_in",     5, "r",  "bit 0: the flash's data out (DO, IO1)"),
    ("soc_id",       6, "r",  "0x534F4331 ('SOC1'): the SoC register layout"),
    ("sys_clk_hz",   7, "r",  "the CPU's and the datapath's clock, Hz"),
    ("watchdog",     8, "rw", "write: start the watchdog's count again (the firmware must, at "
                              "least every WATCHDOG_CYCLES, or the CPU restarts; the datapath and "
                              "its registers run on); read: bits 7-0 the CPU restarts it made "
                              "since power-on"),
)

#: The watchdog's time: 2^27 cycles, 2.7 s at 50 MHz (the longest a command
#: runs, a save on a slow flash, is well under a second).
WATCHDOG_CYCLES = 1 << 27
#: How long a watchdog restart holds the CPU and its bus in reset, cycles.
WATCHDOG_RESET_CYCLES = 16

UART_BAUD = 115_200
UART_RX_FIFO_DEPTH = 32
SOC_ID_VALUE = 0x534F_4331

#: Saved parameters: the last two 4 KiB sectors of the SPI flash's first
#: 16 Mbit, written in turn (firmware/src/store.h), far past the bitstream
#: (about 580 KiB on the 25F; the board build refuses one that reaches them).
FLASH_SECTOR_BYTES = 4096
FLASH_PARAMS_SECTORS = 2
FLASH_PARAMS_OFFSET = 0x20_0000 - FLASH_PARAMS_SECTORS * FLASH_SECTOR_BYTES


def soc_addr(name):
    """Byte address of the SoC register ``name``."""
    for n, offset, _access, _doc in SOC_REGS:
        if n == name:
            return SOC_BASE + 4 * offset
    raise KeyError(f"no SoC register {name!r}; they are: {', '.join(r[0] for r in SOC_REGS)}")
