"""Clause-22 PHYs on an MDIO wire, for the simulators (IEEE 802.3 clause 22).

Written from the standard, independently of the gateware
(:mod:`ackfilter.gateware.mdio`), in three layers so that a cocotb bench can
reuse the first two:

* :class:`PHYRegisters` — one PHY's register file with its access rules:
  read-only bits, self-clearing bits, the latching-low link status;
* :class:`MDIOResponder` — the PHYs on one wire: takes the bit on MDIO at
  each rising edge of MDC, decodes frames as a PHY does, answers reads and
  applies writes for its addresses, ignores other addresses, and records
  every frame it saw (:class:`Transaction`);
* :class:`AmaranthMDIOPHY` — runs a responder in the Amaranth simulator: a
  process that samples the wire on MDC's rising edges and drives its own
  tristate (``oe``/``o``) a set delay after them.
"""

from dataclasses import dataclass

from amaranth.hdl import Signal

__all__ = ["PHYRegisters", "MDIOResponder", "Transaction", "AmaranthMDIOPHY",
           "BMCR", "BMSR", "ID1", "ID2", "ANAR", "ANLPAR", "GBCR", "GBSR", "MAX_DELAY_S"]

#: Register numbers (table 22-6; 9 and 10 are 1000BASE-T's, 40.5.1.1).
BMCR, BMSR, ID1, ID2, ANAR, ANLPAR, GBCR, GBSR = 0, 1, 2, 3, 4, 5, 9, 10

#: The PHY's MDIO clock-to-output delay after MDC's rising edge (22.3.4).
MAX_DELAY_S = 300e-9

#: Bits a write changes. Every other bit is read-only here: all of BMSR, the
#: IDs, ANLPAR and 1000BASE-T status (22.2.4.2, 22.2.4.3.1, 28.2.4.1.4,
#: 40.5.1.1); BMCR's reserved bits 4:0 and its unidirectional enable (bit 5,
#: writable only with BMSR.7, which this PHY does not have); ANAR's bit 14
#: (reserved in the base page) and its selector field (held at 00001, IEEE
#: 802.3 -- the standard has it read/write, a PHY may fix it); 1000BASE-T
#: control's reserved bits 7:0. BMCR's reset (15) and restart
#: autonegotiation (9) are self-clearing: they act and read back 0.
WRITABLE = {BMCR: 0x7DC0, ANAR: 0xBFE0, GBCR: 0xFF00}
BMCR_RESET, BMCR_RESTART_AN = 1 << 15, 1 << 9
BMSR_LINK = 1 << 2


class PHYRegisters:
    """One PHY's management registers.

    The defaults: a gigabit PHY with autonegotiation enabled and complete,
    the link up at 1000BASE-T full duplex with a partner that advertises
    everything (10/100 half and full, 1000BASE-T half and full).

    Parameters
    ----------
    phy_id : int
        32 bits: ID1 (reg 2) is the high half, ID2 (reg 3) the low (22.2.4.3.1).
        Default 0x001CC916 (an RTL8211F's, as Linux's ``realtek`` driver knows it).
    bmcr, bmsr, anar, anlpar, gbcr, gbsr : int
        Registers 0, 1, 4, 5, 9 and 10 at reset.
    others : dict
        Any other registers (vendor registers); absent ones read 0.

    ``regs`` holds the values; set them directly to change what the PHY
    reports (BMSR's link bit through :meth:`set_link`, which latches).
    """

    def __init__(self, *, phy_id=0x001CC916, bmcr=0x1140, bmsr=0x796D, anar=0x01E1,
                 anlpar=0x41E1, gbcr=0x0300, gbsr=0x3C00, others=None):
        self._reset = {BMCR: bmcr, BMSR: bmsr, ID1: phy_id >> 16, ID2: phy_id & 0xFFFF,
                       ANAR: anar, ANLPAR: anlpar, GBCR: gbcr, GBSR: gbsr, **(others or {})}
        self.regs = dict(self._reset)
        self._link_failed = False          # BMSR.2's latch (22.2.4.2.13)

    def set_link(self, up):
        """The link's state now; a failure holds BMSR.2 at 0 until it is read."""
        if up:
            self.regs[BMSR] |= BMSR_LINK
        else:
            self.regs[BMSR] &= ~BMSR_LINK
            self._link_failed = True

    def peek(self, reg):
        """What a read of ``reg`` would return now, without its side effects."""
        value = self.regs.get(reg, 0)
        if reg == BMSR and self._link_failed:
            value &= ~BMSR_LINK
        return value

    def read(self, reg):
        """A read over MDIO: reading BMSR re-arms the link latch."""
        value = self.peek(reg)
        if reg == BMSR:
            self._link_failed = False
        return value

    def write(self, reg, value):
        """A write over MDIO: only :data:`WRITABLE` bits change."""
        if reg == BMCR and value & BMCR_RESET:
            self.regs = dict(self._reset)  # 22.2.4.1.1: registers to their defaults
            self._link_failed = False
            return
        mask = WRITABLE.get(reg, 0)
        self.regs[reg] = (self.regs.get(reg, 0) & ~mask) | (value & mask)


@dataclass(frozen=True)
class Transaction:
    """A frame seen on the wire: ``data`` is its 16 data bits as they were on
    the wire (for a read nobody answered: 0xFFFF, the pull-up); ``answered``:
    a PHY here had ``phy_addr`` and answered the read or applied the write."""
    op: str            # "read" or "write"
    phy_addr: int
    reg_addr: int
    data: int
    answered: bool


class MDIOResponder:
    """The PHYs on one MDIO wire, at their addresses (``{address: PHYRegisters}``).

    :meth:`rising_edge` takes the bit on MDIO at each rising edge of MDC and
    returns what the PHYs drive from shortly after that edge until shortly
    after the next. Frames as 22.2.4.5 has them: at least 32 ones of
    preamble (this PHY does not take suppressed preambles), ST ``01``, OP
    ``10`` read / ``01`` write (anything else: ignored), PHYAD, REGAD, TA,
    16 data bits, MSB first. A read's answer: released during the
    turnaround's first bit, 0 in its second, then the data, then released.
    A write applies if its turnaround was ``10``.

    ``transactions`` lists every complete frame seen (:class:`Transaction`);
    ``malformed`` counts frames abandoned (a bad ST or OP, or a short
    preamble before a start).
    """

    def __init__(self, phys):
        self.phys = dict(phys)
        self.transactions = []
        self.malformed = 0
        self._ones = 0             # preamble ones counted
        self._pos = None           # bit of the frame after the preamble (ST's first = 0), or None
        self._bits = []            # the bits of the frame after the preamble
        self._reply = None         # a read's value being sent

    def rising_edge(self, mdio):
        """Take ``mdio`` (0/1) at a rising edge of MDC; return 0, 1 or None
        (released) to drive after this edge."""
        mdio = int(mdio)
        if self._pos is None:                         # preamble, or idle
            if mdio:
                self._ones += 1
                return None
            if self._ones < 32:
                if self._ones:
                    self.malformed += 1
                self._ones = 0
                return None
            self._pos, self._bits = 0, [0]
            return None
        self._pos += 1
        self._bits.append(mdio)
        pos = self._pos
        if pos == 1 and self._bits != [0, 1]:         # ST
            return self._abandon()
        if pos == 3 and self._bits[2:4] not in ([1, 0], [0, 1]):   # OP
            return self._abandon()
        if pos == 13:                                 # REGAD's last bit: decoded
            phy = self.phys.get(self._field(4, 9))
            if self._op == "read" and phy is not None:
                self._reply = phy.read(self._field(9, 14))
            return None                               # TA's first bit: released
        if self._reply is not None:
            if pos == 14:
                return 0                              # TA's second bit
            if 15 <= pos <= 30:
                return (self._reply >> (30 - pos)) & 1   # data bits 15..0
        if pos == 31:
            self._end()
        return None

    @property
    def _op(self):
        return "read" if self._bits[2:4] == [1, 0] else "write"

    def _field(self, start, stop):
        value = 0
        for b in self._bits[start:stop]:
            value = value << 1 | b
        return value

    def _abandon(self):
        self.malformed += 1
        self._pos, self._ones, self._reply = None, 0, None
        return None

    def _end(self):
        phy_addr, reg_addr, data = self._field(4, 9), self._field(9, 14), self._field(16, 32)
        phy = self.phys.get(phy_addr)
        if self._op == "read":
            answered = self._reply is not None
        else:
            answered = phy is not None and self._bits[14:16] == [1, 0]
            if answered:
                phy.write(reg_addr, data)
        self.transactions.append(Transaction(self._op, phy_addr, reg_addr, data, answered))
        self._pos, self._ones, self._reply = None, 0, None


class AmaranthMDIOPHY:
    """Runs an :class:`MDIOResponder` in the Amaranth simulator.

    Its tristate is ``oe``/``o`` (signals of its own, for the bench to put
    on the wire with the master's and the pull-up). :meth:`process` returns
    the async process to add: at each rising edge of ``mdc`` it takes
    ``mdio`` (the wire, as it was at the edge) and ``delay_s`` later
    (0..300 ns, 22.3.4; changeable between frames) drives what the responder
    says.
    """

    def __init__(self, responder, *, delay_s=100e-9):
        self.responder = responder
        self.delay_s = delay_s
        self.oe = Signal(name="phy_mdio_oe")
        self.o = Signal(name="phy_mdio_o", init=1)

    @property
    def delay_s(self):
        return self._delay_s

    @delay_s.setter
    def delay_s(self, value):
        if not 0 <= value <= MAX_DELAY_S:
            raise ValueError(f"delay_s must be in 0..{MAX_DELAY_S} s (22.3.4), not {value!r}")
        self._delay_s = value

    def process(self, mdc, mdio):
        async def run(ctx):
            while True:
                _, bit = await ctx.posedge(mdc).sample(mdio)
                drive = self.responder.rising_edge(bit)
                if self._delay_s:
                    await ctx.delay(self._delay_s)
                ctx.set(self.oe, drive is not None)
                if drive is not None:
                    ctx.set(self.o, drive)
        return run
