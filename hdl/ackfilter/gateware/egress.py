"""Egress of the uplink core: stream one granted frame out of its buffer,
with RED's CE mark written on the way (spec section 10)."""

from amaranth.hdl import *
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from .lib.stream import FrameStream, WORD_BYTES
from .parser import ip_header_layout

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
    start_mark, start_ip : In           send it with its IP header's ECN field CE
    discard, discard_words : In         release that many ring words unsent (not while busy)
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
            "start_mark":          In(1),
            "start_ip":            In(ip_header_layout),
            "discard":             In(1),
            "discard_words":       In(16),
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

        mark = Signal()
        ip = Signal(ip_header_layout)
        with m.If(self.start):
            m.d.sync += [
                self.busy.eq(1), is_ack.eq(self.start_is_ack), addr.eq(self.start_addr),
                nbytes.eq(self.start_bytes), rd_idx.eq(0), out_idx.eq(0),
                mark.eq(self.start_mark), ip.eq(self.start_ip),
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
        # The CE mark (model.red.set_ce), on the staged word: the IP header
        # starts at byte 2 of word `ip.word`, so its byte 1 (IPv4 TOS, IPv6
        # traffic class bits 3-0 and flow label) is lane 3 of that word and
        # the IPv4 header checksum lanes 0-1 of the word three further on.
        # IPv4: header word 0 `m` becomes `m | 3`, the checksum HC becomes
        # ~(~HC + ~m + m') in ones' complement (RFC 1624 eq. 3).
        staged_idx = Signal(15)
        m.d.sync += staged_idx.eq(pend_idx)
        out_word = Signal(32)
        m_old = Signal(16)
        m.d.comb += out_word.eq(staged_data[0:32])
        with m.If(mark & (staged_idx == ip.word)):
            m.d.sync += m_old.eq(Cat(staged_data[24:32], staged_data[16:24]))
            m.d.comb += out_word[24:32].eq(staged_data[24:32] | Mux(ip.ipv6, 0x30, 0x03))
        with m.If(mark & ~ip.ipv6 & (staged_idx == ip.word + 3)):
            hc = Cat(staged_data[8:16], staged_data[0:8])
            total = Signal(18)
            fold1 = Signal(17)
            new_hc = Signal(16)
            m.d.comb += [
                total.eq((~hc & 0xFFFF) + (~m_old & 0xFFFF) + (m_old | 3)),
                fold1.eq(total[0:16] + total[16:18]),
                new_hc.eq(~(fold1[0:16] + fold1[16])),
                out_word[0:16].eq(Cat(new_hc[8:16], new_hc[0:8])),
            ]
        m.d.comb += [
            fifo.w_en.eq(staged),
            fifo.w_data.eq(Cat(out_word, staged_data[32:])),
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
        with m.If(self.discard):
            m.d.sync += data_rd_ptr.eq(data_rd_ptr + self.discard_words)
            m.d.comb += self.data_frame_released.eq(1)
        return m
