"""Queue manager and scheduler of the golden model (``docs/spec.md`` sections 3, 4, 7).

:class:`FilterModel` takes frames one at a time (:meth:`FilterModel.arrive`)
and hands them out one at a time (:meth:`FilterModel.depart`), reporting the
events of spec section 7 in the order the gateware's queue manager must report
them. It has no notion of time, buffer bytes or the shaper (see
:mod:`ackfilter.model.shaper`): a scoreboard tells it when the hardware found
the data buffer full (``data_full=True``) and calls :meth:`depart` when the
hardware reports a departure.

Hash collisions: the model keys its flow table by the full flow key, so on its
own it never sees a collision and ``cam_collisions`` stays 0. The hardware
matches a 16-bit tag first; when two flows share a tag the hardware reports
``ARRIVE_ACK_UNTRACKED`` (and counts ``cam_collisions``) where the model would
say ``ARRIVE_ACK_NEW`` or ``ARRIVE_ACK_SUPERSEDE``. A scoreboard must allow
that and replay the hardware's choice with ``arrive(frame, collision=True)``.
"""

from collections import deque
from dataclasses import dataclass

from ..params import COUNTERS
from .pktparse import ACK_SLOT_BYTES, MAX_FRAME_BYTES, Parsed, after, before, classify

__all__ = ["FilterModel", "EVENTS", "may_supersede", "MODEL_COUNTERS"]

#: Event kinds of spec section 7, by number.
EVENTS = (
    "ARRIVE_DATA", "ARRIVE_ACK_NEW", "ARRIVE_ACK_UNTRACKED", "ARRIVE_ACK_SUPERSEDE",
    "DROP_RUNT", "DROP_OVERSIZE", "DROP_DATA_FULL", "DROP_ACK_FRONT",
    "DEPART_ACK", "DEPART_DATA",
)

#: Counters the model keeps (all of ``params.COUNTERS``; ``drop_overrun`` only
#: moves through :meth:`FilterModel.overrun`, ``cam_collisions`` only through
#: ``arrive(..., collision=True)``).
MODEL_COUNTERS = tuple(c.name for c in COUNTERS)


def _inside(s, e, s2, e2):
    """Block ``[s, e)`` lies inside ``[s2, e2)`` (spec: ``!before(s, s2)`` and ``!after(e, e2)``)."""
    return not before(s, s2) and not after(e, e2)


def may_supersede(old, new):
    """May queued pure ACK ``old`` be overwritten by ``new`` of the same flow? (spec section 3)

    Both are :class:`~ackfilter.model.pktparse.Parsed` pure ACKs. The first
    bullet is ``old.supersedable`` (computed by the parser).
    """
    if not old.supersedable:
        return False
    if (old.ece, old.cwr, old.ecn) != (new.ece, new.cwr, new.ecn):
        return False
    if old.has_ts != new.has_ts:
        return False
    if old.has_ts and (after(old.tsval, new.tsval) or after(old.tsecr, new.tsecr)):
        return False
    for s, e in old.sack:
        if not after(e, new.ack):
            continue
        if not any(_inside(s, e, s2, e2) for s2, e2 in new.sack):
            return False
    if after(new.ack, old.ack):
        return True
    if new.ack == old.ack:
        # Same cumulative ack: only a SACK block above it that the older ACK
        # did not report is new information (a D-SACK block below the ack is
        # not: such an ACK is a duplicate like the older one).
        return any(after(e, new.ack) and not any(_inside(s, e, s2, e2) for s2, e2 in old.sack)
                   for s, e in new.sack)
    return False


@dataclass
class _QueuedAck:
    frame: bytes
    parsed: Parsed
    tracked: bool      # True: its flow owns the entry ``parsed.key``


@dataclass
class _FlowEntry:
    count: int         # tracked ACKs of this flow in the queue
    newest: _QueuedAck  # the queue element (slot) holding the flow's newest ACK


class FilterModel:
    """Golden model of the uplink core's queue manager and scheduler.

    Parameters
    ----------
    ack_mode : int
        0 off (plain FIFO), 1 conservative (supersede only when the flow has
        >= 2 ACKs queued), 2 aggressive (>= 1).
    ack_queue_limit : int
        ACK queue length at which drop-from-front starts; the effective limit
        is ``min(ack_queue_limit, ack_slots)``.
    flow_entries : int
        Size of the flow table (``FLOW_ENTRIES``).
    data_share : int
        Guaranteed data share in 1/256ths (0..256).
    ack_slots : int
        ``ACK_SLOTS`` of the gateware.
    slot_bytes, max_frame : int
        ACK slot size and ``MAX_FRAME_BYTES``.

    Attributes
    ----------
    counters : dict
        ``name -> int`` for every counter of ``params.COUNTERS``.
    events : list
        Every event produced so far, in order (the concatenation of the lists
        :meth:`arrive` returned and the kinds :meth:`depart` returned).
    credit : int
        Scheduler credit (spec section 4).
    """

    def __init__(self, *, ack_mode=1, ack_queue_limit=64, flow_entries=64, data_share=128,
                 ack_slots=64, slot_bytes=ACK_SLOT_BYTES, max_frame=MAX_FRAME_BYTES):
        if ack_mode not in (0, 1, 2):
            raise ValueError(f"ack_mode must be 0, 1 or 2, not {ack_mode!r}")
        if not 0 <= data_share <= 256:
            raise ValueError(f"data_share must be in 0..256, not {data_share!r}")
        if ack_queue_limit < 1 or ack_slots < 1:
            raise ValueError(f"ack_queue_limit and ack_slots must be >= 1, not "
                             f"{ack_queue_limit!r}, {ack_slots!r}")
        if flow_entries < 0:
            raise ValueError(f"flow_entries must be >= 0, not {flow_entries!r}")
        self.ack_mode = ack_mode
        self.ack_limit = min(ack_queue_limit, ack_slots)
        self.flow_entries = flow_entries
        self.data_share = data_share
        self.slot_bytes = slot_bytes
        self.max_frame = max_frame
        self.ack_queue = deque()     # of _QueuedAck, head first
        self.data_queue = deque()    # of bytes, head first
        self.flows = {}              # key -> _FlowEntry
        self.credit = 0
        self.counters = {name: 0 for name in MODEL_COUNTERS}
        self.events = []

    # -- introspection ---------------------------------------------------

    @property
    def ack_queue_depth(self):
        return len(self.ack_queue)

    @property
    def data_queue_frames(self):
        return len(self.data_queue)

    @property
    def flows_active(self):
        return len(self.flows)

    def queued_ack_frames(self):
        """The frames in the ACK queue, head first."""
        return [q.frame for q in self.ack_queue]

    def queued_data_frames(self):
        """The frames in the data queue, head first."""
        return list(self.data_queue)

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

    def overrun(self, frame):
        """Account a frame the hardware dropped for ``drop_overrun`` (``ev_overrun``).

        Such a frame never reaches the queue manager and produces no event. It
        is counted in ``frames_in``, ``bytes_in``, ``drop_overrun`` and, if it
        is a pure ACK, in ``acks_in`` (the parser classified it before the
        metadata FIFO refused it).
        """
        frame = bytes(frame)
        self._count_in(frame, self.classify(frame))
        self.counters["drop_overrun"] += 1

    def arrive(self, frame, *, data_full=False, collision=False):
        """One frame arrives; returns the events it produces, in order.

        Parameters
        ----------
        frame : bytes
            The frame without FCS.
        data_full : bool
            The hardware found no room for this frame in the data buffer. The
            frame must then be of class ``data`` (else ``AssertionError``).
        collision : bool
            Replay a flow-tag collision reported by the hardware: every flow
            lookup of this arrival is a collision, so the ACK is queued
            untracked (``cam_collisions`` counts it once). Only meaningful for
            a pure ACK in a filtering mode (else ``AssertionError``).
        """
        frame = bytes(frame)
        p = self.classify(frame)
        self._count_in(frame, p)
        if data_full and p.cls != "data":
            raise AssertionError(f"hardware reported the data buffer full for a frame the model "
                                 f"classes {p.cls!r}: {frame.hex()}")
        if collision and p.cls != "ack":
            raise AssertionError(f"hardware reported a flow-tag collision for a frame the model "
                                 f"classes {p.cls!r} ({p.reason}): {frame.hex()}")
        if p.cls == "runt":
            self.counters["drop_runt"] += 1
            ev = ["DROP_RUNT"]
        elif p.cls == "oversize":
            self.counters["drop_oversize"] += 1
            ev = ["DROP_OVERSIZE"]
        elif p.cls == "data":
            if data_full:
                self.counters["drop_data_full"] += 1
                ev = ["DROP_DATA_FULL"]
            else:
                self.data_queue.append(frame)
                ev = ["ARRIVE_DATA"]
        else:
            ev = self._arrive_ack(frame, p, collision)
        self.events.extend(ev)
        return ev

    def _arrive_ack(self, frame, p, collision):
        events = []
        threshold = 2 if self.ack_mode == 1 else 1
        if collision:
            self.counters["cam_collisions"] += 1
        while True:
            # Step 1: look the flow up (a forced collision hides the entry).
            entry = None if collision else self.flows.get(p.key)
            # Step 2: supersede the flow's newest queued ACK.
            if entry is not None and entry.count >= threshold and may_supersede(entry.newest.parsed, p):
                entry.newest.frame = frame
                entry.newest.parsed = p
                self.counters["acks_superseded"] += 1
                events.append("ARRIVE_ACK_SUPERSEDE")
                return events
            # Step 3: drop from front when full, then start again.
            if len(self.ack_queue) >= self.ack_limit:
                self._remove_head_ack()
                self.counters["drop_ack_front"] += 1
                events.append("DROP_ACK_FRONT")
                continue
            # Step 4: append.
            q = _QueuedAck(frame, p, tracked=False)
            if entry is not None:
                q.tracked = True
                entry.count += 1
                entry.newest = q
                events.append("ARRIVE_ACK_NEW")
            elif not collision and len(self.flows) < self.flow_entries:
                q.tracked = True
                self.flows[p.key] = _FlowEntry(count=1, newest=q)
                events.append("ARRIVE_ACK_NEW")
            else:
                if not collision:
                    self.counters["cam_full"] += 1
                events.append("ARRIVE_ACK_UNTRACKED")
            self.ack_queue.append(q)
            return events

    def _remove_head_ack(self):
        q = self.ack_queue.popleft()
        if q.tracked:
            entry = self.flows[q.parsed.key]
            entry.count -= 1
            if entry.count == 0:
                assert entry.newest is q
                del self.flows[q.parsed.key]
        return q

    # -- departure -------------------------------------------------------

    def depart(self):
        """The scheduler picks one frame (spec section 4).

        Returns ``("DEPART_ACK" | "DEPART_DATA", frame)`` or ``None`` when
        both queues are empty. The caller decides *when* (shaper, output).
        """
        has_ack, has_data = bool(self.ack_queue), bool(self.data_queue)
        if not has_ack and not has_data:
            return None
        if has_ack and has_data:
            take_data = self.credit > 0
        else:
            take_data = has_data
            self.credit = 0
        if take_data:
            frame = self.data_queue.popleft()
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
        queued = len(self.ack_queue) + len(self.data_queue)
        assert c["frames_in"] == c["frames_out"] + c["acks_superseded"] + self.dropped() + queued
        assert len(self.ack_queue) <= self.ack_limit
        assert len(self.flows) <= self.flow_entries
        counts = {}
        for q in self.ack_queue:
            if q.tracked:
                counts[q.parsed.key] = counts.get(q.parsed.key, 0) + 1
        assert counts == {k: e.count for k, e in self.flows.items()}
        for k, e in self.flows.items():
            last = [q for q in self.ack_queue if q.tracked and q.parsed.key == k][-1]
            assert last is e.newest
