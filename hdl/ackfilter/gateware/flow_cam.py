"""Content-addressable table of the flows that have an ACK waiting.

Holds a short tag (a hash of the flow key) per entry, so the match stays
small enough to route (docs/design.md, "Flow table": a 64 x 96-bit register CAM congests the
ECP5 router, 64 x 32 bits does not). The full key lives in the queue
manager's flow records in block RAM and is compared there: a tag hit is only
a candidate, so a hash collision can never cause a wrong supersession.
"""

from amaranth.hdl import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..params import FLOW_ENTRIES
from .lib.prio import lowest_set

__all__ = ["FlowCAM"]


class FlowCAM(wiring.Component):
    """A register CAM of ``entries`` tags; compare and priority encoder are
    separate pipeline stages.

    Ports
    -----
    lookup_tag : In(tag_bits)
        Compared against every entry; ``hit``/``hit_index`` answer the
        ``lookup_tag`` of two cycles before, against the table with that
        cycle's ``set`` and ``clear`` already applied.
    free, free_index : Out
        Registered: some entry is unused, and the lowest such entry.
    set_en, set_index, set_tag : In
        Store ``set_tag`` in entry ``set_index`` and mark it valid.
    clear_en, clear_index : In
        Mark entry ``clear_index`` invalid. ``clear`` and ``set`` may happen in
        one cycle; on the same entry ``set`` wins.
    used : Out
        Number of valid entries (a status register).
    """

    def __init__(self, *, entries=FLOW_ENTRIES, tag_bits=16):
        if not isinstance(entries, int) or entries < 2:
            raise TypeError(f"entries must be an integer >= 2, not {entries!r}")
        self.entries = entries
        self.tag_bits = tag_bits
        idx = range(entries)
        super().__init__({
            "lookup_tag":  In(tag_bits),
            "hit":         Out(1),
            "hit_index":   Out(idx),
            "free":        Out(1),
            "free_index":  Out(idx),
            "set_en":      In(1),
            "set_index":   In(idx),
            "set_tag":     In(tag_bits),
            "clear_en":    In(1),
            "clear_index": In(idx),
            "used":        Out(range(entries + 1)),
        })

    def elaborate(self, platform):
        m = Module()
        n = self.entries
        tags  = [Signal(self.tag_bits, name=f"tag{i}") for i in range(n)]
        valid = Signal(n)

        # Stage 1: the match vector against the table's next state (this
        # cycle's set and clear applied), registered.
        match = Signal(n)
        set_matches = self.set_tag == self.lookup_tag
        for i in range(n):
            set_i = self.set_en & (self.set_index == i)
            clear_i = self.clear_en & (self.clear_index == i)
            with m.If(set_i):
                m.d.sync += [valid[i].eq(1), tags[i].eq(self.set_tag), match[i].eq(set_matches)]
            with m.Else():
                with m.If(clear_i):
                    m.d.sync += valid[i].eq(0)
                m.d.sync += match[i].eq(valid[i] & ~clear_i & (tags[i] == self.lookup_tag))

        # Stage 2: registered priority encoders (trees), the lowest matching
        # and the lowest free entry.
        any_match, hit_index = lowest_set(match)
        any_free, free_index = lowest_set(~valid)
        m.d.sync += [
            self.hit.eq(any_match),
            self.hit_index.eq(hit_index),
            self.free.eq(any_free),
            self.free_index.eq(free_index),
        ]

        used = 0
        for i in range(n):
            used = used + valid[i]
        m.d.sync += self.used.eq(used)
        return m
