"""Ethernet transmit path: frame stream (system clock) -> GMII bytes (TX clock).

Two blocks:

* :class:`TxFramer`, in the 125 MHz TX domain: per frame sends 7 preamble
  bytes and the SFD, the frame's bytes, zero padding up to 60 bytes, the FCS
  and at least 12 idle byte times (IEEE 802.3 clauses 3.2 and 4.4.2). It
  moves one byte time per ``stb`` of the RGMII converter (every cycle at
  1000 Mb/s, every tenth at 100 Mb/s). Two pipeline stages: stage A picks
  the byte, stage B runs the CRC over it and puts the complemented register
  in the FCS slots, so no path goes through both the byte multiplexers and
  the CRC. Its decisions use one-bit flags set a byte time ahead ("the
  next strobe sends the SFD", "... ends the word"), and the current word
  shifts down a byte per strobe, so nothing at 125 MHz goes through a
  counter compare or a byte multiplexer into a wide enable.
* :class:`MACTx`: a writer and the frame buffer (block RAM, read in the
  system domain: its 5.8 ns clock-to-data fits 20 ns, not 8), a 16-word
  LUT-RAM FIFO into ``tx_domain`` pumped every cycle, register stages and a
  small queue (so the framer's decisions stay off the FIFO's pointers), the
  framer, and the byte clock that strobes it (every cycle at 1000 Mb/s,
  every tenth at 100 Mb/s). The RGMII converter by the pads follows the
  strobe that comes with each byte, so no strobe crosses the chip to fan
  out into the framer.

**Store-and-forward.** The writer puts each frame's words into the frame
buffer and, one cycle after its last word, a token into a small *token* FIFO.
The framer starts a frame only when it holds its token and the frame's first
word (a token can overtake its words on the way into ``tx_domain``): the whole
frame is then in the system side's buffer, which feeds the crossing at twice
the line rate, so a frame in flight never starves (no underrun). Frames longer
than ``max_frame_bytes`` would not be guaranteed to fit: the writer cuts them
at that length, marks the token "drop", discards the rest of the frame and
counts ``oversize``; the framer reads a dropped frame out without sending it.

Back to back, frames leave with exactly 12 idle byte times between them: the
framer takes the next token in the last gap slot.
"""

from amaranth.hdl import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..lib.stream import FrameStream, WORD_BYTES
from .afifo import FastAsyncFIFO
from .crc import CRC32, crc32_data_term
from .rx import DEFAULT_MAX_FRAME_BYTES, FCS_BYTES, SFD, fifo_entry_layout
from .speed import SPEED_10, SPEED_1000

__all__ = ["TxFramer", "MACTx", "TX_STROBES"]

#: IEEE 802.3 clause 4.2.3.3: frames are padded to 64 bytes with FCS.
MIN_FRAME_BYTES = 60
#: IEEE 802.3 clause 4.4.2: interPacketGap, 96 bit times.
IFG_BYTES = 12
#: Preamble bytes before the SFD (IEEE 802.3 clause 3.2.1).
PREAMBLE_BYTES = 7
PREAMBLE = 0x55

#: The transmit counter strobes.
TX_STROBES = ("frame_ok", "oversize")


class _Slot:
    """Stage A's kind of byte time."""
    IDLE, PREAMBLE, DATA, FCS = range(4)


class TxFramer(wiring.Component):
    """FIFO words -> GMII bytes, one byte time per ``stb`` (in its own ``sync``).

    Ports
    -----
    stb, stb_data : In(1)
        Byte strobe of the RGMII converter, twice: the same strobe from two
        registers, ``stb`` for the state machine and the counters,
        ``stb_data`` for the byte registers and the CRC (a strobe that
        clocks a hundred flip-flops routes slowly to the few that decide).
    d_rdy, d_data, d_en : data FIFO read port (:data:`fifo_entry_layout`).
    t_rdy, t_drop, t_en : token FIFO read port (one entry per frame).
    data, en, er : Out
        Stage B: the byte for the converter, held between strobes.
    between : Out(1)
        No frame is on the wire (idle, inter-frame gap, or a dropped frame
        being read out): the byte clock may change speed.
    """

    def __init__(self):
        super().__init__({
            "stb":    In(1),
            "stb_data": In(1),
            "d_rdy":  In(1),
            "d_data": In(fifo_entry_layout),
            "d_en":   Out(1),
            "t_rdy":  In(1),
            "t_drop": In(1),
            "t_en":   Out(1),
            "data":   Out(8),
            "en":     Out(1),
            "er":     Out(1),
            "between": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.crc = crc = CRC32()
        stb = self.stb
        stb_data = self.stb_data

        # Stage A.
        a_kind = Signal(2)
        a_byte = Signal(8)
        a_fcs_index = Signal(2)
        # The CRC's inputs for stage B, decided here: stage B's register
        # update is then only the CRC loop itself.
        a_crc_init = Signal()
        a_crc_en = Signal()
        a_crc_term = Signal(32)

        pre_count = Signal(range(PREAMBLE_BYTES))
        # The current word shifts down a byte per strobe (zeros in from the
        # top), so the byte on the wire is always `word[:8]`, and once a
        # frame's last word is out the padding is zeros.
        word = Signal(8 * WORD_BYTES)
        word_last = Signal()
        left = Signal(2)              # bytes of the word after the current one
        lane_is_last = Signal()       # left == 0
        sent = Signal(range(MIN_FRAME_BYTES))   # data and pad bytes, up to 59
        min_done = Signal()           # sent == 59: this byte is the 60th or later
        fcs_count = Signal(2)
        gap_count = Signal(range(IFG_BYTES))
        gap_last = Signal()           # the next strobe is the last gap byte

        # The next word waits in `nxt`, refilled from the FIFO side whenever
        # empty (a decision on one register), so taking a word on a strobe
        # never reaches back into the prefetch queue. Words are taken at most
        # every fourth byte time, the refill takes one cycle. Lanes after a
        # last word's last lane are cleared on the way in (they are padding).
        nxt = Signal.like(self.d_data)
        nxt_valid = Signal()
        take = Signal()               # the framer uses `nxt` this cycle
        lane_used = [(~self.d_data.last | (self.d_data.last_lane >= k)) for k in range(WORD_BYTES)]
        m.d.comb += self.d_en.eq(~nxt_valid & self.d_rdy)
        with m.If(~nxt_valid & self.d_rdy):
            m.d.sync += [
                nxt.data.eq(Cat(Mux(used, self.d_data.data.word_select(k, 8), 0)
                                for k, used in enumerate(lane_used))),
                nxt.last_lane.eq(self.d_data.last_lane),
                nxt.last.eq(self.d_data.last),
                nxt_valid.eq(1),
            ]
        with m.Elif(take):
            m.d.sync += nxt_valid.eq(0)

        # The next frame's token waits in a register too, refilled from the
        # token queue whenever empty: taking it (a decision on the FSM's
        # state and the strobe) then clears one flag rather than reaching
        # into the prefetch queue's shift enables.
        tok_valid = Signal()
        tok_drop = Signal()
        tok_take = Signal()
        m.d.comb += self.t_en.eq(~tok_valid & self.t_rdy)
        with m.If(~tok_valid & self.t_rdy):
            m.d.sync += [tok_valid.eq(1), tok_drop.eq(self.t_drop)]
        with m.Elif(tok_take):
            m.d.sync += tok_valid.eq(0)

        # The next strobe starts sending `nxt`: it sends the SFD (in
        # Preamble) or a word's last byte (in Data, lane_is_last &
        # ~word_last). A register, so the word's wide enable is one.
        load_next = Signal()
        with m.If(stb & load_next):
            m.d.comb += take.eq(1)
        with m.If(stb_data):
            m.d.sync += [
                a_byte.eq(word[:8]),
                a_crc_term.eq(crc32_data_term(word[:8])),
                word.eq(Mux(load_next, nxt.data, word >> 8)),
            ]
        with m.If(stb):
            m.d.sync += a_fcs_index.eq(fcs_count)
            with m.If(load_next):
                m.d.sync += [
                    word_last.eq(nxt.last),
                    left.eq(nxt.last_lane),
                    lane_is_last.eq(nxt.last_lane == 0),
                    load_next.eq((nxt.last_lane == 0) & ~nxt.last),
                ]
            with m.Else():
                m.d.sync += [
                    left.eq(left - 1),
                    lane_is_last.eq(left == 1),
                    load_next.eq(0),
                ]

        def emit(kind):
            m.d.sync += [a_kind.eq(kind), a_crc_init.eq(kind == _Slot.PREAMBLE),
                         a_crc_en.eq(kind == _Slot.DATA)]

        def take_token():
            m.d.comb += tok_take.eq(1)
            with m.If(tok_drop):
                m.next = "Drain"
            with m.Else():
                m.d.sync += pre_count.eq(0)
                m.next = "Preamble"

        def count_sent():
            with m.If(~min_done):
                m.d.sync += [sent.eq(sent + 1), min_done.eq(sent == MIN_FRAME_BYTES - 2)]

        with m.FSM(name="tx_fsm"):
            # A frame starts only with its first word at hand: its token can
            # overtake it on the way from the system domain; once the first
            # word is here the rest keeps ahead of the wire.
            with m.State("Idle"):
                m.d.comb += self.between.eq(1)
                with m.If(stb):
                    emit(_Slot.IDLE)
                    with m.If(tok_valid & nxt_valid):
                        take_token()
            with m.State("Preamble"):
                with m.If(stb):
                    emit(_Slot.PREAMBLE)
                    m.d.sync += pre_count.eq(pre_count + 1)
                    with m.If(load_next):
                        m.d.sync += [a_byte.eq(SFD), sent.eq(0), min_done.eq(0)]
                        m.next = "Data"
                    with m.Else():
                        m.d.sync += [a_byte.eq(PREAMBLE),
                                     load_next.eq(pre_count == PREAMBLE_BYTES - 1)]
            with m.State("Data"):
                with m.If(stb):
                    emit(_Slot.DATA)
                    count_sent()
                    with m.If(~lane_is_last):
                        m.d.sync += load_next.eq((left == 1) & ~word_last)
                    with m.Elif(word_last):
                        m.d.sync += fcs_count.eq(0)
                        with m.If(min_done):
                            m.next = "FCS"
                        with m.Else():
                            m.next = "Pad"
            with m.State("Pad"):
                with m.If(stb):
                    emit(_Slot.DATA)
                    count_sent()
                    with m.If(min_done):
                        m.next = "FCS"
            with m.State("FCS"):
                with m.If(stb):
                    emit(_Slot.FCS)
                    m.d.sync += fcs_count.eq(fcs_count + 1)
                    with m.If(fcs_count == FCS_BYTES - 1):
                        m.d.sync += [gap_count.eq(0), gap_last.eq(0)]
                        m.next = "Gap"
            with m.State("Gap"):
                m.d.comb += self.between.eq(1)
                with m.If(stb):
                    emit(_Slot.IDLE)
                    m.d.sync += [gap_count.eq(gap_count + 1),
                                 gap_last.eq(gap_count == IFG_BYTES - 2)]
                    with m.If(gap_last):
                        with m.If(tok_valid & nxt_valid):
                            take_token()
                        with m.Else():
                            m.next = "Idle"
            with m.State("Drain"):
                m.d.comb += self.between.eq(1)
                with m.If(stb):
                    emit(_Slot.IDLE)
                with m.If(nxt_valid):
                    m.d.comb += take.eq(1)
                    with m.If(nxt.last):
                        m.next = "Idle"

        # Stage B.
        m.d.comb += [crc.init.eq(stb_data & a_crc_init), crc.en.eq(stb_data & a_crc_en),
                     crc.term.eq(a_crc_term)]
        with m.If(stb_data):
            m.d.sync += self.en.eq(a_kind != _Slot.IDLE)
            with m.Switch(a_kind):
                with m.Case(_Slot.PREAMBLE):
                    m.d.sync += self.data.eq(a_byte)
                with m.Case(_Slot.DATA):
                    m.d.sync += self.data.eq(a_byte)
                with m.Case(_Slot.FCS):
                    m.d.sync += self.data.eq(~crc.crc.word_select(a_fcs_index, 8))
                with m.Default():
                    m.d.sync += self.data.eq(0)
        return m


class _Prefetch(wiring.Component):
    """Register stages and a small queue between an async FIFO's read port
    and its reader.

    The async FIFO's storage may sit far from the reader (the two PHYs are
    on opposite edges of the chip, the frame buffers in the middle): the
    popped word goes through ``stages`` plain registers, which the placer
    spreads along the way, then into a ring of two registers and from there
    into the output register. The FIFO is popped only while the
    ring and the output have room for everything in flight (``occupied``, a
    counter), a decision on registers alone, so the reader's ``r_en`` never
    reaches the FIFO's pointer adder and RAM address either.

    Every data bit is cheap: a ring place loads the arriving word as it is
    (its clock enable says which place), and the output register loads the
    ring place a registered pointer names, a multiplexer of registers alone.
    (A queue that shifted down on a pop and took the word at its first free
    place had a choice per bit that depended on the reader's ``r_en``;
    synthesis folded it into every bit: 653 LUT4 for 35 bits, block alone.)
    """

    def __init__(self, width, *, stages=3):
        self._stages = stages
        super().__init__({
            "fifo_r_rdy":  In(1),
            "fifo_r_data": In(width),
            "fifo_r_en":   Out(1),
            "r_rdy":       Out(1),
            "r_data":      Out(width),
            "r_en":        In(1),
        })

    def elaborate(self, platform):
        m = Module()
        # Places: a ring of two and the output register. The loop from the
        # fetch decision to the reader's pop is stages + 3 cycles (the
        # stages, the ring, the output), so with three places the words come
        # at 3 in every stages + 3 cycles: one in two with 3 stages, twice
        # what the framer takes at 1000 Mb/s (a word in 4 cycles). A ring
        # of two is one LUT per bit on the output's input.
        ring_n = 2
        places = ring_n + 1
        # Data registers without reset (their valid bits have one): no
        # control set ties them to slices away from the FIFO's storage.
        stage_v = [Signal(name=f"stage{i}_v") for i in range(self._stages)]
        stage_d = [Signal.like(self.r_data, name=f"stage{i}_d", reset_less=True)
                   for i in range(self._stages)]
        ring = [Signal.like(self.r_data, name=f"ring{i}", reset_less=True) for i in range(ring_n)]
        wp = Signal()                       # the place the next word goes to
        rp = Signal()                       # the place the output loads next
        level = Signal(range(ring_n + 1))   # words in the ring
        out_v = Signal()
        # `occupied` counts the words in the ring, in the output and in
        # flight: popping the FIFO only below `places` keeps the ring from
        # overflowing even if the reader takes nothing meanwhile.
        occupied = Signal(range(places + 1))
        fetch = Signal()
        pop = Signal()
        m.d.comb += [
            fetch.eq(self.fifo_r_rdy & (occupied != places)),
            self.fifo_r_en.eq(occupied != places),
            self.r_rdy.eq(out_v),
            pop.eq(self.r_en & out_v),
        ]
        m.d.sync += occupied.eq(occupied + fetch - pop)
        m.d.sync += [stage_v[0].eq(fetch), stage_d[0].eq(self.fifo_r_data)]
        for i in range(1, self._stages):
            m.d.sync += [stage_v[i].eq(stage_v[i - 1]), stage_d[i].eq(stage_d[i - 1])]
        arrive, word = stage_v[-1], stage_d[-1]

        for i in range(ring_n):
            with m.If(arrive & (wp == i)):
                m.d.sync += ring[i].eq(word)
        with m.If(arrive):
            m.d.sync += wp.eq(~wp)
        load = Signal()
        m.d.comb += load.eq((level != 0) & (~out_v | pop))
        with m.If(load):
            m.d.sync += [self.r_data.eq(Mux(rp, ring[1], ring[0])), rp.eq(~rp)]
        m.d.sync += [level.eq(level + arrive - load), out_v.eq(load | (out_v & ~pop))]
        return m


class MACTx(wiring.Component):
    """Transmit path: frame stream ``i`` in ``sync`` -> GMII bytes in ``tx_domain``.

    Parameters
    ----------
    tx_domain : str
        The 125 MHz transmit clock domain.
    max_frame_bytes : int
        Longest frame sent (without FCS); longer ones are dropped and counted.
    fifo_words : int
        Frame buffer depth in 32-bit words, a power of 2 holding at least two
        maximum frames; the token FIFO has 16 entries (at most 16 queued frames).

    Ports
    -----
    i : In(FrameStream), ``sync``
        Frames without FCS (``docs/spec.md`` section 1), any length >= 1.
    speed : In(2), ``tx_domain``
        The link's speed (``SPEED_1000``: a byte time every cycle;
        ``SPEED_100``: every tenth; ``SPEED_10``: every hundredth). A change
        takes effect between frames: a frame on the wire finishes at the
        speed it started with (the PHY, already at the new speed, makes
        garbage of it, which the far end drops as a bad frame).
    data, en, er, stb, speed_out : Out, ``tx_domain``
        GMII bytes for the converter (:class:`~ackfilter.gateware.mac.rgmii.RGMIITxConverter`):
        ``stb`` marks the cycle a new byte is there, ``speed_out`` the speed
        the byte clock runs at; registers.
    frame_ok, oversize : Out(1), ``sync``
        Counter strobes: a frame was queued for sending / was too long and
        is dropped.
    """

    @staticmethod
    def check_params(*, max_frame_bytes, fifo_words):
        """Raise ``TypeError`` unless the parameters make a working transmit path."""
        if not isinstance(max_frame_bytes, int) or not 60 <= max_frame_bytes <= 16000:
            raise TypeError(f"max_frame_bytes must be an integer 60..16000, not {max_frame_bytes!r}")
        max_words = -(-max_frame_bytes // WORD_BYTES)
        if not isinstance(fifo_words, int) or fifo_words & (fifo_words - 1) or fifo_words < 2 * max_words:
            raise TypeError(f"fifo_words must be a power of 2 >= {2 * max_words} "
                            f"(two frames of {max_frame_bytes} bytes), not {fifo_words!r}")

    def __init__(self, *, tx_domain="tx", max_frame_bytes=DEFAULT_MAX_FRAME_BYTES, fifo_words=1024):
        self.check_params(max_frame_bytes=max_frame_bytes, fifo_words=fifo_words)
        self._tx_domain = tx_domain
        self.max_frame_bytes = max_frame_bytes
        self.fifo_words = fifo_words
        # 16 tokens: one LUT RAM (DPR16X4) without a read multiplexer, which
        # keeps the 125 MHz read path short; a full token FIFO only holds
        # the system side back (16 frames queued are plenty at line rate).
        self.token_entries = 16
        # Words between the system-domain frame buffer and the framer.
        self.cross_words = 16
        super().__init__({
            "i":    In(FrameStream()),
            "speed": In(2, init=SPEED_1000),
            "data": Out(8),
            "en":   Out(1),
            "er":   Out(1),
            "stb":  Out(1),
            "speed_out": Out(2, init=SPEED_1000),
            **{name: Out(1) for name in TX_STROBES},
        })

    def elaborate(self, platform):
        m = Module()
        tx = self._tx_domain
        m.submodules.framer = framer = DomainRenamer(tx)(TxFramer())
        # The frames wait in block RAM read in the system domain (its 5.8 ns
        # clock-to-data fits 20 ns, not 8), then cross into the transmit
        # domain through a small FIFO in LUT RAM, pumped every cycle it has
        # room: 1.6 Gb/s in against at most 1 Gb/s out, so once a frame's token
        # (written when all of the frame is in block RAM) reaches the framer,
        # its words are ahead of it and keep ahead of the wire. The frame
        # buffer is a FastAsyncFIFO with both sides in `sync` for its
        # registered full/empty flags (no pointer compare on its ports' paths).
        m.submodules.frame_fifo = frame_fifo = FastAsyncFIFO(
            width=fifo_entry_layout.size, depth=self.fifo_words, w_domain="sync", r_domain="sync")
        m.submodules.data_fifo = data_fifo = FastAsyncFIFO(
            width=fifo_entry_layout.size, depth=self.cross_words, w_domain="sync", r_domain=tx)
        m.submodules.token_fifo = token_fifo = FastAsyncFIFO(
            width=1, depth=self.token_entries, w_domain="sync", r_domain=tx)
        m.d.comb += [
            data_fifo.w_en.eq(frame_fifo.r_rdy), data_fifo.w_data.eq(frame_fifo.r_data),
            frame_fifo.r_en.eq(data_fifo.w_rdy),
        ]

        data_pre = m.submodules.data_prefetch = DomainRenamer(tx)(_Prefetch(fifo_entry_layout.size))
        token_pre = m.submodules.token_prefetch = DomainRenamer(tx)(_Prefetch(1))
        for f, pre in ((data_fifo, data_pre), (token_fifo, token_pre)):
            m.d.comb += [pre.fifo_r_rdy.eq(f.r_rdy), pre.fifo_r_data.eq(f.r_data),
                         f.r_en.eq(pre.fifo_r_en)]

        # The byte clock: `byte_stb` is a register by the framer, high every
        # cycle at 1000 Mb/s, every tenth at 100 Mb/s, every hundredth at 10.
        # The framer's stage B holds a new byte from the cycle after it,
        # which `self.stb` marks. The speed it runs at follows `speed`
        # between frames only.
        byte_stb = Signal(init=1)
        # The framer's byte registers take the strobe from a copy of their
        # own; it has no reset, so synthesis does not merge it with
        # `byte_stb` (the tx domains have one): see TxFramer.
        data_stb = Signal(init=1, reset_less=True)
        # At 10 and 100 Mb/s `left` counts the cycles to the next strobe (less
        # one) down, reloaded at each strobe: the strobe decides on itself and
        # a compare of `left`, nothing wider.
        speed = Signal(2, init=SPEED_1000)
        left = Signal(range(100), init=9)
        # A new speed starts with a byte: at a strobe between frames while
        # an idle byte is on the wire (the frame's last byte went out whole).
        with m.If(framer.between & ~framer.en & byte_stb):
            m.d[tx] += speed.eq(self.speed)
        with m.If(speed == SPEED_1000):
            m.d[tx] += [byte_stb.eq(1), data_stb.eq(1), left.eq(9)]
        with m.Else():
            strobe_next = ~byte_stb & (left == 1)
            m.d[tx] += [byte_stb.eq(strobe_next), data_stb.eq(strobe_next),
                        left.eq(Mux(byte_stb, Mux(speed == SPEED_10, 99, 9), left - 1))]
        m.d[tx] += [self.stb.eq(byte_stb), self.speed_out.eq(speed)]

        m.d.comb += [
            framer.stb.eq(byte_stb), framer.stb_data.eq(data_stb),
            framer.d_rdy.eq(data_pre.r_rdy), framer.d_data.eq(data_pre.r_data),
            data_pre.r_en.eq(framer.d_en),
            framer.t_rdy.eq(token_pre.r_rdy), framer.t_drop.eq(token_pre.r_data),
            token_pre.r_en.eq(framer.t_en),
            self.data.eq(framer.data), self.en.eq(framer.en), self.er.eq(framer.er),
        ]

        # Writer.
        max_words = -(-self.max_frame_bytes // WORD_BYTES)
        words = Signal(range(max_words + 1))
        discarding = Signal()           # the rest of a cut frame
        token_pending = Signal()
        token_drop = Signal()
        keep = self.i.payload.keep
        last_lane = Mux(keep[3], 3, Mux(keep[2], 2, Mux(keep[1], 1, 0)))
        cut = (words == max_words - 1) & ~self.i.payload.last

        m.d.comb += self.i.ready.eq(discarding |
                                    (frame_fifo.w_rdy & token_fifo.w_rdy & ~token_pending))
        with m.If(self.i.valid & self.i.ready):
            with m.If(discarding):
                with m.If(self.i.payload.last):
                    m.d.sync += discarding.eq(0)
            with m.Else():
                m.d.comb += [
                    frame_fifo.w_en.eq(1),
                    frame_fifo.w_data.eq(Cat(self.i.payload.data, last_lane,
                                             self.i.payload.last | cut)),
                ]
                m.d.sync += words.eq(words + 1)
                with m.If(self.i.payload.last | cut):
                    m.d.sync += [words.eq(0), token_pending.eq(1), token_drop.eq(cut),
                                 discarding.eq(cut)]

        with m.If(token_pending):
            m.d.comb += [token_fifo.w_en.eq(1), token_fifo.w_data.eq(token_drop)]
            m.d.comb += [self.frame_ok.eq(~token_drop), self.oversize.eq(token_drop)]
            m.d.sync += token_pending.eq(0)
        return m
