"""Token-bucket shaper on the uplink egress, as a GCRA on a cycle clock, with
tc-cake's link accounting (``docs/spec.md`` section 6)."""

from amaranth.hdl import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .. import params as P
from ..params import MAX_FRAME_BYTES

__all__ = ["LinkCharge", "Shaper", "RECOVERY_CYCLES", "CHARGED_LATENCY", "CHARGE_BITS"]

_ATM = P.SHAPER_LINK_LAYERS["atm"]
_PTM = P.SHAPER_LINK_LAYERS["ptm"]
_IP = P.SHAPER_CHARGE_BASES["ip"]

#: Widths from the parameter table and the longest frame the core stores.
_LEN_BITS = MAX_FRAME_BYTES.bit_length()
_OVH = P.param("shaper_overhead_bytes")
_MPU = P.param("shaper_mpu_bytes")
#: Largest charge before atm/ptm, and after (atm rounds up to whole cells).
_MAX_SUM = MAX_FRAME_BYTES + max(_OVH.maximum, _MPU.maximum)
_MAX_CHARGE = -(-_MAX_SUM // 48) * 53
_CHARGE_BITS = _MAX_CHARGE.bit_length()
#: Width of a link charge (``Shaper.charged_bytes``).
CHARGE_BITS = _CHARGE_BITS

#: ``floor(m / 3) == (m * 171) >> 9`` for every 0 <= m < 512 (171 / 512 exceeds
#: 1/3 by 1/1536, which moves no quotient while m < 512): ``ceil(n / 48)`` is
#: ``floor(floor((n + 47) / 16) / 3)`` without a divider. The constant
#: multiplications are written as shifts and adds (171 = 128 + 32 + 8 + 2 + 1,
#: 53 = 32 + 16 + 4 + 1), so they cost a few adders rather than DSP blocks.
_DIV3_SHIFT = 9
_DIV3_TERMS = (7, 5, 3, 1, 0)           # 171
_CELL_TERMS = (5, 4, 2, 0)              # 53
assert sum(1 << k for k in _DIV3_TERMS) == 171 and sum(1 << k for k in _CELL_TERMS) == 53
assert (_MAX_SUM + 47) >> 4 < 512


def _times(value, shifts):
    """``value`` times the constant ``sum(2**k for k in shifts)``, as adds."""
    return sum((value << k for k in shifts[1:]), value << shifts[0])


class LinkCharge(wiring.Component):
    """Bytes a frame costs the uplink, tc-cake's way (a pipeline, one frame a cycle).

    ``charge_bytes`` is ``max(base + overhead, mpu)``, then rounded up to ATM
    cells (``ceil(n / 48) * 53``) or PTM blocks (``n + ceil(n / 64)``), with
    ``base`` the frame's stored length or its IP packet's; the model is
    :func:`ackfilter.model.shaper.charged_bytes`. No divider: ``/ 48`` is a
    shift and a multiplication by a constant (shifts and adds), in stages of
    their own.

    Ports
    -----
    frame_bytes, l3_bytes : In     the frame's length as stored and its IP packet's
                                   (at most ``MAX_FRAME_BYTES``)
    charge_base, overhead_bytes, mpu_bytes, link_layer : In   the registers
    charge_bytes : Out             the charge of the lengths given
                                   ``LATENCY`` cycles earlier
    """

    #: Cycles from the lengths to ``charge_bytes``.
    LATENCY = 6

    frame_bytes:    In(_LEN_BITS)
    l3_bytes:       In(_LEN_BITS)
    charge_base:    In(P.param("shaper_charge_base").width)
    overhead_bytes: In(signed(_OVH.width))
    mpu_bytes:      In(_MPU.width)
    link_layer:     In(P.param("shaper_link_layer").width)
    charge_bytes:   Out(_CHARGE_BITS)

    def elaborate(self, platform):
        m = Module()
        sum_bits = _MAX_SUM.bit_length()

        # The registers are used where each step needs them; mpu and the link
        # layer travel with the frame, so the charge is that of the settings
        # of the cycle the lengths came in (a register write mid-charge
        # cannot mix two settings).
        # 0: the lengths and the settings, registered: the lengths are
        # worked out from the egress's descriptor late in the grant's cycle.
        frame0 = Signal.like(self.frame_bytes)
        l3_0 = Signal.like(self.l3_bytes)
        base0 = Signal.like(self.charge_base)
        ovh0 = Signal.like(self.overhead_bytes)
        mpu0 = Signal.like(self.mpu_bytes)
        link0 = Signal.like(self.link_layer)
        m.d.sync += [frame0.eq(self.frame_bytes), l3_0.eq(self.l3_bytes),
                     base0.eq(self.charge_base), ovh0.eq(self.overhead_bytes),
                     mpu0.eq(self.mpu_bytes), link0.eq(self.link_layer)]

        # 1: base + overhead (signed: the overhead may be negative).
        total = Signal(signed(_LEN_BITS + 2))
        mpu1 = Signal.like(self.mpu_bytes)
        link1 = Signal.like(self.link_layer)
        base = Mux(base0 == _IP, l3_0, frame0)
        m.d.sync += [total.eq(base + ovh0), mpu1.eq(mpu0), link1.eq(link0)]

        # 2: at least mpu. mpu >= 0, so a negative sum becomes mpu (the kernel
        # wraps around there: spec section 6).
        n2 = Signal(sum_bits)
        link2 = Signal.like(self.link_layer)
        m.d.sync += [n2.eq(Mux(total < mpu1, mpu1, total)), link2.eq(link1)]

        # 3: (n + 47) / 16 rounded down, for ATM; the PTM result.
        sixteenths = Signal(range((_MAX_SUM + 47) // 16 + 1))
        ptm3 = Signal(_CHARGE_BITS)
        n3 = Signal(sum_bits)
        link3 = Signal.like(self.link_layer)
        m.d.sync += [
            sixteenths.eq((n2 + 47) >> 4),
            ptm3.eq(n2 + ((n2 + 63) >> 6)),
            n3.eq(n2),
            link3.eq(link2),
        ]

        # 4: cells = ceil(n / 48) = floor(sixteenths / 3).
        cells = Signal(range(_MAX_CHARGE // 53 + 1))
        ptm4 = Signal(_CHARGE_BITS)
        n4 = Signal(sum_bits)
        link4 = Signal.like(self.link_layer)
        m.d.sync += [
            cells.eq(_times(sixteenths, _DIV3_TERMS) >> _DIV3_SHIFT),
            ptm4.eq(ptm3),
            n4.eq(n3),
            link4.eq(link3),
        ]

        # 5: the link layer's result.
        with m.Switch(link4):
            with m.Case(_ATM):
                m.d.sync += self.charge_bytes.eq(_times(cells, _CELL_TERMS))
            with m.Case(_PTM):
                m.d.sync += self.charge_bytes.eq(ptm4)
            with m.Default():
                m.d.sync += self.charge_bytes.eq(n4)
        return m


#: After a ``charge`` in cycle t, ``eligible`` is low until cycle t + 10: the
#: link charge (``LinkCharge.LATENCY``), the cost, the new ``tat``, ``due``,
#: then the ``eligible`` register. Frames are at least 15 words long at the
#: egress, so this never delays one.
RECOVERY_CYCLES = LinkCharge.LATENCY + 4
#: A ``charge`` in cycle t gives ``Shaper.charged`` in cycle t + 6, when
#: LinkCharge has the frame's bytes (the cycle they go into the cost). It is
#: below RECOVERY_CYCLES, so the queue manager has applied a data queue's
#: charge to its credit before ``eligible`` lets it choose the next frame.
CHARGED_LATENCY = LinkCharge.LATENCY
assert CHARGED_LATENCY == 6, "the docstrings say 6"
assert CHARGED_LATENCY < RECOVERY_CYCLES


class Shaper(wiring.Component):
    """Decide when the next frame may start (``docs/spec.md`` section 6).

    ``tat`` (theoretical arrival time) is kept in cycles with 16 fractional
    bits. A frame may start when ``tat <= now + burst``; starting one moves
    ``tat`` to ``max(tat, now) + charge * cycles_per_byte``, with the charge
    from :class:`LinkCharge`. Rate 0 (``cpb_q16 == 0``) leaves the egress
    unshaped.

    Ports
    -----
    now : In(48)             free-running cycle count (may jump forward)
    cpb_q16, burst_bytes : In   the shaper registers
    charge_base, overhead_bytes, mpu_bytes, link_layer : In   link accounting registers
    charge, charge_bytes : In   a frame of ``charge_bytes`` starts now (at most
                             ``MAX_FRAME_BYTES``: the core stores no longer frame)
    charge_l3_bytes : In     the IP packet length of that frame (spec section 6)
    eligible : Out(1)        a frame may start now (registered; low for
                             ``RECOVERY_CYCLES`` after a charge)
    charged : Out(1)         a strobe, one cycle for each ``charge``: high in
                             cycle t + ``CHARGED_LATENCY`` (6) for a ``charge``
                             in cycle t, before ``eligible`` rises again
    charged_bytes : Out(CHARGE_BITS)   valid with ``charged``: that frame's
                             :class:`LinkCharge` bytes, the ones its cost
                             (``charged_bytes * cpb_q16``) is made of; the flow
                             queues' credit pays the same
    wake_at : Out(48)        earliest ``now`` at which ``eligible`` rises
    """

    now:            In(48)
    cpb_q16:        In(32)
    burst_bytes:    In(16)
    charge_base:    In(P.param("shaper_charge_base").width)
    overhead_bytes: In(signed(_OVH.width))
    mpu_bytes:      In(_MPU.width)
    link_layer:     In(P.param("shaper_link_layer").width)
    charge:         In(1)
    charge_bytes:   In(16)
    charge_l3_bytes: In(16)
    eligible:       Out(1)
    wake_at:        Out(48)
    charged:        Out(1)
    charged_bytes:  Out(CHARGE_BITS)

    def __init__(self):
        super().__init__()
        # The state a proof states things about (ackfilter.formal): here
        # before elaboration.
        self.tat = Signal(64)                           # cycles, 16 fraction bits
        self.step = Signal(LinkCharge.LATENCY + 2)      # the charge in each step

    def elaborate(self, platform):
        m = Module()
        tat       = self.tat
        burst_q16 = Signal(48)
        now_q16   = Signal(64)
        m.d.sync += burst_q16.eq(self.burst_bytes * self.cpb_q16)
        m.d.comb += now_q16.eq(self.now << 16)

        # The charge's bytes come out of the link accounting pipeline
        # LATENCY cycles after the grant; then the cost in cycles (a 12 x 32
        # multiply) and the new `tat` (a 64-bit add) take a cycle each. `due`
        # follows `tat` one cycle later. `eligible` stays low meanwhile: see
        # RECOVERY_CYCLES.
        m.submodules.link = link = LinkCharge()
        m.d.comb += [
            link.frame_bytes.eq(self.charge_bytes),
            link.l3_bytes.eq(self.charge_l3_bytes),
            link.charge_base.eq(self.charge_base),
            link.overhead_bytes.eq(self.overhead_bytes),
            link.mpu_bytes.eq(self.mpu_bytes),
            link.link_layer.eq(self.link_layer),
        ]
        # `charge` is the queue manager's grant, decoded late in its cycle:
        # it drives only `step` and `eligible`. The charge's `now` is taken a
        # cycle later from a copy of `now`, so no wide enable hangs on it.
        latency = LinkCharge.LATENCY
        step     = self.step
        now_q    = Signal.like(self.now)        # `now` of the previous cycle
        t_charge = Signal(64)
        cost     = Signal(64)
        m.d.sync += [step.eq(Cat(self.charge, step[:-1])), now_q.eq(self.now)]
        with m.If(step[0]):
            m.d.sync += t_charge.eq(now_q << 16)
        # The charge's bytes, told in the cycle the cost takes them (both registers).
        assert CHARGED_LATENCY == latency
        m.d.comb += [self.charged.eq(step[latency - 1]), self.charged_bytes.eq(link.charge_bytes)]
        with m.If(step[latency - 1]):
            m.d.sync += cost.eq(link.charge_bytes * self.cpb_q16)
        with m.If(step[latency]):
            m.d.sync += tat.eq(Mux(tat > t_charge, tat, t_charge) + cost)

        # The frame may go when tat - burst <= now.
        due = Signal(64)
        m.d.sync += due.eq(Mux(tat > burst_q16, tat - burst_q16, 0))
        m.d.sync += [
            self.eligible.eq(~self.charge & ~step.any() & ((self.cpb_q16 == 0) | (due <= now_q16))),
            self.wake_at.eq((due + 0xFFFF) >> 16),
        ]
        return m
