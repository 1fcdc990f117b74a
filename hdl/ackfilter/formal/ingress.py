# amaranth: UnusedElaboratable=no
# (The harness elaborates the ingress itself, to reach its slot writer.)
"""The ingress's half of the key slots, its use of the free list's port,
and the parser's contract they rest on.

The parser (:class:`ParserContractProof`): ``done`` comes exactly
``DONE_AFTER_LAST`` cycles after a frame's last word was taken, ``ready``
is low from that word on through ``done`` and otherwise never two cycles
in a row, and ``result`` changes only into a ``done`` cycle.

The ingress: each frame's slot is written word
by word in the order and cycles ``flow_record.SLOT_WRITE_ORDER`` gives,
from its own parse result, no frame is taken from the entry FIFO before
``flow_record.SLOT_TAKE_AT`` cycles after its push, and its slot is written
again only after the queue manager took it and ``KEY_SLOTS -
ENTRY_FIFO_DEPTH`` entries more (:class:`SlotWriteProof`). It asks for the
free list's read port (``cell_req``) at most ``CELL_REQ_MAX_RUN`` cycles in
a row, which the egress's walk of a frame's cells relies on
(:class:`CellReqProof`).

The harnesses are the ingress (:class:`~ackfilter.gateware.ingress.Ingress`)
with its parser replaced by the parser's contract (:class:`ParserContract`);
the slot writes' adds the core's entry FIFO and the core's gate in front of
the queue manager (:func:`~ackfilter.gateware.core.entry_offered`), and the
manager's side of the FIFO as its promises. The contract allows more than
the parser does (``ready`` low in any single cycle, any result), so what
holds with it holds with the parser.
"""

from amaranth.hdl import *
from amaranth.hdl._ast import AnySeq   # (amaranth.asserts is deprecated; 0.5 keeps it here)
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFO

from ..gateware import core, ingress, parser
from ..gateware.flow_record import SLOT_TAKE_AT, SLOT_WRITE_ORDER, SLOT_WRITTEN, slot_word
from ..gateware.parser import DONE_AFTER_LAST, FrameParser
from . import Proof
from .harness import drive_inputs, mutant

__all__ = ["ParserContract", "ParserContractProof", "SlotWriteProof", "CellReqProof", "INGRESS_PROOFS"]


class ParserContractProof(Elaboratable):
    """:class:`~ackfilter.gateware.parser.FrameParser`, every input free in
    every cycle. Shadow: whether a frame's last word was taken and its
    ``done`` not yet presented, and the cycles since. Proven: ``done`` comes
    in exactly the ``DONE_AFTER_LAST``-th cycle after the last word, never
    otherwise; ``ready`` is low from the cycle after that word through
    ``done``, and otherwise never two cycles in a row (an options word's
    first cycle); ``result`` keeps its value but into a ``done`` cycle."""

    def __init__(self, *, module=parser):
        self.dut = module.FrameParser()
        self.ack = module.FrameClass.ACK

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        drive_inputs(m, dut)
        m.d.comb += Assume(~ResetSignal())
        pending = Signal()
        since = Signal(range(DONE_AFTER_LAST + 1))
        with m.If(dut.done):
            m.d.sync += pending.eq(0)
        with m.Elif(dut.valid & dut.ready & dut.last):
            m.d.sync += [pending.eq(1), since.eq(1)]
        with m.Elif(pending & (since != DONE_AFTER_LAST)):
            m.d.sync += since.eq(since + 1)
        result = dut.result.as_value()
        before, after_reset = Signal.like(result), Signal()
        m.d.sync += [before.eq(result), after_reset.eq(1)]
        due = pending & (since == DONE_AFTER_LAST)
        ready_was = Signal(init=1)
        m.d.sync += ready_was.eq(dut.ready)
        m.d.comb += [
            Assert(dut.done == due),
            Assert(~(pending | dut.done) | ~dut.ready),
            Assert(dut.ready | pending | dut.done | ready_was),
        ]
        with m.If(after_reset & ~dut.done):
            m.d.comb += Assert(result == before)
        m.d.comb += [Cover(dut.done & (dut.result.cls == self.ack)),
                     Cover(dut.done & dut.valid & dut.last)]
        return m


class ParserContract(wiring.Component):
    """What the ingress relies on of :class:`~ackfilter.gateware.parser.FrameParser`,
    with its ports: ``done`` comes once per frame, ``DONE_AFTER_LAST``
    cycles after the frame's last word was taken, and ``ready`` is low from
    that word's next cycle through ``done``, and otherwise never two cycles
    in a row; ``result`` changes only into a ``done`` cycle (it is
    registered with ``done``). Everything else is free: when ``ready`` is
    low otherwise, the result's every field, the block sums."""

    def __init__(self):
        super().__init__(wiring.Signature(dict(FrameParser().signature.members)))
        self.pending = Signal()                        # a last word taken, its done not yet presented
        self.since = Signal(range(DONE_AFTER_LAST))    # cycles since that word, saturating
        self.ready_was = Signal(init=1)                # ready in the cycle before

    def elaborate(self, platform):
        m = Module()
        pending, since = self.pending, self.since
        fire = Signal()
        m.d.comb += [
            self.ready.eq((AnySeq(1) | ~self.ready_was) & ~pending & ~self.done),
            fire.eq(pending & (since == DONE_AFTER_LAST - 1)),
            self.sum_we.eq(AnySeq(1)),
            self.sum_block.eq(AnySeq(len(self.sum_block))),
            self.sum_value.eq(AnySeq(len(self.sum_value))),
            self.pay_word.eq(AnySeq(len(self.pay_word))),
        ]
        m.d.sync += [self.done.eq(fire), self.ready_was.eq(self.ready)]
        with m.If(fire):
            m.d.sync += [pending.eq(0), self.result.as_value().eq(AnySeq(len(self.result.as_value())))]
        with m.Elif(self.valid & self.ready & self.last):
            m.d.sync += [pending.eq(1), since.eq(1)]
        with m.Elif(pending & (since != DONE_AFTER_LAST - 1)):
            m.d.sync += since.eq(since + 1)
        return m


class SlotWriteProof(Elaboratable):
    """The ingress (8 cells, 4 ACK buffers) with :class:`ParserContract`, the
    entry FIFO of ``core.ENTRY_FIFO_DEPTH`` and the gate
    ``core.entry_offered``. The queue manager's promises: it takes the head
    only while it is offered and pops it the next cycle, taking nothing then.

    One frame is watched, chosen freely among those whose slot is written
    (a push: an entry into the FIFO that is not RUNT or OVERSIZE). Proven:
    in the cycle ``c`` after its push (``c`` from 0) the ingress writes word
    ``SLOT_WRITE_ORDER[c]`` of its slot, the word ``flow_record.slot_word``
    makes of the result the parser presented with the frame, and no other
    frame is presented meanwhile; the manager takes it ``SLOT_TAKE_AT``
    cycles after the push at the earliest; and the slot is written again
    only after the manager took the frame and ``KEY_SLOTS -
    ENTRY_FIFO_DEPTH`` entries after it. What makes it inductive: the slot
    writer's counter agrees with the watched frame's age while its slot is
    written; the parser presents nothing while a slot is written; the FIFO
    holds the entries ahead of the watched frame, the frame, and those
    after it; the slots pushed after it number what the slot counter has
    advanced and no more than the entries after it in the FIFO and popped."""

    def __init__(self, *, ingress_module=ingress, core_module=core):
        self.contract = ParserContract()
        self.dut = ingress_module.Ingress(cells=8, buf_count=4, parser=lambda: self.contract)
        self.core = core_module
        self.key_slots = ingress_module.KEY_SLOTS
        self.verdict = ingress_module.Verdict

    def elaborate(self, platform):
        m = Module()
        dut, contract = self.dut, self.contract
        depth, nslots = self.core.ENTRY_FIFO_DEPTH, self.key_slots
        after_min = nslots - depth
        m.submodules.dut = dut.elaborate(platform)
        v = dut.internals
        pending, since = contract.pending, contract.since
        m.d.comb += Assume(~ResetSignal())

        # The frames, and the core's FIFO between the ingress and the manager.
        drive_inputs(m, dut, skip=("entry_ready",))
        m.d.comb += [dut.i.valid.eq(AnySeq(1)), dut.i.payload.as_value().eq(AnySeq(len(dut.i.payload.as_value())))]
        m.submodules.fifo = fifo = SyncFIFO(width=len(dut.entry.as_value()), depth=depth)
        m.d.comb += [
            fifo.w_en.eq(dut.entry_valid & fifo.w_rdy),
            fifo.w_data.eq(dut.entry.as_value()),
            dut.entry_ready.eq(fifo.w_rdy),
        ]
        # The manager: takes the offered head when it likes, pops it the
        # next cycle, and takes nothing in that cycle.
        take, pop = Signal(), Signal()
        m.d.comb += [take.eq(self.core.entry_offered(fifo, dut.slot_wait) & AnySeq(1) & ~pop),
                     fifo.r_en.eq(pop)]
        m.d.sync += pop.eq(take)
        popped = pop & fifo.r_rdy

        # A push: the frames whose slot is written.
        verdict = dut.entry.verdict
        push = Signal()
        m.d.comb += push.eq(fifo.w_en & (verdict != self.verdict.RUNT) & (verdict != self.verdict.OVERSIZE))

        # The watched frame.
        watching = Signal()
        age = Signal(range(SLOT_WRITTEN + 1))     # cycles since its push, saturating
        w_slot = Signal(range(nslots))
        ahead = Signal(range(depth + 1))          # entries ahead of it in the FIFO
        w_taken, w_popped = Signal(), Signal()
        n_after = Signal(range(nslots + 1))       # pushes after it, saturating
        pops_after = Signal(range(nslots + 1))    # entries after it popped, saturating
        takes_after = Signal(range(nslots + 1))   # entries after it taken, saturating
        res = contract.result
        words = Array(slot_word(j, key=res.key, details=res.details, seg=res.seg) for j in SLOT_WRITE_ORDER)
        order = Array(C(j, 4) for j in SLOT_WRITE_ORDER)
        wr_word, wr_slot = dut.key_wr_addr[:4], dut.key_wr_addr[4:]

        start = push & AnySeq(1) & ~watching
        with m.If(start):
            m.d.sync += [watching.eq(1), age.eq(1), w_slot.eq(dut.entry.key_slot),
                         ahead.eq(fifo.level - popped), w_taken.eq(0), w_popped.eq(0),
                         n_after.eq(0), pops_after.eq(0), takes_after.eq(0)]
            m.d.comb += Assert(dut.key_wr_en & (wr_word == SLOT_WRITE_ORDER[0]) &
                               (wr_slot == dut.entry.key_slot) & (dut.key_wr_data == words[0]))
        with m.Elif(watching):
            with m.If(age != SLOT_WRITTEN):
                m.d.sync += age.eq(age + 1)
            with m.If(popped):
                with m.If(ahead != 0):
                    m.d.sync += ahead.eq(ahead - 1)
                with m.Elif(~w_popped):
                    m.d.sync += w_popped.eq(1)
                with m.Elif(pops_after != nslots):
                    m.d.sync += pops_after.eq(pops_after + 1)
            with m.If(take & (ahead == 0)):
                with m.If(~w_taken):
                    m.d.sync += w_taken.eq(1)
                    # The take: never before SLOT_TAKE_AT.
                    m.d.comb += Assert(age >= SLOT_TAKE_AT)
                with m.Elif(takes_after != nslots):
                    m.d.sync += takes_after.eq(takes_after + 1)
            with m.If(push & (n_after != nslots)):
                m.d.sync += n_after.eq(n_after + 1)

            # The slot: word SLOT_WRITE_ORDER[age] in cycle `age`, from the
            # result presented with the frame (nothing presented since).
            with m.If(age < SLOT_WRITTEN):
                m.d.comb += [
                    Assert(dut.key_wr_en & (wr_slot == w_slot) & (wr_word == order[age]) &
                           (dut.key_wr_data == words[age])),
                    Assert(~contract.done),
                ]
            # Then not written again before the manager took it and
            # KEY_SLOTS - ENTRY_FIFO_DEPTH entries after it.
            with m.Elif(dut.key_wr_en & (wr_slot == w_slot) & (n_after < nslots)):
                m.d.comb += Assert(w_taken & (takes_after >= after_min))

            # What makes it inductive.
            m.d.comb += [
                Assert((n_after <= nslots) & (pops_after <= nslots) & (takes_after <= nslots)),
                Assert((age <= SLOT_WRITTEN) & (age != 0) & (ahead < depth)),
                Assert(~w_popped | w_taken),
                Assert(~w_taken | (ahead == 0)),
                Assert(((pops_after == 0) | w_popped) & ((takes_after == 0) | w_taken)),
                Assert(~w_popped | (takes_after == nslots) | (takes_after == pops_after + pop)),
                Assert(w_popped | ((takes_after == 0) & (pops_after == 0))),
                Assert(~pop | (fifo.r_rdy & ((ahead != 0) | w_taken))),
                Assert(~w_taken | w_popped | pop),
            ]
            in_fifo = fifo.level - ahead - ~w_popped          # entries after it in the FIFO
            m.d.comb += [
                Assert(fifo.level >= ahead + ~w_popped),
                Assert(n_after <= in_fifo + pops_after),
            ]
            with m.If(n_after < nslots):
                m.d.comb += Assert(v.key_slot == (w_slot + n_after + ~v.writing)[:len(v.key_slot)])
            with m.If(age < SLOT_WRITTEN):
                # (Nothing pushed after it yet.)
                m.d.comb += [Assert(v.writing & (v.key_j == age) & (n_after == 0)),
                             Assert((in_fifo == 0) & (pops_after == 0) & (takes_after == 0))]

        # The slot writer, the parser and the FIFO, whatever is watched.
        m.d.comb += [
            Assert(fifo.level <= depth),
            Assert(v.writing == (v.key_j != 0)),
            Assert(v.early == ((v.key_j != 0) & (v.key_j < SLOT_TAKE_AT))),
            Assert(~(pending & v.writing)),
            Assert(~(contract.done & v.writing)),
            Assert(~pending | (since != 0)),
        ]

        # Not vacuous: a watched frame taken at the earliest; a frame
        # pushed after it while it waits behind another; a frame after it
        # taken. (Its slot written again, 8 frames later, is out of
        # reach: each slot takes 14 cycles.)
        m.d.comb += [
            Cover(watching & take & (ahead == 0) & ~w_taken & (age == SLOT_TAKE_AT) & (pops_after == 0) &
                  (fifo.level == 1)),
            Cover(watching & (n_after == 1) & ~w_taken & (ahead == 1)),
            Cover(watching & (takes_after == 1) & (n_after == 2)),
        ]
        return m


class CellReqProof(Elaboratable):
    """The ingress (8 cells, 4 ACK buffers) with :class:`ParserContract`,
    every other input free. Proven: ``cell_req`` is never high more than
    ``ingress.CELL_REQ_MAX_RUN`` cycles in a row. What makes it inductive:
    while a slot is written, the frame after it has fewer words than the
    cycles since the push, so the last word the slot writer holds is not a
    cell's last; and nothing of the parser's end of a frame overlaps the
    slot writer's."""

    def __init__(self, *, ingress_module=ingress, deep_cover=False):
        self.contract = ParserContract()
        self.dut = ingress_module.Ingress(cells=8, buf_count=4, parser=lambda: self.contract)
        self.max_run = ingress_module.CELL_REQ_MAX_RUN
        self.deep_cover = deep_cover

    def elaborate(self, platform):
        m = Module()
        dut, contract = self.dut, self.contract
        m.submodules.dut = dut.elaborate(platform)
        v = dut.internals
        m.d.comb += Assume(~ResetSignal())
        drive_inputs(m, dut)
        m.d.comb += [dut.i.valid.eq(AnySeq(1)), dut.i.payload.as_value().eq(AnySeq(len(dut.i.payload.as_value())))]

        run = Signal(range(self.max_run + 1))       # cycles in a row cell_req was high before this one
        with m.If(~dut.cell_req):
            m.d.sync += run.eq(0)
        with m.Elif(run != self.max_run):
            m.d.sync += run.eq(run + 1)
        m.d.comb += [
            Assert(~dut.cell_req | (run < self.max_run)),
            # What makes it inductive.
            Assert(v.writing == (v.key_j != 0)),
            Assert(~v.writing | (v.widx < v.key_j)),
            Assert(~(contract.pending & v.writing)),
            Assert(~(contract.done & v.writing)),
            Assert(~contract.pending | (contract.since != 0)),
            # The port asked for at a frame's end.
            Cover(dut.cell_req & contract.done),
        ]
        if self.deep_cover:
            # The bound reached: a frame's 63rd word ends it, and the next
            # frame's first word waits through its done (66 cycles).
            m.d.comb += Cover(dut.cell_req & (run == self.max_run - 1))
        return m


def _ingress_mutant(old, new):
    return lambda: SlotWriteProof(ingress_module=mutant(ingress, old, new))


def _cell_req_mutant(old, new):
    return lambda: CellReqProof(ingress_module=mutant(ingress, old, new))


def _core_mutant(old, new):
    return lambda: SlotWriteProof(core_module=mutant(core, old, new))


def _parser_mutant(old, new):
    return lambda: ParserContractProof(module=mutant(parser, old, new))


INGRESS_PROOFS = [
    Proof("parser_contract", "the parser (whole): done comes exactly DONE_AFTER_LAST (3) cycles after "
          "a frame's last word was taken and never otherwise, ready is low from then through done, and "
          "the result changes only into a done cycle: the contract slot_write_time assumes",
          lambda: ParserContractProof(), depth=4, cover_depth=24,
          mutations={
              "ready high in the done cycle": _parser_mutant(
                  "self.ready.eq(~(flush | finalize | self.done | opt_stall))",
                  "self.ready.eq(~(flush | finalize | opt_stall))"),
              "the result registered while a frame's words are taken": _parser_mutant(
                  "m.d.sync += self.done.eq(finalize)\n        with m.If(finalize):",
                  "m.d.sync += self.done.eq(finalize)\n        with m.If(finalize | self.valid):"),
              "a word taken between the last word and done": _parser_mutant(
                  "self.ready.eq(~(flush | finalize | self.done | opt_stall))",
                  "self.ready.eq(~(flush | self.done | opt_stall))"),
              "an options word stalled in every cycle (ready low for good)": _parser_mutant(
                  "with m.If(opt_stall):\n            m.d.sync += opt_half.eq(1)",
                  "with m.If(opt_stall):\n            m.d.sync += opt_half.eq(0)"),
          }),
    Proof("slot_write_time", "the ingress (with the parser's contract), the entry FIFO and the core's "
          "gate: word flow_record.SLOT_WRITE_ORDER[c] of a frame's key slot is written c cycles after "
          "its push, from its own parse result; the queue manager takes the frame SLOT_TAKE_AT cycles "
          "after the push at the earliest; the slot is written again only after the manager took the "
          "frame and KEY_SLOTS - ENTRY_FIFO_DEPTH entries after it",
          lambda: SlotWriteProof(), depth=4, cover_depth=40,
          mutations={
              "a frame's last word not held while a slot is written": _ingress_mutant(
                  "hold.eq(self.i.valid & beat.last & writing),", "hold.eq(0),"),
              "slot_wait lowered a cycle early": _ingress_mutant(
                  "with m.If(key_j == SLOT_TAKE_AT - 1):", "with m.If(key_j == SLOT_TAKE_AT - 2):"),
              "the slot's last word not written": _ingress_mutant(
                  "with m.Elif(key_j == SLOT_WRITTEN - 1):", "with m.Elif(key_j == SLOT_WRITTEN - 2):"),
              "every other slot skipped (a slot written again four frames on)": _ingress_mutant(
                  "key_slot.eq(key_slot + 1)", "key_slot.eq(key_slot + 2)"),
              "the core's gate ignoring slot_wait behind an older entry": _core_mutant(
                  "~(slot_wait & (entries.level == 1))", "~(slot_wait & (entries.level == 0))"),
          }),
    Proof("cell_req_run", "the ingress (with the parser's contract): it holds the free list's read "
          "port (cell_req) at most CELL_REQ_MAX_RUN (3) cycles in a row, the bound the egress's walk "
          "of a frame's cells is proven with",
          lambda: CellReqProof(), depth=6, cover_depth=8,
          deep=lambda: CellReqProof(deep_cover=True), deep_depth=70,
          mutations={
              "the port asked for at a frame's last word too (held while its slot is written)":
                  _cell_req_mutant(
                      "self.cell_req.eq((self.i.valid & (widx[:wb] == CELL_WORDS - 1)) | parser.done)",
                      "self.cell_req.eq((self.i.valid & ((widx[:wb] == CELL_WORDS - 1) | beat.last))"
                      " | parser.done)"),
          }),
]
