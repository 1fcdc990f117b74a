"""End to end through the board (``board_top``: BoardDatapath with modelled DDR
pins) against cocotbext-eth's RGMII PHY models on both ports, at 1000 Mb/s,
and at 10, 100 and 1000 Mb/s mixed (the PHYs send no in-band status: each
MAC runs at the speed its RXC runs at).

* Uplink: frames sent into the LAN port's RX pins leave the modem port's TX
  pins through the uplink core, with the CSR defaults (shaper open,
  conservative ACK filter). A burst of pure ACKs alone never queues (the
  1 Gb/s output drains as fast as the 1 Gb/s input fills): every ACK leaves,
  byte-identical, in order. With full-size upload segments in between, ACKs
  wait behind a segment on the wire and the filter supersedes some: the
  data all leaves unchanged and in order, the ACKs that leave are
  byte-identical, an in-order subsequence of those sent, and the newest one
  always leaves.
* Downlink: frames sent into the modem port come out of the LAN port
  unchanged and in order, while the uplink is busy.

* Mixed speeds: frames cross both ways byte-exact, the board's registers
  (``lan_link``, ``modem_link``) read each port's speed, the shaper holds
  the uplink to its rate, and a port whose link renegotiates to another
  speed mid-traffic recovers.

Clocks: system 50 MHz, TX 125 MHz, each port's RXC 125, 25 or 2.5 MHz (the
two RXCs and the TX clock are unrelated in phase). At 1000 Mb/s the sinks
sample with ``phy_txc``, ``tx_clk`` 2 ns late (the B50612D's internal TX
clock delay), at 10 and 100 with the port's own TXC, as in ``tb_mac``.
"""

import logging

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, Timer
from cocotb.utils import get_time_from_sim_steps
from cocotbext.eth import GmiiFrame, RgmiiSink, RgmiiSource
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Padding, Raw

from ackfilter import params as P

#: The system clock period (``params.F_SYS_HZ``: 20 ns).
SYS_PERIOD_PS = round(1e12 / P.F_SYS_HZ)
BYTE_1000_PS = 8_000
#: RXC periods at each speed; the modem PHY's a few ps off so the phases drift.
RXC_PS = {1000: 8_000, 100: 40_000, 10: 400_000}
MODEM_RXC_OFFSET_PS = 2
SPEED_CODE = {10: 0, 100: 1, 1000: 2}
#: The longest a port takes to run at its RXC's speed (gateware.mac.speed:
#: three windows of 4096 system cycles, and the synchronizers).
SPEED_SETTLE_PS = 3 * 4096 * SYS_PERIOD_PS + 20 * SYS_PERIOD_PS
PHY_TXC_DELAY_PS = 2_000
TEST_TIMEOUT = dict(timeout_time=20, timeout_unit="ms")

LAN_MAC, MODEM_MAC = "02:00:00:00:00:0a", "02:00:00:00:00:0b"


def get_sim_time_ps(steps):
    return get_time_from_sim_steps(steps, "ps")


def pad60(raw):
    return raw.ljust(60, b"\0")


def pure_ack(n, *, ack_base=1_000_000):
    """The ``n``-th pure ACK of one download flow (60 bytes with padding)."""
    pkt = Ether(src=LAN_MAC, dst=MODEM_MAC) / IP(src="192.168.1.10", dst="203.0.113.5", id=n) / \
        TCP(sport=51000, dport=443, flags="A", seq=7000, ack=ack_base + 1448 * n, window=1024)
    raw = bytes(pkt)
    return raw + bytes(Padding(b"\0" * (60 - len(raw))))


def tcp_data(n, size):
    """An upload TCP segment (ACK+PSH with payload) of ``size`` bytes."""
    hdr = Ether(src=LAN_MAC, dst=MODEM_MAC) / IP(src="192.168.1.10", dst="198.51.100.9", id=n) / \
        TCP(sport=52000, dport=22, flags="PA", seq=1 + 1000 * n, ack=99)
    pay = bytes((n + i) & 0xFF for i in range(size - len(hdr)))
    raw = bytes(hdr / Raw(pay))
    assert len(raw) == size
    return raw


def udp_frame(n, size, *, src=LAN_MAC, dst=MODEM_MAC):
    hdr = Ether(src=src, dst=dst) / IP(src="10.0.0.1", dst="10.0.0.2", id=n & 0xFFFF) / UDP(sport=5000, dport=6000)
    pay = bytes((3 * n + i) & 0xFF for i in range(size - len(hdr)))
    raw = bytes(hdr / Raw(pay))
    assert len(raw) == size
    return raw


class TB:
    """Clocks, resets and the four RGMII PHY models (a source and a sink per port)."""

    def __init__(self, dut, *, lan=1000, modem=1000):
        self.dut = dut
        self.speeds = {"lan": lan, "modem": modem}
        for p in ("lan", "modem"):
            getattr(dut, f"{p}_rxd").value = 0
            getattr(dut, f"{p}_rx_ctl").value = 0
        dut.mdio_i.value = 1                  # no PHY answers MDIO (the pull-up)
        dut.csr_r_stb.value = 0
        dut.csr_w_stb.value = 0
        self.resets = (dut.rst, dut.tx_rst, dut.lan_rx_rst, dut.modem_rx_rst)
        for rst in self.resets:
            rst.value = 1
        cocotb.start_soon(Clock(dut.clk, SYS_PERIOD_PS, unit="ps").start())
        cocotb.start_soon(Clock(dut.tx_clk, BYTE_1000_PS, unit="ps").start())
        self.rx_clocks = {}
        for p in ("lan", "modem"):
            self._start_rx_clock(p)
        dut.phy_txc.value = 0
        cocotb.start_soon(self._phy_txc())
        self.sinks = {}
        for p in ("lan", "modem"):
            source = RgmiiSource(getattr(dut, f"{p}_rxd"), getattr(dut, f"{p}_rx_ctl"),
                                 getattr(dut, f"{p}_rx_clk"), getattr(dut, f"{p}_rx_rst"))
            source.mii_mode = self.speeds[p] != 1000
            source.log.setLevel(logging.WARNING)
            setattr(self, f"{p}_source", source)
        self._make_sinks()

    def _start_rx_clock(self, p):
        period = RXC_PS[self.speeds[p]] + (MODEM_RXC_OFFSET_PS if p == "modem" else 0)
        self.rx_clocks[p] = Clock(getattr(self.dut, f"{p}_rx_clk"), period, unit="ps")
        self.rx_clocks[p].start()

    def _make_sinks(self):
        """A sink per port for its speed: at 1000 Mb/s sampling with the
        delayed TX clock, at 10/100 with the port's TXC."""
        dut = self.dut
        for p in ("lan", "modem"):
            key = (p, self.speeds[p] == 1000)
            if key not in self.sinks:
                clock = dut.phy_txc if key[1] else getattr(dut, f"{p}_txc")
                sink = RgmiiSink(getattr(dut, f"{p}_txd"), getattr(dut, f"{p}_tx_ctl"), clock, dut.tx_rst)
                sink.mii_mode = not key[1]
                sink.log.setLevel(logging.WARNING)
                self.sinks[key] = sink
            setattr(self, f"{p}_sink", self.sinks[key])
            while not self.sinks[key].empty():           # garbage from another speed
                self.sinks[key].recv_nowait()

    def set_speed(self, p, speed):
        """Port ``p``'s PHY renegotiates: its RXC runs at ``speed``'s rate."""
        self.rx_clocks[p].stop()
        self.speeds[p] = speed
        self._start_rx_clock(p)
        getattr(self, f"{p}_source").mii_mode = speed != 1000
        self._make_sinks()

    async def read_csr(self, addr):
        dut = self.dut
        await RisingEdge(dut.clk)
        dut.csr_addr.value = addr
        dut.csr_r_stb.value = 1
        await RisingEdge(dut.clk)
        dut.csr_r_stb.value = 0
        for _ in range(P.CSR_READ_LATENCY):
            await RisingEdge(dut.clk)
        return int(dut.csr_r_data.value)

    async def write_csr(self, addr, value):
        dut = self.dut
        await RisingEdge(dut.clk)
        dut.csr_addr.value = addr
        dut.csr_w_data.value = value
        dut.csr_w_stb.value = 1
        await RisingEdge(dut.clk)
        dut.csr_w_stb.value = 0

    async def link(self, p):
        """Port ``p``'s ``LINK_FIELDS``, by name."""
        word = await self.read_csr(P.BOARD_REGS[f"{p}_link"])
        return {name: (word >> lsb) & ((1 << bits) - 1) for name, lsb, bits in P.LINK_FIELDS}

    async def _phy_txc(self):
        await Timer(PHY_TXC_DELAY_PS, "ps")
        Clock(self.dut.phy_txc, BYTE_1000_PS, unit="ps").start()

    async def reset(self):
        for rst in self.resets:
            rst.value = 1
        # Each RX domain sees its reset for a few of its own cycles (2.5 MHz
        # at 10 Mb/s: eight system cycles are less than one).
        for p in ("lan", "modem"):
            for _ in range(4):
                await RisingEdge(getattr(self.dut, f"{p}_rx_clk"))
        for _ in range(8):
            await RisingEdge(self.dut.clk)
        for rst in self.resets:
            rst.value = 0
        # The core builds its free list of data cells after a reset (a cell a
        # cycle) and takes no frame meanwhile: a frame the MAC received then
        # would be lost in its FIFO, as on the board in the first 2.6 us.
        for _ in range(16 + P.DATA_CELLS):
            await RisingEdge(self.dut.clk)

    @staticmethod
    async def collect(sink, count, *, timeout_us=500, done=None):
        """Until ``sink`` holds ``count`` frames, or ``done(frames)`` is true
        (then 5 us more, for extras)."""
        frames = []
        for _ in range(timeout_us):
            while not sink.empty():
                frames.append(sink.recv_nowait())
            if (done(frames) if done else len(frames) >= count):
                break
            await Timer(1, "us")
        await Timer(5, "us")
        while not sink.empty():
            frames.append(sink.recv_nowait())
        return frames


def check_frames(frames, name):
    """Payloads of well-formed frames off the pins (preamble, FCS, no tx_er)."""
    out = []
    for n, f in enumerate(frames):
        assert bytes(f.get_preamble()) == b"\x55" * 7 + b"\xd5", f"{name} frame {n}: preamble"
        assert f.check_fcs(), f"{name} frame {n}: bad FCS"
        assert not any(f.error or []), f"{name} frame {n}: tx_er"
        out.append(bytes(f.get_payload()))
    return out


def check_in_order(got, want, name):
    assert len(got) == len(want), f"{name}: {len(got)} frames out, {len(want)} in"
    for n, (g, w) in enumerate(zip(got, want)):
        assert g == pad60(w), f"{name} frame {n} differs:\n{g.hex()}\n{pad60(w).hex()}"


@cocotb.test(**TEST_TIMEOUT)
async def test_uplink_ack_burst_leaves_the_modem_port_unchanged(dut):
    """LAN -> modem: 20 back-to-back pure ACKs of one flow with the output
    running: nothing queues, so all leave, byte-identical and in order."""
    tb = TB(dut)
    await tb.reset()
    acks = [pure_ack(n) for n in range(20)]
    for f in acks:
        tb.lan_source.send_nowait(GmiiFrame.from_payload(f))
    got = check_frames(await TB.collect(tb.modem_sink, len(acks)), "modem")
    check_in_order(got, acks, "ACKs")
    assert tb.lan_sink.empty(), "uplink frames leaked to the LAN port"


@cocotb.test(**TEST_TIMEOUT)
async def test_uplink_data_leaves_unchanged_and_queued_acks_are_filtered(dut):
    """LAN -> modem: 20 pure ACKs of one flow interleaved with TCP data and
    UDP frames (60..1514 bytes). Data: all out, byte-identical, in order.
    ACKs: those out are byte-identical, an in-order subsequence of those
    sent, and include the newest (supersession only replaces older ones);
    and some were filtered: an ACK that waits behind a full-size data frame
    is superseded by the next one (the reset mode, aggressive, supersedes a
    flow's one queued ACK)."""
    tb = TB(dut)
    await tb.reset()
    acks = [pure_ack(n, ack_base=5_000_000) for n in range(20)]
    data = [tcp_data(n, s) for n, s in enumerate([60, 61, 64, 100, 127, 512, 1514])] + \
           [udp_frame(n, s) for n, s in enumerate([60, 77, 128, 1514])]
    sent = []
    for i in range(max(len(acks), len(data))):
        for group in (acks, data):
            if i < len(group):
                sent.append(group[i])
    for f in sent:
        tb.lan_source.send_nowait(GmiiFrame.from_payload(f))
    ack_index = {pad60(a): n for n, a in enumerate(acks)}
    newest = pad60(acks[-1])

    def done(frames):
        payloads = [bytes(f.get_payload()) for f in frames]
        return newest in payloads and sum(p not in ack_index for p in payloads) >= len(data)

    got = check_frames(await TB.collect(tb.modem_sink, 0, done=done), "modem")
    check_in_order([g for g in got if g not in ack_index], data, "data")
    out = [ack_index[g] for g in got if g in ack_index]
    assert out == sorted(set(out)), f"ACKs out of order or repeated: {out}"
    assert out and out[-1] == len(acks) - 1, f"the newest ACK did not leave: {out}"
    dut._log.info("ACKs out: %d of %d (%s)", len(out), len(acks), out)
    assert len(out) < len(acks), "no queued ACK was superseded"
    assert tb.lan_sink.empty(), "uplink frames leaked to the LAN port"


@cocotb.test(**TEST_TIMEOUT)
async def test_downlink_passes_unchanged_while_uplink_is_busy(dut):
    """Modem -> LAN: sizes 60..127, 512, 1514 and ten back-to-back 60s come
    out of the LAN port unchanged and in order, while ACKs and data flow up."""
    tb = TB(dut)
    await tb.reset()
    sizes = list(range(60, 128, 7)) + [512, 1514] + [60] * 10
    down = [udp_frame(n, s, src=MODEM_MAC, dst=LAN_MAC) for n, s in enumerate(sizes)]
    up = [pure_ack(n) for n in range(10)] + [tcp_data(n, 1514) for n in range(4)]
    for f in down:
        tb.modem_source.send_nowait(GmiiFrame.from_payload(f))
    for f in up:
        tb.lan_source.send_nowait(GmiiFrame.from_payload(f))
    got_down = check_frames(await TB.collect(tb.lan_sink, len(down)), "lan")
    check_in_order(got_down, down, "downlink")
    got_up = check_frames(await TB.collect(tb.modem_sink, len(up)), "modem")
    assert sorted(got_up) == sorted(pad60(f) for f in up), "uplink frames differ"


# --------------------------------------------------------------------------
# Mixed speeds

@cocotb.test(timeout_time=60, timeout_unit="ms")
@cocotb.parametrize(speeds=[cocotb.Param((1000, 100), "lan1000_modem100"),
                            cocotb.Param((100, 1000), "lan100_modem1000"),
                            cocotb.Param((10, 100), "lan10_modem100")])
async def test_mixed_speeds_cross_both_ways_and_the_link_registers_read_them(dut, speeds):
    """The LAN and the modem PHY at different speeds, no in-band status:
    after the speed measurement settles, each port's ``*_link`` register
    reads its speed with ``rxc_ok`` and no in-band link, and frames of 60..1514
    bytes (60..512 with a port at 10 Mb/s) cross both ways byte-exact and in
    order."""
    lan, modem = speeds
    tb = TB(dut, lan=lan, modem=modem)
    await tb.reset()
    await Timer(SPEED_SETTLE_PS, "ps")
    for p, speed in (("lan", lan), ("modem", modem)):
        link = await tb.link(p)
        assert (link["speed"], link["rxc_ok"], link["inband_link"]) == (SPEED_CODE[speed], 1, 0), (p, link)
        assert link["speed_changes"] == (0 if speed == 1000 else 1), (p, link)
    # A 1514-byte frame at 10 Mb/s is 1.2 ms of simulated time, half of that
    # case's run; the MAC's own bench sends every size at every speed.
    sizes = [60, 61, 64, 100, 127, 512] + ([1514] if min(lan, modem) >= 100 else [])
    up = [udp_frame(n, s) for n, s in enumerate(sizes)]
    down = [udp_frame(100 + n, s, src=MODEM_MAC, dst=LAN_MAC) for n, s in enumerate(sizes)]
    for f in up:
        tb.lan_source.send_nowait(GmiiFrame.from_payload(f))
    for f in down:
        tb.modem_source.send_nowait(GmiiFrame.from_payload(f))
    slow_us = 2000 * 1000 // min(lan, modem)
    check_in_order(check_frames(await TB.collect(tb.modem_sink, len(up), timeout_us=slow_us), "modem"),
                   up, "uplink")
    check_in_order(check_frames(await TB.collect(tb.lan_sink, len(down), timeout_us=slow_us), "lan"),
                   down, "downlink")


@cocotb.test(timeout_time=60, timeout_unit="ms")
async def test_the_shaper_holds_a_100_mbps_modem_port_to_its_rate(dut):
    """Modem port at 100 Mb/s, LAN at 1000, the shaper set to 50 Mb/s over
    the register bus: 1000-byte frames leave one charge apart (the frame +
    24 bytes at 50 Mb/s: 163.84 us, twice the 81.6 us a frame takes on the
    port), within a few system cycles, never sooner."""
    tb = TB(dut, lan=1000, modem=100)
    await tb.reset()
    await Timer(SPEED_SETTLE_PS, "ps")
    rate = 50_000_000
    cpb = P.cpb_q16_for_rate(rate)
    await tb.write_csr(P.param("shaper_cpb_q16").addr, cpb)
    await tb.write_csr(P.param("shaper_burst_bytes").addr, 0)
    assert await tb.read_csr(P.param("shaper_cpb_q16").addr) == cpb
    frames = [udp_frame(200 + n, 1000) for n in range(6)]
    for f in frames:
        tb.lan_source.send_nowait(GmiiFrame.from_payload(f))
    got = await TB.collect(tb.modem_sink, len(frames), timeout_us=2000)
    check_in_order(check_frames(got, "modem"), frames, "shaped")
    starts_ps = [get_sim_time_ps(f.sim_time_sfd) for f in got]
    gaps_us = [(b - a) / 1e6 for a, b in zip(starts_ps, starts_ps[1:])]
    want_us = (1000 + 24) * 8 / rate * 1e6
    # Each departure's grant waits for whole system cycles and a TX byte slot.
    assert all(want_us - 0.1 <= g <= want_us + 0.5 for g in gaps_us), (gaps_us, want_us)


@cocotb.test(timeout_time=80, timeout_unit="ms")
async def test_a_port_that_renegotiates_mid_traffic_recovers(dut):
    """Traffic both ways at 1000 Mb/s; the modem PHY renegotiates to 100
    (its RXC slows down) while frames flow. Frames caught in the change may
    be lost (counted by the MACs), none is delivered altered, and once the
    new speed is read (``modem_link``: 100, one change) frames cross both
    ways again, byte-exact."""
    tb = TB(dut)
    await tb.reset()
    before = [udp_frame(300 + n, 512) for n in range(10)]
    for f in before:
        tb.lan_source.send_nowait(GmiiFrame.from_payload(f))
        tb.modem_source.send_nowait(GmiiFrame.from_payload(f))
    await Timer(5, "us")
    tb.set_speed("modem", 100)
    await Timer(SPEED_SETTLE_PS, "ps")
    link = await tb.link("modem")
    assert (link["speed"], link["rxc_ok"], link["speed_changes"]) == (SPEED_CODE[100], 1, 1), link
    # What left before and during the change: unaltered, in order (a subsequence).
    for name, sink in (("lan", tb.sinks[("lan", True)]), ("modem", tb.sinks[("modem", True)])):
        payloads = []
        while not sink.empty():
            f = sink.recv_nowait()
            if f.check_fcs():
                payloads.append(bytes(f.get_payload()))
        idx = [before.index(p) for p in payloads if p in before]
        assert idx == sorted(set(idx)), (name, idx)
    await tb.lan_source.wait()
    await tb.modem_source.wait()
    tb.set_speed("modem", 100)        # fresh sinks, the source already at 100
    after_up = [udp_frame(400 + n, s) for n, s in enumerate([60, 300, 1514])]
    after_down = [udp_frame(500 + n, s, src=MODEM_MAC, dst=LAN_MAC) for n, s in enumerate([60, 300, 1514])]
    for f in after_up:
        tb.lan_source.send_nowait(GmiiFrame.from_payload(f))
    for f in after_down:
        tb.modem_source.send_nowait(GmiiFrame.from_payload(f))
    # (Frames sent before the change may still be on their way out: whole.)
    old = {pad60(f) for f in before}
    for name, sink, want in (("modem", tb.modem_sink, after_up), ("lan", tb.lan_sink, after_down)):
        def done(frames, want=want):
            return sum(bytes(f.get_payload()) not in old for f in frames) >= len(want)
        got = check_frames(await TB.collect(sink, 0, timeout_us=3000, done=done), name)
        check_in_order([g for g in got if g not in old], want, f"{name} after")
