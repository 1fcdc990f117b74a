# amaranth: UnusedElaboratable=no
# (The harness elaborates the egress itself, to reach its walk and its FIFO.)
"""The egress's half of the data buffer: a frame's cells are given back once,
whole, with its last word, and the words are read from the frame's own cells.

The egress (:class:`~ackfilter.gateware.egress.Egress`) walks a data
frame's chain of cells one a cycle whenever the free list's read port is
its (``cell_ok``), and reads the frame's words from ``chain[word / 64]``
without waiting for the walk: the walk must stay ahead of the reads, and
the port is the ingress's at most ``ingress.CELL_REQ_MAX_RUN`` cycles in a
row (``cell_req_run`` proves it). With that, :class:`ReleaseProof` proves
that a grant's cells go back to the free list (``release_cells``) exactly as
``cell_list`` assumes: the chain the queue manager granted (its first cell,
its ``ceil(bytes / 256)`` cells, its last cell as ``next`` links them),
once, in the cycle its last word leaves, and only for a whole frame or a
cut frame's last chunk.

The egress's output FIFO is replaced by :class:`ContractFIFO`, which keeps
the promises of an Amaranth FIFO (each word written comes out once, in
order; ``level`` counts the words held; a write needs room) and offers its
head whenever it likes, so what holds with it holds with
``SyncFIFOBuffered``; its entries are registers the proof reads.
"""

from amaranth.hdl import *
from amaranth.hdl._ast import AnySeq   # (amaranth.asserts is deprecated; 0.5 keeps it here)

from ..gateware import egress, ingress
from ..gateware.ingress import CELL_WORDS, MAX_CELLS
from ..gateware.lib.stream import WORD_BYTES
from ..params import ACK_SLOT_BYTES, DATA_CELL_BYTES, MAX_FRAME_BYTES
from ..protocol import MAX_CHUNK_BYTES, MIN_FRAME_BYTES
from . import Proof
from .harness import drive_inputs, mutant

__all__ = ["ContractFIFO", "ReleaseProof", "EGRESS_PROOFS"]

_LAST_BIT = 32 + 4 + 1          # the egress's FIFO word: data, keep, first, last


class ContractFIFO(Elaboratable):
    """A FIFO by its contract, with the ports the egress uses: each word
    written (``w_en`` while ``w_rdy``) comes out once, in order; ``level``
    counts the words held; ``w_rdy`` while ``level < depth``; the oldest
    word is offered (``r_rdy``) in any cycle it likes while one is held.
    ``entries[0]`` is the oldest word."""

    def __init__(self, *, width, depth):
        self.depth = depth
        self.w_data, self.w_en, self.w_rdy = Signal(width), Signal(), Signal()
        self.r_data, self.r_en, self.r_rdy = Signal(width), Signal(), Signal()
        self.level = Signal(range(depth + 1))
        self.entries = [Signal(width, name=f"entry{i}") for i in range(depth)]

    def elaborate(self, platform):
        m = Module()
        read = self.r_en & self.r_rdy
        write = self.w_en & self.w_rdy
        m.d.comb += [
            self.w_rdy.eq(self.level < self.depth),
            self.r_rdy.eq((self.level != 0) & AnySeq(1)),
            self.r_data.eq(self.entries[0]),
        ]
        lands = self.level - read                   # where a word written now goes
        for i, entry in enumerate(self.entries):
            with m.If(write & (lands == i)):
                m.d.sync += entry.eq(self.w_data)
            if i + 1 < self.depth:
                with m.Elif(read):
                    m.d.sync += entry.eq(self.entries[i + 1])
        m.d.sync += self.level.eq(self.level + write - read)
        return m


class ReleaseProof(Elaboratable):
    """The egress with 8 cells and 4 ACK buffers, its output FIFO
    :class:`ContractFIFO`, every input free but these. The queue manager's
    promises: a grant only while the egress is not ``busy``; a data frame of
    ``MIN_FRAME_BYTES .. MAX_FRAME_BYTES`` bytes as stored, an ACK of
    ``1 .. ACK_SLOT_BYTES``. The free list's: ``next`` of each cell is free
    between grants and keeps its value through one (a cell in use keeps its
    ``next``: ``cell_list``), and the port is the egress's (``cell_ok``)
    but for at most ``CELL_REQ_MAX_RUN`` cycles in a row; in those,
    ``cell_next`` is free.

    Shadow: the grant (its first cell or ACK buffer, its cells, whether it
    releases), the words that left since, and the chain along ``next``.
    Proven: a release of cells (``release_cells_en``) comes only for an
    outstanding grant that releases cells, once, in the cycle the grant's
    last word leaves, and gives back the granted chain (its first cell,
    ``ceil(bytes / 256)`` cells, its last cell along ``next``), never in
    two cycles in a row; an ACK buffer's release the same way; no word
    leaves without an outstanding grant; a whole frame's every word is read
    from the chain's cell it lies in; a cut frame's chunk reads nothing before the walk ends; the FIFO is
    never written while full. What makes it inductive: ``busy`` is the
    grant outstanding, and nothing is in flight without one; the cells
    walked so far are the chain's; the walk leads the reads by more than
    the port's longest wait (``rd_idx + CELL_REQ_MAX_RUN - wait <
    CELL_WORDS * walk_k`` until it ends); the words in flight (the read
    issued, the read registered, the FIFO's) are the ones after those
    that left, and each carries ``last`` exactly when it is the grant's
    last word."""

    def __init__(self, *, module=egress, cells=8, buf_count=4, deep_cover=False):
        self.deep_cover = deep_cover
        self.module = module
        self.dut = module.Egress(cells=cells, buf_bits=(buf_count - 1).bit_length(),
                                 slot_words=ACK_SLOT_BYTES // WORD_BYTES, fifo=ContractFIFO)
        self.max_wait = ingress.CELL_REQ_MAX_RUN

    def elaborate(self, platform):
        m = Module()
        dut = self.dut
        n, wait_max = dut.cells, self.max_wait
        m.submodules.dut = dut.elaborate(platform)
        v = dut.internals
        fifo = v.fifo
        m.d.comb += Assume(~ResetSignal())

        drive_inputs(m, dut, skip=("start", "cell_next", "cell_ok"))
        m.d.comb += dut.o.ready.eq(AnySeq(1))

        # The free list: `next` per cell, free between grants, kept through one.
        nxt = Array(Signal(range(n), name=f"next{i}") for i in range(n))
        with m.If(~dut.busy):
            m.d.sync += [nxt[i].eq(AnySeq(range(n))) for i in range(n)]
        wait = Signal(range(wait_max + 1))          # cycles in a row the port was not the egress's
        m.d.sync += wait.eq(Mux(dut.cell_ok, 0, wait + 1))
        m.d.comb += [
            dut.cell_ok.eq(AnySeq(1)),
            Assume(dut.cell_ok | (wait < wait_max)),
            dut.cell_next.eq(Mux(dut.cell_ok, nxt[dut.cell_addr], AnySeq(range(n)))),
        ]

        # The manager's grants.
        is_ack, nbytes = dut.start_is_ack, dut.start_bytes
        m.d.comb += [
            dut.start.eq(AnySeq(1) & ~dut.busy),
            Assume(Mux(is_ack, (nbytes >= 1) & (nbytes <= ACK_SLOT_BYTES),
                       (nbytes >= MIN_FRAME_BYTES) & (nbytes <= MAX_FRAME_BYTES))),
            Assume(dut.start_chunk_len <= MAX_CHUNK_BYTES),
        ]

        # The shadow.
        def cells_of(nbytes):
            return (nbytes + DATA_CELL_BYTES - 1) >> (DATA_CELL_BYTES - 1).bit_length()

        granted = Signal()
        g_first = Signal(range(n))
        g_buf = Signal(len(dut.release_buf_id))
        g_n = Signal(range(MAX_CELLS + 1))
        g_bytes = Signal(16)
        g_ack, g_rel = Signal(), Signal()
        left = Signal(15)                           # words that left since the grant
        leave = dut.o.valid & dut.o.ready
        with m.If(dut.start):
            m.d.sync += [
                granted.eq(1), g_first.eq(dut.start_addr), g_buf.eq(dut.start_addr), g_ack.eq(is_ack),
                g_bytes.eq(nbytes), g_n.eq(Mux(is_ack, 1, cells_of(nbytes))),
                g_rel.eq(~is_ack & (~dut.start_seg | dut.start_chunk_last)), left.eq(0),
            ]
        with m.Elif(leave):
            m.d.sync += left.eq(left + 1)
            with m.If(dut.o.payload.last):
                m.d.sync += granted.eq(0)
        path = [g_first]                            # the granted chain along `next`
        for _ in range(MAX_CELLS - 1):
            path.append(nxt[path[-1]])
        path = Array(path)

        # The releases.
        rel = dut.release_cells
        last_leaves = leave & (left + 1 == v.nwords)
        m.d.comb += [
            Assert(~leave | granted),
            Assert(~(leave & dut.o.payload.last) | last_leaves),
            Assert(~dut.release_cells_en | (granted & ~g_ack & g_rel & last_leaves & (rel.first == g_first) &
                                             (rel.n == g_n) & (rel.last == path[g_n - 1]))),
            Assert(~dut.release_buf_en | (granted & g_ack & last_leaves & (dut.release_buf_id == g_buf))),
            Assert(~(last_leaves & dut.o.payload.last) | (dut.release_cells_en == g_rel) &
                   (dut.release_buf_en == g_ack)),
            Assert(~fifo.w_en | fifo.w_rdy),
        ]
        rel_was = Signal()                          # (cell_list's port: at most every other cycle)
        m.d.sync += rel_was.eq(dut.release_cells_en)
        m.d.comb += Assert(~(rel_was & dut.release_cells_en))
        # The reads: a whole frame's from the cell its word lies in (walked:
        # see below); a chunk's only once the chain is walked.
        wb = (CELL_WORDS - 1).bit_length()
        whole_data = dut.busy & ~v.is_ack & ~v.seg
        m.d.comb += [
            Assert(~(v.issue & whole_data) | ((v.rd_idx >> wb) < v.walk_k)),
            Assert(~(v.prep & (v.prep_step != 0)) | v.walk_done),
        ]

        # What makes it inductive.
        in_flight = fifo.level + v.pending + v.staged
        m.d.comb += [Assert(dut.busy == granted), Assert(in_flight <= fifo.depth)]
        with m.If(~dut.busy):
            m.d.comb += Assert((fifo.level == 0) & ~v.pending & ~v.staged & ~v.prep)
        with m.Else():
            m.d.comb += [
                Assert(v.is_ack == g_ack),
                Assert((~v.is_ack & (~v.seg | v.chunk_last)) == g_rel),
                Assert(v.addr[:len(g_buf)] == g_buf),
                Assert(g_n == Mux(g_ack, 1, cells_of(g_bytes))),
                Assert(Mux(g_ack, (g_bytes >= 1) & (g_bytes <= ACK_SLOT_BYTES),
                           (g_bytes >= MIN_FRAME_BYTES) & (g_bytes <= MAX_FRAME_BYTES))),
                Assert(v.seg | (v.nbytes == g_bytes)),
                # (A chunk's preparation sets its bytes in step 0 and its
                # first word to read in step 3, then reads nothing more.)
                Assert(~v.seg | (v.prep & (v.prep_step == 0)) | (v.nbytes >= MIN_FRAME_BYTES)),
                Assert(~(v.prep & (v.prep_step > 3)) | (v.rd_idx == 0)),
                Assert(~v.prep | v.seg),
                Assert(v.chunk_len <= MAX_CHUNK_BYTES),
                Assert(~(v.prep & (v.prep_step >= 1)) | (v.blocks <= self.module._MAX_BLOCKS)),
                Assert(~(v.prep & (v.prep_step >= 2)) |
                       ((v.prep_step <= v.prep_end) & (v.prep_end >= self.module._PREP_IP_STEPS))),
                Assert((v.ncells == g_n) & (v.chain[0] == g_first)),
                Assert((g_n >= 1) & (g_n <= MAX_CELLS) & (v.walk_k >= 1) & (v.walk_k <= g_n)),
                Assert(v.walk_cell == path[v.walk_k - 1]),
                Assert(~v.seg | v.walk_done | (v.prep & (v.prep_step == 0))),
                Assert(v.walk_done | ~whole_data |
                       (v.rd_idx + wait_max - wait < CELL_WORDS * v.walk_k)),
            ]
            for k in range(1, MAX_CELLS):
                with m.If(k < v.walk_k):
                    m.d.comb += Assert(v.chain[k] == path[k])
            with m.If(v.prep):
                m.d.comb += Assert((in_flight == 0) & (left == 0))
            with m.Else():
                m.d.comb += [
                    Assert(v.nwords >= 1),
                    Assert((v.rd_idx == left + in_flight) & (v.rd_idx <= v.nwords)),
                    Assert(~v.pending | (v.pend_idx == left + fifo.level + v.staged)),
                    Assert(~v.staged | ((v.staged_idx == left + fifo.level) &
                                        (v.staged_data[_LAST_BIT] == (v.staged_idx + 1 == v.nwords)))),
                ]
                for i, entry in enumerate(fifo.entries):
                    with m.If(i < fifo.level):
                        m.d.comb += Assert(entry[_LAST_BIT] == (left + i + 1 == v.nwords))

        # Not vacuous: a frame of three cells walked while the port waited
        # its longest; a chunk of a frame of two cells past the walk; a
        # whole frame's cells and an ACK buffer given back. (A last chunk's
        # cells given back, 27 cycles after a reset at the earliest, took
        # the solver 99 s: `--deep`.)
        m.d.comb += [
            Cover(dut.busy & ~v.is_ack & v.walk_done & (g_n == 3) & (wait == wait_max)),
            Cover(v.prep & (v.prep_step == 2) & (g_n == 2)),
            Cover(dut.release_cells_en & ~v.seg),
            Cover(dut.release_buf_en),
        ]
        if self.deep_cover:
            m.d.comb += Cover(dut.release_cells_en & v.seg)
        return m


def _mutant(old, new):
    return lambda: ReleaseProof(module=mutant(egress, old, new))


EGRESS_PROOFS = [
    Proof("egress_release", "the egress (8 cells, its FIFO by its contract), with the port it walks the "
          "cells on the ingress's for at most CELL_REQ_MAX_RUN cycles in a row: a grant's cells go back "
          "once, in the cycle its last word leaves, as the chain the queue manager granted (first cell, "
          "ceil(bytes / 256) cells, last cell along next), and only for a whole frame or a cut frame's "
          "last chunk; a whole frame's words are read from the chain's cells, a chunk's after the walk",
          lambda: ReleaseProof(), depth=4, cover_depth=20,
          deep=lambda: ReleaseProof(deep_cover=True), deep_depth=28,
          mutations={
              "the last cell given back as the first (the chain cut)": _mutant(
                  "self.release_cells.last.eq(walk_cell)", "self.release_cells.last.eq(chain[0])"),
              "the walk not waiting for the port (a cell's next read from the ingress's address)": _mutant(
                  "with m.Elif(~walk_done & self.cell_ok):", "with m.Elif(~walk_done):"),
              "a frame's cells counted rounding down": _mutant(
                  "(self.start_bytes + CELL_WORDS * WORD_BYTES - 1)", "(self.start_bytes)"),
              "the cells given back with every chunk": _mutant(
                  "releases_data = ~is_ack & (~seg | chunk_last)", "releases_data = ~is_ack"),
              "a chunk's preparation not waiting for the walk": _mutant(
                  "with m.If(prep & ((prep_step != 0) | walk_done)):", "with m.If(prep):"),
              "a read issued with the FIFO's room taken by one in flight": _mutant(
                  "(fifo.level + pending + staged < 4)", "(fifo.level + staged < 4)"),
          }),
]
