"""The Colorlight 5A-75B's hardware revisions: one table each, and an Amaranth
platform built from it.

A :class:`Revision` holds what the board top needs of one revision: the FPGA
part, the PHYs, every pin the top uses (the 25 MHz clock, both RGMII ports,
the PHYs' shared management pins, the LED, the button, the configuration
flash), whether the FPGA may ever assert the PHY reset, and where the RGMII
clock delays come from. :func:`platform_class` turns a revision into an
``amaranth.vendor.LatticeECP5Platform`` whose resources carry the names the
board top (``hdl/ackfilter/board/top.py``) requests.

Where the tables come from
--------------------------
Pins, parts and clock notes are transcribed from the reverse engineering in
q3k/chubby75 (:data:`CHUBBY75_COMMIT`), one file per revision
(``5a-75b/hardware_V6.1.md``, ``hardware_V7.0.md``, ``hardware_V8.0.md``,
``hardware_V8.2.md``). Two facts are not in those files and come from
elsewhere, as each field's comment says: rev 7.0's flash pins (its
hardware_V7.0.md has an empty "SPI Flash" section: taken from
amaranth-boards 0.0.21's ``colorlight_5a75b_r7_0``) and the PHY delay
registers (the PHY datasheets and Linux's ``drivers/net/phy/realtek.c``).

A second, independent transcription of LiteX's
``litex_boards/platforms/colorlight_5a_75b.py`` lives in
``constraints/pins/*.litex.json``; ``tests/test_board_revisions.py`` checks
every pin here against it (and rev 7.0 against the installed amaranth-boards),
with the known differences named and explained there and in
``constraints/README.md``.

None of rev 6.1, 8.0 and 8.2 has been run on hardware by this project; rev
7.0 is the board the project was built on.
"""

from dataclasses import dataclass, replace
from functools import cache

__all__ = ["CHUBBY75", "CHUBBY75_COMMIT", "RGMIIPort", "PhyManagement", "ConfigFlash",
           "MdioWrite", "RGMIIDelays", "PhyResetPolicy", "Revision", "REVISIONS",
           "revision", "platform_class"]

#: The chubby75 snapshot every table below was transcribed from.
CHUBBY75_COMMIT = "a1dcd4eb724a5f01fb3748b4d61d2f423b2b4d4b"
CHUBBY75 = f"https://github.com/q3k/chubby75/blob/{CHUBBY75_COMMIT}/5a-75b"


@dataclass(frozen=True)
class RGMIIPort:
    """One PHY's RGMII pins (FPGA balls). ``tx_data``/``rx_data`` are
    TXD[0]..TXD[3] / RXD[0]..RXD[3], bit 0 first. ``phy`` is the PHY's
    reference designator on the PCB; ``jack`` the RJ45 jack it drives, or
    ``None`` where no source says (see ``constraints/README.md``)."""
    phy: str
    tx_clk: str
    tx_ctl: str
    tx_data: tuple[str, str, str, str]
    rx_clk: str
    rx_ctl: str
    rx_data: tuple[str, str, str, str]
    jack: str | None = None

    def __post_init__(self):
        for name in ("tx_data", "rx_data"):
            if len(getattr(self, name)) != 4:
                raise ValueError(f"{name} must name 4 pins, not {getattr(self, name)!r}")


@dataclass(frozen=True)
class PhyManagement:
    """The management pins both PHYs share: reset (active low), MDC, MDIO."""
    reset_n: str
    mdc: str
    mdio: str


@dataclass(frozen=True)
class ConfigFlash:
    """The configuration SPI flash, directions as the chip has them: ``di``
    carries data into the flash (its SI / IO0), ``do`` out of it (SO / IO1).
    Its clock is the FPGA's configuration clock pin, reached only through the
    ``USRMCLK`` primitive, so it has no pin here."""
    chip: str
    cs_n: str
    di: str
    do: str


@dataclass(frozen=True)
class MdioWrite:
    """Set bit ``bit`` of register ``reg`` on page ``page`` (RTL8211F: page
    select is register 0x1f) to ``value``."""
    page: int
    reg: int
    bit: int
    value: int


@dataclass(frozen=True)
class RGMIIDelays:
    """Where each direction's ~2 ns RGMII clock delay is added.

    ``tx_delay_in_phy`` / ``rx_delay_in_phy``: the PHY adds it at power-on
    (``None``: set by the board's strap resistors, which no source documents,
    or unclear). ``fpga_rx_delay_taps``: the ``DELAYG`` value the build gives
    :class:`~ackfilter.gateware.mac.rgmii.RGMIIPads` (``None``: no delay line).
    The FPGA never delays TXC (``RGMIIPads`` sends it edge-aligned), so the
    PHY must add the TX delay. ``mdio_setup``: the writes that put the PHY
    into that arrangement whatever its straps say (empty: none needed).
    ``evidence``: what says the arrangement works on this revision's
    hardware; ``source``: where the register facts come from."""
    tx_delay_in_phy: bool | None
    rx_delay_in_phy: bool | None
    fpga_rx_delay_taps: int | None
    mdio_setup: tuple[MdioWrite, ...]
    evidence: str
    source: str


@dataclass(frozen=True)
class PhyResetPolicy:
    """``may_assert``: the FPGA may pull the shared PHY reset low once it runs;
    ``reason`` says why (not)."""
    may_assert: bool
    reason: str


@dataclass(frozen=True)
class Revision:
    """One hardware revision of the Colorlight 5A-75B.

    ``name`` is the ``BOARD=`` name; ``silkscreen`` the revision printed on
    the PCB; ``part`` the FPGA's full marking, ``device``/``package``/``speed``
    what Amaranth's ``LatticeECP5Platform`` takes. ``phy_models`` per port
    (0, 1); ``clk25``/``clk25_driver`` the 25 MHz input pin and what drives
    it; ``led_active_low``/``button_active_low`` the pins' polarity. ``source``
    is the file the table was transcribed from; ``notes`` anything else the
    board top or its user must know.
    """
    name: str
    silkscreen: str
    part: str
    device: str
    package: str
    speed: str
    phy_models: tuple[str, str]
    clk25: str
    clk25_driver: str
    ports: tuple[RGMIIPort, RGMIIPort]
    mgmt: PhyManagement
    led: str
    led_active_low: bool
    button: str
    button_active_low: bool
    flash: ConfigFlash
    phy_reset: PhyResetPolicy
    delays: RGMIIDelays
    source: str
    notes: tuple[str, ...] = ()

    def pins(self):
        """Every pin of the table by a flat name (``"eth0.rx_data[2]"``,
        ``"mgmt.mdc"``, ``"flash.di"``, ...): ``{name: ball}``."""
        out = {"clk25": self.clk25, "led": self.led, "button": self.button}
        for n, port in enumerate(self.ports):
            for field in ("tx_clk", "tx_ctl", "rx_clk", "rx_ctl"):
                out[f"eth{n}.{field}"] = getattr(port, field)
            for field in ("tx_data", "rx_data"):
                for bit, pin in enumerate(getattr(port, field)):
                    out[f"eth{n}.{field}[{bit}]"] = pin
        for field in ("reset_n", "mdc", "mdio"):
            out[f"mgmt.{field}"] = getattr(self.mgmt, field)
        for field in ("cs_n", "di", "do"):
            out[f"flash.{field}"] = getattr(self.flash, field)
        return out


# -- The PHYs' delay and reset facts -------------------------------------------------------

_B50612D_DELAYS = RGMIIDelays(
    # B50610 datasheet (the one chubby75 gives for the B50612D), DS07, Table 57:
    # register 1Ch shadow 00011 bit 9 "GTXCLK Clock Delay Enable", default 1.
    tx_delay_in_phy=True,
    # Register 18h shadow 111 bit 8 "RGMII RXD to RXC Skew": the text says the
    # delay is added "by setting" the bit, the register table's default column
    # reads 1. Unclear; what is known to work is the FPGA-side delay below.
    rx_delay_in_phy=None,
    # LiteEth's ecp5rgmii default (rx_delay=2e-9 at 25 ps a tap), used by
    # LiteX's colorlight_5a_75x target on every revision and by this project
    # on rev 7.0 (gateware/mac/rgmii.py RX_DELAY_TAPS).
    fpga_rx_delay_taps=80,
    mdio_setup=(),
    evidence="LiteX/LiteEth designs run Ethernet on rev 7.0 with it (enjoy-digital/colorlite#8: "
             "rev 7.0 pings without loss); not run on hardware by this project",
    source="B50610-DS07-R (chubby75 5a-75b/datasheets); LiteEth liteeth/phy/ecp5rgmii.py",
)

#: Rev 6.1: the same PHYs; LiteX's target uses the same settings on it.
_B50612D_DELAYS_V61 = replace(_B50612D_DELAYS,
    evidence="the PHYs and LiteX's settings of rev 7.0; no report of rev 6.1 Ethernet read")

#: RTL8211F(D): page 0xd08, register 0x11 bit 8 = TX delay, register 0x15
#: bit 3 = RX delay (Linux drivers/net/phy/realtek.c, RTL8211F_TXCR /
#: RTL8211F_RXCR). Their power-on values come from the straps on RXD1 (TXDLY)
#: and RXD0 (RXDLY); undriven, the datasheet's internal pulls give TXDLY = 0
#: (pull-down) and RXDLY = 1 (pull-up) (RTL8211F(I)/RTL8211FD(I) datasheet
#: rev 1.1, Tables 6 and 10). chubby75 names the strap pins but not the board's
#: resistors, so the power-on delays are unknown; these writes make them match
#: the FPGA side (PHY delays TXC, the FPGA delays RX data), the arrangement of
#: the B50612D revisions and of LiteX's target (tx_delay=0, rx_delay=2 ns).
_RTL8211F_DELAYS = RGMIIDelays(
    tx_delay_in_phy=None,
    rx_delay_in_phy=None,
    fpga_rx_delay_taps=80,
    mdio_setup=(MdioWrite(page=0xd08, reg=0x11, bit=8, value=1),
                MdioWrite(page=0xd08, reg=0x15, bit=3, value=0)),
    evidence="none: LiteX builds rev 8.x this way (no MDIO setup), and Ethernet was reported "
             "unreliable on 8.0 (enjoy-digital/colorlite#8) and hard to bring up on 8.2 "
             "(litex-hub/litex-boards#574)",
    source="RTL8211F(I)/RTL8211FD(I) datasheet rev 1.1 (chubby75 5a-75b/datasheets); "
           "Linux drivers/net/phy/realtek.c; LiteX litex_boards/targets/colorlight_5a_75x.py",
)

_NEVER_ASSERT_V61 = PhyResetPolicy(False,
    "clk25 (P3) is U3's XTALO (chubby75 hardware_V6.1.md): a PHY reset would stop the "
    "FPGA's only clock, and the PLL with it")
_NEVER_ASSERT_V70 = PhyResetPolicy(False,
    "clk25 (P6) is the 25 MHz shared with both PHYs (chubby75 hardware_V7.0.md; its "
    "source is not documented) and LiteX stopped driving rst_n on this revision 'to "
    "avoid deadlock on reboot command' (litex-boards 68ea5fe): treat it as stopping with a "
    "PHY reset")
_NEVER_ASSERT_V8 = PhyResetPolicy(False,
    "clk25 (P6) is generated by PHY U13 (port 1) and fed to U11 and the FPGA; chubby75: "
    "'Do not reset the phy(s) if your gateware depend on clock on pin P6'")


# -- The tables (chubby75 unless a comment says otherwise) --------------------------------

_V61 = Revision(
    name="5a-75b-v6.1", silkscreen="V6.1",
    part="LFE5U-25F-6BG381C", device="LFE5U-25F", package="BG381", speed="6",
    phy_models=("Broadcom B50612D", "Broadcom B50612D"),
    clk25="P3", clk25_driver="XTALO of PHY U3 (port 0); U3's 25 MHz crystal",
    ports=(
        RGMIIPort(phy="U3", tx_clk="G1", tx_ctl="K1", tx_data=("G2", "H1", "J1", "J3"),
                  rx_clk="H2", rx_ctl="P2", rx_data=("K2", "L1", "N1", "P1")),
        # LiteX's _io_v6_1 gives rx_ctl L19 (its own rx clock pin) and RXD3
        # N19 (= RXD1): chubby75's table and its lpf/cl-5a-75v-v61.lpf agree
        # on M20 and M19, and each pin once.
        RGMIIPort(phy="U7", tx_clk="U19", tx_ctl="P19", tx_data=("U20", "T19", "T20", "R20"),
                  rx_clk="L19", rx_ctl="M20", rx_data=("P20", "N19", "N20", "M19")),
    ),
    mgmt=PhyManagement(reset_n="P4", mdc="N5", mdio="P5"),
    led="U16", led_active_low=True,
    button="R16", button_active_low=True,          # "pulled up with 10k"
    flash=ConfigFlash(chip="GigaDevice GD25Q16CSIG", cs_n="R2", di="W2", do="V2"),
    phy_reset=_NEVER_ASSERT_V61,
    delays=_B50612D_DELAYS_V61,
    source=f"{CHUBBY75}/hardware_V6.1.md",
    notes=("LiteX (colorlight_5a_75x.py): 'There seems to be some capacitance on KEY+ pin, so "
           "high baudrates may not work (>9600bps)' and '--uart-baudrate=9600' on rev 6.1: the "
           "control plane's UART RX is that pin (R16)",),
)

_V70 = Revision(
    name="5a-75b-v7.0", silkscreen="V7.0",
    part="LFE5U-25F-6BG256C", device="LFE5U-25F", package="BG256", speed="6",
    phy_models=("Broadcom B50612D", "Broadcom B50612D"),
    clk25="P6", clk25_driver="25 MHz shared with both PHYs (which part makes it is not documented)",
    ports=(
        RGMIIPort(phy="U3", tx_clk="M2", tx_ctl="M3", tx_data=("L1", "L3", "P2", "L4"),
                  rx_clk="M1", rx_ctl="N6", rx_data=("N1", "M5", "N5", "M6")),
        RGMIIPort(phy="U7", tx_clk="M12", tx_ctl="R15", tx_data=("T14", "R12", "R13", "R14"),
                  rx_clk="M16", rx_ctl="L15", rx_data=("P13", "N13", "P14", "M15")),
    ),
    mgmt=PhyManagement(reset_n="P5", mdc="P3", mdio="T2"),
    led="P11", led_active_low=True,
    button="M13", button_active_low=True,          # "pressing the button will read low"
    # chubby75's hardware_V7.0.md leaves "SPI Flash" empty: the pins are
    # amaranth-boards 0.0.21's (colorlight_5a75b_r7_0 spi_flash: CS N8, and
    # T8 = "Chip: DI/IO0", T7 = "DO/IO1" in its comments), the same as
    # chubby75's V8.0/V8.2 tables for the same W25Q32JV and as LiteX's _io_v7_0.
    flash=ConfigFlash(chip="Winbond W25Q32JV (25Q32JVSIQ)", cs_n="N8", di="T8", do="T7"),
    phy_reset=_NEVER_ASSERT_V70,
    delays=_B50612D_DELAYS,
    source=f"{CHUBBY75}/hardware_V7.0.md",
)

# Rev 8.0 and 8.2 share every pin (chubby75 gives the same tables; LiteX uses
# _io_v8_0 for both); they differ in the FPGA's speed grade and the PHY marking.
_V8_PORTS = (
    RGMIIPort(phy="U11", tx_clk="L1", tx_ctl="L2", tx_data=("M2", "M1", "P1", "R1"),
              rx_clk="J1", rx_ctl="J2", rx_data=("K2", "J3", "K1", "K3")),
    RGMIIPort(phy="U13", tx_clk="J16", tx_ctl="K14", tx_data=("K16", "J15", "J14", "K15"),
              rx_clk="M16", rx_ctl="P16", rx_data=("M15", "R16", "L15", "L16")),
)
_V8_COMMON = dict(
    device="LFE5U-25F", package="BG256",
    clk25="P6", clk25_driver="PHY U13 (port 1), also feeding PHY U11",
    ports=_V8_PORTS,
    mgmt=PhyManagement(reset_n="R6", mdc="R5", mdio="T4"),
    led="T6", led_active_low=True,
    # chubby75 gives no polarity for R7 (KEY+); LiteX names it user_btn_n.
    # Unverified.
    button="R7", button_active_low=True,
    flash=ConfigFlash(chip="Winbond W25Q32JV (25Q32JVSIQ)", cs_n="N8", di="T8", do="T7"),
    phy_reset=_NEVER_ASSERT_V8,
    delays=_RTL8211F_DELAYS,
)

_V80 = Revision(
    name="5a-75b-v8.0", silkscreen="V8.0",
    part="LFE5U-25F-6BG256C", speed="6",
    phy_models=("Realtek RTL8211FD", "Realtek RTL8211FD"),
    source=f"{CHUBBY75}/hardware_V8.0.md",
    notes=("Ethernet on rev 8.0 with LiteX's settings was reported unreliable "
           "(enjoy-digital/colorlite#8): the delays are unverified",),
    **_V8_COMMON,
)

_V82 = Revision(
    name="5a-75b-v8.2", silkscreen="V8.2",
    # The part is speed grade 7 (faster than 6) and industrial; the build
    # times it as a -6 (the same die and IDCODE; a bitstream that meets -6
    # timing meets -7). LiteX passes the -7 part.
    part="LFE5U-25F-7BG256I", speed="6",
    phy_models=("Realtek RTL8211FP (marking; F or FD)", "Realtek RTL8211FP (marking; F or FD)"),
    source=f"{CHUBBY75}/hardware_V8.2.md",
    notes=("A LiteEth design on rev 8.2 answered only once the PHY reset was no longer driven "
           "(enjoy-digital/liteeth#176)",),
    **_V8_COMMON,
)

#: Every revision by its ``BOARD=`` name.
REVISIONS = {r.name: r for r in (_V61, _V70, _V80, _V82)}


def revision(name):
    """The :class:`Revision` called ``name``; ``ValueError`` naming the known
    ones otherwise."""
    if name not in REVISIONS:
        raise ValueError(f"unknown board revision {name!r}; known: {', '.join(REVISIONS)}")
    return REVISIONS[name]


def _resources(rev):
    from amaranth.build import Attrs, Clock, Pins, PinsN, Resource, Subsignal

    def pins(names, dir, invert=False):
        return (PinsN if invert else Pins)(" ".join(names) if isinstance(names, tuple) else names,
                                           dir=dir)

    def rgmii(number, port):
        return Resource("eth_rgmii", number,
            Subsignal("tx_clk",  pins(port.tx_clk, "o")),
            Subsignal("tx_ctl",  pins(port.tx_ctl, "o")),
            Subsignal("tx_data", pins(port.tx_data, "o")),
            Subsignal("rx_clk",  pins(port.rx_clk, "i")),
            Subsignal("rx_ctl",  pins(port.rx_ctl, "i")),
            Subsignal("rx_data", pins(port.rx_data, "i")),
            Attrs(IO_TYPE="LVCMOS33", SLEWRATE="FAST"))

    # Attributes as amaranth-boards gives rev 7.0 (LED DRIVE 4, button pulled up).
    return [
        Resource("clk25", 0, pins(rev.clk25, "i"), Clock(25e6), Attrs(IO_TYPE="LVCMOS33")),
        Resource("led", 0, pins(rev.led, "o", rev.led_active_low),
                 Attrs(IO_TYPE="LVCMOS33", DRIVE="4")),
        Resource("button", 0, pins(rev.button, "i", rev.button_active_low),
                 Attrs(IO_TYPE="LVCMOS33", PULLMODE="UP")),
        # The control plane's UART on the LED's and the button's pads (J19):
        # an alternative to requesting "led"/"button", never both.
        Resource("uart", 0,
            Subsignal("rx", pins(rev.button, "i")),
            Subsignal("tx", pins(rev.led, "o")),
            Attrs(IO_TYPE="LVCMOS33")),
        *(rgmii(n, port) for n, port in enumerate(rev.ports)),
        # Both PHYs share reset, MDC and MDIO: one resource, so requesting
        # both ports does not claim them twice.
        Resource("eth_mgmt", 0,
            Subsignal("rst",  pins(rev.mgmt.reset_n, "o", invert=True)),
            Subsignal("mdc",  pins(rev.mgmt.mdc, "o")),
            Subsignal("mdio", pins(rev.mgmt.mdio, "io")),
            Attrs(IO_TYPE="LVCMOS33")),
        Resource("config_flash", 0,
            Subsignal("cs", pins(rev.flash.cs_n, "o", invert=True)),
            Subsignal("di", pins(rev.flash.di, "o")),
            Subsignal("do", pins(rev.flash.do, "i")),
            Attrs(IO_TYPE="LVCMOS33")),
    ]


@cache
def platform_class(name):
    """The ``LatticeECP5Platform`` subclass of revision ``name`` (one class
    per revision, made on first use), with the resources the board top
    requests: ``clk25``, ``led``, ``button``, ``uart`` (tx on the LED's pad,
    rx on the button's), ``eth_rgmii`` 0 and 1, ``eth_mgmt`` (``rst``, active
    low; ``mdc``; ``mdio``) and ``config_flash`` (``cs``, active low; ``di``;
    ``do``). Building needs Yosys, nextpnr-ecp5 and ecppack only: openFPGALoader
    is checked when flashing (``build.flash``)."""
    rev = revision(name)
    from amaranth.vendor import LatticeECP5Platform

    class _Platform(LatticeECP5Platform):
        device = rev.device
        package = rev.package
        speed = rev.speed
        default_clk = "clk25"
        resources = _resources(rev)
        connectors = []
        revision = rev

        def toolchain_prepare(self, fragment, name, **kwargs):
            # As amaranth-boards' Colorlight platforms: a compressed bitstream.
            overrides = dict(ecppack_opts="--compress")
            overrides.update(kwargs)
            return super().toolchain_prepare(fragment, name, **overrides)

    tag = rev.silkscreen.replace(".", "")
    _Platform.__name__ = _Platform.__qualname__ = f"Colorlight5A75B{tag}Platform"
    _Platform.__doc__ = f"Colorlight 5A-75B {rev.silkscreen} ({rev.part}); table: {rev.source}"
    return _Platform
