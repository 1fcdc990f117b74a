"""PHY management: a clause-22 MDIO master and a poller that publishes each PHY's status.

:class:`MDIOMaster` runs one management frame at a time on the MDC/MDIO pair
(IEEE 802.3 clause 22.2.4.5); :class:`PHYPoller` reads the standard registers
of every PHY on the bus in a loop, resolves link, speed and duplex the same
way for any clause-22 PHY (the Broadcom B50612D of rev 7.0 and the Realtek
RTL8211F of rev 8.x alike), publishes them as a snapshot per PHY, and slots
register writes from the control plane between its reads.

Both run in ``sync``, the system clock (``params.F_SYS_HZ``).
"""

import math

from amaranth.hdl import *
from amaranth.lib import data, wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

from .. import params as P

__all__ = ["MDIOMaster", "PHYPoller", "PHYStatus", "mdc_period_cycles_for", "POLL_REGS",
           "REG_BMCR", "REG_BMSR", "REG_ID1", "REG_ID2", "REG_ANAR", "REG_ANLPAR",
           "REG_1000T_CTRL", "REG_1000T_STATUS"]

#: Clause-22 register numbers (IEEE 802.3 table 22-6).
REG_BMCR, REG_BMSR, REG_ID1, REG_ID2, REG_ANAR, REG_ANLPAR = 0, 1, 2, 3, 4, 5
REG_1000T_CTRL, REG_1000T_STATUS = 9, 10

#: MDC period at least 400 ns, high and low at least 160 ns each (22.2.2.11);
#: the PHY drives read data 0..300 ns after MDC's rising edge (22.3.4).
MDC_MIN_PERIOD_S = 400e-9
PHY_MAX_DELAY_S = 300e-9
#: Flip-flops between the MDIO pad and the sampling register.
_SYNC_STAGES = 2

#: Frame layout (22.2.4.5): preamble, then ST OP PHYAD REGAD TA DATA in one
#: 32-bit word sent MSB first.
_PREAMBLE_BITS = 32
_FRAME_BITS = _PREAMBLE_BITS + 32
_TA_BIT = _PREAMBLE_BITS + 14          # the turnaround's first bit
#: Released bit times after each frame, with MDC held low: a PHY releases the
#: line up to 300 ns after the last rising edge of a read, and the next
#: frame's preamble must not meet it.
_IDLE_BITS = 1


def mdc_period_cycles_for(clk_hz):
    """The shortest even MDC period, in cycles of a ``clk_hz`` clock, that
    meets clause 22: at least 400 ns (22.2.2.11), and read data sampled at
    least 300 ns (22.3.4) plus one cycle of margin for pads and board after
    the PHY's launch (the pad is sampled ``_SYNC_STAGES`` cycles before the
    rising edge, see :class:`MDIOMaster`). 20 at 50 MHz (2.5 MHz)."""
    if not isinstance(clk_hz, (int, float)) or clk_hz <= 0:
        raise TypeError(f"clk_hz must be a positive number, not {clk_hz!r}")
    cycles = max(4, math.ceil(MDC_MIN_PERIOD_S * clk_hz - 1e-9),
                 math.ceil(PHY_MAX_DELAY_S * clk_hz - 1e-9) + _SYNC_STAGES + 1)
    return cycles + cycles % 2


class MDIOMaster(wiring.Component):
    """One clause-22 management frame (22.2.4.5) per ``start``.

    A frame is 32 preamble ones, ST ``01``, OP ``10`` (read) or ``01``
    (write), PHYAD and REGAD (5 bits each, MSB first), the turnaround, and 16
    data bits MSB first; then one bit time released (idle) before the next.
    MDC idles low and runs only during frames.

    Bit timing, ``D`` = ``mdc_period_cycles``, a bit time from one falling
    edge of MDC to the next: MDC falls as the bit starts (cycle 0), the master
    changes MDIO one cycle later (cycle 1: after the falling edge, so the
    hold time after the previous rising edge is the whole high half), MDC
    rises at cycle ``D/2`` (set-up ``D/2 - 1`` cycles, 180 ns at 50 MHz; the
    PHY needs 10 ns, 22.3.4).

    Read data: the PHY launches each bit 0..300 ns after a rising edge
    (22.3.4), the turnaround's 0 after the rising edge of the turnaround's
    first bit, and holds it until it launches the next after the following
    rising edge. The master takes a bit in the register update that raises
    MDC, one full period after the launch; through the two-flop
    synchroniser that value is the pad as it was two cycles before that
    edge: ``D - 2`` cycles after the launching edge (360 ns at 50 MHz, so
    60 ns of margin over the PHY's 300 ns), and two cycles before the PHY
    may change it again (its minimum delay is 0 ns). :func:`mdc_period_cycles_for`
    picks ``D`` to keep that margin at any clock.

    Parameters
    ----------
    clk_hz : int
        The ``sync`` clock (default ``params.F_SYS_HZ``).
    mdc_period_cycles : int or None
        Clock cycles per MDC period, even, at least 4; ``None`` (the default)
        takes :func:`mdc_period_cycles_for(clk_hz) <mdc_period_cycles_for>`.
        A smaller value runs MDC faster than clause 22 allows: for
        simulation only.

    Ports
    -----
    mdc, mdio_o, mdio_oe : Out(1)
        The pins: MDC, and the MDIO tristate (drive ``mdio_o`` while
        ``mdio_oe``, else released; the board pulls MDIO up).
    mdio_i : In(1)
        The MDIO pad, asynchronous (synchronised here).
    start : In(1)
        Begin a frame with ``write``, ``phy_addr``, ``reg_addr`` and
        ``w_data``; taken in a cycle when ``busy`` is low.
    write : In(1)
        1: a write of ``w_data``; 0: a read.
    phy_addr, reg_addr : In(5)
    w_data : In(16)
    busy : Out(1)
        A frame is under way: from the cycle after ``start`` until ``done``.
    done : Out(1)
        The frame ended, the idle bit too (one cycle; ``busy`` is low with it).
    r_data : Out(16)
        A read's data, from ``done`` until the next read's ``done``.
    no_phy : Out(1)
        With ``r_data``: the read's turnaround was not driven to 0, so no PHY
        answered at ``phy_addr`` (``r_data`` is 0xFFFF, the pull-up). 0 after
        a write.
    """

    mdc:      Out(1)
    mdio_o:   Out(1, init=1)
    mdio_oe:  Out(1)
    mdio_i:   In(1, init=1)
    start:    In(1)
    write:    In(1)
    phy_addr: In(5)
    reg_addr: In(5)
    w_data:   In(16)
    busy:     Out(1)
    done:     Out(1)
    r_data:   Out(16)
    no_phy:   Out(1)

    def __init__(self, *, clk_hz=P.F_SYS_HZ, mdc_period_cycles=None):
        if mdc_period_cycles is None:
            mdc_period_cycles = mdc_period_cycles_for(clk_hz)
        if not isinstance(mdc_period_cycles, int) or mdc_period_cycles < 4 or mdc_period_cycles % 2:
            raise TypeError(f"mdc_period_cycles must be an even integer >= 4, not {mdc_period_cycles!r}")
        self.clk_hz = clk_hz
        self.mdc_period_cycles = mdc_period_cycles
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        period = self.mdc_period_cycles
        half = period // 2

        mdio_i = Signal(init=1)
        m.submodules.mdio_sync = FFSynchronizer(self.mdio_i, mdio_i, init=1)

        phase = Signal(range(period))               # cycle within the bit time
        bit = Signal(range(_FRAME_BITS + _IDLE_BITS))
        tx = Signal(32)                             # ST OP PHYAD REGAD TA DATA, MSB leaves first
        rx = Signal(17)                             # the last 17 bits taken: TA's second, DATA
        writing = Signal()

        m.d.sync += self.done.eq(0)
        with m.FSM():
            with m.State("Idle"):
                with m.If(self.start):
                    op = Mux(self.write, 0b01, 0b10)
                    m.d.sync += [
                        tx.eq(Cat(self.w_data, C(0b10, 2), self.reg_addr, self.phy_addr, op, C(0b01, 2))),
                        writing.eq(self.write), phase.eq(0), bit.eq(0),
                    ]
                    m.next = "Frame"

            with m.State("Frame"):
                m.d.comb += self.busy.eq(1)
                with m.If(phase == period - 1):     # MDC falls: the next bit time
                    m.d.sync += [phase.eq(0), bit.eq(bit + 1), self.mdc.eq(0)]
                    with m.If(bit == _FRAME_BITS + _IDLE_BITS - 1):
                        m.d.sync += [self.done.eq(1), self.r_data.eq(rx[:16]),
                                     self.no_phy.eq(~writing & rx[16])]
                        m.next = "Idle"
                with m.Else():
                    m.d.sync += phase.eq(phase + 1)

                with m.If(phase == 0):              # one cycle after MDC fell: this bit's value
                    with m.If(bit < _PREAMBLE_BITS):
                        m.d.sync += [self.mdio_o.eq(1), self.mdio_oe.eq(1)]
                    with m.Elif((bit < _TA_BIT) | writing & (bit < _FRAME_BITS)):
                        m.d.sync += [self.mdio_o.eq(tx[-1]), self.mdio_oe.eq(1), tx.eq(tx << 1)]
                    with m.Else():                  # a read's turnaround and data, idle
                        m.d.sync += [self.mdio_o.eq(1), self.mdio_oe.eq(0)]

                with m.If((phase == half - 1) & (bit < _FRAME_BITS)):
                    # MDC rises. The bit taken is the pad as the synchroniser saw
                    # it two cycles before this edge: D - 2 cycles (360 ns at 50 MHz)
                    # after the rising edge at which the PHY launched it (0..300 ns
                    # late, 22.3.4), and before it may launch the next one.
                    m.d.sync += [self.mdc.eq(1), rx.eq(Cat(mdio_i, rx[:-1]))]
        return m


#: The registers each round reads, in order. BMSR once: its link status bit
#: latches low (22.2.4.2.13), so the one read returns 0 if the link is down
#: now or went down at any time since the previous round's read, and that
#: read re-arms the latch. A second read would give the link as it is now
#: and drop a failure that recovered between rounds; the next round gives
#: the link as it is then anyway.
POLL_REGS = (REG_ID1, REG_ID2, REG_BMSR, REG_BMCR, REG_ANAR, REG_ANLPAR,
             REG_1000T_CTRL, REG_1000T_STATUS)

#: One PHY's published status: word 0 (bits 31:0) the flags, the round
#: counter and the partner's abilities, word 1 (bits 63:32) the ID.
PHYStatus = data.StructLayout({
    "present":      1,      # every read of the round saw the PHY drive the turnaround
    "link":         1,      # BMSR.2 (latched low: 0 if the link failed since the last round)
    "speed":        2,      # 0 = 10, 1 = 100, 2 = 1000 Mb/s (as RGMII in-band status)
    "full_duplex":  1,
    "an_complete":  1,      # BMSR.5
    "lp_1000":      2,      # the partner's 1000BASE-T HD (bit 0) and FD (bit 1): reg 10 bits 10, 11
    "polls":        8,      # rounds completed at this PHY, wrapping
    "lp_abilities": 16,     # ANLPAR (reg 5)
    "phy_id":       32,     # ID1 (reg 2) << 16 | ID2 (reg 3); 0xFFFFFFFF: nothing answered
})


class PHYPoller(wiring.Component):
    """Reads every PHY's status over MDIO in a loop and publishes it.

    A round at a PHY reads :data:`POLL_REGS` (ID1, ID2, BMSR, BMCR, ANAR,
    ANLPAR, 1000BASE-T control and status), then publishes that PHY's
    :data:`PHYStatus` in one cycle: all of its fields come from the one
    round. The PHYs take turns, round after round, without pause (a round is
    8 frames of 65 bit times: 208 us at 2.5 MHz).

    Speed and duplex: with autonegotiation enabled (BMCR.12) and complete
    (BMSR.5), the highest common ability of what this PHY advertises (ANAR;
    1000BASE-T control, reg 9 bits 9:8) and what the partner advertised
    (ANLPAR; 1000BASE-T status, reg 10 bits 11:10, two places up from reg
    9's, 40.5.1.1), in the priority of 28B.3: 1000BASE-T FD, 1000BASE-T HD,
    100BASE-TX FD, 100BASE-T4, 100BASE-TX HD, 10BASE-T FD, 10BASE-T HD
    (100BASE-T2, only in next pages, is left out). The 1000BASE-T bits count
    only when BMSR.8 says the PHY has extended status (every gigabit PHY
    has; a PHY without 1000BASE-T need not implement registers 9 and 10).
    Otherwise the
    forced setting: BMCR bits 6 and 13 (speed: 00 10, 01 100, 10 1000 Mb/s;
    11 is reserved and published as 3) and 8 (full duplex). A PHY that did
    not answer is published with ``present``, ``link``, ``an_complete``,
    ``speed``, ``full_duplex`` and the partner's abilities 0.

    Requests (the control plane's reads and writes of any register, e.g. a
    vendor's delay settings): ``req_start`` with ``req_write``,
    ``req_phy_addr``, ``req_reg_addr`` and ``req_w_data`` queues a frame,
    sent after the frame under way (between two polling reads; a round it
    falls in reads the registers as they are at each read); ``req_done``
    reports it sent, with a read's ``req_r_data`` and ``req_no_phy``.

    Parameters
    ----------
    phy_addrs : tuple of int
        The PHYs' addresses (0..31, distinct), polled in this order and
        published in ``status`` in this order (default ``(0, 1)``).
    clk_hz, mdc_period_cycles :
        As :class:`MDIOMaster`.

    Ports
    -----
    mdc, mdio_o, mdio_oe, mdio_i :
        The pins, as :class:`MDIOMaster`.
    status : Out(PHYStatus).array(len(phy_addrs))
        Registers: each PHY's last completed round.
    req_start : In(1)
        Queue a request; taken in a cycle when ``req_busy`` is low.
    req_write : In(1)
        1: a write of ``req_w_data``; 0: a read.
    req_phy_addr, req_reg_addr : In(5)
    req_w_data : In(16)
    req_busy : Out(1)
        A request is queued or being sent: from the cycle after ``req_start``
        until ``req_done``.
    req_done : Out(1)
        The request's frame ended (one cycle; ``req_busy`` is low with it).
    req_r_data, req_no_phy : Out
        A read's register and whether no PHY answered (held until the next
        request's ``req_done``).
    """

    def __init__(self, *, phy_addrs=(0, 1), clk_hz=P.F_SYS_HZ, mdc_period_cycles=None):
        phy_addrs = tuple(phy_addrs) if isinstance(phy_addrs, (tuple, list)) else phy_addrs
        if (not isinstance(phy_addrs, tuple) or not phy_addrs
                or not all(isinstance(a, int) and 0 <= a <= 31 for a in phy_addrs)
                or len(set(phy_addrs)) != len(phy_addrs)):
            raise TypeError(f"phy_addrs must be a non-empty tuple of distinct integers in 0..31, "
                            f"not {phy_addrs!r}")
        self.phy_addrs = phy_addrs
        self._master = MDIOMaster(clk_hz=clk_hz, mdc_period_cycles=mdc_period_cycles)
        self.mdc_period_cycles = self._master.mdc_period_cycles
        super().__init__({
            "mdc":         Out(1),
            "mdio_o":      Out(1),
            "mdio_oe":     Out(1),
            "mdio_i":      In(1, init=1),
            "status":      Out(PHYStatus).array(len(phy_addrs)),
            "req_start":    In(1),
            "req_write":    In(1),
            "req_phy_addr": In(5),
            "req_reg_addr": In(5),
            "req_w_data":   In(16),
            "req_busy":     Out(1),
            "req_done":     Out(1),
            "req_r_data":   Out(16),
            "req_no_phy":   Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.master = master = self._master
        m.d.comb += [self.mdc.eq(master.mdc), self.mdio_o.eq(master.mdio_o),
                     self.mdio_oe.eq(master.mdio_oe), master.mdio_i.eq(self.mdio_i)]

        n_phys = len(self.phy_addrs)
        phy = Signal(range(n_phys))                 # index into phy_addrs
        read = Signal(range(len(POLL_REGS)))        # index into POLL_REGS
        regs = {r: Signal(16, name=f"reg{r}") for r in POLL_REGS}   # this round's reads
        answered = Signal()                         # every read of this round so far

        # A queued request: taken now, sent between two polling reads.
        rq_write, rq_phy, rq_reg, rq_data = Signal(), Signal(5), Signal(5), Signal(16)
        m.d.sync += self.req_done.eq(0)
        with m.If(self.req_start & ~self.req_busy):
            m.d.sync += [self.req_busy.eq(1), rq_write.eq(self.req_write),
                         rq_phy.eq(self.req_phy_addr), rq_reg.eq(self.req_reg_addr),
                         rq_data.eq(self.req_w_data)]

        # The round's status, from the registers read (class docstring).
        bmcr, bmsr = regs[REG_BMCR], regs[REG_BMSR]
        common = Signal(16)                         # abilities both ends advertise
        common_1000 = Signal(2)                     # 1000BASE-T HD (0), FD (1)
        speed, full_duplex = Signal(2), Signal()
        m.d.comb += [
            common.eq(regs[REG_ANAR] & regs[REG_ANLPAR]),
            common_1000.eq(Mux(bmsr[8], regs[REG_1000T_CTRL][8:10] & regs[REG_1000T_STATUS][10:12], 0)),
        ]
        with m.If(bmcr[12] & bmsr[5]):              # autonegotiated: 28B.3's priority
            with m.If(common_1000[1]):
                m.d.comb += [speed.eq(2), full_duplex.eq(1)]
            with m.Elif(common_1000[0]):
                m.d.comb += [speed.eq(2), full_duplex.eq(0)]
            with m.Elif(common[8]):                 # 100BASE-TX FD
                m.d.comb += [speed.eq(1), full_duplex.eq(1)]
            with m.Elif(common[9] | common[7]):     # 100BASE-T4, 100BASE-TX HD
                m.d.comb += [speed.eq(1), full_duplex.eq(0)]
            with m.Elif(common[6]):                 # 10BASE-T FD
                m.d.comb += [speed.eq(0), full_duplex.eq(1)]
            with m.Else():                          # 10BASE-T HD (or nothing in common)
                m.d.comb += [speed.eq(0), full_duplex.eq(0)]
        with m.Else():                              # forced (22.2.4.1.3, .8)
            m.d.comb += [speed.eq(Cat(bmcr[13], bmcr[6])), full_duplex.eq(bmcr[8])]

        phy_addr = Array(C(a, 5) for a in self.phy_addrs)[phy]
        reg_addr = Array(C(r, 5) for r in POLL_REGS)[read]

        with m.FSM():
            with m.State("Next"):                   # the master is idle
                with m.If(self.req_busy):
                    m.d.comb += [master.start.eq(1), master.write.eq(rq_write),
                                 master.phy_addr.eq(rq_phy), master.reg_addr.eq(rq_reg),
                                 master.w_data.eq(rq_data)]
                    m.next = "Await-Request"
                with m.Else():
                    m.d.comb += [master.start.eq(1), master.phy_addr.eq(phy_addr),
                                 master.reg_addr.eq(reg_addr)]
                    m.next = "Await-Read"

            with m.State("Await-Request"):
                with m.If(master.done):
                    m.d.sync += [self.req_busy.eq(0), self.req_done.eq(1)]
                    with m.If(~rq_write):
                        m.d.sync += [self.req_r_data.eq(master.r_data),
                                     self.req_no_phy.eq(master.no_phy)]
                    m.next = "Next"

            with m.State("Await-Read"):
                with m.If(master.done):
                    with m.Switch(read):
                        for i, r in enumerate(POLL_REGS):
                            with m.Case(i):
                                m.d.sync += regs[r].eq(master.r_data)
                    m.d.sync += answered.eq(Mux(read == 0, 1, answered) & ~master.no_phy)
                    with m.If(read == len(POLL_REGS) - 1):
                        m.next = "Publish"
                    with m.Else():
                        m.d.sync += read.eq(read + 1)
                        m.next = "Next"

            with m.State("Publish"):
                with m.Switch(phy):
                    for i, status in enumerate(self.status):
                        with m.Case(i):
                            m.d.sync += [
                                status.present.eq(answered),
                                status.link.eq(answered & bmsr[2]),
                                status.speed.eq(Mux(answered, speed, 0)),
                                status.full_duplex.eq(answered & full_duplex),
                                status.an_complete.eq(answered & bmsr[5]),
                                status.lp_1000.eq(Mux(answered, regs[REG_1000T_STATUS][10:12], 0)),
                                status.polls.eq(status.polls + 1),
                                status.lp_abilities.eq(Mux(answered, regs[REG_ANLPAR], 0)),
                                status.phy_id.eq(Cat(regs[REG_ID2], regs[REG_ID1])),
                            ]
                m.d.sync += [read.eq(0), phy.eq(Mux(phy == n_phys - 1, 0, phy + 1))]
                m.next = "Next"
        return m
