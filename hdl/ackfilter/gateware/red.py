"""RED on the uplink data queue (``docs/spec.md`` section 10): the average,
its idle decay, the random numbers and the pass / mark / drop decision.

The golden model is :mod:`ackfilter.model.red`; this block computes the same
integers, decision by decision (``tests/test_red_sim.py``). The queue
manager asks for one decision per data frame and does the rest: it counts
``red_marked`` / ``red_ce_already`` / ``drop_red``, rewrites the ECN field
of a marked frame and stores or drops it.
"""

from amaranth.hdl import *
from amaranth.lib import enum, wiring
from amaranth.lib.wiring import In, Out

from .. import params as P
from ..protocol import (AVG_FRAC_BITS, COUNT_MAX, ECN_CE, ECN_NOT_ECT, MAX_QLEN_BYTES, P_FRAC_BITS,
                        RED_PRNG_SEED)

__all__ = ["RedAction", "RedUnit", "RED_LATENCY", "RED_PARAM_PORTS"]

#: The parameter ports of :class:`RedUnit`, named as the ``red_*`` registers
#: of ``params.PARAMS`` without the prefix, with their widths (spec section
#: 10): ``{"enable": 1, "min_bytes": 20, ...}``.
RED_PARAM_PORTS = {p.name.removeprefix("red_"): p.width for p in P.PARAMS if p.name.startswith("red_")}
_BYTES_BITS = MAX_QLEN_BYTES.bit_length()                     # 20
_AVG_BITS = _BYTES_BITS + AVG_FRAC_BITS                       # 36: avg_q16 < 2^36
_COUNT_BITS = COUNT_MAX.bit_length()                          # 16
#: The shared multiplier: a 36-bit operand (X < 2^20, num < 2^36, room <=
#: den << 16 < 2^36) times a 17-bit one (max_p <= 65536, count, rand16).
_MUL_A_BITS = _AVG_BITS
_MUL_B_BITS = RED_PARAM_PORTS["max_p"]

# The stages of a decision taken at cycle D (``start``): the flag of stage k
# is high in cycle D + 1 + k.
_SAMPLE    = 0      # D+1: the sample (qlen > 0) enters the average
_REGION    = 1      # D+2: the average is final; region, X, Y, den -> multiplier
_PB        = 2      # D+3: max_p * X
_NUM       = 3      # D+4: num = max_p * X + (Y << 16) -> multiplier with count
_COUNT_NUM = 4      # D+5: count * num
_ROOM      = 5      # D+6: room = (den << 16) - count * num -> multiplier with rand16
_RAND_ROOM = 6      # D+7: rand16 * room
_VERDICT   = 7      # D+8: notify?, action, count, end of the idle period
#: Cycles from ``start`` to ``done`` (the queue manager reports the arrival
#: then: ``params.RED_DECISION_LEAD`` is this number, for the model).
RED_LATENCY = _VERDICT + 2
assert RED_LATENCY == P.RED_DECISION_LEAD, "params.RED_DECISION_LEAD must be RedUnit's latency"



class RedAction(enum.Enum, shape=2):
    """``RedUnit.action``: what becomes of the frame."""
    PASS = 0
    MARK = 1        # notified by CE: ECT(0)/ECT(1) become CE, a CE frame stays CE
    DROP = 2        # notified by a drop: Not-ECT, no IP header, or the forced region


def _xorshift32(x):
    """Marsaglia's xor32 (13, 17, 5), as :func:`ackfilter.model.red.xorshift32`."""
    x = x ^ (x << 13)[:32]
    x = x ^ (x >> 17)
    return x ^ (x << 5)[:32]


class RedUnit(wiring.Component):
    """The RED decision for the data queue, one frame at a time (spec section 10).

    A decision taken in cycle D (``start``) is that of
    ``Red.arrive(frame, qlen, now_cycles=D, exempt=exempt)`` of :mod:`ackfilter.model.red`,
    with ``Red.emptied(t0)`` called at every ``emptied`` strobe; its result
    comes with ``done`` ``RED_LATENCY`` cycles later, without stalls.

    The average follows :func:`~ackfilter.model.red.ewma_step`: a sample
    (``qlen`` > 0) in cycle D + 1, with the arithmetic shift by ``wq_shift``
    as a barrel shifter. While the queue is empty (from an ``emptied``
    strobe, or reset, until a frame is stored) one decay step ``avg -=
    ceil(avg / 2^wq_shift)`` falls due at each ``t0 + k * 2^idle_shift``
    (k >= 1) of the core's time ``now``, so a harness that skips the clock
    while the core is idle sees the same steps; each is applied in the first
    cycle ``now`` has reached it, so a decision at D has every step due up
    to D, and none later, in the average it uses. Steps that fall due while
    a decision is under way (D + 1 .. D + RED_LATENCY - 1) wait; when the
    verdict stores the frame the idle period ends and they never apply, else
    they are applied one per cycle afterwards, with ``ready`` low while more
    than one is due (``idle_shift >= 1``: steps come at most every second
    cycle, so one per cycle catches up). The
    probability and the count-based spacing are
    :func:`~ackfilter.model.red.pb_terms` and
    :func:`~ackfilter.model.red.early_notify`, without a division: three
    products taken one after the other through one registered multiplier
    (36 x 17 bits, two ECP5 MULT18X18D).

    Ports
    -----
    enable, min_bytes, max_bytes, max_p, wq_shift, gentle, idle_shift : In
        The ``red_*`` registers, steady while in use. ``min_bytes >=
        max_bytes`` acts as ``enable`` = 0. ``wq_shift`` 1 .. 15,
        ``idle_shift`` 1 .. 31.
    now : In(48)
        The core's time in cycles (``UplinkCore.now``): the idle decay's clock.
    emptied : In(1)
        Strobe: the data queue's occupancy fell to 0 in this cycle; an idle
        period starts (model ``Red.emptied``). After reset the queue is
        empty. A strobe may come in the cycle of a ``start`` that finds
        the queue non-empty until then (with ``qlen`` 0; the model's
        ``emptied`` comes first), or in the cycle of ``done`` or later; not
        in between (the queue manager does one operation at a time).
    ready : Out(1)
        ``start`` may be given in this cycle (high in the cycle of ``done``
        unless decay steps are to be caught up).
    start : In(1)
        Decide for a data frame now (ignored while ``ready`` is low), with:
    qlen : In(20)
        the data queue's occupancy in bytes before this frame;
    ecn : In(2)
        the frame's ECN field (RFC 3168), ignored without ``has_ip``;
    has_ip : In(1)
        the frame has an IP header RED can mark (model ``ip_header``);
    will_store : In(1)
        the frame is stored unless RED drops it (it ends an idle period then);
    exempt : In(1)
        the frame may not be notified (with flow queues its flow has no data
        queued, spec section 12): it passes and ``count`` keeps its value
        (the average and the random number are taken all the same). Read in
        cycle D + 8, the verdict's, not with ``start``: the queue manager
        starts RED while it still looks the frame's flow up.
    done : Out(1)
        ``RED_LATENCY`` cycles after ``start``: ``action`` and
        ``ce_already`` are this frame's (they hold until the next ``done``).
    action : Out(2)
        :class:`RedAction`: 0 pass, 1 mark, 2 drop.
    ce_already : Out(1)
        A mark of a frame that arrived CE (forwarded unchanged).
    avg_q16 : Out(36)
        The average queue length, bytes times 2^16 (in the cycle of ``done``:
        the average the decision used).
    count : Out(16)
        Frames not notified since the last notification (model ``count``).
    prng : Out(32)
        The xorshift32 state (its new value shows from the cycle after
        ``start``).
    """

    enable:     In(RED_PARAM_PORTS["enable"])
    min_bytes:  In(RED_PARAM_PORTS["min_bytes"])
    max_bytes:  In(RED_PARAM_PORTS["max_bytes"])
    max_p:      In(RED_PARAM_PORTS["max_p"])
    wq_shift:   In(RED_PARAM_PORTS["wq_shift"])
    gentle:     In(RED_PARAM_PORTS["gentle"])
    idle_shift: In(RED_PARAM_PORTS["idle_shift"])

    now:        In(48)
    emptied:    In(1)
    ready:      Out(1)
    start:      In(1)
    qlen:       In(_BYTES_BITS)
    ecn:        In(2)
    has_ip:     In(1)
    will_store: In(1)
    exempt:     In(1)

    done:       Out(1)
    action:     Out(2)
    ce_already: Out(1)

    avg_q16:    Out(_AVG_BITS)
    count:      Out(_COUNT_BITS)
    prng:       Out(32, init=RED_PRNG_SEED)

    def elaborate(self, platform):
        m = Module()
        avg = self.avg_q16

        # --- the decision's stages ----------------------------------------------------
        stage = Signal(RED_LATENCY)                 # stage[k]: cycle D + 1 + k
        frozen = Signal()                           # D + 1 .. D + RED_LATENCY - 1
        more = Signal()                             # idle decay steps to catch up first
        go = Signal()
        m.d.comb += [
            frozen.eq(stage[:_VERDICT + 1].any()),
            self.ready.eq(~frozen & ~more),
            go.eq(self.start & self.ready),
            self.done.eq(stage[_VERDICT + 1]),
        ]
        m.d.sync += stage.eq(Cat(go, stage[:-1]))

        # The frame's inputs, held for the decision; the random number of
        # this arrival (every arrival steps the generator, RED on or off).
        qlen = Signal.like(self.qlen)
        ecn = Signal.like(self.ecn)
        has_ip = Signal()
        will_store = Signal()
        exempt = self.exempt                            # read in the verdict's cycle
        with m.If(go):
            m.d.sync += [
                qlen.eq(self.qlen), ecn.eq(self.ecn), has_ip.eq(self.has_ip),
                will_store.eq(self.will_store),
                self.prng.eq(_xorshift32(self.prng)),
            ]
        rand16 = self.prng[32 - P_FRAC_BITS:]

        # 2^wq_shift - 1 and 2^idle_shift, registered (the registers are
        # steady; the reset values are those of the registers' defaults).
        wq_mask = Signal(1 << RED_PARAM_PORTS["wq_shift"], init=(1 << P.param("red_wq_shift").default) - 1)
        step = Signal(32, init=1 << P.param("red_idle_shift").default)     # 2^idle_shift
        m.d.sync += [
            wq_mask.eq((Const(1, len(wq_mask) + 1) << self.wq_shift) - 1),
            step.eq(Const(1, 32) << self.idle_shift),
        ]

        # --- the idle period ------------------------------------------------------------
        # On the core's time (`now`), so a harness that skips the clock while
        # the core is idle sees the same steps: `next_at` is the cycle the next
        # step falls due (t0 + k * 2^s, k >= 1); a step is applied in each
        # cycle `now` has reached it, never while a decision is under way, and
        # a decision waits until at most the step of its own cycle is left.
        # With the average at 0 the steps change nothing, so the schedule
        # skips ahead (no catching up after a long idle jump).
        # The strobe is registered first (it comes from the queue manager's
        # departure, behind a block RAM read): the idle period it starts is
        # set up in the cycle after t0, when no step can be due yet (the
        # first falls at t0 + 2^s, s >= 1) and no decision is taken.
        idle = Signal(init=1)                   # the queue is empty (reset: since cycle 0)
        next_at = Signal(48)
        emptied_q = Signal()
        t0 = Signal(48)
        m.d.sync += [emptied_q.eq(self.emptied), t0.eq(self.now)]
        due = Signal()
        apply_step = Signal()
        m.d.comb += [
            due.eq(idle & ~emptied_q & (self.now >= next_at)),
            more.eq(idle & (avg != 0) & (self.now >= next_at + step)),    # a second one due
            apply_step.eq(~frozen & due),
        ]
        with m.If(emptied_q):
            m.d.sync += [idle.eq(1), next_at.eq(t0 + step)]
        with m.Elif(apply_step):
            m.d.sync += next_at.eq(Mux(avg == 0, self.now, next_at) + step)

        # --- the average ----------------------------------------------------------------
        # One update datapath, one barrel shifter for both kinds of update:
        #   sample: avg + (((qlen << 16) - avg) >>> wq)            (spec: the average)
        #   step:   avg - ceil(avg / 2^wq) = avg + ~(avg >> wq) + (low bits == 0)
        # (the step is the sample with q = 0, written with no subtraction
        # before the shifter; the sample's path, one subtraction longer, is
        # the block's longest, about 11.5 ns of the 16 on an ECP5-6).
        sample = Signal()
        m.d.comb += sample.eq(stage[_SAMPLE] & (qlen != 0))
        diff = Signal(signed(_AVG_BITS + 1))
        shifted = Signal(signed(_AVG_BITS + 1))
        m.d.comb += [
            diff.eq((qlen << AVG_FRAC_BITS) - avg),
            shifted.eq(Mux(sample, diff, avg) >> self.wq_shift),
        ]
        addend = Mux(sample, shifted, ~shifted)
        carry = ~sample & ((avg & wq_mask) == 0)
        with m.If(sample | apply_step):
            m.d.sync += avg.eq((avg + addend + carry)[:_AVG_BITS])

        # --- the decision ---------------------------------------------------------------
        # Region of avg = avg_q16 >> 16 (model `region`) and the terms of p_b
        # (model `pb_terms`) as num = max_p * X + (Y << 16), den:
        #   min <= avg < max:          X = avg - min,      Y = 0,         den = max - min
        #   max <= avg < 2 max, gentle: X = 2 max - avg,   Y = avg - max, den = max
        # (the gentle num max_p*max + (65536 - max_p)(avg - max) rearranged:
        # one product instead of two).
        on = Signal()               # RED on and min < max
        below = Signal()            # pass, count := 0 (also when off)
        early = Signal()            # notify if early_notify; else forced
        y = Signal(_BYTES_BITS)
        den = Signal(_BYTES_BITS)
        num = Signal(_AVG_BITS)
        room_le0 = Signal()
        mul_a = Signal(_MUL_A_BITS)
        mul_b = Signal(_MUL_B_BITS)
        product = Signal(_MUL_A_BITS + _MUL_B_BITS)
        m.d.sync += product.eq(mul_a * mul_b)   # the one multiplier, registered in and out

        avg_bytes = avg[AVG_FRAC_BITS:]
        min_b, max_b = self.min_bytes, self.max_bytes
        twice_max = Cat(Const(0, 1), max_b)
        lower = avg_bytes < max_b
        with m.If(stage[_REGION]):
            m.d.sync += [
                on.eq(self.enable & (min_b < max_b)),
                below.eq(avg_bytes < min_b),
                early.eq(lower | (self.gentle & (avg_bytes < twice_max))),
                y.eq(Mux(lower, 0, avg_bytes - max_b)),
                den.eq(Mux(lower, max_b - min_b, max_b)),
                mul_a.eq(Mux(lower, avg_bytes - min_b, twice_max - avg_bytes)[:_BYTES_BITS]),
                mul_b.eq(self.max_p),
            ]
        with m.If(stage[_NUM]):
            num_now = (product + (y << P_FRAC_BITS))[:_AVG_BITS]
            m.d.sync += [num.eq(num_now), mul_a.eq(num_now), mul_b.eq(self.count)]
        with m.If(stage[_ROOM]):
            # model early_notify: room = (den << 16) - count * num
            den_q16 = den << P_FRAC_BITS
            m.d.sync += [
                room_le0.eq(product >= den_q16),
                mul_a.eq((den_q16 - product)[:_MUL_A_BITS]),     # 0 < room < 2^36 when it counts
                mul_b.eq(rand16),
            ]

        with m.If(stage[_VERDICT]):
            # notify := forced, or early and (room <= 0 or rand16 * room < num << 16)
            notified = ~exempt & on & ~below & (~early | room_le0 | (product < (num << P_FRAC_BITS)))
            # Marked only in the early region; the forced region drops ECT too.
            markable = has_ip & (ecn != ECN_NOT_ECT) & early
            m.d.sync += [
                self.action.eq(Mux(notified, Mux(markable, RedAction.MARK, RedAction.DROP),
                                   RedAction.PASS)),
                self.ce_already.eq(notified & markable & (ecn == ECN_CE)),
            ]
            with m.If(~exempt):                     # an exempt frame leaves count as it is
                with m.If(~on | below | notified):
                    m.d.sync += self.count.eq(0)
                with m.Elif(self.count != COUNT_MAX):
                    m.d.sync += self.count.eq(self.count + 1)
            # A stored frame ends the idle period: the steps counted while
            # deciding are forgotten (the model's arrival at D applies none
            # due after D).
            with m.If(will_store & ~(notified & ~markable)):
                m.d.sync += idle.eq(0)
        return m
