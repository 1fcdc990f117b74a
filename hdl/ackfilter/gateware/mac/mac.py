"""One Ethernet port: RGMII converters, receive and transmit paths, clock crossings."""

from amaranth.hdl import *
from amaranth.lib import cdc, wiring
from amaranth.lib.wiring import In, Out

from ..lib.stream import FrameStream
from .rgmii import RGMIIPinSignature, RGMIIRxConverter, RGMIITxConverter
from .rx import DEFAULT_MAX_FRAME_BYTES, MACRx
from .speed import SPEED_1000, RxClockSpeed
from .tx import MACTx

__all__ = ["EthernetMAC"]


class EthernetMAC(wiring.Component):
    """A 10/100/1000 Mb/s Ethernet MAC on plain RGMII-side signals.

    The frame streams and status are in ``sync`` (the system domain); the
    RGMII side is in the two PHY-side domains, which the user creates and
    names:

    * ``rx_domain``: clocked by the PHY's ``rxc`` (125 or 25 MHz), e.g.
      ``RGMIIPads.rx_clk``; its reset should be synchronised to it.
    * ``tx_domain``: a local 125 MHz clock at both speeds.

    Between them and ``sync`` everything crosses through async FIFOs,
    ``FFSynchronizer`` or ``PulseSynchronizer``. On hardware the RGMII-side
    ports connect to :class:`~ackfilter.gateware.mac.rgmii.RGMIIPads`; simulators drive
    them directly.

    Parameters
    ----------
    rx_domain, tx_domain : str
        Names of the PHY receive and the transmit clock domains.
    max_frame_bytes : int
        Longest frame without FCS received or sent (default 1536: QinQ-tagged
        1500-byte payloads). Longer ones are dropped and counted.
    rx_fifo_words, tx_fifo_words : int
        Async FIFO depths in 32-bit words (powers of 2, at least two maximum
        frames; 1024 = two ECP5 EBRs each).

    Ports
    -----
    rxd_rise, rxd_fall, rx_ctl_rise, rx_ctl_fall : In, ``rx_domain``
        RX nibbles and ``ctl`` of a rising edge of ``rxc`` and the falling
        edge after it (``IDDRX1F`` ``Q0``/``Q1``).
    txd_rise, txd_fall, tx_ctl_rise, tx_ctl_fall, txc_rise, txc_fall : Out, ``tx_domain``
        What the DDR outputs drive after the rising and the falling edge.
    speed : In(2), ``sync``
        The speed to run at (``SPEED_10``, ``SPEED_100``, ``SPEED_1000``:
        :mod:`~ackfilter.gateware.mac.speed`), usually ``rxc_speed``. A
        change mid-frame costs the frame in flight each way (received: it
        fails its FCS and is counted; sent: it finishes at the speed it
        started with, which the PHY garbles) and nothing else.
    rxc_speed, rxc_ok, speed_changed : Out, ``sync``
        The speed the PHY's RXC runs at (:class:`~ackfilter.gateware.mac.speed.RxClockSpeed`),
        whether RXC ran in the last measurement, and a strobe when
        ``rxc_speed`` changes.
    rx : Out(FrameStream), ``sync``
        Received frames with a good FCS, without preamble and FCS
        (``docs/spec.md`` section 1), each once entirely received.
    tx : In(FrameStream), ``sync``
        Frames to send, without FCS; padded to 60 bytes here.
    link_up, link_speed, full_duplex : Out, ``sync``
        RGMII in-band status of the PHY (``link_speed``: 0 = 10, 1 = 100,
        2 = 1000 Mb/s); meaningful only if the PHY sends it.
    rx_frames, rx_crc_errors, rx_runts, rx_oversize, rx_phy_errors, rx_overflows : Out(1), ``sync``
        One strobe per received frame: delivered, or why it was dropped.
    tx_frames, tx_oversize : Out(1), ``sync``
        One strobe per frame taken from ``tx``: queued for sending, or dropped
        as longer than ``max_frame_bytes``.
    """

    RX_STROBE_PORTS = {"frame_ok": "rx_frames", "crc_error": "rx_crc_errors", "runt": "rx_runts",
                       "oversize": "rx_oversize", "phy_error": "rx_phy_errors",
                       "overflow": "rx_overflows"}
    TX_STROBE_PORTS = {"frame_ok": "tx_frames", "oversize": "tx_oversize"}

    def __init__(self, *, rx_domain="rx", tx_domain="tx", max_frame_bytes=DEFAULT_MAX_FRAME_BYTES,
                 rx_fifo_words=1024, tx_fifo_words=1024):
        for name, value in (("rx_domain", rx_domain), ("tx_domain", tx_domain)):
            if not isinstance(value, str) or value == "sync":
                raise TypeError(f"{name} must be a domain name other than 'sync', not {value!r}")
        if rx_domain == tx_domain:
            raise TypeError(f"rx_domain and tx_domain must differ, not both {rx_domain!r}")
        self._rx_domain = rx_domain
        self._tx_domain = tx_domain
        MACRx.check_params(max_frame_bytes=max_frame_bytes, fifo_words=rx_fifo_words)
        MACTx.check_params(max_frame_bytes=max_frame_bytes, fifo_words=tx_fifo_words)
        self._max_frame_bytes = max_frame_bytes
        self._rx_fifo_words = rx_fifo_words
        self._tx_fifo_words = tx_fifo_words
        super().__init__({
            **RGMIIPinSignature.members,
            "speed":       In(2, init=SPEED_1000),
            "rxc_speed":   Out(2, init=SPEED_1000),
            "rxc_ok":      Out(1),
            "speed_changed": Out(1),
            "rx":          Out(FrameStream()),
            "tx":          In(FrameStream()),
            "link_up":     Out(1),
            "link_speed":  Out(2),
            "full_duplex": Out(1),
            **{port: Out(1) for port in self.RX_STROBE_PORTS.values()},
            **{port: Out(1) for port in self.TX_STROBE_PORTS.values()},
        })

    def elaborate(self, platform):
        m = Module()
        rx, tx = self._rx_domain, self._tx_domain
        m.submodules.rx_conv = rx_conv = DomainRenamer(rx)(RGMIIRxConverter())
        m.submodules.tx_conv = tx_conv = DomainRenamer(tx)(RGMIITxConverter())
        m.submodules.rx_path = rx_path = MACRx(
            rx_domain=rx, max_frame_bytes=self._max_frame_bytes, fifo_words=self._rx_fifo_words)
        m.submodules.tx_path = tx_path = MACTx(
            tx_domain=tx, max_frame_bytes=self._max_frame_bytes, fifo_words=self._tx_fifo_words)

        # The speed of the PHY's RXC.
        m.submodules.rxc_speed = rxc = RxClockSpeed(rx_domain=rx)
        m.d.comb += [self.rxc_speed.eq(rxc.speed), self.rxc_ok.eq(rxc.rxc_ok),
                     self.speed_changed.eq(rxc.changed)]

        # The speed into both PHY-side domains (quasi-static). Its two bits
        # may cross a cycle apart: the transmitter takes a value only once
        # two cycles agree on it.
        m.submodules.speed_rx_cdc = cdc.FFSynchronizer(self.speed == SPEED_1000, rx_conv.speed_1000,
                                                       o_domain=rx, init=1)
        speed_tx_sync, speed_tx_prev = Signal(2, init=SPEED_1000), Signal(2, init=SPEED_1000)
        m.submodules.speed_tx_cdc = cdc.FFSynchronizer(self.speed, speed_tx_sync, o_domain=tx,
                                                       init=SPEED_1000)
        m.d[tx] += speed_tx_prev.eq(speed_tx_sync)
        with m.If(speed_tx_sync == speed_tx_prev):
            m.d[tx] += tx_path.speed.eq(speed_tx_sync)

        # The RX converter sits by the pads, the framer by its FIFO's block
        # RAM, which may be the chip's width away: the beats cross through
        # two registers (no reset), which the placer spreads along the way.
        rx_beats = [Signal(11, name=f"rx_beats{i}", reset_less=True) for i in range(2)]
        m.d[rx] += [rx_beats[0].eq(Cat(rx_conv.valid, rx_conv.data, rx_conv.dv, rx_conv.er)),
                    rx_beats[1].eq(rx_beats[0])]

        # The converter sits by the pads, the transmit path by its FIFO, which
        # may be the chip's width away: its bytes (with their strobe) cross
        # through two registers, which the placer spreads along the way.
        tx_bytes = [Signal(13, name=f"tx_bytes{i}", reset_less=True) for i in range(2)]
        m.d[tx] += [tx_bytes[0].eq(Cat(tx_path.data, tx_path.en, tx_path.er, tx_path.stb,
                                       tx_path.speed_out)),
                    tx_bytes[1].eq(tx_bytes[0])]
        m.d.comb += [
            rx_conv.rxd_rise.eq(self.rxd_rise), rx_conv.rxd_fall.eq(self.rxd_fall),
            rx_conv.rx_ctl_rise.eq(self.rx_ctl_rise), rx_conv.rx_ctl_fall.eq(self.rx_ctl_fall),
            Cat(rx_path.valid, rx_path.data, rx_path.dv, rx_path.er).eq(rx_beats[-1]),

            Cat(tx_conv.data, tx_conv.en, tx_conv.er, tx_conv.stb, tx_conv.speed).eq(tx_bytes[1]),
            self.txd_rise.eq(tx_conv.txd_rise), self.txd_fall.eq(tx_conv.txd_fall),
            self.tx_ctl_rise.eq(tx_conv.tx_ctl_rise), self.tx_ctl_fall.eq(tx_conv.tx_ctl_fall),
            self.txc_rise.eq(tx_conv.txc_rise), self.txc_fall.eq(tx_conv.txc_fall),
        ]
        wiring.connect(m, rx_path.o, wiring.flipped(self.rx))
        wiring.connect(m, wiring.flipped(self.tx), tx_path.i)

        # In-band status: quasi-static bits, each synchronised on its own.
        for name, src, dst in (("link_up", rx_conv.link_up, self.link_up),
                               ("link_speed", rx_conv.speed, self.link_speed),
                               ("full_duplex", rx_conv.full_duplex, self.full_duplex)):
            m.submodules[f"{name}_cdc"] = cdc.FFSynchronizer(src, dst, o_domain="sync")

        for inner, port in self.RX_STROBE_PORTS.items():
            m.d.comb += getattr(self, port).eq(getattr(rx_path, inner))
        for inner, port in self.TX_STROBE_PORTS.items():
            m.d.comb += getattr(self, port).eq(getattr(tx_path, inner))
        return m
