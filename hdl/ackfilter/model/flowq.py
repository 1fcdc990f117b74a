"""Flow queues for upload data: deficit round robin with sparse-flow priority
(``docs/spec.md`` section 12).

Each flow-table entry has a data queue of its own, and one more queue, the
*shared* queue, takes the data of flows that have no entry (the table is
full, or the flow's tag is another flow's), and of flows whose earlier
frames may still wait there (it counts its frames by flow-tag class). The scheduler is RFC 8290's
(FQ-CoDel, section 4; sch_cake's without its sets): a queue that becomes
active joins the *new* list with one quantum of credit and is served before
the *old* list; a queue whose credit is spent gets a quantum more and goes to
the end of the old list; a queue that empties leaves its list at once (a
queue an overflow drop emptied, when the scheduler next reaches it), and so
its flow-table entry may go. A queue's credit pays for what the link is
charged (the shaper's link accounting), so a flow of small frames gets as
many bytes on the wire as a flow of large ones.

With ``hosts`` (CAKE's ``dual-srchost``), LAN hosts share the link by host
first: each frame names its host's bucket (:func:`ackfilter.flowkey.host_bucket`), a
queue takes its host from the frame that makes it join a list, a host's
*bulk* queues are its queues on the old list, and a frame a queue sends costs
its credit the link's charge times its host's bulk queues (at least 1). Per
round of the old list a host's bulk queues then get one quantum together,
as CAKE's quantum divided by the host's bulk flows gives them (the shared
queue has no host: its frames cost their charge).

The buffer is counted in cells of ``DATA_CELL_BYTES``: a frame takes
``ceil(len / DATA_CELL_BYTES)`` of the ``DATA_CELLS``. When an arrival would
take more than ``DATA_CELLS - DATA_CELL_RESERVE`` (the reserve holds the
next frame the ingress is writing), the fattest queue loses frames from its
head, about half its cells (CAKE's and FQ-CoDel's rule: the drop hits the
flow that fills the buffer, never a sparse one).

This module is the data side only; :class:`~.filter.FilterModel` owns the
flow table, RED and the choice between the ACK class and data.
"""

from collections import deque
from dataclasses import dataclass, field

from ..flowkey import check_host_buckets
from ..params import DATA_CELL_BYTES, DATA_CELL_RESERVE, F_SYS_HZ, OVERFLOW_BATCH, SHARED_CLASSES
from ..protocol import QUANTUM_MAX, QUANTUM_MIN

__all__ = ["QUANTUM_MIN", "QUANTUM_MAX", "quantum_for_cpb", "cells_of", "FlowQueues"]



def quantum_for_cpb(cpb_q16, f_sys_hz=F_SYS_HZ):
    """The DRR quantum in bytes for ``shaper_cpb_q16``: CAKE's
    ``max(min(rate_bytes_per_s >> 12, 1514), 300)`` with the rate the
    shaper runs at, ``f_sys_hz * 2^16 / cpb_q16`` bytes a second; so
    ``floor(16 f_sys_hz / cpb_q16)`` clamped (0, unshaped: 1514).

    >>> quantum_for_cpb(0), quantum_for_cpb(26214400), quantum_for_cpb(100_000)
    (1514, 300, 1514)
    """
    if isinstance(cpb_q16, bool) or not isinstance(cpb_q16, int) or not 0 <= cpb_q16 < 2**32:
        raise ValueError(f"cpb_q16 must be an integer 0 .. 2^32 - 1, not {cpb_q16!r}")
    if cpb_q16 == 0:
        return QUANTUM_MAX
    return max(min(16 * f_sys_hz // cpb_q16, QUANTUM_MAX), QUANTUM_MIN)


def cells_of(nbytes):
    """Cells a frame of ``nbytes`` (as stored) takes."""
    return -(-nbytes // DATA_CELL_BYTES)


@dataclass(eq=False)
class _Queue:
    frames: deque = field(default_factory=deque)   # of bytes, head first
    cells: int = 0
    credit: int = 0
    listed: str = None                              # "new", "old" or None
    host: int = 0                                   # its host's bucket, while listed


class FlowQueues:
    """The data queues and their scheduler.

    Parameters
    ----------
    entries : int
        Flow-table entries; queue ``entries`` is the shared queue.
    cells : int
        Cells of the data buffer.
    reserve : int
        Cells kept free for the frame the ingress writes next.
    quantum : int
        DRR quantum, bytes (:func:`quantum_for_cpb`).
    charge : callable
        ``charge(frame) -> bytes`` the link is charged (the shaper's link
        accounting); a queue's credit pays it.
    hosts : int
        Host buckets (a power of two, ``HOST_BUCKETS``); 0: hosts do not
        count, flows share the link.
    """

    def __init__(self, *, entries, cells, reserve=DATA_CELL_RESERVE, quantum=QUANTUM_MAX, charge=len, hosts=0):
        if not 0 <= reserve < cells:
            raise ValueError(f"reserve must be 0 .. cells - 1 ({cells - 1}), not {reserve!r}")
        if not QUANTUM_MIN <= quantum <= QUANTUM_MAX:
            raise ValueError(f"quantum must be {QUANTUM_MIN} .. {QUANTUM_MAX}, not {quantum!r}")
        check_host_buckets(hosts, "hosts")
        self.hosts = hosts
        self.bulk = [0] * hosts                    # each host's queues on the old list (not the shared one)
        self.shared = entries
        self.queues = [_Queue() for _ in range(entries + 1)]
        self.limit = cells - reserve
        self.quantum = quantum
        self.charge = charge
        self.new, self.old = deque(), deque()       # of queue numbers, head first
        self.cells = 0                              # in use by queued frames
        self.frames = 0
        self.bytes = 0
        self.current = None    # the queue whose head frame is leaving in chunks (its first has left)
        # The shared queue's frames by class (the low bits of the flow tag),
        # and each frame's class, head first.
        self.class_frames = [0] * SHARED_CLASSES
        self.shared_classes = deque()
        self.released = []     # queues that left the lists (see take_released)

    # -- introspection ---------------------------------------------------

    def empty(self, q):
        return not self.queues[q].frames

    def busy(self, q):
        """Queue ``q`` holds frames or is on a list (emptied by an overflow
        drop, not yet reached by the scheduler): its flow-table entry stays."""
        return bool(self.queues[q].frames) or self.queues[q].listed is not None

    def frames_of(self, q):
        return list(self.queues[q].frames)

    # -- arrival ---------------------------------------------------------

    @staticmethod
    def class_of(tag):
        """The class a flow's frames count in while in the shared queue."""
        return tag % SHARED_CLASSES

    def in_shared(self, tag):
        """Frames of the flow with ``tag`` may be in the shared queue (some
        frame of its class is)."""
        return self.class_frames[self.class_of(tag)] > 0

    def choose(self, entry, *, hit, tag):
        """The queue of a data frame of the flow with ``tag`` whose entry is
        ``entry`` (``hit``: its key is the entry's; ``entry`` None: no
        entry): the flow's own queue, unless that is empty and the flow's
        frames may still be in the shared queue; then the shared queue, so a
        flow's frames never sit in two queues at once."""
        if entry is None or not hit:
            return self.shared
        if self.queues[entry].frames or not self.in_shared(tag):
            return entry
        return self.shared

    def overflow(self, nbytes):
        """Drops the arrival of a ``nbytes`` frame needs before it is queued:
        ``[(queue, frame), ...]`` in order, already taken off their queue.
        None unless the arrival would take more than ``limit`` cells; then the
        fattest queue by cells (the lowest number among equals; a head frame
        leaving in chunks is not counted and stays) loses head frames until
        at least half its cells are gone, or ``OVERFLOW_BATCH`` frames."""
        if self.cells + cells_of(nbytes) <= self.limit:
            return []
        def droppable(q):
            c = self.queues[q].cells
            if q == self.current:
                c -= cells_of(len(self.queues[q].frames[0]))
            return c
        victim = max(range(len(self.queues)), key=lambda q: (droppable(q), -q))
        vq = self.queues[victim]
        goal = droppable(victim)
        keep = 1 if victim == self.current else 0     # the frame in chunks
        dropped, freed = [], 0
        while 2 * freed < goal and len(dropped) < OVERFLOW_BATCH and len(vq.frames) > keep:
            frame = vq.frames[keep]
            del vq.frames[keep]
            self._left_shared(victim, keep)
            self._account(vq, frame, -1)
            dropped.append((victim, frame))
            freed += cells_of(len(frame))
        return dropped

    def load(self, q):
        """What a byte queue ``q`` sends costs its credit: its host's bulk
        queues, at least 1 (1 for the shared queue, or without hosts)."""
        if not self.hosts or q == self.shared:
            return 1
        return max(1, self.bulk[self.queues[q].host])

    def enqueue(self, q, frame, *, tag, host=0):
        """``frame`` of the flow with ``tag`` joins queue ``q``; ``host``:
        its host's bucket (a queue that joins a list takes it)."""
        if not 0 <= host < max(self.hosts, 1):
            raise ValueError(f"host must be a bucket 0 .. {max(self.hosts, 1) - 1}, not {host!r}")
        queue = self.queues[q]
        queue.frames.append(frame)
        if q == self.shared:
            self.shared_classes.append(self.class_of(tag))
            self.class_frames[self.class_of(tag)] += 1
        self._account(queue, frame, +1)
        if queue.listed is None:
            queue.listed = "new"
            queue.credit = self.quantum
            queue.host = host
            self.new.append(q)

    def _left_shared(self, q, i):
        """Frame ``i`` of queue ``q`` has left it: the shared queue's count
        of its class goes down."""
        if q == self.shared:
            c = self.shared_classes[i]
            del self.shared_classes[i]
            self.class_frames[c] -= 1

    def _account(self, queue, frame, sign):
        queue.cells += sign * cells_of(len(frame))
        self.cells += sign * cells_of(len(frame))
        self.frames += sign
        self.bytes += sign * len(frame)

    # -- departure -------------------------------------------------------

    def pick(self):
        """The queue whose head frame leaves next (DRR, RFC 8290 section 4.2):
        the lists move as the scheduler looks; ``None`` when no frame is queued.

        A frame leaving in chunks (its queue is :attr:`current`) holds the
        choice until its last chunk, but for the new list: between two of its
        chunks, a queue on the new list other than its own sends its head
        frame, whole (:meth:`between`), so a sparse flow waits for one chunk
        of a bulk flow's frame and not for all of it."""
        if self.current is not None:
            while self.new and self.new[0] != self.current:
                q = self._step(self.new)
                if q is not None:
                    return q
            return self.current
        if not self.frames:
            return None
        while True:
            q = self._step(self.new if self.new else self.old)
            if q is not None:
                return q

    def _step(self, lst):
        """One step of the DRR at the head of ``lst``: its queue, when it may
        send; otherwise the queue leaves (emptied by an overflow drop) or
        goes to the end of the old list with one quantum more, and None."""
        q = lst[0]
        queue = self.queues[q]
        if not queue.frames:
            self._leave(lst)
        elif queue.credit <= 0:
            queue.credit += self.quantum
            lst.popleft()
            self.old.append(q)
            if queue.listed == "new" and self.hosts and q != self.shared:
                self.bulk[queue.host] += 1
            queue.listed = "old"
        else:
            return q
        return None

    def between(self, q):
        """The picked queue ``q`` sends its head frame between two chunks of
        another queue's frame: whole, never cut."""
        return self.current is not None and q != self.current

    def _leave(self, lst):
        q = lst.popleft()
        if self.queues[q].listed == "old" and self.hosts and q != self.shared:
            self.bulk[self.queues[q].host] -= 1
        self.queues[q].listed = None
        self.released.append(q)

    def sent(self, q, frame, *, last=True):
        """``frame`` (a whole frame or one chunk, ``last``: the frame's last)
        left from queue ``q``, the head of its list (a frame sent
        :meth:`between` two chunks leaves whole): its credit pays the
        link's charge (times its host's load, :meth:`load`); a queue it
        empties leaves its list."""
        if not last and self.between(q):
            raise ValueError(f"queue {q} sends between the chunks of queue {self.current}'s frame: whole only")
        queue = self.queues[q]
        queue.credit -= self.charge(frame) * self.load(q)
        if last:
            whole = queue.frames.popleft()
            self._left_shared(q, 0)
            self._account(queue, whole, -1)
            if q == self.current:
                self.current = None
            if not queue.frames:
                self._leave(self.new if queue.listed == "new" else self.old)
        else:
            self.current = q

    def take_released(self):
        """The queues that left the lists since the last call (their flow
        entries may go), in order."""
        out, self.released = self.released, []
        return out

    def check_invariants(self):
        listed = [q for q, queue in enumerate(self.queues) if queue.listed is not None]
        assert sorted(listed) == sorted(list(self.new) + list(self.old)), "lists and queues disagree"
        assert all(self.queues[q].listed == "new" for q in self.new)
        assert all(self.queues[q].listed == "old" for q in self.old)
        assert all(queue.listed is not None for queue in self.queues if queue.frames), "a queue with frames off the lists"
        assert self.cells == sum(queue.cells for queue in self.queues)
        assert all(queue.cells == sum(cells_of(len(f)) for f in queue.frames) for queue in self.queues)
        assert self.frames == sum(len(queue.frames) for queue in self.queues)
        assert len(self.shared_classes) == len(self.queues[self.shared].frames)
        if self.hosts:
            bulk = [0] * self.hosts
            for q in self.old:
                if q != self.shared:
                    bulk[self.queues[q].host] += 1
            assert self.bulk == bulk, "a host's bulk count is not its queues on the old list"
        assert self.class_frames == [list(self.shared_classes).count(c) for c in range(SHARED_CLASSES)]
