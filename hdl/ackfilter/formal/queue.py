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
from amaranth.hdl._ast import AnySeq
from amaranth.lib import wiring

from ..gateware import queue_manager
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
