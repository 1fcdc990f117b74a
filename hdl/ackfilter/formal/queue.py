# amaranth: UnusedElaboratable=no
# (The harness elaborates the block itself, to reach its memories.)
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
from amaranth.hdl._ast import AnyConst

from ..gateware import queue_manager
from ..gateware.flow_record import (KEY_WORDS64, RECORD_WORDS, REC_ACK, REC_FLOOR_ACK, REC_FLOOR_TS,
                                    REC_NEWEST_END, REC_TS)
from ..params import PARAMS
from . import Proof
from .harness import drive_inputs, mutant, stack_facts

__all__ = ["AckListProof", "KeyCompareProof", "RecordKeyProof", "SlotReadProof", "QUEUE_PROOFS",
           "manager_promises", "DEPARTING_STATES"]


#: The manager's states that depart frames (or wait in Idle): an arrival is
#: handled in none of them.
DEPARTING_STATES = ("Idle", "Depart", "Pick-Wait", "Pick-Chunk", "Depart-Data")


def manager_promises(m, dut):
    """What the queue manager's neighbours promise it, for a harness of the
    whole block (``dut`` elaborated, its inputs driven): no reset after the
    first cycle; the parameters in their ranges, as the CSR bank keeps them
    (the ``csr_params`` proof); the egress busy in the cycle after it starts
    a frame; no frame offered before the ACK list's node stack is built
    after a reset."""
    started = Signal()
    m.d.sync += started.eq(dut.egress_start)
    m.d.comb += [
        Assume(~ResetSignal()),
        *[Assume((port >= p.minimum) & (port <= p.maximum))
          for p in PARAMS if (port := getattr(dut, p.name, None)) is not None],
        Assume(~started | dut.egress_busy),
        Assume(~dut.entry_valid | dut.internals.node_pool.ready),
    ]


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
        manager_promises(m, dut)
        v = dut.internals
        n, nf = dut.ack_slots, dut.flow_entries

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
        drive_inputs(m, self.dut)
        m.d.comb += Assume(~self.dut.entries_quiet | ~self.dut.entry_valid)

    def more(self, m, ctx):
        """More to prove, with the list's facts (a subclass's)."""


def _writer_facts(m, v, ongoing):
    """What the queue manager's other readers of the key memory and writers
    of records do (facts for the harnesses that follow them)."""
    # Nothing else reads the key memory meanwhile: Write-Record's words
    # written behind the state machine (`wb_v`) and a new data entry's
    # key copy (`kc_v`) go on only while it departs frames, one at a
    # time; `wb_last` marks Write-Record's last word (the next frame is
    # taken in its cycle).
    departing = reduce(or_, (ongoing(s) for s in DEPARTING_STATES))
    with m.If(v.wb_v | v.kc_v):
        m.d.comb += Assert(departing & ~(v.wb_v & v.kc_v))
    # (The CAM writes a new entry's tag beside its key's copy: the
    # next frame waits for the CAM.)
    with m.If(v.kc_v):
        m.d.comb += [Assert(v.cam.busy & (v.cam.w_word == v.kc_w)), Assert(v.kc_w < KEY_WORDS64)]
    # Write-Record's words: a new entry's all 16 (first 0), an append's
    # or a supersession's the newest ACK's from REC_ACK to its last,
    # then with `wk_floor` the floor's (REC_FLOOR_ACK, and REC_FLOOR_TS
    # with TS); `wb_last` marks the last.
    m.d.comb += Assert(v.cur.meta.sack_n <= 4)
    with m.If(ongoing("Write-Record") | v.wb_v):
        nl, last, wk = v.wk_newest_last, v.wk_last, v.wk
        m.d.comb += [
            Assert((nl >= REC_TS) & (nl < REC_NEWEST_END)),
            Assert(Mux(v.wk_floor, (last == REC_FLOOR_ACK) | (last == REC_FLOOR_TS), last == nl)),
            Assert((wk <= nl) | (v.wk_floor & (wk >= REC_FLOOR_ACK) & (wk <= last))),
        ]
    with m.If(ongoing("Write-Record")):
        m.d.comb += Assert((v.wk == 0) | (v.wk == REC_ACK))
    with m.If(v.wb_v):
        m.d.comb += Assert(v.wb_last == (v.wk == v.wk_last))


class _ParsedAckListProof(AckListProof):
    """:class:`AckListProof` with the parser's contract on the entries:
    at most four SACK blocks (a fifth would make Write-Record's words run
    past the record's, which the harnesses that follow them state)."""

    def drive(self, m):
        super().drive(m)
        m.d.comb += Assume(self.dut.entry.meta.sack_n <= 4)


class KeyCompareProof(_ParsedAckListProof):
    """The full-key compare behind every supersession: an ACK that hits a
    flow entry's tag is let supersede (``sel_newest_q``, formed in
    Decide-Prep) only when every word of its flow key was compared with the
    word of the same number in that entry's record and found equal: all
    six for an IPv6 key, words 0, 1, 3 and 5 for an IPv4 one (its words 2
    and 4 are zero in the key slot and the record alike, and word 0's
    IPv6 bit tells the two apart), word 5 in its low half (the ports; its
    high half is zero). The harness notes each compare as the pipeline
    makes it (the two words, and the addresses they were read at two
    cycles before) and states, besides the list's facts, where the compare
    pipeline is in each cycle of Read-Record.

    The compare half of ``supersede_key``: :class:`RecordKeyProof` adds
    that the record holds the key of the flow's tracked ACKs. That the
    frame's key slot holds its key by the time a word is read is
    ``slot_read_time``'s and ``slot_write_time``'s (``formal/ingress.py``).
    """

    def __init__(self, *, deep_cover=False, **kwargs):
        super().__init__(**kwargs)
        self.deep_cover = deep_cover

    def more(self, m, ctx):
        v, ongoing = ctx.v, ctx.ongoing
        kw = range(KEY_WORDS64)
        seen = Signal(KEY_WORDS64)
        same = Signal(KEY_WORDS64)
        rec_at = [Signal.like(v.rec_r.addr, name=f"rec_at{j}") for j in kw]
        key_at = [Signal.like(v.key_r.addr, name=f"key_at{j}") for j in kw]
        # The read addresses, one and two cycles ago.
        ra1, ra2 = Signal.like(v.rec_r.addr), Signal.like(v.rec_r.addr)
        ka1, ka2 = Signal.like(v.key_r.addr), Signal.like(v.key_r.addr)
        m.d.sync += [ra1.eq(v.rec_r.addr), ra2.eq(ra1), ka1.eq(v.key_r.addr), ka2.eq(ka1)]

        def equal(j, a, b):
            return (a[:32] == b[:32]) if j == KEY_WORDS64 - 1 else (a == b)

        comparing = ongoing("Read-Record") & v.cmp_v
        with m.If(ongoing("Await-Lookup")):
            m.d.sync += seen.eq(0)
        with m.Elif(comparing):
            for j in kw:
                with m.If(v.cmp_j == j):
                    # (A word compared again, had `rc` wrapped, only ANDs.)
                    eq = equal(j, v.rec_word, v.key_word)
                    m.d.sync += [seen[j].eq(1), same[j].eq(Mux(seen[j], same[j] & eq, eq)),
                                 rec_at[j].eq(ra2), key_at[j].eq(ka2)]

        ack = ~v.is_data
        needed = Mux(v.key_v6, 0b111111, 0b101011)
        slot = v.cur.key_slot

        def rec_addr(j):
            return v.idx * RECORD_WORDS + j

        def key_addr(j):
            return Cat(j[:len(v.key_at)] if isinstance(j, Value) else C(j, len(v.key_at)), slot)

        # The property.
        with m.If(ongoing("Decide-Prep") & ack & v.from_hit & v.key_eq):
            for j in kw:
                with m.If(needed[j]):
                    m.d.comb += Assert(seen[j] & same[j] & (rec_at[j] == rec_addr(j)) & (key_at[j] == key_addr(j)))

        _writer_facts(m, v, ongoing)

        # Where the compare is: in Read-Record's cycle `rc` = r, key word j
        # (j < r) was read in cycle j (word 0 in Await-Lookup, cycle 0), is
        # out of the block RAM (`rd_j`) a cycle later, and compared
        # (`cmp_j`) a cycle after that; each compare so far was of the
        # words at the entry's record and the frame's slot, and `key_eq`
        # is the AND of them.
        with m.If((ongoing("Read-Record") | ongoing("Decide-Prep")) & ack & v.from_hit):
            m.d.comb += [Assert(v.idx < len(v.cam.valid)), Assert(v.key_eq == (same | ~seen).all())]
            for j in kw:
                with m.If(seen[j]):
                    m.d.comb += Assert((rec_at[j] == rec_addr(j)) & (key_at[j] == key_addr(j)))
        with m.If(ongoing("Read-Record") & ack & v.from_hit):
            r = v.rc
            with m.If(v.rd_v & (v.rd_j < KEY_WORDS64)):
                m.d.comb += [Assert(ra1 == rec_addr(v.rd_j)), Assert(ka1 == key_addr(v.rd_j))]
            with m.If(v.cmp_v & (v.cmp_j < KEY_WORDS64)):
                m.d.comb += [Assert(ra2 == rec_addr(v.cmp_j)), Assert(ka2 == key_addr(v.cmp_j))]
            for j in kw:
                with m.If(needed[j] & (j < r)):
                    m.d.comb += Assert(seen[j] | (v.cmp_v & (v.cmp_j == j)) | (v.rd_v & (v.rd_j == j)))
        with m.If(ongoing("Decide-Prep") & ack & v.from_hit):
            m.d.comb += Assert((seen & needed) == needed)
        self.compare = SimpleNamespace(seen=seen, same=same, needed=needed, ka1=ka1, key_addr=key_addr,
                                       ack=ack)
        if self.deep_cover:
            # The decision of an ACK that hit with its whole key equal: a
            # second ACK of a flow, 47 cycles after a reset at the earliest.
            m.d.comb += Cover(ongoing("Decide-Prep") & ack & v.from_hit & v.key_eq)


class RecordKeyProof(KeyCompareProof):
    """A supersession overwrites an ACK whose key, as read from its own key
    slot, is the superseding ACK's, as read from its slot: word for word,
    the words :class:`KeyCompareProof` shows are compared.

    One key word, any of them (`W`, chosen freely once: what holds for it
    holds for each), is followed. The harness keeps beside each node that
    word of the key its ACK was queued with (`nkey`): a tracked ACK that hit
    takes its entry's record word (which its compare found equal to its
    own); a new entry's ACK takes the word Write-Record writes into the
    record from its slot, when it is written. Proven with it: the record's
    word of an entry with a tracked ACK queued is that ACK's (no write
    reaches it: a new entry's record and a data entry's key copy are written
    only into an entry with none), and the record does not change between
    the compare and the decision."""

    def more(self, m, ctx):
        super().more(m, ctx)
        v, ongoing, node, queued = ctx.v, ctx.ongoing, ctx.node, ctx.queued
        c = self.compare
        n, nf = self.dut.ack_slots, self.dut.flow_entries
        W = Signal(range(KEY_WORDS64))
        m.d.comb += [W.eq(AnyConst(len(W))), Assume(W < KEY_WORDS64)]
        rec = ctx.reads(v.records, [f * RECORD_WORDS + W for f in range(nf)])
        rec_i = Array(rec)[v.idx]
        rd_word = Array(ctx.reads(v.records, [f * RECORD_WORDS + v.rd_j for f in range(nf)]))[v.idx]
        cmp_word = Array(ctx.reads(v.records, [f * RECORD_WORDS + v.cmp_j for f in range(nf)]))[v.idx]
        low = W == KEY_WORDS64 - 1                       # word 5: the ports, its low half

        def same_word(a, b):
            return Mux(low, a[:32] == b[:32], a == b)

        # The words the compare saw of word W.
        cap_key, cap_rec = Signal(64), Signal(64)
        with m.If(ongoing("Read-Record") & v.cmp_v & (v.cmp_j == W)):
            m.d.sync += [cap_key.eq(v.key_word), cap_rec.eq(v.rec_word)]

        # Word W of the key each node's ACK was queued with (`kv`: known).
        nkey = [Signal(64, name=f"nkey{k}") for k in range(n)]
        kv = [Signal(name=f"kv{k}") for k in range(n)]
        writing = (ongoing("Write-Record") | v.wb_v) & (v.wk < KEY_WORDS64)
        for k in range(n):
            with m.If(v.node_w.en & (v.node_w.addr == k)):
                with m.If(v.hit_q):
                    m.d.sync += [kv[k].eq(1), nkey[k].eq(rec_i)]
                with m.Else():
                    m.d.sync += kv[k].eq(0)
            with m.Elif(writing & (node[k].flow == v.idx) & (v.wk == W)):
                m.d.sync += [kv[k].eq(1), nkey[k].eq(v.rec_w.data)]

        # The property: the superseded ACK's word is the one the compare
        # read from the superseding ACK's slot.
        with m.If(v.node_w.en & v.sel_newest_q & c.needed.bit_select(W, 1)):
            m.d.comb += Assert(same_word(Array(nkey)[v.newest_q], cap_key))

        # What makes it inductive. A miss takes a free entry.
        valid = v.cam.valid
        with m.If(ongoing("Await-Lookup") & v.cam.free):
            m.d.comb += Assert(~valid.bit_select(v.cam.free_index, 1))
        after_miss = (ongoing("Decide-Miss") | ongoing("Decide-Data") | ongoing("Data-Red") | ongoing("Red") |
                      ongoing("Overflow") | ongoing("Overflow-Choose") | ongoing("Overflow-End"))
        with m.If(after_miss & ~v.from_hit & v.cam.free):
            m.d.comb += Assert(~valid.bit_select(v.idx, 1))
        with m.If(v.dq_new & (ongoing("Data-Red") | ongoing("Red") | ongoing("Overflow") |
                              ongoing("Overflow-Choose") | ongoing("Overflow-End"))):
            m.d.comb += Assert(~v.from_hit & v.cam.free)
        # The compare's words are the record's, until the decision.
        seen_w, same_w = c.seen.bit_select(W, 1), c.same.bit_select(W, 1)
        with m.If(ongoing("Read-Record") & c.ack & v.from_hit):
            with m.If(v.cmp_v & (v.cmp_j < KEY_WORDS64)):
                m.d.comb += Assert(v.rec_word == cmp_word)
            with m.If(v.rd_v & (v.rd_j < KEY_WORDS64)):
                m.d.comb += Assert(v.rec_r.data == rd_word)
        with m.If((ongoing("Read-Record") | ongoing("Decide-Prep") | ongoing("Decide-Hit")) & c.ack & v.from_hit):
            with m.If(seen_w):
                m.d.comb += [Assert(cap_rec == rec_i), Assert(~same_w | same_word(cap_rec, cap_key))]
        with m.If(ongoing("Decide-Hit") & c.ack & v.from_hit):
            m.d.comb += [Assert((c.seen & c.needed) == c.needed), Assert(v.key_eq == (c.same | ~c.seen).all())]
        # A new entry's key words are written from its frame's slot, in
        # order, into an entry whose only tracked ACK is that frame's; a
        # data entry's key copy into one with none.
        with m.If(writing):
            m.d.comb += Assert(c.ka1 == c.key_addr(v.wk))
        for k in range(n):
            mine = queued[k] & node[k].tracked
            for f in range(nf):
                with m.If(mine & (node[k].flow == f)):
                    with m.If(kv[k]):
                        m.d.comb += Assert(nkey[k] == rec[f])
                    with m.Else():
                        m.d.comb += Assert(writing & (v.idx == f) & (v.wk <= W))
            with m.If(mine & writing & (node[k].flow == v.idx)):
                m.d.comb += Assert(kv[k] == (v.wk > W))
            with m.If(mine & v.kc_v):
                m.d.comb += Assert(node[k].flow != v.kc_idx)


class SlotReadProof(_ParsedAckListProof):
    """The manager reads each word of a frame's key slot no earlier than
    ``queue_manager._SLOT_READ_AT`` says, counted from the cycle it takes
    the frame, in every read whose word it uses: the option values' loader
    (LOAD_ORDER, from LOAD_START), the key's compare (Await-Lookup's word 0,
    Read-Record's key words), a new entry's record and an append's newest
    words written from the slot (Write-Record, and behind the state machine),
    and a new data entry's key copy. With the ingress writing word
    ``SLOT_WRITE_ORDER[c]`` ``c`` cycles after it pushes the frame, and the
    frame taken ``SLOT_TAKE_AT`` cycles after the push at the earliest (the
    arithmetic is checked at import), every word used is written before it
    is read (``formal/ingress.py`` proves the ingress's half). And no read
    of the slot comes after the next frame arrives, long before the ingress
    writes the slot again.

    The harness counts the frame's age from its take (Arrive is age 1) and
    states a lower bound on it for each state that leads to such a read."""

    def more(self, m, ctx):
        v, ongoing = ctx.v, ctx.ongoing
        read_at = queue_manager._SLOT_READ_AT
        at = Array(C(read_at.get(j, 0), 5) for j in range(2 ** len(ctx.v.key_at)))
        age = Signal(range(32))
        with m.If(ongoing("Arrive")):
            m.d.sync += age.eq(2)
        with m.Elif(age != 31):
            m.d.sync += age.eq(age + 1)
        _writer_facts(m, v, ongoing)

        # The reads whose words are used, each no earlier than the cycle of
        # the word it reads (the address's word, as the memory sees it).
        key_word_read = v.key_r.addr[:len(v.key_at)]
        det_word_read = v.det_r.addr[:len(v.key_at)]
        n_load = len(queue_manager.LOAD_ORDER)
        with m.If(v.det_at < n_load):
            m.d.comb += Assert(age >= at[det_word_read])
        wnext = v.wk + 1
        uses_key = (ongoing("Await-Lookup") | ongoing("Decide-Miss") | (ongoing("Read-Record") & v.key_slot) |
                    ((ongoing("Write-Record") | v.wb_v) & (wnext < REC_NEWEST_END) & (wnext != REC_ACK)) |
                    (v.kc_v & (v.kc_w + 1 < KEY_WORDS64)))
        with m.If(uses_key):
            m.d.comb += Assert(age >= at[key_word_read])

        # And no read after the next frame arrives: every read is of the
        # current frame's slot (`cur`, replaced when the next frame
        # arrives) but the key copy's, of the slot of the frame that
        # started it, which ends by then (the next take waits for the CAM,
        # whose tag write runs beside the copy: `_writer_facts`).
        m.d.comb += Assert(~(v.kc_v & ongoing("Arrive")))

        # The bounds that make it inductive.
        m.d.comb += [Assert(v.det_at <= n_load),
                     Assert((v.det_at == n_load) | ongoing("Arrive") | (age == v.det_at + 2))]
        for state, lo in (("Lookup", 2), ("Await-Lookup", 3), ("Decide-Miss", 4), ("Decide-Data", 4),
                          ("Red", 4), ("Data-Red", 4), ("Overflow", 4), ("Overflow-Choose", 4),
                          ("Overflow-End", 4), ("Decide-Prep", 7), ("Decide-Hit", 8)):
            with m.If(ongoing(state)):
                m.d.comb += Assert(age >= lo)
        with m.If(ongoing("Read-Record")):
            # (Word rc read in cycle 3 + rc; a data frame's IPv4 key, its
            # odd words only, in 3 + (rc + 1) / 2; the bound stops growing
            # past the key, where `age` may saturate.)
            g = Mux(v.is_data & ~v.key_v6, (v.rc + 1) >> 1, v.rc)
            m.d.comb += Assert(age >= 3 + Mux(g > REC_ACK, REC_ACK, g))
        with m.If((ongoing("Write-Record") | v.wb_v) & (v.wk < REC_NEWEST_END)):
            m.d.comb += Assert(age >= Mux(v.wk < REC_ACK, 5 + v.wk, 3 + v.wk))
        with m.If(v.kc_v):
            m.d.comb += Assert(age >= 5 + v.kc_w)


def _mutant(old, new, proof=None):
    return lambda: (proof or AckListProof)(module=mutant(queue_manager, old, new))


def _key_mutant(old, new):
    return _mutant(old, new, RecordKeyProof)


def _slot_mutant(old, new):
    return _mutant(old, new, SlotReadProof)


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
    Proof("supersede_key", "the queue manager (whole, as ack_list): a supersession overwrites an "
          "ACK whose key, as read from its own slot, is the superseding ACK's, as read from its slot, "
          "in every word of the flow key (all six for IPv6; 0, 1, 3 and 5 for IPv4, 5 in its low "
          "half): the superseding ACK's words were each compared with the same word of its entry's "
          "record, both read at the right addresses, and found equal, and that record holds the "
          "superseded ACK's words", lambda: RecordKeyProof(), depth=4, cover_depth=None, covered_by="ack_list",
          deep=lambda: RecordKeyProof(deep_cover=True), deep_depth=48,
          mutations={
              "a key word not compared": _key_mutant(
                  "with m.Case(0, 1, 2, 3, 4):", "with m.Case(0, 1, 2, 3):"),
              "an IPv4 key's words read in the wrong cycles": _key_mutant(
                  "key_slot.eq((rc < REC_ACK) & (key_v6 | rc[0])),",
                  "key_slot.eq((rc < REC_ACK) & (key_v6 | ~rc[0])),"),
              "half the ports compared": _key_mutant(
                  "with m.If(lo != key_word[:32]):", "with m.If(lo[:16] != key_word[:16]):"),
              "the key read from the next frame's slot": _key_mutant(
                  "m.d.comb += key_r.addr.eq(Cat(key_at, cur.key_slot))",
                  "m.d.comb += key_r.addr.eq(Cat(key_at, cur.key_slot + 1))"),
              "word 0 read from the free entry's record": _key_mutant(
                  "m.d.comb += rec_r.addr.eq(cam.hit_index * RECORD_WORDS)",
                  "m.d.comb += rec_r.addr.eq(cam.free_index * RECORD_WORDS)"),
              "a new entry's key words written one word out": _key_mutant(
                  "m.d.comb += key_at.eq(wk + 1)", "m.d.comb += key_at.eq(wk + 2)"),
              "a data entry's key copied into the other entry": _key_mutant(
                  "kc_slot.eq(cur.key_slot), kc_idx.eq(idx)]", "kc_slot.eq(cur.key_slot), kc_idx.eq(~idx)]"),
          }),
    Proof("slot_read_time", "the queue manager (whole, as ack_list): every read of a frame's key "
          "slot whose word it uses (the option values' loader, the key's compare, the record written "
          "from the slot, a new data entry's key copy) comes no earlier after the frame's take than "
          "queue_manager._SLOT_READ_AT says for that word, which the ingress's write order meets, "
          "and none after the next frame arrives",
          lambda: SlotReadProof(), depth=4, cover_depth=None, covered_by="ack_list",
          mutations={
              "the option values' loader a word ahead": _slot_mutant(
                  "m.d.sync += det_at.eq(0)", "m.d.sync += det_at.eq(1)"),
              "the key compare reading the next word": _slot_mutant(
                  "rd_word.eq(Mux(key_slot, rc, REC_ACK + pick)),",
                  "rd_word.eq(Mux(key_slot, rc + 1, REC_ACK + pick)),"),
              "the key copy stalled while the next frame arrives (its slot read late)": _slot_mutant(
                  "m.d.sync += kc_w.eq(kc_w + 1)", "m.d.sync += kc_w.eq(kc_w + self.now[0])"),
              "an ACK looked up without its CAM cycle": _slot_mutant(
                  'acc_pending.eq(1)]\n                    m.next = "Lookup"',
                  'acc_pending.eq(1)]\n                    m.next = "Await-Lookup"'),
          }),
]
