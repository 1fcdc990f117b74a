"""RGMII: the thin ECP5 pads block and the RGMII <-> GMII converters.

RGMII (RGMII v2.0) carries a byte per clock at 1000 Mb/s: the low nibble on
the rising edge of the 125 MHz clock, the high nibble on the falling edge;
``ctl`` carries ``dv`` (``tx_en``) on the rising edge and ``dv ^ er`` on the
falling edge. At 100 Mb/s the clock is 25 MHz and each cycle carries one
nibble (the same on both edges), low nibble first. Between frames
(``dv = er = 0``) the PHY puts its link status on ``rxd`` (in-band status:
bit 0 link up, bits 2:1 speed 0 = 10, 1 = 100, 2 = 1000 Mb/s, bit 3 full
duplex).

The converters work on plain signals, the nibbles of each edge as the pads
deliver them, so the simulators run them; only :class:`RGMIIPads` touches the
FPGA's I/O (``io.DDRBuffer`` and the ECP5 ``DELAYG``/``IDDRX1F`` primitives).

Clocking (Colorlight 5A-75B, Broadcom B50612D PHYs):

* RX: the PHY sends ``rxc`` edge-aligned with the data; the pads delay data
  and ``ctl`` by ``rx_delay_taps`` x ~25 ps (default 80, about 2 ns, as LiteEth
  does on this board) so that ``rxc`` samples them in the middle of the eye.
  The user makes ``rxc`` the clock of the RX domain.
* TX: the TX domain is a free-running local 125 MHz clock at both speeds
  (a PLL output, so TX works with the link down and without the PHY's RX
  clock). ``txc`` is driven through a DDR output like the data, edge-aligned
  at 1000 Mb/s (the B50612D adds the 2 ns TX clock delay itself by default).
  At 100 Mb/s the converter sends a nibble every five TX cycles and makes
  the 25 MHz ``txc`` from the DDR pattern, its rising edge 12 ns after the
  data change (centred enough for the PHY's setup and hold). The byte time
  is the transmitter's: the converter takes each byte at its strobe.
"""

from amaranth.hdl import *
from amaranth.lib import io, wiring
from amaranth.lib.wiring import In, Out

# The speed codes (also the in-band status nibble's speed field, RGMII v2.0
# section 3.4.1): one definition, in speed.py.
from .speed import SPEED_10, SPEED_100, SPEED_1000

__all__ = ["RGMIIPinSignature", "RGMIIRxConverter", "RGMIITxConverter", "RGMIIPads",
           "RX_DELAY_TAPS"]

#: One RGMII port's DDR halves as a MAC sees them (``EthernetMAC`` has these
#: members; ``RGMIIPads`` has them flipped): the rising- and falling-edge
#: halves of RXD/RX_CTL in, of TXD/TX_CTL/TXC out.
RGMIIPinSignature = wiring.Signature({
    "rxd_rise":    In(4),
    "rxd_fall":    In(4),
    "rx_ctl_rise": In(1),
    "rx_ctl_fall": In(1),
    "txd_rise":    Out(4),
    "txd_fall":    Out(4),
    "tx_ctl_rise": Out(1),
    "tx_ctl_fall": Out(1),
    "txc_rise":    Out(1),
    "txc_fall":    Out(1),
})

#: ECP5 DELAYG taps for the RX data/ctl delay: 2 ns at ~25 ps a tap
#: (Lattice TN1265; LiteEth ``ecp5rgmii`` uses the same value).
RX_DELAY_TAPS = 80


# 100 Mb/s TX clock: five 125 MHz cycles per 25 MHz nibble period, ``txc`` as
# (rising-edge half, falling-edge half) per cycle. High during half-cycles 3..7
# of the 10: rises 12 ns after the data changes (at half 0), falls 20 ns later.
TXC_100M_PATTERN = ((0, 0), (0, 1), (1, 1), (1, 1), (0, 0))
# 10 Mb/s TX clock: fifty 125 MHz cycles per 2.5 MHz nibble period, ``txc``
# high from cycle 12 to 36 of the 50 (rises 96 ns after the data change).
TXC_10M_PERIOD = 50
TXC_10M_RISE = 12


class RGMIIRxConverter(wiring.Component):
    """RGMII receive nibbles -> GMII bytes, in the RX clock domain (``sync`` here).

    Ports
    -----
    rxd_rise, rxd_fall, rx_ctl_rise, rx_ctl_fall : In
        The nibble and ``ctl`` sampled at a rising edge of ``rxc`` and at the
        falling edge after it, both presented in the same cycle (as ECP5
        ``IDDRX1F`` ``Q0``/``Q1`` do).
    speed_1000 : In(1)
        1: 1000 Mb/s (a byte a cycle); 0: 100 Mb/s (a nibble a cycle). Must
        be synchronous to this domain.
    valid, data, dv, er : Out
        Registered byte beats: a beat with ``valid`` carries one byte time.
        At 1000 Mb/s every cycle is a beat, preamble included. At 100 Mb/s
        the nibbles are paired from the start frame delimiter on (nibbles 5
        then D give the byte 0xD5, whatever the preamble's length): while
        ``dv`` is high and the SFD has not been seen no beat is given, every
        idle cycle is a beat with ``dv = 0``, and a dangling nibble at the
        end of a frame is dropped (a dribble nibble).
    link_up, speed, full_duplex : Out
        In-band status, registered from the last idle cycle
        (``dv = er = 0``).
    """

    def __init__(self):
        super().__init__({
            "rxd_rise":    In(4),
            "rxd_fall":    In(4),
            "rx_ctl_rise": In(1),
            "rx_ctl_fall": In(1),
            "speed_1000":  In(1),
            "valid":       Out(1),
            "data":        Out(8),
            "dv":          Out(1),
            "er":          Out(1),
            "link_up":     Out(1),
            "speed":       Out(2),
            "full_duplex": Out(1),
        })

    def elaborate(self, platform):
        m = Module()

        # No register here has a reset: each follows the pads within a few
        # cycles, and the domain's reset net (its synchronizer sits by the
        # logic the reset matters to, maybe the chip's width away) reaches
        # none of the flip-flops by the pads.
        def reg(shape=1, name=None):
            return Signal(shape, name=name, reset_less=True)

        # Input register: the pads' outputs travel some distance to here.
        # The two nibble compares of the 100 Mb/s SFD search are taken
        # here too, so that no decision below starts with a compare.
        rise, fall = reg(4, "rise"), reg(4, "fall")
        ctl_rise, ctl_fall = reg(name="ctl_rise"), reg(name="ctl_fall")
        rise_is_5, rise_is_d = reg(name="rise_is_5"), reg(name="rise_is_d")
        m.d.sync += [
            rise.eq(self.rxd_rise), fall.eq(self.rxd_fall),
            ctl_rise.eq(self.rx_ctl_rise), ctl_fall.eq(self.rx_ctl_fall),
            rise_is_5.eq(self.rxd_rise == 0x5), rise_is_d.eq(self.rxd_rise == 0xD),
        ]
        dv = ctl_rise
        er = ctl_rise ^ ctl_fall

        status = reg(4, "status")
        m.d.comb += [self.link_up.eq(status[0]), self.speed.eq(status[1:3]),
                     self.full_duplex.eq(status[3])]
        with m.If(~ctl_rise & ~ctl_fall):
            m.d.sync += status.eq(rise)

        # 100 Mb/s nibble pairing.
        synced = reg(name="synced")        # SFD seen in this frame: nibbles are paired
        high_next = reg(name="high_next")  # the next nibble is a high nibble
        low = reg(4, "low")                # the previous nibble
        low_is_5 = reg(name="low_is_5")    # ... and it is 5
        low_er = reg(name="low_er")
        sfd = low_is_5 & rise_is_d

        # The beat registers take a value every cycle, without an enable
        # (`data` means something only with `valid`): at 1000 Mb/s the byte;
        # at 100 Mb/s 0xD5 at the SFD, then each pair of nibbles; `dv` is
        # ``ctl``'s in both.
        valid, data, dv_q, er_q = reg(name="valid"), reg(8, "data"), reg(name="dv_q"), reg(name="er_q")
        m.d.comb += [self.valid.eq(valid), self.data.eq(data), self.dv.eq(dv_q), self.er.eq(er_q)]
        m.d.sync += [
            valid.eq(self.speed_1000 | ~dv | Mux(synced, high_next, sfd)),
            data.eq(Mux(self.speed_1000, Cat(rise, fall), Mux(synced, Cat(low, rise), 0xD5))),
            dv_q.eq(dv),
            er_q.eq(Mux(self.speed_1000 | ~dv, er, low_er | er)),
        ]
        with m.If(self.speed_1000 | ~dv):
            m.d.sync += [synced.eq(0), low.eq(0), low_is_5.eq(0)]
        with m.Elif(~synced):
            m.d.sync += [low.eq(rise), low_is_5.eq(rise_is_5), low_er.eq(er)]
            with m.If(sfd):
                m.d.sync += [synced.eq(1), high_next.eq(0)]
        with m.Else():
            m.d.sync += high_next.eq(~high_next)
            with m.If(~high_next):
                m.d.sync += [low.eq(rise), low_is_5.eq(rise_is_5), low_er.eq(er)]
        return m


class RGMIITxConverter(wiring.Component):
    """GMII bytes -> RGMII transmit nibbles, in the 125 MHz TX domain (``sync`` here).

    The transmitter keeps the byte time (:class:`~ackfilter.gateware.mac.tx.MACTx`
    strobes its framer); the converter follows its ``stb``, so nothing but
    registered data travels from the transmitter, which sits by its FIFO,
    to the converter by the pads.

    Ports
    -----
    speed : In(2)
        ``SPEED_1000``: a byte every cycle; ``SPEED_100``: a byte every ten
        cycles, ``SPEED_10`` every hundred. Must be synchronous to this domain.
    stb : In(1)
        ``data``, ``en`` and ``er`` carry a new byte in this cycle: every
        cycle at 1000 Mb/s, every tenth at 100 Mb/s, every hundredth at 10.
        At 10 and 100 Mb/s the byte goes out as two nibbles (five or fifty
        cycles each), low nibble first, from the cycle after ``stb``.
    data, en, er : In
        The byte (bit 0 first on the wire), ``tx_en`` and ``tx_er``.
    txd_rise, txd_fall, tx_ctl_rise, tx_ctl_fall, txc_rise, txc_fall : Out
        Registered, for the DDR outputs: the value to drive after the rising
        and after the falling edge of each cycle (``txc`` included).
    """

    def __init__(self):
        super().__init__({
            "speed":       In(2),
            "stb":         In(1),
            "data":        In(8),
            "en":          In(1),
            "er":          In(1),
            "txd_rise":    Out(4),
            "txd_fall":    Out(4),
            "tx_ctl_rise": Out(1),
            "tx_ctl_fall": Out(1),
            "txc_rise":    Out(1),
            "txc_fall":    Out(1),
        })

    def elaborate(self, platform):
        m = Module()

        # 10/100 Mb/s: the byte being sent and the position in it (cycle
        # `nib` of nibble `high`, for the cycle after this one); a strobe
        # restarts the count with the new byte.
        # `end_next` says `nib_next` is the nibble's last cycle, so the
        # strobe reaches the counter through one gate (a strobe starts at
        # cycle 0, never a last one).
        # `txc_next` is TXC (after the rising edge, after the falling edge)
        # for the cycle `nib_next`, decided with the count a cycle ahead, so
        # TXC's registers take a flip-flop or the strobe's constant, not the
        # count's compares (they were the TX domain's critical path, five
        # LUTs deep into TXC's enable). Cycles 0 and (at 10 Mb/s) 1 have TXC
        # low, so a strobe's next two values are constants.
        # None of these has a reset (they start at 0 with the bitstream, and
        # a strobe restarts the count; the outputs keep theirs, so TX_EN is
        # low in reset): the domain's reset net comes from a synchronizer
        # that may sit the chip's width away, and through the count's
        # set/reset logic it was the TX domain's critical path (rev 8.0).
        def reg(shape, name):
            return Signal(shape, name=name, reset_less=True)

        cur = reg(8, "cur")
        cur_en, cur_er = reg(1, "cur_en"), reg(1, "cur_er")
        nib_next = reg(range(TXC_10M_PERIOD), "nib_next")
        high_next = reg(1, "high_next")
        end_next = reg(1, "end_next")
        txc_next = reg(2, "txc_next")
        assert TXC_100M_PATTERN[0] == (0, 0) and TXC_10M_RISE > 1

        with m.If(self.speed == SPEED_1000):
            m.d.sync += [
                self.txd_rise.eq(self.data[0:4]),
                self.txd_fall.eq(self.data[4:8]),
                self.tx_ctl_rise.eq(self.en),
                self.tx_ctl_fall.eq(self.en ^ self.er),
                self.txc_rise.eq(1),
                self.txc_fall.eq(0),
                nib_next.eq(0), high_next.eq(0), end_next.eq(0), txc_next.eq(0),
            ]
        with m.Else():
            at_10 = self.speed == SPEED_10
            last = Mux(at_10, TXC_10M_PERIOD - 1, len(TXC_100M_PATTERN) - 1)
            nib = Mux(self.stb, 0, nib_next)
            high = Mux(self.stb, 0, high_next)
            byte = Mux(self.stb, self.data, cur)
            en = Mux(self.stb, self.en, cur_en)
            er = Mux(self.stb, self.er, cur_er)
            nibble = Mux(high, byte[4:8], byte[0:4])
            nib_end = ~self.stb & end_next
            m.d.sync += [
                cur.eq(byte), cur_en.eq(en), cur_er.eq(er),
                nib_next.eq(Mux(self.stb, 1, Mux(end_next, 0, nib_next + 1))),
                # (nib_next + 1 is the last cycle: a count neither restarted
                # by the strobe nor wrapping.)
                end_next.eq(~self.stb & ~end_next & (nib_next == last - 1)),
                high_next.eq(high ^ nib_end),
                self.txd_rise.eq(nibble),
                self.txd_fall.eq(nibble),
                self.tx_ctl_rise.eq(en),
                self.tx_ctl_fall.eq(en ^ er),
            ]
            # TXC of cycle `nib` (cycle 0 after a strobe); `after` is TXC of
            # cycle `nib_next + 1`, the next `txc_next` unless the count
            # restarts.
            txc = Mux(self.stb, 0, txc_next)
            m.d.sync += [self.txc_rise.eq(txc[0]), self.txc_fall.eq(txc[1])]
            after = Signal(2)                   # TXC of cycle nib_next + 1
            with m.If(at_10):
                # 2.5 MHz: high from 96 ns after the nibble changes for 200 ns.
                high_at = (nib_next >= TXC_10M_RISE - 1) & (nib_next < TXC_10M_RISE + TXC_10M_PERIOD // 2 - 1)
                m.d.comb += after.eq(Cat(high_at, high_at))
            with m.Else():
                with m.Switch(nib_next):
                    for p, (r, f) in enumerate(TXC_100M_PATTERN[1:]):
                        with m.Case(p):
                            m.d.comb += after.eq(Cat(C(r, 1), C(f, 1)))
            first = Mux(at_10, 0, Cat(C(TXC_100M_PATTERN[1][0], 1), C(TXC_100M_PATTERN[1][1], 1)))
            m.d.sync += txc_next.eq(Mux(self.stb, first, Mux(end_next, 0, after)))
        return m


class RGMIIPads(wiring.Component):
    """The FPGA side of one RGMII port (ECP5 only; not simulable).

    Parameters
    ----------
    pins : object
        With attributes ``rx_clk``, ``rx_ctl``, ``rx_data`` (4), ``tx_clk``,
        ``tx_ctl``, ``tx_data`` (4): I/O ports as given by
        ``platform.request(..., dir="-")``.
    rx_domain, tx_domain : str
        The domains the DDR registers are clocked by (``rx_domain``'s clock
        must be the ``rx_clk`` output of this block).
    rx_delay_taps : int
        ``DELAYG`` value on ``rx_data``/``rx_ctl`` (0..127, ~25 ps a tap);
        ``None`` drops the delay lines (a PHY that delays RXC itself) and uses
        plain ``io.DDRBuffer``s.

    Ports
    -----
    rx_clk : Out(1)
        ``rxc`` from its input buffer: the clock to give the RX domain.
    rxd_rise, rxd_fall, rx_ctl_rise, rx_ctl_fall : Out
        RX domain (see :class:`RGMIIRxConverter`).
    txd_rise, txd_fall, tx_ctl_rise, tx_ctl_fall, txc_rise, txc_fall : In
        TX domain (see :class:`RGMIITxConverter`).
    """

    def __init__(self, pins, *, rx_domain="rx", tx_domain="tx", rx_delay_taps=RX_DELAY_TAPS):
        if rx_delay_taps is not None and not (isinstance(rx_delay_taps, int) and 0 <= rx_delay_taps < 128):
            raise TypeError(f"rx_delay_taps must be None or an integer 0..127, not {rx_delay_taps!r}")
        self._pins = pins
        self._rx_domain = rx_domain
        self._tx_domain = tx_domain
        self._rx_delay_taps = rx_delay_taps
        super().__init__({
            "rx_clk": Out(1),
            **RGMIIPinSignature.flip().members,
        })

    def elaborate(self, platform):
        if platform is None:
            raise TypeError("RGMIIPads needs a platform: simulate the converters instead")
        m = Module()
        pins = self._pins

        m.submodules.rx_clk = rx_clk = io.Buffer("i", pins.rx_clk)
        m.d.comb += self.rx_clk.eq(rx_clk.i)

        def ddr_in(name, port, rise, fall):
            if self._rx_delay_taps is None:
                m.submodules[name] = buf = io.DDRBuffer("i", port, i_domain=self._rx_domain)
                m.d.comb += [rise.eq(buf.i[0]), fall.eq(buf.i[1])]
                return
            m.submodules[name] = buf = io.Buffer("i", port)
            for bit in range(len(port)):
                delayed = Signal(name=f"{name}_delayed{bit}")
                m.submodules[f"{name}_delay{bit}"] = Instance("DELAYG",
                    p_DEL_MODE="SCLK_ALIGNED",
                    p_DEL_VALUE=self._rx_delay_taps,   # an integer (nextpnr ignores "DELAYnn")
                    i_A=buf.i[bit],
                    o_Z=delayed)
                m.submodules[f"{name}_ddr{bit}"] = Instance("IDDRX1F",
                    i_SCLK=ClockSignal(self._rx_domain),
                    i_RST=Const(0),
                    i_D=delayed,
                    o_Q0=rise[bit],      # sampled at the rising edge
                    o_Q1=fall[bit])      # sampled at the falling edge after it

        ddr_in("rx_data", pins.rx_data, self.rxd_rise, self.rxd_fall)
        ddr_in("rx_ctl", pins.rx_ctl, self.rx_ctl_rise, self.rx_ctl_fall)

        def ddr_out(name, port, rise, fall):
            m.submodules[name] = buf = io.DDRBuffer("o", port, o_domain=self._tx_domain)
            m.d.comb += [buf.o[0].eq(rise), buf.o[1].eq(fall)]

        ddr_out("tx_data", pins.tx_data, self.txd_rise, self.txd_fall)
        ddr_out("tx_ctl", pins.tx_ctl, self.tx_ctl_rise, self.tx_ctl_fall)
        ddr_out("tx_clk", pins.tx_clk, self.txc_rise, self.txc_fall)
        return m
