"""RED on the uplink data queue, golden model (``docs/spec.md`` section 10).

Random early detection (Floyd and Jacobson 1993) with the gentle variant
(Floyd 2000) and ECN marking (RFC 3168). Each data frame, as it arrives at
the data queue and before it is stored, updates the average queue length
and is then passed, or *congestion-notified*: in the early region an
ECN-capable IP packet (ECT(0) or ECT(1)) is marked CE, a CE packet is
forwarded as it is, every other frame (Not-ECT, or no IP header the
hardware can find) is dropped; in the forced region every frame is dropped.

Everything here is integer arithmetic, exactly as the hardware computes it,
so that the RTL can be checked decision by decision; the pieces the RTL
mirrors are functions of their own: :func:`xorshift32` (the random
numbers), :func:`ewma_step` and :func:`idle_decay` (the average),
:func:`region` and :func:`pb_terms` (the marking probability as a fraction)
and :func:`early_notify` (the count-based comparison, without a division).
:class:`Red` puts them together, one call of :meth:`Red.arrive` per frame.

Frames are given without preamble and FCS, exactly as the core sees them.
"""

import math

from ..params import COUNTERS, F_SYS_HZ, PARAMS, param
from ..protocol import (AVG_FRAC_BITS, COUNT_MAX, ECN_CE, ECN_ECT0, ECN_ECT1, ECN_NOT_ECT, MAX_QLEN_BYTES,
                        P_FRAC_BITS, RED_PRNG_SEED)
from .pktparse import (ETH_IPV4, ETH_IPV6, ETH_PPPOE_SESSION, PPP_IPV4, PPP_IPV6, VLAN_TPIDS,
                       ones_complement_sum)

__all__ = [
    "AVG_FRAC_BITS", "P_FRAC_BITS", "P_ONE", "MAX_QLEN_BYTES", "COUNT_MAX", "MIN_WQ_SHIFT",
    "MAX_WQ_SHIFT", "MIN_IDLE_SHIFT", "MAX_IDLE_SHIFT", "RED_PRNG_SEED", "ECN_NOT_ECT", "ECN_ECT1", "ECN_ECT0",
    "ECN_CE", "RED_PARAMS", "RED_COUNTERS", "IDLE_PACKET_BYTES",
    "xorshift32", "ewma_step", "idle_decay", "region", "pb_terms", "early_notify",
    "ip_header", "ecn_codepoint", "checksum_update", "set_ce", "idle_shift_for_rate",
    "registers_for_rate", "Red",
]

P_ONE = 1 << P_FRAC_BITS
#: ``wq_shift`` range: w_q = 2^-wq_shift. Floyd and Jacobson recommend
#: w_q >= 0.001 (section 6); 2^-9 = 0.00195 is near their 0.002.
MIN_WQ_SHIFT, MAX_WQ_SHIFT = param("red_wq_shift").minimum, param("red_wq_shift").maximum
#: ``idle_shift`` range (a 5-bit register): one idle decay step every
#: 2^idle_shift cycles of an empty queue. At least 1: the hardware applies
#: one step per cycle, and steps that fell due while a decision was being
#: taken must be caught up faster than new ones fall due (spec section 10).
MIN_IDLE_SHIFT, MAX_IDLE_SHIFT = param("red_idle_shift").minimum, param("red_idle_shift").maximum
#: "Typical small packet" for :func:`idle_shift_for_rate` (Floyd and
#: Jacobson section 11: s is the transmission time of a small packet; 500
#: bytes is ns-2's RED ``mean_pktsize_``).
IDLE_PACKET_BYTES = 500

#: The registers and counters of spec section 10 (rows of ``params.PARAMS``
#: and ``params.COUNTERS``).
RED_PARAMS = tuple(p for p in PARAMS if p.name.startswith("red_"))
RED_COUNTERS = tuple(c for c in COUNTERS if c.name in ("red_marked", "red_ce_already", "drop_red"))

_REG = {p.name: (p.minimum, p.maximum) for p in RED_PARAMS}


def _check_int(name, value, lo, hi, what=""):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer{what}, not {value!r}")
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be {lo} .. {hi}{what}, not {value!r}")
    return value


def _check_bool(name, value):
    if not isinstance(value, int):
        raise TypeError(f"{name} must be 0, 1, False or True, not {value!r}")
    if value not in (0, 1):
        raise ValueError(f"{name} must be 0, 1, False or True, not {value!r}")
    return bool(value)


# --- the random numbers --------------------------------------------------------------------

def xorshift32(state):
    """One step of Marsaglia's xorshift32 with shifts (13, 17, 5).

    ``x ^= x << 13; x ^= x >> 17; x ^= x << 5`` on 32 bits (Marsaglia 2003,
    section 3, ``xor32``): three XOR stages, no carry chain. A non-zero state
    runs through all 2^32 - 1 non-zero states before it repeats and never
    becomes 0. RED steps it once per arriving data frame and uses the upper
    16 bits of the new state as the random number.
    """
    x = state & 0xFFFF_FFFF
    x ^= (x << 13) & 0xFFFF_FFFF
    x ^= x >> 17
    x ^= (x << 5) & 0xFFFF_FFFF
    return x


# --- the average ---------------------------------------------------------------------------

def ewma_step(avg_q16, qlen_bytes, wq_shift):
    """The average after one sample (Floyd and Jacobson, Figure 2:
    ``avg <- (1 - w_q) avg + w_q q``, with w_q = 2^-wq_shift).

    ``avg_q16 + (((qlen_bytes << 16) - avg_q16) >> wq_shift)``, the shift
    arithmetic (rounding towards minus infinity), as a signed shift in
    hardware. Started at 0, the result is never above the exact average and
    less than 2^wq_shift units of 2^-16 byte below it, whatever the history
    (idle steps included, :func:`idle_decay`); a queue
    that stays at ``q`` bytes brings ``avg_q16`` to within 2^wq_shift - 1
    units below ``q << 16``, and a queue that stays empty brings it to
    exactly 0.
    """
    return avg_q16 + (((qlen_bytes << AVG_FRAC_BITS) - avg_q16) >> wq_shift)


def idle_decay(avg_q16, steps, wq_shift):
    """The average after ``steps`` idle decay steps, each
    :func:`ewma_step` with a sample of 0 (``avg - ceil(avg / 2^wq_shift)``):
    ``(1 - w_q)^m avg`` (Floyd and Jacobson, Figure 2) computed as ``m``
    samples of an empty queue. Once the average is 0 it stays 0, so the
    loop ends there."""
    for _ in range(steps):
        if avg_q16 == 0:
            break
        avg_q16 = ewma_step(avg_q16, 0, wq_shift)
    return avg_q16


# --- the decision --------------------------------------------------------------------------

def region(avg_bytes, *, min_bytes, max_bytes, gentle):
    """Where the average (in whole bytes, ``avg_q16 >> 16``) lies.

    Returns
    -------
    str
        ``"below"`` (``avg < min_th``: pass), ``"early"`` (``min_th <= avg
        < max_th``, or with ``gentle`` ``max_th <= avg < 2 max_th``:
        notified with a probability, :func:`early_notify`) or ``"forced"``
        (every frame notified).
    """
    if avg_bytes < min_bytes:
        return "below"
    if avg_bytes < max_bytes or (gentle and avg_bytes < 2 * max_bytes):
        return "early"
    return "forced"


def pb_terms(avg_bytes, *, min_bytes, max_bytes, max_p):
    """The probability p_b of an ``"early"`` average as a fraction
    ``num / (den << 16)``.

    * ``min_th <= avg < max_th`` (Floyd and Jacobson, Figure 2:
      ``p_b = max_p (avg - min_th) / (max_th - min_th)``):
      ``num = max_p * (avg - min_th)``, ``den = max_th - min_th``;
    * ``max_th <= avg < 2 max_th`` (gentle, Floyd 2000: from max_p at max_th
      to 1 at 2 max_th): ``num = max_p * max_th + (65536 - max_p) *
      (avg - max_th)``, ``den = max_th``.

    ``max_p`` is in 1/65536. ``num`` and ``den << 16`` are below 2^36.
    """
    if avg_bytes < max_bytes:
        return max_p * (avg_bytes - min_bytes), max_bytes - min_bytes
    return max_p * max_bytes + (P_ONE - max_p) * (avg_bytes - max_bytes), max_bytes


def early_notify(rand16, count, num, den):
    """Whether an ``"early"`` frame is notified.

    Floyd and Jacobson (section 7, uniform inter-mark intervals) notify with
    ``p_a = p_b / (1 - count p_b)``, ``count`` the frames not notified since
    the last notification, and with certainty once ``count p_b >= 1``. With
    ``p_b = num / (den << 16)`` and the random number ``rand16 / 65536``,
    ``rand16 / 65536 < p_a`` is, multiplied out (all terms positive)::

        count * num >= den << 16                       (count p_b >= 1)
        or rand16 * ((den << 16) - count * num) < num << 16

    No division; every product is below 2^52 (``rand16``, ``count`` < 2^16,
    ``num``, ``den << 16`` < 2^36), and the comparison is exact: it is true
    for exactly ``min(65536, ceil(65536 p_a))`` of the 65536 values of
    ``rand16``.
    """
    room = (den << P_FRAC_BITS) - count * num
    return room <= 0 or rand16 * room < (num << P_FRAC_BITS)


# --- the frame -----------------------------------------------------------------------------

def _u16(b, i):
    return (b[i] << 8) | b[i + 1]


def ip_header(frame):
    """Offset and version of the IP header RED marks, or ``None``.

    The encapsulations of spec section 2 rule 1: Ethernet II, up to two VLAN
    tags (TPID 0x8100, 0x88A8, 0x9100), then EtherType 0x0800 (IPv4), 0x86DD
    (IPv6) or a PPPoE session (0x8864, ver/type 0x11, code 0) with PPP
    protocol 0x0021 (IPv4) or 0x0057 (IPv6). The header's version nibble
    must agree, an IPv4 IHL be at least 5, and the frame hold the fixed
    header (20 bytes for IPv4, 40 for IPv6). Anything else (a third tag,
    ARP, PPPoE discovery, other PPP protocols, a header cut short) has no IP
    header for RED: notified, it is dropped.

    Returns
    -------
    tuple of (int, int) or None
        ``(offset, 4 or 6)``.
    """
    frame = bytes(frame)
    n = len(frame)
    if n < 14:
        return None
    off, ntags = 12, 0
    ethertype = _u16(frame, off)
    while ethertype in VLAN_TPIDS:
        if ntags == 2 or n < off + 6:
            return None
        ntags += 1
        off += 4
        ethertype = _u16(frame, off)
    off += 2
    if ethertype == ETH_PPPOE_SESSION:
        if n < off + 8 or frame[off] != 0x11 or frame[off + 1] != 0x00:
            return None
        version = {PPP_IPV4: 4, PPP_IPV6: 6}.get(_u16(frame, off + 6))
        off += 8
    else:
        version = {ETH_IPV4: 4, ETH_IPV6: 6}.get(ethertype)
    if version is None or n < off + (20 if version == 4 else 40) or frame[off] >> 4 != version:
        return None
    if version == 4 and frame[off] & 0x0F < 5:
        return None
    return off, version


def ecn_codepoint(frame):
    """The ECN field of the frame's IP header (:func:`ip_header`), or
    ``None`` without one: IPv4 TOS bits 1-0 (byte 1), IPv6 traffic class
    bits 1-0 (byte 1 bits 5-4) (RFC 3168 section 5)."""
    found = ip_header(frame)
    if found is None:
        return None
    off, version = found
    return frame[off + 1] & 3 if version == 4 else (frame[off + 1] >> 4) & 3


def checksum_update(hc, old_word, new_word):
    """IPv4 header checksum after one 16-bit header word changes, RFC 1624
    eq. 3: ``HC' = ~(~HC + ~m + m')`` in ones' complement arithmetic.

    Equal to a full recomputation when ``hc`` was right (RFC 1624 section
    3), and wrong by the same amount when it was not: a corrupted header
    stays detectably corrupted. Never gives 0xFFFF when ``new_word`` is not 0
    (a ones' complement sum with a non-zero term is never 0x0000).
    """
    total = (~hc & 0xFFFF) + (~old_word & 0xFFFF) + (new_word & 0xFFFF)
    return ~ones_complement_sum(b"", total) & 0xFFFF


def set_ce(frame):
    """``frame`` with its IP header's ECN field set to CE (0b11).

    IPv4: byte 1 of the header gets ``| 0x03`` and the header checksum
    (bytes 10-11) :func:`checksum_update` of header word 0 (RFC 3168 section
    5, RFC 1624 eq. 3). IPv6: byte 1 gets ``| 0x30``; IPv6 has no header
    checksum and the TCP/UDP pseudo-headers do not cover the traffic class
    (RFC 8200 section 8.1). Nothing else changes; a CE frame comes back as
    it is.

    Raises
    ------
    ValueError
        The frame has no IP header (:func:`ip_header`) or is Not-ECT: such a
        frame is dropped, never marked (RFC 3168 section 5).
    """
    frame = bytes(frame)
    found = ip_header(frame)
    if found is None:
        raise ValueError("frame has no IP header RED can mark (RED drops it)")
    off, version = found
    ecn = ecn_codepoint(frame)
    if ecn == ECN_NOT_ECT:
        raise ValueError("frame is Not-ECT (RED drops it)")
    if ecn == ECN_CE:
        return frame
    out = bytearray(frame)
    if version == 4:
        old = _u16(out, off)
        out[off + 1] |= 0x03
        hc = checksum_update(_u16(out, off + 10), old, _u16(out, off))
        out[off + 10:off + 12] = hc.to_bytes(2, "big")
    else:
        out[off + 1] |= 0x30
    return bytes(out)


def idle_shift_for_rate(rate_bps, *, packet_bytes=IDLE_PACKET_BYTES, f_sys_hz=F_SYS_HZ):
    """``red_idle_shift`` for an uplink of ``rate_bps``: log2 of the cycles
    ``packet_bytes`` take on it, rounded, clamped to ``MIN_IDLE_SHIFT`` .. ``MAX_IDLE_SHIFT``.

    Floyd and Jacobson (Figure 2, section 11) decay the average as if
    ``m = idle time / s`` packets had found the queue empty, ``s`` the
    transmission time of a small packet; the hardware's ``s`` is a power of
    two cycles. A ``ValueError`` names a rate that is not a positive finite
    number, a ``TypeError`` one that is not a number.
    """
    if isinstance(rate_bps, bool) or not isinstance(rate_bps, (int, float)):
        raise TypeError(f"rate must be a number of bit/s, not {rate_bps!r}")
    if not 0 < rate_bps < math.inf:
        raise ValueError(f"rate must be a positive finite number of bit/s, not {rate_bps!r}")
    _check_int("packet_bytes", packet_bytes, 1, MAX_QLEN_BYTES)
    cycles = 8 * packet_bytes * f_sys_hz / rate_bps
    return min(MAX_IDLE_SHIFT, max(MIN_IDLE_SHIFT, round(math.log2(cycles))))


# --- the block -----------------------------------------------------------------------------

def registers_for_rate(rate_bps, *, packet_bytes=1500):
    """RED's registers for an uplink of ``rate_bps``, after Adaptive RED's
    automatic settings (Floyd, Gummadi and Shenker 2001, section 4), in
    whole packets of ``packet_bytes``:

    * ``w_q = 1 - exp(-1/C)`` for ``C`` packets per second, about ``1/C``:
      the average's time constant is one second at any rate, so
      ``red_wq_shift = round(log2 C)`` (1 .. 15);
    * ``min_th`` two packets (Adaptive RED's floor is five, for links where
      five packets are milliseconds; at modem rates one packet takes
      hundreds), ``max_th = 3 min_th``, gentle, ``max_p`` 0.1 (Adaptive
      RED's fixed start; the firmware is to adapt it);
    * ``red_idle_shift`` from :func:`idle_shift_for_rate`.

    Returns ``{register: value}`` with ``red_enable`` 1.
    """
    if isinstance(rate_bps, bool) or not isinstance(rate_bps, (int, float)) or not rate_bps > 0:
        raise ValueError(f"rate must be a positive number of bit/s, not {rate_bps!r}")
    c = rate_bps / (8 * packet_bytes)
    wq = min(MAX_WQ_SHIFT, max(MIN_WQ_SHIFT, round(math.log2(c)) if c > 1 else MIN_WQ_SHIFT))
    return {"red_enable": 1, "red_min_bytes": 2 * packet_bytes, "red_max_bytes": 6 * packet_bytes,
            "red_max_p": round(0.1 * P_ONE), "red_wq_shift": wq, "red_gentle": 1,
            "red_idle_shift": idle_shift_for_rate(rate_bps)}


class Red:
    """RED on the data queue (spec section 10), one :meth:`arrive` per data frame.

    Parameters
    ----------
    min_bytes, max_bytes : int
        ``red_min_bytes`` (0 .. 2^20 - 2) and ``red_max_bytes``
        (``min_bytes + 1`` .. 2^20 - 1): the thresholds on the average, bytes.
    max_p : int
        ``red_max_p``, 0 .. 65536, in 1/65536.
    wq_shift : int
        ``red_wq_shift``, 1 .. 15: w_q = 2^-wq_shift.
    gentle : bool
        ``red_gentle``.
    idle_shift : int
        ``red_idle_shift``, 1 .. 31: one idle decay step per 2^idle_shift
        cycles of an empty queue.
    enable : bool
        ``red_enable`` (the model's default is on; the register resets to 0).
    seed : int
        Reset value of the xorshift32 state, 1 .. 2^32 - 1 (0 would stay 0).

    A ``ValueError`` names a value outside its range and the range, a
    ``TypeError`` a value of the wrong type.

    Attributes
    ----------
    avg_q16 : int
        The average queue length, bytes times 2^16 (starts 0).
    count : int
        Frames not notified since the last notification while the average
        was ``"early"`` (starts 0; 0 below min_th and after a notification).
    prng : int
        The xorshift32 state.
    counters : dict
        ``RED_COUNTERS`` by name.
    """

    def __init__(self, *, min_bytes, max_bytes, max_p, wq_shift, gentle, idle_shift, enable=True,
                 seed=RED_PRNG_SEED):
        self.min_bytes = _check_int("min_bytes", min_bytes, *_REG["red_min_bytes"], " (bytes)")
        self.max_bytes = _check_int("max_bytes", max_bytes, min_bytes + 1, _REG["red_max_bytes"][1],
                                    " (bytes, above min_bytes)")
        self.max_p = _check_int("max_p", max_p, *_REG["red_max_p"], " (in 1/65536)")
        self.wq_shift = _check_int("wq_shift", wq_shift, MIN_WQ_SHIFT, MAX_WQ_SHIFT)
        self.gentle = _check_bool("gentle", gentle)
        self.idle_shift = _check_int("idle_shift", idle_shift, MIN_IDLE_SHIFT, MAX_IDLE_SHIFT)
        self.enable = _check_bool("enable", enable)
        self.prng = _check_int("seed", seed, 1, 0xFFFF_FFFF, " (0 is a fixed point of xorshift32)")
        self.avg_q16 = 0
        self.count = 0
        self.idle_since = 0          # cycle the data queue last became empty (reset: 0)
        self.idle_steps = 0          # idle decay steps applied since then
        self.now = 0                 # latest cycle seen
        self.counters = {c.name: 0 for c in RED_COUNTERS}

    @property
    def avg_bytes(self):
        """The average in whole bytes, what the thresholds are compared with."""
        return self.avg_q16 >> AVG_FRAC_BITS

    def _advance(self, now_cycles):
        if isinstance(now_cycles, bool) or not isinstance(now_cycles, int):
            raise TypeError(f"now_cycles must be an integer number of cycles, not {now_cycles!r}")
        if now_cycles < self.now:
            raise ValueError(f"now_cycles must be {self.now} (the latest cycle given) or later, "
                             f"not {now_cycles!r}")
        self.now = now_cycles

    def emptied(self, now_cycles):
        """The data queue's occupancy fell to 0 at ``now_cycles``.

        Call it whenever that happens (a departure freed the last queued
        frame): the idle period, and its decay, start here. At reset the
        queue is empty since cycle 0.
        """
        self._advance(now_cycles)
        self.idle_since = now_cycles
        self.idle_steps = 0

    def arrive(self, frame, qlen_bytes, now_cycles, *, exempt=False):
        """Decide for one data frame arriving at the data queue.

        1. The average: if ``qlen_bytes`` is 0, the idle decay steps due
           since the queue became empty, ``((now - idle_since) >>
           idle_shift)`` of them in all, less those already applied in this
           idle period (:func:`idle_decay`); else :func:`ewma_step` with
           ``qlen_bytes``.
        2. The random number: ``prng = xorshift32(prng)``, ``rand16 = prng
           >> 16`` (every arrival, whatever follows).
        3. Exempt (``exempt``: with flow queues, the frame's flow has no
           data queued, spec section 12): pass, ``count`` unchanged.
           Off (``enable`` 0): pass, ``count = 0``. Else by
           :func:`region` of ``avg_q16 >> 16``: ``"below"`` passes with
           ``count = 0``; ``"forced"`` notifies; ``"early"`` notifies if
           :func:`early_notify` (``rand16``, ``count``, :func:`pb_terms`),
           else passes with ``count = min(count + 1, COUNT_MAX)``. A
           notification sets ``count = 0``.
        4. A frame notified in the early region: ECT(0) or ECT(1) is
           marked CE (:func:`set_ce`, ``red_marked``); CE leaves as it is
           (``red_marked``, ``red_ce_already``); Not-ECT or no IP header is
           dropped (``drop_red``). A frame notified in the forced region is
           dropped whatever its ECN field (``drop_red``): a sender that
           ignores the marks cannot hold the queue there, where every
           Not-ECT frame, its own retransmissions among them, would be lost.

        Parameters
        ----------
        frame : bytes
            The frame without preamble and FCS.
        qlen_bytes : int
            The data queue's occupancy in bytes before this frame is stored,
            0 .. 2^20 - 1.
        now_cycles : int
            The cycle of the decision; never earlier than the latest one
            given to :meth:`arrive` or :meth:`emptied`.
        exempt : bool
            Never notify this frame (its average and random number are
            taken all the same).

        Returns
        -------
        tuple of (str, bytes)
            ``("pass", frame)``, ``("mark", frame with CE)`` (CE frames
            unchanged) or ``("drop", frame)``.
        """
        frame = bytes(frame)
        _check_int("qlen_bytes", qlen_bytes, 0, MAX_QLEN_BYTES, " (bytes)")
        self._advance(now_cycles)
        if qlen_bytes == 0:
            due = (now_cycles - self.idle_since) >> self.idle_shift
            self.avg_q16 = idle_decay(self.avg_q16, due - self.idle_steps, self.wq_shift)
            self.idle_steps = due
        else:
            self.avg_q16 = ewma_step(self.avg_q16, qlen_bytes, self.wq_shift)
        self.prng = xorshift32(self.prng)
        rand16 = self.prng >> (32 - P_FRAC_BITS)
        if exempt:
            return "pass", frame

        where = region(self.avg_bytes, min_bytes=self.min_bytes, max_bytes=self.max_bytes,
                       gentle=self.gentle) if self.enable else "below"
        if where == "below":
            self.count = 0
            return "pass", frame
        if where == "early":
            num, den = pb_terms(self.avg_bytes, min_bytes=self.min_bytes,
                                max_bytes=self.max_bytes, max_p=self.max_p)
            if not early_notify(rand16, self.count, num, den):
                self.count = min(self.count + 1, COUNT_MAX)
                return "pass", frame
        self.count = 0
        ecn = ecn_codepoint(frame)
        if ecn is None or ecn == ECN_NOT_ECT or where == "forced":
            self.counters["drop_red"] += 1
            return "drop", frame
        self.counters["red_marked"] += 1
        if ecn == ECN_CE:
            self.counters["red_ce_already"] += 1
        return "mark", set_ce(frame)
