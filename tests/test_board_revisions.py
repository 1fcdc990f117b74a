"""The Colorlight 5A-75B revision tables (``ackfilter.board.revisions``)
against a second, independent transcription of LiteX's platform file
(``constraints/pins/*.litex.json``), rev 7.0 against the installed
amaranth-boards, and every pin against the ECP5U-25 package pinout
(``constraints/pins/ecp5u25-pads.json``); and each revision's Amaranth
platform against what the board top requests. Nothing is synthesized."""

import json
import re
from pathlib import Path

import pytest
from amaranth.build.dsl import Pins, Subsignal

from ackfilter.board import revisions as R

PINS_DIR = Path(__file__).resolve().parents[1] / "constraints" / "pins"
NAMES = list(R.REVISIONS)

#: The pins where this project's table and LiteX's differ on purpose:
#: (revision, pin) -> (LiteX's pin, why ours is right). Each entry must still
#: be a real difference: a stale one fails the test.
KNOWN_LITEX_DIFFERENCES = {
    ("5a-75b-v6.1", "eth1.rx_ctl"): ("L19",
        "LiteX gives L19 for both eth_clocks[1].rx and eth[1].rx_ctl; chubby75's table and "
        "its lpf give RX_DV M20, which is pad PR26B, the pad of rev 7.0's port-1 RX_CTL (L15)"),
    ("5a-75b-v6.1", "eth1.rx_data[3]"): ("N19",
        "LiteX lists N19 for RXD1 and RXD3; chubby75 gives RXD[3] M19, pad PR26D, the pad of "
        "rev 7.0's port-1 RXD3 (M15)"),
}

#: Part fields where this project and LiteX differ on purpose.
KNOWN_LITEX_PART_DIFFERENCES = {
    ("5a-75b-v8.2", "speed"): ("7",
        "the LFE5U-25F-7BG256I is timed as a -6 (the same die and IDCODE, and a design that "
        "meets -6 timing meets -7)"),
}


def litex(name):
    return json.loads((PINS_DIR / f"{name}.litex.json").read_text())


def litex_pins(j):
    """LiteX's transcription under this project's flat pin names
    (:meth:`Revision.pins`); a shared pin must be the same in both eth entries."""
    out = {"clk25": j["clk25"], "led": j["user_led_n"], "button": j["user_btn_n"],
           "flash.cs_n": j["spiflash"]["cs_n"], "flash.di": j["spiflash"]["mosi"],
           "flash.do": j["spiflash"]["miso"]}
    for n, eth in enumerate(j["eth"]):
        for field in ("tx_clk", "tx_ctl", "rx_clk", "rx_ctl"):
            out[f"eth{n}.{field}"] = eth[field]
        for field in ("tx_data", "rx_data"):
            for bit, pin in enumerate(eth[field]):
                out[f"eth{n}.{field}[{bit}]"] = pin
    for ours, theirs in (("reset_n", "rst_n"), ("mdc", "mdc"), ("mdio", "mdio")):
        shared = {eth.get(theirs, eth.get(f"{theirs}_commented_out")) for eth in j["eth"]}
        assert len(shared) == 1, f"LiteX's eth entries disagree on {theirs}: {shared}"
        out[f"mgmt.{ours}"] = shared.pop()
    return out


def split_part(part):
    """``"LFE5U-25F-6BG381C"`` -> device, speed, package."""
    m = re.fullmatch(r"(LFE5U-\d+F)-(\d)(BG\d+)[CI]", part)
    assert m, part
    return {"device": m[1], "speed": m[2], "package": m[3]}


# -- The tables ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_every_pin_equals_litex_but_the_named_differences(name):
    ours, theirs = R.revision(name).pins(), litex_pins(litex(name))
    assert set(ours) == set(theirs)
    mismatched = {k: theirs[k] for k in ours if ours[k] != theirs[k]}
    expected = {pin: litex_pin for (rev, pin), (litex_pin, _) in KNOWN_LITEX_DIFFERENCES.items()
                if rev == name}
    assert mismatched == expected


@pytest.mark.parametrize("name", NAMES)
def test_the_uart_sits_on_the_led_and_button_pads_as_in_litex(name):
    rev, j = R.revision(name), litex(name)
    assert (j["serial"]["tx"], j["serial"]["rx"]) == (rev.led, rev.button)


@pytest.mark.parametrize("name", NAMES)
def test_the_part_equals_litex_but_the_named_differences(name):
    rev = R.revision(name)
    assert rev.part == litex(name)["device"]            # the chip's marking
    theirs = split_part(rev.part)
    for field in ("device", "package", "speed"):        # what the build targets
        known = KNOWN_LITEX_PART_DIFFERENCES.get((name, field))
        if known:
            assert theirs[field] == known[0] and getattr(rev, field) != theirs[field]
        else:
            assert getattr(rev, field) == theirs[field]


@pytest.mark.parametrize("name", NAMES)
def test_no_pin_is_used_twice_within_a_revision(name):
    pins = R.revision(name).pins()
    seen = {}
    for signal, pin in pins.items():
        assert pin not in seen, f"{name}: {pin} is both {seen[pin]} and {signal}"
        seen[pin] = signal


def test_the_known_differences_name_real_pins_and_a_reason():
    for (name, pin), (litex_pin, reason) in KNOWN_LITEX_DIFFERENCES.items():
        assert pin in R.revision(name).pins() and litex_pin and len(reason) > 20


@pytest.mark.parametrize("name", NAMES)
def test_the_litex_transcription_names_its_commit(name):
    src = litex(name)["transcribed_from"]
    assert re.fullmatch(r"[0-9a-f]{40}", src["commit"])
    assert src["commit"] in src["url"]
    assert R.CHUBBY75_COMMIT in R.revision(name).source


def test_rev_8_0_and_8_2_share_every_pin():
    assert R.revision("5a-75b-v8.0").pins() == R.revision("5a-75b-v8.2").pins()


# -- The package pinout --------------------------------------------------------------------

PADS = json.loads((PINS_DIR / "ecp5u25-pads.json").read_text())


def pad(rev, ball):
    assert ball in PADS[rev.package], (f"{ball} is not in constraints/pins/ecp5u25-pads.json "
                                       f"{rev.package}: add it from Lattice's ECP5U-25 pinout")
    return PADS[rev.package][ball]


def test_rev_6_1_uses_the_die_pads_of_rev_7_0_for_every_signal():
    """Rev 6.1 (BG381) and 7.0 (BG256) route each signal to the same die pad:
    three sources agree on rev 7.0, so this checks rev 6.1's table (and is why
    M20/M19 win over LiteX's L19/N19)."""
    v61, v70 = R.revision("5a-75b-v6.1"), R.revision("5a-75b-v7.0")
    p61, p70 = v61.pins(), v70.pins()
    assert {k: pad(v61, p61[k])[0] for k in p61} == {k: pad(v70, p70[k])[0] for k in p70}


@pytest.mark.parametrize("name", NAMES)
def test_the_flash_is_on_the_sysconfig_spi_pins(name):
    rev = R.revision(name)
    assert "CSSPIN" in pad(rev, rev.flash.cs_n)[2]
    assert "MOSI" in pad(rev, rev.flash.di)[2]
    assert "MISO" in pad(rev, rev.flash.do)[2]


@pytest.mark.parametrize("name", NAMES)
def test_clocks_come_in_on_clock_pads(name):
    rev = R.revision(name)
    assert "GPLL" in pad(rev, rev.clk25)[2]                  # a PLL input
    for port in rev.ports:
        assert "PCLK" in pad(rev, port.rx_clk)[2]            # a primary clock input


# -- amaranth-boards (rev 7.0) -------------------------------------------------------------

def amaranth_boards_pins(resource, sub=None):
    ios = resource.ios if sub is None else next(
        s.ios for s in resource.ios if isinstance(s, Subsignal) and s.name == sub)
    pins = next(p for p in ios if isinstance(p, Pins))
    return pins.names, pins.invert


def test_rev_7_0_equals_amaranth_boards():
    from amaranth_boards.colorlight_5a75b_r7_0 import Colorlight_5A75B_R70Platform as AB
    rev = R.revision("5a-75b-v7.0")
    res = {(r.name, r.number): r for r in AB.resources}
    assert (AB.device, AB.package, AB.speed) == (rev.device, rev.package, rev.speed)
    assert amaranth_boards_pins(res["clk25", 0]) == ([rev.clk25], False)
    assert amaranth_boards_pins(res["led", 0]) == ([rev.led], rev.led_active_low)
    assert amaranth_boards_pins(res["button", 0]) == ([rev.button], rev.button_active_low)
    assert amaranth_boards_pins(res["uart", 0], "tx")[0] == [rev.led]
    assert amaranth_boards_pins(res["uart", 0], "rx")[0] == [rev.button]
    for n, port in enumerate(rev.ports):
        for field in ("tx_clk", "tx_ctl", "tx_data", "rx_clk", "rx_ctl", "rx_data"):
            want = getattr(port, field)
            want = list(want) if isinstance(want, tuple) else [want]
            assert amaranth_boards_pins(res["eth_rgmii", n], field)[0] == want, (n, field)
        assert amaranth_boards_pins(res["eth_rgmii", n], "rst") == ([rev.mgmt.reset_n], True)
        assert amaranth_boards_pins(res["eth_rgmii", n], "mdc")[0] == [rev.mgmt.mdc]
        assert amaranth_boards_pins(res["eth_rgmii", n], "mdio")[0] == [rev.mgmt.mdio]
    flash = res["spi_flash", 0]
    assert amaranth_boards_pins(flash, "cs") == ([rev.flash.cs_n], True)
    # Known difference: amaranth-boards 0.0.21 calls T8 "cipo" (an input) and
    # T7 "copi" although its own comments say T8 is the chip's DI/IO0 and T7
    # its DO/IO1, as LiteX's mosi/miso and chubby75's SI/SO say: the pins
    # agree, the names are swapped.
    assert amaranth_boards_pins(flash, "cipo")[0] == [rev.flash.di]
    assert amaranth_boards_pins(flash, "copi")[0] == [rev.flash.do]


# -- The platforms -------------------------------------------------------------------------

def expected_requests(rev):
    """(resource, number, subsignal or None) -> (balls, inverted) for every
    resource the board top requests."""
    out = {("clk25", 0, None): ([rev.clk25], False),
           ("led", 0, None): ([rev.led], rev.led_active_low),
           ("uart", 0, "tx"): ([rev.led], False),
           ("uart", 0, "rx"): ([rev.button], False),
           ("eth_mgmt", 0, "rst"): ([rev.mgmt.reset_n], True),
           ("eth_mgmt", 0, "mdc"): ([rev.mgmt.mdc], False),
           ("eth_mgmt", 0, "mdio"): ([rev.mgmt.mdio], False),
           ("config_flash", 0, "cs"): ([rev.flash.cs_n], True),
           ("config_flash", 0, "di"): ([rev.flash.di], False),
           ("config_flash", 0, "do"): ([rev.flash.do], False)}
    for n, port in enumerate(rev.ports):
        for field in ("tx_clk", "tx_ctl", "tx_data", "rx_clk", "rx_ctl", "rx_data"):
            want = getattr(port, field)
            out["eth_rgmii", n, field] = (list(want) if isinstance(want, tuple) else [want], False)
    return out


def recording(platform_cls):
    """The platform with ``request`` recording what it handed out."""
    class Recording(platform_cls):
        def __init__(self):
            super().__init__()
            self.requested = {}

        def request(self, name, number=0, **kwargs):
            port = super().request(name, number, **kwargs)
            self.requested[name, number] = port
            return port
    return Recording()


def check_requested(rev, platform):
    for (name, number, sub), (balls, inverted) in expected_requests(rev).items():
        if (name, number) not in platform.requested:
            continue
        port = platform.requested[name, number]
        port = port if sub is None else getattr(port, sub)
        assert [md.name for md in port.io.metadata] == balls, (name, number, sub)
        assert all(inv == inverted for inv in port.invert), (name, number, sub)


@pytest.mark.parametrize("name", NAMES)
def test_the_platform_has_the_revision_part_and_no_programmer_requirement(name):
    rev, platform = R.revision(name), R.platform_class(name)()
    assert (platform.device, platform.package, platform.speed) == (rev.device, rev.package, rev.speed)
    assert "openFPGALoader" not in platform.required_tools
    assert R.platform_class(name) is R.platform_class(name)


@pytest.mark.parametrize("name", NAMES)
def test_each_requested_resource_carries_the_table_pins(name):
    from amaranth.hdl import Fragment
    from amaranth.lib import io
    rev = R.revision(name)
    for uart_or_led in ("uart", "led"):
        platform = recording(R.platform_class(name))
        for resource, number in (("clk25", 0), ("eth_rgmii", 0), ("eth_rgmii", 1), ("eth_mgmt", 0),
                                 ("config_flash", 0), (uart_or_led, 0)):
            assert platform.lookup(resource, number).name == resource
            platform.request(resource, number, dir="-")
        check_requested(rev, platform)
        clocks = {port.name: hz for port, hz in platform.iter_port_clock_constraints()}
        assert clocks == {"clk25_0__io": 25e6}
        # The ports make buffers on this platform (ECP5 I/O cells).
        Fragment.get(io.Buffer("i", platform.requested["clk25", 0]), platform)


@pytest.fixture
def unelaborated_submodules_are_expected(monkeypatch):
    """BoardTop.elaborate alone leaves its submodules (pads, datapath) never
    elaborated, which Amaranth reports when they are collected: expected here."""
    import gc
    from amaranth.hdl._ir import UnusedElaboratable
    monkeypatch.setattr(UnusedElaboratable, "_MustUse__silence", True)
    yield
    gc.collect()            # while the report is still off


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("control_plane", [False, True], ids=["led", "uart-and-flash"])
def test_the_board_top_elaborates_on_every_revision(name, control_plane,
                                                   unelaborated_submodules_are_expected):
    """BoardTop's own elaborate (its submodules are not elaborated: that is
    the simulators' and the build's work): every resource it requests exists
    and carries the table's pins."""
    from ackfilter.board.top import BoardTop
    platform = recording(R.platform_class(name))
    BoardTop(firmware=b"\x13\x00\x00\x00" if control_plane else None).elaborate(platform)
    wanted = {("clk25", 0), ("eth_rgmii", 0), ("eth_rgmii", 1), ("eth_mgmt", 0)}
    wanted |= {("uart", 0), ("config_flash", 0)} if control_plane else {("led", 0)}
    assert set(platform.requested) == wanted
    check_requested(R.revision(name), platform)


@pytest.mark.parametrize("bad", ["5a-75b-v9.9", "colorlight-5a-75b", "5A-75B-V7.0", ""])
def test_an_unknown_revision_is_refused_with_the_known_names(bad):
    for lookup in (R.revision, R.platform_class):
        with pytest.raises(ValueError, match=re.escape(repr(bad))) as e:
            lookup(bad)
        assert all(name in str(e.value) for name in NAMES)


# -- PHY reset and delays ------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_no_revision_lets_the_fpga_reset_the_phys(name):
    assert not R.revision(name).phy_reset.may_assert


@pytest.mark.parametrize("name", NAMES)
def test_the_delays_are_a_phy_tx_delay_and_an_fpga_rx_delay(name):
    from ackfilter.gateware.mac.rgmii import RX_DELAY_TAPS
    rev = R.revision(name)
    d = rev.delays
    assert d.fpga_rx_delay_taps == RX_DELAY_TAPS
    if "B50612D" in rev.phy_models[0]:
        assert d.tx_delay_in_phy is True and d.mdio_setup == ()
    else:
        # RTL8211F: straps unknown, so the PHY is told: TX delay on, RX delay
        # off (page 0xd08: reg 0x11 bit 8, reg 0x15 bit 3).
        assert d.mdio_setup == (R.MdioWrite(page=0xd08, reg=0x11, bit=8, value=1),
                                R.MdioWrite(page=0xd08, reg=0x15, bit=3, value=0))


# -- constraints/README.md -----------------------------------------------------------------

README = (PINS_DIR.parent / "README.md").read_text()


def readme_tables(name):
    """The pins of the README section of revision ``name`` (its two tables),
    under :meth:`Revision.pins`' names."""
    section = README.split(f"(`{name}`)\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and not set(cells[0]) <= set("-"):
            rows[cells[0]] = cells[1:]
    out = {}
    for label, field in (("TXC", "tx_clk"), ("TX_CTL", "tx_ctl"), ("RXC", "rx_clk"),
                         ("RX_CTL", "rx_ctl"), ("TXD[0..3]", "tx_data"), ("RXD[0..3]", "rx_data")):
        for n in (0, 1):
            pins = rows[label][n].split()
            if len(pins) == 1:
                out[f"eth{n}.{field}"] = pins[0]
            else:
                out.update({f"eth{n}.{field}[{bit}]": pin for bit, pin in enumerate(pins)})
    out["clk25"] = rows["clk25"][0]
    out["led"], out["button"] = rows["LED"][0], rows["button"][0]
    for group, fields in (("PHY reset_n / MDC / MDIO", ("mgmt.reset_n", "mgmt.mdc", "mgmt.mdio")),
                          ("flash CS# / DI / DO", ("flash.cs_n", "flash.di", "flash.do"))):
        out.update(zip(fields, rows[group][0].split(" / ")))
    phys = rows["PHY"]
    return out, phys


@pytest.mark.parametrize("name", NAMES)
def test_the_readme_tables_are_the_revision_tables(name):
    rev = R.revision(name)
    pins, phys = readme_tables(name)
    assert pins == rev.pins()
    assert phys == [port.phy for port in rev.ports]
