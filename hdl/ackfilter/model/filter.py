"""Queue manager and scheduler of the golden model (``docs/spec.md`` sections 3, 4, 7).

:class:`FilterModel` takes frames one at a time (:meth:`FilterModel.arrive`)
and hands them out one at a time (:meth:`FilterModel.depart`), reporting the
events of spec section 7 in the order the gateware's queue manager must report
them. It has no notion of time, buffer bytes or the shaper (see
:mod:`ackfilter.model.shaper`): a scoreboard tells it when the hardware found
the data buffer full (``data_full=True``) and calls :meth:`depart` when the
hardware reports a departure.

RED (spec section 10, :mod:`.red`) is part of the model when a
:class:`~.red.Red` is given: every data-class arrival then gets its RED
decision, which needs the cycle it was taken at (``now``), and every
departure that empties the data queue starts RED's idle period (``now``
again). Without one the model is the core with ``red_enable`` 0, which never
marks or drops.

The segmenter (spec section 9, :mod:`.segmenter`) cuts a data frame at
dequeue when ``chunk_bytes`` is not 0: each of its chunks is a departure of
its own (``DEPART_DATA``), so ACKs may leave between them, and with flow
queues a new flow's frame, whole; the frame leaves the data queue with its
last chunk.

With ``flow_queues`` (spec section 12, :mod:`.flowq`) the data class is a
queue per flow-table entry and a shared one, scheduled by deficit round
robin with sparse-flow priority; a data frame looks its flow up in the same
table as the ACKs, and an entry stays while its flow has ACKs or data
queued.

The flow table is modelled as the hardware builds it: ``flow_entries``
numbered entries, each holding a flow's 16-bit tag (:mod:`.flowkey`) and full
key; a new flow takes the lowest free entry. So the model predicts every CAM
lookup itself, tag collisions included, and a scoreboard has nothing to
excuse.
"""

from collections import deque
from dataclasses import dataclass

from ..params import (ACK_SLOT_BYTES, ACK_SLOTS, COUNTERS, DATA_CELL_RESERVE, DATA_CELLS, EVENTS,
                      FLOW_ENTRIES, MAX_FRAME_BYTES, frames_accounted, param)
from .pktparse import ACCECN_HI_SPAN, ACE_LIMIT, SANE_SPAN, Parsed, after, before, classify, sack_block_sane, serial_lt
from .acc import Acc
from .red import ECN_CE, ECN_NOT_ECT, Red, ecn_codepoint, set_ce
from ..flowkey import host_bucket
from .flowq import QUANTUM_MAX, FlowQueues
from .segmenter import check_chunk_bytes, segment

__all__ = ["FilterModel", "EVENTS", "may_supersede", "MODEL_COUNTERS", "Floor"]




#: Counters the model keeps (all of ``params.COUNTERS``; ``drop_overrun`` only
#: moves through :meth:`FilterModel.overrun`).
MODEL_COUNTERS = tuple(c.name for c in COUNTERS)


@dataclass(frozen=True)
class Floor:
    """The oldest values a flow's newest queued ACK must still carry (spec
    section 3, "Floor"): ack, TSval and TSecr of the ACK that started the
    chain of supersessions and covered ACKs the newest one stands for."""
    ack: int
    tsval: int
    tsecr: int
    accecn_mask: int = 0        # the AccECN counters the chain's first ACK carried
    accecn_hi: tuple = (0, 0, 0)  # their top 8 bits
    ace_ref: int = None         # ACE of the flow's ACK queued just ahead of the chain (None: unknown)

    @classmethod
    def of(cls, p, ace_ref=None):
        return cls(p.ack, p.tsval, p.tsecr, p.accecn_mask, tuple(c >> 16 for c in p.accecn), ace_ref)


def _inside(s, e, s2, e2):
    """Block ``[s, e)`` lies inside ``[s2, e2)`` (spec: ``!before(s, s2)`` and ``!after(e, e2)``)."""
    return not before(s, s2) and not after(e, e2)


def _within(value, floor):
    """``(value - floor) mod 2^32 < SANE_SPAN``."""
    return ((value - floor) & 0xFFFF_FFFF) < SANE_SPAN


def may_supersede(old, new, floor=None):
    """May queued pure ACK ``old`` be overwritten by (or counted as covered by)
    ``new`` of the same flow? (spec section 3, "Supersedable")

    Both are :class:`~ackfilter.model.pktparse.Parsed` pure ACKs; ``floor``
    (a :class:`Floor`) is the flow's floor, by default ``old``'s own values.
    """
    floor = Floor.of(old) if floor is None else floor
    if not old.supersedable or not new.eligible:
        return False
    if old.ecn != new.ecn:
        return False
    if old.accecn_opt and new.accecn_opt:
        if not _accecn_news(old, new, floor):
            return False
    elif old.accecn_opt or old.ace != new.ace:
        return False
    if old.has_ts != new.has_ts:
        return False
    if old.has_ts:
        if after(old.tsval, new.tsval) or after(old.tsecr, new.tsecr):
            return False
        if not (_within(new.tsval, floor.tsval) and _within(new.tsecr, floor.tsecr)):
            return False
    if not _within(new.ack, floor.ack):
        return False
    new_blocks = [(s, e) for s, e in new.sack if sack_block_sane(s, e, new.ack)]
    for s, e in old.sack:
        if not after(e, new.ack):
            continue
        if not any(_inside(s, e, s2, e2) for s2, e2 in new_blocks):
            return False
    if serial_lt(old.ack, new.ack):
        return True
    if new.ack == old.ack:
        # Same cumulative ack: only a sane SACK block (wholly above the ack)
        # that the older ACK did not report is new information; a D-SACK or a
        # malformed block is not, so duplicate ACKs are never collapsed.
        return any(not any(_inside(s, e, s2, e2) for s2, e2 in old.sack) for s, e in new_blocks)
    return False


def _accecn_news(old, new, floor):
    """Both ACKs carry an AccECN option: their ACE field is a counter of CE
    marks (mod 8) and the option's byte counters only grow (spec section 3,
    "AccECN")."""
    step = (new.ace - old.ace) & 7
    if step and (floor.ace_ref is None or ((old.ace - floor.ace_ref) & 7) + step >= ACE_LIMIT):
        return False
    for i in range(3):
        if not old.accecn_mask >> i & 1:
            continue
        if not (new.accecn_mask >> i & 1 and floor.accecn_mask >> i & 1):
            return False
        if (new.accecn[i] - old.accecn[i]) & 0xFF_FFFF >= 1 << 23:
            return False                          # went backwards
        if ((new.accecn[i] >> 16) - floor.accecn_hi[i]) & 0xFF >= ACCECN_HI_SPAN:
            return False                          # too far from the floor
    return True


@dataclass(eq=False)
class _QueuedAck:
    frame: bytes
    parsed: Parsed
    entry: int          # flow-table entry of its flow, or None (untracked)


@dataclass(eq=False)
class _FlowEntry:
    key: tuple
    tag: int
    count: int                 # tracked ACKs of this flow in the queue
    newest: _QueuedAck         # the queue element holding the flow's newest ACK (None: no ACK queued)
    floor: Floor               # (None: no ACK queued)
    covered: _QueuedAck = None  # a queued ACK of the flow whose news its next one carries


class FilterModel:
    """Golden model of the uplink core's queue manager and scheduler.

    Parameters
    ----------
    ack_mode : int
        0 off (plain FIFO), 1 conservative (supersede only when the flow has
        >= 2 ACKs queued), 2 aggressive (>= 1).
    ack_queue_limit : int
        ACK queue length at which a full queue drops; the effective limit is
        ``min(ack_queue_limit, ack_slots)``.
    flow_entries : int
        Size of the flow table (``FLOW_ENTRIES``).
    data_share : int
        Guaranteed data share in 1/256ths (0..256).
    ack_slots : int
        ``ACK_SLOTS`` of the gateware.
    slot_bytes, max_frame : int
        ACK slot size and ``MAX_FRAME_BYTES``.
    red : Red or None
        RED on the data queue (the registers' values); ``None``: off.
    chunk_bytes : int
        The segmenter's chunk (``check_chunk_bytes``); 0 is off.
    acc : Acc or None
        ACK congestion control (spec section 11); ``None``: off
        (``acc_enable`` 0).
    flow_queues : bool
        Data in a queue per flow (spec section 12); else one FIFO.
    quantum : int
        With ``flow_queues``: the DRR quantum (:func:`.flowq.quantum_for_cpb`).
    charge : callable
        With ``flow_queues``: ``charge(frame)``, the bytes the link is
        charged for a frame (:meth:`.shaper.LinkAccounting.charge`); the
        default is the frame's length.
    data_cells, cell_reserve : int
        With ``flow_queues``: the data buffer's cells and the reserve.
    host_buckets : int
        With ``flow_queues``: host fairness's buckets (``HOST_BUCKETS``, the
        core's information word ``host_buckets``); 0: flows only.

    Attributes
    ----------
    counters : dict
        ``name -> int`` for every counter of ``params.COUNTERS``.
    events : list
        Every event produced so far, in order (the concatenation of the lists
        :meth:`arrive` returned and the kinds :meth:`depart` returned).
    credit : int
        Scheduler credit (spec section 4).
    overflow_dropped : list
        With ``flow_queues``: the queued data frames that overflows dropped
        from the head of the fattest queue (spec section 12), in order.
    """

    def __init__(self, *, ack_mode=param("ack_mode").default,
                 ack_queue_limit=param("ack_queue_limit").default, flow_entries=FLOW_ENTRIES,
                 data_share=param("data_share").default, ack_slots=ACK_SLOTS,
                 slot_bytes=ACK_SLOT_BYTES, max_frame=MAX_FRAME_BYTES, red=None,
                 chunk_bytes=param("chunk_bytes").default, acc=None, flow_queues=False,
                 quantum=QUANTUM_MAX, charge=len, data_cells=DATA_CELLS, cell_reserve=DATA_CELL_RESERVE,
                 host_buckets=0):
        if acc is not None and not isinstance(acc, Acc):
            raise TypeError(f"acc must be a model.acc.Acc or None, not {acc!r}")
        if red is not None and not isinstance(red, Red):
            raise TypeError(f"red must be a model.red.Red or None, not {red!r}")
        if ack_mode not in (0, 1, 2):
            raise ValueError(f"ack_mode must be 0, 1 or 2, not {ack_mode!r}")
        if not 0 <= data_share <= 256:
            raise ValueError(f"data_share must be in 0..256, not {data_share!r}")
        if ack_queue_limit < 1 or ack_slots < 1:
            raise ValueError(f"ack_queue_limit and ack_slots must be >= 1, not "
                             f"{ack_queue_limit!r}, {ack_slots!r}")
        if flow_entries < 0:
            raise ValueError(f"flow_entries must be >= 0, not {flow_entries!r}")
        self.chunk_bytes = check_chunk_bytes(chunk_bytes)
        self.ack_mode = ack_mode     # the mode in force (spec section 4, "Changing ack_mode")
        self.ack_mode_reg = ack_mode # the register's, in force at the next switch_mode()
        self.ack_slots = ack_slots
        self.ack_limit = min(ack_queue_limit, ack_slots)
        self.flow_entries = flow_entries
        self.data_share = data_share
        self.slot_bytes = slot_bytes
        self.max_frame = max_frame
        self.ack_queue = deque()     # of _QueuedAck, head first
        self.data_queue = deque()    # of bytes, head first
        self.data_bytes = 0          # their total length (RED's queue occupancy)
        self.red = red
        # ACC's average runs whether it is on or not, as the core's does (so
        # that turning it on mid-traffic starts from a warm average).
        self.acc = acc if acc is not None else Acc()
        self.acc_enable = acc is not None
        self.acks_in_data = 0        # pure ACKs queued as data (the filter was off when they came)
        # Departures the ack_mode change rules decided against the credit (for tests).
        self.mode_rule_decisions = {"acks_first": 0, "data_first": 0}
        self.head_chunks = None      # the data head's chunks still to leave, once its first has left
        self.head_cut = False        # the segmenter cut the data head
        self.entries = [None] * flow_entries   # of _FlowEntry
        self.fq = FlowQueues(entries=flow_entries, cells=data_cells, reserve=cell_reserve,
                             quantum=quantum, charge=charge, hosts=host_buckets) if flow_queues else None
        self.credit = 0
        self.counters = {name: 0 for name in MODEL_COUNTERS}
        self.events = []
        self.overflow_dropped = []   # the queued data frames overflows dropped, in order

    # -- introspection ---------------------------------------------------

    @property
    def ack_queue_depth(self):
        return len(self.ack_queue)

    @property
    def data_queue_frames(self):
        return len(self.data_queue) if self.fq is None else self.fq.frames

    @property
    def flows_active(self):
        return sum(e is not None for e in self.entries)

    def queued_ack_frames(self):
        """The frames in the ACK queue, head first."""
        return [q.frame for q in self.ack_queue]

    def queued_data_frames(self):
        """The frames in the data queue, head first (flow queues: queue by
        queue, in the order of their numbers)."""
        if self.fq is None:
            return list(self.data_queue)
        return [f for q in range(len(self.fq.queues)) for f in self.fq.frames_of(q)]

    def _pure_ack(self, frame):
        """Whether ``frame`` is a pure ACK (class ``ack`` with the filter on),
        whatever the mode it came in."""
        return classify(frame, ack_mode=2, slot_bytes=self.slot_bytes, max_frame=self.max_frame).cls == "ack"

    #: The registers :meth:`set` changes live (the shaper's change the DRR's
    #: quantum and charge, given by the caller).
    LIVE = ("ack_mode", "ack_queue_limit", "data_share", "chunk_bytes", "acc_enable",
            "acc_threshold_acks", "acc_wq_shift", "red_enable", "red_min_bytes", "red_max_bytes",
            "red_max_p", "red_wq_shift", "red_gentle", "red_idle_shift")

    def set(self, name, value=None, *, quantum=None, charge=None):
        """A register written while frames are queued, as the core takes it:
        from the next decision on (spec section 4, "Changing ack_mode"; the
        segmenter keeps a cut frame's chunk size, section 9). ``quantum`` and
        ``charge``: the flow queues' after a shaper register changed."""
        if quantum is not None or charge is not None:
            if self.fq is None:
                raise ValueError("quantum and charge are the flow queues'")
            self.fq.quantum = self.fq.quantum if quantum is None else quantum
            self.fq.charge = self.fq.charge if charge is None else charge
        if name is None:
            return
        if name not in self.LIVE:
            raise ValueError(f"{name!r} is not a live register of the model; one of {', '.join(self.LIVE)}")
        if name == "ack_mode":
            if value not in (0, 1, 2):
                raise ValueError(f"ack_mode must be 0, 1 or 2, not {value!r}")
            self.ack_mode_reg = value
        elif name == "ack_queue_limit":
            self.ack_limit = min(value, self.ack_slots)
        elif name == "data_share":
            self.data_share = value
        elif name == "chunk_bytes":
            self.chunk_bytes = check_chunk_bytes(value)
        elif name == "acc_enable":
            self.acc_enable = bool(value)
        elif name.startswith("acc_"):
            setattr(self.acc, name[len("acc_"):], value)
        else:
            if self.red is None:
                raise ValueError("the model has no RED (give red=Red(..., enable=False))")
            attr = {"red_enable": "enable", "red_min_bytes": "min_bytes", "red_max_bytes": "max_bytes",
                    "red_max_p": "max_p", "red_wq_shift": "wq_shift", "red_gentle": "gentle",
                    "red_idle_shift": "idle_shift"}[name]
            setattr(self.red, attr, bool(value) if attr in ("enable", "gentle") else value)

    def may_switch_mode(self):
        """Whether the register's ``ack_mode`` may come into force now (spec
        section 4): the filter on only once the ACK queue is empty, off only
        once no pure ACK waits as data."""
        if self.ack_mode_reg == self.ack_mode:
            return False
        if self.ack_mode_reg == 0:
            return self.acks_in_data == 0
        return self.ack_mode != 0 or not self.ack_queue

    def switch_mode(self):
        """The core's MODE_SWITCH: the register's ``ack_mode`` is in force
        from here (``AssertionError`` if the rules did not allow it)."""
        if self.ack_mode_reg == self.ack_mode and self.counters["frames_in"] == 0:
            # A model built with the mode a test wrote before any frame: the
            # core switched from its reset value then.
            self.events.append("MODE_SWITCH")
            return
        assert self.may_switch_mode(), (
            f"ack_mode {self.ack_mode} -> {self.ack_mode_reg} with {len(self.ack_queue)} ACKs queued "
            f"and {self.acks_in_data} pure ACKs queued as data")
        self.ack_mode = self.ack_mode_reg
        self.events.append("MODE_SWITCH")

    def classify(self, frame):
        """:func:`~ackfilter.model.pktparse.classify` with this model's settings."""
        return classify(frame, ack_mode=self.ack_mode, slot_bytes=self.slot_bytes,
                        max_frame=self.max_frame)

    # -- arrival ---------------------------------------------------------

    def _count_in(self, frame, parsed):
        self.counters["frames_in"] += 1
        self.counters["bytes_in"] += len(frame)
        if parsed.pure_ack:
            self.counters["acks_in"] += 1
            if not parsed.eligible:
                self.counters["acks_ineligible"] += 1

    def overrun(self, frame):
        """Account a frame the hardware dropped for ``drop_overrun`` (``ev_overrun``).

        Such a frame never reaches the queue manager and produces no event. It
        is counted in ``frames_in``, ``bytes_in``, ``drop_overrun`` and, if it
        is a pure ACK, in ``acks_in`` (and ``acks_ineligible``): the parser
        classified it before the metadata FIFO refused it.
        """
        frame = bytes(frame)
        self._count_in(frame, self.classify(frame))
        self.counters["drop_overrun"] += 1

    def arrive(self, frame, *, data_full=False, now=None):
        """One frame arrives; returns the events it produces, in order.

        Parameters
        ----------
        frame : bytes
            The frame without FCS.
        data_full : bool
            The hardware found no room for this frame in the data buffer. The
            frame must then be of class ``data`` (else ``AssertionError``).
            RED decides first: a frame RED drops is ``DROP_RED`` whatever the
            room.
        now : int
            With RED: the cycle of the RED decision (a data-class frame's
            arrival event cycle less ``params.RED_DECISION_LEAD``).
        """
        frame = bytes(frame)
        p = self.classify(frame)
        self._count_in(frame, p)
        if data_full and p.cls != "data":
            raise AssertionError(f"hardware reported the data buffer full for a frame the model "
                                 f"classes {p.cls!r}: {frame.hex()}")
        if p.cls == "runt":
            self.counters["drop_runt"] += 1
            ev = ["DROP_RUNT"]
        elif p.cls == "oversize":
            self.counters["drop_oversize"] += 1
            ev = ["DROP_OVERSIZE"]
        elif p.cls == "data":
            ev = self._arrive_data(frame, p, data_full, now)
        else:
            ev = self._arrive_ack(frame, p)
        self.events.extend(ev)
        return ev

    def _arrive_data(self, frame, p, data_full, now):
        events = []
        fq = self.fq
        if fq is not None:
            # The flow's queue as RED sees it: a frame whose flow has no
            # data queued (a new connection's SYN, a request, a DNS query)
            # is never notified (spec section 12).
            idx, hit = self._lookup(p)
            exempt = fq.empty(self._data_queue_for(idx, hit, p, allocate=False))
        action = "pass"
        if self.red is not None:
            if now is None:
                raise TypeError("with RED, arrive() needs now= (the cycle of the RED decision)")
            arrived_ce = ecn_codepoint(frame) == ECN_CE
            action, frame = self.red.arrive(frame, self.data_bytes, now,
                                            exempt=fq is not None and exempt)
        if action == "drop":
            self.counters["drop_red"] += 1
            return ["DROP_RED"]
        if action == "mark":
            self.counters["red_marked"] += 1
            self.counters["red_ce_already"] += arrived_ce
        if data_full:
            self.counters["drop_data_full"] += 1
            return ["DROP_DATA_FULL"]
        if fq is None:
            self.data_queue.append(frame)
        else:
            for _, victim in fq.overflow(len(frame)):
                self.data_bytes -= len(victim)
                self.acks_in_data -= self._pure_ack(victim)
                self.overflow_dropped.append(victim)
                self.counters["drop_data_overflow"] += 1
                events.append("DROP_DATA_OVERFLOW")
            idx, hit = self._lookup(p)
            host = host_bucket(p.key, fq.hosts) if fq.hosts else 0
            fq.enqueue(self._data_queue_for(idx, hit, p, allocate=True), frame, tag=p.tag, host=host)
        self.data_bytes += len(frame)
        self.acks_in_data += self._pure_ack(frame)
        events.append("ARRIVE_DATA_MARKED" if action == "mark" else "ARRIVE_DATA")
        return events

    def _data_queue_for(self, idx, hit, p, *, allocate):
        """The queue a data frame ``p`` of the flow looked up as ``(idx,
        hit)`` joins (spec section 12): its entry's; without one (a miss) a
        new entry's, the lowest free, unless frames of its class wait in the
        shared queue (``allocate``: take the entry now); else the shared queue."""
        fq = self.fq
        if hit or idx is not None:                  # its entry, or a collision
            return fq.choose(idx, hit=hit, tag=p.tag)
        if not fq.in_shared(p.tag) and None in self.entries:
            new = self.entries.index(None)
            if allocate:
                self.entries[new] = _FlowEntry(key=p.key, tag=p.tag, count=0, newest=None, floor=None)
            return new
        return fq.shared

    def _release(self, idx):
        """Free entry ``idx`` once its flow has neither ACKs nor data queued."""
        e = self.entries[idx]
        if e is not None and e.count == 0 and (self.fq is None or not self.fq.busy(idx)):
            self.entries[idx] = None

    def _lookup(self, p):
        """``(index, hit)``: the entry holding ``p``'s tag (``hit``: and its
        key), or ``(None, False)``. No two entries hold one tag."""
        for i, e in enumerate(self.entries):
            if e is not None and e.tag == p.tag:
                return i, e.key == p.key
        return None, False

    def _arrive_ack(self, frame, p):
        events = []
        # ACC (spec section 11): the average takes its sample first; an
        # escalated arrival supersedes as aggressive and an ECT ACK leaves CE
        # (compared by the ECN field it leaves with).
        escalated = self.acc.arrive(len(self.ack_queue)) and self.acc_enable
        if escalated:
            self.counters["acc_escalated"] += 1
            if p.ecn not in (ECN_NOT_ECT, ECN_CE):
                frame = set_ce(frame)
                p = self.classify(frame)
                self.counters["acc_marked"] += 1
        threshold = 2 if self.ack_mode == 1 and not escalated else 1
        while True:
            # Step 1: look the flow up.
            idx, hit = self._lookup(p)
            entry = self.entries[idx] if hit else None
            covers = (entry is not None and entry.newest is not None and
                      may_supersede(entry.newest.parsed, p, entry.floor))
            # Step 2: supersede the flow's newest queued ACK.
            if covers and entry.count >= threshold:
                entry.newest.frame = frame
                entry.newest.parsed = p
                self.counters["acks_superseded"] += 1
                events.append("ARRIVE_ACK_SUPERSEDE")
                return events
            # Step 3: a full queue makes room, then the arrival starts again.
            if len(self.ack_queue) >= self.ack_limit:
                victim = next((e for e in self.entries if e is not None and e.covered is not None), None)
                if victim is not None:
                    self._drop_covered(victim)
                    self.counters["drop_ack_covered"] += 1
                    events.append("DROP_ACK_COVERED")
                else:
                    self._remove_head_ack()
                    self.counters["drop_ack_front"] += 1
                    events.append("DROP_ACK_FRONT")
                continue
            # Step 4: append.
            q = _QueuedAck(frame, p, entry=None)
            if entry is not None:
                q.entry = idx
                entry.count += 1
                if covers:               # conservative mode, one queued: keep both
                    assert entry.covered is None and entry.count == 2
                    entry.covered = entry.newest
                else:
                    entry.floor = Floor.of(p, ace_ref=entry.newest.parsed.ace if entry.newest else None)
                entry.newest = q
                events.append("ARRIVE_ACK_NEW")
            elif idx is not None:        # the tag is another flow's: a collision
                self.counters["cam_collisions"] += 1
                events.append("ARRIVE_ACK_UNTRACKED")
            elif None in self.entries:
                q.entry = self.entries.index(None)
                self.entries[q.entry] = _FlowEntry(key=p.key, tag=p.tag, count=1, newest=q,
                                                   floor=Floor.of(p))
                events.append("ARRIVE_ACK_NEW")
            else:
                self.counters["cam_full"] += 1
                events.append("ARRIVE_ACK_UNTRACKED")
            self.ack_queue.append(q)
            return events

    def _drop_covered(self, entry):
        """Drop ``entry``'s covered ACK from wherever it is in the queue
        (spec section 3); the flow's next ACK, which covers it, stays."""
        self.ack_queue.remove(entry.covered)
        entry.count -= 1
        entry.covered = None

    def _remove_head_ack(self):
        q = self.ack_queue.popleft()
        if q.entry is not None:
            entry = self.entries[q.entry]
            entry.count -= 1
            if entry.covered is q:
                entry.covered = None
            if entry.count == 0:
                assert entry.newest is q
                entry.newest = entry.floor = None
                self._release(q.entry)
        return q

    # -- departure -------------------------------------------------------

    def depart(self, *, now=None):
        """The scheduler picks one frame (spec section 4).

        Returns ``("DEPART_ACK" | "DEPART_DATA", frame)`` or ``None`` when
        both queues are empty. The caller decides *when* (shaper, output);
        with RED, ``now`` is the departure's cycle (a data departure that
        empties the data queue starts RED's idle period there).
        """
        has_ack, has_data = bool(self.ack_queue), self.data_queue_frames > 0
        if not has_ack and not has_data:
            return None
        if has_ack and has_data:
            # After a change of ack_mode (spec section 4): with the filter
            # off, ACKs left in the ACK queue go first; with it on, the ACK
            # queue waits while pure ACKs queued as data are still there.
            take_data = self.credit > 0
            rule = "acks_first" if self.ack_mode == 0 else "data_first" if self.acks_in_data else None
            if rule is not None and take_data != (rule == "data_first"):
                take_data = rule == "data_first"
                self.mode_rule_decisions[rule] += 1
        else:
            take_data = has_data
            self.credit = 0
        if take_data:
            # Which data frame: the FIFO's head, or the flow queues' choice.
            fq = self.fq
            q = None if fq is None else fq.pick()
            head = self.data_queue[0] if fq is None else fq.queues[q].frames[0]
            if fq is not None and fq.between(q):
                # A new flow's frame between two chunks of another's: whole.
                frame, last, between = head, True, True
            else:
                # The segmenter: chunk_bytes is read when the frame's first
                # chunk leaves; the frame leaves the queue with its last.
                between = False
                if self.head_chunks is None:
                    self.head_chunks = segment(head, self.chunk_bytes)
                    self.head_cut = len(self.head_chunks) > 1
                    self.counters["seg_frames"] += self.head_cut
                frame = self.head_chunks.pop(0)
                self.counters["seg_chunks"] += self.head_cut
                last = not self.head_chunks
            if fq is not None:
                fq.sent(q, frame, last=last)
                for r in fq.take_released():
                    if r != fq.shared:
                        self._release(r)
            elif last:
                self.data_queue.popleft()
            if last:
                if not between:
                    self.head_chunks = None
                self.data_bytes -= len(head)
                self.acks_in_data -= self._pure_ack(head)
                if self.red is not None and self.data_queue_frames == 0:
                    if now is None:
                        raise TypeError("with RED, depart() needs now= (the cycle of the departure)")
                    self.red.emptied(now)
            if has_ack:
                self.credit -= len(frame) * (256 - self.data_share)
            kind = "DEPART_DATA"
        else:
            frame = self._remove_head_ack().frame
            if has_data:
                self.credit += len(frame) * self.data_share
            kind = "DEPART_ACK"
        self.counters["frames_out"] += 1
        self.counters["bytes_out"] += len(frame)
        self.events.append(kind)
        return kind, frame

    def drain(self):
        """Depart everything; returns the list of ``(kind, frame)``."""
        out = []
        while (d := self.depart()) is not None:
            out.append(d)
        return out

    # -- checks ----------------------------------------------------------

    def dropped(self):
        """Sum of every ``drop_*`` counter."""
        return sum(v for k, v in self.counters.items() if k.startswith("drop_"))

    def check_invariants(self):
        """Assert the model's internal consistency (for tests)."""
        c = self.counters
        queued = len(self.ack_queue) + self.data_queue_frames
        # A cut head frame some of whose chunks have left is still queued.
        sent_of_head = 0 if self.head_chunks is None or not self.head_cut else 1
        assert c["frames_in"] == frames_accounted(c) - sent_of_head + queued
        # (A limit lowered live is reached at the next ACK's arrival.)
        assert len(self.ack_queue) <= self.ack_slots
        assert self.acks_in_data == sum(map(self._pure_ack, self.queued_data_frames()))
        counts = {}
        for q in self.ack_queue:
            if q.entry is not None:
                counts[q.entry] = counts.get(q.entry, 0) + 1
        assert counts == {i: e.count for i, e in enumerate(self.entries) if e is not None and e.count}
        if self.fq is not None:
            self.fq.check_invariants()
            assert self.data_bytes == self.fq.bytes
            for i, e in enumerate(self.entries):
                busy = self.fq.busy(i)
                assert e is None or e.count or busy, f"entry {i} holds nothing"
                assert e is not None or not busy, f"queue {i} in use without its entry"
                assert e is None or all(self.classify(f).key == e.key for f in self.fq.frames_of(i))
        tags = [e.tag for e in self.entries if e is not None]
        assert len(tags) == len(set(tags)), "two entries hold one tag"
        for i, e in enumerate(self.entries):
            if e is None:
                continue
            mine = [q for q in self.ack_queue if q.entry == i]
            assert (mine[-1] if mine else None) is e.newest
            assert all(q.parsed.key == e.key for q in mine)
            if e.covered is not None:
                assert e.covered in mine and e.covered is not e.newest
