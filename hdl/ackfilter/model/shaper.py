"""Shaper of the golden model: a token bucket written as GCRA (``docs/spec.md`` section 6).

Time is in system clock cycles; ``tat`` (theoretical arrival time) is in
cycles with 16 fractional bits.

* a frame may start at cycle ``now`` when ``cpb_q16 == 0`` or
  ``tat <= now * 2**16 + burst_bytes * cpb_q16``;
* when it starts: ``tat = max(tat, now * 2**16) + (len + overhead_bytes) * cpb_q16``.
"""

__all__ = ["GcraShaper", "gcra_departures"]


class GcraShaper:
    """Incremental form of the shaper, for scoreboards that step through time.

    Parameters
    ----------
    cpb_q16 : int
        System clock cycles per byte, Q16 (0 = unshaped).
    burst_bytes, overhead_bytes : int
        ``shaper_burst_bytes`` and ``shaper_overhead_bytes``.
    """

    def __init__(self, *, cpb_q16, burst_bytes=1514, overhead_bytes=24):
        self.cpb_q16 = cpb_q16
        self.burst_bytes = burst_bytes
        self.overhead_bytes = overhead_bytes
        self.tat = 0

    def may_start(self, now):
        """True if a frame may start at cycle ``now``."""
        return self.cpb_q16 == 0 or self.tat <= (now << 16) + self.burst_bytes * self.cpb_q16

    def wake_at(self):
        """Earliest cycle at which a frame may start (0 if already allowed from the start)."""
        if self.cpb_q16 == 0:
            return 0
        # smallest now with now * 2^16 >= tat - burst * cpb
        need = self.tat - self.burst_bytes * self.cpb_q16
        return max(0, -(-need >> 16))

    def start(self, now, length):
        """A frame of ``length`` bytes starts at ``now`` (must be allowed)."""
        assert self.may_start(now), f"shaper does not allow a start at cycle {now}"
        self.tat = max(self.tat, now << 16) + (length + self.overhead_bytes) * self.cpb_q16


def gcra_departures(lengths, ready_cycles, *, cpb_q16, burst_bytes, overhead_bytes):
    """Start cycle the shaper allows for each frame, in order.

    Parameters
    ----------
    lengths : sequence of int
        Frame lengths in bytes (as stored, without FCS), in departure order.
    ready_cycles : sequence of int
        For each frame, the earliest cycle it could start if the shaper were
        open (queued and the output free). The caller accounts for the output
        being busy with the previous frame.

    Returns
    -------
    list of int
        ``max(ready, first cycle the GCRA allows)`` for each frame, with the
        GCRA state advanced by each start in turn.
    """
    if len(lengths) != len(ready_cycles):
        raise ValueError(f"{len(lengths)} lengths but {len(ready_cycles)} ready cycles")
    shaper = GcraShaper(cpb_q16=cpb_q16, burst_bytes=burst_bytes, overhead_bytes=overhead_bytes)
    starts = []
    for length, ready in zip(lengths, ready_cycles):
        now = max(ready, shaper.wake_at())
        shaper.start(now, length)
        starts.append(now)
    return starts
