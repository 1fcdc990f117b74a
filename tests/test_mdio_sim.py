# amaranth: UnusedElaboratable=no
"""PHY management (``gateware.mdio``) in the Amaranth simulator, against the
clause-22 PHY model (``sim.phy_model``) on a wire with a pull-up.

* the master at the standard divider: MDC no faster than 2.5 MHz, MDIO set
  up before each rising edge, the frame's bits, read data the PHY launches
  0 and 300 ns late;
* the master at a fast divider: reads of every register, writes and their
  read-only bits, an address nobody answers;
* the poller: speed and duplex resolution for a table of cases worked by
  hand, the latching-low link, two PHYs apart, an absent PHY, snapshots
  that never mix two rounds, a write slotted between reads.

Most tests run MDC at :data:`FAST` cycles a period (80 ns: the master allows
it, the standard does not); the model answers :data:`FAST_DELAY_S` after each
rising edge, within the 40 ns the master then leaves (two cycles). Set
``ACKFILTER_VCD=1`` to write a VCD per test into build/vcd/.
"""

import pytest
from amaranth.hdl import *

from ackfilter import params as P
from ackfilter.gateware.mdio import POLL_REGS, MDIOMaster, PHYPoller, PHYStatus, mdc_period_cycles_for
from ackfilter.sim.phy_model import (ANAR, ANLPAR, BMCR, BMSR, GBCR, GBSR, ID1, ID2, AmaranthMDIOPHY,
                                     MDIOResponder, PHYRegisters)
from blocksim import simulate

CLK_NS = 1e9 / P.F_SYS_HZ
FAST = 4
FAST_DELAY_S = 10e-9


class Bench(Elaboratable):
    """The DUT and the model PHYs on one wire: either end pulls MDIO low or
    lets go, the pull-up makes the rest 1. ``contention``: both ends drive."""

    def __init__(self, dut, phys, *, delay_s=FAST_DELAY_S):
        self.dut = dut
        self.responder = MDIOResponder(phys)
        self.phy = AmaranthMDIOPHY(self.responder, delay_s=delay_s)
        self.mdio = Signal(init=1)
        self.contention = Signal()
        self.contended = []

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        master_low = dut.mdio_oe & ~dut.mdio_o
        phy_low = self.phy.oe & ~self.phy.o
        m.d.comb += [self.mdio.eq(~master_low & ~phy_low), dut.mdio_i.eq(self.mdio),
                     self.contention.eq(dut.mdio_oe & self.phy.oe)]
        return m

    def run(self, *testbenches, name, processes=()):
        async def watch_contention(ctx):
            while True:
                await ctx.posedge(self.contention)
                self.contended.append(True)

        simulate(self, *testbenches, name=name,
                 processes=[self.phy.process(self.dut.mdc, self.mdio), watch_contention, *processes])
        assert not self.contended, "the master and a PHY drove MDIO at once"
        assert self.responder.malformed == 0


# --------------------------------------------------------------------------
# MDIOMaster

async def transfer(ctx, dut, phy_addr, reg_addr, data=None):
    """One frame through the command port; a read's ``(r_data, no_phy)``."""
    ctx.set(dut.start, 1)
    ctx.set(dut.write, data is not None)
    ctx.set(dut.phy_addr, phy_addr)
    ctx.set(dut.reg_addr, reg_addr)
    ctx.set(dut.w_data, data or 0)
    await ctx.tick()
    ctx.set(dut.start, 0)
    assert ctx.get(dut.busy)
    await ctx.tick().until(dut.done)
    assert not ctx.get(dut.busy)
    return None if data is not None else (ctx.get(dut.r_data), ctx.get(dut.no_phy))


def tracer(bench, trace):
    """A process recording ``(mdc, mdio_oe, mdio_o, wire)`` in every cycle."""
    dut = bench.dut

    async def run(ctx):
        async for _, _, *values in ctx.tick().sample(dut.mdc, dut.mdio_oe, dut.mdio_o, bench.mdio):
            trace.append(tuple(values))
    return run


def bits(value, width):
    return [int(b) for b in f"{value:0{width}b}"]


def test_mdc_period_is_derived_from_the_clock():
    assert mdc_period_cycles_for(50_000_000) == 20         # 400 ns: 2.5 MHz
    assert mdc_period_cycles_for(100_000_000) == 40
    assert mdc_period_cycles_for(25_000_000) == 12         # 10 would sample 320 ns after the launch
    assert mdc_period_cycles_for(10_000_000) == 6          # 600 ns: the sample point, not 400 ns
    assert MDIOMaster().mdc_period_cycles == 20


@pytest.mark.parametrize("cycles", [2, 3, 5, 4.0])
def test_master_refuses_a_bad_mdc_period(cycles):
    with pytest.raises(TypeError, match=r"mdc_period_cycles must be an even integer >= 4, not"):
        MDIOMaster(mdc_period_cycles=cycles)
    with pytest.raises(TypeError, match=r"clk_hz must be a positive number, not"):
        MDIOMaster(clk_hz=-1)


def test_at_50_mhz_mdc_is_2_5_mhz_mdio_is_set_up_and_reads_take_data_launched_0_to_300_ns_late():
    phy = PHYRegisters(phy_id=0x001CC916)
    bench = Bench(MDIOMaster(), {1: phy}, delay_s=300e-9)
    dut, trace = bench.dut, []
    got = []

    async def tb(ctx):
        await transfer(ctx, dut, 1, ANAR, 0x0DE1)
        got.append(await transfer(ctx, dut, 1, ID1))          # launched 300 ns after the edge
        bench.phy.delay_s = 0
        got.append(await transfer(ctx, dut, 1, ID2))          # at the edge
        await ctx.tick().repeat(40)

    bench.run(tb, name="mdio_timing", processes=[tracer(bench, trace)])
    assert got == [(0x001C, 0), (0xC916, 0)]
    assert phy.regs[ANAR] == 0x0DE1

    mdc = [t[0] for t in trace]
    rises = [i for i in range(1, len(mdc)) if mdc[i] and not mdc[i - 1]]
    falls = [i for i in range(1, len(mdc)) if not mdc[i] and mdc[i - 1]]
    assert len(rises) == 3 * 64
    # 22.2.2.11: period >= 400 ns, high and low >= 160 ns each
    assert min(b - a for a, b in zip(rises, rises[1:])) * CLK_NS >= 400
    assert min(f - r for r, f in zip(rises, falls)) * CLK_NS >= 160
    assert min(r - f for f, r in zip(falls, rises[1:])) * CLK_NS >= 160
    # The master changes MDIO only while MDC is low, after its falling edge
    # (not with it), and it is set up >= 10 ns before each rising edge (22.3.4).
    for i in range(1, len(trace)):
        if trace[i][1:3] != trace[i - 1][1:3]:
            assert not trace[i - 1][0] and not trace[i][0], f"MDIO changed at MDC high, cycle {i}"
    for r in rises:
        if trace[r - 1][1]:
            stable = 1
            while stable < r - 1 and trace[r - 1 - stable][1:3] == trace[r - 1][1:3]:
                stable += 1
            assert stable * CLK_NS >= 10
    # The bits on the wire at the rising edges (pull-up: a released bit is 1).
    wire = [trace[r - 1][3] for r in rises]
    frame = lambda op, reg, ta, data: [1] * 32 + [0, 1] + op + bits(1, 5) + bits(reg, 5) + ta + bits(data, 16)
    assert wire[:64] == frame([0, 1], ANAR, [1, 0], 0x0DE1)
    assert wire[64:128] == frame([1, 0], ID1, [1, 0], 0x001C)
    assert wire[128:] == frame([1, 0], ID2, [1, 0], 0xC916)
    assert trace[-1][:2] == (0, 0)                            # idle: MDC low, MDIO released


def two_phys():
    return {0: PHYRegisters(phy_id=0x001CC916, others={0x1F: 0xA5C3}),
            1: PHYRegisters(phy_id=0x600DBEEF, bmcr=0x2100, bmsr=0x794D, anar=0x0DE1,
                            anlpar=0x0000, gbcr=0x0000, gbsr=0x0000)}


def test_reads_return_each_register_of_the_addressed_phy():
    phys = two_phys()
    bench = Bench(MDIOMaster(mdc_period_cycles=FAST), phys)
    regs = (BMCR, BMSR, ID1, ID2, ANAR, ANLPAR, GBCR, GBSR, 0x1F)
    want = [(a, r, phys[a].peek(r)) for a in (0, 1) for r in regs]
    got = []

    async def tb(ctx):
        for a in (0, 1):
            for r in regs:
                data, no_phy = await transfer(ctx, bench.dut, a, r)
                assert not no_phy
                got.append((a, r, data))

    bench.run(tb, name="mdio_reads")
    assert got == want
    assert [(t.phy_addr, t.reg_addr, t.data) for t in bench.responder.transactions] == want
    assert all(t.op == "read" and t.answered for t in bench.responder.transactions)


def test_bmsr_link_reads_0_once_after_a_failure():
    phys = two_phys()
    bench = Bench(MDIOMaster(mdc_period_cycles=FAST), phys)
    got = []

    async def tb(ctx):
        phys[0].set_link(False)
        phys[0].set_link(True)
        for _ in range(2):
            got.append((await transfer(ctx, bench.dut, 0, BMSR))[0])

    bench.run(tb, name="mdio_latch")
    assert got == [0x796D & ~0x4, 0x796D]


def test_writes_land_and_read_only_bits_stay():
    phys = two_phys()
    bench = Bench(MDIOMaster(mdc_period_cycles=FAST), phys)
    got = {}

    async def tb(ctx):
        await transfer(ctx, bench.dut, 0, BMCR, 0x7FFF)   # bits 9 (self-clearing), 5:0 read-only
        await transfer(ctx, bench.dut, 0, BMSR, 0x0000)   # read-only
        await transfer(ctx, bench.dut, 0, ANAR, 0x0000)   # selector and bit 14 read-only
        await transfer(ctx, bench.dut, 1, GBCR, 0xFFFF)   # bits 7:0 read-only
        await transfer(ctx, bench.dut, 5, BMCR, 0x0000)   # nobody there
        for a, r in ((0, BMCR), (0, BMSR), (0, ANAR), (1, GBCR), (1, BMCR)):
            got[a, r] = (await transfer(ctx, bench.dut, a, r))[0]

    bench.run(tb, name="mdio_writes")
    assert got == {(0, BMCR): 0x7DC0, (0, BMSR): 0x796D, (0, ANAR): 0x0001, (1, GBCR): 0xFF00,
                   (1, BMCR): 0x2100}
    assert {a: p.regs[r] for a, p in phys.items() for r in (BMCR,)} == {0: 0x7DC0, 1: 0x2100}
    writes = [t for t in bench.responder.transactions if t.op == "write"]
    assert [(t.phy_addr, t.reg_addr, t.data, t.answered) for t in writes] == [
        (0, BMCR, 0x7FFF, True), (0, BMSR, 0, True), (0, ANAR, 0, True), (1, GBCR, 0xFFFF, True),
        (5, BMCR, 0, False)]


def test_a_read_nobody_answers_is_0xffff_and_flagged():
    bench = Bench(MDIOMaster(mdc_period_cycles=FAST), two_phys())
    got = []

    async def tb(ctx):
        got.append(await transfer(ctx, bench.dut, 9, ID1))
        got.append(await transfer(ctx, bench.dut, 1, ID1))
        got.append(await transfer(ctx, bench.dut, 31, BMSR))

    bench.run(tb, name="mdio_absent")
    assert got == [(0xFFFF, 1), (0x600D, 0), (0xFFFF, 1)]
    assert [t.answered for t in bench.responder.transactions] == [False, True, False]


# --------------------------------------------------------------------------
# PHYPoller

FIELDS = [name for name, _ in PHYStatus]


def snapshot(ctx, status):
    value = ctx.get(status)
    return {name: getattr(value, name) for name in FIELDS}


async def next_round(ctx, status):
    """The status after its next round."""
    polls = ctx.get(status.polls)
    await ctx.tick().until(status.polls != polls)
    await ctx.tick()
    return snapshot(ctx, status)


def expected(phy, *, link, speed, full_duplex):
    """What the poller publishes for ``phy`` (whose link and resolution the
    test works out by hand), but its round counter."""
    return {"present": 1, "link": link, "speed": speed, "full_duplex": full_duplex,
            "an_complete": phy.peek(BMSR) >> 5 & 1, "lp_1000": phy.peek(GBSR) >> 10 & 3,
            "lp_abilities": phy.peek(ANLPAR), "phy_id": phy.peek(ID1) << 16 | phy.peek(ID2)}


def without_polls(status):
    return {k: v for k, v in status.items() if k != "polls"}


def poller(phy_addrs=(0,)):
    return PHYPoller(phy_addrs=phy_addrs, mdc_period_cycles=FAST)


# Link partner abilities (ANLPAR, with Acknowledge) and 1000BASE-T status (reg 10:
# 13 local and 12 remote receiver OK, 11 partner 1000FD, 10 partner 1000HD).
LP_ALL, LP_100FD, LP_100HD_10HD, LP_10 = 0x41E1, 0x4101, 0x40A1, 0x4061
GS_ALL, GS_FD, GS_HD, GS_NONE = 0x3C00, 0x3800, 0x3400, 0x3000
AN_DONE, AN_OFF, LINK_DOWN = 0x796D, 0x794D, 0x7949      # BMSR: AN complete + link; link; neither

RESOLUTION_CASES = {
    # name: registers different from PHYRegisters' defaults -> (link, speed, full_duplex)
    "both_1000_full": ({}, (1, 2, 1)),
    "partner_only_100_full": ({"gbsr": GS_NONE, "anlpar": LP_100FD}, (1, 1, 1)),
    "partner_1000_half_beats_100_full": ({"gbsr": GS_HD}, (1, 2, 0)),
    "we_1000_full_partner_1000_half_only": ({"gbcr": 0x0200, "gbsr": GS_HD}, (1, 1, 1)),
    "we_advertise_no_1000": ({"gbcr": 0x0000}, (1, 1, 1)),
    "partner_100_half": ({"gbsr": GS_NONE, "anlpar": LP_100HD_10HD}, (1, 1, 0)),
    "partner_10_full": ({"gbsr": GS_NONE, "anlpar": LP_10}, (1, 0, 1)),
    "we_advertise_10_half_only": ({"anar": 0x0021, "gbcr": 0x0000}, (1, 0, 0)),
    "no_extended_status_ignores_regs_9_10": ({"bmsr": AN_DONE & ~0x100}, (1, 1, 1)),
    "autoneg_off_forced_100_half": ({"bmcr": 0x2000, "bmsr": AN_OFF}, (1, 1, 0)),
    "autoneg_off_forced_1000_full": ({"bmcr": 0x0140, "bmsr": AN_OFF, "anlpar": LP_10}, (1, 2, 1)),
    "autoneg_off_forced_10_full": ({"bmcr": 0x0100, "bmsr": AN_OFF}, (1, 0, 1)),
    "autoneg_disabled_with_stale_complete": ({"bmcr": 0x2100}, (1, 1, 1)),
    "link_down": ({"bmsr": LINK_DOWN, "bmcr": 0x1000}, (0, 0, 0)),
}


@pytest.mark.parametrize("case", RESOLUTION_CASES)
def test_poller_resolves_link_speed_and_duplex(case):
    regs, (link, speed, full_duplex) = RESOLUTION_CASES[case]
    phy = PHYRegisters(**regs)
    bench = Bench(poller(), {0: phy})
    got = []

    async def tb(ctx):
        got.append(await next_round(ctx, bench.dut.status[0]))

    bench.run(tb, name=f"poller_{case}")
    assert without_polls(got[0]) == expected(phy, link=link, speed=speed, full_duplex=full_duplex)
    assert got[0]["polls"] == 1


def test_poller_publishes_a_link_drop_between_rounds_for_one_round():
    phy = PHYRegisters()
    bench = Bench(poller(), {0: phy})
    links = []

    async def tb(ctx):
        status = bench.dut.status[0]
        links.append((await next_round(ctx, status))["link"])
        phy.set_link(False)                  # down and up again before the next BMSR read
        phy.set_link(True)
        for _ in range(2):
            links.append((await next_round(ctx, status))["link"])

    bench.run(tb, name="poller_latch")
    assert links == [1, 0, 1]


def first_round_of_both(bench, got):
    """A testbench: once both PHYs' first round is published, their status into ``got``."""
    async def tb(ctx):
        await ctx.tick().until(bench.dut.status[1].polls == 1)
        await ctx.tick()
        for i in (0, 1):
            got[i] = snapshot(ctx, bench.dut.status[i])
    return tb


def test_poller_publishes_two_phys_apart():
    phys = two_phys()
    bench = Bench(poller((0, 1)), phys)
    got = {}

    bench.run(first_round_of_both(bench, got), name="poller_two")
    assert without_polls(got[0]) == expected(phys[0], link=1, speed=2, full_duplex=1)
    assert without_polls(got[1]) == expected(phys[1], link=1, speed=1, full_duplex=1)
    assert (got[0]["polls"], got[1]["polls"]) == (1, 1)
    reads = [(t.phy_addr, t.reg_addr) for t in bench.responder.transactions]
    assert reads == [(a, r) for a in (0, 1) for r in POLL_REGS]


def test_poller_publishes_an_absent_phy_as_not_present():
    phys = two_phys()
    bench = Bench(poller((1, 7)), phys)
    got = {}

    bench.run(first_round_of_both(bench, got), name="poller_absent")
    assert got[0]["present"] == 1 and got[0]["phy_id"] == 0x600DBEEF
    assert got[1] == {"present": 0, "link": 0, "speed": 0, "full_duplex": 0, "an_complete": 0,
                      "lp_1000": 0, "polls": 1, "lp_abilities": 0, "phy_id": 0xFFFFFFFF}


def test_poller_snapshot_never_mixes_two_rounds():
    # PHY 0 switches between two states that differ in every published field,
    # each time its status is published, so each of its rounds reads one
    # state from start to end; in every cycle its status must be all one
    # state's (or the reset value), and change only with its round counter.
    state_a = dict(phy_id=0x001CC916)
    state_b = dict(phy_id=0x600DBEEF, bmcr=0x1000, bmsr=LINK_DOWN, anlpar=LP_10, gbsr=GS_HD)
    want_a = expected(PHYRegisters(**state_a), link=1, speed=2, full_duplex=1)
    want_b = expected(PHYRegisters(**state_b), link=0, speed=0, full_duplex=0)
    assert all(want_a[k] != want_b[k] for k in want_a if k != "present")
    reset = {k: 0 for k in want_a}
    phys = {0: PHYRegisters(**state_a), 1: PHYRegisters(phy_id=0x12345678)}
    bench = Bench(poller((0, 1)), phys)
    published = []

    async def tb(ctx):
        status = bench.dut.status[0]
        last = snapshot(ctx, status)
        while len(published) < 4:
            await ctx.tick()
            now = snapshot(ctx, status)
            assert without_polls(now) in (want_a, want_b, reset), now
            if now != last:
                assert now["polls"] == (last["polls"] + 1) % 256, (last, now)
                published.append(without_polls(now))
                phys[0] = PHYRegisters(**(state_b if len(published) % 2 else state_a))
                bench.responder.phys[0] = phys[0]
            last = now

    bench.run(tb, name="poller_snapshot")
    assert published == [want_a, want_b, want_a, want_b]


def test_poller_slots_requests_between_reads_and_reports_them_done():
    phys = two_phys()
    bench = Bench(poller((0, 1)), phys)
    dut = bench.dut
    after, asked, read_back = {}, [], []

    async def tb(ctx):
        await ctx.tick().until(dut.status[0].polls == 1)
        await ctx.tick().repeat(37)              # inside the round's first frame, at PHY 1
        asked.append(len(bench.responder.transactions))
        ctx.set(dut.req_start, 1)
        ctx.set(dut.req_write, 1)
        ctx.set(dut.req_phy_addr, 0)
        ctx.set(dut.req_reg_addr, BMCR)
        ctx.set(dut.req_w_data, 0x2000)          # autonegotiation off, 100 half
        await ctx.tick()
        ctx.set(dut.req_start, 0)
        assert ctx.get(dut.req_busy)
        await ctx.tick().until(dut.req_done)
        assert not ctx.get(dut.req_busy)
        assert phys[0].regs[BMCR] == 0x2000
        # A read request of the same register, then of an address nobody has.
        for addr, want, absent in ((0, 0x2000, 0), (7, 0xFFFF, 1)):
            ctx.set(dut.req_start, 1)
            ctx.set(dut.req_write, 0)
            ctx.set(dut.req_phy_addr, addr)
            await ctx.tick()
            ctx.set(dut.req_start, 0)
            await ctx.tick().until(dut.req_done)
            read_back.append((ctx.get(dut.req_r_data), ctx.get(dut.req_no_phy)))
            assert read_back[-1] == (want, absent), read_back
        for _ in range(2):
            after.update(await next_round(ctx, dut.status[0]))

    bench.run(tb, name="poller_write")
    assert (after["speed"], after["full_duplex"]) == (1, 0)
    log = bench.responder.transactions
    writes = [i for i, t in enumerate(log) if t.op == "write"]
    assert len(writes) == 1 and (log[writes[0]].phy_addr, log[writes[0]].reg_addr,
                                 log[writes[0]].data) == (0, BMCR, 0x2000)
    assert asked == [len(POLL_REGS)] and writes == [len(POLL_REGS) + 1]   # after the frame under way
    # the polling reads go on where they were: the poll order, none skipped or
    # repeated, once the two requested reads are taken out (of PHY 0 and of
    # address 7, where no PHY answers: the wire carried both)
    order = [(a, r) for a in (0, 1) for r in POLL_REGS]
    reads = [(t.phy_addr, t.reg_addr) for t in log if t.op == "read"]
    assert reads.count((7, BMCR)) == 1
    reads.remove((7, BMCR))
    polled = [i for i in range(len(reads)) if reads[i] == (0, BMCR)
              and (rest := reads[:i] + reads[i + 1:]) == [order[k % len(order)] for k in range(len(rest))]]
    assert polled, [(i, r) for i, r in enumerate(reads)][8:30]


@pytest.mark.parametrize("addrs", [(), (0, 0), (32,), (-1,), "01", (0, 1.0)])
def test_poller_refuses_bad_phy_addresses(addrs):
    with pytest.raises(TypeError, match=r"phy_addrs must be a non-empty tuple of distinct integers"):
        PHYPoller(phy_addrs=addrs)


def test_model_refuses_a_phy_delay_beyond_300_ns():
    with pytest.raises(ValueError, match=r"delay_s must be in 0..3e-07 s \(22.3.4\), not"):
        AmaranthMDIOPHY(MDIOResponder({}), delay_s=301e-9)
