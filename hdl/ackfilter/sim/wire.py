"""A 1 Gb/s Ethernet wire in cycles of the core's clock, exactly.

A byte on a 1 Gb/s wire lasts 8 ns: ``F_SYS_HZ / 125e6`` cycles, a ratio that
need not be a whole number (2/5 at 50 MHz, 1/2 at 62.5 MHz). A frame of ``L``
bytes (as stored, without FCS) occupies ``L + 24`` byte times: FCS 4, preamble
and SFD 8, inter-frame gap 12 (IEEE 802.3 clauses 3 and 4). So a minimum frame
(60 bytes) takes 84 byte times, 33.6 cycles at 50 MHz.

The C++ harnesses' MAC models (``sim/common/wire_pace.h``) and the cocotb
line-rate driver pace their words by these numbers: each word in the first
cycle at or after its wire time, the fractions carried on, so that the
average is exactly 1 Gb/s.

    >>> cycles_per_byte(50_000_000)
    Fraction(2, 5)
    >>> frame_cycles(60, 50_000_000)
    Fraction(168, 5)
"""

import math
from fractions import Fraction

from .. import params

__all__ = ["LINE_RATE_BPS", "OVERHEAD_BYTES", "cycles_per_byte", "frame_cycles", "word_due_cycles"]

#: The LAN port's and the modem port's rate.
LINE_RATE_BPS = 1_000_000_000
#: FCS (4) + preamble and SFD (8) + minimum inter-frame gap (12), IEEE 802.3.
OVERHEAD_BYTES = 24


def cycles_per_byte(f_sys_hz=None):
    """Cycles of the core's clock (``f_sys_hz``, default ``params.F_SYS_HZ``)
    per byte on a 1 Gb/s wire, exactly."""
    return Fraction(8 * (params.F_SYS_HZ if f_sys_hz is None else f_sys_hz), LINE_RATE_BPS)


def frame_cycles(frame_bytes, f_sys_hz=None):
    """Cycles a frame of ``frame_bytes`` (as stored, without FCS) occupies on a
    1 Gb/s wire, overhead included, exactly."""
    return (frame_bytes + OVERHEAD_BYTES) * cycles_per_byte(f_sys_hz)


def word_due_cycles(frame_bytes, start, f_sys_hz=None):
    """The cycle each 32-bit word of a frame whose first byte is on the wire at
    ``start`` (a cycle, a Fraction allowed) may move in at the earliest: the
    first cycle at or after its first byte's wire time."""
    cpb = cycles_per_byte(f_sys_hz)
    return [math.ceil(start + 4 * k * cpb) for k in range((frame_bytes + 3) // 4)]
