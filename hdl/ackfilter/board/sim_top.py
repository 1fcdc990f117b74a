"""A flat-port simulation top of the board: :class:`~ackfilter.board.top.BoardDatapath`
(both MACs, the uplink core, the downlink passthrough) with the DDR pins of
each port modelled as in ``mac_top`` (``IDDRX1F`` / ``ODDRX1F`` behaviour):
only the pads and the PLL of :class:`~ackfilter.board.top.BoardTop` are left out.

Ports (single underscores; Verilator mangles ``__``): per port ``P`` in
``lan``/``modem``: ``P_rxd``, ``P_rx_ctl`` (in, ``P_rx_clk`` domain),
``P_txd``, ``P_tx_ctl``, ``P_txc`` (out, ``tx_clk`` domain),
``P_rx_clk``/``P_rx_rst``; ``clk``/``rst`` (system, 50 MHz), ``tx_clk``/``tx_rst``
(125 MHz); ``phy_txc`` (ignored inside: the testbench's 2 ns-late copy of
``tx_clk`` that the PHY models sample with); ``led``, ``lan_link_up``,
``modem_link_up``; the register bus (``csr_addr``, ``csr_r_stb``,
``csr_r_data``, ``csr_w_stb``, ``csr_w_data``: the core's bank and the
board's registers); the MDIO pins (``mdc``, ``mdio_o``, ``mdio_oe``,
``mdio_i``; tie ``mdio_i`` high for no PHY).
"""


from amaranth.hdl import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .top import BoardDatapath

__all__ = ["BoardSimTop", "PORTS"]

PORTS = ("lan", "modem")


class BoardSimTop(wiring.Component):
    """BoardDatapath with behavioural DDR pins and its clocks/resets as ports."""

    def __init__(self, **params):
        self._params = params
        members = {"phy_txc": In(1), "led": Out(1), "lan_link_up": Out(1), "modem_link_up": Out(1),
                   "csr_addr": In(8), "csr_r_stb": In(1), "csr_r_data": Out(32),
                   "csr_w_stb": In(1), "csr_w_data": In(32),
                   "mdc": Out(1), "mdio_o": Out(1), "mdio_oe": Out(1), "mdio_i": In(1)}
        for p in PORTS:
            members.update({
                f"{p}_rxd": In(4), f"{p}_rx_ctl": In(1),
                f"{p}_txd": Out(4), f"{p}_tx_ctl": Out(1), f"{p}_txc": Out(1),
            })
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.submodules.board = board = BoardDatapath(**self._params)
        m.d.comb += [self.led.eq(board.led), self.lan_link_up.eq(board.lan_link_up),
                     self.modem_link_up.eq(board.modem_link_up),
                     board.csr.addr.eq(self.csr_addr), board.csr.r_stb.eq(self.csr_r_stb),
                     self.csr_r_data.eq(board.csr.r_data), board.csr.w_stb.eq(self.csr_w_stb),
                     board.csr.w_data.eq(self.csr_w_data),
                     self.mdc.eq(board.mdc), self.mdio_o.eq(board.mdio_o),
                     self.mdio_oe.eq(board.mdio_oe), board.mdio_i.eq(self.mdio_i)]

        # sync, tx, lan_rx and modem_rx stay undefined here: Amaranth makes
        # their clk/rst ports (clk, rst, tx_clk, tx_rst, lan_rx_clk, ...).
        # Both MACs' transmit domains run on tx (as on the board, one clock).
        m.domains.tx_neg = ClockDomain("tx_neg", clk_edge="neg", reset_less=True)
        m.d.comb += ClockSignal("tx_neg").eq(ClockSignal("tx"))
        for p in PORTS:
            m.domains += ClockDomain(f"{p}_tx")
            m.d.comb += [ClockSignal(f"{p}_tx").eq(ClockSignal("tx")),
                         ResetSignal(f"{p}_tx").eq(ResetSignal("tx"))]
        for p in PORTS:
            side = getattr(board, p)
            rx, rx_neg = f"{p}_rx", f"{p}_rx_neg"
            m.domains += ClockDomain(rx_neg, clk_edge="neg", reset_less=True)
            m.d.comb += ClockSignal(rx_neg).eq(ClockSignal(rx))

            # IDDRX1F model.
            rise_q, fall_q = Signal(5, name=f"{p}_rise_q"), Signal(5, name=f"{p}_fall_q")
            pin_in = Cat(getattr(self, f"{p}_rxd"), getattr(self, f"{p}_rx_ctl"))
            m.d[rx] += rise_q.eq(pin_in)
            m.d[rx_neg] += fall_q.eq(pin_in)
            m.d[rx] += [
                side.rxd_rise.eq(rise_q[:4]), side.rx_ctl_rise.eq(rise_q[4]),
                side.rxd_fall.eq(fall_q[:4]), side.rx_ctl_fall.eq(fall_q[4]),
            ]

            # ODDRX1F model.
            out_rise, out_fall = Signal(6, name=f"{p}_out_rise"), Signal(6, name=f"{p}_out_fall")
            out_fall_q = Signal(6, name=f"{p}_out_fall_q")
            m.d[f"{p}_tx"] += [
                out_rise.eq(Cat(side.txd_rise, side.tx_ctl_rise, side.txc_rise)),
                out_fall.eq(Cat(side.txd_fall, side.tx_ctl_fall, side.txc_fall)),
            ]
            m.d.tx_neg += out_fall_q.eq(out_fall)
            pins = Mux(ClockSignal("tx"), out_rise, out_fall_q)
            m.d.comb += [getattr(self, f"{p}_txd").eq(pins[:4]),
                         getattr(self, f"{p}_tx_ctl").eq(pins[4]),
                         getattr(self, f"{p}_txc").eq(pins[5])]
        return m
