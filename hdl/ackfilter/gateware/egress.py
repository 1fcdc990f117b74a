"""Egress of the uplink core: stream one granted frame out of its buffer,
with RED's CE mark written on the way (spec section 10), or one chunk of a
data frame the segmenter cuts (spec section 9)."""

from types import SimpleNamespace

from amaranth.hdl import *
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from ..protocol import MAX_CHUNK_BYTES, MIN_FRAME_BYTES, SEGMENT_BLOCK_BYTES, TCP_FIN, TCP_PROTOCOL, TCP_PSH
from .ingress import CELL_WORDS, MAX_CELLS
from .lib.cells import chain_layout
from .lib.stream import FrameStream, WORD_BYTES
from .parser import ip_header_layout, seg_info_layout

__all__ = ["Egress"]

IPV6_HEADER_BYTES = 40            # RFC 8200 section 3: the payload length leaves it out
PPP_PROTOCOL_BYTES = 2            # RFC 2516 section 4: the PPPoE length counts the PPP protocol
#: Preparation steps after the last block sum is read: the block RAM's
#: output, its register, the accumulator, and two folds of its end-around
#: carries. The IPv4 header checksum is ready at step _PREP_IP_STEPS.
_PREP_TAIL_CYCLES = 4
_PREP_IP_STEPS = 8
#: A payload block (spec section 9) is 2**_BLOCK_SHIFT bytes, a whole number of words.
_BLOCK_SHIFT = SEGMENT_BLOCK_BYTES.bit_length() - 1
_MAX_BLOCKS = MAX_CHUNK_BYTES // SEGMENT_BLOCK_BYTES
assert SEGMENT_BLOCK_BYTES == 1 << _BLOCK_SHIFT and SEGMENT_BLOCK_BYTES % WORD_BYTES == 0
_ACC_BITS = 24                    # the TCP checksum's sum: 5 header terms and the blocks'
assert (5 + _MAX_BLOCKS) * 0xFFFF < 1 << _ACC_BITS and (1 << _ACC_BITS - 16) <= 0x10000


def _swap16(v):
    """A 16-bit value's bytes swapped: network order <-> lane order (RFC 1071
    section 2 (B): ones' complement sums commute with it)."""
    return Cat(v[8:16], v[0:8])


class Egress(wiring.Component):
    """Reads a frame word by word from the data buffer's cells or an ACK buffer.

    A small FIFO decouples the one-cycle memory read latency from the output
    back-pressure. A data frame's cells are found by walking their chain
    (:mod:`.lib.cells`) from its first, one a cycle, ahead of the reads. When
    the frame's last word has been accepted, the buffer is released: an ACK
    buffer goes back to the pool, a data frame's cells to the free list.

    A grant with ``start_seg`` is one chunk of a data frame the segmenter
    cuts (spec section 9, ``model.segmenter.segment``): the frame's headers
    (words ``0 .. pay_word - 1`` and ``hdr_tail``), then its payload bytes
    ``start_chunk_off`` .. ``+ start_chunk_len``, with the PPPoE length, the
    IP length, the IPv4 identification (``+ start_chunk_idx``), the IPv4
    header checksum (RFC 1624 eq. 3, together with RED's CE mark), the TCP
    sequence number, FIN/PSH (last chunk only) and the TCP checksum of the
    chunk written on the way, padded with zeros to 60 bytes. The TCP
    checksum needs the sums of the payload blocks the chunk covers: they are
    read, one per cycle, in a preparation phase before the chunk's first
    word is read (``busy`` is high through it), once the chain is walked. The
    cells are released only with the last chunk's last word; ``stat_*``
    counts every chunk.

    Ports
    -----
    start, start_is_ack, start_addr, start_bytes : In   a frame to send: its ACK
                                        buffer or first cell, its bytes as
                                        stored (a chunk: the whole frame's)
    start_mark, start_ip : In           send it with its IP header's ECN field CE
    start_seg, start_seg_info : In      this grant is a chunk of a cut data frame
    start_chunk_idx, start_chunk_off, start_chunk_len, start_chunk_last : In
                                        the chunk: index, first payload byte
                                        (a multiple of 16), payload bytes, last one
    busy : Out(1)                       a frame is being prepared or sent
    ring_rd_addr, ring_rd_data : the data buffer's read port (synchronous)
    cell_addr, cell_next, cell_ok : the free list's ``next`` (combinational), for the
                                        walk, when ``cell_ok`` (the ingress has the port first)
    ack_rd_addr, ack_rd_data : the ACK buffer read port (synchronous)
    sum_rd_addr, sum_rd_data : the payload block sums' read port (synchronous)
    o : Out(FrameStream)
    release_buf_en, release_buf_id : an ACK buffer is free again
    release_cells_en, release_cells : a data frame's cells are free again
    stat_frame, stat_bytes : Out        a frame (or chunk) has left, its bytes

    Parameters
    ----------
    cells : int          cells of the data buffer
    buf_bits : int       log2 of the ACK buffer count
    slot_words : int     words per ACK buffer
    """

    def __init__(self, *, cells, buf_bits, slot_words, fifo=SyncFIFOBuffered):
        self.cells = cells
        #: The FIFO before the output, ``fifo(width=, depth=)``: an Amaranth
        #: FIFO (the proof of the releases, ``formal/egress.py``, gives one
        #: whose entries it can read).
        self.fifo = fifo
        self.cell_bits = (cells - 1).bit_length()
        ring_bits = self.cell_bits + (CELL_WORDS - 1).bit_length()
        self.ring_bits = ring_bits
        self.buf_bits = buf_bits
        self.slot_bits = (slot_words - 1).bit_length()
        super().__init__({
            "start":               In(1),
            "start_is_ack":        In(1),
            "start_addr":          In(max(self.cell_bits, buf_bits)),
            "start_bytes":         In(16),
            "start_mark":          In(1),
            "start_ip":            In(ip_header_layout),
            "start_seg":           In(1),
            "start_seg_info":      In(seg_info_layout),
            "start_chunk_idx":     In(7),
            "start_chunk_off":     In(11),
            "start_chunk_len":     In(11),
            "start_chunk_last":    In(1),
            "busy":                Out(1),
            "ring_rd_addr":        Out(ring_bits),
            "ring_rd_data":        In(32),
            "cell_addr":           Out(range(cells)),
            "cell_next":           In(range(cells)),
            "cell_ok":             In(1),
            "ack_rd_addr":         Out(buf_bits + self.slot_bits),
            "ack_rd_data":         In(32),
            "sum_rd_addr":         Out(ring_bits - 2),
            "sum_rd_data":         In(16),
            "o":                   Out(FrameStream()),
            "release_buf_en":      Out(1),
            "release_buf_id":      Out(buf_bits),
            "release_cells_en":    Out(1),
            "release_cells":       Out(chain_layout(cells, MAX_CELLS)),
            "stat_frame":          Out(1),
            "stat_bytes":          Out(16),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.fifo = fifo = self.fifo(width=32 + 4 + 2, depth=4)

        is_ack      = Signal()
        addr        = Signal(max(self.ring_bits, self.buf_bits))
        nbytes      = Signal(16)            # bytes that leave (a chunk's, padded)
        nwords      = Signal(15)
        rd_idx      = Signal(15)            # next word to read
        pending     = Signal()              # a read was issued last cycle
        pend_idx    = Signal(15)

        mark = Signal()
        ip = Signal(ip_header_layout)

        # The chunk (spec section 9), as granted.
        seg        = Signal()
        info       = Signal(seg_info_layout)
        chunk_idx  = Signal(7)
        chunk_off  = Signal(11)
        chunk_len  = Signal(11)
        chunk_last = Signal()

        prep      = Signal()                # reading block sums, no word issued yet
        prep_step = Signal(range(_MAX_BLOCKS + _PREP_TAIL_CYCLES + 1))

        m.d.comb += nwords.eq((nbytes + WORD_BYTES - 1) >> 2)

        # The data frame's cells: `chain[k]` is its cell k, walked one a
        # cycle from its first (`walk_cell` ends at its last).
        wb = (CELL_WORDS - 1).bit_length()
        chain     = Array(Signal(range(self.cells), name=f"chain{k}") for k in range(MAX_CELLS))
        walk_k    = Signal(range(MAX_CELLS + 1))
        walk_cell = Signal(range(self.cells))
        ncells    = Signal(range(MAX_CELLS + 1))
        walk_done = Signal()
        m.d.comb += [walk_done.eq(walk_k >= ncells), self.cell_addr.eq(walk_cell)]
        with m.If(self.start):
            m.d.sync += [chain[0].eq(self.start_addr), walk_cell.eq(self.start_addr), walk_k.eq(1),
                         ncells.eq(Mux(self.start_is_ack, 1, (self.start_bytes + CELL_WORDS * WORD_BYTES - 1)
                                       >> (wb + 2)))]
        with m.Elif(~walk_done & self.cell_ok):
            m.d.sync += [chain[walk_k].eq(self.cell_next), walk_cell.eq(self.cell_next), walk_k.eq(walk_k + 1)]

        with m.If(self.start):
            seg_now = self.start_seg & ~self.start_is_ack
            m.d.sync += [
                self.busy.eq(1), is_ack.eq(self.start_is_ack), addr.eq(self.start_addr),
                nbytes.eq(self.start_bytes), rd_idx.eq(0),
                mark.eq(self.start_mark), ip.eq(self.start_ip),
                seg.eq(seg_now), info.eq(self.start_seg_info),
                chunk_idx.eq(self.start_chunk_idx), chunk_off.eq(self.start_chunk_off),
                chunk_len.eq(self.start_chunk_len), chunk_last.eq(self.start_chunk_last),
                prep.eq(seg_now), prep_step.eq(0),
            ]

        # --- Preparation of a chunk -------------------------------------------------------
        # Step 0: the chunk's lengths, sequence number, flags and addresses,
        # from the registered grant. Steps 1 .. blocks: read the block sums
        # (block j of the payload at ((first payload word) >> 2) + j, so the
        # chunk's first is chunk_off / 16 further on). Meanwhile the header's
        # part of the TCP checksum is summed (steps 1-2) into `acc`, which
        # then takes one registered block sum per cycle; two folds and the
        # complement end it (step blocks + 4).
        # The ring's read port is idle meanwhile: steps 1-3 address the IP
        # header's words ip.word, +1 and +3 (registered at steps 2-4) (word 0 with the TOS, total length
        # and identification, checksum), for the chunk's identification and
        # IPv4 header checksum, RFC 1624 eq. 3 over every word that changes:
        # HC' = ~(~HC + ~m + m' + ~len + len' + ~id + id'), in network order
        # (m' = m | 3 with the CE mark, m otherwise), ready at step 8.
        # Every add is registered, and so is every block RAM output.
        frame_end  = Signal(12)             # the chunk frame's bytes before padding
        end_word   = Signal(10)             # the word holding its end ...
        end_lane   = Signal(2)              # ... and the first lane past it (0: none)
        ip_len     = Signal(16)             # the chunk's IP packet bytes
        tcp_len    = Signal(16)             # protocol + TCP length of the pseudo-header
        seq_i      = Signal(32)             # the chunk's sequence number
        offflags_i = Signal(16)             # its data-offset/flags word (network order)
        blocks     = Signal(range(_MAX_BLOCKS + 1))   # block sums to read, 1..91
        prep_end   = Signal.like(prep_step)   # the preparation's last step
        blk_word   = Signal(9)              # the frame word where the next block sum's block starts
        hdr_a      = Signal(17)
        hdr_b      = Signal(17)
        acc        = Signal(_ACC_BITS)
        acc_fold   = Signal(17)
        tcp_csum   = Signal(16)             # lane order
        ip_w0      = Signal(32)             # IP header words as read
        ip_w1      = Signal(32)
        ip_w3      = Signal(32)
        ip_sum_m   = Signal(17)             # ~m + m'
        ip_sum_l   = Signal(18)             # ... + ~len + len'
        ip_sum_i   = Signal(19)             # ... + ~id + id'
        ip_sum_h   = Signal(19)             # ... + ~HC
        ip_sum_f   = Signal(17)             # folded once
        ip_id_new  = Signal(16)             # network order
        ip_hc_lane = Signal(16)             # the replacement fields, lane order
        pppoe_lane = Signal(16)
        len4_lane  = Signal(16)
        plen6_lane = Signal(16)

        pay_word_ext = info.pay_word.as_unsigned()
        m.d.comb += frame_end.eq(4 * pay_word_ext + 2 + chunk_len)
        with m.If(prep & (prep_step == 0)):
            m.d.sync += [
                nbytes.eq(Mux(frame_end < MIN_FRAME_BYTES, MIN_FRAME_BYTES, frame_end)),
                end_word.eq(frame_end[2:]), end_lane.eq(frame_end[:2]),
                ip_len.eq(4 * (pay_word_ext - ip.word) + chunk_len),
                tcp_len.eq(TCP_PROTOCOL + 4 * (pay_word_ext - info.tcp_word) + chunk_len),
                seq_i.eq(info.seq + chunk_off),
                offflags_i.eq(Mux(chunk_last, info.offflags,
                                  info.offflags & (0xFFFF ^ (TCP_FIN | TCP_PSH)))),
                blocks.eq((chunk_len + SEGMENT_BLOCK_BYTES - 1) >> _BLOCK_SHIFT),
                blk_word.eq(info.pay_word + chunk_off[2:]),
                rd_idx.eq(ip.word),
            ]
        with m.If(prep & (prep_step == 1)):
            m.d.sync += [
                hdr_a.eq(info.sum + _swap16(tcp_len)),
                hdr_b.eq(_swap16(seq_i[16:32]) + _swap16(seq_i[0:16])),
                pppoe_lane.eq(_swap16(ip_len + PPP_PROTOCOL_BYTES)),
                len4_lane.eq(_swap16(ip_len)),
                plen6_lane.eq(_swap16(ip_len - IPV6_HEADER_BYTES)),
                prep_end.eq(Mux(blocks < _PREP_IP_STEPS - _PREP_TAIL_CYCLES, _PREP_IP_STEPS,
                                blocks + _PREP_TAIL_CYCLES)),
                rd_idx.eq(ip.word + 1),
            ]
        with m.If(prep & (prep_step == 2)):
            m.d.sync += [ip_w0.eq(self.ring_rd_data), rd_idx.eq(ip.word + 3)]
        with m.If(prep & (prep_step == 3)):
            m_old = _swap16(ip_w0[16:32])
            m.d.sync += [
                ip_w1.eq(self.ring_rd_data), rd_idx.eq(0),
                ip_sum_m.eq((~m_old & 0xFFFF) + Mux(mark, m_old | 3, m_old)),
            ]
        with m.If(prep & (prep_step == 4)):
            len_old, id_old = _swap16(ip_w1[0:16]), _swap16(ip_w1[16:32])
            m.d.sync += [
                ip_w3.eq(self.ring_rd_data),
                ip_sum_l.eq(ip_sum_m + (~len_old & 0xFFFF) + ip_len),
                ip_id_new.eq(id_old + chunk_idx),
            ]
        with m.If(prep & (prep_step == 5)):
            m.d.sync += ip_sum_i.eq(ip_sum_l + (~_swap16(ip_w1[16:32]) & 0xFFFF) + ip_id_new)
        with m.If(prep & (prep_step == 6)):
            m.d.sync += ip_sum_h.eq(ip_sum_i + (~_swap16(ip_w3[0:16]) & 0xFFFF))
        with m.If(prep & (prep_step == 7)):
            m.d.sync += ip_sum_f.eq(ip_sum_h[0:16] + ip_sum_h[16:19])
        with m.If(prep & (prep_step == 8)):
            m.d.sync += ip_hc_lane.eq(_swap16(~(ip_sum_f[0:16] + ip_sum_f[16])))

        sum_issue = Signal()
        sum_valid = Signal()                # sum_rd_data is a block sum
        sum_reg_valid = Signal()
        sum_reg = Signal(16)
        m.d.comb += [
            sum_issue.eq(prep & (prep_step >= 1) & (prep_step <= blocks)),
            self.sum_rd_addr.eq(Cat(blk_word[2:wb], chain[blk_word[wb:]])),
        ]
        with m.If(sum_issue):
            m.d.sync += blk_word.eq(blk_word + 4)
        m.d.sync += [sum_valid.eq(sum_issue), sum_reg_valid.eq(sum_valid), sum_reg.eq(self.sum_rd_data)]

        with m.If(prep & (prep_step == 2)):
            m.d.sync += acc.eq(hdr_a + hdr_b + _swap16(offflags_i))
        with m.Elif(sum_reg_valid):
            m.d.sync += acc.eq(acc + sum_reg)
        # (Step 0 waits for the chain: the steps after it read the cells.)
        with m.If(prep & ((prep_step != 0) | walk_done)):
            m.d.sync += prep_step.eq(prep_step + 1)
            with m.If(prep_step == blocks + (_PREP_TAIL_CYCLES - 1)):
                m.d.sync += acc_fold.eq(acc[0:16] + acc[16:_ACC_BITS])
            with m.If(prep_step == blocks + _PREP_TAIL_CYCLES):
                m.d.sync += tcp_csum.eq(~(acc_fold[0:16] + acc_fold[16]))
            with m.If((prep_step >= _PREP_IP_STEPS) & (prep_step == prep_end)):
                m.d.sync += prep.eq(0)

        # --- Reading the words ------------------------------------------------------------
        # A chunk's words from pay_word on are the payload's words from
        # chunk_off on: the frame's words chunk_off / 4 further on.
        in_payload = Signal()
        frame_word = Signal(10)
        with m.If(self.start):
            m.d.sync += in_payload.eq(0)
        m.d.comb += [
            frame_word.eq(Mux(in_payload, chunk_off[2:], 0) + rd_idx),
            self.ring_rd_addr.eq(Cat(frame_word[:wb], chain[frame_word[wb:]])),
            self.ack_rd_addr.eq(Cat(rd_idx[:self.slot_bits], addr[:self.buf_bits])),
        ]

        # Issue a read when the FIFO has room for it and the words in flight:
        # the word read (block RAM output, `pending`) is registered (`staged`)
        # before the FIFO, since the block RAMs' outputs arrive late and the
        # ACK buffers span nine of them.
        issue = Signal()
        staged = Signal()
        m.d.comb += issue.eq(self.busy & ~prep & (rd_idx < nwords)
                             & (fifo.level + pending + staged < 4))
        with m.If(issue):
            m.d.sync += rd_idx.eq(rd_idx + 1)
            with m.If(seg & (rd_idx + 1 == info.pay_word)):
                m.d.sync += in_payload.eq(1)
        m.d.sync += [pending.eq(issue), pend_idx.eq(rd_idx)]

        word = Mux(is_ack, self.ack_rd_data, self.ring_rd_data)
        tail = nbytes[:2]
        keep = Signal(4)
        with m.If((pend_idx + 1 == nwords) & (tail != 0)):
            m.d.comb += keep.eq(Mux(tail == 1, 0b0001, Mux(tail == 2, 0b0011, 0b0111)))
        with m.Else():
            m.d.comb += keep.eq(0b1111)
        staged_data = Signal(32 + 4 + 2)
        staged_idx = Signal(15)
        m.d.sync += [staged.eq(pending), staged_idx.eq(pend_idx),
                     staged_data.eq(Cat(word, keep, pend_idx == 0, pend_idx + 1 == nwords))]

        # --- Rewriting the word -----------------------------------------------------------
        # Every header starts at byte 2 of a word, so a 16-bit field is lanes
        # 0-1 (`lo`) or 2-3 (`hi`) of one word, in network order (its first
        # byte in the lower lane). The IP header starts in word ip.word: its
        # byte 1 (IPv4 TOS, IPv6 traffic class bits 3-0) is lane 3 there, the
        # IPv4 total length and identification are word ip.word+1 (IPv6
        # payload length: hi), the IPv4 header checksum lo of ip.word+3, the
        # PPPoE length hi of ip.word-1. TCP (word tcp_word): sequence number
        # hi of +1 and lo of +2, data-offset/flags hi of +3, checksum hi of
        # +4. What a word gets is decided the cycle before, from the index of
        # the word read (`pend_idx`), and registered beside it, so only a
        # multiplexer and the lane mask stand between the staged word and
        # the FIFO (and, for a whole frame, the mark's checksum update).
        lo_sel, lo_val = Signal(), Signal(16)
        hi_sel, hi_val = Signal(), Signal(16)
        lanes_c = Signal(4)
        tos_sel, hc_mark_sel = Signal(), Signal()

        def at(k):
            return pend_idx == k

        with m.If(seg & ~ip.ipv6 & at(ip.word + 1)):
            m.d.comb += [lo_sel.eq(1), lo_val.eq(len4_lane), hi_sel.eq(1), hi_val.eq(_swap16(ip_id_new))]
        with m.If(seg & ip.ipv6 & at(ip.word + 1)):
            m.d.comb += [hi_sel.eq(1), hi_val.eq(plen6_lane)]
        with m.If(seg & ~ip.ipv6 & at(ip.word + 3)):
            m.d.comb += [lo_sel.eq(1), lo_val.eq(ip_hc_lane)]
        with m.If(seg & info.pppoe & at(ip.word - 1)):
            m.d.comb += [hi_sel.eq(1), hi_val.eq(pppoe_lane)]
        with m.If(seg & at(info.tcp_word + 1)):
            m.d.comb += [hi_sel.eq(1), hi_val.eq(_swap16(seq_i[16:32]))]
        with m.If(seg & at(info.tcp_word + 2)):
            m.d.comb += [lo_sel.eq(1), lo_val.eq(_swap16(seq_i[0:16]))]
        with m.If(seg & at(info.tcp_word + 3)):
            m.d.comb += [hi_sel.eq(1), hi_val.eq(_swap16(offflags_i))]
        with m.If(seg & at(info.tcp_word + 4)):
            m.d.comb += [hi_sel.eq(1), hi_val.eq(tcp_csum)]
        with m.If(seg & at(info.pay_word)):
            m.d.comb += [lo_sel.eq(1), lo_val.eq(info.hdr_tail)]
        m.d.comb += [
            tos_sel.eq(mark & at(ip.word)),
            hc_mark_sel.eq(mark & ~seg & ~ip.ipv6 & at(ip.word + 3)),
        ]
        # A chunk ends after its payload: the bytes past it up to the padded
        # length are zeros (the ring holds the rest of the payload there).
        with m.If(seg & (pend_idx > end_word)):
            m.d.comb += lanes_c.eq(0b0000)
        with m.Elif(seg & (pend_idx == end_word)):
            m.d.comb += lanes_c.eq(Mux(end_lane == 0, 0b0000, Mux(end_lane == 1, 0b0001,
                                                                  Mux(end_lane == 2, 0b0011, 0b0111))))
        with m.Else():
            m.d.comb += lanes_c.eq(0b1111)

        s_lo_sel, s_lo_val = Signal(), Signal(16)
        s_hi_sel, s_hi_val = Signal(), Signal(16)
        s_lanes = Signal(4)
        s_tos_sel, s_hc_mark_sel = Signal(), Signal()
        m.d.sync += [
            s_lo_sel.eq(lo_sel), s_lo_val.eq(lo_val), s_hi_sel.eq(hi_sel), s_hi_val.eq(hi_val),
            s_lanes.eq(lanes_c), s_tos_sel.eq(tos_sel), s_hc_mark_sel.eq(hc_mark_sel),
        ]

        # RED's CE mark (model.red.set_ce): lane 3 of word ip.word gets ECN
        # CE. For a whole IPv4 frame the header checksum HC becomes, on the
        # way, ~(~HC + ~m + m') in ones' complement (RFC 1624 eq. 3; m is
        # header word 0, m' = m | 3). A chunk's checksum was computed in the
        # preparation, over every word that changes (the mark's too).
        w = staged_data[0:32]
        m_old = Signal(16)
        new_lo = Signal(16)
        m.d.comb += new_lo.eq(w[0:16])
        with m.If(s_tos_sel):
            m.d.sync += m_old.eq(Cat(w[24:32], w[16:24]))
        with m.If(s_hc_mark_sel):
            hc = Cat(w[8:16], w[0:8])
            total = Signal(18)
            fold1 = Signal(17)
            new_hc = Signal(16)
            m.d.comb += [
                total.eq((~hc & 0xFFFF) + (~m_old & 0xFFFF) + (m_old | 3)),
                fold1.eq(total[0:16] + total[16:18]),
                new_hc.eq(~(fold1[0:16] + fold1[16])),
                new_lo.eq(Cat(new_hc[8:16], new_hc[0:8])),
            ]
        tos_or = Mux(s_tos_sel, Mux(ip.ipv6, 0x30, 0x03), 0)
        out_word = Cat(Mux(s_lo_sel, s_lo_val, new_lo),
                       Mux(s_hi_sel, s_hi_val, w[16:32]) | (tos_or << 8))
        masked_word = Cat(*(out_word[8 * k:8 * k + 8] & s_lanes[k].replicate(8) for k in range(4)))

        m.d.comb += [
            fifo.w_en.eq(staged),
            fifo.w_data.eq(Cat(masked_word, staged_data[32:])),
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

        # The cells go back with a whole data frame, or with a cut frame's
        # last chunk (all of the stored frame's cells).
        releases_data = ~is_ack & (~seg | chunk_last)
        m.d.comb += [self.release_cells.first.eq(chain[0]), self.release_cells.last.eq(walk_cell),
                     self.release_cells.n.eq(ncells)]
        with m.If(self.o.valid & self.o.ready & out.last):
            m.d.sync += self.busy.eq(0)
            m.d.comb += [
                self.stat_frame.eq(1),
                self.stat_bytes.eq(nbytes),
                self.release_buf_en.eq(is_ack),
                self.release_buf_id.eq(addr[:self.buf_bits]),
                self.release_cells_en.eq(releases_data),
            ]
        # Every name above, for the proof of the releases (formal/egress.py).
        self.internals = SimpleNamespace(**locals())
        return m
