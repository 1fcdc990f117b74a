"""Token-bucket shaper on the uplink egress, as a GCRA on a cycle clock."""

from amaranth.hdl import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["Shaper"]


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
    eligible : Out(1)        a frame may start now (registered)
    wake_at : Out(48)        earliest ``now`` at which ``eligible`` rises
    """

    now:            In(48)
    cpb_q16:        In(32)
    burst_bytes:    In(16)
    overhead_bytes: In(8)
    charge:         In(1)
    charge_bytes:   In(16)
    eligible:       Out(1)
    wake_at:        Out(48)

    def elaborate(self, platform):
        m = Module()
        tat       = Signal(64)
        burst_q16 = Signal(48)
        now_q16   = Signal(64)
        m.d.sync += burst_q16.eq(self.burst_bytes * self.cpb_q16)
        m.d.comb += now_q16.eq(self.now << 16)

        start = Signal(64)
        m.d.comb += start.eq(Mux(tat > now_q16, tat, now_q16))
        with m.If(self.charge):
            m.d.sync += tat.eq(start + (self.charge_bytes + self.overhead_bytes) * self.cpb_q16)

        # The frame may go when tat - burst <= now.
        due = Signal(64)
        m.d.comb += due.eq(Mux(tat > burst_q16, tat - burst_q16, 0))
        m.d.sync += [
            self.eligible.eq(~self.charge & ((self.cpb_q16 == 0) | (due <= now_q16))),
            self.wake_at.eq((due + 0xFFFF) >> 16),
        ]
        return m
