"""Shaper of the golden model: link accounting and a token bucket written as
GCRA (``docs/spec.md`` section 6).

Link accounting (:class:`LinkAccounting`, :func:`charged_bytes`): the bytes a
frame costs the uplink, as tc-cake counts them (``cake_calc_overhead`` in
Linux ``net/sched/sch_cake.c``):

1. ``n = base + overhead_bytes``, with ``base`` the frame's length as stored
   (without FCS; ``charge_base="frame"``) or the length of its IP packet
   (``"ip"``, :func:`ackfilter.model.pktparse.ip_packet_length`: Ethernet
   padding is not charged);
2. ``n = max(n, mpu_bytes)`` (a negative ``n`` is charged ``mpu_bytes``: the
   kernel's unsigned arithmetic wraps there, see the spec);
3. ``atm``: ``ceil(n / 48) * 53`` (48-byte payloads of 53-byte ATM cells);
   ``ptm``: ``n + ceil(n / 64)`` (64b/65b, one byte per 64 or part thereof).

The default (``frame``, overhead 24, mpu 0, none) is the Ethernet wire: the
frame + preamble 8 + FCS 4 + inter-frame gap 12.

GCRA: time is in system clock cycles; ``tat`` (theoretical arrival time) is
in cycles with 16 fractional bits.

* a frame may start at cycle ``now`` when ``cpb_q16 == 0`` or
  ``tat <= now * 2**16 + burst_bytes * cpb_q16``;
* when it starts: ``tat = max(tat, now * 2**16) + charged_bytes * cpb_q16``.
"""

from dataclasses import dataclass

from .. import params as P
from .pktparse import ip_packet_length

__all__ = ["LinkAccounting", "charged_bytes", "GcraShaper", "gcra_departures"]

#: ATM: 48 payload bytes in a 53-byte cell (tc-cake(8), "atm").
ATM_CELL_PAYLOAD, ATM_CELL_BYTES = 48, 53
#: PTM: 64b/65b coding, one byte per 64 or part thereof (sch_cake.c, cake_calc_overhead).
PTM_BLOCK_BYTES = 64


def charged_bytes(frame_bytes, ip_bytes=None, *, charge_base="frame", overhead_bytes=24,
                  mpu_bytes=0, link_layer="none"):
    """Bytes the shaper charges a frame of ``frame_bytes`` (as stored, without
    FCS) carrying an IP packet of ``ip_bytes`` (needed for ``charge_base="ip"``).

    >>> charged_bytes(54, 40, charge_base="ip", overhead_bytes=18, mpu_bytes=64)   # docsis
    64
    """
    base = frame_bytes if charge_base == "frame" else ip_bytes
    if base is None:
        raise ValueError("charge_base 'ip' needs the frame's IP packet length (ip_bytes)")
    n = max(base + overhead_bytes, mpu_bytes)
    if link_layer == "atm":
        n = -(-n // ATM_CELL_PAYLOAD) * ATM_CELL_BYTES
    elif link_layer == "ptm":
        n += -(-n // PTM_BLOCK_BYTES)
    return n


def _check_param(name, value):
    p = P.param(name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    if not p.minimum <= value <= p.maximum:
        raise ValueError(f"{name} must be {p.minimum}..{p.maximum}, not {value!r}")


@dataclass(frozen=True)
class LinkAccounting:
    """The four link accounting registers (``shaper_charge_base``,
    ``shaper_overhead_bytes``, ``shaper_mpu_bytes``, ``shaper_link_layer``),
    with names for the enumerations. Defaults: the Ethernet wire.

    Parameters
    ----------
    charge_base : "frame" or "ip"
    overhead_bytes : int      -64..256
    mpu_bytes : int           0..256
    link_layer : "none", "atm" or "ptm"
    """

    charge_base: str = "frame"
    overhead_bytes: int = 24
    mpu_bytes: int = 0
    link_layer: str = "none"

    def __post_init__(self):
        if self.charge_base not in P.SHAPER_CHARGE_BASES:
            raise ValueError(f"charge_base must be one of {', '.join(P.SHAPER_CHARGE_BASES)}, "
                             f"not {self.charge_base!r}")
        if self.link_layer not in P.SHAPER_LINK_LAYERS:
            raise ValueError(f"link_layer must be one of {', '.join(P.SHAPER_LINK_LAYERS)}, "
                             f"not {self.link_layer!r}")
        _check_param("shaper_overhead_bytes", self.overhead_bytes)
        _check_param("shaper_mpu_bytes", self.mpu_bytes)

    @classmethod
    def from_registers(cls, values):
        """From register values by name (missing ones: the table's defaults)."""
        def get(name):
            return values.get(name, P.param(name).default)
        bases = {v: k for k, v in P.SHAPER_CHARGE_BASES.items()}
        layers = {v: k for k, v in P.SHAPER_LINK_LAYERS.items()}
        return cls(charge_base=bases[get("shaper_charge_base")],
                   overhead_bytes=get("shaper_overhead_bytes"), mpu_bytes=get("shaper_mpu_bytes"),
                   link_layer=layers[get("shaper_link_layer")])

    def registers(self):
        """``{register name: value}``, e.g. for ``replay(csr=...)``."""
        return {
            "shaper_charge_base": P.SHAPER_CHARGE_BASES[self.charge_base],
            "shaper_overhead_bytes": self.overhead_bytes,
            "shaper_mpu_bytes": self.mpu_bytes,
            "shaper_link_layer": P.SHAPER_LINK_LAYERS[self.link_layer],
        }

    def charged_bytes(self, frame_bytes, ip_bytes=None):
        """See :func:`charged_bytes`."""
        return charged_bytes(frame_bytes, ip_bytes, charge_base=self.charge_base,
                             overhead_bytes=self.overhead_bytes, mpu_bytes=self.mpu_bytes,
                             link_layer=self.link_layer)

    def charge(self, frame, ip_bytes=None):
        """Bytes charged for ``frame``: its bytes (as stored, without FCS), or
        its length (an ``int``; then ``charge_base="ip"`` needs ``ip_bytes``)."""
        if isinstance(frame, int):
            return self.charged_bytes(frame, ip_bytes)
        frame = bytes(frame)
        return self.charged_bytes(len(frame), ip_packet_length(frame))

    def describe(self):
        """Short text: ``frame + 24`` or ``ip + 18, mpu 64``; ``, atm`` / ``, ptm``."""
        text = f"{self.charge_base} {'-' if self.overhead_bytes < 0 else '+'} {abs(self.overhead_bytes)}"
        if self.mpu_bytes:
            text += f", mpu {self.mpu_bytes}"
        if self.link_layer != "none":
            text += f", {self.link_layer}"
        return text


class GcraShaper:
    """Incremental form of the shaper, for scoreboards that step through time.

    Parameters
    ----------
    cpb_q16 : int
        System clock cycles per byte, Q16 (0 = unshaped).
    burst_bytes : int
        ``shaper_burst_bytes``.
    overhead_bytes : int
        ``shaper_overhead_bytes`` (when ``accounting`` is not given).
    accounting : LinkAccounting
        All four link accounting registers (default: the Ethernet wire with
        ``overhead_bytes``).
    """

    def __init__(self, *, cpb_q16, burst_bytes=1514, overhead_bytes=None, accounting=None):
        if accounting is not None and overhead_bytes is not None:
            raise TypeError("give overhead_bytes or accounting, not both")
        if accounting is None:
            accounting = LinkAccounting(overhead_bytes=24 if overhead_bytes is None else overhead_bytes)
        if not isinstance(accounting, LinkAccounting):
            raise TypeError(f"accounting must be a LinkAccounting, not {accounting!r}")
        self.cpb_q16 = cpb_q16
        self.burst_bytes = burst_bytes
        self.accounting = accounting
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

    def start(self, now, frame, ip_bytes=None):
        """A frame starts at ``now`` (must be allowed): its bytes, or its
        length (and its IP packet's, see :meth:`LinkAccounting.charge`)."""
        assert self.may_start(now), f"shaper does not allow a start at cycle {now}"
        self.tat = max(self.tat, now << 16) + self.accounting.charge(frame, ip_bytes) * self.cpb_q16


def gcra_departures(frames, ready_cycles, *, cpb_q16, burst_bytes, overhead_bytes=None,
                    accounting=None):
    """Start cycle the shaper allows for each frame, in order.

    Parameters
    ----------
    frames : sequence of bytes or int
        The frames (as stored, without FCS) in departure order, or their
        lengths when the charge is based on the frame.
    ready_cycles : sequence of int
        For each frame, the earliest cycle it could start if the shaper were
        open (queued and the output free). The caller accounts for the output
        being busy with the previous frame.
    overhead_bytes, accounting : as for :class:`GcraShaper`.

    Returns
    -------
    list of int
        ``max(ready, first cycle the GCRA allows)`` for each frame, with the
        GCRA state advanced by each start in turn.
    """
    if len(frames) != len(ready_cycles):
        raise ValueError(f"{len(frames)} frames but {len(ready_cycles)} ready cycles")
    shaper = GcraShaper(cpb_q16=cpb_q16, burst_bytes=burst_bytes, overhead_bytes=overhead_bytes,
                        accounting=accounting)
    starts = []
    for frame, ready in zip(frames, ready_cycles):
        now = max(ready, shaper.wake_at())
        shaper.start(now, frame)
        starts.append(now)
    return starts
