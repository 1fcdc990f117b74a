"""The queue manager: ACK queue with in-place supersession, data queue,
acks-first scheduling with a guaranteed data share.

One finite-state machine owns every queue: it takes committed frames from
the ingress FIFO and, when the egress is free and the shaper allows, grants
the next frame. It does one operation at a time and reports each on the
event port, so the golden model (``ackfilter.model``) can replay the exact
sequence and must agree with every decision (``docs/spec.md`` sections 3, 4
and 7).

The ACK queue is a doubly linked list of nodes (one per queued ACK, from a
free stack), so that a full queue can remove a *covered* ACK from its middle
in two cycles.

Flow state lives in three places: the tag CAM (:class:`FlowCAM`), a small
register file per entry (queued ACK count, node of the newest ACK, the
covered ACK's node), and a block-RAM record per entry holding the
full flow key, the newest ACK's fields and the flow's floor (16 words of 64
bits). The full key is compared on every tag hit, so a hash
collision cannot cause a wrong supersession. The arriving frame's key and
option values are not in its entry: the ingress writes them into a slot of
the key memory (block RAM, here; :mod:`.flow_record`), which the manager
reads a word at a time beside the record, and from which it loads the
option values into registers as the frame's handling starts.
"""

from types import SimpleNamespace

from amaranth.hdl import *
from amaranth.lib import data, enum, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .lib.buffer_pool import FreeStack
from .lib.quantum import Quantum
from .flow_cam import SET_CYCLES, FlowCAM
from .flow_queues import FlowQueues
from .shaper import CHARGE_BITS, CHARGED_LATENCY
from .red import RED_PARAM_PORTS, RedAction, RedUnit
from .lib.prio import lowest_set
from .ingress import KEY_SLOTS, MAX_CELLS, Verdict, ingress_entry_layout
from .flow_record import (KEY_WORDS64, RECORD_WORDS, REC_ACK, REC_TS, REC_SACK, REC_AECN, REC_FLOOR_ACK,
                          REC_FLOOR_TS, REC_NEWEST_END, SLOT_TAKE_AT, SLOT_WORDS, SLOT_WRITE_ORDER,
                          unpack_slot_word)
from .lib.cells import chain_layout
from .parser import ack_details_layout, ip_header_layout, seg_info_layout
from ..protocol import ACCECN_HI_SPAN, ACE_LIMIT, SANE_SPAN
from ..params import ACK_SLOT_BYTES, DATA_CELL_RESERVE, EVENTS, SHARED_CLASSES, param

__all__ = ["Event", "QueueManager", "LUTRAM"]

#: Attributes that keep a memory in LUT RAM (Yosys `ram_style`).
LUTRAM = {"ram_style": "distributed"}

#: The key slot's words the manager loads into its registers, in this order
#: a word a cycle from cycle LOAD_START after it takes the frame (Idle's take
#: is cycle 0): the SACK blocks first (the new ACK's own checks take two
#: cycles more), the AccECN counters, the segmenter's word, the timestamps,
#: each as late as its first use allows (`docs/design.md`, "The flow key and
#: the option values beside the entry"), so that the ingress may write the
#: words in the same order and the frame be taken early.
LOAD_ORDER = (REC_SACK, REC_SACK + 1, REC_SACK + 2, REC_SACK + 3, REC_AECN, REC_AECN + 1, REC_ACK, REC_TS)
LOAD_START = 2
#: The cycle after the take in which each slot word is first read: the
#: loader's, and key word k in cycle 3 + k (Await-Lookup reads word 0,
#: Read-Record word k in its kth cycle; a miss's Write-Record reads them
#: later), or for a data frame's IPv4 key (words 0, 1, 3 and 5) in cycle
#: 3 + (k + 1) // 2 (Read-Record reads only the odd words).
_SLOT_READ_AT = {**{j: LOAD_START + i for i, j in enumerate(LOAD_ORDER)},
                 **{k: 3 + (k + 1) // 2 if k % 2 else 3 + k for k in range(KEY_WORDS64)}}
# The ingress writes word SLOT_WRITE_ORDER[c] c cycles after the push and the
# frame is taken SLOT_TAKE_AT cycles after it at the earliest: every word is
# in before the cycle it is read in.
assert all(c < SLOT_TAKE_AT + _SLOT_READ_AT[j] for c, j in enumerate(SLOT_WRITE_ORDER))

#: The floor's AccECN part, in the high half of word REC_FLOOR_ACK (spec
#: section 3, "AccECN"): the top 8 bits of the chain's first ACK's three
#: counters, which of them it carried, and the ACE of the ACK queued just
#: ahead of the chain (``ace_known`` 0: it had left already).
aecn_floor_layout = data.StructLayout({
    "hi":        data.ArrayLayout(8, 3),
    "mask":      3,
    "ace_ref":   3,
    "ace_known": 1,
})


def _event_enum():
    names = enum.EnumType.__prepare__("Event", (enum.Enum,))
    for i, name in enumerate(EVENTS):
        names[name] = i
    return enum.EnumType("Event", (enum.Enum,), names, shape=4)


#: What the queue manager just did (spec section 7), numbered as
#: :data:`ackfilter.params.EVENTS` numbers them.
Event = _event_enum()


def _before(a, b):
    """RFC 1982 serial arithmetic: ``a`` is before ``b`` (mod 2^32)."""
    return (a - b)[31]


def _after(a, b):
    return _before(b, a)


def _inside(s, e, s2, e2):
    """Block ``[s, e)`` lies inside block ``[s2, e2)``."""
    return ~_before(s, s2) & ~_after(e, e2)


def _order(a, b):
    """``(_before(a, b), _before(b, a))`` from one subtraction: ``b - a`` is
    ``-(a - b)``, whose sign is the other's but at 0 and at 2^31."""
    d = Signal(32)
    tail_zero = Signal()
    return (d[31], d[31] ^ ~tail_zero), [d.eq(a - b), tail_zero.eq(d[:31] == 0)]


def _within_span(value, floor):
    """``(value - floor) mod 2^32 < SANE_SPAN`` (2^30)."""
    return (value - floor)[30:32] == 0


def _keep(v, names):
    """Add a part of :meth:`QueueManager.elaborate`'s ``locals()`` to the
    namespace ``v`` the parts share (but ``self``, ``m`` and ``v``)."""
    vars(v).update((k, x) for k, x in names.items() if k not in ("self", "m", "v"))


class QueueManager(wiring.Component):
    """See the module docstring.

    Parameters
    ----------
    ack_slots : int      ACK queue positions
    flow_entries : int   flow table entries
    cells, buf_bits, desc_depth : sizes of the buffers it points into (data cells, ACK
              buffers, data frames queued at most)
    flow_queues : bool   upload data in per-flow queues (spec section 12,
              :class:`~.flow_queues.FlowQueues`) instead of one FIFO
    host_buckets : int   with ``flow_queues``: host fairness's buckets (0: flows only)

    Ports (groups)
    --------------
    entry_* : the ingress FIFO's read side (``entry_ready`` pops the head a
              cycle after it is taken; nothing else reads the FIFO meanwhile)
    key_wr_* : the ingress's writes of key slots into the key memory (an
              entry is valid only from SLOT_TAKE_AT cycles after its push,
              when its slot is far enough written: the core holds it back)
    now : the core's time (RED's idle decay)
    ack_mode, ack_queue_limit, data_share, red_*, chunk_bytes, acc_* : parameters
    egress_busy, shaper_eligible : may a frame start
    cpb_q16, charged, charged_bytes : with flow queues, the shaper's rate (the
              DRR quantum) and its charge of each frame that left (the credit)
    egress_start, egress_is_ack, egress_addr, egress_bytes, egress_l3_bytes : grant (the bytes
              and IP length of the frame that leaves: a chunk's when it is one)
    egress_store_bytes : the granted frame's length as stored (the whole frame's for a chunk)
    egress_seg, egress_seg_info, egress_chunk_idx, egress_chunk_off, egress_chunk_len,
    egress_chunk_last : the grant is chunk ``idx`` of a data frame the segmenter cuts (spec
              section 9): its payload bytes ``off`` to ``off + len``; the frame leaves the data
              queue with its ``last`` chunk
    egress_mark, egress_ip : the granted frame is to leave with CE (RED, or ACC for an ACK), its
              IP header here
    discard_en, discard_cells : a data frame RED dropped gives its cells back
    free_buf_en, free_buf_id : an ACK buffer whose frame is gone
    ev_valid, ev_kind : event trace
    stat_superseded, stat_collision, stat_cam_full, stat_red_marked, stat_red_ce_already,
    stat_seg_frame, stat_seg_chunk, stat_acc_escalated, stat_acc_marked : counter strobes
    ack_queue_depth, data_queue_frames, flows_active : levels
    red_avg_bytes : RED's average of the data queue, whole bytes
    idle, backlog : for simulators and status (idle: no arrival waiting or being
        handled and no descriptor in flight; with ``backlog`` low nothing
        will happen until the next frame arrives)
    """

    def __init__(self, *, ack_slots=64, flow_entries=64, cells, buf_bits, desc_depth, flow_queues=False,
                 host_buckets=0, flow_queues_block=FlowQueues):
        for name, value in (("ack_slots", ack_slots), ("flow_entries", flow_entries)):
            if not isinstance(value, int) or not 2 <= value <= 255:
                raise TypeError(f"{name} must be an integer in 2..255, not {value!r}")
        self.ack_slots = ack_slots
        self.flow_entries = flow_entries
        self.cells = cells
        self.buf_bits = buf_bits
        self.desc_depth = desc_depth
        self.flow_queues = bool(flow_queues)
        self.host_buckets = host_buckets if self.flow_queues else 0
        #: The flow queues, ``flow_queues_block(queues=, ids=, cells=, reserve=,
        #: shared=, hosts=)``: a :class:`FlowQueues` (the proof of the data
        #: give-backs, ``formal/give_back.py``, gives its contract instead).
        self.flow_queues_block = flow_queues_block
        entry = ingress_entry_layout(cells=cells, buf_bits=buf_bits)
        super().__init__({
            "entry_valid":       In(1),
            "entry":             In(entry),
            "entry_ready":       Out(1),
            "key_wr_en":         In(1),
            "key_wr_addr":       In(range(KEY_SLOTS * SLOT_WORDS)),
            "key_wr_data":       In(64),
            "now":               In(48),
            "ack_mode":          In(2),
            "ack_mode_eff":      Out(2, init=param("ack_mode").default),   # the mode in force (spec §4)
            "entries_quiet":     In(1),      # no entry in the FIFO, none written this cycle
            "ack_queue_limit":   In(8),
            "data_share":        In(9),
            "chunk_bytes":       In(11),
            "acc_enable":        In(1),
            "acc_threshold_acks": In(8),
            "acc_wq_shift":      In(4),
            **{f"red_{name}": In(width) for name, width in RED_PARAM_PORTS.items()},
            "egress_busy":       In(1),
            "shaper_eligible":   In(1),
            "cpb_q16":           In(32),
            "charged":           In(1),
            "charged_bytes":     In(CHARGE_BITS),
            "egress_start":      Out(1),
            "egress_is_ack":     Out(1),
            "egress_addr":       Out(max((cells - 1).bit_length(), buf_bits)),
            "egress_bytes":      Out(16),
            "egress_l3_bytes":   Out(16),
            "egress_store_bytes": Out(16),
            "egress_seg":        Out(1),
            "egress_seg_info":   Out(seg_info_layout),
            "egress_chunk_idx":  Out(7),
            "egress_chunk_off":  Out(11),
            "egress_chunk_len":  Out(11),
            "egress_chunk_last": Out(1),
            "egress_mark":       Out(1),
            "egress_ip":         Out(ip_header_layout),
            "discard_en":        Out(1),
            "discard_cells":     Out(chain_layout(cells, MAX_CELLS)),
            "free_buf_en":       Out(1),
            "free_buf_id":       Out(buf_bits),
            "ev_valid":          Out(1),
            "ev_kind":           Out(Event),
            "stat_superseded":   Out(1),
            "stat_collision":    Out(1),
            "stat_cam_full":     Out(1),
            "stat_red_marked":   Out(1),
            "stat_red_ce_already": Out(1),
            "stat_seg_frame":    Out(1),
            "stat_seg_chunk":    Out(1),
            "stat_acc_escalated": Out(1),
            "stat_acc_marked":   Out(1),
            "ack_queue_depth":   Out(range(ack_slots + 1)),
            "data_queue_frames": Out(range(desc_depth + 1)),
            "flows_active":      Out(range(flow_entries + 1)),
            "red_avg_bytes":     Out(20),
            "idle":              Out(1),
            "backlog":           Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        n_slots, n_flows = self.ack_slots, self.flow_entries
        node_ids, flow_ids = range(n_slots), range(n_flows)
        # The parts below share their names through `v`: each reads the
        # names it uses from it and adds its own, in the order of their
        # statements (`_keep`).
        v = SimpleNamespace(**locals())
        self._storage(m, v)
        self._queue_state(m, v)
        self._frame_details(m, v)
        self._record_fields(m, v)
        self._events(m, v)
        self._egress(m, v)
        self._write_and_drop_regs(m, v)
        self._flow_queue_control(m, v)
        self._data_enqueue(m, v)

        with m.FSM(name="manager") as manager:
            v.manager = manager
            self._idle_states(m, v)
            self._data_states(m, v)
            self._lookup_states(m, v)
            self._decision_states(m, v)
            self._drop_states(m, v)
            self._departure_states(m, v)

        self._record_write(m, v)
        self._key_copy(m, v)

        # Every name the parts made (memories, registers, the state machine),
        # for the proofs (ackfilter.formal.queue), which elaborate this and
        # then state facts about them.
        self.internals = v
        return m

    def _storage(self, m, v):
        """The flow CAM, the data descriptors (a FIFO, or the flow queues and their
        descriptor memory), the ACK list's memories, the key memory, the flow
        records and the per-flow memories."""
        n_slots, n_flows, node_ids, flow_ids = v.n_slots, v.n_flows, v.node_ids, v.flow_ids

        m.submodules.cam = cam = FlowCAM(entries=n_flows)
        # A data frame in its cells, sent with CE when `mark`. (A frame RED
        # drops gives its cells back at once.)
        desc_layout = data.StructLayout({"chain": chain_layout(self.cells, MAX_CELLS), "nbytes": 16,
                                         "l3_bytes": 12, "mark": 1, "ip": ip_header_layout,
                                         "seg": seg_info_layout, "ack": 1})
        fqm = self.flow_queues
        if fqm:
            # Flow queues (spec section 12): the queues and their scheduler
            # in `fq`; each queued frame's descriptor here, at its first
            # cell (its id there), read at `desc_at`.
            m.submodules.fq = fq = self.flow_queues_block(queues=n_flows + 1, ids=self.cells, cells=self.cells,
                                                          reserve=DATA_CELL_RESERVE, shared=n_flows,
                                                          hosts=self.host_buckets)
            m.submodules.quantum = quantum = Quantum()
            m.d.comb += [quantum.cpb_q16.eq(self.cpb_q16), fq.quantum.eq(quantum.quantum)]
            m.submodules.descs = descs = Memory(shape=desc_layout, depth=self.cells, init=[])
            descs_w, descs_r = descs.write_port(), descs.read_port(transparent_for=())
            desc_r = descs_r.data
            desc_at, desc_at_q = Signal(range(self.cells)), Signal(range(self.cells))
            pick_out = Signal()                     # Pick-Wait: the DRR's choice is out
            # The choice is a new flow's frame between two chunks of another
            # frame: it leaves whole, and the other's progress stays.
            whole = Signal()
            m.d.comb += [desc_at.eq(Mux(fq.drop, fq.drop_id, Mux(pick_out, fq.pick_id, desc_at_q))),
                         descs_r.addr.eq(desc_at)]
        else:
            m.submodules.desc = desc = SyncFIFOBuffered(width=desc_layout.size, depth=self.desc_depth)
            desc_r = data.View(desc_layout, desc.r_data)
            whole = C(0, 1)

        # --- The ACK queue: a doubly linked list of nodes -----------------------
        ack_bits = ACK_SLOT_BYTES.bit_length()
        node_layout = data.StructLayout({
            "buf": self.buf_bits, "nbytes": ack_bits, "l3_bytes": ack_bits, "flow": flow_ids, "tracked": 1,
            "mark": 1, "ip": ip_header_layout,     # ACC marks it CE as it leaves
        })
        # The small memories stay in LUT RAM (`LUTRAM`): a register on one of
        # their read ports would otherwise let Yosys map them to block RAM,
        # whose output arrives 5.6 ns after the clock.
        m.submodules.nodes = nodes = Memory(shape=node_layout, depth=n_slots, init=[], attrs=LUTRAM)
        m.submodules.nxt = nxt = Memory(shape=node_ids, depth=n_slots, init=[], attrs=LUTRAM)
        m.submodules.prv = prv = Memory(shape=node_ids, depth=n_slots, init=[], attrs=LUTRAM)
        node_w, nxt_w, prv_w = nodes.write_port(), nxt.write_port(), prv.write_port()
        # Read ports, each at a registered address (no state multiplexer in
        # front of a LUT RAM): the head, the arriving flow's newest, and the
        # covered ACK to drop (X).
        node_head = nodes.read_port(domain="comb")
        node_new  = nodes.read_port(domain="comb")
        node_cx   = nodes.read_port(domain="comb")
        nxt_head  = nxt.read_port(domain="comb")
        nxt_cx    = nxt.read_port(domain="comb")
        prv_cx    = prv.read_port(domain="comb")
        m.submodules.node_pool = node_pool = FreeStack(count=n_slots)

        # The key slots of the frames in the entry FIFO (the ingress writes
        # them; `flow_record`), in block RAM, with two read ports: `key_r`
        # reads a word a cycle at `key_at`, a word of the frame's slot, as
        # the record is read and written; `det_r` loads the frame's details
        # into registers (`det`, `seg`, below).
        m.submodules.keys = keys = Memory(shape=64, depth=KEY_SLOTS * SLOT_WORDS, init=[],
                                          attrs={"ram_style": "block"})
        key_w, key_r = keys.write_port(), keys.read_port(transparent_for=())
        det_r = keys.read_port(transparent_for=())
        key_at = Signal(range(SLOT_WORDS))
        m.d.comb += [key_w.en.eq(self.key_wr_en), key_w.addr.eq(self.key_wr_addr),
                     key_w.data.eq(self.key_wr_data)]

        m.submodules.records = records = Memory(shape=64, depth=n_flows * RECORD_WORDS, init=[])
        rec_w = records.write_port()
        rec_r = records.read_port()
        rec_word = Signal(64)                    # rec_r.data, registered
        m.d.sync += rec_word.eq(rec_r.data)

        # Per flow entry, in LUT RAM (compact: a register file of 64 entries
        # spreads over the chip and its read multiplexers route long): the
        # number of tracked ACKs queued, and the node of the newest.
        m.submodules.flow_count = flow_count = Memory(shape=range(n_slots + 1), depth=n_flows, init=[],
                                                      attrs=LUTRAM)
        m.submodules.flow_newest = flow_newest = Memory(shape=node_ids, depth=n_flows, init=[], attrs=LUTRAM)
        count_w    = flow_count.write_port()
        count_upd  = flow_count.read_port(domain="comb")   # read-modify-write of one entry
        count_idx  = flow_count.read_port(domain="comb")   # the arriving flow's
        count_head = flow_count.read_port(domain="comb")   # the head ACK's flow's
        newest_w   = flow_newest.write_port()
        newest_idx = flow_newest.read_port(domain="comb")
        # A flow's covered ACK (at most one: it is marked only when the flow had
        # one ACK queued): a valid bit and its node, in LUT RAM.
        flow_cov    = Signal(n_flows)
        m.submodules.cov_nodes = cov_nodes = Memory(shape=node_ids, depth=n_flows, init=[], attrs=LUTRAM)
        cov_w      = cov_nodes.write_port()
        cov_head   = cov_nodes.read_port(domain="comb")    # of the head ACK's flow
        cov_cand   = cov_nodes.read_port(domain="comb")    # of the candidate to drop

        _keep(v, locals())

    def _queue_state(self, m, v):
        """RED, the ack_mode switch, the ACK list's head, tail and length, the
        head ACK's registers, the covered ACK to drop, the flow counts'
        updates (`count_add`) and the ACK queue's limit."""
        n_slots, node_ids, flow_ids, fqm = v.n_slots, v.node_ids, v.flow_ids, v.fqm
        node_layout, node_head, nxt_head = v.node_layout, v.node_head, v.nxt_head
        count_w, count_upd, count_head, flow_cov = v.count_w, v.count_upd, v.count_head, v.flow_cov
        cov_head, cov_cand = v.cov_head, v.cov_cand
        fq = v.fq if fqm else None
        desc = v.desc if not fqm else None

        # RED (spec section 10) decides for every data-class frame; the data
        # queue's occupancy in bytes is its queue length.
        m.submodules.red = red = RedUnit()
        m.d.comb += [getattr(red, name).eq(getattr(self, f"red_{name}")) for name in RED_PARAM_PORTS]
        m.d.comb += red.now.eq(self.now)
        data_bytes = Signal(20)
        have_data = Signal()
        m.d.comb += have_data.eq(fq.frames != 0 if fqm else desc.r_rdy)
        # `have_data` of the cycle before, for Depart's choice: the block
        # RAM's output arrives 5.6 ns into the cycle, too late for the choice
        # and the ACK departure's bookkeeping after it. Depart follows the
        # Idle that saw `backlog`, and only this state machine changes the
        # queues; Idle does not go on to Depart while a descriptor is on its
        # way to the read port (`desc_in_flight`), so the view is current.
        have_data_q = Signal()
        desc_in_flight = Signal()
        m.d.sync += have_data_q.eq(have_data)

        # Changing ack_mode (spec section 4, "Changing ack_mode"): pure ACKs
        # queued as data (the filter was off when they came) are counted, and
        # while any is queued with the filter on, the ACK queue waits (its
        # newer ACKs must not overtake them); with the filter off, ACKs left
        # in the ACK queue go first. `aid_nz` is the count's "not zero",
        # registered with it, off the scheduling decision's path.
        acks_in_data = Signal(range(self.cells + 1))
        aid_inc, aid_dec, aid_nz = Signal(), Signal(), Signal()
        aid_next = acks_in_data + aid_inc - aid_dec
        m.d.sync += [acks_in_data.eq(aid_next), aid_nz.eq(aid_next != 0)]
        # The register's mode comes into force at a quiet point (the Idle
        # state, no entry on its way from the ingress, whose verdicts follow
        # `ack_mode_eff`), reported as MODE_SWITCH: filter on only once the
        # ACK queue is empty, off only once no pure ACK waits as data. So at
        # most one of the two kinds of leftovers exists, and the rules below
        # send the older first.
        eff = self.ack_mode_eff
        ack_hold = (eff != 0) & aid_nz
        ack_strict = eff == 0

        if not fqm:
            m.d.comb += desc_in_flight.eq((desc.level != 0) & ~desc.r_rdy)

        head = Signal(node_ids)
        tail = Signal(node_ids)
        qlen = Signal(range(n_slots + 1))
        credit = Signal(signed(28))
        switch_ok = Mux(self.ack_mode == 0, ~aid_nz, Mux(eff == 0, qlen == 0, 1))
        mode_switch = (self.ack_mode != eff) & self.entries_quiet & ~self.entry_valid & switch_ok

        # The head ACK and its successor, registered every cycle; then, from
        # its flow (registered), whether it is the flow's last queued ACK and
        # whether it is the flow's covered ACK. They lag a change of the head
        # by two and three cycles, a count update by three, a covered ACK by
        # two; the states that use them (Depart, Drop-Front, for a tracked
        # head) are entered at least three cycles after any state that
        # changes them: Settle lies between a drop and the next, and Idle
        # does not depart in the cycle after Write-Record (`wr_just`), which
        # follows a tracked append.
        head_q      = Signal(node_layout)
        head_next_q = Signal(node_ids)
        head_one    = Signal()
        head_is_cov = Signal()
        hflow = head_q.flow
        m.d.comb += [cov_head.addr.eq(hflow), count_head.addr.eq(hflow)]
        m.d.sync += [
            head_q.eq(node_head.data),
            head_next_q.eq(nxt_head.data),
            head_one.eq(count_head.data == 1),
            head_is_cov.eq(flow_cov.bit_select(hflow, 1) & (cov_head.data == head)),
        ]
        m.d.comb += [node_head.addr.eq(head), nxt_head.addr.eq(head)]

        # The covered ACK to drop, in two registered stages: the lowest flow
        # with a covered ACK, then its node. Valid two (three) cycles after a
        # change of the flow registers; see Settle.
        cov_any_q, cov_flow_q, cov_x_q = Signal(), Signal(flow_ids), Signal(node_ids)
        any_cov, lowest_cov = lowest_set(flow_cov)
        m.d.comb += cov_cand.addr.eq(cov_flow_q)
        m.d.sync += [cov_any_q.eq(any_cov), cov_flow_q.eq(lowest_cov), cov_x_q.eq(cov_cand.data)]

        # A count update (grow, a head leaving, a covered ACK dropped) is
        # registered and applied, read-modify-write, in the next cycle, so no
        # decision reaches the LUT RAM's address. Updates are at least two
        # cycles apart (their states are), and every reader of a count is
        # later still: the next departure's or drop's `head_one` (see below)
        # and a record read's `count_q`.
        upd_en, upd_flow, upd_dec = Signal(), Signal(flow_ids), Signal()
        upd_en_q, upd_flow_q, upd_dec_q = Signal(), Signal(flow_ids), Signal()
        m.d.sync += [upd_en_q.eq(upd_en), upd_flow_q.eq(upd_flow), upd_dec_q.eq(upd_dec)]
        m.d.comb += [
            count_upd.addr.eq(upd_flow_q),
            count_w.en.eq(upd_en_q),
            count_w.addr.eq(upd_flow_q),
            count_w.data.eq(Mux(upd_dec_q, count_upd.data - 1, count_upd.data + 1)),
        ]

        def count_add(flow, delta):
            """``flow_count[flow] += delta`` (delta is +1 or -1), a cycle later."""
            assert delta in (1, -1)
            m.d.comb += [upd_en.eq(1), upd_flow.eq(flow), upd_dec.eq(delta < 0)]

        limit = Signal(range(n_slots + 1))
        m.d.comb += limit.eq(Mux(self.ack_queue_limit > n_slots, n_slots, self.ack_queue_limit))

        _keep(v, locals())

    def _frame_details(self, m, v):
        """The frame being handled (`cur`) and the option values loaded from its
        key slot, ACC's average, the CAM's tag and the new ACK's sane SACK blocks."""
        cam, det_r, key_at, qlen = v.cam, v.det_r, v.key_at, v.qlen

        # The frame being handled: its entry (`cur`, from the FIFO's head as
        # Idle takes it), and what its key slot holds besides the key: a
        # pure ACK's option values (`det`) and a data frame's segmenter
        # fields (`seg`), loaded a word a cycle in LOAD_ORDER from cycle
        # LOAD_START after the take (`det_at` reads word LOAD_ORDER[i],
        # `det_in` names the word out of the block RAM; Arrive, cycle 1,
        # starts it). SACK block k is in from cycle k + 4 (`sane_new` from
        # 9, `new_flags_q` 10), the AccECN counters from 8 and 9, the
        # segmenter's fields from 10, the timestamps from 11; their earliest
        # uses: Write-Record's word REC_ACK after a miss's six key words, and
        # Read-Record's SACK and TS compares, in cycle 11; a data frame's
        # descriptor in 10 (RED decides from cycle 1 on, RED_LATENCY
        # cycles); the floor's AccECN compare in 9.
        cur = Signal(self.entry.shape())
        meta = cur.meta
        det = Signal(ack_details_layout)
        seg = Signal(seg_info_layout)
        n_load = len(LOAD_ORDER)
        det_at = Signal(range(n_load + 1), init=n_load)     # n_load: done
        det_in = Signal(range(n_load + 1), init=n_load)
        m.d.comb += det_r.addr.eq(Cat(Array(C(j, len(key_at)) for j in LOAD_ORDER)[det_at], cur.key_slot))
        m.d.sync += det_in.eq(det_at)
        with m.If(det_at != n_load):
            m.d.sync += det_at.eq(det_at + 1)
        with m.Switch(det_in):
            for i, j in enumerate(LOAD_ORDER):
                with m.Case(i):
                    m.d.sync += unpack_slot_word(j, det_r.data, details=det, seg=seg)

        # ACC (spec section 11): the ACK queue's average in 1/256 ACK, one
        # sample per pure ACK arrival. Arrive registers the shifted step,
        # the first Lookup applies it (a lookup again after a drop does not).
        acc_avg     = Signal(16)
        acc_step    = Signal(signed(18))
        acc_pending = Signal()
        acc_esc     = Signal()               # this arrival is escalated
        acc_mark    = Signal()               # ... and an ECT ACK: it leaves CE
        acc_diff    = Signal(signed(18))
        m.d.comb += acc_diff.eq(Cat(C(0, 8), qlen) - acc_avg)
        new_ecn = Mux(acc_mark, 0b11, meta.ecn)

        # The CAM's tag and indices follow registers whatever the state;
        # only its enables carry decisions (the tag fans out to every entry).
        m.d.comb += [cam.lookup_tag.eq(meta.tag), cam.set_tag.eq(meta.tag)]

        # The new ACK's SACK blocks that are sane (well formed, wholly above
        # its ack, within SANE_SPAN), in two registered steps from `det`.
        s = [det.sack[k].start for k in range(4)]
        e = [det.sack[k].end for k in range(4)]
        ds_q = [Signal(32, name=f"ds{k}") for k in range(4)]
        de_q = [Signal(32, name=f"de{k}") for k in range(4)]
        sane_new = Signal(4)
        assert SANE_SPAN == 1 << 30
        m.d.sync += [ds_q[k].eq(s[k] - meta.ack) for k in range(4)]
        m.d.sync += [de_q[k].eq(e[k] - meta.ack) for k in range(4)]
        m.d.sync += sane_new.eq(Cat((meta.sack_n > k) & (ds_q[k] < de_q[k]) & (de_q[k][30:32] == 0)
                                    for k in range(4)))

        _keep(v, locals())

    def _record_fields(self, m, v):
        """What a flow record read decides from: the newest ACK's fields and the
        decision's registers, the node a decision writes, the new ACK's flags,
        and the key memory's read address."""
        n_slots, node_ids, flow_ids, cam = v.n_slots, v.node_ids, v.flow_ids, v.cam
        node_w, node_pool, key_r, key_at, qlen = v.node_w, v.node_pool, v.key_r, v.key_at, v.qlen
        limit, cur, meta, acc_mark, new_ecn, s = v.limit, v.cur, v.meta, v.acc_mark, v.new_ecn, v.s
        e, sane_new = v.e, v.sane_new

        # Fields of the flow's newest queued ACK, as read from its record.
        idx        = Signal(flow_ids)
        key_eq     = Signal()
        old_flags  = Signal(data.StructLayout({
            "supersedable": 1, "has_ts": 1, "sack_n": 3, "ece": 1, "cwr": 1, "ecn": 2,
            "ae": 1, "accecn_opt": 1, "accecn_mask": 3}))
        all_cov    = Signal()                # every old SACK block is covered
        new_cov    = Signal(4)               # new SACK block k lies inside an old one
        # Read-Record reads only the words the decision needs (see there):
        # `rc` counts its cycles, `want` holds the words REC_ACK.. still to
        # read, `rd_j`/`cmp_j` the word in the block RAM and the word
        # compared (with their valid bits).
        rc         = Signal(range(RECORD_WORDS + 4))
        want       = Signal(RECORD_WORDS - REC_ACK)
        flags_done = Signal()                    # word REC_ACK is compared: `want` is complete
        rd_j, cmp_j = Signal(range(RECORD_WORDS)), Signal(range(RECORD_WORDS))
        rd_v, cmp_v = Signal(), Signal()
        key_v6     = Signal()                    # the frame's key is IPv6 (entry.key_v6)
        key_word   = Signal(64)                  # key word `rd_j`, beside it in `rec_word`
        # Decided while the record streams in, so that Decide-Hit is short.
        count_q    = Signal(range(n_slots + 1))  # flow_count[idx]
        newest_q   = Signal(node_ids)             # flow_newest[idx]
        old_buf_q  = Signal(self.buf_bits)        # nodes[newest_q].buf: the newest queued ACK's buffer
        ack_gt_q   = Signal()                     # 0 < new.ack - old.ack < 2^31
        ack_eq_q   = Signal()
        flags_ok_q = Signal()                     # supersedable, same ECE/CWR/ECN, new eligible
        enough_q   = Signal()                     # count_q allows a supersede (ack_mode)
        ts_ok_q    = Signal()
        floor_ok_q = Signal()                     # new.ack within SANE_SPAN of the floor
        floor_ts_ok_q = Signal()                  # new TSval, TSecr within SANE_SPAN of the floor's
        # AccECN (spec section 3, "AccECN"): both carry the option; the ACE
        # step; each counter the old one carries did not go back (word
        # REC_AECN, REC_AECN + 1) and stays near the floor, and the ACE
        # advance from the chain's reference stays below 8 (REC_FLOOR_ACK).
        both_aecn_q = Signal()
        old_ace_q  = Signal(3)
        ace_step_q = Signal(3)
        cnt_ok_q   = Signal(2)
        aecn_floor_ok_q = Signal()
        ace_ref_q  = Signal(3)                    # written as the floor's ace_ref by a chain start
        ace_known_q = Signal()                    # ... and ace_known: 1 on an append to a hit entry
        may_q      = Signal()                     # new may supersede (or cover) the newest
        supersede_q = Signal()                    # ... and the mode's count allows it
        # The queue is full: registered every cycle. `qlen` changes in
        # states at least two cycles before any decision that reads this.
        full_q     = Signal()
        m.d.sync += full_q.eq(qlen >= limit)
        # The node a decision writes: its address and fields come straight
        # from flip-flops (the newest node when Decide-Prep saw a supersede,
        # else the allocator's offer; `hit_q` marks a hit), so only the write
        # enable depends on the decision. Lookup clears both (every way to
        # Decide-Miss passes it); Decide-Prep sets them, and they hold through
        # a drop that returns to Decide-Hit by Settle.
        hit_q      = Signal()
        sel_newest_q = Signal()
        m.d.comb += [
            node_w.addr.eq(Mux(sel_newest_q, newest_q, node_pool.alloc_id)),
            node_w.data.buf.eq(cur.buf),
            node_w.data.nbytes.eq(cur.nbytes),
            node_w.data.l3_bytes.eq(cur.l3_bytes),
            node_w.data.flow.eq(idx),
            node_w.data.tracked.eq(Mux(hit_q, key_eq, cam.free)),
            node_w.data.mark.eq(acc_mark),
            node_w.data.ip.eq(cur.ip),
        ]
        # An append of a tracked ACK grows its flow a cycle later (the first
        # cycle of Write-Record, where nothing else touches the flow's
        # counters): the per-entry decode stays off the Decide-Hit path.
        grow       = Signal()
        grow_node  = Signal(node_ids)
        cover_q    = Signal()                     # the append covers the old newest

        # The new ACK's own supersedability (first bullet of the spec).
        blocks_ok = Cat((meta.sack_n <= k) | sane_new[k] for k in range(4)).all()
        dsack = (meta.sack_n >= 2) & _inside(s[0], e[0], s[1], e[1])
        new_flags = Signal.like(old_flags)
        new_flags_q = Signal.like(old_flags)     # registered: Write-Record's word REC_ACK
        m.d.comb += [
            new_flags.supersedable.eq(meta.eligible & ~meta.other_opts & blocks_ok & ~dsack),
            new_flags.has_ts.eq(meta.has_ts),
            new_flags.sack_n.eq(meta.sack_n),
            new_flags.ece.eq(meta.ece),
            new_flags.cwr.eq(meta.cwr),
            new_flags.ecn.eq(new_ecn),
            new_flags.ae.eq(meta.ae),
            new_flags.accecn_opt.eq(meta.accecn_opt),
            new_flags.accecn_mask.eq(meta.accecn_mask),
        ]
        m.d.sync += new_flags_q.eq(new_flags)

        # The record words of the frame are read in order (the key compare,
        # the record write), so they need no wide multiplexer (a 12:1 x
        # 64-bit one here was the routing hot spot of the board). The key
        # and the newest ACK's details come from the frame's key slot
        # (`flow_record`: the same word numbers), read at `key_at` a cycle
        # ahead: 0 unless a state says otherwise, the word Read-Record reads
        # of the record, the word after the one Write-Record writes. Word
        # REC_ACK (the ack and flags) and the floor words come from registers.
        m.d.comb += key_r.addr.eq(Cat(key_at, cur.key_slot))
        m.d.sync += key_word.eq(key_r.data)

        _keep(v, locals())

    def _events(self, m, v):
        """The event port (`event`), the list nodes' frees (`leave_head`), the
        read addresses that follow the arriving flow and the levels on the ports."""
        node_ids, cam, fqm, node_new, node_pool = v.node_ids, v.cam, v.fqm, v.node_new, v.node_pool
        count_idx, newest_idx, flow_cov, red = v.count_idx, v.newest_idx, v.flow_cov, v.red
        have_data, head, qlen, head_q = v.have_data, v.head, v.qlen, v.head_q
        head_next_q, head_one, head_is_cov = v.head_next_q, v.head_one, v.head_is_cov
        count_add, idx, newest_q = v.count_add, v.idx, v.newest_q
        fq = v.fq if fqm else None
        desc = v.desc if not fqm else None

        # Events and strobes default low.
        ev = Signal(Event)
        m.d.comb += self.ev_kind.eq(ev)

        def event(kind):
            m.d.comb += [self.ev_valid.eq(1), ev.eq(kind)]

        # Frees of list nodes: the head (Depart, Drop-Front) or a covered ACK.
        node_free_en = Signal()
        node_free_id = Signal(node_ids)
        m.d.comb += [node_pool.free_en.eq(node_free_en), node_pool.free_id.eq(node_free_id)]

        def leave_head():
            """Bookkeeping of the head ACK leaving the queue (sent or dropped)."""
            m.d.sync += [head.eq(head_next_q), qlen.eq(qlen - 1)]
            m.d.comb += [node_free_en.eq(1), node_free_id.eq(head)]
            with m.If(head_q.tracked):
                count_add(head_q.flow, -1)
                # (With flow queues the entry stays while its flow has data queued.)
                with m.If(head_one & (~fq.query_busy if fqm else 1)):
                    m.d.comb += cam.clear_en.eq(1)
                with m.If(head_is_cov):
                    m.d.sync += flow_cov.bit_select(head_q.flow, 1).eq(0)

        m.d.comb += [
            node_new.addr.eq(newest_q),
            count_idx.addr.eq(idx),
            newest_idx.addr.eq(idx),
            cam.set_index.eq(idx),
            self.data_queue_frames.eq(fq.frames if fqm else desc.level),
            self.flows_active.eq(cam.used),
            self.red_avg_bytes.eq(red.avg_q16[16:]),
            self.ack_queue_depth.eq(qlen),
            self.backlog.eq((qlen != 0) | have_data),
        ]

        _keep(v, locals())

    def _egress(self, m, v):
        """The departure side's registers: the credit's change and the segmenter's
        next chunk."""
        desc_r, whole, credit = v.desc_r, v.whole, v.credit

        # The credit change of a departure, ``charge_n * charge_k`` (or a
        # reset), is applied in the cycle after it and ``credit > 0`` is
        # registered in the next, which keeps the multiplier and the wide
        # compare off the scheduling decision. The next departure is three
        # cycles later at the earliest: the egress is busy the cycle after a
        # start, and Idle lies between.
        charge_n = Signal(16)
        charge_k = Signal(signed(10))
        charge_clear = Signal()
        credit_pos = Signal()
        m.d.sync += [
            credit.eq(Mux(charge_clear, 0, credit + charge_n * charge_k)),
            charge_k.eq(0),
            charge_clear.eq(0),
            credit_pos.eq(credit > 0),
        ]

        # The segmenter (spec section 9): the data head's next chunk. The
        # chunk size is read when a frame's first chunk is granted and kept
        # until its last; `rem` counts the payload bytes not yet granted.
        # The descriptor comes out of a block RAM (late in the cycle), so the
        # chunk's size is registered every cycle and a data departure takes
        # two: Depart decides, Depart-Data sends with the registered figures
        # (nothing they depend on changes in between).
        seg_started = Signal()
        seg_c       = Signal(11)
        seg_idx     = Signal(7)
        seg_off     = Signal(11)
        seg_rem     = Signal(11)
        head_seg = desc_r.seg
        chunk_now = Signal(11)
        cut = Signal()
        rem = Signal(11)
        chunk_last = Signal()
        chunk_len = Signal(11)
        chunk_frame = Signal(12)
        m.d.sync += [
            chunk_now.eq(Mux(seg_started, seg_c, Cat(C(0, 4), self.chunk_bytes[4:]))),
            cut.eq(~whole & (seg_started | (head_seg.ok & (self.chunk_bytes[4:] != 0) &
                                            (head_seg.pay_bytes > Cat(C(0, 4), self.chunk_bytes[4:]))))),
            rem.eq(Mux(seg_started, seg_rem, head_seg.pay_bytes)),
            chunk_last.eq(Mux(seg_started, seg_rem <= seg_c,
                              head_seg.pay_bytes <= Cat(C(0, 4), self.chunk_bytes[4:]))),
        ]
        m.d.comb += [
            chunk_len.eq(Mux(chunk_last, rem, chunk_now)),
            # The chunk frame: the headers (payload offset 4 * pay_word + 2)
            # and its payload, padded to 60 bytes (model.segmenter.MIN_FRAME_BYTES).
            chunk_frame.eq(4 * head_seg.pay_word + 2 + chunk_len),
        ]
        seg_bytes = Mux(chunk_frame < 60, 60, chunk_frame)
        seg_l3_bytes = 4 * (head_seg.pay_word - desc_r.ip.word) + chunk_len

        _keep(v, locals())

    def _write_and_drop_regs(self, m, v):
        """The registers of Write-Record's words (`wk`, `wb_v`) and of a covered
        ACK's drop (`col_*`), `from_hit`, and whether a frame may depart."""
        node_ids, flow_ids, node_cx, nxt_cx = v.node_ids, v.flow_ids, v.node_cx, v.nxt_cx
        prv_cx, cov_x_q = v.prv_cx, v.cov_x_q

        wk = Signal(range(RECORD_WORDS))            # record word being written
        wk_last = Signal(range(RECORD_WORDS))       # the last one to write
        wk_newest_last = Signal(range(RECORD_WORDS))  # the last of the newest ACK's words ...
        wk_floor = Signal()                         # ... after which the floor's follow
        wb_v = Signal()                             # written after Write-Record, behind the state machine
        wb_last = Signal()                          # ... its last word is written now (with wb_v)
        wr_just = Signal()                          # Write-Record was the last cycle's state
        m.d.sync += wr_just.eq(0)
        done_event = Signal(Event)                  # reported as Write-Record starts the write
        from_hit = Signal()                         # the arrival hit its flow's entry (or collided)
        can_depart = Signal()
        m.d.comb += can_depart.eq(~self.egress_busy & self.shaper_eligible & self.backlog)

        # Dropping a covered ACK: its node X, its flow, its buffer and its
        # neighbours in the list, registered in Covered-Read.
        col_x, col_flow, col_x_buf = Signal(node_ids), Signal(flow_ids), Signal(self.buf_bits)
        col_p, col_q = Signal(node_ids), Signal(node_ids)
        m.d.comb += [node_cx.addr.eq(cov_x_q), nxt_cx.addr.eq(cov_x_q), prv_cx.addr.eq(cov_x_q)]

        _keep(v, locals())

    def _flow_queue_control(self, m, v):
        """With flow queues, a data frame's queue choice (`is_data`, `dq`), the
        charge of its departure, the release of flow entries and when Idle may
        go on (`go_ok`); RED's start (`red_start`, `red_early`) and the state
        after the lookup (`next_decision`)."""
        n_flows, cam, fqm, flow_count, red = v.n_flows, v.cam, v.fqm, v.flow_count, v.red
        data_bytes, head_q, hflow, cur, meta = v.data_bytes, v.head_q, v.hflow, v.cur, v.meta
        idx = v.idx
        fq = v.fq if fqm else None

        # Flow queues (spec section 12): a data frame looks its flow up as an
        # ACK does (`is_data`), then joins queue `dq` (`dq_new`: a new entry's,
        # taken when it is queued) once RED let it pass and an overflow made
        # room; RED does not notify it when that queue is empty (`exempt_q`).
        is_data    = Signal()
        dq         = Signal(range(n_flows + 1))
        dq_new     = Signal()
        exempt_q   = Signal()
        red_mark_q = Signal()                    # the descriptor's mark, while an overflow drops
        red_ev_q   = Signal(Event)               # the arrival's event, reported after the drops
        drop_pend  = Signal()                    # an overflow drop's descriptor is in desc_r
        wr_event   = Signal()                    # Write-Record reports `done_event` (in its one cycle)
        # A data frame's credit pays the shaper's charge for it, which comes
        # CHARGED_LATENCY cycles after its start (`charge_due`; a delay line
        # of the starts tells a data frame's charge from an ACK's), is held
        # (`chg_pending`) and applied from Idle; no pick starts meanwhile
        # (`charging`, below).
        charge_due, chg_pending = Signal(), Signal()
        chg_bytes  = Signal(CHARGE_BITS)
        if fqm:
            m.d.comb += [fq.query_q.eq(Mux(is_data, idx, hflow)),
                         fq.query_cls.eq(meta.tag[:(SHARED_CLASSES - 1).bit_length()])]
            data_starts = Signal(CHARGED_LATENCY)
            m.d.sync += data_starts.eq(Cat(self.egress_start & ~self.egress_is_ack, data_starts[:-1]))
            with m.If(self.charged & data_starts[-1]):
                m.d.sync += [chg_pending.eq(1), chg_bytes.eq(self.charged_bytes), charge_due.eq(0)]
            # A queue that left its list frees its flow's entry when the flow
            # has no ACK queued either, a cycle later (`rel_v`, registered:
            # the release comes late in its cycle, behind the flow queues'
            # block RAM); nothing leaves Idle meanwhile (`go_ok`).
            rel_v, rel_q = Signal(), Signal(range(n_flows + 1))
            m.d.sync += [rel_v.eq(fq.released & (fq.released_q != n_flows)), rel_q.eq(fq.released_q)]
            count_rel = flow_count.read_port(domain="comb")
            m.d.comb += count_rel.addr.eq(rel_q)
            with m.If(rel_v & (count_rel.data == 0)):
                m.d.comb += [cam.clear_en.eq(1), cam.clear_index.eq(rel_q)]
            with m.Else():
                m.d.comb += cam.clear_index.eq(head_q.flow)
        else:
            m.d.comb += cam.clear_index.eq(head_q.flow)
        go_ok = (~fq.busy & ~chg_pending & ~charge_due & ~rel_v) if fqm else C(1, 1)
        # While a data frame's charge is on its way only a pick must wait (it
        # reads the credit the charge changes); arrivals and ACK departures
        # go on while the flow queues are between operations (an enq leaves
        # a listed queue's credit alone, and the charge of a queue that left
        # its list is void: FlowQueues, "charge").
        fq_free = (~fq.busy & ~rel_v) if fqm else C(1, 1)
        charging = (chg_pending | charge_due) if fqm else C(0, 1)
        # The states that start no flow-queue operation in this cycle or the
        # next (the charge keeps the flow queues busy for one): there the
        # charge is applied as soon as it is in, not when Idle comes back.
        charge_ok = Signal()
        if fqm:
            with m.If(chg_pending & ~fq.busy & charge_ok):
                m.d.comb += [fq.charge.eq(1), fq.charge_bytes.eq(chg_bytes)]
                m.d.sync += chg_pending.eq(0)

        def next_decision(for_ack):
            """After the lookup: a data frame's queue choice, or ``for_ack``."""
            if fqm:
                with m.If(is_data):
                    m.next = "Decide-Data"
                with m.Else():
                    m.next = for_ack
            else:
                m.next = for_ack

        def red_start():
            m.d.comb += [
                red.start.eq(1),
                red.qlen.eq(data_bytes),
                red.ecn.eq(cur.meta.ecn),
                red.has_ip.eq(cur.ip.found),
                red.will_store.eq(cur.verdict == Verdict.DATA),
            ]

        # With flow queues RED starts while the flow is still looked up:
        # it reads `exempt` only in its verdict's cycle, 8 cycles on, and
        # the queue is chosen by then (Decide-Data registers it). An IPv4
        # frame's RED starts in Lookup (Decide-Data comes 2 cycles on after
        # a miss, 7 after a hit's 5 cycles of Read-Record), an IPv6 frame's
        # the cycle after Await-Lookup (`red_early`; Decide-Data 7 cycles on
        # after a hit's 7 cycles of Read-Record). When RED is not ready then
        # (idle decay steps to catch up), Data-Red starts it.
        red_early, red_started = Signal(), Signal()
        if fqm:
            m.d.comb += red.exempt.eq(exempt_q)
            m.d.sync += red_early.eq(0)
            with m.If(red_early & red.ready):
                red_start()
                m.d.sync += red_started.eq(1)

        _keep(v, locals())

    def _data_enqueue(self, m, v):
        """A data frame's enqueue with flow queues (`data_enqueue`; the copy of a
        new entry's key follows it, `_key_copy`) and the entry FIFO's pop."""
        cam, fqm, data_bytes, aid_inc, cur = v.cam, v.fqm, v.data_bytes, v.aid_inc, v.cur
        meta, seg, idx, event, dq, dq_new = v.meta, v.seg, v.idx, v.event, v.dq, v.dq_new
        fq, descs_w = (v.fq, v.descs_w) if fqm else (None, None)

        # The copy of a new data entry's key into its record, one word a
        # cycle from the key memory, while the state machine departs frames:
        # nothing else reads the key memory or writes a record before the
        # next arrival, which waits for the CAM's SET_CYCLES (Idle).
        kc_v = Signal()
        kc_w = Signal(range(REC_ACK))
        kc_slot = Signal.like(cur.key_slot)
        kc_idx = Signal.like(idx)
        assert SET_CYCLES > REC_ACK

        def data_enqueue(mark, kind):
            """The data frame in `cur` joins queue `dq` (and reports `kind`);
            a new flow entry's record and tag are written after."""
            dw = descs_w.data
            m.d.comb += [
                fq.enq.eq(1), fq.enq_q.eq(dq), fq.enq_id.eq(cur.chain.first), fq.enq_cells.eq(cur.chain.n),
                fq.enq_cls.eq(meta.tag[:(SHARED_CLASSES - 1).bit_length()]),
                fq.enq_host.eq(meta.host),
                descs_w.en.eq(1), descs_w.addr.eq(cur.chain.first),
                dw.chain.eq(cur.chain), dw.nbytes.eq(cur.nbytes), dw.l3_bytes.eq(cur.l3_bytes),
                dw.ip.eq(cur.ip), dw.seg.eq(seg), dw.mark.eq(mark), dw.ack.eq(cur.pure_ack),
                aid_inc.eq(cur.pure_ack),
            ]
            m.d.sync += data_bytes.eq(data_bytes + cur.nbytes)
            event(kind)
            with m.If(dq_new):
                # Its record is its key: an entry that holds only data has no
                # newest ACK, and an ACK appended to it writes its own words
                # and a new floor. The key is copied from the key memory
                # behind the state machine's back (`kc_v`, below: word 0 is
                # read in this cycle); the CAM writes the tag meanwhile.
                m.d.comb += cam.set_en.eq(1)
                m.d.sync += [kc_v.eq(1), kc_w.eq(0), kc_slot.eq(cur.key_slot), kc_idx.eq(idx)]
            m.next = "Idle"

        # The entry FIFO is popped a cycle after Idle takes its head (already
        # in `cur`): its read enable, which clocks a few hundred flip-flops,
        # comes from a flip-flop instead of the Idle decision. Arrive always
        # follows, so Idle sees the FIFO's next head again.
        pop_q = Signal()
        m.d.sync += pop_q.eq(0)
        m.d.comb += self.entry_ready.eq(pop_q)

        _keep(v, locals())

    def _idle_states(self, m, v):
        """The states Idle (a departure, a mode switch or the next arrival) and
        Arrive (the frame's verdict)."""
        cam, fqm, red, have_data = v.cam, v.fqm, v.red, v.have_data
        desc_in_flight, ack_hold, ack_strict = v.desc_in_flight, v.ack_hold, v.ack_strict
        qlen, mode_switch, cur, det_at = v.qlen, v.mode_switch, v.cur, v.det_at
        acc_step, acc_pending, acc_diff, key_v6 = v.acc_step, v.acc_pending, v.acc_diff, v.key_v6
        event, credit_pos, wb_v, wb_last = v.event, v.credit_pos, v.wb_v, v.wb_last
        wr_just, can_depart, is_data, go_ok = v.wr_just, v.can_depart, v.is_data, v.go_ok
        fq_free, charge_ok, red_start, kc_v = v.fq_free, v.charge_ok, v.red_start, v.kc_v
        pop_q = v.pop_q
        desc = v.desc if not fqm else None

        with m.State("Idle"):
            # Not idle while a data descriptor written by Arrive is still on
            # its way to the FIFO's read port (`level` counts it a cycle
            # before `r_rdy` shows it): `backlog` does not show it yet, and
            # a harness that skips cycles when idle would strand the frame.
            if fqm:
                m.d.comb += [self.idle.eq(~self.entry_valid & go_ok & ~kc_v & ~cam.busy & ~wb_v &
                                          ~mode_switch),
                             charge_ok.eq(1)]
                m.d.sync += is_data.eq(0)
            else:
                m.d.comb += self.idle.eq(~self.entry_valid & ((desc.level == 0) | have_data) & ~wb_v &
                                         ~mode_switch)
            # `cur` (and `key_v6`) follow the FIFO's head while idle,
            # so their enable waits for no decision; they hold once the
            # frame is taken, and while its record is still written.
            with m.If(~wb_v | wb_last):
                m.d.sync += [cur.eq(self.entry), key_v6.eq(self.entry.key_v6)]
            # Depart's choice as it will see it: an ACK needs no pick.
            ack_next = ~(have_data & ((qlen == 0) | ack_hold | (credit_pos & ~ack_strict)))
            depart_ok = can_depart & (go_ok | (fq_free & ack_next))
            with m.If(mode_switch):
                # (A cycle of its own: the next decision sees the new mode.)
                m.d.sync += self.ack_mode_eff.eq(self.ack_mode)
                event(Event.MODE_SWITCH)
            with m.Elif(depart_ok):
                # (A descriptor on its way, or a count update after
                # Write-Record, holds the departure a cycle.)
                with m.If(~desc_in_flight & ~wr_just):
                    m.next = "Depart"
            with m.Elif(fq_free & self.entry_valid & (~cam.busy | cam.ending) & (~wb_v | wb_last)):
                # (The CAM answers a lookup from Arrive on, once it has
                # written a new entry's tag: from its last cycle on Idle
                # may take the next frame. A record write ends by then,
                # or in this cycle, with `cur` still the frame's.)
                m.d.sync += pop_q.eq(1)
                m.next = "Arrive"

        with m.State("Arrive"):
            assert LOAD_START == 2
            m.d.sync += det_at.eq(0)
            with m.Switch(cur.verdict):
                with m.Case(Verdict.RUNT):
                    event(Event.DROP_RUNT)
                    m.next = "Idle"
                with m.Case(Verdict.OVERSIZE):
                    event(Event.DROP_OVERSIZE)
                    m.next = "Idle"
                with m.Case(Verdict.DATA, Verdict.DATA_FULL):
                    # RED decides first, also for a frame the ring had no
                    # room for (its state changes all the same). With flow
                    # queues the flow's queue is looked up first.
                    if fqm:
                        m.d.sync += is_data.eq(1)
                        m.next = "Lookup"
                    else:
                        with m.If(red.ready):
                            red_start()
                            m.next = "Red"
                with m.Default():
                    m.d.sync += [acc_step.eq(acc_diff >> self.acc_wq_shift), acc_pending.eq(1)]
                    m.next = "Lookup"

        _keep(v, locals())

    def _data_states(self, m, v):
        """A data frame's states: Red, and with flow queues its queue's choice and
        the overflow's drops (Decide-Data .. Overflow-End)."""
        n_flows, cam, desc_layout, fqm, desc_r = v.n_flows, v.cam, v.desc_layout, v.fqm, v.desc_r
        red, data_bytes, aid_inc, aid_dec, cur = v.red, v.data_bytes, v.aid_inc, v.aid_dec, v.cur
        seg, idx, key_eq, event, from_hit, dq = v.seg, v.idx, v.key_eq, v.event, v.from_hit, v.dq
        dq_new, exempt_q, red_mark_q, red_ev_q = v.dq_new, v.exempt_q, v.red_mark_q, v.red_ev_q
        drop_pend, charge_ok, red_start = v.drop_pend, v.charge_ok, v.red_start
        red_started, data_enqueue = v.red_started, v.data_enqueue
        fq = v.fq if fqm else None
        desc = v.desc if not fqm else None

        with m.State("Red"):
            # The decision comes RED_LATENCY cycles after it was taken
            # (params.RED_DECISION_LEAD counts them for the model).
            if not fqm:
                desc_w = data.View(desc_layout, desc.w_data)
                m.d.comb += [desc_w.chain.eq(cur.chain), desc_w.nbytes.eq(cur.nbytes),
                             desc_w.l3_bytes.eq(cur.l3_bytes), desc_w.ip.eq(cur.ip),
                             desc_w.seg.eq(seg), desc_w.ack.eq(cur.pure_ack)]
            with m.If(red.done):
                m.next = "Idle"
                m.d.sync += red_started.eq(0)
                marked = red.action == RedAction.MARK
                m.d.comb += [self.stat_red_marked.eq(marked),
                             self.stat_red_ce_already.eq(marked & red.ce_already)]
                with m.If(red.action == RedAction.DROP):
                    event(Event.DROP_RED)
                    with m.If(cur.verdict == Verdict.DATA):      # in its cells: give them back
                        m.d.comb += [self.discard_en.eq(1), self.discard_cells.eq(cur.chain)]
                with m.Elif(cur.verdict == Verdict.DATA_FULL):
                    event(Event.DROP_DATA_FULL)
                if fqm:
                    with m.Else():
                        # Room first: when the frame would overfill the buffer,
                        # the fattest queue drops from its head (Overflow),
                        # and the arrival is reported after the drops.
                        kind = Mux(marked, Event.ARRIVE_DATA_MARKED, Event.ARRIVE_DATA)
                        with m.If(fq.cells + cur.chain.n <= self.cells - DATA_CELL_RESERVE):
                            data_enqueue(marked & ~red.ce_already, kind)
                        with m.Else():
                            m.d.comb += [fq.ovf.eq(1), fq.ovf_cells.eq(cur.chain.n)]
                            m.d.sync += [red_mark_q.eq(marked & ~red.ce_already), red_ev_q.eq(kind)]
                            m.next = "Overflow"
                else:
                    with m.Else():
                        m.d.comb += [desc.w_en.eq(1), desc_w.mark.eq(marked & ~red.ce_already),
                                     aid_inc.eq(cur.pure_ack)]
                        m.d.sync += data_bytes.eq(data_bytes + cur.nbytes)
                        with m.If(marked):
                            event(Event.ARRIVE_DATA_MARKED)
                        with m.Else():
                            event(Event.ARRIVE_DATA)

        if fqm:
            def choose_queue():
                """The queue (spec section 12, "Flows and queues"): the
                flow's own on a hit, unless it is empty and frames of its
                class may wait in the shared queue; a new entry's on a
                miss when one is free and none of its class waits there;
                else the shared queue. Chosen for RED (is it empty?) and
                again after an overflow's drops, which may have emptied
                a queue or taken the shared queue's last frame of a class."""
                own = from_hit & key_eq & ~(fq.query_empty & fq.cls_busy)
                new = ~from_hit & cam.free & ~fq.cls_busy
                m.d.sync += [
                    dq.eq(Mux(own | new, idx, n_flows)),
                    dq_new.eq(new),
                    exempt_q.eq(Mux(own, fq.query_empty, Mux(new, 1, fq.shared_empty))),
                ]

            with m.State("Decide-Data"):
                m.d.comb += charge_ok.eq(1)
                choose_queue()
                m.next = "Data-Red"

            with m.State("Data-Red"):
                with m.If(red_started):
                    m.next = "Red"
                with m.Elif(red.ready):
                    red_start()
                    m.d.sync += red_started.eq(1)
                    m.next = "Red"

            with m.State("Overflow"):
                # Each drop's descriptor is read as it is dropped and
                # reported the cycle after (`drop_pend`): its cells go back.
                m.d.sync += drop_pend.eq(fq.drop)
                with m.If(drop_pend):
                    event(Event.DROP_DATA_OVERFLOW)
                    m.d.comb += [self.discard_en.eq(1), self.discard_cells.eq(desc_r.chain),
                                 aid_dec.eq(desc_r.ack)]
                    m.d.sync += data_bytes.eq(data_bytes - desc_r.nbytes)
                with m.If(fq.done):
                    m.next = "Overflow-Choose"

            with m.State("Overflow-Choose"):
                choose_queue()
                m.next = "Overflow-End"

            with m.State("Overflow-End"):
                data_enqueue(red_mark_q, red_ev_q)

        _keep(v, locals())

    def _lookup_states(self, m, v):
        """An ACK's (or with flow queues a data frame's) flow: Lookup,
        Await-Lookup, and Read-Record, which reads the flow's record and
        decides from it word by word."""
        cam, fqm, node_new, key_at, rec_r = v.cam, v.fqm, v.node_new, v.key_at, v.rec_r
        rec_word, count_idx, newest_idx, red = v.rec_word, v.count_idx, v.newest_idx, v.red
        eff, meta, det, acc_avg, acc_step = v.eff, v.meta, v.det, v.acc_avg, v.acc_step
        acc_pending, acc_esc, acc_mark, new_ecn = v.acc_pending, v.acc_esc, v.acc_mark, v.new_ecn
        s, e, sane_new, idx, key_eq, old_flags = v.s, v.e, v.sane_new, v.idx, v.key_eq, v.old_flags
        all_cov, new_cov, rc, want, flags_done = v.all_cov, v.new_cov, v.rc, v.want, v.flags_done
        rd_j, cmp_j, rd_v, cmp_v, key_v6 = v.rd_j, v.cmp_j, v.rd_v, v.cmp_v, v.key_v6
        key_word, count_q, newest_q, old_buf_q = v.key_word, v.count_q, v.newest_q, v.old_buf_q
        ack_gt_q, ack_eq_q, flags_ok_q, enough_q = v.ack_gt_q, v.ack_eq_q, v.flags_ok_q, v.enough_q
        ts_ok_q, floor_ok_q, floor_ts_ok_q = v.ts_ok_q, v.floor_ok_q, v.floor_ts_ok_q
        both_aecn_q, old_ace_q, ace_step_q = v.both_aecn_q, v.old_ace_q, v.ace_step_q
        cnt_ok_q, aecn_floor_ok_q, ace_ref_q = v.cnt_ok_q, v.aecn_floor_ok_q, v.ace_ref_q
        hit_q, sel_newest_q, from_hit, is_data = v.hit_q, v.sel_newest_q, v.from_hit, v.is_data
        charge_ok, next_decision, red_start = v.charge_ok, v.next_decision, v.red_start
        red_early, red_started = v.red_early, v.red_started

        with m.State("Lookup"):
            if fqm:
                m.d.comb += charge_ok.eq(1)
                # An IPv4 data frame's RED starts here: its queue is
                # chosen (Decide-Data) 7 cycles on after a hit, before
                # RED's verdict reads `exempt` in cycle 8.
                with m.If(is_data & ~key_v6 & ~red_started & red.ready):
                    red_start()
                    m.d.sync += red_started.eq(1)
            m.d.sync += [hit_q.eq(0), sel_newest_q.eq(0)]
            with m.If(acc_pending):
                avg_next = Signal(16)
                esc = Signal()
                m.d.comb += [
                    avg_next.eq(acc_avg + acc_step),
                    esc.eq(self.acc_enable & (avg_next > Cat(C(0, 8), self.acc_threshold_acks))),
                    self.stat_acc_escalated.eq(esc),
                    self.stat_acc_marked.eq(esc & meta.ecn.any() & ~meta.ecn.all()),
                ]
                m.d.sync += [acc_avg.eq(avg_next), acc_pending.eq(0), acc_esc.eq(esc),
                             acc_mark.eq(esc & meta.ecn.any() & ~meta.ecn.all())]
            # The CAM has seen meta.tag since the previous state (Arrive
            # or a drop); its answer is ready next cycle.
            m.next = "Await-Lookup"

        with m.State("Await-Lookup"):
            if fqm:
                m.d.comb += charge_ok.eq(1)
            # Word 0 of a hit's record is read already.
            m.d.comb += rec_r.addr.eq(cam.hit_index * RECORD_WORDS)
            # The words every decision reads besides the key (its ack and
            # flags, the floor's ack; the floor's TS when the frame has
            # TS); the results of the words that may be skipped start as
            # a skipped word leaves them.
            m.d.sync += [
                rc.eq(1), rd_j.eq(0), rd_v.eq(1), cmp_v.eq(0), flags_done.eq(0),
                want.eq(Mux(is_data, 0, Cat(C(1, 1), C(0, REC_FLOOR_ACK - REC_ACK - 1), C(1, 1), meta.has_ts))),
                key_eq.eq(1), all_cov.eq(1), new_cov.eq(0),
                ts_ok_q.eq(~meta.has_ts), cnt_ok_q.eq(0b11), floor_ts_ok_q.eq(1),
            ]
            if fqm:
                m.d.sync += red_early.eq(is_data & ~red_started)
            with m.If(cam.hit):
                m.d.sync += [idx.eq(cam.hit_index), from_hit.eq(1)]
                m.next = "Read-Record"
            with m.Else():
                m.d.sync += [idx.eq(cam.free_index), from_hit.eq(0)]
                next_decision("Decide-Miss")

        with m.State("Read-Record"):
            if fqm:
                m.d.comb += charge_ok.eq(1)
            # A word is read (its address here), comes out of the block RAM
            # into `rec_word` (`rd_j`), and is compared from there a cycle
            # later (`cmp_j`). Only the words the decision needs are read
            # (so that a minimum ACK at line rate keeps within its 33.6
            # cycles): key word k in cycle k, from the key memory beside
            # it (an IPv4 key's words 2 and 4 are zero, as the record's:
            # those cycles read other words); then, lowest first, the
            # words of `want`: REC_ACK, the floor's, and, once REC_ACK
            # has shown the old ACK's flags, its TS, SACK and AccECN
            # words when the decision uses them. The words not read leave
            # the results they would have set as Await-Lookup started them.
            key_slot = Signal()
            any_want, pick = lowest_set(want)
            rd_word = Signal(range(RECORD_WORDS))
            m.d.comb += [
                key_slot.eq((rc < REC_ACK) & (key_v6 | rc[0])),
                rd_word.eq(Mux(key_slot, rc, REC_ACK + pick)),
                rec_r.addr.eq(idx * RECORD_WORDS + rd_word),
                key_at.eq(rd_word),
            ]
            picked = Mux(~key_slot & any_want, C(1, len(want)) << pick, 0)
            added = Signal.like(want)
            # (A data frame's IPv4 key is in the odd words: the even
            # cycles are skipped, its compare takes two fewer.)
            m.d.sync += [
                rc.eq(rc + 1 + (is_data & ~key_v6)),
                rd_j.eq(rd_word), rd_v.eq(key_slot | any_want),
                cmp_j.eq(rd_j), cmp_v.eq(rd_v),
                want.eq(want & ~picked | added),
                count_q.eq(count_idx.data),
                enough_q.eq(Mux((eff == 2) | acc_esc, count_q >= 1, count_q >= 2)),
                newest_q.eq(newest_idx.data),
                old_buf_q.eq(node_new.data.buf),
            ]
            lo, hi = rec_word[0:32], rec_word[32:64]
            # An old SACK block against each new one: lo against s[k],
            # hi against e[k], one subtraction per pair of ends.
            sack_order = []
            for k in range(4):
                lo_s, stmts_s = _order(lo, s[k])
                hi_e, stmts_e = _order(hi, e[k])
                m.d.comb += stmts_s + stmts_e
                sack_order.append((lo_s, hi_e))
            j = cmp_j                            # the word compared now
            with m.If(cmp_v):
                with m.Switch(j):
                    with m.Case(0, 1, 2, 3, 4):
                        with m.If(rec_word != key_word):
                            m.d.sync += key_eq.eq(0)
                    with m.Case(5):
                        with m.If(lo != key_word[:32]):
                            m.d.sync += key_eq.eq(0)
                    with m.Case(REC_ACK):
                        of = data.View(old_flags.shape(), hi[:len(old_flags.as_value())])
                        d_ack = Signal(32)
                        old_ace = Cat(of.ece, of.cwr, of.ae)
                        new_ace = Cat(meta.ece, meta.cwr, meta.ae)
                        both = of.accecn_opt & meta.accecn_opt
                        m.d.comb += d_ack.eq(meta.ack - lo)
                        m.d.sync += [
                            old_flags.eq(hi),
                            ack_gt_q.eq((d_ack != 0) & ~d_ack[31]),
                            ack_eq_q.eq(d_ack == 0),
                            # The exact flag rule unless both are AccECN.
                            flags_ok_q.eq(meta.eligible & of.supersedable & (of.ecn == new_ecn) &
                                          (both | (~of.accecn_opt & (old_ace == new_ace)))),
                            both_aecn_q.eq(both),
                            old_ace_q.eq(old_ace),
                            ace_step_q.eq(new_ace - old_ace),
                            ace_ref_q.eq(old_ace),
                            flags_done.eq(1),
                        ]
                        # The old ACK's words the decision uses: its TS
                        # when both carry TS (else ts_ok is the has_ts
                        # compare, as Await-Lookup set it), its valid SACK
                        # blocks, its AccECN counters when both carry
                        # the option.
                        sack_words = Cat((of.sack_n > i) for i in range(4))
                        m.d.comb += added.eq(Cat(
                            C(0, 1), of.has_ts & meta.has_ts, sack_words,
                            both, both, C(0, 2)))
                        m.d.sync += ts_ok_q.eq(of.has_ts == meta.has_ts)
                    for w in range(2):
                        with m.Case(REC_AECN + w):
                            # Counter i did not go back: (new - old) mod 2^24 < 2^23.
                            ok = C(1, 1)
                            for i in ((0, 1) if w == 0 else (2,)):
                                old_c = rec_word[24 * (i - 2 * w):24 * (i - 2 * w) + 24]
                                back = (det.accecn[i] - old_c)[23]
                                ok = ok & (~old_flags.accecn_mask[i] | (meta.accecn_mask[i] & ~back))
                            m.d.sync += cnt_ok_q[w].eq(ok)
                    with m.Case(REC_TS):
                        m.d.sync += [
                            ts_ok_q.eq((old_flags.has_ts == meta.has_ts) & (
                                ~meta.has_ts | (~_after(lo, det.tsval) & ~_after(hi, det.tsecr)))),
                        ]
                    for i in range(4):
                        with m.Case(REC_SACK + i):
                            valid = old_flags.sack_n > i
                            covered = ~_after(hi, meta.ack)
                            for k in range(4):
                                lo_s, hi_e = sack_order[k]
                                # [lo, hi) inside [s, e); [s, e) inside [lo, hi).
                                covered = covered | (sane_new[k] & ~lo_s[0] & ~hi_e[1])
                                with m.If(valid & ~lo_s[1] & ~hi_e[0]):
                                    m.d.sync += new_cov[k].eq(1)
                            with m.If(valid & ~covered):
                                m.d.sync += all_cov.eq(0)
                    with m.Case(REC_FLOOR_ACK):
                        fl = data.View(aecn_floor_layout, hi[:aecn_floor_layout.size])
                        ok = C(1, 1)
                        for i in range(3):
                            near = (det.accecn[i][16:24] - fl.hi[i])[0:8] < ACCECN_HI_SPAN
                            ok = ok & (~old_flags.accecn_mask[i] | (fl.mask[i] & near))
                        adv = Signal(4)
                        assert ACE_LIMIT == 8            # adv[3]: the advance reached 8
                        m.d.comb += adv.eq((old_ace_q - fl.ace_ref)[0:3] + ace_step_q)
                        m.d.sync += [
                            floor_ok_q.eq(_within_span(meta.ack, lo)),
                            aecn_floor_ok_q.eq(ok & ((ace_step_q == 0) | (fl.ace_known & ~adv[3]))),
                        ]
                    with m.Case(REC_FLOOR_TS):
                        m.d.sync += floor_ts_ok_q.eq(~meta.has_ts | (_within_span(det.tsval, lo) &
                                                                     _within_span(det.tsecr, hi)))
            # Done when the compare now is the last: nothing in flight,
            # the flags seen (their words added), nothing more wanted.
            with m.If((flags_done | is_data) & ~any_want & ~rd_v & (rc >= REC_ACK) & ~key_slot):
                next_decision("Decide-Prep")

        _keep(v, locals())

    def _decision_states(self, m, v):
        """The ACK's decision and its write: Decide-Prep, Decide-Miss, Decide-Hit
        (a supersession, or an append: `append`) and Write-Record."""
        cam, fqm, node_w, nxt_w, prv_w = v.cam, v.fqm, v.node_w, v.nxt_w, v.prv_w
        node_pool, newest_w, flow_cov, cov_w = v.node_pool, v.newest_w, v.flow_cov, v.cov_w
        head, tail, qlen, cov_any_q, count_add = v.head, v.tail, v.qlen, v.cov_any_q, v.count_add
        meta, sane_new, idx, key_eq, all_cov = v.meta, v.sane_new, v.idx, v.key_eq, v.all_cov
        new_cov, count_q, newest_q, old_buf_q = v.new_cov, v.count_q, v.newest_q, v.old_buf_q
        ack_gt_q, ack_eq_q, flags_ok_q, enough_q = v.ack_gt_q, v.ack_eq_q, v.flags_ok_q, v.enough_q
        ts_ok_q, floor_ok_q, floor_ts_ok_q = v.ts_ok_q, v.floor_ok_q, v.floor_ts_ok_q
        both_aecn_q, cnt_ok_q, aecn_floor_ok_q = v.both_aecn_q, v.cnt_ok_q, v.aecn_floor_ok_q
        ace_known_q, may_q, supersede_q, full_q = v.ace_known_q, v.may_q, v.supersede_q, v.full_q
        hit_q, sel_newest_q, grow, grow_node = v.hit_q, v.sel_newest_q, v.grow, v.grow_node
        cover_q, event, wk, wk_last = v.cover_q, v.event, v.wk, v.wk_last
        wk_newest_last, wk_floor, wb_v, wr_just = v.wk_newest_last, v.wk_floor, v.wb_v, v.wr_just
        done_event, wr_event, charge_ok = v.done_event, v.wr_event, v.charge_ok

        with m.State("Decide-Prep"):
            # The supersession test, registered: Decide-Hit's choices (and
            # the enables they drive) then hang off one flip-flop.
            strictly_more = ack_gt_q | (ack_eq_q & (sane_new & ~new_cov).any())
            aecn_ok = ~both_aecn_q | (cnt_ok_q.all() & aecn_floor_ok_q)
            may = flags_ok_q & ts_ok_q & all_cov & strictly_more & floor_ok_q & floor_ts_ok_q & aecn_ok
            if fqm:
                # An entry that holds only data has no newest ACK.
                may = may & (count_q != 0)
            m.d.sync += [may_q.eq(may), supersede_q.eq(may & enough_q),
                         hit_q.eq(1), sel_newest_q.eq(may & enough_q & key_eq)]
            m.next = "Decide-Hit"

        # The words Write-Record writes: `first` .. `newest_last`, then,
        # with `floor`, REC_FLOOR_ACK .. `last`.
        def write_words(*, first, newest_last, floor, last):
            m.d.sync += [wk.eq(first), wk_newest_last.eq(newest_last), wk_floor.eq(floor),
                         wk_last.eq(last)]

        def write_newest(*, floor):
            """The frame's words a later decision reads (Read-Record): its
            ack and flags, its TS word, its SACK blocks, its AccECN
            counters (after all four SACK words, where they are); with
            ``floor`` (a new chain) the floor's ack, and TS with TS."""
            newest_last = Mux(meta.accecn_opt, REC_NEWEST_END - 1, REC_SACK + meta.sack_n - 1)
            write_words(first=REC_ACK, newest_last=newest_last, floor=floor,
                        last=Mux(floor, Mux(meta.has_ts, REC_FLOOR_TS, REC_FLOOR_ACK),
                                 newest_last))

        # Where the ACK goes once it needs a queue position.
        def append(tracked, new_entry, kind, cover=False):
            with m.If(full_q):
                # Make room: a covered ACK first, else the head.
                with m.If(cov_any_q):
                    m.next = "Covered-Read"
                with m.Else():
                    m.next = "Drop-Front"
            with m.Else():
                n = node_pool.alloc_id
                m.d.comb += [
                    node_pool.take.eq(1),
                    node_w.en.eq(1),             # at n, tracked: see hit_q
                    nxt_w.en.eq(qlen != 0),
                    nxt_w.addr.eq(tail),
                    nxt_w.data.eq(n),
                    prv_w.en.eq(1),
                    prv_w.addr.eq(n),
                    prv_w.data.eq(tail),
                ]
                m.d.sync += [tail.eq(n), qlen.eq(qlen + 1)]
                with m.If(qlen == 0):
                    m.d.sync += head.eq(n)
                if tracked:
                    m.d.sync += ace_known_q.eq(0 if new_entry else (count_q != 0) if fqm else 1)
                    # A new entry writes its whole record; an append the
                    # newest ACK's fields and, when it starts a new chain
                    # (it does not cover the old newest), the floor.
                    if new_entry:
                        write_words(first=0, newest_last=REC_NEWEST_END - 1, floor=1,
                                    last=RECORD_WORDS - 1)
                    else:
                        write_newest(floor=C(1, 1) if cover is False else ~cover)
                    m.d.sync += [grow.eq(1), grow_node.eq(n), cover_q.eq(cover),
                                 done_event.eq(kind), wr_event.eq(1)]
                    # Key word 0 (a miss writes the key) is read in this
                    # cycle.
                    if new_entry:
                        # The CAM writes the tag in the next SET_CYCLES
                        # cycles, beside the 16 words of the record
                        # (Write-Record's, then `wb_v`'s); the next
                        # arrival is taken in the last of them (`ending`),
                        # so its lookup (from Arrive on) sees the tag.
                        assert SET_CYCLES == RECORD_WORDS
                        m.d.comb += cam.set_en.eq(1)
                    m.next = "Write-Record"
                else:
                    event(kind)
                    m.next = "Idle"

        with m.State("Decide-Miss"):
            with m.If(cam.free):
                append(True, True, Event.ARRIVE_ACK_NEW)
            with m.Else():
                append(False, False, Event.ARRIVE_ACK_UNTRACKED)
                with m.If(~full_q):
                    m.d.comb += self.stat_cam_full.eq(1)

        with m.State("Decide-Hit"):
            may = may_q
            with m.If(~key_eq):
                append(False, False, Event.ARRIVE_ACK_UNTRACKED)
                with m.If(~full_q):
                    m.d.comb += self.stat_collision.eq(1)
            with m.Elif(supersede_q):
                m.d.comb += [
                    node_w.en.eq(1),             # at newest_q: sel_newest_q
                    self.free_buf_en.eq(1),
                    self.free_buf_id.eq(old_buf_q),
                    self.stat_superseded.eq(1),
                ]
                write_newest(floor=C(0, 1))
                m.d.sync += [done_event.eq(Event.ARRIVE_ACK_SUPERSEDE), wr_event.eq(1)]
                m.next = "Write-Record"
            with m.Else():
                append(True, False, Event.ARRIVE_ACK_NEW, cover=may)

        with m.State("Write-Record"):
            # The decision's bookkeeping and the record's first word
            # (below); the rest of the words are written behind the
            # state machine's back (`wb_v`), so departures go on.
            if fqm:
                m.d.comb += charge_ok.eq(1)
            with m.If(grow):
                count_add(idx, 1)
                m.d.comb += [newest_w.en.eq(1), newest_w.addr.eq(idx), newest_w.data.eq(grow_node)]
                m.d.sync += grow.eq(0)
                with m.If(cover_q):
                    m.d.sync += flow_cov.bit_select(idx, 1).eq(1)
                    m.d.comb += [cov_w.en.eq(1), cov_w.addr.eq(idx), cov_w.data.eq(newest_q)]
            if fqm:
                with m.If(wr_event):
                    event(done_event)
            else:
                event(done_event)
            m.d.sync += [wb_v.eq(wk != wk_last), wr_just.eq(1)]
            m.next = "Idle"

        _keep(v, locals())

    def _drop_states(self, m, v):
        """Room in a full ACK queue: Drop-Front, Covered-Read, Drop-Covered and
        Settle."""
        nxt_w, prv_w, node_cx, nxt_cx, prv_cx = v.nxt_w, v.prv_w, v.node_cx, v.nxt_cx, v.prv_cx
        flow_cov, head, qlen, head_q = v.flow_cov, v.head, v.qlen, v.head_q
        cov_flow_q, cov_x_q, count_add, idx = v.cov_flow_q, v.cov_x_q, v.count_add, v.idx
        event, node_free_en, node_free_id = v.event, v.node_free_en, v.node_free_id
        leave_head, from_hit, col_x, col_flow = v.leave_head, v.from_hit, v.col_x, v.col_flow
        col_x_buf, col_p, col_q = v.col_x_buf, v.col_p, v.col_q

        def after_drop(same_flow):
            """Back to the decision: directly when the drop did not touch
            the arrival's flow entry (nothing it decided on changed), else
            through a new lookup (spec: the arrival is processed again)."""
            with m.If(from_hit & ~same_flow):
                m.next = "Settle"
            with m.Else():
                m.next = "Lookup"

        with m.State("Drop-Front"):
            leave_head()
            m.d.comb += [self.free_buf_en.eq(1), self.free_buf_id.eq(head_q.buf)]
            event(Event.DROP_ACK_FRONT)
            after_drop(head_q.tracked & (head_q.flow == idx))

        with m.State("Covered-Read"):
            m.d.sync += [
                col_x.eq(cov_x_q), col_flow.eq(cov_flow_q), col_x_buf.eq(node_cx.data.buf),
                col_p.eq(prv_cx.data), col_q.eq(nxt_cx.data),
            ]
            m.next = "Drop-Covered"

        with m.State("Drop-Covered"):
            # X is unlinked (its flow's next ACK, which covers it, comes
            # after it: X is never the tail) and freed with its buffer.
            with m.If(col_x == head):
                m.d.sync += head.eq(col_q)
            with m.Else():
                m.d.comb += [nxt_w.en.eq(1), nxt_w.addr.eq(col_p), nxt_w.data.eq(col_q)]
            m.d.comb += [
                prv_w.en.eq(1),
                prv_w.addr.eq(col_q),
                prv_w.data.eq(col_p),
                node_free_en.eq(1),
                node_free_id.eq(col_x),
                self.free_buf_en.eq(1),
                self.free_buf_id.eq(col_x_buf),
            ]
            m.d.sync += [qlen.eq(qlen - 1), flow_cov.bit_select(col_flow, 1).eq(0)]
            count_add(col_flow, -1)
            event(Event.DROP_ACK_COVERED)
            after_drop(col_flow == idx)

        with m.State("Settle"):
            # The covered-ACK candidate (two registered stages) and the node
            # stack's offer see the drop by the next cycle.
            m.next = "Decide-Hit"

        _keep(v, locals())

    def _departure_states(self, m, v):
        """The departures: Depart, with flow queues Pick-Wait and Pick-Chunk, and
        Depart-Data."""
        fqm, desc_r, whole, red, data_bytes = v.fqm, v.desc_r, v.whole, v.red, v.data_bytes
        have_data_q, aid_dec, ack_hold = v.have_data_q, v.aid_dec, v.ack_hold
        ack_strict, qlen, head_q, event = v.ack_strict, v.qlen, v.head_q, v.event
        leave_head, charge_n, charge_k = v.leave_head, v.charge_n, v.charge_k
        charge_clear, credit_pos, seg_started = v.charge_clear, v.credit_pos, v.seg_started
        seg_c, seg_idx, seg_off, seg_rem = v.seg_c, v.seg_idx, v.seg_off, v.seg_rem
        head_seg, chunk_now, cut, rem = v.head_seg, v.chunk_now, v.cut, v.rem
        chunk_last, chunk_len, seg_bytes = v.chunk_last, v.chunk_len, v.seg_bytes
        seg_l3_bytes, charge_due, charging = v.seg_l3_bytes, v.charge_due, v.charging
        fq, desc_at_q, pick_out = (v.fq, v.desc_at_q, v.pick_out) if fqm else (None, None, None)
        desc = v.desc if not fqm else None

        def charge(nbytes, pick_data, have_ack, have_data):
            m.d.sync += charge_n.eq(nbytes)
            with m.If(have_ack & have_data):
                m.d.sync += charge_k.eq(Mux(pick_data, self.data_share - 256, self.data_share))
            with m.Else():
                m.d.sync += charge_clear.eq(1)

        with m.State("Depart"):
            have_ack = qlen != 0
            pick_data = have_data_q & (~have_ack | ack_hold | (credit_pos & ~ack_strict))
            with m.If(pick_data & charging):
                m.next = "Idle"         # (Idle's view was a cycle old: wait for the charge)
            with m.Elif(pick_data):
                if fqm:
                    m.d.comb += fq.pick.eq(1)
                    m.next = "Pick-Wait"
                else:
                    m.next = "Depart-Data"
            with m.Else():
                charge(head_q.nbytes, 0, have_ack, have_data_q)
                m.d.comb += [
                    self.egress_start.eq(1),
                    self.egress_bytes.eq(head_q.nbytes),
                    self.egress_l3_bytes.eq(head_q.l3_bytes),
                    self.egress_store_bytes.eq(head_q.nbytes),
                ]
                leave_head()
                m.d.comb += [
                    self.egress_is_ack.eq(1),
                    self.egress_addr.eq(head_q.buf),
                    self.egress_mark.eq(head_q.mark),
                    self.egress_ip.eq(head_q.ip),
                ]
                event(Event.DEPART_ACK)
                m.next = "Idle"

        if fqm:
            with m.State("Pick-Wait"):
                # The DRR looks at queues a cycle each; the chosen
                # frame's descriptor is read as the choice comes out,
                # and the chunk's figures are registered from it (a
                # cycle). (Depart started the pick: a frame is queued.)
                with m.If(fq.done):
                    m.d.comb += pick_out.eq(1)
                    m.d.sync += [desc_at_q.eq(fq.pick_id), whole.eq(fq.pick_whole)]
                    # With the segmenter off and no frame in chunks the
                    # frame leaves whole (`cut`, registered now, is 0):
                    # no figures to wait for.
                    with m.If((self.chunk_bytes[4:] == 0) & ~seg_started):
                        m.next = "Depart-Data"
                    with m.Else():
                        m.next = "Pick-Chunk"

            with m.State("Pick-Chunk"):
                m.next = "Depart-Data"

        with m.State("Depart-Data"):
            # The data head is still the one Depart picked, and the ACK
            # queue as long (only this state machine changes them).
            nbytes = Mux(cut, seg_bytes, desc_r.nbytes)
            charge(nbytes, 1, qlen != 0, 1)
            m.d.comb += [
                self.egress_start.eq(1),
                self.egress_bytes.eq(nbytes),
                self.egress_l3_bytes.eq(Mux(cut, seg_l3_bytes, desc_r.l3_bytes)),
                self.egress_store_bytes.eq(desc_r.nbytes),
            ]
            # A whole frame, or a cut frame's last chunk, leaves the queue.
            leaves = ~cut | chunk_last
            if fqm:
                m.d.comb += [fq.sent.eq(1), fq.sent_last.eq(leaves)]
                m.d.sync += charge_due.eq(1)
            else:
                m.d.comb += desc.r_en.eq(leaves)
            m.d.comb += [
                self.egress_is_ack.eq(0),
                self.egress_addr.eq(desc_r.chain.first),
                self.egress_mark.eq(desc_r.mark),
                self.egress_ip.eq(desc_r.ip),
                self.egress_seg.eq(cut),
                self.egress_seg_info.eq(head_seg),
                self.egress_chunk_idx.eq(seg_idx),
                self.egress_chunk_off.eq(seg_off),
                self.egress_chunk_len.eq(chunk_len),
                self.egress_chunk_last.eq(chunk_last),
                self.stat_seg_frame.eq(cut & ~seg_started),
                self.stat_seg_chunk.eq(cut),
                red.emptied.eq(leaves & (data_bytes == desc_r.nbytes)),
            ]
            with m.If(leaves):
                m.d.sync += data_bytes.eq(data_bytes - desc_r.nbytes)
                m.d.comb += aid_dec.eq(desc_r.ack)
            # A cut frame's last chunk ends its progress (a frame sent
            # whole between its chunks leaves it alone).
            with m.If(cut & chunk_last):
                m.d.sync += [seg_started.eq(0), seg_idx.eq(0), seg_off.eq(0)]
            with m.Elif(cut):
                m.d.sync += [seg_started.eq(1), seg_c.eq(chunk_now), seg_idx.eq(seg_idx + 1),
                             seg_off.eq(seg_off + chunk_now), seg_rem.eq(rem - chunk_now)]
            event(Event.DEPART_DATA)
            m.next = "Idle"

        _keep(v, locals())

    def _record_write(self, m, v):
        """Write-Record's words of the flow record, written behind the state
        machine (`wb_v`)."""
        key_r, key_at, rec_w, meta, det, idx = v.key_r, v.key_at, v.rec_w, v.meta, v.det, v.idx
        ace_ref_q, ace_known_q, new_flags_q, wk = v.ace_ref_q, v.ace_known_q, v.new_flags_q, v.wk
        wk_last, wk_newest_last, wb_v, wb_last = v.wk_last, v.wk_newest_last, v.wb_v, v.wb_last
        manager = v.manager

        # Write-Record's words, one a cycle from its cycle on (`wb_v` after
        # it): `first` .. `newest_last`, then, with `floor`, REC_FLOOR_ACK ..
        # `last`. Nothing else writes a record or reads the key memory
        # meanwhile: the next arrival waits (Idle), departures use neither,
        # and `cur` holds the frame's fields.
        with m.If(manager.ongoing("Write-Record") | wb_v):
            m.d.comb += [rec_w.en.eq(1), rec_w.addr.eq(idx * RECORD_WORDS + wk)]
            assert REC_FLOOR_ACK % 2 == 0 and REC_FLOOR_TS == REC_FLOOR_ACK + 1
            aecn_floor = Signal(aecn_floor_layout)
            m.d.comb += [
                *[aecn_floor.hi[i].eq(det.accecn[i][16:24]) for i in range(3)],
                aecn_floor.mask.eq(meta.accecn_mask),
                aecn_floor.ace_ref.eq(ace_ref_q),
                aecn_floor.ace_known.eq(ace_known_q),
            ]
            floor_word = Mux(wk[0], Cat(det.tsval, det.tsecr), Cat(meta.ack, aecn_floor, C(0, 1)))
            m.d.comb += key_at.eq(wk + 1)
            with m.If(wk == REC_ACK):
                m.d.comb += rec_w.data.eq(Cat(meta.ack, new_flags_q.as_value()))
            with m.Elif(wk < REC_NEWEST_END):
                m.d.comb += rec_w.data.eq(key_r.data)          # slot word wk
            with m.Else():
                m.d.comb += rec_w.data.eq(floor_word)
            wk_next = Mux(wk == wk_newest_last, REC_FLOOR_ACK, wk + 1)
            m.d.sync += [wk.eq(wk_next), wb_last.eq((wk != wk_last) & (wk_next == wk_last))]
            with m.If(wk == wk_last):
                m.d.sync += wb_v.eq(0)

        _keep(v, locals())

    def _key_copy(self, m, v):
        """With flow queues: a new data entry's key, copied into its record."""
        fqm, key_r, key_at, rec_w, kc_v, kc_w = v.fqm, v.key_r, v.key_at, v.rec_w, v.kc_v, v.kc_w
        kc_slot, kc_idx = v.kc_slot, v.kc_idx

        if fqm:
            with m.If(kc_v):
                m.d.comb += [rec_w.en.eq(1), rec_w.addr.eq(kc_idx * RECORD_WORDS + kc_w),
                             rec_w.data.eq(key_r.data), key_r.addr.eq(Cat((kc_w + 1)[:len(key_at)], kc_slot))]
                m.d.sync += kc_w.eq(kc_w + 1)
                with m.If(kc_w == REC_ACK - 1):
                    m.d.sync += kc_v.eq(0)

        _keep(v, locals())
