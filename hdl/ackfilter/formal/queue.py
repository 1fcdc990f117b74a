"""Proofs about the queue manager (:class:`~ackfilter.gateware.queue_manager.QueueManager`),
the whole block at a small size: 4 ACK queue positions, 2 flow entries,
flow queues on (the board's configuration).

The harness elaborates the manager itself and states facts about its
memories and registers (``QueueManager.internals``); every input is free in
every cycle (any frame, any verdict, any key slot write, any parameter in
its range, any egress and shaper), within the ingress's contract: no frame
before the list's node stack is built after a reset.
"""

from functools import reduce
from types import SimpleNamespace
from operator import or_

from amaranth.hdl import *
from amaranth.hdl._ast import AnySeq
from amaranth.lib import wiring

from ..gateware import queue_manager
from ..gateware.flow_record import (KEY_WORDS64, REC_ACK, REC_FLOOR_ACK, REC_FLOOR_TS, REC_NEWEST_END,
                                     REC_TS, RECORD_WORDS, SLOT_TAKE_AT, SLOT_WRITE_ORDER)
from ..gateware.ingress import KEY_SLOTS
from ..flowkey import KEY_V6_BIT
from ..params import PARAMS
from . import Proof
from .harness import mutant, stack_facts

__all__ = ["AckListProof", "QUEUE_PROOFS"]


def _drive_inputs(m, dut, skip=()):
    """Every input of ``dut`` but those named in ``skip`` free in every cycle."""
    for name, member in dut.signature.members.items():
        if member.is_port and member.flow == wiring.In and name not in skip:
            port = Value.cast(getattr(dut, name))
            m.d.comb += port.eq(AnySeq(len(port)))


class _After(Elaboratable):
    """Statements about the submodules added before it: Amaranth elaborates
    a module's submodules in order, each whole, so by the time this one is
    elaborated theirs have named their internals."""

    def __init__(self, facts):
        self.facts = facts

    def elaborate(self, platform):
        m = Module()
        self.facts(m)
        return m


class AckListProof(Elaboratable):
    """The ACK queue's doubly linked list, through appends, supersessions,
    departures, drops from the front and drops of a covered ACK: walking
    ``qlen`` steps of ``next`` from the head meets ``qlen`` different nodes
    and ends at the tail, ``prev`` agrees with ``next`` along the way, and
    the queued nodes and the node stack's free ones are the nodes, each
    once. Proven with it (what the list's safety rests on): each flow's
    count of tracked ACKs is the number of its tracked nodes in the list (a
    count update on its way included), its newest node is one of them, its
    covered ACK is one of them and neither its newest nor the tail, and a
    flow entry the CAM holds free has none."""

    def __init__(self, *, slots=4, flows=2, module=queue_manager):
        self.dut = module.QueueManager(ack_slots=slots, flow_entries=flows, cells=16, buf_bits=3,
                                       desc_depth=16, flow_queues=True)

    def elaborate(self, platform):
        m = Module()
        dut = self.dut
        # (Elaborated here, so that the harness can add read ports to its
        # memories; its submodules are elaborated with the harness.)
        m.submodules.dut = dut.elaborate(platform)
        self.drive(m)
        m.d.comb += [
            Assume(~ResetSignal()),
            # (The parameters in their ranges, as the CSR bank keeps them:
            # the csr_params proof.)
            *[Assume((port >= p.minimum) & (port <= p.maximum))
              for p in PARAMS if (port := getattr(dut, p.name, None)) is not None],
        ]
        # The egress is busy in the cycle after it starts a frame.
        started = Signal()
        m.d.sync += started.eq(dut.egress_start)
        m.d.comb += Assume(~started | dut.egress_busy)
        v = dut.internals
        n, nf = dut.ack_slots, dut.flow_entries
        m.d.comb += Assume(~dut.entry_valid | v.node_pool.ready)

        def reads(mem, addrs):
            out = []
            for a in addrs:
                rp = mem.read_port(domain="comb")
                m.d.comb += rp.addr.eq(a)
                out.append(rp.data)
            return out

        # The walk from the head: p[i] is the ith queued node (i < qlen).
        qlen, head, tail = v.qlen, v.head, v.tail
        # (The memories are read at every address and walked through
        # multiplexers: a read port's address from another's data would be
        # a loop through the memory cell.)
        nxt = Array(reads(v.nxt, range(n)))
        p = [head]
        for i in range(n - 1):
            p.append(nxt[p[i]])
        prv = reads(v.prv, range(n))
        node = reads(v.nodes, range(n))
        queued = Signal(n)
        m.d.comb += queued.eq(reduce(or_, [Mux(i < qlen, 1 << p[i], 0) for i in range(n)]))
        pool = v.node_pool
        m.d.comb += [
            Assert(qlen <= n),
            Assert(qlen + pool.depth == Mux(pool.ready, n, pool.depth)),
            Assert(pool.ready | ((qlen == 0) & v.manager.ongoing("Idle"))),
        ]
        for j in range(1, n):
            with m.If(j < qlen):
                m.d.comb += Assert(Array(prv)[p[j]] == p[j - 1])
                for i in range(j):
                    m.d.comb += Assert(p[i] != p[j])
        with m.If(qlen != 0):
            m.d.comb += Assert(Array(p)[qlen - 1] == tail)
        stack_facts(m, pool, queued)

        # Each flow's bookkeeping.
        ongoing = v.manager.ongoing
        m.d.comb += Assert(~v.grow | ongoing("Write-Record"))
        count = reads(v.flow_count, range(nf))
        newest = reads(v.flow_newest, range(nf))
        cov = reads(v.cov_nodes, range(nf))

        def is_queued(k):
            return queued.bit_select(k, 1)

        def field(k, name):
            return Array(getattr(nd, name) for nd in node)[k]

        effs, newests = [], []
        for f in range(nf):
            growing = v.grow & (v.idx == f)
            upd = v.upd_en_q & (v.upd_flow_q == f)
            eff = Signal(range(-1, n + 3), name=f"count_eff_{f}")
            m.d.comb += eff.eq(count[f] + growing + Mux(upd, Mux(v.upd_dec_q, -1, 1), 0))
            mine = [queued[k] & node[k].tracked & (node[k].flow == f) for k in range(n)]
            new_f = Mux(growing, v.grow_node, newest[f])
            effs.append(eff)
            newests.append(new_f)
            m.d.comb += [
                Assert(eff == sum(mine)),
                Assert(v.cam.valid[f] | (eff == 0)),
            ]
            with m.If(eff != 0):
                m.d.comb += Assert(is_queued(new_f) & field(new_f, "tracked") & (field(new_f, "flow") == f))
                # ... and the last of them in the queue.
                at = [field(p[i], "tracked") & (field(p[i], "flow") == f) for i in range(n)]
                for j in range(1, n):
                    for i in range(j):
                        with m.If(j < qlen):
                            m.d.comb += Assert(~((p[i] == new_f) & at[j]))
            with m.If(v.flow_cov[f]):
                c = cov[f]
                m.d.comb += [
                    Assert(is_queued(c) & field(c, "tracked") & (field(c, "flow") == f)),
                    Assert((c != tail) & (c != new_f)),
                ]

        # A count update is applied in the cycle after the state that makes
        # it, which goes to one of these; the decision's view of the
        # arriving ACK's flow (read in Read-Record) is current.
        m.d.comb += Assert(~v.upd_en_q | ongoing("Idle") | ongoing("Settle") | ongoing("Lookup"))
        # Which way the decision came (a hit or a miss), as the states say.
        with m.If(ongoing("Decide-Miss")):
            m.d.comb += Assert(~v.from_hit & ~v.hit_q & ~v.sel_newest_q)
        # A hit's entry stays (a drop of its flow's last ACK looks again).
        valid = v.cam.valid
        with m.If(ongoing("Await-Lookup") & v.cam.hit):
            m.d.comb += Assert(valid.bit_select(v.cam.hit_index, 1))
        with m.If(v.from_hit & (ongoing("Read-Record") | ongoing("Decide-Prep") | ongoing("Decide-Hit") |
                                ongoing("Settle"))):
            m.d.comb += Assert(valid.bit_select(v.idx, 1))
        with m.If(ongoing("Read-Record") | ongoing("Decide-Prep")):
            m.d.comb += Assert(v.from_hit & ~v.hit_q & ~v.sel_newest_q)
        with m.If(ongoing("Decide-Hit") | ongoing("Settle")):
            m.d.comb += Assert(v.from_hit & v.hit_q & (v.sel_newest_q == (v.supersede_q & v.key_eq)))
        with m.If(ongoing("Covered-Read") | ongoing("Drop-Covered") | ongoing("Drop-Front")):
            m.d.comb += Assert((v.hit_q == v.from_hit) & ~v.sel_newest_q)
        with m.If(v.from_hit & (ongoing("Decide-Hit") | ongoing("Settle") | ongoing("Covered-Read") |
                                ongoing("Drop-Covered") | ongoing("Drop-Front"))):
            m.d.comb += [Assert(~v.may_q | (v.count_q != 0)), Assert(~v.supersede_q | v.may_q)]
        with m.If(ongoing("Decide-Prep") | ongoing("Decide-Hit") | ongoing("Settle")):
            m.d.comb += Assert(v.count_q == Array(effs)[v.idx])
            with m.If(v.count_q != 0):
                m.d.comb += Assert(v.newest_q == Array(newests)[v.idx])

        # The flow queues work for the manager's states: a pick while it
        # waits for one, a frame's removal in the Idle after it left, the
        # overflow's drops while it waits for them; a queue that left its
        # list (in a pick, or a removal) frees its flow entry in the cycle
        # after.
        def fq_facts(m):
            fq_in = v.fq.internals.fsm.ongoing
            with m.If(fq_in("Pick")):
                m.d.comb += Assert(ongoing("Pick-Wait"))
            with m.If(fq_in("Sent-Remove") | fq_in("Sent-Chunk")):
                m.d.comb += Assert(ongoing("Idle"))
            with m.If(v.rel_v):
                m.d.comb += Assert(ongoing("Idle") | ongoing("Pick-Wait") | ongoing("Pick-Chunk") |
                                   ongoing("Depart-Data"))
            with m.If(fq_in("Ovf-Check") | fq_in("Scan") | fq_in("Drop-Prep") | fq_in("Drop-Id") |
                      fq_in("Drop-Behind") | fq_in("Drop") | fq_in("Drop-Done")):
                m.d.comb += Assert(ongoing("Overflow"))
            with m.If(fq_in("Init")):
                m.d.comb += Assert(ongoing("Idle") & (qlen == 0))
        m.submodules.fq_facts = _After(fq_facts)

        # Not vacuous: an ACK appended, and one departing. (The flow queues
        # clear their counts for 16 cycles after a reset and the CAM writes
        # a new tag for 16, so a second ACK comes 36 cycles in at the
        # earliest: the covers of supersessions and drops, 45 to 60 cycles
        # deep, took the solver many minutes. The mutations show those
        # paths reach the assertions.)
        m.d.comb += [
            Cover(ongoing("Write-Record") & v.grow),
            Cover(ongoing("Depart") & (qlen == 1) & ~v.have_data_q),
        ]
        self.more(m, SimpleNamespace(v=v, reads=reads, queued=queued, node=node, field=field,
                                     effs=effs, ongoing=ongoing))
        return m

    def drive(self, m):
        """The inputs: every one free in every cycle."""
        _drive_inputs(m, self.dut)
        m.d.comb += Assume(~self.dut.entries_quiet | ~self.dut.entry_valid)

    def more(self, m, ctx):
        """More to prove, with the list's facts (a subclass's)."""


class AckKeyProof(AckListProof):
    """A queued ACK is overwritten only by an ACK whose full flow key (all
    six 64-bit words, not the CAM's 16-bit tag) equals its own.

    Not proven yet, so not in :data:`QUEUE_PROOFS`: the base case holds,
    and the induction step still finds states the facts below allow and
    the manager cannot reach (the last: a state's lower bound on the age of
    the frame it handles). Run it with ``AckKeyProof()`` and
    :func:`ackfilter.formal.run`.

    The ingress is modelled as it writes key slots: a frame is pushed with a
    key chosen freely (the shape of `flow_key_words`: an IPv4 key's words 2
    and 4 zero, word 5's high half zero), into the next of the KEY_SLOTS
    slots, its 14 slot words written one a cycle in SLOT_WRITE_ORDER; it is
    offered to the manager SLOT_TAKE_AT cycles after its push until popped,
    and the next push comes once it is popped and its words are written.
    The harness keeps the key of the frame being handled and of the frame in
    each node; every other input is free.

    What makes it inductive, besides the list's facts: the key memory holds
    each frame's words once written; the record of a flow with a tracked ACK
    queued holds that ACK's key (or, while a new entry's record is written,
    will); the record words read and compared in Read-Record are those of
    the flow's record and the frame's slot, and ``key_eq`` is the AND of the
    compares made so far."""

    def drive(self, m):
        dut = self.dut
        _drive_inputs(m, dut, skip={"entry_valid", "entries_quiet", "key_wr_en", "key_wr_addr", "key_wr_data"})
        n_w = len(SLOT_WRITE_ORDER)
        # The last frame pushed: its slot, key and age (its words are
        # written at ages 0 .. n_w - 1); a frame being handled, popped.
        self.pend = pend = Signal()
        self.age = age = Signal(range(n_w + 1), init=n_w)
        self.slot = slot = Signal(range(KEY_SLOTS))
        self.pkey = pkey = [Signal(64, name=f"pkey{w}") for w in range(KEY_WORDS64)]
        self.cslot = cslot = Signal(range(KEY_SLOTS))
        self.ckey = ckey = [Signal(64, name=f"ckey{w}") for w in range(KEY_WORDS64)]
        push = Signal()
        new = [AnySeq(64) for _ in range(KEY_WORDS64)]
        m.d.comb += [push.eq(AnySeq(1) & ~pend & (age == n_w)), Assume(_key_shape(new))]
        with m.If(push):
            m.d.sync += [pend.eq(1), age.eq(0), slot.eq(slot + 1), *[pkey[w].eq(new[w]) for w in range(KEY_WORDS64)]]
        with m.Else():
            with m.If(age != n_w):
                m.d.sync += age.eq(age + 1)
            with m.If(dut.entry_ready):
                m.d.sync += [pend.eq(0), cslot.eq(slot), *[ckey[w].eq(pkey[w]) for w in range(KEY_WORDS64)]]
        word = Array(C(j, 4) for j in SLOT_WRITE_ORDER)[age]
        m.d.comb += [
            dut.key_wr_en.eq(age != n_w),
            dut.key_wr_addr.eq(Cat(word, slot)),
            dut.key_wr_data.eq(Mux(word < KEY_WORDS64, Array(pkey)[word], AnySeq(64))),
            dut.entry_valid.eq(pend & (age >= SLOT_TAKE_AT)),
            dut.entry.key_slot.eq(slot),
            dut.entry.key_v6.eq(pkey[0][KEY_V6_BIT]),
            dut.entries_quiet.eq(~pend & ~push),
        ]

    def more(self, m, ctx):
        dut, v, reads, ongoing = self.dut, ctx.v, ctx.reads, ctx.ongoing
        n, nf = dut.ack_slots, dut.flow_entries
        kw = range(KEY_WORDS64)
        pend, age, slot, pkey, cslot, ckey = self.pend, self.age, self.slot, self.pkey, self.cslot, self.ckey
        at = {j: c for c, j in enumerate(SLOT_WRITE_ORDER)}      # the age at which word j is written

        # The ingress model's frames, in the key memory.
        m.d.comb += [Assert(_key_shape(pkey)), Assert(_key_shape(ckey))]
        p_slot = reads(v.keys, [Cat(C(w, 4), slot) for w in kw])
        c_slot = reads(v.keys, [Cat(C(w, 4), cslot) for w in kw])
        for w in kw:
            with m.If(age > at[w]):
                m.d.comb += Assert(p_slot[w] == pkey[w])
        with m.If(pend):
            m.d.comb += [Assert(cslot == (slot - 1)[:len(slot)]), *[Assert(c_slot[w] == ckey[w]) for w in kw]]
        with m.Else():
            m.d.comb += [Assert(cslot == slot), *[Assert(ckey[w] == pkey[w]) for w in kw]]
        # The record writes behind the state machine (a record's words
        # after Write-Record, a new data entry's key) go on while it
        # departs frames, one at a time.
        departing = (ongoing("Idle") | ongoing("Depart") | ongoing("Pick-Wait") | ongoing("Pick-Chunk") |
                     ongoing("Depart-Data"))
        with m.If(v.wb_v | v.kc_v):
            m.d.comb += Assert(departing & ~(v.wb_v & v.kc_v))
        # Write-Record's words: a new entry's all 16 (first 0), an append's
        # or a supersession's the newest ACK's from REC_ACK to its last,
        # then with `wk_floor` the floor's (REC_FLOOR_ACK, and REC_FLOOR_TS
        # with TS); `wb_last` marks the last.
        with m.If(ongoing("Write-Record") | v.wb_v):
            nl, last, wk = v.wk_newest_last, v.wk_last, v.wk
            m.d.comb += [
                Assert((nl >= REC_TS) & (nl < REC_NEWEST_END)),
                Assert(Mux(v.wk_floor, (last == REC_FLOOR_ACK) | (last == REC_FLOOR_TS), last == nl)),
                Assert((wk <= nl) | (v.wk_floor & (wk >= REC_FLOOR_ACK) & (wk <= last))),
                Assert((wk >= REC_ACK) | ((nl == REC_NEWEST_END - 1) & v.wk_floor & (last == REC_FLOOR_TS))),
            ]
        with m.If(ongoing("Write-Record")):
            m.d.comb += Assert((v.wk == 0) | (v.wk == REC_ACK))
        with m.If(v.wb_v):
            m.d.comb += Assert(v.wb_last == (v.wk == v.wk_last))
        # A miss takes a free entry, which stays free until the decision
        # sets it (an ACK's in Decide-Miss, a data frame's as it is queued).
        valid = v.cam.valid
        with m.If(ongoing("Await-Lookup") & v.cam.free):
            m.d.comb += Assert(~valid.bit_select(v.cam.free_index, 1))
        after_miss = (ongoing("Decide-Miss") | ongoing("Decide-Data") | ongoing("Data-Red") | ongoing("Red") |
                      ongoing("Overflow") | ongoing("Overflow-Choose") | ongoing("Overflow-End"))
        with m.If(after_miss & ~v.from_hit & v.cam.free):
            m.d.comb += Assert(~valid.bit_select(v.idx, 1))
        with m.If(v.dq_new & (ongoing("Data-Red") | ongoing("Red") | ongoing("Overflow") | ongoing("Overflow-Choose") |
                              ongoing("Overflow-End"))):
            m.d.comb += Assert(~v.from_hit & v.cam.free)
        # How far the manager can be with the frame last pushed (at least a
        # cycle a step from its take, SLOT_TAKE_AT cycles after the push),
        # so that the words it reads are written.
        def at_least(lo):
            return age >= Mux(lo > n_w, n_w, lo)
        n_w = len(SLOT_WRITE_ORDER)
        with m.If(~pend):
            for state, lo in (("Arrive", 6), ("Lookup", 7), ("Await-Lookup", 8), ("Decide-Miss", 9),
                              ("Decide-Data", 9), ("Data-Red", 10), ("Red", 10), ("Decide-Prep", 10),
                              ("Decide-Hit", 10), ("Write-Record", 10), ("Overflow", 11),
                              ("Overflow-Choose", 11), ("Overflow-End", 11)):
                with m.If(ongoing(state)):
                    m.d.comb += Assert(at_least(lo))
            with m.If(ongoing("Read-Record")):
                m.d.comb += Assert(at_least(8 + v.rc))
            with m.If(v.wb_v & (v.wk < KEY_WORDS64)):
                m.d.comb += Assert(at_least(10 + v.wk))
            with m.If(v.kc_v):
                m.d.comb += Assert(at_least(11 + v.kc_w))
        # The frame the manager handles is the one popped last.
        # (In Arrive it is popped: the harness's copy follows a cycle on. In
        # Idle `cur` follows the entry offered, and keeps what it has while
        # frames depart.)
        handling = ~departing & ~ongoing("Arrive") | (v.wb_v & ~v.wb_last)
        with m.If(handling):
            m.d.comb += Assert(v.cur.key_slot == cslot)
        with m.If(v.kc_v):
            m.d.comb += Assert(v.kc_slot == cslot)

        # The key each node's ACK was queued with.
        nkey = [[Signal(64, name=f"nkey{k}_{w}") for w in kw] for k in range(n)]
        with m.If(v.node_w.en):
            with m.Switch(v.node_w.addr):
                for k in range(n):
                    with m.Case(k):
                        m.d.sync += [nkey[k][w].eq(ckey[w]) for w in kw]

        # Each flow's record holds the key of its tracked queued ACKs (a
        # new entry's record is written over Write-Record and after: its
        # words from `wk` on are still to come, from the frame's slot).
        rec = [reads(v.records, [f * RECORD_WORDS + w for w in kw]) for f in range(nf)]
        writing = (ongoing("Write-Record") | v.wb_v) & (v.wk < KEY_WORDS64)
        copying = v.kc_v
        rec_eff = [[Mux(writing & (v.idx == f) & (v.wk <= w), ckey[w],
                        Mux(copying & (v.kc_idx == f) & (v.kc_w <= w), ckey[w], rec[f][w]))
                    for w in kw] for f in range(nf)]
        # (The CAM writes a new entry's tag beside its record's words, or
        # its key's copy: the next frame waits for the CAM.)
        with m.If(writing):
            m.d.comb += [Assert(v.key_r.data == Array(ckey)[v.wk]),
                         Assert(v.cam.busy & (v.cam.w_word == v.wk))]
        with m.If(copying):
            m.d.comb += Assert(v.cam.busy & (v.cam.w_word == v.kc_w))
        with m.If(copying):
            m.d.comb += [Assert(v.kc_w < KEY_WORDS64), Assert(v.key_r.data == Array(ckey)[v.kc_w])]
        for f in range(nf):
            with m.If(v.cam.valid[f]):
                m.d.comb += Assert(_key_shape(rec_eff[f]))
            for k in range(n):
                with m.If(ctx.queued[k] & ctx.node[k].tracked & (ctx.node[k].flow == f)):
                    m.d.comb += [Assert(nkey[k][w] == rec_eff[f][w]) for w in kw]

        # Read-Record's compares: word w (read at rc = w, word 0 in
        # Await-Lookup) is compared at rc = w + 2; `key_eq` has seen the
        # words up to rc - 3 (an IPv4 key's words 2 and 4 are not read).
        rec_i = Array(Array(r) for r in rec)[v.idx]
        ack = ~v.is_data
        with m.If(ongoing("Read-Record") & ack):
            with m.If(v.cmp_v & (v.cmp_j < KEY_WORDS64)):
                m.d.comb += [Assert(v.rec_word == rec_i[v.cmp_j]), Assert(v.key_word == Array(ckey)[v.cmp_j])]
            with m.If(v.rd_v & (v.rd_j < KEY_WORDS64)):
                m.d.comb += [Assert(v.rec_r.data == rec_i[v.rd_j]), Assert(v.key_r.data == Array(ckey)[v.rd_j])]
            for w in kw:
                read = v.key_v6 | (w not in (2, 4))
                with m.If(v.key_eq & read & (w + 3 <= v.rc)):
                    m.d.comb += Assert(rec_i[w] == ckey[w])
        decided = ongoing("Decide-Prep") | ongoing("Decide-Hit") | ongoing("Settle")
        with m.If(decided & ack & v.key_eq):
            m.d.comb += [Assert(rec_i[w] == ckey[w]) for w in kw]
        with m.If(ongoing("Await-Lookup") | ongoing("Read-Record") | decided):
            m.d.comb += Assert(v.key_v6 == ckey[0][KEY_V6_BIT])

        # The property.
        with m.If(v.node_w.en & v.sel_newest_q):
            m.d.comb += [Assert(Array(nkey)[v.newest_q][w] == ckey[w]) for w in kw]
        m.d.comb += Cover(v.node_w.en & ongoing("Decide-Miss"))


def _key_shape(words):
    """A flow key's words as the ingress writes them (`flow_key_words`):
    word 5's high half 0; an IPv4 key's words 2 and 4 0."""
    return (words[5][32:] == 0) & (words[0][KEY_V6_BIT] | ((words[2] == 0) & (words[4] == 0)))


def _mutant(old, new):
    return lambda: AckListProof(module=mutant(queue_manager, old, new))


QUEUE_PROOFS = [
    Proof("ack_list", "the queue manager (whole, 4 ACK positions, 2 flow entries, flow queues): the "
          "ACK queue's doubly linked list stays well formed (qlen steps of next from the head meet qlen "
          "different nodes and end at the tail, prev agrees) through appends, supersessions, departures "
          "and both kinds of drop; queued and free nodes are the 4, each once; each flow's count, newest "
          "ACK (its last queued) and covered ACK (never its newest, never the tail) agree with the list",
          lambda: AckListProof(), depth=4, cover_depth=25,
          mutations={
              "a covered ACK's successor linked back to the wrong node": _mutant(
                  "prv_w.addr.eq(col_q),", "prv_w.addr.eq(col_p),"),
              "a departing head's node not given back (lost)": _mutant(
                  "m.d.comb += [node_free_en.eq(1), node_free_id.eq(head)]",
                  "m.d.comb += [node_free_en.eq(0), node_free_id.eq(head)]"),
              "a covered ACK leaving at the head keeps its mark (a stale pointer)": _mutant(
                  "with m.If(head_is_cov):", "with m.If(head_is_cov & 0):"),
              "no Settle after a drop (the next decision reads stale candidates)": _mutant(
                  'm.next = "Settle"', 'm.next = "Decide-Hit"'),
              "a covered ACK's drop not counted": _mutant(
                  "count_add(col_flow, -1)", "pass"),
          }),
]
