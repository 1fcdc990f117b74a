"""A flat-port simulation top of one :class:`~ackfilter.gateware.mac.mac.EthernetMAC`.

The RGMII pins are modelled here the way the ECP5 pads behave (the real
:class:`~ackfilter.gateware.mac.rgmii.RGMIIPads` needs the vendor primitives):

* RX: ``rgmii_rxd``/``rgmii_rx_ctl`` sampled at each rising edge of ``rx_clk``
  and at the falling edge after it, both presented at the next rising edge
  (``IDDRX1F``). No RX delay line: cocotbext-eth's ``RgmiiSource`` already
  changes the data half a period before the edge that samples it.
* TX: the converter's rising/falling values registered at the rising edge of
  ``tx_clk`` and driven while the clock is high / low (``ODDRX1F``); ``rgmii_txc``
  is made the same way from its pattern.

``phy_txc`` is an input the design ignores: the testbench drives the TX
clock as the PHY samples with it (``tx_clk`` 2 ns late) for cocotbext-eth's
sink at 1000 Mb/s.

Ports use single-underscore names (Verilator mangles ``__``). Clocks and
resets: ``clk``/``rst`` (system, 50 MHz), ``rx_clk``/``rx_rst``,
``tx_clk``/``tx_rst``.
"""


from amaranth.hdl import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .mac import EthernetMAC
from .speed import SPEED_1000

__all__ = ["MACSimTop", "STROBES"]

STROBES = tuple(EthernetMAC.RX_STROBE_PORTS.values()) + tuple(EthernetMAC.TX_STROBE_PORTS.values())


class MACSimTop(wiring.Component):
    """EthernetMAC with behavioural DDR pins and flat stream ports."""

    def __init__(self, **mac_params):
        self._mac_params = mac_params
        super().__init__({
            "rgmii_rxd":    In(4),
            "rgmii_rx_ctl": In(1),
            "rgmii_txd":    Out(4),
            "rgmii_tx_ctl": Out(1),
            "rgmii_txc":    Out(1),
            # Unused inside: the testbench drives the TX clock as the PHY sees
            # it (2 ns late, the B50612D's internal delay) for its RGMII sink.
            "phy_txc":      In(1),
            "speed":        In(2, init=SPEED_1000),
            "rxc_speed":    Out(2),
            "rxc_ok":       Out(1),
            "speed_changed": Out(1),
            "rx_valid":     Out(1),
            "rx_ready":     In(1),
            "rx_data":      Out(32),
            "rx_keep":      Out(4),
            "rx_first":     Out(1),
            "rx_last":      Out(1),
            "tx_valid":     In(1),
            "tx_ready":     Out(1),
            "tx_data":      In(32),
            "tx_keep":      In(4),
            "tx_first":     In(1),
            "tx_last":      In(1),
            "link_up":      Out(1),
            "link_speed":   Out(2),
            "full_duplex":  Out(1),
            **{name: Out(1) for name in STROBES},
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.mac = mac = EthernetMAC(rx_domain="rx", tx_domain="tx", **self._mac_params)

        m.domains.rx_neg = ClockDomain("rx_neg", clk_edge="neg", reset_less=True)
        m.domains.tx_neg = ClockDomain("tx_neg", clk_edge="neg", reset_less=True)
        m.d.comb += [ClockSignal("rx_neg").eq(ClockSignal("rx")),
                     ClockSignal("tx_neg").eq(ClockSignal("tx"))]

        # IDDRX1F model.
        rise_q, fall_q = Signal(5), Signal(5)
        pin_in = Cat(self.rgmii_rxd, self.rgmii_rx_ctl)
        m.d.rx += rise_q.eq(pin_in)
        m.d.rx_neg += fall_q.eq(pin_in)
        m.d.rx += [
            mac.rxd_rise.eq(rise_q[:4]), mac.rx_ctl_rise.eq(rise_q[4]),
            mac.rxd_fall.eq(fall_q[:4]), mac.rx_ctl_fall.eq(fall_q[4]),
        ]

        # ODDRX1F model.
        out_rise, out_fall, out_fall_q = Signal(6), Signal(6), Signal(6)
        m.d.tx += [
            out_rise.eq(Cat(mac.txd_rise, mac.tx_ctl_rise, mac.txc_rise)),
            out_fall.eq(Cat(mac.txd_fall, mac.tx_ctl_fall, mac.txc_fall)),
        ]
        m.d.tx_neg += out_fall_q.eq(out_fall)
        pins = Mux(ClockSignal("tx"), out_rise, out_fall_q)
        m.d.comb += [
            self.rgmii_txd.eq(pins[:4]), self.rgmii_tx_ctl.eq(pins[4]), self.rgmii_txc.eq(pins[5]),
        ]

        m.d.comb += [
            mac.speed.eq(self.speed),
            self.rxc_speed.eq(mac.rxc_speed), self.rxc_ok.eq(mac.rxc_ok),
            self.speed_changed.eq(mac.speed_changed),
            self.rx_valid.eq(mac.rx.valid), mac.rx.ready.eq(self.rx_ready),
            self.rx_data.eq(mac.rx.payload.data), self.rx_keep.eq(mac.rx.payload.keep),
            self.rx_first.eq(mac.rx.payload.first), self.rx_last.eq(mac.rx.payload.last),
            mac.tx.valid.eq(self.tx_valid), self.tx_ready.eq(mac.tx.ready),
            mac.tx.payload.data.eq(self.tx_data), mac.tx.payload.keep.eq(self.tx_keep),
            mac.tx.payload.first.eq(self.tx_first), mac.tx.payload.last.eq(self.tx_last),
            self.link_up.eq(mac.link_up), self.link_speed.eq(mac.link_speed),
            self.full_duplex.eq(mac.full_duplex),
        ]
        for name in STROBES:
            m.d.comb += getattr(self, name).eq(getattr(mac, name))
        return m
