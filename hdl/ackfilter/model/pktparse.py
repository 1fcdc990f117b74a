"""Frame classifier of the golden model (``docs/spec.md`` section 2).

A plain byte parser written from the spec text, independent of Scapy and of the
gateware: it decides whether a frame is a ``runt``, ``oversize``, a pure TCP
``ack`` or ``data``; for a pure ACK it decides whether it is *eligible* (may
supersede or be superseded) and extracts what the ACK queue needs (ack
number, option summary, ECN bits and the ``supersedable`` bit). Every frame,
whatever its class, gets its flow key and tag (:func:`flow_key`).

Frames are given without preamble and FCS, exactly as the core sees them.
"""

from dataclasses import dataclass, field

from ..params import ACK_SLOT_BYTES, MAX_FRAME_BYTES
from ..protocol import (ACCECN_HI_SPAN, ACE_LIMIT, SANE_SPAN, TCP_ACK, TCP_CWR, TCP_ECE, TCP_FIN, TCP_PSH,
                        TCP_RST, TCP_SYN, TCP_URG)
from ..flowkey import PORT_PROTOCOLS, TPID_CODES, flow_key_words, flow_tag

__all__ = [
    "MAX_FRAME_BYTES", "ACK_SLOT_BYTES", "VLAN_TPIDS", "Parsed", "classify",
    "before", "after", "serial_lt", "sack_block_sane", "parse_pure_ack", "flow_key", "ip_packet_length",
    "ones_complement_sum", "SANE_SPAN", "tcp_options", "MalformedOption",
    "OPT_ACCECN0", "OPT_ACCECN1", "ACCECN_LENGTHS", "ACCECN_FIELDS", "ACCECN_HI_SPAN", "ACE_LIMIT",
]

#: TPIDs accepted for each of up to two VLAN tags (spec section 2 rule 1).
VLAN_TPIDS = tuple(TPID_CODES)

ETH_IPV4 = 0x0800
ETH_IPV6 = 0x86DD
ETH_PPPOE_SESSION = 0x8864
PPP_IPV4 = 0x0021
PPP_IPV6 = 0x0057


OPT_EOL, OPT_NOP, OPT_SACK, OPT_TS = 0, 1, 5, 8
SACK_LENGTHS = (10, 18, 26, 34)

#: The AccECN options (RFC 9768 section 3.2.3): kind 172 (AccECN0) carries
#: the byte counters in the order EE0B, ECEB, EE1B, kind 174 (AccECN1) in the
#: order EE1B, ECEB, EE0B; each is 24 bits, and an option may be cut short
#: from its end (length 2, 5, 8 or 11: 0 to 3 counters).
OPT_ACCECN0, OPT_ACCECN1 = 172, 174
ACCECN_LENGTHS = (2, 5, 8, 11)
#: The counters in the order :attr:`Parsed.accecn` holds them: bit ``i`` of
#: :attr:`Parsed.accecn_mask` says counter ``i`` was present.
ACCECN_FIELDS = ("e0b", "ceb", "e1b")
_ACCECN_ORDER = {OPT_ACCECN0: (0, 1, 2), OPT_ACCECN1: (2, 1, 0)}



def before(a, b):
    """RFC 1982 serial arithmetic as in the spec: ``(a - b) mod 2^32 >= 2^31``.

    Exactly 2^31 apart (undefined in RFC 1982), each is before the other: the
    tests that use it ("not after") then refuse, which is the safe side.
    """
    return ((a - b) & 0xFFFF_FFFF) >= 0x8000_0000


def after(a, b):
    """``before(b, a)``."""
    return before(b, a)


def serial_lt(a, b):
    """``a`` is certainly before ``b``: ``0 < (b - a) mod 2^32 < 2^31``.

    The strict form for tests that *allow* something (a greater ack, a
    well-formed block): exactly 2^31 apart is refused.
    """
    return 0 < ((b - a) & 0xFFFF_FFFF) < 0x8000_0000


def sack_block_sane(start, end, ack):
    """``0 <= start - ack < end - ack < SANE_SPAN`` (mod 2^32): the block is
    well formed and lies wholly above ``ack``, within ``SANE_SPAN``."""
    ds, de = (start - ack) & 0xFFFF_FFFF, (end - ack) & 0xFFFF_FFFF
    return ds < de < SANE_SPAN


def ones_complement_sum(data, initial=0):
    """RFC 1071 ones'-complement sum of 16-bit big-endian words (an odd last
    byte is padded with zero), folded to 16 bits."""
    data = bytes(data)
    if len(data) % 2:
        data += b"\0"
    total = initial + sum(int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


@dataclass
class Parsed:
    """What the classifier learned about one frame.

    ``cls`` is the class the core gives the frame in the mode it was classified
    for; ``pure_ack`` says whether the frame is a pure ACK by the rules of
    section 2 whatever the mode (it feeds ``acks_in``), ``eligible`` whether
    that pure ACK may supersede or be superseded. ``key`` and ``tag`` are
    every frame's (:func:`flow_key`), ``runt`` and ``oversize`` included. The
    remaining fields are filled only when ``pure_ack`` is true (the option
    fields only when ``eligible``). ``reason`` is a short human-readable note why a frame is
    not a pure ACK, or why a pure ACK is not eligible.
    """

    cls: str
    length: int
    pure_ack: bool = False
    eligible: bool = False
    reason: str = ""
    key: tuple = None
    tag: int = 0
    ack: int = 0
    seq: int = 0
    tsval: int = 0
    tsecr: int = 0
    has_ts: bool = False
    sack: list = field(default_factory=list)
    other_opts: bool = False
    ece: bool = False
    cwr: bool = False
    ae: bool = False
    ecn: int = 0
    supersedable: bool = False
    accecn_opt: bool = False    # an AccECN option (kind 172 or 174) is present
    accecn_mask: int = 0        # which of ACCECN_FIELDS it carries
    accecn: tuple = (0, 0, 0)   # EE0B, ECEB, EE1B (0 where absent)

    @property
    def sack_n(self):
        return len(self.sack)

    @property
    def ace(self):
        """The three bits AE, CWR, ECE as one number (RFC 9768's ACE field)."""
        return (self.ae << 2) | (self.cwr << 1) | self.ece


class _NotPureAck(Exception):
    pass


class _Ineligible(Exception):
    pass


def _u16(b, i):
    return (b[i] << 8) | b[i + 1]


def _u32(b, i):
    return int.from_bytes(b[i:i + 4], "big")


def _need(frame, end, what):
    if len(frame) < end:
        raise _NotPureAck(f"frame ends inside the {what}")


def _supersedable(p):
    """First bullet of "Supersedable" (spec section 3): depends on the ACK alone."""
    if not p.eligible or p.other_opts:
        return False
    if not all(sack_block_sane(s, e, p.ack) for s, e in p.sack):
        return False          # malformed, below the ack (a D-SACK, RFC 2883) or far above it
    if len(p.sack) >= 2:
        (s0, e0), (s1, e1) = p.sack[0], p.sack[1]
        if not before(s0, s1) and not after(e0, e1):   # D-SACK inside block 1
            return False
    return True


class MalformedOption(ValueError):
    """A TCP option the walk cannot step over (spec section 2 rule 6)."""


def tcp_options(frame, i, end):
    """``(offset, kind, length)`` of each TCP option in ``frame[i:end]``,
    up to EOL (not included); a NOP has length 1. Raises
    :class:`MalformedOption` for an option whose length byte is missing,
    below 2 or runs past ``end``."""
    while i < end:
        kind = frame[i]
        if kind == OPT_EOL:
            return
        if kind == OPT_NOP:
            yield i, kind, 1
            i += 1
            continue
        if i + 1 >= end:
            raise MalformedOption(f"option {kind} has no length byte")
        length = frame[i + 1]
        if length < 2:
            raise MalformedOption(f"option {kind} length {length} < 2")
        if i + length > end:
            raise MalformedOption(f"option {kind} runs past the TCP header")
        yield i, kind, length
        i += length


def _walk_options(frame, p, i, end):
    """Rule 6 of eligibility: fills the option summary; raises ``_Ineligible``."""
    try:
        for i, kind, length in tcp_options(frame, i, end):
            if kind == OPT_NOP:
                continue
            if kind == OPT_TS:
                if length != 10:
                    raise _Ineligible(f"timestamps option length {length}")
                if p.has_ts:
                    raise _Ineligible("second timestamps option")
                p.has_ts = True
                p.tsval, p.tsecr = _u32(frame, i + 2), _u32(frame, i + 6)
            elif kind == OPT_SACK:
                if length not in SACK_LENGTHS:
                    raise _Ineligible(f"SACK option length {length}")
                if p.sack:
                    raise _Ineligible("second SACK option")
                p.sack = [(_u32(frame, j), _u32(frame, j + 4)) for j in range(i + 2, i + length, 8)]
            elif kind in _ACCECN_ORDER:
                if length not in ACCECN_LENGTHS:
                    raise _Ineligible(f"AccECN option length {length}")
                if p.accecn_opt:
                    raise _Ineligible("second AccECN option")
                p.accecn_opt = True
                counts = [0, 0, 0]
                for k, field_index in enumerate(_ACCECN_ORDER[kind][:(length - 2) // 3]):
                    j = i + 2 + 3 * k
                    counts[field_index] = int.from_bytes(frame[j:j + 3], "big")
                    p.accecn_mask |= 1 << field_index
                p.accecn = tuple(counts)
            else:
                p.other_opts = True
    except MalformedOption as e:
        raise _Ineligible(str(e)) from None


def parse_pure_ack(frame):
    """Parse ``frame`` as a pure ACK by rules 1-5 of section 2 and decide its
    eligibility.

    Returns a :class:`Parsed` with ``cls="ack"`` (without its flow key:
    :func:`classify` adds it) or raises ``_NotPureAck`` (internal; use
    :func:`classify`).
    """
    n = len(frame)
    # Rule 1: Ethernet II, up to two VLAN tags, IPv4/IPv6/PPPoE session.
    _need(frame, 14, "Ethernet header")
    off = 12
    ethertype = _u16(frame, off)
    tags = []
    while ethertype in VLAN_TPIDS:
        if len(tags) == 2:
            raise _NotPureAck("third VLAN tag")
        _need(frame, off + 6, "VLAN tag")
        tags.append((ethertype, _u16(frame, off + 2) & 0x0FFF))
        off += 4
        ethertype = _u16(frame, off)
    off += 2                                  # first byte after the EtherType
    pppoe = pppoe_len = None
    if ethertype == ETH_PPPOE_SESSION:
        _need(frame, off + 8, "PPPoE header")
        if frame[off] != 0x11:
            raise _NotPureAck("PPPoE ver/type is not 1/1")
        if frame[off + 1] != 0x00:
            raise _NotPureAck("PPPoE code is not 0 (session data)")
        pppoe = _u16(frame, off + 2)
        pppoe_len = _u16(frame, off + 4)
        proto = _u16(frame, off + 6)
        off += 8
        if proto == PPP_IPV4:
            ip_version = 4
        elif proto == PPP_IPV6:
            ip_version = 6
        else:
            raise _NotPureAck(f"PPP protocol 0x{proto:04x}")
    elif ethertype == ETH_IPV4:
        ip_version = 4
    elif ethertype == ETH_IPV6:
        ip_version = 6
    else:
        raise _NotPureAck(f"EtherType 0x{ethertype:04x}")

    ip = off
    ineligible = []                           # reasons, checked once the key is known
    if ip_version == 4:
        # Rule 2: IPv4.
        _need(frame, ip + 20, "IPv4 header")
        if frame[ip] >> 4 != 4:
            raise _NotPureAck("IP version is not 4")
        ihl = frame[ip] & 0x0F
        if ihl < 5:
            raise _NotPureAck("IHL < 5")
        total = _u16(frame, ip + 2)
        frag = _u16(frame, ip + 6)
        if frag & 0x2000 or frag & 0x1FFF:
            raise _NotPureAck("IPv4 fragment")
        if frame[ip + 9] != 6:
            raise _NotPureAck("IP protocol is not TCP")
        if total < 4 * ihl + 20:
            raise _NotPureAck("IPv4 total length < 4*IHL + 20")
        _need(frame, ip + 4 * ihl, "IPv4 options")
        if ihl != 5:
            ineligible.append("IPv4 options")
        elif ones_complement_sum(frame[ip:ip + 20]) != 0xFFFF:
            ineligible.append("IPv4 header checksum")
        ecn = frame[ip + 1] & 3
        src, dst = bytes(frame[ip + 12:ip + 16]), bytes(frame[ip + 16:ip + 20])
        tcp = ip + 4 * ihl
        ip_payload = total - 4 * ihl
        ip_end = ip + total
    else:
        # Rule 3: IPv6, TCP directly.
        _need(frame, ip + 40, "IPv6 header")
        if frame[ip] >> 4 != 6:
            raise _NotPureAck("IP version is not 6")
        if frame[ip + 6] != 6:
            raise _NotPureAck("IPv6 next header is not TCP")
        ip_payload = _u16(frame, ip + 4)
        if ip_payload < 20:
            raise _NotPureAck("IPv6 payload length < 20")
        ecn = (_u16(frame, ip) >> 4) & 3
        src, dst = bytes(frame[ip + 8:ip + 24]), bytes(frame[ip + 24:ip + 40])
        tcp = ip + 40
        ip_end = ip + 40 + ip_payload

    # Rule 4: the whole IP packet is in the frame.
    if n < ip_end:
        raise _NotPureAck("frame shorter than its IP packet")

    # Rule 3 (TCP): header, no payload, ACK set, SYN/FIN/RST clear.
    doff = frame[tcp + 12] >> 4
    if doff < 5:
        raise _NotPureAck("TCP data offset < 5")
    if 4 * doff > ip_payload:
        raise _NotPureAck("TCP header longer than the IP payload")
    if ip_payload - 4 * doff != 0:
        raise _NotPureAck("TCP payload")
    flags = frame[tcp + 13]
    if not flags & TCP_ACK:
        raise _NotPureAck("ACK flag clear")
    if flags & (TCP_FIN | TCP_SYN | TCP_RST):
        raise _NotPureAck("FIN, SYN or RST set")

    p = Parsed(cls="ack", length=n, pure_ack=True)
    p.seq = _u32(frame, tcp + 4)
    p.ack = _u32(frame, tcp + 8)
    p.ece = bool(flags & TCP_ECE)
    p.cwr = bool(flags & TCP_CWR)
    p.ae = bool(frame[tcp + 12] & 0x01)
    p.ecn = ecn

    # Eligibility (spec section 2, "Eligible"), in the order the reasons are given.
    if flags & (TCP_PSH | TCP_URG):
        ineligible.append("PSH or URG set")
    if frame[tcp + 12] & 0x0E:
        ineligible.append("TCP reserved bits set")
    if not (n == ip_end or n <= 64 + 4 * len(tags)):
        ineligible.append("bytes after the IP packet that are not Ethernet padding")
    if pppoe_len is not None and pppoe_len != ip_end - ip + 2:
        ineligible.append("PPPoE length does not match the IP packet")
    pseudo = src + dst + bytes([0, 6]) + (4 * doff).to_bytes(2, "big")
    if ones_complement_sum(frame[tcp:tcp + 4 * doff], ones_complement_sum(pseudo)) != 0xFFFF:
        ineligible.append("TCP checksum")
    try:
        _walk_options(frame, p, tcp + 20, tcp + 4 * doff)
    except _Ineligible as e:
        ineligible.append(f"malformed options: {e}")
    p.eligible = not ineligible
    p.reason = "; ".join(ineligible)
    p.supersedable = _supersedable(p)
    return p


def flow_key(frame):
    """The flow key words of any frame (``docs/spec.md`` section 2, "Flow
    key"; :mod:`.flowkey` packs them).

    The L2 header is read as for a pure ACK (rule 1): a VLAN tag counts when
    the frame holds it and the EtherType after it, at most two do (a third
    ends the L2 parse); a PPPoE session header counts when the frame holds
    its first four bytes with ver/type 0x11 and code 0, and says IP when it
    holds the PPP protocol too and that is 0x0021 or 0x0057. From the IP
    header on, every field is read from a whole 4-byte word of the header it
    is in (the IP header's words 0-4 / 0-9, the transport header's word 0),
    and a word the frame does not hold entirely reads as 0: a frame cut
    short loses the fields from there on, never the ones before.
    """
    frame = bytes(frame)
    n = len(frame)
    if n < 14:
        return flow_key_words()

    def word(i):
        return frame[i:i + 4] if n >= i + 4 else bytes(4)

    off, tags = 12, []
    ethertype = _u16(frame, off)
    while ethertype in VLAN_TPIDS:
        if len(tags) == 2 or n < off + 6:          # a third tag, or one cut short: not IP
            return flow_key_words(tags=tags)
        tags.append((ethertype, _u16(frame, off + 2) & 0x0FFF))
        off += 4
        ethertype = _u16(frame, off)
    ip = off + 2
    pppoe = version = None
    if ethertype == ETH_PPPOE_SESSION:
        if n >= ip + 4 and frame[ip] == 0x11 and frame[ip + 1] == 0x00:
            pppoe = _u16(frame, ip + 2)
            if n >= ip + 8:
                version = {PPP_IPV4: 4, PPP_IPV6: 6}.get(_u16(frame, ip + 6))
        ip += 8
    else:
        version = {ETH_IPV4: 4, ETH_IPV6: 6}.get(ethertype)
    l2 = dict(tags=tags, pppoe_session=pppoe, ipv6=version == 6)
    head = word(ip)
    if version is None or n < ip + 4 or head[0] >> 4 != version or (version == 4 and head[0] & 0x0F < 5):
        return flow_key_words(**l2)
    if version == 4:
        proto = word(ip + 8)[1]
        frag = _u16(word(ip + 4), 2) & 0x3FFF          # MF and the fragment offset
        src, dst = word(ip + 12), word(ip + 16)
        l4 = ip + 4 * (head[0] & 0x0F)                 # after the options
    else:
        proto, frag = word(ip + 4)[2], 0
        src = b"".join(word(ip + 8 + 4 * i) for i in range(4))
        dst = b"".join(word(ip + 24 + 4 * i) for i in range(4))
        l4 = ip + 40                                   # the next header is the transport's
    ports = word(l4) if proto in PORT_PROTOCOLS and not frag else b""
    return flow_key_words(**l2, ip=True, proto=proto, src=src, dst=dst, ports=ports)


def ip_packet_length(frame):
    """Length of the IP packet a frame carries, as the shaper's link accounting
    charges it (``docs/spec.md`` section 6, "IP packet length").

    The L2 header is the 14-byte Ethernet header, 4 bytes per leading VLAN
    tag (at most two are counted) and 8 bytes of PPPoE session header and PPP
    protocol (EtherType 0x8864, ver/type 0x11, code 0). When an IPv4 header
    (PPP protocol 0x0021 or EtherType 0x0800, version 4) announces a total
    length of at least 20 bytes, or an IPv6 header (0x0057 or 0x86DD,
    version 6) a payload length, and that packet ends inside the frame, the
    announced length is the answer (Ethernet padding is not charged);
    otherwise it is whatever follows the L2 header.
    """
    frame = bytes(frame)
    n = len(frame)
    if n < 14:
        return 0
    off, ntags = 12, 0
    ethertype = _u16(frame, off)
    while ethertype in VLAN_TPIDS and ntags < 2 and n >= off + 6:
        ntags += 1
        off += 4
        ethertype = _u16(frame, off)
    l2 = off + 2
    if ethertype in VLAN_TPIDS:                 # a third tag, or a tag cut short
        return max(0, n - l2)
    version = None
    if ethertype == ETH_PPPOE_SESSION:
        if n >= l2 + 4 and frame[l2] == 0x11 and frame[l2 + 1] == 0x00:
            l2 += 8
            if n >= l2:
                proto = _u16(frame, l2 - 2)
                version = {PPP_IPV4: 4, PPP_IPV6: 6}.get(proto)
    else:
        version = {ETH_IPV4: 4, ETH_IPV6: 6}.get(ethertype)
    if version == 4 and n >= l2 + 4 and frame[l2] >> 4 == 4:
        total = _u16(frame, l2 + 2)
        if total >= 20 and l2 + total <= n:
            return total
    elif version == 6 and n >= l2 + 8 and frame[l2] >> 4 == 6:
        total = 40 + _u16(frame, l2 + 4)
        if l2 + total <= n:
            return total
    return max(0, n - l2)


def classify(frame, *, ack_mode, slot_bytes=ACK_SLOT_BYTES, max_frame=MAX_FRAME_BYTES):
    """Classify one frame (spec section 2).

    Parameters
    ----------
    frame : bytes
        The frame without preamble and FCS.
    ack_mode : int
        0 off, 1 conservative, 2 aggressive (``params.ACK_FILTER_MODES``). In
        mode 0 a pure ACK is classed ``data`` but still has ``pure_ack`` set.
    slot_bytes, max_frame : int
        ACK slot size (rule 5) and ``MAX_FRAME_BYTES``.

    Returns
    -------
    Parsed
    """
    frame = bytes(frame)
    p = _classify(frame, ack_mode=ack_mode, slot_bytes=slot_bytes, max_frame=max_frame)
    p.key = flow_key(frame)
    p.tag = flow_tag(p.key)
    return p


def _classify(frame, *, ack_mode, slot_bytes, max_frame):
    n = len(frame)
    if n < 14:
        return Parsed(cls="runt", length=n, reason="shorter than 14 bytes")
    if n > max_frame:
        return Parsed(cls="oversize", length=n, reason=f"longer than {max_frame} bytes")
    try:
        p = parse_pure_ack(frame)
    except _NotPureAck as e:
        return Parsed(cls="data", length=n, reason=str(e))
    if n > slot_bytes:
        return Parsed(cls="data", length=n, reason=f"pure ACK longer than a {slot_bytes}-byte slot")
    if ack_mode == 0:
        p.cls = "data"
        p.reason = "ACK filter off"
    return p
