"""End to end through the board (``board_top``: BoardDatapath with modelled DDR
pins) against cocotbext-eth's RGMII PHY models on both ports, at 1000 Mb/s.

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

Clocks: system 62.5 MHz, TX 125 MHz, each port's RXC 125 MHz (the two RXCs
and the TX clock are unrelated in phase). The sinks sample with ``phy_txc``,
``tx_clk`` 2 ns late (the B50612D's internal TX clock delay), as in ``tb_mac``.
"""

import logging

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, Timer
from cocotbext.eth import GmiiFrame, RgmiiSink, RgmiiSource
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Padding, Raw

from ackfilter import params as P

#: The system clock period (``params.F_SYS_HZ``: 16 ns).
SYS_PERIOD_PS = round(1e12 / P.F_SYS_HZ)
BYTE_1000_PS = 8_000
#: RXC periods of the two PHYs: a few ps apart so their phases drift.
LAN_RXC_PS, MODEM_RXC_PS = 8_000, 8_002
PHY_TXC_DELAY_PS = 2_000
TEST_TIMEOUT = dict(timeout_time=20, timeout_unit="ms")

LAN_MAC, MODEM_MAC = "02:00:00:00:00:0a", "02:00:00:00:00:0b"


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

    def __init__(self, dut):
        self.dut = dut
        for p in ("lan", "modem"):
            getattr(dut, f"{p}_rxd").value = 0
            getattr(dut, f"{p}_rx_ctl").value = 0
        self.resets = (dut.rst, dut.tx_rst, dut.lan_rx_rst, dut.modem_rx_rst)
        for rst in self.resets:
            rst.value = 1
        cocotb.start_soon(Clock(dut.clk, SYS_PERIOD_PS, unit="ps").start())
        cocotb.start_soon(Clock(dut.tx_clk, BYTE_1000_PS, unit="ps").start())
        cocotb.start_soon(Clock(dut.lan_rx_clk, LAN_RXC_PS, unit="ps").start())
        cocotb.start_soon(Clock(dut.modem_rx_clk, MODEM_RXC_PS, unit="ps").start())
        dut.phy_txc.value = 0
        cocotb.start_soon(self._phy_txc())
        self.lan_source = RgmiiSource(dut.lan_rxd, dut.lan_rx_ctl, dut.lan_rx_clk, dut.lan_rx_rst)
        self.modem_source = RgmiiSource(dut.modem_rxd, dut.modem_rx_ctl, dut.modem_rx_clk, dut.modem_rx_rst)
        self.lan_sink = RgmiiSink(dut.lan_txd, dut.lan_tx_ctl, dut.phy_txc, dut.tx_rst)
        self.modem_sink = RgmiiSink(dut.modem_txd, dut.modem_tx_ctl, dut.phy_txc, dut.tx_rst)
        for model in (self.lan_source, self.modem_source, self.lan_sink, self.modem_sink):
            model.log.setLevel(logging.WARNING)

    async def _phy_txc(self):
        await Timer(PHY_TXC_DELAY_PS, "ps")
        Clock(self.dut.phy_txc, BYTE_1000_PS, unit="ps").start()

    async def reset(self):
        for rst in self.resets:
            rst.value = 1
        for _ in range(8):
            await RisingEdge(self.dut.clk)
        for rst in self.resets:
            rst.value = 0
        for _ in range(16):
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
    sent, and include the newest (supersession only replaces older ones)."""
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
