"""The link speed of an RGMII port, from the frequency of the PHY's RX clock.

RGMII v2.0 runs RXC at 125 MHz at 1000 Mb/s, 25 MHz at 100 and 2.5 MHz at
10: the PHY's receive clock *is* the speed of the link, whatever the PHY
reports elsewhere. Neither PHY of the Colorlight 5A-75B sends RGMII in-band
status at its power-on defaults (the Broadcom B50612D has it behind a shadow
register, the Realtek RTL8211F behind a page register), and MDIO is slow and
PHY-specific, so the MAC measures RXC against its own clock instead; in-band
status and MDIO, where present, only add link and duplex for the user.

:class:`RxClockSpeed` counts RXC cycles in the RX domain; the top bit of
that counter (RXC / 2^``DIV_BITS``) crosses into the system domain through a
synchronizer, and there its rising edges are counted over a window of
2^``window_bits`` system cycles. The count falls in one of four classes
(about 320, 64 and 6.4 edges at 1000, 100 and 10 Mb/s with 50 MHz and the
default window; fewer than two: no clock), split at the geometric means of
neighbouring classes, so a clock 40 % off still lands in its class. A new
speed is taken only after two windows in a row agree on it (hysteresis: a
glitch of RXC while the PHY renegotiates does not flip it); a window without
a clock leaves the speed as it was and clears ``rxc_ok``.
"""

import math

from amaranth.hdl import *
from amaranth.lib import cdc, wiring
from amaranth.lib.wiring import In, Out

from ...params import F_SYS_HZ

__all__ = ["RxClockSpeed", "RXC_HZ_BY_SPEED", "SPEED_10", "SPEED_100", "SPEED_1000"]

#: The speed codes, as RGMII in-band status and the MDIO poller use them.
SPEED_10, SPEED_100, SPEED_1000 = 0, 1, 2
#: RGMII v2.0 table 1: RXC at each speed.
RXC_HZ_BY_SPEED = {SPEED_10: 2_500_000, SPEED_100: 25_000_000, SPEED_1000: 125_000_000}
#: RXC is divided by 2^DIV_BITS before it crosses: at 125 MHz the divided
#: clock's halves last 16 RXC cycles, 6.4 system cycles at 50 MHz, so the
#: two-flop synchronizer sees every edge.
DIV_BITS = 5


class RxClockSpeed(wiring.Component):
    """The speed of one port from its RXC (module docstring).

    Parameters
    ----------
    rx_domain : str
        The domain clocked by the PHY's RXC.
    clk_hz : int
        The system clock (``sync``).
    window_bits : int
        A measurement lasts 2^window_bits system cycles.

    Ports (``sync``)
    ----------------
    speed : Out(2)
        ``SPEED_10``, ``SPEED_100`` or ``SPEED_1000``; 1000 until RXC has
        been measured.
    rxc_ok : Out(1)
        The last window saw RXC running.
    changed : Out(1)
        Strobe: ``speed`` takes a new value in the next cycle.
    """

    def __init__(self, *, rx_domain="rx", clk_hz=F_SYS_HZ, window_bits=12):
        if not isinstance(window_bits, int) or not 6 <= window_bits <= 24:
            raise TypeError(f"window_bits must be an integer 6..24, not {window_bits!r}")
        self._rx_domain = rx_domain
        self.window_bits = window_bits
        window_s = (1 << window_bits) / clk_hz
        # Expected rising edges of the divided RXC per window, per speed.
        self.expected = {s: hz / (1 << DIV_BITS) * window_s for s, hz in RXC_HZ_BY_SPEED.items()}
        # The divided clock must be slow enough for the synchronizer: each
        # half at least two system cycles.
        if RXC_HZ_BY_SPEED[SPEED_1000] / (1 << DIV_BITS) > clk_hz / 4:
            raise TypeError(f"clk_hz {clk_hz} is too slow to measure a 125 MHz RXC divided by "
                            f"2^{DIV_BITS}")
        if self.expected[SPEED_10] < 4:
            raise TypeError(f"window_bits {window_bits} is too short to see a 2.5 MHz RXC")
        e = self.expected
        self.thresholds = (
            2,                                                   # below: no clock
            math.ceil(math.sqrt(e[SPEED_10] * e[SPEED_100])),    # from here: 100
            math.ceil(math.sqrt(e[SPEED_100] * e[SPEED_1000])),  # from here: 1000
        )
        self._count_max = math.ceil(e[SPEED_1000] * 2)
        super().__init__({
            "speed":   Out(2, init=SPEED_1000),
            "rxc_ok":  Out(1),
            "changed": Out(1),
        })

    def elaborate(self, platform):
        m = Module()

        div = Signal(DIV_BITS)
        m.d[self._rx_domain] += div.eq(div + 1)
        div_top = Signal()
        m.submodules.div_cdc = cdc.FFSynchronizer(div[-1], div_top, o_domain="sync")

        prev = Signal()
        edges = Signal(range(self._count_max + 1))
        window = Signal(self.window_bits)
        m.d.sync += [prev.eq(div_top), window.eq(window + 1)]
        rising = div_top & ~prev

        no_clock, at_100, at_1000 = self.thresholds
        measured = Signal(2)
        present = Signal()
        m.d.comb += [
            present.eq(edges >= no_clock),
            measured.eq(Mux(edges >= at_1000, SPEED_1000, Mux(edges >= at_100, SPEED_100, SPEED_10))),
        ]
        candidate = Signal(2, init=SPEED_1000)
        with m.If(window == (1 << self.window_bits) - 1):
            m.d.sync += [edges.eq(rising), self.rxc_ok.eq(present)]
            with m.If(present):
                m.d.sync += candidate.eq(measured)
                with m.If((measured == candidate) & (measured != self.speed)):
                    m.d.comb += self.changed.eq(1)
                    m.d.sync += self.speed.eq(measured)
        with m.Elif(rising & (edges != self._count_max)):
            m.d.sync += edges.eq(edges + 1)
        return m
