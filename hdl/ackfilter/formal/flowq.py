# amaranth: UnusedElaboratable=no
# (The harness elaborates the block itself, to reach its memories.)
"""The flow queues (:class:`~ackfilter.gateware.flow_queues.FlowQueues`):
each queue is first in, first out. A frame is picked, sent or dropped only
as its queue's oldest (a drop behind the oldest when that one is leaving in
chunks), every queued frame is in its queue's list exactly once, and a
queue is released only when it holds no frame, through every sequence of
operations the queue manager may start.

The harness elaborates the block itself and reads its memories at every
address (``FlowQueues.internals``), as the queue manager's proof does.
"""

from functools import reduce
from operator import add

from amaranth.hdl import *

from ..gateware import flow_queues
from . import Proof
from .harness import drive_inputs, mutant

__all__ = ["FlowQueuesProof", "FLOWQ_PROOFS"]


class FlowQueuesProof(Elaboratable):
    """:class:`~ackfilter.gateware.flow_queues.FlowQueues` of ``queues``
    queues (the last one shared) and ``ids`` frame ids, frames of 1 or 2
    cells, host fairness on (``hosts`` buckets). Shadow, per id: whether it is queued, its queue, its position
    in the queue (0: the oldest) and its cells, updated in the cycle the
    block adds or removes the frame.

    The queue manager's promises: an operation starts only while the block
    is not ``busy``, one at a time; a frame joins with an id no queued frame
    has and the buffer's cells not exceeded; ``sent`` comes only as the
    operation after a pick that found a frame, and a chunk (``sent_last``
    low) only of a frame not picked ``pick_whole``; each ``sent`` is charged
    once, before the next pick. Everything else (the quantum, the charges,
    the classes, the overflow's sizes, the queries) is free.

    Proven: a pick that finds a frame names its queue's oldest; ``sent``
    removes that frame; a drop removes its queue's oldest, or the frame
    behind it when the oldest is the one leaving in chunks; a queue is
    released only when it holds no frame. What makes it inductive: each
    queue's list from its head, as many steps as it holds frames, meets
    them in the order they joined and ends at its tail; the block's counts
    of frames and cells, per queue and in all, and each frame's cells agree
    with the shadow; and what each state of an operation holds in its
    registers (the frame a sent or a drop works on and the words read for
    it, the overflow's fattest queue and what its drops still have to
    free)."""

    def __init__(self, *, queues=3, ids=4, cells=8, hosts=2, module=flow_queues):
        self.dut = module.FlowQueues(queues=queues, ids=ids, cells=cells, reserve=1, shared=queues - 1,
                                     hosts=hosts)

    def elaborate(self, platform):
        m = Module()
        dut = self.dut
        nq, ni = dut.queues, dut.ids
        m.submodules.dut = dut.elaborate(platform)
        v = dut.internals
        state = v.fsm.ongoing

        def words_of(mem, n):
            out = []
            for a in range(n):
                rp = mem.read_port(domain="comb")
                m.d.comb += rp.addr.eq(a)
                out.append(rp.data)
            return Array(out)

        qhead, qtail = words_of(v.qhead, nq), words_of(v.qtail, nq)
        qcells, qstate = words_of(v.qcells, nq), words_of(v.qstate, nq)
        inext, iinfo = words_of(v.inext, ni), words_of(v.iinfo, ni)
        lnext = words_of(v.lnext, nq)

        # The shadow.
        inq = Signal(ni)
        qof = Array(Signal(range(nq), name=f"qof{i}") for i in range(ni))
        pos = Array(Signal(range(ni), name=f"pos{i}") for i in range(ni))
        ncell = Array(Signal(range(3), name=f"ncell{i}") for i in range(ni))

        def member(i, q):
            return inq.bit_select(i, 1) & (qof[i] == q)

        def count(q):
            return reduce(add, [Mux(member(i, q), 1, 0) for i in range(ni)])

        def cells_in(q):
            return reduce(add, [Mux(member(i, q), ncell[i], 0) for i in range(ni)])

        nframes = [Signal(range(ni + 1), name=f"n{q}") for q in range(nq)]
        ncells = [Signal(range(2 * ni + 1), name=f"c{q}") for q in range(nq)]
        m.d.comb += [nframes[q].eq(count(q)) for q in range(nq)]
        m.d.comb += [ncells[q].eq(cells_in(q)) for q in range(nq)]
        nframes_a, ncells_a = Array(nframes), Array(ncells)

        def walk(q):
            p = [qhead[q]]
            for _ in range(ni - 1):
                p.append(inext[p[-1]])
            return p

        heads = Array(qhead[q] for q in range(nq))
        seconds = Array(inext[qhead[q]] for q in range(nq))

        # The queue manager's promises.
        strobes = [dut.enq, dut.pick, dut.sent, dut.charge, dut.ovf]
        drive_inputs(m, dut)
        picked, whole, charge_due = Signal(), Signal(), Signal()
        any_strobe = reduce(lambda a, b: a | b, strobes)
        m.d.comb += [
            Assume(~ResetSignal()),
            Assume(~dut.busy | ~any_strobe),
            Assume(sum(Mux(s, 1, 0) for s in strobes) <= 1),
            Assume(~dut.enq | ((dut.enq_q < nq) & ~inq.bit_select(dut.enq_id, 1)
                               & (dut.enq_cells >= 1) & (dut.enq_cells <= 2)
                               & (v.cells + dut.enq_cells <= dut.ncells))),
            Assume(~dut.sent | (picked & (dut.sent_last | ~whole))),
            Assume(~dut.pick | ~charge_due),
            Assume(~dut.charge | charge_due),
        ]
        with m.If(dut.done & dut.found):
            m.d.sync += [picked.eq(1), whole.eq(dut.pick_whole)]
        with m.Elif(any_strobe):
            m.d.sync += picked.eq(0)
        with m.If(dut.sent):
            m.d.sync += charge_due.eq(1)
        with m.Elif(dut.charge):
            m.d.sync += charge_due.eq(0)

        # The shadow follows the block: a frame joins in Enq, leaves in
        # Sent-Remove and Drop (frame `ia` of queue `qa`).
        with m.If(state("Enq")):
            m.d.sync += [inq.bit_select(v.e_id, 1).eq(1), qof[v.e_id].eq(v.qa),
                         pos[v.e_id].eq(nframes_a[v.qa]), ncell[v.e_id].eq(v.e_cells)]
        leaving = state("Sent-Remove") | state("Drop")
        with m.If(leaving):
            m.d.sync += inq.bit_select(v.ia, 1).eq(0)
            for i in range(ni):
                with m.If(member(i, v.qa) & (pos[i] > pos[v.ia])):
                    m.d.sync += pos[i].eq(pos[i] - 1)

        # The properties.
        oldest = (pos[dut.pick_id] == 0)
        with m.If(dut.done & dut.found):
            m.d.comb += Assert(member(dut.pick_id, dut.pick_q) & oldest)
        in_chunks = v.cur_v & (v.cur_q == dut.drop_q)
        with m.If(dut.drop):
            m.d.comb += Assert(member(dut.drop_id, dut.drop_q) & (pos[dut.drop_id] == in_chunks))
        with m.If(state("Sent-Remove")):
            m.d.comb += Assert(member(v.ia, v.qa) & (pos[v.ia] == 0))
        # The answers: a pick's `found` exactly when a frame is queued;
        # `busy` until a pick or an overflow answers; the drops only in an
        # overflow, before its `done`, never two cycles in a row. (What the
        # queue manager's proof of the data give-backs takes of the block:
        # give_back.FlowQueuesContract.)
        picking, ovfing, drop_was = Signal(), Signal(), Signal()
        m.d.sync += drop_was.eq(dut.drop)
        with m.If(dut.pick):
            m.d.sync += picking.eq(1)
        with m.Elif(dut.done):
            m.d.sync += picking.eq(0)
        with m.If(dut.ovf):
            m.d.sync += ovfing.eq(1)
        with m.Elif(dut.done):
            m.d.sync += ovfing.eq(0)
        m.d.comb += [
            Assert(~(dut.done & picking) | (dut.found == (inq != 0))),
            Assert(~(picking | ovfing) | dut.busy | dut.done),
            Assert(~dut.drop | (ovfing & ~dut.done)),
            Assert(~(dut.drop & drop_was)),
            Assert(picking == state("Pick")),
            Assert(ovfing == (state("Ovf-Check") | state("Scan") | state("Drop-Prep") | state("Drop-Id") |
                              state("Drop-Behind") | state("Drop") | state("Drop-Done"))),
        ]
        released, released_q = Signal(), Signal(range(nq))
        m.d.sync += [released.eq(dut.released), released_q.eq(dut.released_q)]
        with m.If(released):
            m.d.comb += Assert(nframes_a[released_q] == 0)

        # What makes it inductive. The scheduler's lists name queues (their
        # order is not this proof's business).
        m.d.comb += [Assert(w < nq) for w in lnext]
        m.d.comb += [Assert(r < nq) for r in (v.new_head, v.new_tail, v.old_head, v.old_tail)]
        with m.If(state("Init")):
            m.d.comb += [Assert(inq == 0), Assert(~v.cur_v), Assert(~v.shared_ne), Assert((v.frames == 0) & (v.cells == 0)),
                         Assert(~picked & ~charge_due & ~released)]
            for q in range(nq):
                with m.If(q < v.init_i):
                    m.d.comb += Assert(qstate[q] == 0)
        with m.Else():
            total = reduce(add, [nframes[q] for q in range(nq)])
            m.d.comb += [Assert(v.frames == total),
                         Assert(v.cells == reduce(add, [ncells[q] for q in range(nq)]))]
            for i in range(ni):
                with m.If(inq[i]):
                    m.d.comb += [Assert(qof[i] < nq), Assert(pos[i] < nframes_a[qof[i]]),
                                 Assert((ncell[i] >= 1) & (ncell[i] <= 2)),
                                 Assert(iinfo[i].cells == ncell[i])]
            for q in range(nq):
                has = nframes[q] != 0
                m.d.comb += Assert(qstate[q][0] == has)
                if q == dut.shared:
                    m.d.comb += Assert(v.shared_ne == has)
                with m.If(has):
                    p = walk(q)
                    m.d.comb += [Assert(qcells[q] == ncells[q]),
                                 Assert(Array(p)[nframes[q] - 1] == qtail[q])]
                    for k in range(ni):
                        with m.If(k < nframes[q]):
                            m.d.comb += Assert(member(p[k], q) & (pos[p[k]] == k))
            with m.If(state("Pick")):
                m.d.comb += Assert(v.qa < nq)
            with m.If(v.cur_v):
                m.d.comb += [Assert(v.cur_q < nq), Assert(nframes_a[v.cur_q] != 0),
                             Assert(v.cur_cells == ncell[heads[v.cur_q]])]
            with m.If(picked):
                m.d.comb += [Assert(state("Idle")), Assert(v.sel_q < nq),
                             Assert(member(v.sel_id, v.sel_q) & (pos[v.sel_id] == 0)),
                             Assert(whole == (v.cur_v & (v.cur_q != v.sel_q)))]
            with m.If(state("Enq")):
                m.d.comb += [Assert(v.qa < nq), Assert(~inq.bit_select(v.e_id, 1)),
                             Assert((v.e_cells >= 1) & (v.e_cells <= 2)),
                             Assert(v.cells + v.e_cells <= dut.ncells)]
            with m.If(state("Sent-Remove") | state("Sent-Chunk")):
                m.d.comb += [Assert(v.qa < nq), Assert(v.ia == heads[v.qa]), Assert(nframes_a[v.qa] != 0),
                             Assert(v.in_a.data == inext[v.ia]),
                             Assert(v.info_a.data.cells == ncell[v.ia])]
            with m.If(state("Sent-Chunk")):
                m.d.comb += Assert(~v.cur_v | (v.cur_q == v.qa))
            # The overflow: the fattest queue found so far, its droppable
            # cells (all but a head leaving in chunks) `best`; its drops
            # free those cells until half of `goal` is freed.
            def droppable(q):
                return ncells_a[q] - Mux(v.cur_v & (v.cur_q == q), v.cur_cells, 0)
            with m.If(state("Ovf-Check") | state("Scan") | state("Drop-Prep")):
                with m.If(v.best != 0):
                    m.d.comb += [Assert(v.best_q < nq), Assert(droppable(v.best_q) == v.best)]
            dropping = state("Drop-Id") | state("Drop-Behind") | state("Drop")
            with m.If(dropping):
                q = v.qa
                m.d.comb += [Assert(q < nq), Assert(v.keep == (v.cur_v & (v.cur_q == q))),
                             Assert(droppable(q) + v.freed == v.goal), Assert(2 * v.freed < v.goal)]
            with m.If(state("Drop-Behind")):
                m.d.comb += [Assert(v.ia == heads[v.qa]), Assert(v.in_a.data == inext[v.ia])]
            with m.If(state("Drop")):
                m.d.comb += [Assert(v.ia == Mux(v.keep, seconds[v.qa], heads[v.qa])),
                             Assert(v.in_a.data == inext[v.ia]),
                             Assert(v.info_a.data.cells == ncell[v.ia])]
            m.d.comb += [
                Cover(dut.drop & in_chunks),                          # a drop behind a frame in chunks
                Cover(dut.done & dut.found & dut.pick_whole),         # a frame between two chunks
                Cover((nframes[0] == 2) & (nframes[dut.shared] == 2)),
                Cover(dut.released & (dut.released_q == dut.shared)),
            ]
        return m


def _mutant(old, new):
    return lambda: FlowQueuesProof(module=mutant(flow_queues, old, new))


FLOWQ_PROOFS = [
    Proof("flow_queues", "the flow queues (FlowQueues of 3 queues, 4 frames of 1 or 2 cells, 2 host "
          "buckets): a pick names its queue's oldest frame and sent removes it; a drop removes the "
          "oldest, or the frame behind one leaving in chunks; a queue is released only empty",
          lambda: FlowQueuesProof(),
          depth=3, cover_depth=32,
          mutations={
              "a pick naming the newest frame": _mutant(
                  "self.pick_id.eq(qh_a.data)", "self.pick_id.eq(qt_a.data)"),
              "a drop behind a frame in chunks dropping that frame": _mutant(
                  "m.d.comb += ia_next.eq(in_a.data)\n                m.next = \"Drop\"",
                  "m.d.comb += ia_next.eq(ia)\n                m.next = \"Drop\""),
              "the tail left on a frame dropped behind the head": _mutant(
                  "qtail_w.data.eq(head)", "qtail_w.data.eq(fid)"),
              "a queue emptied by a drop behind its head (the head lost)": _mutant(
                  "emptied.eq(~keep & (fid == qt_a.data))", "emptied.eq(fid == qt_a.data)"),
          }),
]
