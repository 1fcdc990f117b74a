"""Flow queues for upload data: the per-flow queues and their deficit round
robin with sparse-flow priority (``docs/spec.md`` section 12).

This block is the data side of section 12 only, operation for operation
what :class:`ackfilter.model.flowq.FlowQueues` does: the queue manager
decides which queue a frame joins (the flow table, the shared queue's
classes), runs RED, and keeps each frame's descriptor; here each queue is a
list of frames, each frame named by an *id* (the queue manager uses the
frame's first data cell, unique among queued frames), and the scheduler
keeps the *new* and *old* lists of queues with their credits.

Storage, in LUT RAM but for a few registers and the per-frame tables:

* per queue: the ids of its head and tail frame, its cells, its credit, the
  next queue on its list and which list that is, whether it holds frames
  and whether it is on a list (``qstate``; a reset does not clear LUT RAM,
  so the block clears these bits, the class counts and the host counts
  first: ``busy`` for a cycle per queue, class or host, whichever are more);
* per id, in two block RAMs: the next frame of its queue, and its cells
  (as LUT RAM, 128 ids, these took 32 LUT-RAM blocks and their read
  multiplexers, 167 LUT slots of the packed board); and in LUT RAM its
  class (the low bits of its flow's tag, counted while it waits in the
  shared queue), which the count's update reads in the cycle the frame
  leaves;
* the two lists' heads and tails, the totals; the class counts (LUT RAM).

One operation at a time, started by a one-cycle strobe while ``busy`` is
low (the queue manager's state machine does one thing at a time too):

* ``enq``: a frame joins queue ``enq_q``; a queue on no list joins the new
  list with one ``quantum`` of credit. Two cycles.
* ``pick``: the DRR step of RFC 8290 section 4.2, a cycle per queue looked
  at, until ``done`` with ``found`` and ``pick_q``/``pick_id`` (the queue
  and its head frame), or ``found`` low when no frame is queued. A frame
  leaving in chunks holds the choice until its last chunk, but for the new
  list: a queue on it other than the frame's own is picked first, and
  ``pick_whole`` says its frame leaves whole, between two chunks.
* ``sent``: the picked queue's head frame (``sent_last``) or one chunk of it
  left (a frame picked ``pick_whole`` leaves whole). Two cycles.
* ``charge``: the link's charge for what the last ``sent`` sent, taken from
  that queue's credit. Two cycles. (The shaper reports it a few cycles after
  the start; the model takes it with ``sent``. The queue manager starts no
  ``pick`` while a charge is due; an ``enq`` meanwhile leaves a listed
  queue's credit alone, and the charge of a queue its ``sent`` emptied is
  void, since it joins again with one quantum: so the two orders agree.)
* ``ovf``: the arrival of a frame of ``ovf_cells`` is about to be queued.
  When it would take more than ``cells - reserve``, the fattest queue
  (lowest number among equals; a head frame leaving in chunks not counted)
  loses frames from its head until at least half its cells are gone, or
  ``OVERFLOW_BATCH`` frames: a ``drop`` strobe with ``drop_q``/``drop_id``
  per frame, then ``done``.

With ``hosts`` (spec section 12, "Hosts"): a queue takes its host's bucket
(``enq_host``, low bits) when it joins a list, each host counts its queues
on the old list (LUT RAM), and the charge is taken times the sent queue's
host count (at least 1; 1 for the shared queue): that count is read when
the frame or chunk is ``sent`` (no count changes before its charge but the
queue's own leaving, which voids the charge), and the product is formed as
the charge comes in.

``released``/``released_q``: a queue left its list (it is empty: its flow
entry may go). ``query_q`` and ``query_cls`` read the state the queue
manager's choices need, combinationally, and ``shared_empty`` tells whether
the shared queue holds frames.
"""

from types import SimpleNamespace

from amaranth.hdl import *
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..flowkey import HOST_BITS, check_host_buckets
from ..protocol import QUANTUM_MAX
from ..params import OVERFLOW_BATCH, SHARED_CLASSES
from .ingress import MAX_CELLS
from .shaper import CHARGE_BITS

__all__ = ["FlowQueues", "CREDIT_BITS", "credit_bits"]

_LUTRAM = {"ram_style": "distributed"}
_BLOCK = {"ram_style": "block"}
#: Queues the overflow's scan for the fattest looks at in a cycle.
SCAN_WIDTH = 2
#: A queued frame's cells (its class is in LUT RAM: `icls`).
_frame_info = data.StructLayout({"cells": range(MAX_CELLS + 1)})
#: A queue's credit, signed: at most QUANTUM_MAX; at least 1 less the
#: charges of one frame's chunks (a 2048-byte frame in 16-byte chunks is
#: charged about 12 KiB with headers and overhead), times its host's queues
#: with host fairness (:func:`credit_bits`).
CREDIT_BITS = 16


def credit_bits(queues, hosts):
    """Bits of a queue's credit: :data:`CREDIT_BITS`, and room for the
    charge's factor with ``hosts`` (a host's queues, at most ``queues - 1``)."""
    return CREDIT_BITS + ((queues - 1).bit_length() if hosts else 0)


class FlowQueues(wiring.Component):
    """See the module docstring.

    Parameters
    ----------
    queues : int    queues (the flow entries and the shared one)
    ids : int       frame ids (the data buffer's cells)
    cells : int     the data buffer's cells
    reserve : int   cells kept free for the frame the ingress writes next
    shared : int    the shared queue's number (its frames are counted by class)
    hosts : int     host buckets (a power of two, at most ``2 ** HOST_BITS``); 0: no host fairness
    """

    def __init__(self, *, queues, ids, cells, reserve, shared, hosts=0):
        if not 0 <= shared < queues:
            raise ValueError(f"shared must be a queue, 0 .. {queues - 1}, not {shared!r}")
        if not 0 <= reserve < cells:
            raise ValueError(f"reserve must be 0 .. {cells - 1}, not {reserve!r}")
        check_host_buckets(hosts, "hosts")
        self.queues, self.ids, self.ncells, self.hosts = queues, ids, cells, hosts
        self.limit = cells - reserve
        self.shared = shared
        qr, ir = range(queues), range(ids)
        super().__init__({
            "quantum":      In(range(QUANTUM_MAX + 1)),
            "enq":          In(1),
            "enq_q":        In(qr),
            "enq_id":       In(ir),
            "enq_cells":    In(range(MAX_CELLS + 1)),
            "enq_cls":      In(range(SHARED_CLASSES)),
            "enq_host":     In(HOST_BITS),
            "pick":         In(1),
            "sent":         In(1),
            "sent_last":    In(1),
            "charge":       In(1),
            "charge_bytes": In(CHARGE_BITS),
            "ovf":          In(1),
            "ovf_cells":    In(range(MAX_CELLS + 1)),
            "busy":         Out(1),
            "done":         Out(1),
            "found":        Out(1),
            "pick_q":       Out(qr),
            "pick_id":      Out(ir),
            "pick_whole":   Out(1),
            "drop":         Out(1),
            "drop_q":       Out(qr),
            "drop_id":      Out(ir),
            "released":     Out(1),
            "released_q":   Out(qr),
            "query_q":      In(qr),
            "query_empty":  Out(1),
            "query_busy":   Out(1),
            "query_cls":    In(range(SHARED_CLASSES)),
            "cls_busy":     Out(1),
            "shared_empty": Out(1),
            "frames":       Out(range(ids + 1)),
            "cells":        Out(range(cells + 1)),
        })

    def elaborate(self, platform):
        m = Module()
        nq, ni = self.queues, self.ids
        qr, ir = range(nq), range(ni)
        cell_r = range(self.ncells + 1)

        def lutram(name, shape, depth):
            mem = Memory(shape=shape, depth=depth, init=[], attrs=_LUTRAM)
            m.submodules[name] = mem
            return mem

        qhead, qtail = lutram("qhead", ir, nq), lutram("qtail", ir, nq)
        qcells = lutram("qcells", cell_r, nq)
        credit = lutram("credit", signed(credit_bits(nq, self.hosts)), nq)
        lnext = lutram("lnext", qr, nq)
        # Per frame, in block RAM (two: the next frame is written at
        # another address than the cells and class in Enq).
        inext = Memory(shape=ir, depth=ni, init=[], attrs=_BLOCK)
        iinfo = Memory(shape=_frame_info, depth=ni, init=[], attrs=_BLOCK)
        m.submodules.inext, m.submodules.iinfo = inext, iinfo
        qhead_w, qtail_w, qcells_w = qhead.write_port(), qtail.write_port(), qcells.write_port()
        credit_w, lnext_w = credit.write_port(), lnext.write_port()
        inext_w, iinfo_w = inext.write_port(), iinfo.write_port()

        # Whether each queue holds frames (bit 0) and whether it is on a list
        # (bit 1): LUT RAM, read at `qa` and at `query_q`, written at `qa`
        # (`ne_next`, `ol_next`), cleared after a reset (Init); the shared
        # queue's bit 0 also in a register. (As two registers of a bit per
        # queue, written at a queue number, their decoders took 165 LUT4
        # more.)
        qstate = lutram("qstate", 2, nq)
        qs_w = qstate.write_port()
        qs_a, qs_q = qstate.read_port(domain="comb"), qstate.read_port(domain="comb")
        shared_ne = Signal()
        # Which list a queue is on: the old one (LUT RAM, valid while on a
        # list).
        on_old = lutram("on_old", 1, nq)
        on_old_w = on_old.write_port()
        new_head, new_tail, new_any = Signal(qr), Signal(qr), Signal()
        old_head, old_tail, old_any = Signal(qr), Signal(qr), Signal()
        frames = Signal(range(ni + 1))
        cells = Signal(cell_r)
        # The shared queue's frames by class: counts in LUT RAM, read at the
        # class an operation changes and at `query_cls`. A reset does not
        # clear LUT RAM: the block clears the counts first (Init, below;
        # a register per class saying whether its count is 0 took 206 LUT4
        # for its decoders).
        cls_count = lutram("cls_count", range(ni + 1), SHARED_CLASSES)
        cls_w = cls_count.write_port()
        cls_r, cls_q = cls_count.read_port(domain="comb"), cls_count.read_port(domain="comb")

        def cls_add(c, delta):
            """The count of class ``c`` goes up or down by one."""
            new = cls_r.data + 1 if delta > 0 else cls_r.data - 1
            m.d.comb += [cls_r.addr.eq(c), cls_w.en.eq(1), cls_w.addr.eq(c), cls_w.data.eq(new)]

        cur_v, cur_q, cur_cells = Signal(), Signal(qr), Signal(range(MAX_CELLS + 1))
        sel_q, sel_id = Signal(qr), Signal(ir)          # the last pick
        chg_q = Signal(qr)                              # the last sent's queue
        chg_live = Signal()                             # ... and it is still on its list
        m.d.comb += [self.frames.eq(frames), self.cells.eq(cells)]

        # Queries.
        m.d.comb += [
            qs_q.addr.eq(self.query_q),
            self.query_empty.eq(~qs_q.data[0]),
            self.query_busy.eq(qs_q.data[0] | qs_q.data[1]),
            cls_q.addr.eq(self.query_cls),
            self.cls_busy.eq(cls_q.data != 0),
            self.shared_empty.eq(~shared_ne),
        ]

        # The queue an operation works on (`qa`) and a frame (`ia`):
        # registers. The frame's block RAMs read at `ia`'s next value
        # (`ia_next`), so their data is frame `ia`'s, as a LUT RAM's would be,
        # but for a write in the cycle the address is taken: no operation
        # writes there an entry it reads in the next cycle.
        qa = Signal(qr)
        ia, ia_next = Signal(ir), Signal(ir)
        m.d.comb += ia_next.eq(ia)
        m.d.sync += ia.eq(ia_next)
        qh_a, qt_a, qc_a = qhead.read_port(domain="comb"), qtail.read_port(domain="comb"), \
            qcells.read_port(domain="comb")
        cr_a, ln_a = credit.read_port(domain="comb"), lnext.read_port(domain="comb")
        old_a = on_old.read_port(domain="comb")
        in_a, info_a = inext.read_port(transparent_for=()), iinfo.read_port(transparent_for=())
        m.d.comb += [p.addr.eq(qa) for p in (qh_a, qt_a, qc_a, cr_a, ln_a, old_a)]
        m.d.comb += [p.addr.eq(ia_next) for p in (in_a, info_a)]
        ic_a = info_a.data.cells
        # A frame's class in LUT RAM, read at `ia`: the shared queue's class
        # count is read at it, decremented and tested for 0 in the cycle a
        # frame leaves; out of block RAM (5.8 ns) that was the flow-queue
        # board's critical path.
        icls = lutram("icls", range(SHARED_CLASSES), ni)
        icls_w, icls_a = icls.write_port(), icls.read_port(domain="comb")
        m.d.comb += icls_a.addr.eq(ia)
        il_a = icls_a.data
        ne_a, ol_a = qs_a.data[0], qs_a.data[1]
        ne_next, ol_next = Signal(), Signal()
        m.d.comb += [qs_a.addr.eq(qa), ne_next.eq(ne_a), ol_next.eq(ol_a),
                     qs_w.addr.eq(qa), qs_w.data.eq(Cat(ne_next, ol_next))]
        q_cells_a = Mux(ne_a, qc_a.data, 0)
        # The overflow's scan reads the cells of SCAN_WIDTH queues a cycle:
        # `qa`'s above, and qa + 1 .. through read ports of their own.
        scan_cells = [(qa, q_cells_a)]
        for k in range(1, SCAN_WIDTH):
            q = Signal(range(nq + SCAN_WIDTH), name=f"scan_q{k}")
            qc_k, qs_k = qcells.read_port(domain="comb"), qstate.read_port(domain="comb")
            m.d.comb += [q.eq(qa + k), qc_k.addr.eq(q), qs_k.addr.eq(q)]
            scan_cells.append((q, Mux(qs_k.data[0], qc_k.data, 0)))

        # Hosts: each listed queue's host (`qhost`), each host's queues on
        # the old list (`hcount`), both LUT RAM read at `qa`; the shared
        # queue has none. The counts are cleared after a reset as the
        # classes' are (a register per host saying whether its count is 0
        # took 820 LUT4). `c_load` is the factor of the sent queue's charge.
        nh = self.hosts
        e_host = Signal(range(max(nh, 2)))
        c_load = Signal(range(nq), init=1)
        if nh:
            qhost = lutram("qhost", range(nh), nq)
            qhost_w, qhost_a = qhost.write_port(), qhost.read_port(domain="comb")
            hcount = lutram("hcount", range(nq), nh)
            hcount_w, hcount_a = hcount.write_port(), hcount.read_port(domain="comb")
            h_a = qhost_a.data
            m.d.comb += [qhost_a.addr.eq(qa), hcount_a.addr.eq(h_a)]
            count_a = hcount_a.data
            load_a = Mux((qa == self.shared) | (count_a == 0), 1, count_a)

            def host_add(delta):
                """Queue `qa`'s host counts a queue more or less on the old list."""
                new = count_a + 1 if delta > 0 else count_a - 1
                with m.If(qa != self.shared):
                    m.d.comb += [hcount_w.en.eq(1), hcount_w.addr.eq(h_a), hcount_w.data.eq(new)]
        else:
            load_a = C(1, 1)

            def host_add(delta):
                pass

        # The lists: queue `qa`, at the head of the new list (`from_new`) or
        # of the old one, leaves it; with `to_old` it goes to the end of the
        # old list. `qa` becomes where the scheduler looks next.
        def list_pop_and_move(from_new, to_old):
            with m.If(from_new):
                with m.If(new_head == new_tail):
                    m.d.sync += new_any.eq(0)
                with m.Else():
                    m.d.sync += new_head.eq(ln_a.data)
            with m.Else():
                with m.If(old_head == old_tail):
                    m.d.sync += old_any.eq(0)
                with m.Else():
                    m.d.sync += old_head.eq(ln_a.data)
            if to_old:
                # Appended behind the old list as it is after the pop.
                old_after_pop_any = Mux(from_new, old_any, old_head != old_tail)
                with m.If(old_after_pop_any):
                    m.d.comb += [lnext_w.en.eq(1), lnext_w.addr.eq(old_tail), lnext_w.data.eq(qa)]
                with m.Else():
                    m.d.sync += old_head.eq(qa)
                m.d.sync += [old_tail.eq(qa), old_any.eq(1)]
            # Where the scheduler looks next.
            new_next_any = from_new & (new_head != new_tail)
            if to_old:
                old_next_head = Mux(from_new, Mux(old_any, old_head, qa),
                                    Mux(old_head != old_tail, ln_a.data, qa))
            else:
                old_next_head = Mux(from_new, old_head, ln_a.data)
            # (Between the chunks of a frame, only the new list is looked
            # at: when it is done, the frame's queue.)
            m.d.sync += qa.eq(Mux(new_next_any, ln_a.data, Mux(cur_v, cur_q, old_next_head)))

        def leave(q):
            """Queue ``q`` (`qa`), at the head of its list, leaves it."""
            m.d.comb += [ol_next.eq(0), qs_w.en.eq(1)]
            with m.If(old_a.data):
                host_add(-1)
            m.d.comb += [self.released.eq(1), self.released_q.eq(q)]

        def remove(keep):
            """Frame ``ia`` of queue ``qa`` (its head, or with ``keep`` the
            frame after it) leaves the queue; returns it and whether the
            queue is now empty."""
            head = qh_a.data
            fid = ia
            with m.If(keep):
                m.d.comb += [inext_w.en.eq(1), inext_w.addr.eq(head), inext_w.data.eq(in_a.data)]
                with m.If(fid == qt_a.data):
                    m.d.comb += [qtail_w.en.eq(1), qtail_w.addr.eq(qa), qtail_w.data.eq(head)]
            with m.Else():
                m.d.comb += [qhead_w.en.eq(1), qhead_w.addr.eq(qa), qhead_w.data.eq(in_a.data)]
            left = qc_a.data - ic_a
            m.d.comb += [qcells_w.en.eq(1), qcells_w.addr.eq(qa), qcells_w.data.eq(left)]
            # Empty when the frame was the queue's only one: its head and
            # tail (with `keep` the head stays). The same as `left == 0`, as
            # every frame has a cell, without the frame's cells out of block
            # RAM (5.8 ns) and a subtraction in front of the list updates:
            # that was the flow-queue board's critical path (18.3 ns).
            emptied = Signal()
            m.d.comb += emptied.eq(~keep & (fid == qt_a.data))
            with m.If(emptied):
                m.d.comb += [ne_next.eq(0), qs_w.en.eq(1)]
                with m.If(qa == self.shared):
                    m.d.sync += shared_ne.eq(0)
            m.d.sync += [frames.eq(frames - 1), cells.eq(cells - ic_a)]
            with m.If(qa == self.shared):
                cls_add(il_a, -1)
            return fid, emptied

        # The overflow's scan and drops.
        best, best_q = Signal(cell_r), Signal(qr)
        goal, freed = Signal(cell_r), Signal(range(2 * self.ncells + 1))
        ndropped = Signal(range(OVERFLOW_BATCH))
        keep = Signal()
        ovf_cells = Signal(range(MAX_CELLS + 1))
        e_id, e_cells, e_cls = Signal(ir), Signal(range(MAX_CELLS + 1)), Signal(range(SHARED_CLASSES))
        c_cost = Signal(CHARGE_BITS + (nq - 1).bit_length())     # the charge times `c_load`

        look = Mux(new_any, new_head, old_head)      # where a pick starts looking
        m.d.comb += self.busy.eq(1)
        # After a reset the LUT RAM counts (classes, hosts) are cleared, an
        # entry a cycle.
        n_init = max(SHARED_CLASSES, nh, nq)
        init_i = Signal(range(n_init))
        with m.FSM() as fsm:
            with m.State("Init"):
                m.d.comb += [cls_w.en.eq(init_i < SHARED_CLASSES), cls_w.addr.eq(init_i), cls_w.data.eq(0),
                             qs_w.en.eq(init_i < nq), qs_w.addr.eq(init_i), qs_w.data.eq(0)]
                if nh:
                    m.d.comb += [hcount_w.en.eq(1), hcount_w.addr.eq(init_i), hcount_w.data.eq(0)]
                m.d.sync += init_i.eq(init_i + 1)
                with m.If(init_i == n_init - 1):
                    m.next = "Idle"

            with m.State("Idle"):
                m.d.comb += self.busy.eq(0)
                with m.If(self.enq):
                    m.d.sync += [qa.eq(self.enq_q), e_id.eq(self.enq_id), e_cells.eq(self.enq_cells),
                                 e_cls.eq(self.enq_cls), e_host.eq(self.enq_host)]
                    m.next = "Enq"
                with m.Elif(self.pick):
                    # A frame in chunks: its queue, unless a queue other
                    # than its own is on the new list (its own is then on
                    # the old list, or at the new list's head).
                    m.d.sync += qa.eq(Mux(cur_v & ~(new_any & (new_head != cur_q)), cur_q, look))
                    m.next = "Pick"
                with m.Elif(self.sent):
                    m.d.sync += [qa.eq(sel_q), chg_q.eq(sel_q), chg_live.eq(1)]
                    m.d.comb += ia_next.eq(sel_id)
                    with m.If(self.sent_last):
                        m.next = "Sent-Remove"
                    with m.Else():
                        m.next = "Sent-Chunk"
                with m.Elif(self.charge):
                    m.d.sync += [qa.eq(chg_q), c_cost.eq(self.charge_bytes * c_load if nh else self.charge_bytes)]
                    m.next = "Charge"
                with m.Elif(self.ovf):
                    m.d.sync += [ovf_cells.eq(self.ovf_cells), qa.eq(0), best.eq(0), best_q.eq(0)]
                    m.next = "Ovf-Check"

            with m.State("Enq"):
                q, fid = qa, e_id
                m.d.comb += [
                    iinfo_w.en.eq(1), iinfo_w.addr.eq(fid),
                    iinfo_w.data.cells.eq(e_cells),
                    icls_w.en.eq(1), icls_w.addr.eq(fid), icls_w.data.eq(e_cls),
                    qtail_w.en.eq(1), qtail_w.addr.eq(q), qtail_w.data.eq(fid),
                    qcells_w.en.eq(1), qcells_w.addr.eq(q), qcells_w.data.eq(q_cells_a + e_cells),
                ]
                with m.If(ne_a):
                    m.d.comb += [inext_w.en.eq(1), inext_w.addr.eq(qt_a.data), inext_w.data.eq(fid)]
                with m.Else():
                    m.d.comb += [qhead_w.en.eq(1), qhead_w.addr.eq(q), qhead_w.data.eq(fid)]
                m.d.comb += [ne_next.eq(1), ol_next.eq(1), qs_w.en.eq(1)]
                m.d.sync += [frames.eq(frames + 1), cells.eq(cells + e_cells)]
                with m.If(q == self.shared):
                    m.d.sync += shared_ne.eq(1)
                with m.If(q == self.shared):
                    cls_add(e_cls, +1)
                with m.If(~ol_a):
                    m.d.comb += [on_old_w.en.eq(1), on_old_w.addr.eq(q), on_old_w.data.eq(0)]
                    m.d.comb += [credit_w.en.eq(1), credit_w.addr.eq(q), credit_w.data.eq(self.quantum)]
                    if nh:
                        m.d.comb += [qhost_w.en.eq(1), qhost_w.addr.eq(q), qhost_w.data.eq(e_host)]
                    with m.If(new_any):
                        m.d.comb += [lnext_w.en.eq(1), lnext_w.addr.eq(new_tail), lnext_w.data.eq(q)]
                    with m.Else():
                        m.d.sync += new_head.eq(q)
                    m.d.sync += [new_tail.eq(q), new_any.eq(1)]
                m.next = "Idle"

            with m.State("Pick"):
                with m.If(cur_v & (qa == cur_q)):
                    m.d.comb += [self.done.eq(1), self.found.eq(1)]
                    m.d.sync += [sel_q.eq(qa), sel_id.eq(qh_a.data)]
                    m.next = "Idle"
                with m.Elif(frames == 0):
                    m.d.comb += self.done.eq(1)
                    m.next = "Idle"
                with m.Elif(~ne_a):
                    # Emptied by an overflow drop: it leaves its list.
                    leave(qa)
                    list_pop_and_move(new_any, to_old=False)
                with m.Elif(cr_a.data <= 0):
                    m.d.comb += [credit_w.en.eq(1), credit_w.addr.eq(qa),
                                 credit_w.data.eq(cr_a.data + self.quantum)]
                    m.d.comb += [on_old_w.en.eq(1), on_old_w.addr.eq(qa), on_old_w.data.eq(1)]
                    with m.If(~old_a.data):
                        host_add(+1)
                    list_pop_and_move(new_any, to_old=True)
                with m.Else():
                    m.d.comb += [self.done.eq(1), self.found.eq(1)]
                    m.d.sync += [sel_q.eq(qa), sel_id.eq(qh_a.data)]
                    m.next = "Idle"
            m.d.comb += [self.pick_q.eq(qa), self.pick_id.eq(qh_a.data),
                         self.pick_whole.eq(cur_v & (qa != cur_q))]

            with m.State("Sent-Chunk"):
                m.d.sync += [cur_v.eq(1), cur_q.eq(qa), cur_cells.eq(ic_a), c_load.eq(load_a)]
                m.next = "Idle"

            with m.State("Sent-Remove"):
                _fid, emptied = remove(keep=C(0, 1))
                m.d.sync += c_load.eq(load_a)
                with m.If(qa == cur_q):
                    m.d.sync += cur_v.eq(0)
                with m.If(emptied):
                    # At the head of its list (a queue joins the new list
                    # only at its end while a frame leaves in chunks, and one
                    # sent between its chunks is the new list's head). Its
                    # charge, still to come, is void: a queue that joins
                    # again starts from one quantum (the model charges it
                    # first, then it leaves).
                    leave(qa)
                    m.d.sync += chg_live.eq(0)
                    list_pop_and_move(~old_a.data, to_old=False)
                m.next = "Idle"

            with m.State("Charge"):
                m.d.comb += [credit_w.en.eq(chg_live), credit_w.addr.eq(qa),
                             credit_w.data.eq(cr_a.data - c_cost)]
                m.next = "Idle"

            with m.State("Ovf-Check"):
                with m.If(cells + ovf_cells <= self.limit):
                    m.d.comb += self.done.eq(1)
                    m.next = "Idle"
                with m.Else():
                    m.next = "Scan"

            with m.State("Scan"):
                # SCAN_WIDTH queues a cycle, from `qa` up; a queue beats the
                # best so far only when fatter, so among equals the lowest
                # number wins.
                b, bq = best, best_q
                for k, (q, cells_k) in enumerate(scan_cells):
                    d = Signal(cell_r, name=f"scan_d{k}")
                    m.d.comb += d.eq(cells_k - Mux(cur_v & (q == cur_q), cur_cells, 0))
                    take = (q < nq) & (d > b)
                    b, bq = Mux(take, d, b), Mux(take, q, bq)
                m.d.sync += [best.eq(b), best_q.eq(bq), qa.eq(qa + SCAN_WIDTH)]
                with m.If(qa >= nq - SCAN_WIDTH):
                    m.next = "Drop-Prep"

            with m.State("Drop-Prep"):
                m.d.sync += [qa.eq(best_q), goal.eq(best), freed.eq(0), ndropped.eq(0),
                             keep.eq(cur_v & (best_q == cur_q))]
                with m.If(best == 0):
                    m.d.comb += self.done.eq(1)
                    m.next = "Idle"
                with m.Else():
                    m.next = "Drop-Id"

            with m.State("Drop-Id"):
                # The frame to drop: the head, or the one after a head in
                # chunks (read from the head's `inext` in Drop-Behind).
                m.d.comb += ia_next.eq(qh_a.data)
                with m.If(keep):
                    m.next = "Drop-Behind"
                with m.Else():
                    m.next = "Drop"

            with m.State("Drop-Behind"):
                m.d.comb += ia_next.eq(in_a.data)
                m.next = "Drop"

            with m.State("Drop"):
                fid, _emptied = remove(keep=keep)
                m.d.comb += [self.drop.eq(1), self.drop_q.eq(qa), self.drop_id.eq(fid)]
                now_freed = freed + ic_a
                m.d.sync += [freed.eq(now_freed), ndropped.eq(ndropped + 1)]
                # (Half its cells gone, or a batch; then no droppable frame is
                # left either.)
                with m.If((2 * now_freed >= goal) | (ndropped == OVERFLOW_BATCH - 1)):
                    m.next = "Drop-Done"
                with m.Else():
                    m.next = "Drop-Id"

            with m.State("Drop-Done"):
                m.d.comb += self.done.eq(1)
                m.next = "Idle"

        # Every name above, for the proofs (ackfilter.formal.queue).
        self.internals = SimpleNamespace(**locals())
        return m
