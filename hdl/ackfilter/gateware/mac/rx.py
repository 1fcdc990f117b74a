"""Ethernet receive path: GMII byte beats (RX clock) -> frame stream (system clock).

Two blocks:

* :class:`RxFramer`, in the PHY's RX clock domain (125 MHz at 1000 Mb/s,
  25 MHz at 100 Mb/s): strips preamble and SFD, runs the FCS check, holds
  the last four bytes back (they are the FCS when the frame ends there),
  packs the rest into 32-bit words and classifies the frame when ``dv``
  falls. Everything is a register or one level of logic away from one; the
  CRC is a single XOR level and its residue compare is pipelined.
* :class:`MACRx`: the framer in ``rx_domain``, two async FIFOs into the
  system domain and a reader there.

**Whole-frame commit.** A frame's fate (FCS, length, ``rx_er``) is known only
after its last byte, when most of its words are already written. So the words
go into a *data* FIFO as they come, and each frame that wrote words puts one
entry into a second, small *status* FIFO after its last word: "deliver" or
"drop". The system-side reader starts a frame only when its status entry is
there, so it forwards a good frame (store-and-forward) and silently discards
a bad one; a bad frame never appears on the output stream. A frame is taken in
only if, at its SFD, the data FIFO has room for a frame of the maximum length
and the status FIFO has room for an entry; otherwise it is dropped whole and
counted ``overflow``, so a frame is never cut by a full FIFO.

**Counted** (one strobe per frame, in this priority): ``overflow`` (no room),
``oversize`` (longer than ``max_frame_bytes`` + 4 FCS bytes; at most
``max_frame_bytes`` are written), ``runt`` (shorter than 64 bytes with FCS,
IEEE 802.3 clause 4.2.4.2.2), ``phy_error`` (``rx_er`` during the frame),
``crc_error`` (bad FCS), otherwise ``frame_ok``.
"""

from amaranth.hdl import *
from amaranth.lib import cdc, data, wiring
from amaranth.lib.wiring import In, Out

from ..lib.stream import FrameStream, WORD_BYTES
from .afifo import FastAsyncFIFO
from .crc import CRC32, crc32_data_term

__all__ = ["fifo_entry_layout", "keep_of_last_lane", "RxFramer", "MACRx", "RX_STROBES",
           "DEFAULT_MAX_FRAME_BYTES"]

#: Frame length without FCS: 1500-byte payload + 14-byte header + two VLAN
#: tags (QinQ, IEEE 802.1ad) = 1522, rounded up to whole words.
DEFAULT_MAX_FRAME_BYTES = 1536
#: IEEE 802.3 clause 4.2.4.2.2: frames shorter than 64 bytes (with FCS) are invalid.
MIN_FRAME_BYTES_WITH_FCS = 64
FCS_BYTES = 4
SFD = 0xD5

#: A word in the MAC's FIFOs: ``last_lane`` is the lane of the word's last
#: byte (3 unless it is a partial ``last`` word).
fifo_entry_layout = data.StructLayout({
    "data":      8 * WORD_BYTES,
    "last_lane": 2,
    "last":      1,
})

#: The receive counter strobes, in priority order after ``frame_ok``.
RX_STROBES = ("frame_ok", "overflow", "oversize", "runt", "phy_error", "crc_error")


def keep_of_last_lane(last_lane):
    """``keep`` of a word whose last byte is in lane ``last_lane`` (a Value)."""
    return Array([Const((1 << (n + 1)) - 1, WORD_BYTES) for n in range(WORD_BYTES)])[last_lane]


class RxFramer(wiring.Component):
    """GMII byte beats -> FIFO words and per-frame verdicts (in its own ``sync``).

    Parameters
    ----------
    max_frame_bytes : int
        Longest frame accepted, without FCS.

    Ports
    -----
    valid, data, dv, er : In
        Byte beats (see :class:`~ackfilter.gateware.mac.rgmii.RGMIIRxConverter`).
    room : In(1)
        The FIFOs can take a frame of ``max_frame_bytes`` and a status entry
        (sampled at each SFD; may lag a few cycles).
    w_en, w_data : Out
        Write a :data:`fifo_entry_layout` word into the data FIFO (never
        more than one every four beats, so it cannot be refused).
    s_en, s_drop : Out
        Write a status entry, two cycles after the frame's last word.
        ``w_data`` is meaningful only with ``w_en``.
    frame_ok, overflow, oversize, runt, phy_error, crc_error : Out(1)
        One-cycle strobes, at most one per frame, three cycles after ``dv``
        falls (the beats are registered on the way in).
    """

    def __init__(self, *, max_frame_bytes=DEFAULT_MAX_FRAME_BYTES):
        if not isinstance(max_frame_bytes, int) or not 60 <= max_frame_bytes <= 16000:
            raise TypeError(f"max_frame_bytes must be an integer 60..16000, not {max_frame_bytes!r}")
        self.max_frame_bytes = max_frame_bytes
        super().__init__({
            "valid":  In(1),
            "data":   In(8),
            "dv":     In(1),
            "er":     In(1),
            "room":   In(1),
            "w_en":   Out(1),
            "w_data": Out(fifo_entry_layout),
            "s_en":   Out(1),
            "s_drop": Out(1),
            **{name: Out(1) for name in RX_STROBES},
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.crc = crc = CRC32()
        limit = self.max_frame_bytes + FCS_BYTES

        count = Signal(range(limit + 1))   # bytes after the SFD so far (stops at limit)
        min_ok = Signal()                  # 64 bytes or more
        at_limit = Signal()                # ``limit`` bytes seen: no more may be packed
        too_long = Signal()
        er_seen = Signal()
        accept = Signal()                  # there was room at the SFD

        # The data registers here (``delay``, ``word``, ``hold``, ``byte``,
        # ``c_term``) have no reset: each counts only with a flag that has one
        # (``delay_valid``, ``lane``, ``hold_valid``, ``beat``, ``c_en``), and
        # leaving them off keeps the PHY-clocked reset net small.
        # FCS hold-back: the four newest bytes; ``delay_valid[3]`` marks the oldest.
        delay = Array(Signal(8, name=f"delay{i}", reset_less=True) for i in range(FCS_BYTES))
        delay_valid = Signal(FCS_BYTES)

        # Packer: ``word`` fills lane by lane; a full word waits in ``hold``
        # until the next byte proves it is not the frame's last.
        word = Signal(8 * WORD_BYTES, reset_less=True)
        lane = Signal(2)
        hold = Signal(8 * WORD_BYTES, reset_less=True)
        hold_valid = Signal()
        packed_any = Signal()

        # The beats are registered on the way in, with the SFD compare, so
        # that no decision starts with an 8-bit compare on a wire from the
        # converter by the pads.
        byte = Signal(8, reset_less=True)
        beat, dv, er, is_sfd = Signal(), Signal(), Signal(), Signal()
        m.d.sync += [byte.eq(self.data), beat.eq(self.valid), dv.eq(self.dv), er.eq(self.er),
                     is_sfd.eq(self.data == SFD)]
        # accept & ~at_limit: the frame's bytes are still being packed.
        packing = Signal()
        # In Frame and ~at_limit: ``count``'s enable is then the beat, ``dv``
        # and this flag, one LUT (the state's decode and ``at_limit`` made it
        # four deep: the modem RX clock's critical path on rev 7.0).
        counting = Signal()
        # ``count == limit - 1`` and ``count == MIN_FRAME_BYTES_WITH_FCS - 1``,
        # registered with ``count`` (set when it steps onto that value): an
        # 11-bit compare in front of the packer's enables was rev 8.0's LAN
        # RX critical path.
        at_last, at_min = Signal(), Signal()
        # In Frame, with a byte leaving the hold-back that is to be packed
        # (delay_valid[-1] & packing): a register of its own, so that the
        # packer's enables are the beat and this flag.
        pack_ready = Signal()

        # The CRC runs a cycle behind: its inputs (and the byte's CRC term)
        # are registered, so the loop through the CRC register is all that
        # is between two registers.
        c_init, c_en, c_term = Signal(), Signal(), Signal(32, reset_less=True)
        m.d.sync += [c_init.eq(0), c_en.eq(0), c_term.eq(crc32_data_term(byte))]
        m.d.comb += [crc.init.eq(c_init), crc.en.eq(c_en), crc.term.eq(c_term)]

        def start_frame():
            m.d.sync += c_init.eq(1)
            m.d.sync += [
                count.eq(0), min_ok.eq(0), at_limit.eq(0), too_long.eq(0), er_seen.eq(0),
                accept.eq(self.room), packing.eq(self.room), counting.eq(1),
                at_last.eq(limit == 1), at_min.eq(MIN_FRAME_BYTES_WITH_FCS == 1),
                delay_valid.eq(0), lane.eq(0),
                hold_valid.eq(0), packed_any.eq(0), pack_ready.eq(0),
            ]

        # What a write carries, whether or not there is one (``w_en``): in a
        # frame the held full word; at its end (``dv`` low) the word being
        # filled, or the held one if that is empty.
        partial = ~dv & (lane != 0)
        m.d.comb += [
            self.w_data.data.eq(Mux(partial, word, hold)),
            self.w_data.last_lane.eq(Mux(partial, lane - 1, WORD_BYTES - 1)),
            self.w_data.last.eq(~dv),
        ]

        # Verdict, two cycles after the end of the frame (the CRC runs a cycle
        # behind, ``crc.residue_ok`` lags it by one).
        # `end` has no reset: it clears itself the cycle after it is set,
        # and is set only in Frame, so a reset of two cycles or more leaves
        # it low. With a reset, the reset synchroniser's net reached its
        # flip-flop's set/reset input through two LUTs: the RX domains'
        # critical path (6 ns of routing from the synchroniser).
        end = Signal(reset_less=True)
        end_q = Signal()
        e_accept, e_too_long, e_runt, e_er, e_written = (Signal(name=n) for n in
            ("e_accept", "e_too_long", "e_runt", "e_er", "e_written"))

        with m.FSM(name="rx_fsm"):
            with m.State("Idle"):
                with m.If(beat & dv):
                    with m.If(is_sfd):
                        start_frame()
                        m.next = "Frame"
                    with m.Else():
                        m.next = "Preamble"
            with m.State("Preamble"):
                with m.If(beat):
                    with m.If(~dv):
                        m.next = "Idle"
                    with m.Elif(is_sfd):
                        start_frame()
                        m.next = "Frame"
            with m.State("Frame"):
                with m.If(beat & dv):
                    m.d.sync += c_en.eq(1)
                    m.d.sync += [
                        delay[0].eq(byte),
                        *[delay[i].eq(delay[i - 1]) for i in range(1, FCS_BYTES)],
                        delay_valid.eq(Cat(1, delay_valid[:-1])),
                        er_seen.eq(er_seen | er),
                    ]
                    with m.If(at_min):
                        m.d.sync += min_ok.eq(1)
                    last_packed = at_last
                    with m.If(last_packed):
                        m.d.sync += [at_limit.eq(1), packing.eq(0), counting.eq(0)]
                    m.d.sync += pack_ready.eq(delay_valid[-2] & packing & ~last_packed)
                    with m.If(at_limit):
                        m.d.sync += too_long.eq(1)
                    # The byte leaving the hold-back is frame data.
                    with m.If(pack_ready):
                        out = delay[-1]
                        m.d.sync += packed_any.eq(1)
                        with m.If((lane == 0) & hold_valid):
                            m.d.comb += self.w_en.eq(1)
                            m.d.sync += hold_valid.eq(0)
                        with m.Switch(lane):
                            for k in range(WORD_BYTES - 1):
                                with m.Case(k):
                                    m.d.sync += word[8 * k:8 * k + 8].eq(out)
                            with m.Case(WORD_BYTES - 1):
                                m.d.sync += [hold.eq(Cat(word[:24], out)), hold_valid.eq(1)]
                        m.d.sync += lane.eq(lane + 1)
                with m.Elif(beat):
                    # ``dv`` fell: the four held-back bytes were the FCS.
                    with m.If(packed_any):
                        m.d.comb += self.w_en.eq(1)
                    m.d.sync += [
                        pack_ready.eq(0), counting.eq(0),
                        end.eq(1),
                        e_accept.eq(accept), e_too_long.eq(too_long), e_runt.eq(~min_ok),
                        e_er.eq(er_seen), e_written.eq(packed_any),
                    ]
                    m.next = "Idle"

        # Outside the FSM: ``counting`` implies Frame (start_frame's clear
        # is in Idle and Preamble, where it is low).
        with m.If(beat & dv & counting):
            m.d.sync += [count.eq(count + 1), at_last.eq(count == limit - 2),
                         at_min.eq(count == MIN_FRAME_BYTES_WITH_FCS - 2)]

        m.d.sync += end_q.eq(end)
        with m.If(end):
            m.d.sync += end.eq(0)
        with m.If(end_q):
            bad = Signal()
            with m.If(~e_accept):
                m.d.comb += [self.overflow.eq(1), bad.eq(1)]
            with m.Elif(e_too_long):
                m.d.comb += [self.oversize.eq(1), bad.eq(1)]
            with m.Elif(e_runt):
                m.d.comb += [self.runt.eq(1), bad.eq(1)]
            with m.Elif(e_er):
                m.d.comb += [self.phy_error.eq(1), bad.eq(1)]
            with m.Elif(~crc.residue_ok):
                m.d.comb += [self.crc_error.eq(1), bad.eq(1)]
            with m.Else():
                m.d.comb += self.frame_ok.eq(1)
            m.d.comb += [self.s_en.eq(e_written), self.s_drop.eq(bad)]
        return m


class MACRx(wiring.Component):
    """Receive path: byte beats in ``rx_domain`` -> frame stream ``o`` in ``sync``.

    Parameters
    ----------
    rx_domain : str
        The PHY's RX clock domain.
    max_frame_bytes : int
        Longest frame delivered, without FCS.
    fifo_words : int
        Depth of the data FIFO in 32-bit words (a power of 2, room for at
        least two maximum frames); the status FIFO holds
        ``fifo_words // 16`` entries (a minimum frame is 15 words).

    Ports
    -----
    valid, data, dv, er : In, ``rx_domain``
        Byte beats (see :class:`~ackfilter.gateware.mac.rgmii.RGMIIRxConverter`).
    o : Out(FrameStream), ``sync``
        Good frames without FCS (``docs/spec.md`` section 1), each once all
        of it has arrived.
    frame_ok, overflow, oversize, runt, phy_error, crc_error : Out(1), ``sync``
        Counter strobes (see the module docstring).
    """

    @staticmethod
    def check_params(*, max_frame_bytes, fifo_words):
        """Raise ``TypeError`` unless the parameters make a working receive path."""
        if not isinstance(max_frame_bytes, int) or not 60 <= max_frame_bytes <= 16000:
            raise TypeError(f"max_frame_bytes must be an integer 60..16000, not {max_frame_bytes!r}")
        max_words = -(-max_frame_bytes // WORD_BYTES)
        if not isinstance(fifo_words, int) or fifo_words & (fifo_words - 1) or fifo_words < 2 * max_words + 8:
            raise TypeError(f"fifo_words must be a power of 2 >= {2 * max_words + 8} "
                            f"(two frames of {max_frame_bytes} bytes), not {fifo_words!r}")

    def __init__(self, *, rx_domain="rx", max_frame_bytes=DEFAULT_MAX_FRAME_BYTES, fifo_words=1024):
        self.check_params(max_frame_bytes=max_frame_bytes, fifo_words=fifo_words)
        self._rx_domain = rx_domain
        self.max_frame_bytes = max_frame_bytes
        self.fifo_words = fifo_words
        self.status_entries = max(16, fifo_words // 16)
        super().__init__({
            "valid": In(1),
            "data":  In(8),
            "dv":    In(1),
            "er":    In(1),
            "o":     Out(FrameStream()),
            **{name: Out(1) for name in RX_STROBES},
        })

    def elaborate(self, platform):
        m = Module()
        rx = self._rx_domain
        m.submodules.framer = framer = DomainRenamer(rx)(RxFramer(max_frame_bytes=self.max_frame_bytes))
        # No full flags: a frame is taken in only with room for all of it
        # (`room`, below), so a write is never refused.
        m.submodules.data_fifo = data_fifo = FastAsyncFIFO(
            width=fifo_entry_layout.size, depth=self.fifo_words, w_domain=rx, r_domain="sync",
            w_full=False)
        m.submodules.status_fifo = status_fifo = FastAsyncFIFO(
            width=1, depth=self.status_entries, w_domain=rx, r_domain="sync", w_full=False)

        m.d.comb += [
            framer.valid.eq(self.valid), framer.data.eq(self.data),
            framer.dv.eq(self.dv), framer.er.eq(self.er),
        ]
        # Registered FIFO writes: the framer's decisions and the FIFO's
        # full flag, pointer increment and Gray encoding would otherwise make
        # one long path at 125 MHz. The status still follows its last word.
        # The written data has no reset (it counts only with ``w_en``, which
        # has): the domain's reset net then reaches control state only, not
        # 35 data flip-flops across the chip (a reset path was once the
        # modem RX domain's critical path, 80 % of it routing).
        w_data_q = Signal.like(data_fifo.w_data, reset_less=True)
        m.d.comb += data_fifo.w_data.eq(w_data_q)
        m.d[rx] += [
            data_fifo.w_en.eq(framer.w_en), w_data_q.eq(framer.w_data),
            status_fifo.w_en.eq(framer.s_en), status_fifo.w_data.eq(framer.s_drop),
        ]
        # Room for a maximum frame (+ a margin for the words of the previous
        # frame still being written and the lag of this flag), registered.
        reserve_words = -(-self.max_frame_bytes // WORD_BYTES) + 8
        room = Signal()
        m.d[rx] += room.eq((data_fifo.w_level <= self.fifo_words - reserve_words) &
                           (status_fifo.w_level <= self.status_entries - 2))
        m.d.comb += framer.room.eq(room)

        for name in RX_STROBES:
            ps = m.submodules[f"{name}_cdc"] = cdc.PulseSynchronizer(i_domain=rx, o_domain="sync")
            m.d.comb += [ps.i.eq(getattr(framer, name)), getattr(self, name).eq(ps.o)]

        # Reader: a frame starts only once its status entry is there.
        entry = Signal(fifo_entry_layout)
        m.d.comb += entry.eq(data_fifo.r_data)
        drop = Signal()
        first = Signal()
        with m.FSM(name="reader"):
            with m.State("Await-Status"):
                with m.If(status_fifo.r_rdy):
                    m.d.comb += status_fifo.r_en.eq(1)
                    m.d.sync += [drop.eq(status_fifo.r_data), first.eq(1)]
                    m.next = "Frame"
            with m.State("Frame"):
                m.d.comb += [
                    self.o.valid.eq(data_fifo.r_rdy & ~drop),
                    self.o.payload.data.eq(entry.data),
                    self.o.payload.keep.eq(keep_of_last_lane(entry.last_lane)),
                    self.o.payload.first.eq(first),
                    self.o.payload.last.eq(entry.last),
                    data_fifo.r_en.eq(drop | self.o.ready),
                ]
                with m.If(data_fifo.r_rdy & (drop | self.o.ready)):
                    m.d.sync += first.eq(0)
                    with m.If(entry.last):
                        m.next = "Await-Status"
        return m
