"""UART, 8 data bits, no parity, one stop bit (8N1), at a fixed divisor.

:class:`UARTTx` shifts a byte out LSB first; :class:`UARTRx` samples the
line in the middle of each bit after a start bit's falling edge, through a
two-flop synchroniser, and drops a byte whose stop bit is low (a framing
error: a break, or the wrong baud rate). ``divisor`` is clock cycles per bit
(434 for 115200 baud at 50 MHz: 0.007 % fast).
"""

from amaranth.hdl import *
from amaranth.lib import wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

__all__ = ["UARTTx", "UARTRx", "divisor_for"]


def divisor_for(clk_hz, baud):
    """Cycles per bit, the nearest; refuses a rate more than 2 % off (the
    8N1 frame tolerates about 4 % between the two ends together)."""
    if baud <= 0 or clk_hz <= 0:
        raise ValueError(f"clock and baud must be positive, not {clk_hz} Hz and {baud} baud")
    d = round(clk_hz / baud)
    if d < 4 or abs(clk_hz / d - baud) > 0.02 * baud:
        raise ValueError(f"{baud} baud is not within 2 % at {clk_hz} Hz (divisor {d})")
    return d


class UARTTx(wiring.Component):
    """``data``/``valid`` in, taken in a cycle with ``ready``; ``tx`` idles high."""

    data: In(8)
    valid: In(1)
    ready: Out(1)
    tx: Out(1, init=1)

    def __init__(self, divisor):
        self.divisor = divisor
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        shift = Signal(10)          # stop, data[7:0], start; LSB leaves first
        bits = Signal(range(11))
        timer = Signal(range(self.divisor))
        m.d.comb += self.ready.eq(bits == 0)
        with m.If(self.ready):
            with m.If(self.valid):
                m.d.sync += [shift.eq(Cat(C(0, 1), self.data, C(1, 1))), bits.eq(10),
                             timer.eq(0)]
        with m.Else():
            m.d.sync += self.tx.eq(shift[0])
            with m.If(timer == self.divisor - 1):
                m.d.sync += [timer.eq(0), shift.eq(shift >> 1), bits.eq(bits - 1)]
            with m.Else():
                m.d.sync += timer.eq(timer + 1)
        with m.If(self.ready & ~self.valid):
            m.d.sync += self.tx.eq(1)
        return m


class UARTRx(wiring.Component):
    """``rx`` in; a received byte is ``data`` in the one cycle ``valid`` is high."""

    rx: In(1, init=1)
    data: Out(8)
    valid: Out(1)
    framing_error: Out(1)

    def __init__(self, divisor):
        self.divisor = divisor
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        rx = Signal(init=1)
        m.submodules.sync_rx = FFSynchronizer(self.rx, rx, init=1)
        timer = Signal(range(self.divisor))
        bits = Signal(range(10))
        shift = Signal(8)
        m.d.sync += [self.valid.eq(0), self.framing_error.eq(0)]
        with m.FSM():
            with m.State("IDLE"):
                with m.If(~rx):
                    m.d.sync += timer.eq(self.divisor // 2 - 1)
                    m.next = "START"
            with m.State("START"):              # the middle of the start bit
                with m.If(timer == 0):
                    with m.If(rx):
                        m.next = "IDLE"         # a glitch, not a start bit
                    with m.Else():
                        m.d.sync += [timer.eq(self.divisor - 1), bits.eq(0)]
                        m.next = "DATA"
                with m.Else():
                    m.d.sync += timer.eq(timer - 1)
            with m.State("DATA"):
                with m.If(timer == 0):
                    m.d.sync += [shift.eq(Cat(shift[1:], rx)), timer.eq(self.divisor - 1),
                                 bits.eq(bits + 1)]
                    with m.If(bits == 7):
                        m.next = "STOP"
                with m.Else():
                    m.d.sync += timer.eq(timer - 1)
            with m.State("STOP"):
                with m.If(timer == 0):
                    with m.If(rx):
                        m.d.sync += [self.data.eq(shift), self.valid.eq(1)]
                        m.next = "IDLE"
                    with m.Else():
                        m.d.sync += self.framing_error.eq(1)
                        m.next = "BREAK"
                with m.Else():
                    m.d.sync += timer.eq(timer - 1)
            with m.State("BREAK"):              # wait for the line to idle again
                with m.If(rx):
                    m.next = "IDLE"
        return m
