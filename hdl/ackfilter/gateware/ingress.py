"""Ingress of the uplink core: store each frame, classify it, hand it on.

Every word is written at once into the data buffer's free cells (where a
data frame will stay, :mod:`.lib.cells`) and into the current staging ACK
buffer (where a pure ACK will stay), while the parser watches. When the
parser has classified the frame, the ingress commits it to one of the two,
or drops it, and pushes a :data:`ingress_entry_layout` record into the queue
manager's FIFO. Nothing is copied afterwards: committing is moving a pointer.

The frame's flow key (352 bits), a pure ACK's option values (its timestamps,
SACK blocks and AccECN counters: 392 bits) and the segmenter's fields (106
bits) do not travel in the record: the ingress writes them into a slot of the
key memory (block RAM), 64 bits a cycle from the cycle of the push on
(:mod:`.flow_record` says where each goes), and the record names the slot
(``key_slot``). The queue manager reads them from there as it needs them (in
the FIFO, in LUT RAM, the key took about 750 LUT slots, the rest about 350).
While a slot is written the parser's result must hold, so the next frame's
last word waits until the slot's last word is written; a
frame of 53 bytes or more never waits. The words go in the order the
manager reads them, and the manager takes no entry before its slot is far
enough (``slot_wait``: the core holds back ``entry_valid``).
"""

from types import SimpleNamespace

from amaranth.hdl import *
from amaranth.lib import data, enum, wiring
from amaranth.lib.wiring import In, Out

from ..params import ACK_SLOT_BYTES, DATA_CELL_BYTES, MAX_FRAME_BYTES
from ..flowkey import KEY_V6_BIT
from .flow_record import SLOT_TAKE_AT, SLOT_WORDS, SLOT_WRITE_ORDER, SLOT_WRITTEN, slot_word
from .parser import DONE_AFTER_LAST, FrameParser, FrameClass, ack_meta_layout, ip_header_layout
from .lib.cells import chain_layout
from .lib.stream import FrameStream, WORD_BYTES

__all__ = ["Verdict", "ingress_entry_layout", "Ingress", "CELL_WORDS", "MAX_CELLS", "KEY_SLOTS",
           "CELL_REQ_MAX_RUN"]

#: Words of a data cell, and the most cells one frame takes.
CELL_WORDS = DATA_CELL_BYTES // WORD_BYTES
MAX_CELLS = -(-MAX_FRAME_BYTES // DATA_CELL_BYTES)

#: Slots of the key memory (each ``flow_record.SLOT_WORDS`` words of 64
#: bits): KEY_SLOTS must exceed the frames that can wait in the entry FIFO
#: plus the one the queue manager holds (the core checks it).
KEY_SLOTS = 8
assert SLOT_WORDS & (SLOT_WORDS - 1) == 0

#: The free list's read port is the ingress's (``cell_req``) at most this
#: many cycles in a row: a cell's last word offered while the parser ends
#: the frame before it, from the cycle after that frame's last word through
#: its ``done``. The egress walks a frame's cells in the other cycles, a
#: cell a cycle, and its reads reach the next cell ``CELL_WORDS`` words on.
#: (``formal/ingress.py`` proves the bound; ``formal/egress.py`` proves the
#: egress's releases and reads with it.)
CELL_REQ_MAX_RUN = DONE_AFTER_LAST
assert CELL_REQ_MAX_RUN < CELL_WORDS


class Verdict(enum.Enum, shape=3):
    DATA      = 0
    ACK       = 1
    RUNT      = 2
    OVERSIZE  = 3
    DATA_FULL = 4


def ingress_entry_layout(*, cells, buf_bits):
    return data.StructLayout({
        "verdict": Verdict,
        "nbytes":  16,
        "l3_bytes": 12,            # IP packet length (shaper accounting), <= MAX_FRAME_BYTES
        "chain":   chain_layout(cells, MAX_CELLS),   # the cells of a DATA frame
        "buf":     buf_bits,       # ACK buffer of an ACK
        "ip":      ip_header_layout,   # where RED marks a DATA frame (ECN: meta.ecn)
        "meta":    ack_meta_layout,
        "key_slot": range(KEY_SLOTS),  # its key slot (not for RUNT and OVERSIZE)
        "key_v6":  1,                  # the key is IPv6's (bit KEY_V6_BIT of its word 0)
        "pure_ack": 1,                 # a pure ACK (class ack), whatever the verdict: with the
                                       # filter off it is DATA (spec section 4, "Changing ack_mode")
    })


class Ingress(wiring.Component):
    """Frames in, committed frames out (as FIFO records).

    Ports
    -----
    i : In(FrameStream)
    ack_mode : In(2)                  0 = off: every frame is data
    buf_wr : Out                      write port of the data buffer: word ``w`` of cell
                                      ``c`` at ``c * CELL_WORDS + w``
    ack_wr : Out                      write port of the ACK buffers
    key_wr : Out                      write port of the key memory: word ``j`` of slot ``s``
                                      at ``s * SLOT_WORDS + j``, word ``SLOT_WRITE_ORDER[c]``
                                      ``c`` cycles after the push (``flow_record``)
    slot_wait : Out(1)                the newest slot is not yet far enough for its frame to
                                      be taken (cycles 1 .. SLOT_TAKE_AT - 1 after its push)
    sum_wr : Out                      write port of the segmenter's block sums: the
                                      payload block that starts in word ``b`` of a frame
                                      lives at ``cell(b) * (CELL_WORDS / 4) + (b mod CELL_WORDS) / 4``
                                      (spec section 9; one cell holds the starts of at most
                                      ``CELL_WORDS / 4`` blocks, and a cell one frame)
    cell_head, cell_free : In         the free list (:class:`~.lib.cells.CellList`)
    cell_req, cell_addr, cell_next : Out, Out, In   its ``next`` at ``cell_addr``, read
                                      when ``cell_req`` (a cell's last word offered, a commit)
    take_en, take_head, take_n : Out  a data frame keeps its cells
    stage_alloc_valid, stage_alloc_id, stage_take : the ACK buffer pool
    entry_valid, entry, entry_ready : the record to the queue manager's FIFO
    ev_overrun : Out(1)               a frame was dropped: FIFO full
    stat_frame, stat_bytes, stat_pure_ack, stat_ineligible : Out   per-frame statistics strobes
    idle : Out(1)                     no frame in flight here
    """

    def __init__(self, *, cells, buf_count, parser=FrameParser):
        self.cells = cells
        #: What classifies the frames: a :class:`FrameParser` (the proof of
        #: the slot writes, ``formal/ingress.py``, gives its contract instead).
        self.parser = parser
        self.buf_count = buf_count
        self.cell_bits = (cells - 1).bit_length()
        self.buf_bits = (buf_count - 1).bit_length()
        self.slot_words = ACK_SLOT_BYTES // WORD_BYTES
        cb, bb = self.cell_bits, self.buf_bits
        wb = (CELL_WORDS - 1).bit_length()
        super().__init__({
            "i":                    In(FrameStream()),
            "ack_mode":             In(2),
            "buf_wr_en":            Out(1),
            "buf_wr_addr":          Out(cb + wb),
            "buf_wr_data":          Out(32),
            "ack_wr_en":            Out(1),
            "ack_wr_addr":          Out(bb + (self.slot_words - 1).bit_length()),
            "ack_wr_data":          Out(32),
            "key_wr_en":            Out(1),
            "key_wr_addr":          Out(range(KEY_SLOTS * SLOT_WORDS)),
            "key_wr_data":          Out(64),
            "slot_wait":            Out(1),
            "sum_wr_en":            Out(1),
            "sum_wr_addr":          Out(cb + wb - 2),
            "sum_wr_data":          Out(16),
            "cell_head":            In(range(cells)),
            "cell_free":            In(range(cells + 1)),
            "cell_req":             Out(1),
            "cell_addr":            Out(range(cells)),
            "cell_next":            In(range(cells)),
            "take_en":              Out(1),
            "take_head":            Out(range(cells)),
            "take_n":               Out(range(MAX_CELLS + 1)),
            "stage_alloc_valid":    In(1),
            "stage_alloc_id":       In(bb),
            "stage_take":           Out(1),
            "entry_valid":          Out(1),
            "entry":                Out(ingress_entry_layout(cells=cells, buf_bits=bb)),
            "entry_ready":          In(1),
            "ev_overrun":           Out(1),
            "stat_frame":           Out(1),
            "stat_bytes":           Out(16),
            "stat_pure_ack":        Out(1),
            "stat_ineligible":      Out(1),
            "idle":                 Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.parser = parser = self.parser()
        wb = (CELL_WORDS - 1).bit_length()

        beat = self.i.payload
        # A frame's last word waits while a slot is written (module
        # docstring); `ready` stays high while nothing is offered, whatever
        # the lanes hold. `writing` (key_j != 0) and `early` (key_j in 1 ..
        # SLOT_TAKE_AT - 1) are flip-flops: they gate the input's `ready`,
        # which reaches the parser and the core's input register.
        key_j = Signal(range(SLOT_WORDS))           # cycles since the push, while the slot is written
        writing, early = Signal(), Signal()
        hold = Signal()
        take_word = self.i.valid & self.i.ready
        m.d.comb += [
            hold.eq(self.i.valid & beat.last & writing),
            self.slot_wait.eq(early),
            self.i.ready.eq(parser.ready & ~hold),
            parser.valid.eq(self.i.valid & ~hold),
            parser.data.eq(beat.data),
            parser.keep.eq(beat.keep),
            parser.last.eq(beat.last),
        ]

        widx        = Signal(16)            # words of this frame so far
        in_frame    = Signal()
        overflow    = Signal()              # this frame did not fit in the free cells
        stage_buf   = Signal(self.buf_bits, init=self.buf_count - 1)

        # The frame's cells: the free list's head, then each cell's `next`
        # (read when the cell's last word is written). `chain[k]` is the
        # frame's cell k (for the block sums), `last_cell` the cell of its
        # last word so far.
        cur_cell  = Signal(range(self.cells))          # of word widx, from its cell's second on
        last_cell = Signal(range(self.cells))
        chain     = Array(Signal(range(self.cells), name=f"chain{k}") for k in range(MAX_CELLS))
        k = widx[wb:]
        cell_now = Signal(range(self.cells))
        m.d.comb += [
            cell_now.eq(Mux(k == 0, self.cell_head, cur_cell)),
            self.cell_addr.eq(cell_now),
            # (Asked for when a cell's last word is offered, not taken: the
            # parser's `ready` would reach the port's address multiplexer.
            # A word offered but not taken costs the egress a cycle of the port.)
            self.cell_req.eq((self.i.valid & (widx[:wb] == CELL_WORDS - 1)) | parser.done),
        ]
        # The free list keeps its tail: a frame may write `free - 1` cells.
        fits = Signal()
        m.d.comb += fits.eq((k < MAX_CELLS) & (k + 1 < self.cell_free))

        m.d.comb += [
            self.buf_wr_addr.eq(Cat(widx[:wb], cell_now)),
            self.buf_wr_data.eq(beat.data),
            self.buf_wr_en.eq(take_word & fits & ~overflow),
            self.ack_wr_addr.eq(Cat(widx[:(self.slot_words - 1).bit_length()], stage_buf)),
            self.ack_wr_data.eq(beat.data),
            self.ack_wr_en.eq(take_word & (widx < self.slot_words)),
        ]
        with m.If(take_word):
            with m.If(~fits):
                m.d.sync += overflow.eq(1)
            with m.Elif(~overflow):
                m.d.sync += last_cell.eq(cell_now)
                with m.If(widx[:wb] == 0):
                    m.d.sync += chain[k].eq(cell_now)
                with m.If(widx[:wb] == CELL_WORDS - 1):
                    m.d.sync += cur_cell.eq(self.cell_next)
            with m.If(beat.last):
                m.d.sync += [widx.eq(widx + 1), in_frame.eq(0)]
            with m.Else():
                m.d.sync += [widx.eq(widx + 1), in_frame.eq(1)]

        # The segmenter's block sums, as the parser strobes them (a block's
        # cells are written before its sum). Not after an overflow: the
        # words did not fit, and the cells named may hold a queued frame.
        blk_word = Signal(9)                    # the block's first word in the frame
        m.d.comb += [
            blk_word.eq(parser.pay_word + 4 * parser.sum_block),
            self.sum_wr_en.eq(parser.sum_we & ~overflow),
            self.sum_wr_addr.eq(Cat(blk_word[2:wb], chain[blk_word[wb:]])),
            self.sum_wr_data.eq(parser.sum_value),
        ]

        # Commit, the cycle the parser presents its result (input is held off).
        key_slot = Signal(range(KEY_SLOTS))         # the next flow key's (see below)
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
                    m.d.comb += verdict.eq(Mux(overflow, Verdict.DATA_FULL, Verdict.DATA))
                with m.Else():
                    m.d.comb += verdict.eq(Verdict.ACK)
            with m.Default():
                m.d.comb += verdict.eq(Mux(overflow, Verdict.DATA_FULL, Verdict.DATA))

        # The frame's cells, if it is kept: `widx` words from the head on.
        ncells = (widx + CELL_WORDS - 1) >> wb
        m.d.comb += [
            entry.verdict.eq(verdict),
            entry.nbytes.eq(res.nbytes),
            entry.l3_bytes.eq(res.l3_bytes),
            entry.chain.first.eq(self.cell_head),
            entry.chain.last.eq(last_cell),
            entry.chain.n.eq(ncells),
            entry.buf.eq(stage_buf),
            entry.meta.eq(res.meta),
            entry.ip.eq(res.ip),
            entry.key_slot.eq(key_slot),
            entry.key_v6.eq(res.key[0][KEY_V6_BIT]),
            entry.pure_ack.eq(res.cls == FrameClass.ACK),
            self.entry_valid.eq(parser.done),
            self.stat_frame.eq(parser.done),
            self.stat_bytes.eq(Mux(parser.done, res.nbytes, 0)),
            self.stat_pure_ack.eq(parser.done & res.pure_ack),
            self.stat_ineligible.eq(parser.done & res.pure_ack & ~res.meta.eligible),
            # The cell after the frame's last: already walked when the frame
            # ended with its cell, else its `next`.
            self.take_head.eq(Mux(widx[:wb] == 0, cur_cell, self.cell_next)),
            self.take_n.eq(ncells),
        ]
        with m.If(parser.done):
            m.d.sync += [widx.eq(0), overflow.eq(0)]
            with m.If(~self.entry_ready):
                m.d.comb += self.ev_overrun.eq(1)
            with m.Elif(verdict == Verdict.DATA):
                m.d.comb += self.take_en.eq(1)
            with m.Elif(verdict == Verdict.ACK):
                m.d.comb += self.stage_take.eq(1)
                m.d.sync += stage_buf.eq(self.stage_alloc_id)

        # The frame's slot (module docstring): word SLOT_WRITE_ORDER[c] c
        # cycles after the push, all from the parser's result, which holds
        # meanwhile: the next frame's last word waits (`hold`, above) until
        # the last word here is written, and its result comes three cycles
        # after that word at the earliest.
        push_key = Signal()
        m.d.comb += push_key.eq(parser.done & self.entry_ready &
                                (verdict != Verdict.RUNT) & (verdict != Verdict.OVERSIZE))
        words = [slot_word(j, key=res.key, details=res.details, seg=res.seg) for j in SLOT_WRITE_ORDER]
        addrs = [C(j, len(key_j)) for j in SLOT_WRITE_ORDER]
        m.d.comb += [
            self.key_wr_en.eq(push_key | writing),
            self.key_wr_addr.eq(Cat(Array(addrs)[key_j], key_slot)),
            self.key_wr_data.eq(Array(words)[key_j]),
        ]
        with m.If(push_key):
            m.d.sync += [key_j.eq(1), writing.eq(1), early.eq(1)]
        with m.Elif(key_j == SLOT_WRITTEN - 1):
            m.d.sync += [key_j.eq(0), writing.eq(0), key_slot.eq(key_slot + 1)]
        with m.Elif(writing):
            m.d.sync += key_j.eq(key_j + 1)
        with m.If(key_j == SLOT_TAKE_AT - 1):
            m.d.sync += early.eq(0)

        m.d.comb += self.idle.eq(~in_frame & parser.ready & ~parser.done & ~self.i.valid & ~writing)
        # The slot writer's state and the word count, for the proofs of its writes and its port.
        self.internals = SimpleNamespace(key_j=key_j, writing=writing, early=early, key_slot=key_slot,
                                         widx=widx)
        return m
