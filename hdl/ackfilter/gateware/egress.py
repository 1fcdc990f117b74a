"""Egress of the uplink core: stream one granted frame out of its buffer."""

from amaranth.hdl import *
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from .lib.stream import FrameStream, WORD_BYTES

__all__ = ["Egress"]


class Egress(wiring.Component):
    """Reads a frame word by word from the data ring or an ACK buffer.

    A small FIFO decouples the one-cycle memory read latency from the output
    back-pressure. When the frame's last word has been accepted, the buffer is
    released: an ACK buffer goes back to the pool, data ring space back to the
    ingress.

    Ports
    -----
    start, start_is_ack, start_addr, start_bytes : In   a frame to send
    busy : Out(1)                       a frame is being sent
    ring_rd_addr, ring_rd_data : the data ring read port (synchronous)
    ack_rd_addr, ack_rd_data : the ACK buffer read port (synchronous)
    o : Out(FrameStream)
    release_buf_en, release_buf_id : an ACK buffer is free again
    data_rd_ptr : Out                   ring released up to here
    data_frame_released : Out(1)
    stat_frame, stat_bytes : Out        a frame has left
    """

    def __init__(self, *, ring_bits, buf_bits, slot_words):
        self.ring_bits = ring_bits
        self.buf_bits = buf_bits
        self.slot_bits = (slot_words - 1).bit_length()
        super().__init__({
            "start":               In(1),
            "start_is_ack":        In(1),
            "start_addr":          In(max(ring_bits, buf_bits)),
            "start_bytes":         In(16),
            "busy":                Out(1),
            "ring_rd_addr":        Out(ring_bits),
            "ring_rd_data":        In(32),
            "ack_rd_addr":         Out(buf_bits + self.slot_bits),
            "ack_rd_data":         In(32),
            "o":                   Out(FrameStream()),
            "release_buf_en":      Out(1),
            "release_buf_id":      Out(buf_bits),
            "data_rd_ptr":         Out(ring_bits + 1),
            "data_frame_released": Out(1),
            "stat_frame":          Out(1),
            "stat_bytes":          Out(16),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.fifo = fifo = SyncFIFOBuffered(width=32 + 4 + 2, depth=4)

        is_ack   = Signal()
        addr     = Signal(max(self.ring_bits, self.buf_bits))
        nbytes   = Signal(16)
        nwords   = Signal(15)
        rd_idx   = Signal(15)               # next word to read
        out_idx  = Signal(15)               # next word to leave
        pending  = Signal()                 # a read was issued last cycle
        pend_idx = Signal(15)

        m.d.comb += nwords.eq((nbytes + WORD_BYTES - 1) >> 2)
        m.d.comb += [
            self.ring_rd_addr.eq(addr[:self.ring_bits] + rd_idx),
            self.ack_rd_addr.eq(Cat(rd_idx[:self.slot_bits], addr[:self.buf_bits])),
        ]

        with m.If(self.start):
            m.d.sync += [
                self.busy.eq(1), is_ack.eq(self.start_is_ack), addr.eq(self.start_addr),
                nbytes.eq(self.start_bytes), rd_idx.eq(0), out_idx.eq(0),
            ]

        # Issue a read when the FIFO has room for it and the words in flight:
        # the word read (block RAM output, `pending`) is registered (`staged`)
        # before the FIFO, since the block RAMs' outputs arrive late and the
        # ACK buffers span nine of them.
        issue = Signal()
        staged = Signal()
        m.d.comb += issue.eq(self.busy & (rd_idx < nwords) & (fifo.level + pending + staged < 4))
        with m.If(issue):
            m.d.sync += rd_idx.eq(rd_idx + 1)
        m.d.sync += [pending.eq(issue), pend_idx.eq(rd_idx)]

        word = Mux(is_ack, self.ack_rd_data, self.ring_rd_data)
        tail = nbytes[:2]
        keep = Signal(4)
        with m.If((pend_idx + 1 == nwords) & (tail != 0)):
            m.d.comb += keep.eq(Mux(tail == 1, 0b0001, Mux(tail == 2, 0b0011, 0b0111)))
        with m.Else():
            m.d.comb += keep.eq(0b1111)
        staged_data = Signal(32 + 4 + 2)
        m.d.sync += [staged.eq(pending),
                     staged_data.eq(Cat(word, keep, pend_idx == 0, pend_idx + 1 == nwords))]
        m.d.comb += [
            fifo.w_en.eq(staged),
            fifo.w_data.eq(staged_data),
        ]

        out = self.o.payload
        m.d.comb += [
            self.o.valid.eq(fifo.r_rdy),
            out.data.eq(fifo.r_data[0:32]),
            out.keep.eq(fifo.r_data[32:36]),
            out.first.eq(fifo.r_data[36]),
            out.last.eq(fifo.r_data[37]),
            fifo.r_en.eq(self.o.ready),
        ]

        data_rd_ptr = self.data_rd_ptr
        with m.If(self.o.valid & self.o.ready & out.last):
            m.d.sync += self.busy.eq(0)
            m.d.comb += [
                self.stat_frame.eq(1),
                self.stat_bytes.eq(nbytes),
                self.release_buf_en.eq(is_ack),
                self.release_buf_id.eq(addr[:self.buf_bits]),
                self.data_frame_released.eq(~is_ack),
            ]
            with m.If(~is_ack):
                m.d.sync += data_rd_ptr.eq(data_rd_ptr + nwords)
        return m
