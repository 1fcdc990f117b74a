"""The board's registers, on the CSR bus beside the core's bank.

The core's :class:`~ackfilter.gateware.csr.CSRBank` holds the datapath's
parameters and counters; what belongs to the board (the ports' link state,
the PHYs seen over MDIO, MDIO frames on request) lives here, at
``params.BOARD_REGS`` (``BOARD_BASE`` and up), with the fields of
``params.LINK_FIELDS``, ``PHY_FIELDS``, ``MDIO_COMMAND_FIELDS`` and
``MDIO_RESULT_FIELDS``. :class:`CSRSplit` puts both on one bus: addresses
from ``BOARD_BASE`` go to the board, the rest to the core.

Both follow the bank's bus contract (:data:`~ackfilter.gateware.csr.CSRBusSignature`):
``r_data`` two cycles after ``r_stb``, held until the next read.
"""

from amaranth.hdl import *
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .. import params as P
from ..gateware.csr import READ_LATENCY, CSRBusSignature

__all__ = ["BoardRegs", "CSRSplit", "LinkSignature", "MDIORequestSignature", "fields_layout"]


def fields_layout(fields, width=32):
    """A ``StructLayout`` of ``(name, lsb, width)`` fields, gaps padded."""
    members, at = {}, 0
    for name, lsb, bits in sorted(fields, key=lambda f: f[1]):
        if lsb > at:
            members[f"_pad{at}"] = lsb - at
        members[name] = bits
        at = lsb + bits
    if width > at:
        members[f"_pad{at}"] = width - at
    return data.StructLayout(members)


LINK_LAYOUT = fields_layout(P.LINK_FIELDS)
MDIO_COMMAND_LAYOUT = fields_layout(P.MDIO_COMMAND_FIELDS)
MDIO_RESULT_LAYOUT = fields_layout(P.MDIO_RESULT_FIELDS)

#: One port's link as its MAC sees it (``sync``), seen from the MAC's side.
LinkSignature = wiring.Signature({
    "speed":              Out(2),
    "rxc_ok":             Out(1),
    "speed_changed":      Out(1),     # strobe
    "inband_link":        Out(1),
    "inband_speed":       Out(2),
    "inband_full_duplex": Out(1),
})

#: The MDIO poller's request port (:class:`~ackfilter.gateware.mdio.PHYPoller`),
#: seen from the side that asks.
MDIORequestSignature = wiring.Signature({
    "start":    Out(1),
    "write":    Out(1),
    "phy_addr": Out(5),
    "reg_addr": Out(5),
    "w_data":   Out(16),
    "busy":     In(1),
    "done":     In(1),
    "r_data":   In(16),
    "no_phy":   In(1),
})


class BoardRegs(wiring.Component):
    """The registers of ``params.BOARD_REGS`` (module docstring).

    Ports
    -----
    bus : In(CSRBusSignature)
        Word ``BOARD_BASE + k`` is register ``k`` (the addresses below
        ``BOARD_BASE`` read 0: :class:`CSRSplit` sends them to the core).
    lan, modem : In(LinkSignature)
        Each port's link.
    phy_status : In(64).array(2)
        The MDIO poller's :data:`~ackfilter.gateware.mdio.PHYStatus` of the
        PHYs at addresses 0 and 1 (low word: ``PHY_FIELDS``, high: the ID).
    mdio : Out(MDIORequestSignature)
        A write of ``mdio_command`` starts a frame (ignored while one is
        under way: ``mdio_result.busy``); ``mdio_result`` then has a read's
        data, whether a PHY answered, and ``done`` counts finished frames.
    """

    def __init__(self):
        super().__init__({
            "bus":        In(CSRBusSignature),
            "lan":        In(LinkSignature),
            "modem":      In(LinkSignature),
            "phy_status": In(64).array(2),
            "mdio":       Out(MDIORequestSignature),
        })

    def elaborate(self, platform):
        m = Module()
        bus = self.bus

        links = {}
        for role in ("lan", "modem"):
            port = getattr(self, role)
            word = Signal(LINK_LAYOUT, name=f"{role}_link")
            changes = Signal(8, name=f"{role}_speed_changes")
            with m.If(port.speed_changed):
                m.d.sync += changes.eq(changes + 1)
            m.d.comb += [
                word.speed.eq(port.speed), word.rxc_ok.eq(port.rxc_ok),
                word.inband_link.eq(port.inband_link), word.inband_speed.eq(port.inband_speed),
                word.inband_full_duplex.eq(port.inband_full_duplex), word.speed_changes.eq(changes),
            ]
            links[role] = word

        # MDIO on request.
        cmd = data.View(MDIO_COMMAND_LAYOUT, bus.w_data)
        result = Signal(MDIO_RESULT_LAYOUT)
        is_cmd = bus.w_stb & (bus.addr == P.BOARD_REGS["mdio_command"])
        m.d.comb += [
            self.mdio.write.eq(cmd.write), self.mdio.phy_addr.eq(cmd.phy),
            self.mdio.reg_addr.eq(cmd.reg), self.mdio.w_data.eq(cmd.data),
            self.mdio.start.eq(is_cmd & ~self.mdio.busy),
            result.busy.eq(self.mdio.busy),
        ]
        with m.If(self.mdio.done):
            m.d.sync += [result.data.eq(self.mdio.r_data), result.no_phy.eq(self.mdio.no_phy),
                         result.done.eq(result.done + 1)]

        words = {
            "lan_link": links["lan"], "modem_link": links["modem"],
            "phy0_status": self.phy_status[0][0:32], "phy1_status": self.phy_status[1][0:32],
            "phy0_id": self.phy_status[0][32:64], "phy1_id": self.phy_status[1][32:64],
            "mdio_result": result, "mdio_command": C(0, 32),
        }
        assert set(words) == set(P.BOARD_REGS)

        # Reads: the word chosen the cycle after r_stb, out the cycle after.
        assert READ_LATENCY == 2
        word_q = Signal(32)
        read_q = Signal()
        m.d.sync += read_q.eq(bus.r_stb)
        with m.If(bus.r_stb):
            m.d.sync += word_q.eq(0)
            with m.Switch(bus.addr):
                for name, addr in P.BOARD_REGS.items():
                    with m.Case(addr):
                        m.d.sync += word_q.eq(words[name])
        with m.If(read_q):
            m.d.sync += bus.r_data.eq(word_q)
        return m


class CSRSplit(wiring.Component):
    """One CSR bus onto the core's bank (addresses below ``BOARD_BASE``) and
    the board's registers (from ``BOARD_BASE``). A read's data comes from the
    block its strobe went to (each holds its word until its next read).

    Ports: ``bus`` In(CSRBusSignature), ``core`` and ``board``
    Out(CSRBusSignature)."""

    def __init__(self):
        super().__init__({
            "bus":   In(CSRBusSignature),
            "core":  Out(CSRBusSignature),
            "board": Out(CSRBusSignature),
        })

    def elaborate(self, platform):
        m = Module()
        assert P.BOARD_BASE == 0x80 and P.csr_last() < P.BOARD_BASE
        to_board = self.bus.addr[7]
        read_board = Signal()
        for side, selected in ((self.core, ~to_board), (self.board, to_board)):
            m.d.comb += [side.addr.eq(self.bus.addr), side.w_data.eq(self.bus.w_data),
                         side.w_stb.eq(self.bus.w_stb & selected),
                         side.r_stb.eq(self.bus.r_stb & selected)]
        with m.If(self.bus.r_stb):
            m.d.sync += read_board.eq(to_board)
        m.d.comb += self.bus.r_data.eq(Mux(read_board, self.board.r_data, self.core.r_data))
        return m
