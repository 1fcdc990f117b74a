"""The flow key of a frame as the gateware stores it, and its CAM tag.

This is the one definition of both: the parser packs the key into these
eleven 32-bit words and computes the tag with :func:`tag_of_fold` (through
:func:`tag_matrix`), the golden model computes them here from the fields
:func:`ackfilter.model.pktparse.flow_key` reads out of the frame's bytes, so
the model knows which flows share a tag (a CAM collision) and can predict
every lookup of the hardware (``docs/spec.md`` sections 2 and 3). Every
frame has a key: a pure ACK's selects its ACK flow, any frame's its flow for
fair queueing (issue 26).

Key words (byte *k* of a header field is bits ``8k..8k+7`` of its word, the
order in which the bytes arrive on the 32-bit datapath):

====  ===================================================================
word  contents
====  ===================================================================
0     VLAN ID of tag 0 (bits 0-11), of tag 1 (12-23), number of tags
      (24-25), PPPoE session (26), the L2 header announces IPv6 (27),
      TPID code of tag 0 (28-29), of tag 1 (30-31): 1 = 0x8100,
      2 = 0x88A8, 3 = 0x9100, 0 = no tag
1     PPPoE session ID (bits 0-15, 0 without PPPoE), IP protocol (16-23:
      IPv4 protocol or IPv6 next header of the fixed header), an IP
      header is there (24)
2-5   source address (IPv4: word 2 only, words 3-5 are 0)
6-9   destination address (IPv4: word 6 only)
10    the transport header's first four bytes: source port (bytes 0-1),
      destination port (bytes 2-3), for :data:`PORT_PROTOCOLS` only and
      not in a fragment; else 0
====  ===================================================================

What a frame that is not IP, or is cut short, puts in each word is spec
section 2, "Flow key" (:func:`ackfilter.model.pktparse.flow_key`).
"""

import functools

__all__ = ["KEY_WORDS", "KEY_V6_BIT", "KEY_IP_BIT", "TPID_CODES", "PORT_PROTOCOLS", "HOST_BITS", "flow_key_words",
           "key_fold", "tag_of_fold", "tag_matrix", "flow_tag", "host_fold_bits", "host_bucket",
           "check_host_buckets"]

#: Bits of a host bucket as the parser gives it (``HOST_BUCKETS`` at most
#: ``2 ** HOST_BITS``).
HOST_BITS = 6
#: Number of 32-bit words of a flow key.
KEY_WORDS = 11
#: The bit of key word 0 that says the L2 header announces IPv6 (EtherType
#: 0x86DD or PPP protocol 0x0057). Where it is clear, words 3-5 and 7-9 are
#: 0: the queue manager skips them.
KEY_V6_BIT = 27
#: The bit of key word 1 that says an IP header is where the L2 header puts
#: it (IPv4: version 4 and IHL >= 5; IPv6: version 6).
KEY_IP_BIT = 24
#: The 2-bit code of each accepted VLAN TPID in key word 0 (0 = no tag).
TPID_CODES = {0x8100: 1, 0x88A8: 2, 0x9100: 3}
#: IP protocols whose header starts with the source and destination port:
#: TCP (RFC 9293), UDP (RFC 768), DCCP (RFC 4340), SCTP (RFC 9260),
#: UDP-Lite (RFC 3828). Their ports are key word 10.
PORT_PROTOCOLS = (6, 17, 33, 132, 136)


def _le32(b):
    return int.from_bytes(bytes(b), "little")


def flow_key_words(*, tags=(), pppoe_session=None, ipv6=False, ip=False, proto=0,
                   src=b"", dst=b"", ports=b""):
    """The eleven key words of fields already read out of a frame.

    Parameters
    ----------
    tags : sequence of (tpid, vid)
        Up to two VLAN tags, outermost first (``vid`` without priority/DEI).
    pppoe_session : int or None
        The session ID of a PPPoE session header, None without one.
    ipv6 : bool
        The L2 header announces IPv6 (EtherType 0x86DD, PPP protocol 0x0057).
    ip : bool
        An IP header is there (key word 1, :data:`KEY_IP_BIT`).
    proto : int
        The IP protocol (IPv4) or the fixed header's next header (IPv6).
    src, dst : bytes
        The addresses, in arrival order, at most 4 bytes unless ``ipv6``;
        zero-padded to 16.
    ports : bytes
        At most the first four bytes of the transport header, zero-padded.
    """
    if len(tags) > 2:
        raise ValueError(f"at most two VLAN tags, not {len(tags)}")
    width = 16 if ipv6 else 4
    if len(src) > width or len(dst) > width:
        raise ValueError(f"addresses of at most {width} bytes, not {len(src)} and {len(dst)}")
    if len(ports) > 4 or not 0 <= proto <= 0xFF:
        raise ValueError(f"ports of at most 4 bytes and a protocol 0..255, not {len(ports)} and {proto!r}")
    w0 = len(tags) << 24
    for i, (tpid, vid) in enumerate(tags):
        w0 |= (vid & 0xFFF) << (12 * i) | TPID_CODES[tpid] << (28 + 2 * i)
    w0 |= (pppoe_session is not None) << 26 | bool(ipv6) << KEY_V6_BIT
    words = [w0, (pppoe_session or 0) | proto << 16 | bool(ip) << KEY_IP_BIT]
    for addr in (src, dst):
        addr = bytes(addr).ljust(16, b"\0")
        words += [_le32(addr[4 * i:4 * i + 4]) for i in range(4)]
    words.append(_le32(bytes(ports).ljust(4, b"\0")))
    return tuple(words)


def key_fold(words):
    """The 32-bit fold of a key: the XOR of word *i* rotated left by ``11 i mod 32``."""
    fold = 0
    for i, w in enumerate(words):
        r = (11 * i) % 32
        fold ^= ((w << r) | (w >> (32 - r))) & 0xFFFF_FFFF if r else w
    return fold


def tag_of_fold(fold):
    """The 16-bit CAM tag of a 32-bit key fold: its CRC-16 (polynomial
    0x1021, register preset 0, bits from the most significant one).

    A CRC is linear, so the gateware is a fixed XOR network (at most three
    LUT levels, :func:`tag_matrix`); a multiplicative hash needed a DSP and a
    carry chain after it, too slow for the cycle it has.
    """
    crc = 0
    for i in range(31, -1, -1):
        feedback = (crc >> 15 & 1) ^ (fold >> i & 1)
        crc = (crc << 1) & 0xFFFF
        if feedback:
            crc ^= 0x1021
    return crc


@functools.lru_cache(maxsize=None)
def tag_matrix():
    """For each tag bit, the fold bits whose XOR it is."""
    return tuple(tuple(i for i in range(32) if tag_of_fold(1 << i) >> j & 1) for j in range(16))


def flow_tag(words):
    """The CAM tag of a flow key."""
    return tag_of_fold(key_fold(words))


@functools.lru_cache(maxsize=None)
def host_fold_bits():
    """For each of the :data:`HOST_BITS` bits of a host's fold, the bits of
    the source address (key words 2-5 as one 128-bit number, word 2 lowest)
    whose XOR it is: the four words XORed, then that word's
    :data:`HOST_BITS`-bit pieces from bit 0 up (the last one shorter)."""
    return tuple(tuple(32 * w + b for w in range(4) for b in range(i, 32, HOST_BITS))
                 for i in range(HOST_BITS))


def host_bucket(words, buckets):
    """The host bucket of a flow key (spec section 12, "Hosts"): its source
    address (key words 2-5) folded to :data:`HOST_BITS` bits, of which the
    low ``log2(buckets)`` (a power of two, at most ``2 ** HOST_BITS``).

    An IPv4 address's last byte arrives last: it is bits 24-31 of word 2,
    and the fold keeps its low six bits apart, so the 64 hosts of an aligned
    block of 64 addresses (192.168.1.0 to .63, .64 to .127, ...) have 64
    buckets; what else collides is a matter of chance. Frames without an IP
    header have source 0: one bucket.

    >>> [host_bucket(flow_key_words(ip=True, src=bytes([192, 168, 1, b])), 64) for b in (1, 2, 3)]
    [56, 59, 58]
    """
    if buckets & (buckets - 1) or not 1 <= buckets <= 1 << HOST_BITS:
        raise ValueError(f"buckets must be a power of two 1 .. {1 << HOST_BITS}, not {buckets!r}")
    src = sum(words[2 + i] << (32 * i) for i in range(4))
    fold = 0
    for j, bits in enumerate(host_fold_bits()):
        fold |= (sum(src >> b & 1 for b in bits) & 1) << j
    return fold & (buckets - 1)


def check_host_buckets(n, name="hosts"):
    """``n`` if it is a number of host buckets a core can have: 0 (no host
    fairness) or a power of two 2 .. ``2 ** HOST_BITS``; else ValueError."""
    if isinstance(n, bool) or not isinstance(n, int) or n & (n - 1) or n == 1 or not 0 <= n <= 1 << HOST_BITS:
        raise ValueError(f"{name} must be 0 or a power of two 2 .. {1 << HOST_BITS}, not {n!r}")
    return n
