"""Ingress of the uplink core: store each frame, classify it, hand it on.

Every word is written at once into the data ring (where a data frame will
stay) and into the current staging ACK buffer (where a pure ACK will stay),
while the parser watches. When the parser has classified the frame, the
ingress commits it to one of the two, or drops it, and pushes a
:data:`ingress_entry_layout` record into the queue manager's FIFO. Nothing is
copied afterwards: committing is moving a pointer.
"""

from amaranth.hdl import *
from amaranth.lib import data, enum, wiring
from amaranth.lib.wiring import In, Out

from ..params import ACK_SLOT_BYTES
from .parser import FrameParser, FrameClass, ack_meta_layout, ip_header_layout, seg_info_layout
from .lib.stream import FrameStream, WORD_BYTES

__all__ = ["Verdict", "ingress_entry_layout", "Ingress"]


class Verdict(enum.Enum, shape=3):
    DATA      = 0
    ACK       = 1
    RUNT      = 2
    OVERSIZE  = 3
    DATA_FULL = 4


def ingress_entry_layout(*, ring_bits, buf_bits):
    return data.StructLayout({
        "verdict": Verdict,
        "nbytes":  16,
        "l3_bytes": 12,            # IP packet length (shaper accounting), <= MAX_FRAME_BYTES
        "start":   ring_bits,      # data ring word address of a DATA frame
        "buf":     buf_bits,       # ACK buffer of an ACK
        "ip":      ip_header_layout,   # where RED marks a DATA frame (ECN: meta.ecn)
        "meta":    ack_meta_layout,
        "seg":     seg_info_layout,    # what the segmenter needs of a DATA frame
    })


class Ingress(wiring.Component):
    """Frames in, committed frames out (as FIFO records).

    Ports
    -----
    i : In(FrameStream)
    ack_mode : In(2)                  0 = off: every frame is data
    ring_wr : Out                     write port of the data ring
    ack_wr : Out                      write port of the ACK buffers
    sum_wr : Out                      write port of the segmenter's block sums: payload block j
                                      of a frame whose payload starts in ring word w lives at
                                      (w >> 2) + j (spec section 9; no two frames' blocks meet)
    data_rd_ptr : In(ring_bits + 1)   the egress has released the ring up to here
    data_frames_released : In(1)      a data frame left the ring
    stage_alloc_valid, stage_alloc_id, stage_take : the ACK buffer pool
    entry_valid, entry, entry_ready : the record to the queue manager's FIFO
    ev_overrun : Out(1)               a frame was dropped: FIFO full
    stat_frame, stat_bytes, stat_pure_ack, stat_ineligible : Out   per-frame statistics strobes
    idle : Out(1)                     no frame in flight here
    """

    def __init__(self, *, ring_words, desc_depth, buf_count):
        self.ring_words = ring_words
        self.desc_depth = desc_depth
        self.buf_count = buf_count
        self.ring_bits = (ring_words - 1).bit_length()
        self.buf_bits = (buf_count - 1).bit_length()
        self.slot_words = ACK_SLOT_BYTES // WORD_BYTES
        rb, bb = self.ring_bits, self.buf_bits
        super().__init__({
            "i":                    In(FrameStream()),
            "ack_mode":             In(2),
            "ring_wr_en":           Out(1),
            "ring_wr_addr":         Out(rb),
            "ring_wr_data":         Out(32),
            "ack_wr_en":            Out(1),
            "ack_wr_addr":          Out(bb + (self.slot_words - 1).bit_length()),
            "ack_wr_data":          Out(32),
            "sum_wr_en":            Out(1),
            "sum_wr_addr":          Out(rb - 2),
            "sum_wr_data":          Out(16),
            "data_rd_ptr":          In(rb + 1),
            "data_frame_released":  In(1),
            "stage_alloc_valid":    In(1),
            "stage_alloc_id":       In(bb),
            "stage_take":           Out(1),
            "entry_valid":          Out(1),
            "entry":                Out(ingress_entry_layout(ring_bits=rb, buf_bits=bb)),
            "entry_ready":          In(1),
            "ev_overrun":           Out(1),
            "stat_frame":           Out(1),
            "stat_bytes":           Out(16),
            "stat_pure_ack":        Out(1),
            "stat_ineligible":      Out(1),
            "data_frames_queued":   Out(range(self.desc_depth + 1)),
            "idle":                 Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.parser = parser = FrameParser()
        rb = self.ring_bits

        beat = self.i.payload
        take_word = self.i.valid & parser.ready
        m.d.comb += [
            self.i.ready.eq(parser.ready),
            parser.valid.eq(self.i.valid),
            parser.data.eq(beat.data),
            parser.keep.eq(beat.keep),
            parser.last.eq(beat.last),
        ]

        wr_ptr      = Signal(rb + 1)        # end of the committed data in the ring
        widx        = Signal(16)            # words of this frame so far
        in_frame    = Signal()
        overflow    = Signal()              # this frame did not fit in the ring
        stage_buf   = Signal(self.buf_bits, init=self.buf_count - 1)
        queued      = self.data_frames_queued

        word_ptr = Signal(rb + 1)
        m.d.comb += word_ptr.eq(wr_ptr + widx)
        fits = Signal()
        m.d.comb += fits.eq(((word_ptr - self.data_rd_ptr)[:rb + 1] < self.ring_words) & (widx < 2**rb))

        m.d.comb += [
            self.ring_wr_addr.eq(word_ptr[:rb]),
            self.ring_wr_data.eq(beat.data),
            self.ring_wr_en.eq(take_word & fits & ~overflow),
            self.ack_wr_addr.eq(Cat(widx[:(self.slot_words - 1).bit_length()], stage_buf)),
            self.ack_wr_data.eq(beat.data),
            self.ack_wr_en.eq(take_word & (widx < self.slot_words)),
        ]
        with m.If(take_word):
            with m.If(~fits):
                m.d.sync += overflow.eq(1)
            with m.If(beat.last):
                m.d.sync += [widx.eq(widx + 1), in_frame.eq(0)]
            with m.Else():
                m.d.sync += [widx.eq(widx + 1), in_frame.eq(1)]

        # The segmenter's block sums, as the parser strobes them. A block's
        # address is its first word's, over four: a frame's first block is at
        # least 13 words after its start (headers), so it never shares an
        # address with a block of the frame before, and within the ring no
        # two live blocks do. Not after an overflow: the words did not fit,
        # and their addresses may hold a queued frame's blocks.
        pay_base = Signal(rb)
        m.d.comb += [
            pay_base.eq(wr_ptr[:rb] + parser.pay_word),
            self.sum_wr_en.eq(parser.sum_we & ~overflow),
            self.sum_wr_addr.eq(pay_base[2:] + parser.sum_block),
            self.sum_wr_data.eq(parser.sum_value),
        ]

        # Commit, the cycle the parser presents its result (input is held off).
        res = parser.result
        entry = self.entry
        verdict = Signal(Verdict)
        with m.Switch(res.cls):
            with m.Case(FrameClass.RUNT):
                m.d.comb += verdict.eq(Verdict.RUNT)
            with m.Case(FrameClass.OVERSIZE):
                m.d.comb += verdict.eq(Verdict.OVERSIZE)
            with m.Case(FrameClass.ACK):
                with m.If(self.ack_mode == 0):
                    m.d.comb += verdict.eq(Mux(overflow | (queued == self.desc_depth),
                                               Verdict.DATA_FULL, Verdict.DATA))
                with m.Else():
                    m.d.comb += verdict.eq(Verdict.ACK)
            with m.Default():
                m.d.comb += verdict.eq(Mux(overflow | (queued == self.desc_depth),
                                           Verdict.DATA_FULL, Verdict.DATA))

        m.d.comb += [
            entry.verdict.eq(verdict),
            entry.nbytes.eq(res.nbytes),
            entry.l3_bytes.eq(res.l3_bytes),
            entry.start.eq(wr_ptr[:rb]),
            entry.buf.eq(stage_buf),
            entry.meta.eq(res.meta),
            entry.ip.eq(res.ip),
            entry.seg.eq(res.seg),
            self.entry_valid.eq(parser.done),
            self.stat_frame.eq(parser.done),
            self.stat_bytes.eq(Mux(parser.done, res.nbytes, 0)),
            self.stat_pure_ack.eq(parser.done & res.pure_ack),
            self.stat_ineligible.eq(parser.done & res.pure_ack & ~res.meta.eligible),
        ]
        committed_data = Signal()
        with m.If(parser.done):
            m.d.sync += [widx.eq(0), overflow.eq(0)]
            with m.If(~self.entry_ready):
                m.d.comb += self.ev_overrun.eq(1)
            with m.Elif(verdict == Verdict.DATA):
                m.d.comb += committed_data.eq(1)
                m.d.sync += wr_ptr.eq(wr_ptr + widx)
            with m.Elif(verdict == Verdict.ACK):
                m.d.comb += self.stage_take.eq(1)
                m.d.sync += stage_buf.eq(self.stage_alloc_id)

        m.d.sync += queued.eq(queued + committed_data - self.data_frame_released)
        m.d.comb += self.idle.eq(~in_frame & parser.ready & ~parser.done & ~self.i.valid)
        return m
