"""One Ethernet MAC (``mac_top``: EthernetMAC with modelled DDR pins) against
cocotbext-eth's RGMII PHY models.

* RX: ``RgmiiSource`` sends Scapy-built frames (with preamble and FCS) on the
  RGMII receive pins; the system-side stream must carry exactly the good
  frames without FCS, in order, obeying ``docs/spec.md`` section 1, and the
  counter strobes must account for every frame.
* TX: the system-side stream sends frames; ``RgmiiSink`` must see preamble,
  SFD, the frame padded to 60 bytes, a correct FCS and 12-byte gaps.

Clocks: system 50 MHz; RX ``rxc`` 125, 25 or 2.5 MHz (1000, 100, 10 Mb/s),
TX 125 MHz, each optionally off by +-100 ppm (1 fs simulator precision).
At 1000 Mb/s the sink samples the TX pins with ``tx_clk`` delayed by 2 ns
(``phy_txc``), as the B50612D does with its internal TX clock delay; at
10 and 100 Mb/s with the modelled 2.5 or 25 MHz ``txc`` itself (its edges
lie inside the data eye). The MAC runs at the speed its RXC measures
(``rxc_speed``), as the board top runs it. cocotbext-eth's frame times are in simulator steps (fs here).
"""

import itertools
import logging

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, Timer
from cocotb.utils import get_time_from_sim_steps
from cocotbext.eth import GmiiFrame, RgmiiSink, RgmiiSource
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from ackfilter import params as P
from ackfilter.gateware.mac.sim_top import STROBES

#: The system clock period (``params.F_SYS_HZ``: 20 ns).
SYS_PERIOD_PS = round(1e12 / P.F_SYS_HZ)
#: Byte period at 1000 Mb/s, and the RX clock period at each speed (a
#: nibble a cycle at 10 and 100 Mb/s).
BYTE_1000_PS = 8_000
RXC_PS = {1000: 8_000, 100: 40_000, 10: 400_000}
#: The MAC's speed codes (``gateware.mac.speed``).
SPEED_CODE = {10: 0, 100: 1, 1000: 2}
#: Preamble + SFD, FCS, minimum inter-frame gap (IEEE 802.3 clauses 3 and 4).
PREAMBLE_BYTES, FCS_BYTES, IFG_BYTES = 8, 4, 12
#: The B50612D's internal TX clock delay (RGMII v2.0 "RGMII-ID").
PHY_TXC_DELAY_PS = 2_000
SIZES = list(range(60, 128)) + [512, 1514] + [60] * 10
TEST_TIMEOUT = dict(timeout_time=50, timeout_unit="ms")


def named(*values):
    return [cocotb.Param(v, name=str(v)) for v in values]


#: (speed, clock offset in ppm) of the frame-size benches: every speed at the
#: nominal clock, and 100 ppm either way at 1000 and 100 Mb/s, where words
#: cross to the system clock 100 and 10 times as often as at 10 Mb/s and the
#: clock-domain crossing has the least slack.
SPEED_PPM = [(1000, 0), (1000, 100), (1000, -100), (100, 0), (100, 100), (100, -100), (10, 0)]


def ppm_period(period_ps, ppm):
    """A clock period ``ppm`` parts per million slower (> 0) or faster."""
    return period_ps * (1 + ppm * 1e-6)


def frame(size, n, *, dst="02:00:00:00:00:01"):
    """An Ethernet II / IPv4 / UDP frame of exactly ``size`` bytes (without
    FCS; at least 42), unique by ``n``."""
    hdr = Ether(dst=dst, src="02:11:%02x:%02x:%02x:%02x" % tuple(n.to_bytes(4, "big"))) / \
        IP(src="192.168.1.2", dst="198.51.100.7", id=n & 0xFFFF) / UDP(sport=40000, dport=9)
    pay = bytes((n + i) & 0xFF for i in range(size - len(hdr)))
    raw = bytes(hdr / Raw(pay))
    assert len(raw) == size, (len(raw), size)
    return raw


def ps(steps):
    """Simulator steps (cocotbext-eth's frame times) in picoseconds."""
    return get_time_from_sim_steps(steps, "ps")


def words_of(data):
    """(data, keep, first, last) per 32-bit word, lane 0 first (spec section 1)."""
    out = []
    for i in range(0, len(data), 4):
        chunk = data[i:i + 4]
        out.append((int.from_bytes(chunk.ljust(4, b"\0"), "little"), (1 << len(chunk)) - 1,
                    i == 0, i + 4 >= len(data)))
    return out


class TB:
    """Clocks, resets, the RGMII PHY models and one per-cycle coroutine for
    the system side (RX stream monitor, TX stream driver, strobe counters)."""

    def __init__(self, dut, *, speed=1000, rx_ppm=0, tx_ppm=0, with_source=True,
                 rx_ready=None, tx_idle=None):
        self.dut = dut
        self.speed = speed
        self.rx_ready_pattern = rx_ready or itertools.repeat(1)
        self.tx_idle_pattern = tx_idle or itertools.repeat(0)
        self.received = []             # frames from the rx stream
        self.rx_violations = []        # spec section 1 violations seen
        self.tx_queue = []             # frames to send on the tx stream
        self.tx_done = 0
        self.strobes = dict.fromkeys(STROBES, 0)

        self.rx_period_ps = ppm_period(RXC_PS[speed], rx_ppm)
        self.tx_period_ps = ppm_period(BYTE_1000_PS, tx_ppm)
        self.tx_byte_ps = self.tx_period_ps * (1000 // speed)

        dut.speed.value = SPEED_CODE[speed]
        dut.rx_ready.value = 0
        dut.tx_valid.value = 0
        dut.rgmii_rxd.value = 0
        dut.rgmii_rx_ctl.value = 0
        for rst in (dut.rst, dut.rx_rst, dut.tx_rst):
            rst.value = 1
        cocotb.start_soon(Clock(dut.clk, SYS_PERIOD_PS, unit="ps").start())
        self.rx_clock = Clock(dut.rx_clk, self.rx_period_ps, unit="ps")
        self.rx_clock.start()
        cocotb.start_soon(Clock(dut.tx_clk, self.tx_period_ps, unit="ps").start())

        self.source = None
        if with_source:
            self.source = RgmiiSource(dut.rgmii_rxd, dut.rgmii_rx_ctl, dut.rx_clk, dut.rx_rst)
            self.source.mii_mode = speed != 1000
        dut.phy_txc.value = 0
        if speed == 1000:
            cocotb.start_soon(self._phy_txc(self.tx_period_ps))
        self.sink = RgmiiSink(dut.rgmii_txd, dut.rgmii_tx_ctl,
                              dut.phy_txc if speed == 1000 else dut.rgmii_txc, dut.tx_rst)
        self.sink.mii_mode = speed != 1000
        for model in (self.source, self.sink):
            if model is not None:
                model.log.setLevel(logging.WARNING)   # one line a frame otherwise
        self.edge = RisingEdge(dut.clk)

    async def _phy_txc(self, period_ps):
        await Timer(PHY_TXC_DELAY_PS, "ps")
        Clock(self.dut.phy_txc, period_ps, unit="ps").start()

    async def reset(self):
        dut = self.dut
        for rst in (dut.rst, dut.rx_rst, dut.tx_rst):
            rst.value = 1
        # Every domain sees its reset for a few of its own cycles (the RX
        # clock at 10 Mb/s is 2.5 MHz: eight system cycles are less than one).
        for _ in range(4):
            await RisingEdge(dut.rx_clk)
        for _ in range(8):
            await self.edge
        for rst in (dut.rst, dut.rx_rst, dut.tx_rst):
            rst.value = 0
        for _ in range(8):
            await self.edge
        cocotb.start_soon(self._every_cycle())

    async def _every_cycle(self):
        dut = self.dut
        edge = self.edge
        rx_valid, rx_ready, rx_data, rx_keep = dut.rx_valid, dut.rx_ready, dut.rx_data, dut.rx_keep
        rx_first, rx_last = dut.rx_first, dut.rx_last
        tx_valid, tx_ready = dut.tx_valid, dut.tx_ready
        strobe_handles = [(name, getattr(dut, name)) for name in STROBES]
        strobes = self.strobes
        cur, n_word = bytearray(), 0
        tx_words, tx_i = [], 0
        ready = next(self.rx_ready_pattern)
        rx_ready.value = ready
        while True:
            # Values read at the edge are those the design sampled at it.
            await edge
            for name, h in strobe_handles:
                if h.value:
                    strobes[name] += 1
            if ready and rx_valid.value:
                keep = int(rx_keep.value)
                last = bool(rx_last.value)
                first = bool(rx_first.value)
                if keep not in (1, 3, 7, 15) or (keep != 15 and not last):
                    self.rx_violations.append(f"word {n_word}: keep {keep:04b}, last {last}")
                if first != (n_word == 0):
                    self.rx_violations.append(f"word {n_word}: first {first}")
                cur += int(rx_data.value).to_bytes(4, "little")[:bin(keep).count("1")]
                n_word += 1
                if last:
                    self.received.append(bytes(cur))
                    cur, n_word = bytearray(), 0
            ready = next(self.rx_ready_pattern)
            rx_ready.value = ready

            # TX stream driver.
            if tx_valid.value and tx_ready.value:
                tx_i += 1
                if tx_i == len(tx_words):
                    tx_words, tx_i = [], 0
                    self.tx_done += 1
            if not tx_words and self.tx_queue:
                tx_words, tx_i = words_of(self.tx_queue.pop(0)), 0
            if tx_words and not next(self.tx_idle_pattern):
                data, keep, first, last = tx_words[tx_i]
                dut.tx_data.value = data
                dut.tx_keep.value = keep
                dut.tx_first.value = first
                dut.tx_last.value = last
                tx_valid.value = 1
            else:
                tx_valid.value = 0

    def set_rx_clock(self, period_ps):
        """The PHY's RXC changes (a new link speed), or stops (``None``)."""
        self.rx_clock.stop()
        if period_ps is not None:
            self.rx_clock = Clock(self.dut.rx_clk, period_ps, unit="ps")
            self.rx_clock.start()

    async def cycles(self, n):
        for _ in range(n):
            await self.edge

    async def wait_rx(self, count, *, timeout_us=20_000):
        """Until ``count`` frames were received on the rx stream."""
        step_ns = 1000
        for _ in range(timeout_us):
            if len(self.received) >= count:
                return
            await Timer(step_ns, "ns")
        raise AssertionError(f"only {len(self.received)} of {count} frames received; strobes {self.strobes}")

    async def wait_tx(self, count, *, timeout_us=20_000):
        """Until the sink holds ``count`` frames; returns them."""
        frames = []
        for _ in range(timeout_us):
            while not self.sink.empty():
                frames.append(self.sink.recv_nowait())
            if len(frames) >= count:
                return frames
            await Timer(1000, "ns")
        raise AssertionError(f"only {len(frames)} of {count} frames left the TX pins")

    async def settle(self, us=5):
        await Timer(us * 1000, "ns")

    def check_rx(self, expected):
        assert not self.rx_violations, self.rx_violations[:10]
        assert len(self.received) == len(expected), (len(self.received), len(expected))
        for n, (got, want) in enumerate(zip(self.received, expected)):
            assert got == want, f"frame {n}: {len(got)} bytes, want {len(want)}:\n{got.hex()}\n{want.hex()}"

    def check_tx(self, frames, sent, *, back_to_back=True):
        """Every frame on the pins: preamble, SFD, payload padded to 60, FCS,
        no error; with ``back_to_back`` each starts exactly when the previous
        one plus a 12-byte gap ends."""
        assert len(frames) == len(sent), (len(frames), len(sent))
        for n, (f, want) in enumerate(zip(frames, sent)):
            assert bytes(f.get_preamble()) == b"\x55" * 7 + b"\xd5", f"frame {n}: preamble {f.get_preamble().hex()}"
            assert f.check_fcs(), f"frame {n}: bad FCS"
            assert bytes(f.get_payload()) == want.ljust(60, b"\0"), f"frame {n}: payload differs"
            assert not any(f.error or []), f"frame {n}: tx_er"
        for n in range(1, len(frames)):
            gap_bytes = ps(frames[n].sim_time_start - frames[n - 1].sim_time_end) / self.tx_byte_ps
            prev_bytes = len(frames[n - 1].data)
            assert gap_bytes >= IFG_BYTES - 0.01, f"frame {n}: gap of {gap_bytes:.2f} byte times"
            if back_to_back:
                period = ps(frames[n].sim_time_start - frames[n - 1].sim_time_start) / self.tx_byte_ps
                assert abs(period - (prev_bytes + IFG_BYTES)) < 0.01, \
                    f"frame {n}: starts {period:.2f} byte times after a {prev_bytes}-byte frame"

    def check_strobes(self, **expected):
        want = dict.fromkeys(STROBES, 0)
        want.update(expected)
        assert self.strobes == want, f"strobes {self.strobes}, want {want}"


def frames_for(sizes, base=0):
    return [frame(s, base + i) for i, s in enumerate(sizes)]


# --------------------------------------------------------------------------
# RX

@cocotb.test(**TEST_TIMEOUT)
@cocotb.parametrize((("speed", "rx_ppm"), SPEED_PPM))
async def test_rx_frame_sizes_arrive_intact_without_fcs(dut, speed, rx_ppm):
    """Sizes 60..127, 512, 1514 and ten back-to-back 60s at line rate, with
    the system side taking 3 words of 4: all delivered, in order, spec-conform."""
    tb = TB(dut, speed=speed, rx_ppm=rx_ppm, rx_ready=itertools.cycle([1, 1, 1, 0]))
    await tb.reset()
    frames = frames_for(SIZES)
    for f in frames:
        await tb.source.send(GmiiFrame.from_payload(f))
    await tb.wait_rx(len(frames))
    await tb.settle()
    tb.check_rx(frames)
    tb.check_strobes(rx_frames=len(frames))


@cocotb.test(**TEST_TIMEOUT)
@cocotb.parametrize(speed=named(1000, 100, 10))
async def test_rx_crc_errors_runts_rx_er_and_oversize_are_dropped_and_counted(dut, speed):
    """Bad frames in between good ones: only the good ones arrive, each bad
    one is counted once under its reason."""
    tb = TB(dut, speed=speed)
    await tb.reset()
    good = frames_for([60, 64, 100, 1514, 61, 60], base=100)
    bad_fcs = frame(100, 7)
    runt = frame(59, 8)[:50]            # 50 bytes + FCS = 54 < 64
    tiny = bytes(3)                     # 3 bytes + FCS: nothing reaches the FIFO
    errored = GmiiFrame.from_payload(frame(80, 9))
    errored.error = [0] * len(errored.data)
    errored.error[30] = 1
    oversize = frame(1537, 10)          # > max_frame_bytes (1536)
    runt_bad_fcs = frame(59, 11)[:40]

    seq = [
        GmiiFrame.from_payload(good[0]),
        GmiiFrame.from_raw_payload(bad_fcs + bytes(4)),
        GmiiFrame.from_payload(good[1]),
        GmiiFrame.from_payload(runt, min_len=0),
        GmiiFrame.from_payload(tiny, min_len=0),
        GmiiFrame.from_payload(good[2]),
        errored,
        GmiiFrame.from_payload(good[3]),
        GmiiFrame.from_payload(oversize),
        GmiiFrame.from_payload(good[4]),
        GmiiFrame.from_raw_payload(runt_bad_fcs + b"\x12\x34\x56\x78"),
        GmiiFrame.from_payload(good[5]),
    ]
    for f in seq:
        await tb.source.send(f)
    await tb.wait_rx(len(good))
    await tb.settle(20)
    tb.check_rx(good)
    tb.check_strobes(rx_frames=len(good), rx_crc_errors=1, rx_runts=3, rx_phy_errors=1, rx_oversize=1)


@cocotb.test(**TEST_TIMEOUT)
async def test_rx_stalled_system_side_drops_whole_frames_and_counts_overflows(dut):
    """With the rx stream stalled, the FIFO fills: later frames are dropped
    whole and counted; once it flows again, every frame counted as delivered
    arrives intact and in order."""
    ready = [0]
    tb = TB(dut, rx_ready=iter(lambda: ready[0], None))
    await tb.reset()
    frames = frames_for([1514] * 6 + [60] * 4, base=200)
    for f in frames:
        await tb.source.send(GmiiFrame.from_payload(f))
    await tb.source.wait()
    await tb.settle(2)
    ready[0] = 1
    await tb.settle(40)
    delivered = tb.strobes["rx_frames"]
    assert tb.strobes["rx_overflows"] > 0, tb.strobes
    assert delivered + tb.strobes["rx_overflows"] == len(frames), tb.strobes
    # A 1024-word FIFO takes two maximum frames: the first two 1514s arrive.
    assert tb.received[:2] == frames[:2]
    it = iter(frames)
    assert all(any(r == f for f in it) for r in tb.received), "frames out of order or altered"
    assert len(tb.received) == delivered
    assert not tb.rx_violations


#: A speed measurement (RxClockSpeed: 2^12 system cycles) in ps, and the
#: longest a new speed takes to show: the window it starts in, two more
#: that agree (hysteresis), the synchronizer.
WINDOW_PS = 4096 * SYS_PERIOD_PS
SPEED_SETTLE_PS = 3 * WINDOW_PS + 10 * SYS_PERIOD_PS


@cocotb.test(**TEST_TIMEOUT)
async def test_the_speed_is_measured_from_rxc_and_a_change_mid_traffic_recovers(dut):
    """The link renegotiates 1000 -> 100 -> 10 -> 1000 while frames flow,
    the MAC following its RXC (``speed`` = ``rxc_speed``, as the board runs
    it). At each change the PHY cuts the frame it is receiving (it arrives
    short, with a bad FCS: dropped and counted) and a long frame is being
    sent: it finishes at the speed it started with, intact. RXC at 125, 25
    and 2.5 MHz reads as 1000, 100 and 10 Mb/s within three measurement
    windows, one ``speed_changed`` strobe each; then frames cross both ways
    intact at the new speed. A stopped RXC clears ``rxc_ok`` and keeps the
    speed."""
    tb = TB(dut, speed=1000)
    await tb.reset()
    changes = []

    async def follow():
        strobed = False
        while True:
            await tb.edge
            if strobed:                 # `rxc_speed` is the new one from the cycle after
                changes.append(int(dut.rxc_speed.value))
            strobed = bool(dut.speed_changed.value)
            dut.speed.value = dut.rxc_speed.value
    cocotb.start_soon(follow())
    await Timer(SPEED_SETTLE_PS, "ps")
    assert (int(dut.rxc_speed.value), int(dut.rxc_ok.value)) == (SPEED_CODE[1000], 1)
    assert changes == []
    # One sink per clock the PHY samples with: the delayed 125 MHz at 1000,
    # the MAC's TXC at 10 and 100 (each also sees garbage at the other speeds).
    sinks = {1000: tb.sink, "mii": RgmiiSink(dut.rgmii_txd, dut.rgmii_tx_ctl, dut.rgmii_txc, dut.tx_rst)}
    sinks["mii"].mii_mode = True
    sinks["mii"].log.setLevel(logging.WARNING)

    def sink_for(speed):
        return sinks[1000 if speed == 1000 else "mii"]

    def drain(sink):
        while not sink.empty():
            sink.recv_nowait()

    async def frames_from(sink, count, *, timeout_us=20_000):
        got = []
        for _ in range(timeout_us):
            while not sink.empty():
                got.append(sink.recv_nowait())
            if len(got) >= count:
                return got
            await Timer(1000, "ns")
        raise AssertionError(f"only {len(got)} of {count} frames left the TX pins")

    cut_frames = 0
    for n, speed in enumerate((100, 10, 1000)):
        old = tb.speed
        # The PHY cuts the frame it receives (renegotiation), and a long
        # frame is on its way out when RXC changes.
        drain(sink_for(old))
        long_tx = frame(1514, 3000 + n)
        tb.tx_queue.append(long_tx)
        await Timer(20 * RXC_PS[old], "ps")
        cut = frame(300, 900 + n)
        await tb.source.send(GmiiFrame.from_raw_payload(cut[:150]))
        await tb.source.wait()
        cut_frames += 1
        tb.set_rx_clock(RXC_PS[speed])
        tb.source.mii_mode = speed != 1000
        draining = await frames_from(sink_for(old), 1)
        assert bytes(draining[0].get_payload()) == long_tx and draining[0].check_fcs(), (old, speed)
        await Timer(SPEED_SETTLE_PS, "ps")
        assert (int(dut.rxc_speed.value), int(dut.rxc_ok.value)) == (SPEED_CODE[speed], 1), speed
        assert changes == [SPEED_CODE[s] for s in (100, 10, 1000)[:n + 1]], changes
        tb.speed = speed
        drain(sink_for(speed))
        before_rx = len(tb.received)
        rx_frames = frames_for([60, 300, 61], base=1000 + 10 * n)
        tx_frames = frames_for([64, 200], base=2000 + 10 * n)
        tb.tx_queue.extend(tx_frames)
        for f in rx_frames:
            await tb.source.send(GmiiFrame.from_payload(f))
        got = await frames_from(sink_for(speed), len(tx_frames))
        await tb.wait_rx(before_rx + len(rx_frames))
        assert tb.received[before_rx:] == rx_frames, speed
        assert [bytes(g.get_payload()) for g in got] == tx_frames, speed
        assert all(g.check_fcs() for g in got), speed
    # Every cut frame was counted, none delivered.
    assert tb.strobes["rx_crc_errors"] == cut_frames, tb.strobes
    assert tb.strobes["rx_frames"] == len(tb.received) == 3 * 3
    assert not tb.rx_violations
    tb.set_rx_clock(None)
    await Timer(SPEED_SETTLE_PS, "ps")
    assert (int(dut.rxc_speed.value), int(dut.rxc_ok.value)) == (SPEED_CODE[1000], 0)
    assert len(changes) == 3


@cocotb.test(**TEST_TIMEOUT)
async def test_in_band_link_status_is_decoded_between_frames(dut):
    tb = TB(dut, with_source=False)
    await tb.reset()
    # RGMII v2.0: rxd[0] link, rxd[2:1] speed (2 = 1000 Mb/s), rxd[3] full duplex.
    dut.rgmii_rxd.value = 0b1101
    await tb.cycles(10)
    assert (int(dut.link_up.value), int(dut.link_speed.value), int(dut.full_duplex.value)) == (1, 2, 1)
    dut.rgmii_rxd.value = 0b0010
    await tb.cycles(10)
    assert (int(dut.link_up.value), int(dut.link_speed.value), int(dut.full_duplex.value)) == (0, 1, 0)


# --------------------------------------------------------------------------
# TX

@cocotb.test(**TEST_TIMEOUT)
@cocotb.parametrize((("speed", "tx_ppm"), SPEED_PPM))
async def test_tx_frames_leave_with_preamble_padding_fcs_and_12_byte_gaps(dut, speed, tx_ppm):
    """Sizes 1..59 (padded), 60..127, 512, 1514 and ten 60s, offered with idle
    cycles: each leaves intact, back to back with exactly 12-byte gaps."""
    tb = TB(dut, speed=speed, tx_ppm=tx_ppm, tx_idle=itertools.cycle([0, 0, 0, 1]))
    await tb.reset()
    sizes = [1, 2, 3, 4, 5, 14, 42, 59] + SIZES
    sent = [frame(s, 300 + i) if s >= 42 else bytes(range(s)) for i, s in enumerate(sizes)]
    tb.tx_queue.extend(sent)
    got = await tb.wait_tx(len(sent))
    await tb.settle(2)
    tb.check_tx(got, sent)
    assert tb.sink.empty()
    tb.check_strobes(tx_frames=len(sent))


@cocotb.test(**TEST_TIMEOUT)
async def test_tx_oversize_frames_are_dropped_and_counted(dut):
    tb = TB(dut)
    await tb.reset()
    sent = [frame(100, 1), frame(1537, 2), frame(1536, 3), frame(4000, 4), frame(60, 5)]
    tb.tx_queue.extend(sent)
    want = [sent[0], sent[2], sent[4]]
    got = await tb.wait_tx(len(want))
    await tb.settle(5)
    assert tb.sink.empty()
    tb.check_tx(got, want, back_to_back=False)
    tb.check_strobes(tx_frames=3, tx_oversize=2)


# --------------------------------------------------------------------------
# Both directions

@cocotb.test(**TEST_TIMEOUT)
@cocotb.parametrize(ppm=named(0, 100, -100))
async def test_back_to_back_min_frames_both_directions_at_once_lose_nothing(dut, ppm):
    """300 minimum frames each way at the same time at 1 Gb/s: RX at line
    rate with its clock ``ppm`` off, TX with its clock off the other way;
    nothing lost, TX exactly at line rate (84 byte times a frame)."""
    tb = TB(dut, rx_ppm=ppm, tx_ppm=-ppm)
    await tb.reset()
    n = 300
    rx_frames = frames_for([60] * n, base=1000)
    tx_frames = frames_for([60] * n, base=5000)
    tb.tx_queue.extend(tx_frames)
    for f in rx_frames:
        tb.source.send_nowait(GmiiFrame.from_payload(f))
    got = await tb.wait_tx(n)
    await tb.wait_rx(n)
    await tb.settle(2)
    tb.check_rx(rx_frames)
    tb.check_tx(got, tx_frames)
    sfd_period_ps = [(b.sim_time_sfd - a.sim_time_sfd) for a, b in zip(got, got[1:])]
    assert max(sfd_period_ps) == min(sfd_period_ps), (min(sfd_period_ps), max(sfd_period_ps))
    tb.check_strobes(rx_frames=n, tx_frames=n)
