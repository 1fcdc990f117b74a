"""The Colorlight 5A-75B board top (every revision of :mod:`.revisions`):
two RGMII ports, the uplink core between them.

Split in two so the simulators run everything but the pads and the PLL:

* :class:`BoardDatapath` (simulable): both :class:`~ackfilter.gateware.mac.mac.EthernetMAC`
  cores on plain RGMII-side signals, each at the speed its PHY's RX clock
  runs at, the :class:`~ackfilter.gateware.core.UplinkCore` (LAN MAC rx ->
  core -> modem MAC tx), the downlink passthrough (modem MAC rx -> LAN MAC
  tx), the free-running ``now`` counter, the MDIO poller and the board's
  registers (:mod:`.regs`), the control plane when given a firmware, and
  the link/activity LED. It uses the domains ``sync`` (system,
  ``params.F_SYS_HZ``: 50 MHz), ``lan_tx`` / ``modem_tx`` (each MAC's
  transmitter, both on the one 125 MHz clock, each with a reset of its own)
  and ``lan_rx`` / ``modem_rx`` (each PHY's RXC), which the user creates.
* :class:`BoardTop` (hardware only): the clock generation (25 MHz -> ECP5
  ``EHXPLLL`` -> 125 / 50 MHz), resets, the pads (:class:`RGMIIPads`), the
  PHY management pins, the LED or UART pins, around a :class:`BoardDatapath`.

PHY reset (board facts, :mod:`.revisions`: both PHYs share one reset line,
and the FPGA's 25 MHz clock comes from or with the PHYs' crystal): the FPGA
**never asserts** the PHY reset. It drives ``rst_n`` high (inactive) from
the moment it is configured, so the 25 MHz clock the PLL needs is never
stopped by the FPGA; the PHYs rely on their own power-on reset, as the LiteX
target for this board does. Nothing depends on MDIO: the speed comes from
each PHY's RX clock; the MDIO poller only reports what the PHYs say, and
writes only what the control plane asks for.
"""

from amaranth.hdl import *
from amaranth.lib import cdc, io, wiring
from amaranth.lib.wiring import In, Out

from .. import params as P
from ..gateware.core import UplinkCore
from ..gateware.mac.mac import EthernetMAC
from ..gateware.mac.rgmii import RX_DELAY_TAPS, RGMIIPads, RGMIIPinSignature
from ..gateware.csr import CSRBusSignature
from ..gateware.mac.speed import SPEED_1000
from ..gateware.mdio import PHYPoller
from .regs import BoardRegs, CSRSplit
from ..gateware.lib.stream import StreamRegister
from ..soc.periph import PinsSignature

__all__ = ["PHY_SIDE", "BoardDatapath", "BoardTop",
           "SYS_HZ", "TX_HZ", "RXC_HZ", "CLOCK_TARGETS_HZ"]

#: Clock targets. System: the core's clock (``params.F_SYS_HZ``); TX: the
#: RGMII byte clock at 1000 Mb/s.
SYS_HZ = P.F_SYS_HZ
TX_HZ = 125_000_000
RXC_HZ = 125_000_000
#: Domain -> frequency the build must close timing at.
CLOCK_TARGETS_HZ = {"sync": SYS_HZ, "tx": TX_HZ, "lan_rx": RXC_HZ, "modem_rx": RXC_HZ}
#: The PLL's VCO (25 MHz x 20) and the system clock's output divider.
VCO_HZ = 500_000_000
SYS_DIV = VCO_HZ // SYS_HZ
assert SYS_DIV * SYS_HZ == VCO_HZ, "the system clock must divide the PLL's 500 MHz VCO"

#: LED activity stretch: 2**21 system cycles = 34 ms, long enough to see.
LED_STRETCH_BITS = 21

#: One RGMII port seen from the datapath (the :class:`EthernetMAC` pin-side
#: ports; the pads or a simulation model drive the other end).
PHY_SIDE = RGMIIPinSignature

_MAC_RX_PORTS = tuple(name for name, member in PHY_SIDE.members.items() if member.flow == In)
_MAC_TX_PORTS = tuple(name for name, member in PHY_SIDE.members.items() if member.flow == Out)


class BoardDatapath(wiring.Component):
    """Everything of the board top that runs in a simulator.

    Domains: ``sync`` (50 MHz), ``lan_tx`` and ``modem_tx`` (125 MHz, one
    clock, a reset each: the PHYs are at opposite edges of the chip, and one
    reset net across it does not reach every flip-flop in 8 ns), ``lan_rx``
    and ``modem_rx`` (the PHYs' RXC), all created by the user.

    Parameters
    ----------
    auto_speed : bool
        ``True`` (default): each MAC runs at the speed its PHY's RXC runs at
        (:class:`~ackfilter.gateware.mac.speed.RxClockSpeed`: no in-band
        status or MDIO needed). ``False``: always 1000 Mb/s.
    firmware : bytes or None
        The control plane's firmware image: with it, the SoC
        (:class:`~ackfilter.soc.soc.SoC`, in ``sync``) owns the core's CSR
        bus and the ``uart_*``/``flash_*`` ports are its; without it (the
        simulation tops) the CSR bus is idle and every parameter keeps its
        default.
    **core_params
        Passed to :class:`~ackfilter.gateware.core.UplinkCore`.

    Ports
    -----
    lan, modem : Out(PHY_SIDE)
        The RGMII-side signals of each port (see :class:`EthernetMAC`):
        ``*_rise``/``*_fall`` RX in the port's RX domain, TX in its TX domain.
    led : Out(1), ``sync``
        Lit while either link is up (in-band status), inverted for
        ~34 ms after any frame in or out (activity).
    lan_link_up, modem_link_up : Out(1), ``sync``
        In-band link status of each PHY.
    soc_pins : Out(:data:`~ackfilter.soc.periph.PinsSignature`), ``sync``
        The SoC's UART and SPI flash pins (idle without a firmware).
    csr : In(CSRBusSignature), ``sync``
        Without a firmware, the register bus from outside (a simulation's
        testbench; the board top ties it idle): the core's bank and the
        board's registers (:mod:`.regs`). With one, unused: the SoC owns it.
    mdc, mdio_o, mdio_oe, mdio_i : ``sync``
        The PHYs' shared management pins, driven by the MDIO poller
        (:class:`~ackfilter.gateware.mdio.PHYPoller`, PHYs at addresses 0
        and 1).
    """

    def __init__(self, *, auto_speed=True, firmware=None, mdc_period_cycles=None, **core_params):
        if not isinstance(auto_speed, bool):
            raise TypeError(f"auto_speed must be a bool, not {auto_speed!r}")
        self._auto_speed = auto_speed
        self._mdc_period_cycles = mdc_period_cycles
        self._core_params = core_params
        self.soc = None
        if firmware is not None:
            from ..soc.soc import SoC
            self.soc = SoC(firmware=firmware)
        super().__init__({
            "lan":           Out(PHY_SIDE),
            "modem":         Out(PHY_SIDE),
            "led":           Out(1),
            "lan_link_up":   Out(1),
            "modem_link_up": Out(1),
            "soc_pins":      Out(PinsSignature),
            "csr":           In(CSRBusSignature),
            "mdc":           Out(1),
            "mdio_o":        Out(1),
            "mdio_oe":       Out(1),
            "mdio_i":        In(1, init=1),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.lan_mac = lan_mac = EthernetMAC(rx_domain="lan_rx", tx_domain="lan_tx")
        m.submodules.modem_mac = modem_mac = EthernetMAC(rx_domain="modem_rx", tx_domain="modem_tx")
        m.submodules.core = core = UplinkCore(**self._core_params)

        for mac, port in ((lan_mac, self.lan), (modem_mac, self.modem)):
            for name in _MAC_RX_PORTS:
                m.d.comb += getattr(mac, name).eq(getattr(port, name))
            for name in _MAC_TX_PORTS:
                m.d.comb += getattr(port, name).eq(getattr(mac, name))
            if self._auto_speed:
                # The speed the PHY's RXC runs at (RGMII: 125 / 25 / 2.5 MHz
                # at 1000 / 100 / 10 Mb/s), whatever else the PHY reports.
                m.d.comb += mac.speed.eq(mac.rxc_speed)
            else:
                m.d.comb += mac.speed.eq(SPEED_1000)
        m.d.comb += [self.lan_link_up.eq(lan_mac.link_up), self.modem_link_up.eq(modem_mac.link_up)]

        # Uplink: LAN MAC rx -> UplinkCore -> modem MAC tx.
        wiring.connect(m, lan_mac.rx, core.i)
        wiring.connect(m, core.o, modem_mac.tx)
        # Downlink: modem MAC rx -> LAN MAC tx, unchanged; through a register
        # (the modem RX FIFO's block RAM output would otherwise reach into the
        # LAN TX writer's decisions within one system cycle).
        m.submodules.downlink = downlink = StreamRegister()
        wiring.connect(m, modem_mac.rx, downlink.i)
        wiring.connect(m, downlink.o, lan_mac.tx)

        # The core's clock (``docs/spec.md`` section 8): system cycles since reset.
        now = Signal(48)
        m.d.sync += now.eq(now + 1)
        m.d.comb += core.now.eq(now)

        # The PHYs over MDIO, and the board's registers beside the core's.
        m.submodules.mdio = poller = PHYPoller(phy_addrs=(0, 1),
                                               mdc_period_cycles=self._mdc_period_cycles)
        m.d.comb += [self.mdc.eq(poller.mdc), self.mdio_o.eq(poller.mdio_o),
                     self.mdio_oe.eq(poller.mdio_oe), poller.mdio_i.eq(self.mdio_i)]
        m.submodules.board_regs = regs = BoardRegs()
        for role, mac in (("lan", lan_mac), ("modem", modem_mac)):
            link = getattr(regs, role)
            m.d.comb += [link.speed.eq(mac.speed), link.rxc_ok.eq(mac.rxc_ok),
                         link.speed_changed.eq(mac.speed_changed), link.inband_link.eq(mac.link_up),
                         link.inband_speed.eq(mac.link_speed),
                         link.inband_full_duplex.eq(mac.full_duplex)]
        for i in range(2):
            m.d.comb += regs.phy_status[i].eq(poller.status[i].as_value())
        m.d.comb += [
            poller.req_start.eq(regs.mdio.start), poller.req_write.eq(regs.mdio.write),
            poller.req_phy_addr.eq(regs.mdio.phy_addr), poller.req_reg_addr.eq(regs.mdio.reg_addr),
            poller.req_w_data.eq(regs.mdio.w_data), regs.mdio.busy.eq(poller.req_busy),
            regs.mdio.done.eq(poller.req_done), regs.mdio.r_data.eq(poller.req_r_data),
            regs.mdio.no_phy.eq(poller.req_no_phy),
        ]
        m.submodules.csr_split = split = CSRSplit()
        wiring.connect(m, split.core, core.csr)
        wiring.connect(m, split.board, regs.bus)

        if self.soc is not None:
            # The control plane owns the parameters.
            m.submodules.soc = soc = self.soc
            wiring.connect(m, soc.csr, split.bus)
            wiring.connect(m, soc.pins, wiring.flipped(self.soc_pins))
        else:
            # The bus from outside (idle on the board: every parameter keeps
            # its reset value, the params table's default).
            wiring.connect(m, wiring.flipped(self.csr), split.bus)

        # LED: link XOR activity.
        activity = Signal(LED_STRETCH_BITS)
        any_frame = (lan_mac.rx_frames | lan_mac.tx_frames | modem_mac.rx_frames | modem_mac.tx_frames)
        with m.If(any_frame):
            m.d.sync += activity.eq(2 ** LED_STRETCH_BITS - 1)
        with m.Elif(activity != 0):
            m.d.sync += activity.eq(activity - 1)
        m.d.sync += self.led.eq((lan_mac.link_up | modem_mac.link_up) ^ (activity != 0))
        return m


def __getattr__(name):
    # The rev 7.0 platform under its old name (``revisions.platform_class``
    # builds every revision's platform from its pin table).
    if name == "Colorlight5A75BR70Platform":
        from .revisions import platform_class
        return platform_class("5a-75b-v7.0")
    raise AttributeError(name)


class BoardTop(Elaboratable):
    """A Colorlight 5A-75B (any revision of :mod:`.revisions`, by its
    platform): port 0 to the LAN, port 1 to the modem.

    Parameters
    ----------
    swap_ports : bool
        ``True``: port 1 to the LAN, port 0 to the modem.
    rx_delay_taps : int or None
        ``DELAYG`` taps on RX data/ctl (see :class:`RGMIIPads`); by default
        the board revision's (``platform.revision``, :mod:`.revisions`).
    auto_speed : bool
        See :class:`BoardDatapath`.
    **core_params
        Passed to :class:`~ackfilter.gateware.core.UplinkCore`.

    Clocks: the 25 MHz input (P6) feeds one ``EHXPLLL``: VCO 500 MHz,
    CLKOP / 4 = 125 MHz (``lan_tx`` and ``modem_tx``, also the feedback),
    CLKOS / 10 = 50 MHz (``sync``, :data:`SYS_DIV`). Every domain is held in reset until the
    PLL locks (each reset released synchronously to its own clock); the RX
    domains additionally until their RXC runs.
    """

    def __init__(self, *, swap_ports=False, rx_delay_taps=None, auto_speed=True,
                 firmware=None, **core_params):
        if not isinstance(swap_ports, bool):
            raise TypeError(f"swap_ports must be a bool, not {swap_ports!r}")
        self.swap_ports = swap_ports
        self._rx_delay_taps = rx_delay_taps
        self.datapath = BoardDatapath(auto_speed=auto_speed, firmware=firmware, **core_params)

    def elaborate(self, platform):
        if platform is None:
            raise TypeError("BoardTop needs a platform: simulate BoardDatapath instead")
        m = Module()

        # Clocks: 25 MHz -> PLL -> 125 MHz (tx) and 50 MHz (sync).
        m.submodules.clk25 = clk25 = io.Buffer("i", platform.request("clk25", 0, dir="-"))
        clk_tx, clk_sys, locked = Signal(), Signal(), Signal()
        m.submodules.pll = Instance("EHXPLLL",
            # Lattice TN1263 / ecppll: fVCO = 25 MHz * CLKFB_DIV * CLKOP_DIV = 500 MHz.
            p_PLLRST_ENA="DISABLED", p_INTFB_WAKE="DISABLED", p_STDBY_ENABLE="DISABLED",
            p_DPHASE_SOURCE="DISABLED",
            p_OUTDIVIDER_MUXA="DIVA", p_OUTDIVIDER_MUXB="DIVB",
            p_OUTDIVIDER_MUXC="DIVC", p_OUTDIVIDER_MUXD="DIVD",
            p_CLKI_DIV=1, p_FEEDBK_PATH="CLKOP", p_CLKFB_DIV=5,
            p_CLKOP_ENABLE="ENABLED", p_CLKOP_DIV=4, p_CLKOP_CPHASE=3, p_CLKOP_FPHASE=0,
            p_CLKOS_ENABLE="ENABLED", p_CLKOS_DIV=SYS_DIV, p_CLKOS_CPHASE=SYS_DIV - 1,
            p_CLKOS_FPHASE=0,
            a_FREQUENCY_PIN_CLKI="25", a_FREQUENCY_PIN_CLKOP="125",
            a_FREQUENCY_PIN_CLKOS=f"{SYS_HZ / 1e6:g}",
            a_ICP_CURRENT="12", a_LPF_RESISTOR="8",
            a_MFG_ENABLE_FILTEROPAMP="1", a_MFG_GMCREF_SEL="2",
            i_CLKI=clk25.i, i_CLKFB=clk_tx, i_RST=0, i_STDBY=0,
            i_PHASESEL0=0, i_PHASESEL1=0, i_PHASEDIR=0, i_PHASESTEP=0, i_PHASELOADREG=0,
            i_PLLWAKESYNC=0, i_ENCLKOP=0, i_ENCLKOS=0,
            o_CLKOP=clk_tx, o_CLKOS=clk_sys, o_LOCK=locked)

        m.domains.sync = ClockDomain("sync")
        m.d.comb += ClockSignal("sync").eq(clk_sys)
        for role in ("lan", "modem"):
            m.domains += ClockDomain(f"{role}_tx")
            m.d.comb += ClockSignal(f"{role}_tx").eq(clk_tx)

        # The RX data delay: the revision's (its PHYs' delay settings,
        # board/revisions.py), unless given.
        taps = self._rx_delay_taps
        if taps is None:
            rev = getattr(platform, "revision", None)
            taps = rev.delays.fpga_rx_delay_taps if rev is not None else RX_DELAY_TAPS
        eth = [platform.request("eth_rgmii", n, dir="-") for n in (0, 1)]
        lan_pins, modem_pins = (eth[1], eth[0]) if self.swap_ports else (eth[0], eth[1])
        m.submodules.datapath = datapath = self.datapath
        for role, pins, side in (("lan", lan_pins, datapath.lan), ("modem", modem_pins, datapath.modem)):
            rx = f"{role}_rx"
            pads = RGMIIPads(pins, rx_domain=rx, tx_domain=f"{role}_tx", rx_delay_taps=taps)
            m.submodules[f"{role}_pads"] = pads
            m.domains += ClockDomain(rx)
            m.d.comb += ClockSignal(rx).eq(pads.rx_clk)
            platform.add_clock_constraint(pins.rx_clk.io, RXC_HZ)
            for name in _MAC_RX_PORTS:
                m.d.comb += getattr(side, name).eq(getattr(pads, name))
            for name in _MAC_TX_PORTS:
                m.d.comb += getattr(pads, name).eq(getattr(side, name))

        for domain in ("sync", "lan_rx", "modem_rx"):
            m.submodules[f"{domain}_rst"] = cdc.ResetSynchronizer(~locked, domain=domain)
        # The two MACs' transmit domains run on one clock: two synchronizers of
        # one input there would be merged by Yosys, stage by stage, and a
        # shared stage's output may cross the chip to the other MAC's next
        # stage (rev 8.0, seed 2: 8.1 ns of routing, TX missed by 7 %). The
        # modem's is driven by the system domain's reset too, which follows
        # the lock a few cycles later: two inputs, two chains, each placed
        # by its MAC.
        m.submodules.lan_tx_rst = cdc.ResetSynchronizer(~locked, domain="lan_tx")
        m.submodules.modem_tx_rst = cdc.ResetSynchronizer(~locked | ResetSignal("sync"), domain="modem_tx")

        # PHY management: reset never asserted (module docstring); MDC and
        # MDIO from the datapath's MDIO poller.
        mgmt = platform.request("eth_mgmt", 0, dir="-")
        m.submodules.phy_rst = phy_rst = io.Buffer("o", mgmt.rst)   # PinsN: 0 = not in reset
        m.submodules.phy_mdc = phy_mdc = io.Buffer("o", mgmt.mdc)
        m.submodules.phy_mdio = phy_mdio = io.Buffer("io", mgmt.mdio)
        m.d.comb += [
            phy_rst.o.eq(0), phy_mdc.o.eq(datapath.mdc),
            phy_mdio.o.eq(datapath.mdio_o), phy_mdio.oe.eq(datapath.mdio_oe),
            datapath.mdio_i.eq(phy_mdio.i),
        ]
        if datapath.soc is None:
            m.d.comb += [datapath.csr.addr.eq(0), datapath.csr.r_stb.eq(0),
                         datapath.csr.w_stb.eq(0), datapath.csr.w_data.eq(0)]

        if datapath.soc is None:
            # The LED (P11): link and activity.
            m.submodules.led = led = io.Buffer("o", platform.request("led", 0, dir="-"))
            m.d.comb += led.o.eq(datapath.led)
            return m
        # The control plane's UART on the LED's and the button's pads (P11
        # tx, M13 rx: J19, README "Control plane"): the LED now lights while
        # the firmware sends. SERV's Verilog goes with the design.
        from ..soc.cpu import serv_sources
        for name, text in serv_sources():
            platform.add_file(name, text)
        uart = platform.request("uart", 0, dir="-")
        m.submodules.uart_tx = tx = io.Buffer("o", uart.tx)
        m.submodules.uart_rx = rx = io.Buffer("i", uart.rx)
        pins = datapath.soc_pins
        m.d.comb += [tx.o.eq(pins.tx), pins.rx.eq(rx.i)]
        flash = platform.request("config_flash", 0, dir="-")
        m.submodules.flash_cs = cs = io.Buffer("o", flash.cs)      # PinsN: 1 selects
        m.submodules.flash_di = di = io.Buffer("o", flash.di)
        m.submodules.flash_do = do = io.Buffer("i", flash.do)
        m.d.comb += [cs.o.eq(~pins.flash_cs_n), di.o.eq(pins.flash_di), pins.flash_do.eq(do.i)]
        # SCK is the configuration clock pin: only USRMCLK reaches it.
        m.submodules.usrmclk = Instance("USRMCLK", i_USRMCLKI=pins.flash_sck, i_USRMCLKTS=0)
        return m
