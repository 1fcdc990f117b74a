# amaranth: UnusedElaboratable=no
# (The harness elaborates the manager itself, to reach its memories.)
"""The queue manager's half of the data buffer: each data frame's cells are
given back once, whole, by the manager's one give-back for it: a discard
at arrival (RED), a discard in an overflow, or the grant that sends the
frame whole or its last chunk (the egress gives the cells back with that
grant's last word: ``egress_release``).

The manager (:class:`~ackfilter.gateware.queue_manager.QueueManager`, flow
queues on) keeps each queued data frame's descriptor in a memory at the
frame's first cell, its id in the flow queues. The flow queues
(:class:`~ackfilter.gateware.flow_queues.FlowQueues`) are replaced here by
their contract (:class:`FlowQueuesContract`): what ``flow_queues`` proves
of them, for any order and timing of their answers.
"""

from functools import reduce
from operator import or_

from amaranth.hdl import *
from amaranth.hdl._ast import AnyConst, AnySeq   # (amaranth.asserts is deprecated; 0.5 keeps them here)
from amaranth.lib import wiring

from ..gateware import queue_manager
from ..gateware.flow_queues import FlowQueues
from . import Proof
from .harness import drive_inputs, mutant, popcount
from .queue import DEPARTING_STATES, manager_promises

__all__ = ["FlowQueuesContract", "GiveBackProof", "GIVE_BACK_PROOFS"]


class FlowQueuesContract(wiring.Component):
    """What the queue manager relies on of :class:`~ackfilter.gateware.flow_queues.FlowQueues`,
    with its ports (``flow_queues`` proves it of the block). Shadow:
    ``queued``, the ids of the frames it holds. A frame joins with ``enq``;
    a ``pick`` that finds a frame (``found`` exactly when one is queued)
    names a queued one, and the ``sent`` after it removes that frame when it
    is its last (``sent_last``); a ``drop`` comes only during an ``ovf``,
    never in the cycle of its ``done``, never two cycles in a row, and
    removes a queued frame, never one leaving in chunks; ``frames`` counts
    the queued frames; ``busy`` is high while a pick or an overflow has not
    answered. Everything else is free in every cycle: when ``done`` comes,
    which frame a pick or a drop names among those allowed, the queries,
    the cells, the releases."""

    def __init__(self, **kwargs):
        super().__init__(wiring.Signature(dict(FlowQueues(**kwargs).signature.members)))
        n = self.n_ids = kwargs["ids"]
        self.queued = Signal(n)
        self.picking, self.ovfing = Signal(), Signal()        # a pick, an overflow, not answered yet
        self.picked_v, self.picked_whole = Signal(), Signal()  # a pick found a frame, not sent yet
        self.picked_id = Signal(range(n))
        self.chunk_v = Signal()                                # a frame leaving in chunks
        self.chunk_id = Signal(range(n))
        self.drop_was = Signal()

    def elaborate(self, platform):
        m = Module()
        n, queued = self.n_ids, self.queued

        def held(i):
            return queued.bit_select(i, 1)

        for name in ("found", "pick_q", "pick_id", "pick_whole", "drop_q", "drop_id", "released",
                     "released_q", "query_empty", "query_busy", "cls_busy", "shared_empty", "cells"):
            port = getattr(self, name)
            m.d.comb += port.eq(AnySeq(len(port)))
        m.d.comb += [
            self.done.eq(AnySeq(1)),
            self.busy.eq(AnySeq(1) | ((self.picking | self.ovfing) & ~self.done)),
            self.drop.eq(AnySeq(1) & self.ovfing & ~self.done),
            self.frames.eq(popcount(queued, n)),
            Assume(~(self.done & self.picking) |
                   ((self.found == (queued != 0)) & (~self.found | held(self.pick_id)))),
            Assume(~self.drop | (held(self.drop_id) & ~(self.chunk_v & (self.drop_id == self.chunk_id)))),
            Assume(~(self.drop & self.drop_was)),
        ]
        m.d.sync += self.drop_was.eq(self.drop)

        leaves = self.sent & self.sent_last & self.picked_v
        m.d.sync += queued.eq((queued | Mux(self.enq, 1 << self.enq_id, 0))
                              & ~Mux(leaves, 1 << self.picked_id, 0) & ~Mux(self.drop, 1 << self.drop_id, 0))
        with m.If(self.pick):
            m.d.sync += [self.picking.eq(1), self.picked_v.eq(0)]
        with m.Elif(self.done & self.picking):
            m.d.sync += [self.picking.eq(0), self.picked_v.eq(self.found), self.picked_id.eq(self.pick_id),
                         self.picked_whole.eq(self.pick_whole)]
        with m.Elif(self.sent):
            m.d.sync += self.picked_v.eq(0)
        with m.If(self.ovf):
            m.d.sync += self.ovfing.eq(1)
        with m.Elif(self.done):
            m.d.sync += self.ovfing.eq(0)
        with m.If(self.sent & self.picked_v & ~self.sent_last):
            m.d.sync += [self.chunk_v.eq(1), self.chunk_id.eq(self.picked_id)]
        with m.Elif(leaves & (self.picked_id == self.chunk_id)):
            m.d.sync += self.chunk_v.eq(0)
        return m


class GiveBackProof(Elaboratable):
    """The queue manager (4 ACK queue positions, 2 flow entries, 16 cells,
    flow queues on, as :class:`~ackfilter.formal.queue.AckListProof` has
    it) with :class:`FlowQueuesContract`, every input free but for the
    neighbours' promises the ACK list's proof assumes too, and the free
    list's: a data frame arrives (``Arrive``, verdict DATA) in cells no
    queued frame starts in.

    One cell ``W`` is watched, chosen freely once (what holds for it holds
    for each): a frame that arrives starting in it is *owed* until the
    manager gives its cells back. Proven: a give-back of the chain starting
    in ``W`` (a discard whose ``first`` is ``W``, or a grant of ``W`` that
    sends the frame whole or its last chunk) comes only while such a frame
    is owed, one per frame, and gives back the chain it arrived with (a
    discard: its first and last cell and how many; a grant: the bytes it
    arrived with, from which the egress counts its cells); discards never
    come two cycles in a row; a frame is queued only as the arrival in
    progress, with an id no queued frame has; the manager keeps the flow queues' protocol (``sent`` only after a pick
    that found a frame, a chunk only of a frame not picked whole). Since
    the cells of frames in use are disjoint (``cell_list``), each give-back
    is the chain of one frame in use, once: what ``cell_list`` assumes.

    What makes it inductive: an owed frame is the arrival in progress (in
    ``cur``, the state machine past Idle and not departing), or queued, or
    dropped in the last cycle (its discard now); each queued id's
    descriptor starts at that id, and ``W``'s is the frame's; the
    descriptor read is the one at the address of the cycle before; a
    departure's descriptor is the picked frame's; an overflow's is the
    dropped frame's."""

    def __init__(self, *, module=queue_manager, deep_cover=False):
        self.deep_cover = deep_cover

        def block(**kwargs):
            self.contract = FlowQueuesContract(**kwargs)
            return self.contract
        self.module = module
        self.dut = module.QueueManager(ack_slots=4, flow_entries=2, cells=16, buf_bits=3, desc_depth=16,
                                       flow_queues=True, flow_queues_block=block)

    def elaborate(self, platform):
        m = Module()
        dut = self.dut
        m.submodules.dut = dut.elaborate(platform)
        v, fq, n = dut.internals, self.contract, dut.cells
        ongoing, cur, data = v.manager.ongoing, v.cur, self.module.Verdict.DATA

        # The neighbours' promises (as AckListProof's).
        drive_inputs(m, dut)
        m.d.comb += Assume(~dut.entries_quiet | ~dut.entry_valid)
        manager_promises(m, dut)

        def queued(i):
            return fq.queued.bit_select(i, 1)

        # The descriptors at every address.
        descs = []
        for a in range(n):
            rp = v.descs.read_port(domain="comb")
            m.d.comb += rp.addr.eq(a)
            descs.append(rp.data)
        d_first = Array(d.chain.first for d in descs)
        d_chain = Array(d.chain.as_value() for d in descs)
        d_bytes = Array(d.nbytes for d in descs)
        d_all = Array(d.as_value() for d in descs)

        # The free list's promise: a data frame arrives in cells no queued
        # frame starts in (no cell in use is free), and none owed.
        w = Signal(range(n))
        m.d.comb += w.eq(AnyConst(range(n)))
        owed, in_cur, dropping = Signal(), Signal(), Signal()
        w_chain, w_bytes = Signal.like(cur.chain.as_value()), Signal.like(cur.nbytes)
        arrival = ongoing("Arrive") & (cur.verdict == data)
        m.d.comb += [
            Assume(~arrival | ~queued(cur.chain.first)),
            Assume(~(arrival & (cur.chain.first == w)) | ~owed),
        ]
        with m.If(arrival & (cur.chain.first == w)):
            m.d.sync += [owed.eq(1), in_cur.eq(1), w_chain.eq(cur.chain.as_value()), w_bytes.eq(cur.nbytes)]

        # The give-backs of W's chain.
        discard_w = dut.discard_en & (dut.discard_cells.first == w)
        releases = dut.egress_start & ~dut.egress_is_ack & (~dut.egress_seg | dut.egress_chunk_last)
        grant_w = releases & (dut.egress_addr == w)
        m.d.comb += [
            Assert(~discard_w | (owed & (dut.discard_cells.as_value() == w_chain))),
            Assert(~grant_w | (owed & (dut.egress_store_bytes == w_bytes))),
            Assert(~(discard_w & grant_w)),
        ]
        discard_was = Signal()                      # (cell_list's port: at most every other cycle)
        m.d.sync += discard_was.eq(dut.discard_en)
        m.d.comb += Assert(~(discard_was & dut.discard_en))
        with m.If(discard_w | grant_w):
            m.d.sync += [owed.eq(0), in_cur.eq(0), dropping.eq(0)]

        # The flow queues' protocol: a frame joins with an id none queued
        # has, W's only as the arrival in progress.
        m.d.comb += [
            Assert(~fq.enq | ~queued(fq.enq_id)),
            Assert(~(fq.enq & (fq.enq_id == w)) | in_cur),
            Assert(~fq.sent | (fq.picked_v & (fq.sent_last | ~fq.picked_whole))),
        ]
        with m.If(fq.enq & (fq.enq_id == w)):
            m.d.sync += in_cur.eq(0)
        drop_was, drop_id_q = Signal(), Signal(range(n))
        m.d.sync += drop_was.eq(fq.drop)
        with m.If(fq.drop):
            m.d.sync += drop_id_q.eq(fq.drop_id)
            with m.If(fq.drop_id == w):
                m.d.sync += dropping.eq(1)

        # What makes it inductive.
        departing = reduce(or_, (ongoing(s) for s in DEPARTING_STATES))
        after_pick = ongoing("Pick-Chunk") | ongoing("Depart-Data")
        rd_prev, at_prev, after_reset = Signal.like(d_all[0]), Signal(range(n)), Signal()
        m.d.sync += [rd_prev.eq(d_all[v.desc_at]), at_prev.eq(v.desc_at), after_reset.eq(1)]
        m.d.comb += [
            Assert(owed == (in_cur | queued(w) | dropping)),
            Assert(~(in_cur & queued(w)) & ~(in_cur & dropping) & ~(queued(w) & dropping)),
            Assert(~after_reset | (v.desc_r.as_value() == rd_prev)),  # (a read port starts undefined)
            Assert(fq.picking == ongoing("Pick-Wait")),
            Assert(fq.ovfing == ongoing("Overflow")),
            Assert(fq.picked_v == after_pick),
            Assert(v.drop_pend == drop_was),
            Assert(~dropping | v.drop_pend),
            # (Depart's view of the data queue is the Idle's before; a pick
            # finds a frame.)
            Assert(~ongoing("Depart") | (v.have_data_q == (fq.queued != 0))),
            Assert(~ongoing("Pick-Wait") | (fq.queued != 0)),
        ]
        # (Arrive's frame is the arrival in progress from the next cycle on.)
        past_arrive = ~departing & ~ongoing("Arrive")
        with m.If(in_cur):
            m.d.comb += Assert(past_arrive & (cur.verdict == data) & (cur.chain.first == w) &
                               (cur.chain.as_value() == w_chain) & (cur.nbytes == w_bytes))
        verdict = self.module.Verdict
        data_states = ongoing("Decide-Data") | ongoing("Data-Red") | ongoing("Red")
        overflow_states = ongoing("Overflow") | ongoing("Overflow-Choose") | ongoing("Overflow-End")
        ack_states = reduce(or_, (ongoing(s) for s in ("Decide-Miss", "Decide-Prep", "Decide-Hit", "Covered-Read",
                                                       "Drop-Front", "Write-Record", "Settle", "Drop-Covered")))
        m.d.comb += [
            Assert(~past_arrive | ((cur.verdict != verdict.RUNT) & (cur.verdict != verdict.OVERSIZE))),
            Assert(~data_states | (cur.verdict == data) | (cur.verdict == verdict.DATA_FULL)),
            Assert(~past_arrive | (v.is_data == ((cur.verdict == data) | (cur.verdict == verdict.DATA_FULL)))),
            Assert(~ongoing("Arrive") | ~v.is_data),
            Assert(~ack_states | ~v.is_data),
            Assert(~overflow_states | (cur.verdict == data)),
        ]
        with m.If(past_arrive & (cur.verdict == data)):
            m.d.comb += [Assert((cur.chain.first == w) == in_cur), Assert(~queued(cur.chain.first))]
        for i in range(n):
            with m.If(queued(i)):
                m.d.comb += Assert(d_first[i] == i)
        with m.If(queued(w) | dropping):
            m.d.comb += Assert((d_chain[w] == w_chain) & (d_bytes[w] == w_bytes))
        with m.If(after_pick):
            m.d.comb += Assert((v.desc_at_q == fq.picked_id) & queued(fq.picked_id) & (at_prev == v.desc_at_q))
        with m.If(v.drop_pend):
            m.d.comb += Assert((v.desc_r.chain.first == drop_id_q) & ((drop_id_q == w) == dropping))

        # Not vacuous: W's frame sent whole. (Its RED drop, an overflow's
        # drop of it and its last chunk, 27, 29 and 32 cycles after a reset
        # at the earliest, took the solver three minutes: `--deep`.)
        m.d.comb += Cover(grant_w & ~dut.egress_seg)
        if self.deep_cover:
            m.d.comb += [
                Cover(discard_w & ongoing("Red")),
                Cover(discard_w & ongoing("Overflow")),
                Cover(grant_w & dut.egress_seg),
            ]
        return m


def _mutant(old, new):
    return lambda: GiveBackProof(module=mutant(queue_manager, old, new))


GIVE_BACK_PROOFS = [
    Proof("data_give_back", "the queue manager (with the flow queues' contract): a data frame's cells "
          "are given back once, whole, as they arrived: by a discard at arrival, a discard in an "
          "overflow, or the grant that sends the frame whole or its last chunk; frames are queued "
          "with ids no queued frame has, and the flow queues' protocol is kept",
          lambda: GiveBackProof(), depth=4, cover_depth=20,
          deep=lambda: GiveBackProof(deep_cover=True), deep_depth=36,
          mutations={
              "a RED drop of a frame the ring had no room for giving back cells": _mutant(
                  "with m.If(cur.verdict == Verdict.DATA):      # in its cells: give them back",
                  "with m.If(1):      # in its cells: give them back"),
              "an overflow's drop giving back the arriving frame's cells": _mutant(
                  "self.discard_cells.eq(desc_r.chain),", "self.discard_cells.eq(cur.chain),"),
              "the descriptor written at the frame's last cell": _mutant(
                  "descs_w.en.eq(1), descs_w.addr.eq(cur.chain.first),",
                  "descs_w.en.eq(1), descs_w.addr.eq(cur.chain.last),"),
              "a cut frame leaving its queue with its first chunk": _mutant(
                  "fq.sent_last.eq(leaves)", "fq.sent_last.eq(1)"),
          }),
]
