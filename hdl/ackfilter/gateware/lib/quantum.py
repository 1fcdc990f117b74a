"""The flow queues' DRR quantum from the shaper's rate (``docs/spec.md``
section 12, "Quantum"): ``max(min(16 * F_SYS_HZ // cpb_q16, 1514), 300)``
bytes, 1514 unshaped; :func:`ackfilter.model.flowq.quantum_for_cpb` is its
executable form."""

from amaranth.hdl import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ...protocol import QUANTUM_MAX, QUANTUM_MIN
from ...params import F_SYS_HZ

__all__ = ["Quantum", "DIVIDEND"]

#: The dividend: the shaper's rate is F_SYS_HZ * 2^16 / cpb_q16 bytes a
#: second, and CAKE's quantum is that rate >> 12 (sch_cake.c, cake_set_rate).
DIVIDEND = 16 * F_SYS_HZ
_DIVIDEND_BITS = DIVIDEND.bit_length()              # 30 at 50 MHz
#: Quotient bits kept: a larger quotient only tells "at least QUANTUM_MAX".
_QUOTIENT_BITS = QUANTUM_MAX.bit_length()           # 11
#: Divisor bits the divider uses: from 2^22 on the quotient is below
#: QUANTUM_MIN (at most DIVIDEND >> 22 = 190), whatever the bits above.
_DIVISOR_BITS = (DIVIDEND // QUANTUM_MIN).bit_length()     # 22
assert DIVIDEND >> _DIVISOR_BITS < QUANTUM_MIN


class Quantum(wiring.Component):
    """The DRR quantum for ``cpb_q16``, by a serial restoring divider that
    recomputes it over and over.

    A division takes ``DIVISION_CYCLES`` (31) cycles: one to take ``cpb_q16``
    (and show the last division's result), then one per bit of ``DIVIDEND``
    (30), each bringing the next bit down into the partial remainder and
    subtracting the divisor where it fits (one 23-bit subtractor). The
    quotient's low 11 bits are kept; a 1 above them saturates it (so
    ``cpb_q16`` 0, whose every quotient bit is 1, gives 1514). A ``cpb_q16``
    of 2^22 or more always gives 300 (its quotient is at most 190): the
    divider holds 22 bits of the divisor and a flag for that.

    ``quantum`` is a register that changes only when a division ends: it is
    always the quantum of a ``cpb_q16`` the input held at some recent cycle,
    never a half-done result. A new ``cpb_q16`` shows in ``quantum``
    ``DIVISION_CYCLES + 1`` (32) to ``SETTLE_CYCLES`` (62) cycles after the
    first cycle it is there: the next division starts within 30 cycles and
    takes it, and its result shows 32 cycles after that start. (The value
    in ``quantum`` in cycle t is that of ``cpb_q16`` in one cycle of t - 62
    .. t - 32; 62 cycles are 1.24 us at 50 MHz.) After reset ``quantum`` is
    1514 (the quantum of the register's default, 0, unshaped) until the
    first division ends.

    A divider array or a multiplier would cost hundreds of LUTs for a value
    that changes only when a register is written. The divider finds all 30
    quotient bits rather than 11 after a check that the quotient is below
    2048: that check is a 22-bit comparator, which costs more than the
    19 cycles (Yosys synth_ecp5: 24 CCU2C, 46 LUT4, 73 FF against 32, 53, 72).

    Ports
    -----
    cpb_q16 : In(32)
        The shaper's cycles per byte, Q16 (``shaper_cpb_q16``; 0 unshaped).
    quantum : Out(11)
        The DRR quantum, bytes: ``QUANTUM_MIN`` .. ``QUANTUM_MAX``.
    """

    #: Cycles of one division: taking the divisor, then one per dividend bit.
    DIVISION_CYCLES = _DIVIDEND_BITS + 1
    #: Most cycles from the first cycle ``cpb_q16`` holds a new value to the
    #: first that ``quantum`` shows its result.
    SETTLE_CYCLES = 2 * DIVISION_CYCLES
    assert (DIVISION_CYCLES, SETTLE_CYCLES) == (31, 62), "the docstring's numbers are F_SYS_HZ's"

    cpb_q16: In(32)
    quantum: Out(range(QUANTUM_MAX + 1), init=QUANTUM_MAX)

    def elaborate(self, platform):
        m = Module()

        divisor = Signal(_DIVISOR_BITS)
        slow = Signal()                             # cpb_q16 >= 2^22: the quantum is QUANTUM_MIN
        remainder = Signal(_DIVISOR_BITS)           # below the divisor (divisor 0: don't care)
        quotient = Signal(_QUOTIENT_BITS)           # its low bits, shifted in from the right
        saturated = Signal(init=1)                  # a quotient bit above those was 1
        bits_left = Signal(range(_DIVIDEND_BITS + 1))   # dividend bits to bring down; 0: start

        # The dividend bit of this step is bit (bits_left - 1) of the constant.
        dividend_bit = Const(DIVIDEND << 1, _DIVIDEND_BITS + 1).bit_select(bits_left, 1)
        trial = Cat(dividend_bit, remainder)        # (remainder << 1) | bit, 23 bits
        difference = Signal(len(trial) + 1)         # trial - divisor, the borrow on top
        fits = Signal()
        m.d.comb += [
            difference.eq(trial - divisor),
            fits.eq(~difference[-1]),
        ]

        with m.If(bits_left == 0):
            # The last division's quantum (slow first: its divisor bits are
            # not the whole divisor), and a new division.
            result = Mux(slow, QUANTUM_MIN,
                         Mux(saturated | (quotient > QUANTUM_MAX), QUANTUM_MAX,
                             Mux(quotient < QUANTUM_MIN, QUANTUM_MIN, quotient)))
            m.d.sync += [
                self.quantum.eq(result),
                divisor.eq(self.cpb_q16[:_DIVISOR_BITS]),
                slow.eq(self.cpb_q16[_DIVISOR_BITS:].any()),
                remainder.eq(0),
                quotient.eq(0),
                saturated.eq(0),
                bits_left.eq(_DIVIDEND_BITS),
            ]
        with m.Else():
            m.d.sync += [
                remainder.eq(Mux(fits, difference, trial)),
                quotient.eq(Cat(fits, quotient[:-1])),
                saturated.eq(saturated | quotient[-1]),
                bits_left.eq(bits_left - 1),
            ]
        return m
