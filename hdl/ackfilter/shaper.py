"""Token-bucket shaper on the uplink egress, as a GCRA on a cycle clock."""

from amaranth.hdl import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["Shaper", "RECOVERY_CYCLES"]

#: After a ``charge`` in cycle t, ``eligible`` is low until cycle t + 5 (the
#: charge's three steps, ``due``, then the ``eligible`` register). Frames are
#: at least 15 words long at the egress, so this never delays one.
RECOVERY_CYCLES = 5


class Shaper(wiring.Component):
    """Decide when the next frame may start (``docs/spec.md`` section 6).

    ``tat`` (theoretical arrival time) is kept in cycles with 16 fractional
    bits. A frame may start when ``tat <= now + burst``; starting one moves
    ``tat`` to ``max(tat, now) + (len + overhead) * cycles_per_byte``. Rate 0
    (``cpb_q16 == 0``) leaves the egress unshaped.

    Ports
    -----
    now : In(48)             free-running cycle count (may jump forward)
    cpb_q16, burst_bytes, overhead_bytes : In   the shaper registers
    charge, charge_bytes : In   a frame of ``charge_bytes`` starts now
    charge_l3_bytes : In     the IP packet length of that frame (spec section 6)
    eligible : Out(1)        a frame may start now (registered; low for
                             ``RECOVERY_CYCLES`` after a charge)
    wake_at : Out(48)        earliest ``now`` at which ``eligible`` rises
    """

    now:            In(48)
    cpb_q16:        In(32)
    burst_bytes:    In(16)
    overhead_bytes: In(8)
    charge:         In(1)
    charge_bytes:   In(16)
    charge_l3_bytes: In(16)
    eligible:       Out(1)
    wake_at:        Out(48)

    def elaborate(self, platform):
        m = Module()
        tat       = Signal(64)
        burst_q16 = Signal(48)
        now_q16   = Signal(64)
        m.d.sync += burst_q16.eq(self.burst_bytes * self.cpb_q16)
        m.d.comb += now_q16.eq(self.now << 16)

        # A charge goes through three registered steps (the frame's length
        # arrives from deep in the queue manager, and a 64-bit add after a
        # 17 x 32 multiply does not fit one cycle): length + overhead and the
        # start time; the cost in cycles; the new `tat`. `due` follows `tat`
        # one cycle later. `eligible` stays low meanwhile: see RECOVERY_CYCLES.
        step     = Signal(3)                # the charge in each step
        nbytes   = Signal(17)
        t_charge = Signal(64)
        cost     = Signal(64)
        m.d.sync += step.eq(Cat(self.charge, step[:-1]))
        with m.If(self.charge):
            m.d.sync += [nbytes.eq(self.charge_bytes + self.overhead_bytes), t_charge.eq(now_q16)]
        with m.If(step[0]):
            m.d.sync += cost.eq(nbytes * self.cpb_q16)
        with m.If(step[1]):
            m.d.sync += tat.eq(Mux(tat > t_charge, tat, t_charge) + cost)

        # The frame may go when tat - burst <= now.
        due = Signal(64)
        m.d.sync += due.eq(Mux(tat > burst_q16, tat - burst_q16, 0))
        m.d.sync += [
            self.eligible.eq(~self.charge & ~step.any() & ((self.cpb_q16 == 0) | (due <= now_q16))),
            self.wake_at.eq((due + 0xFFFF) >> 16),
        ]
        return m
