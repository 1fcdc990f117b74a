"""Segmenter of the golden model (``docs/spec.md`` section 9).

At dequeue, a TCP segment whose payload is longer than ``chunk_bytes``
leaves as several valid TCP segments (*chunks*), each carrying at most
``chunk_bytes`` of the payload, in order, so that an ACK waits at most one
chunk time behind data on a slow uplink (Lakshman, Madhow and Suter 2000
recommend cutting reverse-path data into small units). ``chunk_bytes == 0``
is off. A frame that cannot or must not be cut leaves whole, byte for byte;
:func:`why_whole` says why.

The TCP checksum of a chunk is computed as the hardware computes it, without
a second pass over the payload: while a frame is written to the data ring
the hardware adds up the payload in blocks of ``SEGMENT_BLOCK_BYTES``
aligned to the payload's first byte (:func:`payload_block_sums`) and the
fixed part of the TCP header (:class:`WriteSums`); at dequeue it adds the
sums of the blocks a chunk covers to the chunk's pseudo-header and the header
fields that change (:func:`chunk_tcp_checksum`). ``chunk_bytes`` is a
multiple of the block, so every chunk is a whole number of blocks (only the
payload's last block may be short) and every block starts at an even offset
of its segment: the 16-bit words of a block sum are the words of the
checksum.

Frames are given without preamble and FCS, exactly as the core sees them.
"""

from dataclasses import dataclass

from ..protocol import MAX_CHUNK_BYTES, MIN_FRAME_BYTES, SEGMENT_BLOCK_BYTES, TCP_PROTOCOL
from .pktparse import (ETH_IPV4, ETH_IPV6, ETH_PPPOE_SESSION, OPT_NOP, PPP_IPV4, PPP_IPV6, TCP_CWR,
                       TCP_FIN, TCP_PSH, TCP_RST, TCP_SYN, TCP_URG, VLAN_TPIDS, MalformedOption,
                       ones_complement_sum, tcp_options)

__all__ = [
    "SEGMENT_BLOCK_BYTES", "MAX_CHUNK_BYTES", "MIN_FRAME_BYTES", "check_chunk_bytes",
    "payload_block_sums", "WriteSums", "chunk_tcp_checksum", "chunk_flags", "why_whole", "segment",
    "SegInfo", "seg_info", "swap16", "lane_block_sums",
]



TCP_OPT_MD5 = 19                  # RFC 2385: signature over the segment and its payload
TCP_OPT_AO = 29                   # RFC 5925: MAC over the segment and its payload


def check_chunk_bytes(chunk_bytes):
    """Return ``chunk_bytes`` if it is a valid chunk size, else raise.

    Valid: 0 (off), or a multiple of ``SEGMENT_BLOCK_BYTES`` from
    ``SEGMENT_BLOCK_BYTES`` to ``MAX_CHUNK_BYTES``. A ``ValueError`` names
    the value and that range; a ``TypeError`` a value that is not an integer.
    """
    if isinstance(chunk_bytes, bool) or not isinstance(chunk_bytes, int):
        raise TypeError(f"chunk_bytes must be an integer number of bytes, not {chunk_bytes!r}")
    if chunk_bytes != 0 and not (SEGMENT_BLOCK_BYTES <= chunk_bytes <= MAX_CHUNK_BYTES
                                 and chunk_bytes % SEGMENT_BLOCK_BYTES == 0):
        raise ValueError(f"chunk_bytes must be 0 (off) or a multiple of {SEGMENT_BLOCK_BYTES} "
                         f"from {SEGMENT_BLOCK_BYTES} to {MAX_CHUNK_BYTES}, not {chunk_bytes!r}")
    return chunk_bytes


def _fold(total):
    """End-around carry of a sum of 16-bit words down to 16 bits (RFC 1071)."""
    return ones_complement_sum(b"", total)


def payload_block_sums(payload):
    """Ones'-complement sum (RFC 1071, folded to 16 bits) of each block of
    ``SEGMENT_BLOCK_BYTES`` of ``payload``, the first starting at its first
    byte. Only the last block may be short; an odd last byte is padded with
    zero, as the checksum pads the end of a segment.

    This is what the hardware accumulates, one block at a time, while the
    frame is written to the data ring.
    """
    payload = bytes(payload)
    return tuple(ones_complement_sum(payload[i:i + SEGMENT_BLOCK_BYTES])
                 for i in range(0, len(payload), SEGMENT_BLOCK_BYTES))


@dataclass(frozen=True)
class WriteSums:
    """The ones'-complement sums gathered while a frame is written.

    Attributes
    ----------
    addr_sum : int
        Source and destination address of the pseudo-header (RFC 9293
        section 3.1; RFC 8200 section 8.1 for IPv6).
    header_sum : int
        The TCP header, options included, with the sequence number, the
        data-offset/flags word and the checksum taken as zero: the part
        every chunk shares.
    block_sums : tuple of int
        :func:`payload_block_sums` of the payload.
    payload_bytes : int
        Length of the payload.
    """

    addr_sum: int
    header_sum: int
    block_sums: tuple
    payload_bytes: int


def _chunk_sum(sums, *, tcp_header_bytes, seq, offset_flags, start, length):
    """Folded sum of a chunk's pseudo-header and segment, checksum field zero."""
    b = SEGMENT_BLOCK_BYTES
    end = start + length
    if start % b or not 0 <= start <= end <= sums.payload_bytes:
        raise ValueError(f"a chunk must start at a multiple of {b} within the payload "
                         f"(0..{sums.payload_bytes}), not {start!r} (length {length!r})")
    if end % b and end != sums.payload_bytes:
        raise ValueError(f"a chunk must end at a multiple of {b} or at the payload's end "
                         f"({sums.payload_bytes}), not {end!r}")
    total = (sums.addr_sum + TCP_PROTOCOL + tcp_header_bytes + length
             + sums.header_sum + (seq >> 16) + (seq & 0xFFFF) + offset_flags
             + sum(sums.block_sums[start // b:(end + b - 1) // b]))
    return _fold(total)


def chunk_tcp_checksum(sums, *, tcp_header_bytes, seq, offset_flags, start, length):
    """TCP checksum of the chunk carrying payload bytes ``start`` to
    ``start + length`` (RFC 9293 section 3.1, summed as RFC 1071 allows: in
    any order, in parts).

    ``fold(pseudo-header + header + sum of the chunk's block sums)``,
    complemented; the pseudo-header's TCP length is ``tcp_header_bytes +
    length``, the header's changing words are the chunk's sequence number
    ``seq`` and its data-offset/flags word ``offset_flags`` (bytes 12-13).

    Parameters
    ----------
    sums : WriteSums
    tcp_header_bytes, seq, offset_flags, start, length : int
        ``start`` must be a multiple of ``SEGMENT_BLOCK_BYTES``, and
        ``start + length`` one too or the payload's end (else ``ValueError``).

    Returns
    -------
    int
        The 16-bit checksum field.
    """
    return ~_chunk_sum(sums, tcp_header_bytes=tcp_header_bytes, seq=seq, offset_flags=offset_flags,
                       start=start, length=length) & 0xFFFF


def chunk_flags(flags, index, count):
    """TCP flags byte (byte 13) of chunk ``index`` of ``count``: FIN and PSH
    only on the last chunk, the others (ACK, ECE) on every chunk (URG, SYN,
    RST and CWR are never cut: :func:`why_whole`). The AE and reserved bits
    of byte 12 are copied unchanged."""
    if index != count - 1:
        flags &= ~(TCP_FIN | TCP_PSH)
    return flags


class _Whole(Exception):
    """The frame leaves whole; the message says why."""


@dataclass(frozen=True)
class _Layout:
    pppoe: int            # offset of the PPPoE session header, or None
    ip: int               # offset of the IP header
    ip_version: int
    tcp: int              # offset of the TCP header
    payload: int          # offset of the TCP payload (the IP packet ends sums.payload_bytes later)
    sums: WriteSums


def _u16(b, i):
    return int.from_bytes(b[i:i + 2], "big")


def _need(frame, end, what):
    if len(frame) < end:
        raise _Whole(f"frame ends inside the {what}")


def _option_kinds(frame, start, end):
    """Kinds of the TCP options in ``frame[start:end]`` (NOP and EOL aside);
    a malformed option makes the frame malformed: whole."""
    try:
        return {kind for _i, kind, _n in tcp_options(frame, start, end) if kind != OPT_NOP}
    except MalformedOption as e:
        raise _Whole(f"malformed TCP {e}") from None


def _layout(frame):
    """Offsets and write sums of a TCP segment the segmenter may cut, whatever
    its payload length; raises ``_Whole`` for every other frame."""
    _need(frame, 14, "Ethernet header")
    off, ntags = 12, 0
    ethertype = _u16(frame, off)
    while ethertype in VLAN_TPIDS:
        if ntags == 2:
            raise _Whole("third VLAN tag")
        _need(frame, off + 6, "VLAN tag")
        ntags += 1
        off += 4
        ethertype = _u16(frame, off)
    off += 2
    pppoe = None
    if ethertype == ETH_PPPOE_SESSION:
        _need(frame, off + 8, "PPPoE header")
        if frame[off] != 0x11 or frame[off + 1] != 0x00:
            raise _Whole("PPPoE ver/type is not 1/1 or code is not 0 (session data)")
        proto = _u16(frame, off + 6)
        version = {PPP_IPV4: 4, PPP_IPV6: 6}.get(proto)
        if version is None:
            raise _Whole(f"PPP protocol 0x{proto:04x} is not IPv4 or IPv6")
        pppoe, off = off, off + 8
    else:
        version = {ETH_IPV4: 4, ETH_IPV6: 6}.get(ethertype)
        if version is None:
            raise _Whole(f"EtherType 0x{ethertype:04x} is not IPv4, IPv6 or PPPoE session")

    ip = off
    if version == 4:
        _need(frame, ip + 20, "IPv4 header")
        if frame[ip] >> 4 != 4:
            raise _Whole("IP version is not 4")
        ihl = 4 * (frame[ip] & 0x0F)
        if ihl < 20:
            raise _Whole("IPv4 IHL < 5")
        _need(frame, ip + ihl, "IPv4 options")
        if ones_complement_sum(frame[ip:ip + ihl]) != 0xFFFF:
            raise _Whole("IPv4 header checksum is wrong")
        frag = _u16(frame, ip + 6)
        if frag & 0x2000 or frag & 0x1FFF:
            raise _Whole("IPv4 fragment (MF set or fragment offset not 0)")
        if frame[ip + 9] != TCP_PROTOCOL:
            raise _Whole("IP protocol is not TCP")
        total = _u16(frame, ip + 2)
        if total < ihl + 20:
            raise _Whole("IPv4 total length < 4*IHL + 20")
        tcp, end = ip + ihl, ip + total
        addr = frame[ip + 12:ip + 20]
    else:
        _need(frame, ip + 40, "IPv6 header")
        if frame[ip] >> 4 != 6:
            raise _Whole("IP version is not 6")
        if frame[ip + 6] != TCP_PROTOCOL:
            raise _Whole("IPv6 next header is not TCP (extension headers are never cut)")
        plen = _u16(frame, ip + 4)
        if plen < 20:
            raise _Whole("IPv6 payload length < 20")
        tcp, end = ip + 40, ip + 40 + plen
        addr = frame[ip + 8:ip + 40]
    if len(frame) < end:
        raise _Whole("frame shorter than its IP packet")
    if pppoe is not None and _u16(frame, pppoe + 4) != end - ip + 2:
        raise _Whole("PPPoE length is not the IP packet's length + 2")

    doff = 4 * (frame[tcp + 12] >> 4)
    if doff < 20:
        raise _Whole("TCP data offset < 5")
    if tcp + doff > end:
        raise _Whole("TCP header longer than the IP payload")
    flags = frame[tcp + 13]
    if flags & (TCP_SYN | TCP_RST | TCP_URG):
        raise _Whole("SYN, RST or URG set")
    # CWR is the classic ECN sender's one-time "window reduced" (RFC 3168
    # section 6.1.2: first chunk only) or bit 1 of an Accurate ECN flow's ACE
    # counter (RFC 9768 section 3.2.2: the same on every chunk); which one,
    # only the handshake tells. Whole, the segment is right under both.
    if flags & TCP_CWR:
        raise _Whole("CWR set (classic ECN and Accurate ECN need different cuts)")
    signed = _option_kinds(frame, tcp + 20, tcp + doff) & {TCP_OPT_MD5, TCP_OPT_AO}
    if signed:
        raise _Whole("TCP-MD5 or TCP-AO option: its signature covers the payload")

    payload = tcp + doff
    sums = WriteSums(addr_sum=ones_complement_sum(addr), header_sum=_header_sum(frame, tcp, doff),
                     block_sums=payload_block_sums(frame[payload:end]), payload_bytes=end - payload)
    seq = int.from_bytes(frame[tcp + 4:tcp + 8], "big")
    folded = _chunk_sum(sums, tcp_header_bytes=doff, seq=seq, offset_flags=_u16(frame, tcp + 12),
                        start=0, length=sums.payload_bytes)
    if _fold(folded + _u16(frame, tcp + 16)) != 0xFFFF:      # RFC 1071 section 1: verification
        raise _Whole("TCP checksum is wrong")
    return _Layout(pppoe=pppoe, ip=ip, ip_version=version, tcp=tcp, payload=payload, sums=sums)


def _header_sum(frame, tcp, doff):
    """The TCP header's sum with sequence number, data-offset/flags word and checksum as zero."""
    header = bytearray(frame[tcp:tcp + doff])
    header[4:8] = bytes(4)
    header[12:14] = bytes(2)
    header[16:18] = bytes(2)
    return ones_complement_sum(header)


def _cut_layout(frame, chunk_bytes):
    """The layout of ``frame`` if the segmenter cuts it; raises ``_Whole`` if not."""
    check_chunk_bytes(chunk_bytes)
    if chunk_bytes == 0:
        raise _Whole("segmenter off (chunk_bytes 0)")
    layout = _layout(frame)
    if layout.sums.payload_bytes <= chunk_bytes:
        raise _Whole(f"payload of {layout.sums.payload_bytes} bytes <= chunk_bytes {chunk_bytes}")
    return layout


def why_whole(frame, chunk_bytes):
    """Why ``frame`` leaves whole with this ``chunk_bytes``, or ``None`` if
    the segmenter cuts it.

    Parameters
    ----------
    frame : bytes
        The frame without preamble and FCS.
    chunk_bytes : int
        See :func:`check_chunk_bytes` (raises as it does).

    Returns
    -------
    str or None
        A short human-readable reason; ``None`` when :func:`segment` returns
        two chunks or more.
    """
    try:
        _cut_layout(bytes(frame), chunk_bytes)
    except _Whole as e:
        return str(e)
    return None


def segment(frame, chunk_bytes):
    """The frames that leave for ``frame``: itself, or its chunks.

    A TCP segment with a payload longer than ``chunk_bytes`` leaves as
    ``ceil(payload / chunk_bytes)`` chunks, chunk *i* carrying payload bytes
    ``i * chunk_bytes`` up to ``chunk_bytes`` more. Each chunk has:

    * the frame's L2 header (Ethernet, VLAN tags), with the PPPoE length set
      to the chunk's IP packet length + 2 (the PPP protocol field);
    * its IP header, options included, with the IPv4 total length or IPv6
      payload length of the chunk, the IPv4 identification plus *i* (mod
      2^16) and the IPv4 header checksum recomputed (RFC 791, RFC 1071);
      everything else (DSCP, ECN, DF, TTL, flow label, hop limit) copied;
    * its TCP header, options included, with the sequence number plus the
      chunk's payload offset (mod 2^32), the flags of :func:`chunk_flags`
      and the checksum of :func:`chunk_tcp_checksum`;
    * its share of the payload. Bytes after the IP packet (Ethernet padding
      or a trailer) are not payload and are not sent; a chunk frame shorter
      than ``MIN_FRAME_BYTES`` is padded with zeros to it, as a MAC pads it.

    Every other frame leaves whole, byte for byte (:func:`why_whole` says
    why).

    Parameters
    ----------
    frame : bytes
        The frame without preamble and FCS.
    chunk_bytes : int
        0 (off) or a multiple of ``SEGMENT_BLOCK_BYTES`` up to
        ``MAX_CHUNK_BYTES`` (else ``ValueError``, see :func:`check_chunk_bytes`).

    Returns
    -------
    list of bytes
        The frames in the order they leave; one element when ``frame`` is
        not cut.
    """
    frame = bytes(frame)
    try:
        lay = _cut_layout(frame, chunk_bytes)
    except _Whole:
        return [frame]
    sums = lay.sums
    count = -(-sums.payload_bytes // chunk_bytes)
    ip_header_bytes, tcp_header_bytes = lay.tcp - lay.ip, lay.payload - lay.tcp
    ip_id = _u16(frame, lay.ip + 4)
    seq0 = int.from_bytes(frame[lay.tcp + 4:lay.tcp + 8], "big")
    chunks = []
    for i in range(count):
        start = i * chunk_bytes
        length = min(chunk_bytes, sums.payload_bytes - start)
        ip_bytes = ip_header_bytes + tcp_header_bytes + length

        l2 = bytearray(frame[:lay.ip])
        if lay.pppoe is not None:
            l2[lay.pppoe + 4:lay.pppoe + 6] = (ip_bytes + 2).to_bytes(2, "big")

        iph = bytearray(frame[lay.ip:lay.tcp])
        if lay.ip_version == 4:
            iph[2:4] = ip_bytes.to_bytes(2, "big")
            iph[4:6] = ((ip_id + i) & 0xFFFF).to_bytes(2, "big")
            iph[10:12] = bytes(2)
            iph[10:12] = (~ones_complement_sum(iph) & 0xFFFF).to_bytes(2, "big")
        else:
            iph[4:6] = (ip_bytes - 40).to_bytes(2, "big")

        tcph = bytearray(frame[lay.tcp:lay.payload])
        seq = (seq0 + start) & 0xFFFF_FFFF
        tcph[4:8] = seq.to_bytes(4, "big")
        tcph[13] = chunk_flags(tcph[13], i, count)
        checksum = chunk_tcp_checksum(sums, tcp_header_bytes=tcp_header_bytes, seq=seq,
                                      offset_flags=_u16(tcph, 12), start=start, length=length)
        tcph[16:18] = checksum.to_bytes(2, "big")

        data = frame[lay.payload + start:lay.payload + start + length]
        chunk = bytes(l2 + iph + tcph) + data
        chunks.append(chunk + bytes(max(0, MIN_FRAME_BYTES - len(chunk))))
    return chunks


def swap16(value):
    """``value``'s two bytes swapped: a 16-bit word as the 32-bit datapath's
    lanes hold it (lane 0 first on the wire, so the network's high byte is
    the low one here). Ones' complement sums commute with it (RFC 1071
    section 2 (B)), so the hardware sums in lane order throughout."""
    return ((value & 0xFF) << 8) | (value >> 8 & 0xFF)


@dataclass(frozen=True)
class SegInfo:
    """What the hardware gathers of a data frame while writing it
    (``gateware.parser.seg_info_layout``, the same fields and meanings).

    ``ok`` is ``why_whole`` finding nothing but the payload's length; the
    other fields are meaningful only when ``ok``. Sums are in lane order
    (:func:`swap16` of the network-order sum).
    """
    ok: bool
    pppoe: bool = False
    tcp_word: int = 0
    pay_word: int = 0
    pay_bytes: int = 0
    seq: int = 0
    offflags: int = 0
    sum: int = 0
    hdr_tail: int = 0


def seg_info(frame):
    """:class:`SegInfo` of ``frame`` (bytes without FCS)."""
    frame = bytes(frame)
    try:
        lay = _layout(frame)
    except _Whole:
        return SegInfo(ok=False)
    assert lay.tcp % 4 == 2 and lay.payload % 4 == 2 and lay.ip % 4 == 2
    s = lay.sums
    return SegInfo(
        ok=True, pppoe=lay.pppoe is not None, tcp_word=(lay.tcp - 2) // 4,
        pay_word=(lay.payload - 2) // 4, pay_bytes=s.payload_bytes,
        seq=int.from_bytes(frame[lay.tcp + 4:lay.tcp + 8], "big"),
        offflags=_u16(frame, lay.tcp + 12),
        sum=swap16(_fold(s.addr_sum + s.header_sum)),
        hdr_tail=int.from_bytes(frame[lay.payload - 2:lay.payload], "little"))


def lane_block_sums(frame):
    """The payload's block sums as the hardware stores them (lane order):
    :func:`swap16` of :func:`payload_block_sums`; ``()`` when the frame is
    not a segment the segmenter may cut."""
    try:
        lay = _layout(bytes(frame))
    except _Whole:
        return ()
    return tuple(swap16(x) for x in lay.sums.block_sums)
