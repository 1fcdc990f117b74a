"""Frame mutations for the reliability campaign, deterministic from a seed.

:func:`mutate_trace` mutates a share of a trace's frames *in place* (each
keeps its position and, unless the mutation is about the L2 encapsulation or
the addresses, its flow), so mutated ACKs meet unmutated neighbours of their
flow and supersession and overload still happen around them. Every mutation
is a function ``(rng, frame) -> bytes or None`` (None: does not apply to this
frame) in :data:`MUTATIONS`:

================  ===========================================================
name              what
================  ===========================================================
``flip_l2``       a bit of the EtherType / VLAN tags / PPPoE header
``flip_ip``       a bit of the IP header (checksums left as they fall)
``flip_tcp``      a bit of the TCP header (checksums left as they fall)
``truncate``      the frame cut short, mostly inside the headers
``tcp_options``   random TCP option bytes (well formed or not), lengths and
                  checksums fixed
``nudge_ack``     ack moved (a little, by 2^31, 2^31 +- 1, or not), checksum fixed
``nudge_sack``    a SACK edge moved, blocks swapped or reversed, checksum fixed
``nudge_ts``      TSval/TSecr moved (a little or by 2^31), checksum fixed
``bad_ip_csum``   the IPv4 header checksum broken
``bad_tcp_csum``  the TCP checksum broken
``flags``         PSH, URG, AE, ECE, CWR, FIN, SYN, RST or a reserved bit
                  flipped, checksum fixed
``ip_options``    IPv4 Router Alert or Record Route inserted, IHL, lengths and
                  checksums fixed
``ecn``           the IP ECN field changed (IPv4 header checksum fixed)
``vlan``          a tag's TPID or VID changed, a tag added or removed
``padding``       padding added, removed or made non-zero
================  ===========================================================

Checksums are RFC 1071 ones' complement sums: the IPv4 header's over the
header, TCP's over the pseudo-header and the segment (:func:`fix_checksums`).
"""

import struct

from ..traces import inet_checksum

__all__ = ["MUTATIONS", "Layout", "layout", "fix_checksums", "mutate_trace", "stamp_unique"]

VLAN_TPIDS = (0x8100, 0x88A8, 0x9100)
TWO31 = 1 << 31
MASK32 = 0xFFFF_FFFF


class Layout:
    """Offsets of a frame's headers (only what the mutations need)."""

    __slots__ = ("tags", "pppoe", "ip", "version", "ihl", "tcp", "doff", "ip_end")

    def __init__(self, tags, pppoe, ip, version, ihl, tcp, doff, ip_end):
        self.tags, self.pppoe, self.ip, self.version = tags, pppoe, ip, version
        self.ihl, self.tcp, self.doff, self.ip_end = ihl, tcp, doff, ip_end


def layout(f):
    """:class:`Layout` of an Ethernet/VLAN/PPPoE/IP/TCP frame whose headers are whole, else None."""
    n = len(f)
    if n < 14:
        return None
    off, tags = 12, []
    etype = struct.unpack_from("!H", f, off)[0]
    while etype in VLAN_TPIDS and len(tags) < 3 and n >= off + 6:
        tags.append(off)
        off += 4
        etype = struct.unpack_from("!H", f, off)[0]
    off += 2
    pppoe = None
    if etype == 0x8864 and n >= off + 8:
        pppoe = off
        etype = {0x0021: 0x0800, 0x0057: 0x86DD}.get(struct.unpack_from("!H", f, off + 6)[0])
        off += 8
    ip = off
    if etype == 0x0800 and n >= ip + 20 and f[ip] >> 4 == 4:
        ihl = f[ip] & 0x0F
        if ihl < 5 or f[ip + 9] != 6:
            return None
        tcp = ip + 4 * ihl
        ip_end = ip + struct.unpack_from("!H", f, ip + 2)[0]
        version = 4
    elif etype == 0x86DD and n >= ip + 40 and f[ip] >> 4 == 6 and f[ip + 6] == 6:
        ihl = 0
        tcp = ip + 40
        ip_end = tcp + struct.unpack_from("!H", f, ip + 4)[0]
        version = 6
    else:
        return None
    if n < tcp + 20 or ip_end > n or ip_end < tcp + 20:
        return None
    doff = f[tcp + 12] >> 4
    if doff < 5 or tcp + 4 * doff > ip_end:
        return None
    return Layout(tags, pppoe, ip, version, ihl, tcp, doff, ip_end)


def fix_checksums(frame, lay=None, *, ip=True, tcp=True):
    """Recompute the IPv4 header checksum and the TCP checksum in place (a bytearray)."""
    lay = lay or layout(frame)
    if lay is None:
        return frame
    if lay.version == 4:
        if ip:
            frame[lay.ip + 10:lay.ip + 12] = b"\0\0"
            struct.pack_into("!H", frame, lay.ip + 10, inet_checksum(frame[lay.ip:lay.ip + 4 * lay.ihl]))
        pseudo = bytes(frame[lay.ip + 12:lay.ip + 20]) + struct.pack("!xBH", 6, lay.ip_end - lay.tcp)
    else:
        pseudo = bytes(frame[lay.ip + 8:lay.ip + 40]) + struct.pack("!IxxxB", lay.ip_end - lay.tcp, 6)
    if tcp:
        frame[lay.tcp + 16:lay.tcp + 18] = b"\0\0"
        struct.pack_into("!H", frame, lay.tcp + 16, inet_checksum(pseudo + bytes(frame[lay.tcp:lay.ip_end])))
    return frame


def _set_ip_packet_length(f, lay, ip_len):
    """Write a new IP packet length into IPv4/IPv6 and PPPoE headers."""
    if lay.version == 4:
        struct.pack_into("!H", f, lay.ip + 2, ip_len)
    else:
        struct.pack_into("!H", f, lay.ip + 4, ip_len - 40)
    if lay.pppoe is not None:
        struct.pack_into("!H", f, lay.pppoe + 4, ip_len + 2)


def _pad(f):
    """Pad to 60 bytes like a NIC (after a resize; padding before it is dropped)."""
    f = bytes(f)
    return f + b"\0" * max(0, 60 - len(f))


def _flip(rng, f, lo, hi):
    if hi <= lo:
        return None
    f = bytearray(f)
    f[rng.randrange(lo, hi)] ^= 1 << rng.randrange(8)
    return bytes(f)


# --- mutations -----------------------------------------------------------------

def flip_l2(rng, f):
    lay = layout(f)
    end = lay.ip if lay else min(len(f), 30)
    return _flip(rng, f, 12, end)


def flip_ip(rng, f):
    lay = layout(f)
    return _flip(rng, f, lay.ip, lay.tcp) if lay else None


def flip_tcp(rng, f):
    lay = layout(f)
    return _flip(rng, f, lay.tcp, lay.tcp + 4 * lay.doff) if lay else None


def truncate(rng, f):
    if len(f) < 2:
        return None
    lay = layout(f)
    if lay and rng.random() < 0.8:
        cut = rng.randrange(lay.ip, min(len(f), lay.tcp + 4 * lay.doff + 1))
    else:
        cut = rng.randrange(1, len(f))
    return bytes(f[:cut])


def _random_options(rng):
    """0..40 bytes of TCP options, a multiple of 4, well formed or not."""
    out = bytearray()
    for _ in range(rng.randrange(1, 6)):
        k = rng.randrange(12)
        if k == 0:
            out += b"\x01"
        elif k == 1:
            out += b"\x00"
        elif k == 2:
            out += struct.pack("!BBH", 2, 4, rng.randrange(65536))                    # MSS
        elif k == 3:
            out += struct.pack("!BBB", 3, 3, rng.randrange(15))                       # window scale
        elif k == 4:
            out += b"\x04\x02"                                                        # SACK permitted
        elif k == 5:
            out += struct.pack("!BBII", 8, 10, rng.getrandbits(32), rng.getrandbits(32))
        elif k == 6:
            nblocks = rng.randrange(1, 5)
            out += struct.pack("!BB", 5, 2 + 8 * nblocks)
            out += b"".join(struct.pack("!I", rng.getrandbits(32)) for _ in range(2 * nblocks))
        elif k == 7:                                                                  # bad lengths
            out += bytes([rng.choice((5, 8, 2, 3)), rng.choice((0, 1, 3, 11, 40, 255))])
        elif k == 8:                                                                  # unknown kind
            body = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 6)))
            out += bytes([rng.randrange(9, 256), 2 + len(body)]) + body
        else:
            out += bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 6)))     # noise
    out = out[:40]
    out += bytes([rng.choice((0, 1))]) * (-len(out) % 4)
    return bytes(out)


def tcp_options(rng, f):
    lay = layout(f)
    if lay is None:
        return None
    opts = _random_options(rng)
    payload = f[lay.tcp + 4 * lay.doff:lay.ip_end]
    g = bytearray(f[:lay.tcp + 20]) + opts + payload
    g[lay.tcp + 12] = ((5 + len(opts) // 4) << 4) | (g[lay.tcp + 12] & 0x0F)
    ip_len = len(g) - lay.ip
    _set_ip_packet_length(g, lay, ip_len)
    lay2 = layout(bytes(g))
    if lay2 is None:
        return None
    return _pad(fix_checksums(g, lay2))


def _u32_at(f, off, delta):
    f = bytearray(f)
    struct.pack_into("!I", f, off, (struct.unpack_from("!I", f, off)[0] + delta) & MASK32)
    return f


def _nudge(rng):
    return rng.choice((1, -1, 1448, -1448, 2896, TWO31, TWO31 - 1, TWO31 + 1, 0,
                       rng.randrange(-5000, 5000)))


def nudge_ack(rng, f):
    lay = layout(f)
    if lay is None:
        return None
    return bytes(fix_checksums(_u32_at(f, lay.tcp + 8, _nudge(rng)), lay, ip=False))


def _find_option(f, lay, kind):
    i, end = lay.tcp + 20, lay.tcp + 4 * lay.doff
    while i < end:
        k = f[i]
        if k == 0:
            return None
        if k == 1:
            i += 1
            continue
        if i + 1 >= end or f[i + 1] < 2:
            return None
        if k == kind:
            return i
        i += f[i + 1]
    return None


def nudge_sack(rng, f):
    lay = layout(f)
    if lay is None:
        return None
    at = _find_option(f, lay, 5)
    if at is None or f[at + 1] < 10 or at + f[at + 1] > lay.tcp + 4 * lay.doff:
        return None
    nblocks = (f[at + 1] - 2) // 8
    b = rng.randrange(nblocks)
    g = bytearray(f)
    edge = at + 2 + 8 * b
    k = rng.randrange(4)
    if k == 0:                                   # one edge moved
        g = _u32_at(g, edge + 4 * rng.randrange(2), _nudge(rng))
    elif k == 1:                                 # start and end swapped
        g[edge:edge + 4], g[edge + 4:edge + 8] = g[edge + 4:edge + 8], g[edge:edge + 4]
    elif k == 2 and nblocks >= 2:                # two blocks swapped (D-SACK order games)
        o = at + 2 + 8 * ((b + 1) % nblocks)
        g[edge:edge + 8], g[o:o + 8] = g[o:o + 8], g[edge:edge + 8]
    else:                                        # the block moved below the ack (a D-SACK)
        ack = struct.unpack_from("!I", f, lay.tcp + 8)[0]
        s = (ack - rng.randrange(1, 5) * 1448) & MASK32
        struct.pack_into("!II", g, edge, s, (s + 1448) & MASK32)
    return bytes(fix_checksums(g, lay, ip=False))


def nudge_ts(rng, f):
    lay = layout(f)
    if lay is None:
        return None
    at = _find_option(f, lay, 8)
    if at is None or f[at + 1] != 10 or at + 10 > lay.tcp + 4 * lay.doff:
        return None
    g = _u32_at(f, at + 2 + 4 * rng.randrange(2), rng.choice((1, -1, 3, -3, TWO31, 0, 1000)))
    return bytes(fix_checksums(g, lay, ip=False))


def bad_ip_csum(rng, f):
    lay = layout(f)
    if lay is None or lay.version != 4:
        return None
    g = bytearray(f)
    g[lay.ip + 10 + rng.randrange(2)] ^= rng.randrange(1, 256)
    return bytes(g)


def bad_tcp_csum(rng, f):
    lay = layout(f)
    if lay is None:
        return None
    g = bytearray(f)
    g[lay.tcp + 16 + rng.randrange(2)] ^= rng.randrange(1, 256)
    return bytes(g)


#: TCP flag bits by name, as bit numbers of the 12-bit field (byte 12 low nibble, byte 13).
FLAG_BITS = {"FIN": 0, "SYN": 1, "RST": 2, "PSH": 3, "URG": 5, "ECE": 6, "CWR": 7, "AE": 8,
             "R0": 9, "R1": 10, "R2": 11}


def flags(rng, f):
    lay = layout(f)
    if lay is None:
        return None
    name = rng.choice(("PSH", "PSH", "URG", "AE", "AE", "ECE", "ECE", "CWR", "FIN", "SYN", "RST",
                       "R0", "R1", "R2"))
    bit = FLAG_BITS[name]
    g = bytearray(f)
    if bit >= 8:
        g[lay.tcp + 12] ^= 1 << (bit - 8)
    else:
        g[lay.tcp + 13] ^= 1 << bit
    return bytes(fix_checksums(g, lay, ip=False))


def ip_options(rng, f):
    lay = layout(f)
    if lay is None or lay.version != 4:
        return None
    if rng.random() < 0.5:
        opt = b"\x94\x04\x00\x00"                                             # Router Alert (RFC 2113)
    else:
        slots = rng.randrange(1, 9)                                           # Record Route (RFC 791)
        opt = bytes([7, 3 + 4 * slots, 4 + 4 * rng.randrange(0, slots + 1)]) + \
            bytes(rng.getrandbits(8) for _ in range(4 * slots))
        opt += b"\x00" * (-len(opt) % 4)
    if lay.ihl + len(opt) // 4 > 15:
        return None
    g = bytearray(f[:lay.tcp]) + opt + bytearray(f[lay.tcp:lay.ip_end])
    g[lay.ip] = 0x40 | (lay.ihl + len(opt) // 4)
    _set_ip_packet_length(g, lay, lay.ip_end - lay.ip + len(opt))
    lay2 = layout(bytes(g))
    if lay2 is None:
        return None
    return _pad(fix_checksums(g, lay2))


def ecn(rng, f):
    lay = layout(f)
    if lay is None:
        return None
    g = bytearray(f)
    value = rng.randrange(4)
    if lay.version == 4:
        g[lay.ip + 1] = (g[lay.ip + 1] & 0xFC) | value
        return bytes(fix_checksums(g, lay, tcp=False))
    g[lay.ip + 1] = (g[lay.ip + 1] & 0xCF) | (value << 4)
    return bytes(g)


def vlan(rng, f):
    if len(f) < 14:
        return None
    g = bytearray(f)
    tags = []
    off = 12
    while off + 4 <= len(g) and struct.unpack_from("!H", g, off)[0] in VLAN_TPIDS:
        tags.append(off)
        off += 4
    k = rng.randrange(4)
    if k == 0 and tags:                          # another TPID (sometimes not a VLAN one)
        struct.pack_into("!H", g, rng.choice(tags), rng.choice(VLAN_TPIDS + (0x8A88, 0x88E7)))
    elif k == 1 and tags:                        # another VID (or PCP/DEI bits)
        t = rng.choice(tags)
        struct.pack_into("!H", g, t + 2, struct.unpack_from("!H", g, t + 2)[0] ^ (1 << rng.randrange(16)))
    elif k == 2:                                 # a tag pushed
        g[12:12] = struct.pack("!HH", rng.choice(VLAN_TPIDS), rng.randrange(4096))
    elif tags:                                   # a tag popped
        del g[tags[0]:tags[0] + 4]
    else:
        return None
    return bytes(g)


def padding(rng, f):
    lay = layout(f)
    end = lay.ip_end if lay else len(f)
    k = rng.randrange(4)
    if k == 0:                                   # padding removed (a runt-ish short frame)
        return bytes(f[:end]) if end < len(f) else None
    if k == 1:                                   # padded to a tag-depth minimum or a bit more
        target = rng.choice((60, 64, 68, 72, 61, 127, 128, 129))
        return bytes(f[:end]) + b"\x00" * max(0, target - end) if target > end else None
    if k == 2:                                   # non-zero padding
        if end >= len(f):
            return None
        return bytes(f[:end]) + bytes(rng.getrandbits(8) for _ in range(len(f) - end))
    return bytes(f) + bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 16)))   # trailing garbage


MUTATIONS = {
    "flip_l2": flip_l2, "flip_ip": flip_ip, "flip_tcp": flip_tcp, "truncate": truncate,
    "tcp_options": tcp_options, "nudge_ack": nudge_ack, "nudge_sack": nudge_sack,
    "nudge_ts": nudge_ts, "bad_ip_csum": bad_ip_csum, "bad_tcp_csum": bad_tcp_csum,
    "flags": flags, "ip_options": ip_options, "ecn": ecn, "vlan": vlan, "padding": padding,
}

#: Relative weights: the "valid checksum" mutations that keep a frame an ACK
#: of its flow are the ones that probe supersession, so they come most often.
WEIGHTS = {
    "flip_l2": 3, "flip_ip": 3, "flip_tcp": 3, "truncate": 3, "tcp_options": 6, "nudge_ack": 10,
    "nudge_sack": 8, "nudge_ts": 6, "bad_ip_csum": 3, "bad_tcp_csum": 4, "flags": 8,
    "ip_options": 4, "ecn": 4, "vlan": 3, "padding": 4,
}


def mutate_trace(frames, rng, *, share=0.25):
    """Mutate about ``share`` of ``frames`` (list of bytes) in place; returns the names used per frame.

    A chosen frame gets one mutation (one in five a second one); a mutation
    that does not apply to it is replaced by another draw, up to a few tries.
    """
    names = list(MUTATIONS)
    weights = [WEIGHTS[n] for n in names]
    applied = [None] * len(frames)
    for i, f in enumerate(frames):
        if rng.random() >= share:
            continue
        done = []
        for _ in range(2 if rng.random() < 0.2 else 1):
            for _try in range(4):
                name = rng.choices(names, weights)[0]
                g = MUTATIONS[name](rng, f)
                if g is not None and len(g) > 0 and g != f:
                    f = g
                    done.append(name)
                    break
        if done:
            frames[i] = f
            applied[i] = "+".join(done)
    return applied


def stamp_unique(frames, first_index=0):
    """Make every frame's bytes unique: its source MAC becomes ``02:fz:`` + a 32-bit counter.

    The MAC is in no checksum and no flow key. Frames shorter than 12 bytes
    get the counter appended instead (they are runts either way).
    """
    out = []
    for k, f in enumerate(frames):
        tag = struct.pack("!I", (first_index + k) & MASK32)
        if len(f) >= 12:
            out.append(bytes(f[:6]) + b"\x02\xf2" + tag + bytes(f[12:]))
        else:
            out.append(bytes(f) + tag[:max(0, 13 - len(f))])
    return out
