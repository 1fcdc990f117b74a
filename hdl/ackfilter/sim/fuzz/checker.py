"""An independent judge of what left the core: no model, no gateware, its own byte parser.

Written from the rule text of issue 9 ("Reliability campaign") and
``docs/spec.md``, and deliberately *not* from :mod:`ackfilter.model`: given the
frames that arrived (in order), the frames that left (in order) and the core's
counters, :func:`check` says whether the output is something a safe ACK filter
may produce, whatever its internal decisions were:

* **identity** — every output frame is byte-identical to an input frame, and
  no input frame leaves twice (nothing is invented or modified);
* **per-flow ACK order** — the zero-payload ACK-flagged TCP segments of a flow
  (ACK set, SYN/FIN/RST clear, TCP payload 0 by the IP lengths; eligible or
  not) leave in the order they arrived;
* **per-flow data order** — the frames of a flow that are certainly not such
  a segment leave in the order they arrived. Data of *different* flows may
  leave in any order (the flow queues of spec section 12 serve them by
  deficit round robin), and an ACK may overtake data, of its flow or not.
  With the ACK filter off every frame is data: a flow's frames, ACKs
  included, leave in arrival order;
* **coverage** — every such ACK that did not leave is either one of at most
  ``drop_ack_front`` overload losses, or its information is carried by the
  first later ACK of its flow that did leave (:func:`carried`, after Linux
  sch_cake's ``cake_tcph_may_drop``), or by the next ACK of its flow that was
  removed in turn (a chain superseded in place and then dropped from the
  front of a full queue loses one ACK's news, and counts once against
  ``drop_ack_front``);
* **counters** — ``frames_in == frames_out + acks_superseded + every drop_*``,
  and ``frames_in``/``frames_out`` match the frame lists.

A flow is the spec's flow key (section 2, "Flow key"; :func:`flow_key`), for
every frame whatever its class: the L2 encapsulation (each VLAN tag's TPID
and 12-bit VID, the PPPoE session ID), whether the L2 header announces IPv6,
and, when an IP header is there, the IP protocol, the addresses and, for
TCP, UDP, DCCP, SCTP and UDP-Lite outside a fragment, the ports. Two frames
are of one flow only when every field is equal. The order rules use it
exactly: a coarser flow would flag reorderings the flow queues may make, a
finer one would miss a flow reordered across its parts. The hardware's 16-bit tag
plays no part: a flow whose tag collides goes to the shared queue, a FIFO,
which keeps the flow's order too.

Three classes (:attr:`Segment.cls`):

``"ack"``
    a whole, well-framed zero-payload ACK-flagged TCP segment no longer than
    an ACK slot: subject to the ACK order and coverage rules;
``"data"``
    certainly not one (payload, SYN/FIN/RST, no ACK flag, not TCP, an IP
    fragment, an IPv6 extension header, unknown L2, malformed IP/TCP
    lengths, runts): subject to the data order rule;
``"unsure"``
    a zero-payload ACK-flagged segment whose framing leaves its class to the
    implementation (cut short, bytes after the IP packet in a frame longer
    than 60 bytes, longer than a slot): exempt from both order rules (as an
    ACK it may overtake its flow's data, as data be overtaken by its flow's
    ACKs, so no order is certain), still subject to coverage if it does not
    leave. With the filter off it is data like every frame.

The segmenter (spec section 9) is not understood: a chunk is no input frame
and fails *identity*. The campaign runs with ``chunk_bytes`` 0.
"""

import bisect
import ipaddress
import struct
from dataclasses import dataclass, field
from typing import NamedTuple

__all__ = ["FlowKey", "Segment", "Violation", "CheckReport", "flow_key", "parse_segment", "eligible",
           "carried", "check", "before", "after", "ahead"]

VLAN_TPIDS = (0x8100, 0x88A8, 0x9100)
MIN_FRAME = 60          # without FCS; shorter frames are padded by the sender's NIC
MAX_TAGS = 2
#: IP protocols whose header starts with the two ports (spec section 2, "Flow
#: key"): TCP (RFC 9293), UDP (RFC 768), DCCP (RFC 4340), SCTP (RFC 9260),
#: UDP-Lite (RFC 3828).
PORT_PROTOCOLS = (6, 17, 33, 132, 136)

FIN, SYN, RST, PSH, ACK, URG, ECE, CWR, AE = (1 << i for i in range(9))
#: The AccECN options (RFC 9768): kind -> the 24-bit counters they carry, in
#: order (a shorter option carries the first ones).
ACCECN_ORDER = {172: ("EE0B", "ECEB", "EE1B"), 174: ("EE1B", "ECEB", "EE0B")}


def before(a, b):
    """RFC 1982 serial arithmetic, 32 bits: ``a`` is before ``b``.

    Exactly 2^31 apart counts as *before* (the comparison is undefined there
    and a safe filter must refuse it).
    """
    return ((a - b) & 0xFFFF_FFFF) >= 0x8000_0000


def after(a, b):
    return before(b, a)


def ahead(a, b):
    """``a`` is strictly ahead of ``b``: ``0 < (a - b) mod 2^32 < 2^31`` (2^31 apart is neither)."""
    return 0 < ((a - b) & 0xFFFF_FFFF) < 0x8000_0000


def _ones_sum(data):
    if len(data) % 2:
        data = data + b"\x00"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


class FlowKey(NamedTuple):
    """A frame's flow (spec section 2, "Flow key"): equal keys, one flow.

    Absent or unread fields hold their zero value, as the key's words do, so
    tuple equality is word equality: ``src``/``dst`` are 4 bytes (16 when
    ``ipv6``) when ``ip``, else empty; ``ports`` is always 4 bytes, zero
    without ports.
    """

    tags: tuple = ()              # ((tpid, vid), ...), outermost first, at most two
    pppoe_session: int = None     # the session ID of a PPPoE session header, None without one
    ipv6: bool = False            # the L2 header announces IPv6 (EtherType 0x86DD, PPP 0x0057)
    ip: bool = False              # an IP header of the announced version is there
    proto: int = 0                # IPv4 protocol, IPv6 next header of the fixed header
    src: bytes = b""
    dst: bytes = b""
    ports: bytes = bytes(4)       # the transport header's first four bytes, or zero


def flow_key(frame):
    """The :class:`FlowKey` of any frame, from spec section 2, "Flow key".

    The L2 header: a TPID 0x8100, 0x88A8 or 0x9100 is a tag when the frame
    holds its TCI and the EtherType after it; a third tag or one cut short
    ends the parse (the key is the tags before it). EtherType 0x8864 with
    ver/type 0x11 and code 0, the frame holding those and the session ID, is
    a PPPoE session; it announces IP when the frame holds the PPP protocol
    too and that is 0x0021 or 0x0057. The EtherType itself is no part of the
    key: non-IP traffic is one flow per link.

    From the IP header on, a field is read from the 4-byte word of its header
    that holds it, and a word the frame does not hold entirely reads as 0.
    An IP header is there when its first word says the announced version
    (and, IPv4, IHL >= 5); then come the protocol, the addresses, and the
    ports for :data:`PORT_PROTOCOLS` unless the packet is a fragment (IPv4 MF
    or an offset; IPv6 has ports only when the fixed header's next header is
    the transport, so never with an extension header). The IP length fields
    play no part.
    """
    f = bytes(frame)
    n = len(f)
    if n < 14:
        return FlowKey()

    def word(at):
        return f[at:at + 4] if n >= at + 4 else bytes(4)

    at = 12
    etype = struct.unpack_from("!H", f, at)[0]
    tags = []
    while etype in VLAN_TPIDS:
        if len(tags) == MAX_TAGS or n < at + 6:
            return FlowKey(tags=tuple(tags))
        tags.append((etype, struct.unpack_from("!H", f, at + 2)[0] & 0x0FFF))
        at += 4
        etype = struct.unpack_from("!H", f, at)[0]
    at += 2
    session = version = None
    if etype == 0x8864:
        if n >= at + 4 and f[at] == 0x11 and f[at + 1] == 0:
            session = struct.unpack_from("!H", f, at + 2)[0]
            if n >= at + 8:
                version = {0x0021: 4, 0x0057: 6}.get(struct.unpack_from("!H", f, at + 6)[0])
        at += 8
    else:
        version = {0x0800: 4, 0x86DD: 6}.get(etype)
    link = dict(tags=tuple(tags), pppoe_session=session, ipv6=version == 6)
    first = word(at)[0]
    if version is None or first >> 4 != version or (version == 4 and first & 0x0F < 5):
        return FlowKey(**link)
    if version == 4:
        proto = word(at + 8)[1]
        fragment = struct.unpack_from("!H", word(at + 4), 2)[0] & 0x3FFF    # MF, fragment offset
        src, dst = word(at + 12), word(at + 16)
        transport = at + 4 * (first & 0x0F)
    else:
        proto, fragment = word(at + 4)[2], 0
        src = b"".join(word(at + 8 + 4 * k) for k in range(4))
        dst = b"".join(word(at + 24 + 4 * k) for k in range(4))
        transport = at + 40
    ports = word(transport) if proto in PORT_PROTOCOLS and not fragment else bytes(4)
    return FlowKey(**link, ip=True, proto=proto, src=src, dst=dst, ports=ports)


def _describe_flow(key):
    """A short text of a :class:`FlowKey`, for messages."""
    parts = [f"tag {tpid:#06x}/{vid}" for tpid, vid in key.tags]
    if key.pppoe_session is not None:
        parts.append(f"PPPoE {key.pppoe_session:#06x}")
    if key.ip:
        if key.ipv6:
            src, dst = ipaddress.IPv6Address(key.src), ipaddress.IPv6Address(key.dst)
        else:
            src, dst = ".".join(map(str, key.src)), ".".join(map(str, key.dst))
        parts.append(f"IPv{6 if key.ipv6 else 4} proto {key.proto} {src} > {dst}")
        if any(key.ports):
            sport, dport = struct.unpack("!HH", key.ports)
            parts.append(f"ports {sport} > {dport}")
    else:
        parts.append("not IP" + (" (IPv6 announced)" if key.ipv6 else ""))
    return ", ".join(parts)


@dataclass
class Segment:
    """What the checker knows of one frame."""

    cls: str                      # "ack", "data" or "unsure"
    why: str = ""                 # why data / unsure / not eligible, for messages
    flow: FlowKey = None          # every frame's (:func:`flow_key`)
    flags: int = 0                # the 12 bits: reserved(3) AE CWR ECE URG ACK PSH RST SYN FIN
    ack: int = 0
    ecn: int = 0
    ihl_ok: bool = True           # IPv4 IHL 5 (IPv6: always)
    ip_csum_ok: bool = True
    tcp_csum_ok: bool = False
    options_ok: bool = False      # the option walk is well formed
    other_options: bool = False   # an option other than EOL/NOP/SACK/timestamps/AccECN
    accecn: dict = None           # an AccECN option's counters by name ({} for none carried)
    has_ts: bool = False
    tsval: int = 0
    tsecr: int = 0
    sack: list = field(default_factory=list)
    whole: bool = True            # the frame holds its whole IP packet

    @property
    def ack_flagged(self):
        return self.cls in ("ack", "unsure")


def _options(seg, opts):
    """Walk TCP options (spec section 2 rule 6); fill ``seg``; False when malformed."""
    i, n = 0, len(opts)
    while i < n:
        kind = opts[i]
        if kind == 0:
            break
        if kind == 1:
            i += 1
            continue
        if i + 1 >= n:
            return False
        length = opts[i + 1]
        if length < 2 or i + length > n:
            return False
        if kind == 8:
            if length != 10 or seg.has_ts:
                return False
            seg.has_ts = True
            seg.tsval, seg.tsecr = struct.unpack_from("!II", opts, i + 2)
        elif kind == 5:
            if length not in (10, 18, 26, 34) or seg.sack:
                return False
            seg.sack = [struct.unpack_from("!II", opts, j) for j in range(i + 2, i + length, 8)]
        elif kind in ACCECN_ORDER:
            if length not in (2, 5, 8, 11) or seg.accecn is not None:
                return False
            seg.accecn = {name: int.from_bytes(opts[i + 2 + 3 * k:i + 5 + 3 * k], "big")
                          for k, name in enumerate(ACCECN_ORDER[kind][:(length - 2) // 3])}
        else:
            seg.other_options = True
        i += length
    return True


def parse_segment(frame, *, slot_bytes):
    """Class a frame, take its flow key and, for a zero-payload ACK-flagged segment,
    read what the rules need.

    Parameters
    ----------
    frame : bytes
        As the core sees it (no preamble, no FCS).
    slot_bytes : int
        Size of an ACK slot: a longer segment is ``"unsure"``.
    """
    f = bytes(frame)
    n = len(f)
    key = flow_key(f)
    if n < 14:
        return Segment("data", "runt", flow=key)
    off = 12
    etype = struct.unpack_from("!H", f, off)[0]
    tags = []
    while etype in VLAN_TPIDS:
        if len(tags) == MAX_TAGS or n < off + 6:
            return Segment("data", "third VLAN tag" if len(tags) == MAX_TAGS else "cut in a tag", flow=key)
        tags.append((etype, struct.unpack_from("!H", f, off + 2)[0] & 0x0FFF))
        off += 4
        etype = struct.unpack_from("!H", f, off)[0]
    off += 2
    if etype == 0x8864:
        if n < off + 8:
            return Segment("data", "cut in the PPPoE header", flow=key)
        if f[off] != 0x11 or f[off + 1] != 0:
            return Segment("data", "PPPoE ver/type/code", flow=key)
        proto = struct.unpack_from("!H", f, off + 6)[0]
        off += 8
        version = {0x0021: 4, 0x0057: 6}.get(proto)
    else:
        version = {0x0800: 4, 0x86DD: 6}.get(etype)
    if version is None:
        return Segment("data", "not IP", flow=key)
    ip = off
    ip_csum_ok = ihl_ok = True
    if version == 4:
        if n < ip + 20 or f[ip] >> 4 != 4:
            return Segment("data", "no IPv4 header", flow=key)
        ihl = f[ip] & 0x0F
        total = struct.unpack_from("!H", f, ip + 2)[0]
        if ihl < 5 or n < ip + 4 * ihl or total < 4 * ihl:
            return Segment("data", "bad IHL or total length", flow=key)
        if struct.unpack_from("!H", f, ip + 6)[0] & 0x3FFF:
            return Segment("data", "IPv4 fragment", flow=key)
        if f[ip + 9] != 6:
            return Segment("data", "not TCP", flow=key)
        ihl_ok = ihl == 5
        ip_csum_ok = _ones_sum(f[ip:ip + 4 * ihl]) == 0xFFFF
        ecn = f[ip + 1] & 3
        src, dst = f[ip + 12:ip + 16], f[ip + 16:ip + 20]
        tcp = ip + 4 * ihl
        tcp_len = total - 4 * ihl
        pseudo = src + dst + struct.pack("!xBH", 6, tcp_len)
    else:
        if n < ip + 40 or f[ip] >> 4 != 6:
            return Segment("data", "no IPv6 header", flow=key)
        if f[ip + 6] != 6:
            return Segment("data", "IPv6 next header is not TCP", flow=key)
        tcp_len = struct.unpack_from("!H", f, ip + 4)[0]
        ecn = (struct.unpack_from("!H", f, ip)[0] >> 4) & 3
        src, dst = f[ip + 8:ip + 24], f[ip + 24:ip + 40]
        tcp = ip + 40
        pseudo = src + dst + struct.pack("!IxxxB", tcp_len, 6)
    ip_end = tcp + tcp_len
    if tcp_len < 20 or n < tcp + 20:
        return Segment("data", "no TCP header", flow=key)
    doff = f[tcp + 12] >> 4
    if doff < 5 or 4 * doff > tcp_len:
        return Segment("data", "bad TCP data offset", flow=key)
    flags = ((f[tcp + 12] & 0x0F) << 8) | f[tcp + 13]
    if tcp_len > 4 * doff:
        return Segment("data", "TCP payload", flow=key)
    if not flags & ACK or flags & (SYN | FIN | RST):
        return Segment("data", "no ACK flag, or SYN/FIN/RST", flow=key)
    seg = Segment("ack", flow=key, flags=flags, ack=struct.unpack_from("!I", f, tcp + 8)[0], ecn=ecn,
                  ihl_ok=ihl_ok, ip_csum_ok=ip_csum_ok)
    if n < ip_end:
        seg.cls, seg.why, seg.whole = "unsure", "frame shorter than its IP packet", False
        return seg
    if n > ip_end and n > MIN_FRAME:
        seg.cls, seg.why = "unsure", "bytes after the IP packet in a frame longer than 60 bytes"
    elif n > slot_bytes:
        seg.cls, seg.why = "unsure", f"longer than a {slot_bytes}-byte ACK slot"
    seg.tcp_csum_ok = _ones_sum(pseudo + f[tcp:ip_end]) == 0xFFFF
    seg.options_ok = _options(seg, f[tcp + 20:tcp + 4 * doff])
    return seg


def eligible(seg):
    """Reason why ``seg`` may not take part in supersession, or ``""`` when it may."""
    if not seg.ack_flagged:
        return seg.why or "not a zero-payload ACK"
    if seg.flags & ~(ACK | ECE | CWR | AE):
        return f"flags {seg.flags:#05x} beyond ACK/ECE/CWR/AE"
    if not seg.ihl_ok:
        return "IPv4 options"
    if not seg.ip_csum_ok:
        return "bad IPv4 header checksum"
    if not seg.tcp_csum_ok:
        return "bad TCP checksum"
    if not seg.options_ok:
        return "malformed TCP options"
    return ""


def _inside(s, e, s2, e2):
    return not before(s, s2) and not after(e, e2)


def carried(old, new):
    """Reason why the information of removed ACK ``old`` is NOT carried by survivor ``new``.

    ``""`` when it is: the rules of supersession (issue 9; cf. sch_cake's
    ``cake_tcph_may_drop``). Both of the same flow, ``new`` arrived later.
    """
    for seg, who in ((old, "removed"), (new, "survivor")):
        why = eligible(seg)
        if why:
            return f"{who} not eligible: {why}"
    if old.other_options:
        return "removed has options other than NOP/EOL/SACK/timestamps"
    if old.ecn != new.ecn:
        return "IP ECN fields differ"
    if old.accecn is not None and new.accecn is not None:
        # Both AccECN: ACE is a counter, not flags. What a pair shows: every
        # byte counter the removed carries, the survivor carries, not gone
        # back. (The ACE field's advance along a chain, and the counters'
        # nearness to the chain's first ACK, need the chain: the model's.)
        for name, value in old.accecn.items():
            if name not in new.accecn:
                return f"survivor's AccECN option lacks the removed one's {name}"
            if (new.accecn[name] - value) % (1 << 24) >= 1 << 23:
                return f"survivor's AccECN {name} before the removed one's"
    elif old.accecn is not None:
        return "removed carries an AccECN option, the survivor none"
    elif old.flags & (ECE | CWR | AE) != new.flags & (ECE | CWR | AE):
        return "ECE, CWR or AE differ"
    if old.has_ts != new.has_ts:
        return "timestamps on one only"
    if old.has_ts and (before(new.tsval, old.tsval) or before(new.tsecr, old.tsecr)):
        return "survivor's TSval or TSecr before the removed one's"
    if old.sack:
        s0, e0 = old.sack[0]
        if before(s0, old.ack):
            return "removed carries a D-SACK (block below its ack)"
        if len(old.sack) >= 2 and _inside(s0, e0, *old.sack[1]):
            return "removed carries a D-SACK (first block inside the second)"
    for s, e in old.sack:
        if after(e, new.ack) and not any(_inside(s, e, s2, e2) for s2, e2 in new.sack):
            return f"removed's SACK block [{s}, {e}) not covered by the survivor"
    if ahead(new.ack, old.ack):
        return ""
    if new.ack != old.ack:
        return "survivor's ack before the removed one's (or 2^31 apart)"
    for s, e in new.sack:
        if ahead(e, s) and not before(s, new.ack) and \
                not any(_inside(s, e, s2, e2) for s2, e2 in old.sack):
            return ""
    return "same ack and no new SACK block: a duplicate ACK collapsed"


@dataclass
class Violation:
    rule: str          # "identity", "ack-order", "data-order", "coverage", "counters"
    frames: tuple      # input frame indices concerned (may be empty)
    reason: str

    def __str__(self):
        where = ", ".join(f"#{i}" for i in self.frames)
        return f"{self.rule}: {where + ': ' if where else ''}{self.reason}"


@dataclass
class CheckReport:
    violations: list           # the first ``max_violations`` of each rule
    counts: dict               # rule -> number of violations found
    classes: dict              # class -> number of input frames
    removed_acks: int          # whole ACK-flagged segments that did not leave
    covered: int               # ... of which carried by the first later one of their flow that left
    handed_on: int             # ... of which carried by the next one of their flow, itself removed
    uncovered: int             # ... of which carried by none (overload losses)

    @property
    def ok(self):
        return not self.violations


def check(inputs, outputs, counters=None, *, slot_bytes, filter_off=False, max_violations=50):
    """Judge one run. Returns a :class:`CheckReport` (``report.ok`` when nothing is wrong).

    Parameters
    ----------
    inputs : list of bytes
        Frames in arrival order.
    outputs : list of bytes
        Frames in departure order.
    counters : dict or None
        The core's counters by name (every ``drop_*`` is treated as a drop).
    slot_bytes : int
        ACK slot size of the core under test.
    filter_off : bool
        The ACK filter was off: every frame is data (a flow's frames, ACKs
        included, leave in arrival order) and nothing may be removed but by
        a drop counter.
    max_violations : int
        Violations kept per rule (all are counted in ``report.counts``).
    """
    inputs = [bytes(f) for f in inputs]
    violations = []
    counts = {}

    def violate(rule, frames, reason):
        counts[rule] = counts.get(rule, 0) + 1
        if counts[rule] <= max_violations:
            violations.append(Violation(rule, tuple(frames), reason))

    segs = [parse_segment(f, slot_bytes=slot_bytes) for f in inputs]
    classes = {}
    for s in segs:
        classes[s.cls] = classes.get(s.cls, 0) + 1

    # Identity: each output frame is a distinct input frame (earliest unused copy).
    by_bytes = {}
    for i, f in enumerate(inputs):
        by_bytes.setdefault(f, []).append(i)
    cursor = {}
    out_index = []
    for k, f in enumerate(outputs):
        f = bytes(f)
        copies = by_bytes.get(f)
        if copies is None:
            violate("identity", (), f"output frame {k} is no input frame: {f[:80].hex()}")
            continue
        c = cursor.get(f, 0)
        if c == len(copies):
            violate("identity", (copies[-1],), f"output frame {k} leaves a second time")
            continue
        cursor[f] = c + 1
        out_index.append(copies[c])
    left = set(out_index)

    # Order, per flow: the ACK class in arrival order, the data class in
    # arrival order (with the filter off, every frame is data). Between the
    # classes, and between flows, any order goes; "unsure" is in neither.
    last_ack, last_data = {}, {}      # flow -> latest arrival index that has left
    for i in out_index:
        s = segs[i]
        if s.cls == "ack" and not filter_off:
            prev = last_ack.get(s.flow, -1)
            if i < prev:
                violate("ack-order", (i, prev),
                        f"ACK #{i} ({_describe(s)}) left after the later ACK #{prev} "
                        f"({_describe(segs[prev])}) of its flow")
            last_ack[s.flow] = max(prev, i)
        elif s.cls == "data" or filter_off:
            prev = last_data.get(s.flow, -1)
            if i < prev:
                violate("data-order", (i, prev),
                        f"{'frame' if filter_off else 'data'} #{i} left after the later "
                        f"{'frame' if filter_off else 'data'} #{prev} of its flow ({_describe_flow(s.flow)})")
            last_data[s.flow] = max(prev, i)

    # Coverage of the ACK-flagged segments that did not leave. A frame cut
    # short carries nothing (the receiver's IP drops it): never a carrier.
    arrivals, survivors = {}, {}   # flow -> ascending indices of whole ACK-flagged segments (all / left)
    for i, s in enumerate(segs):
        if s.ack_flagged and s.whole:
            arrivals.setdefault(s.flow, []).append(i)
            if i in left:
                survivors.setdefault(s.flow, []).append(i)
    removed = covered = handed_on = 0
    uncovered = []
    missing_other = 0
    for i, s in enumerate(segs):
        if i in left:
            continue
        if not (s.ack_flagged and s.whole):
            missing_other += 1
            continue
        removed += 1
        # The rule: the first later ACK of the flow that left carries it.
        later = survivors.get(s.flow, [])
        k = bisect.bisect_right(later, i)
        j = later[k] if k < len(later) else None
        why = carried(s, segs[j]) if j is not None else "no later ACK of its flow left"
        if not why:
            covered += 1
            continue
        # Or it handed its information on to the next ACK of its flow, which
        # was removed in turn: the chain then shares that ACK's fate (superseded
        # in place, then dropped from the front, loses one ACK's worth of news).
        nexts = arrivals[s.flow]
        n = nexts[bisect.bisect_right(nexts, i)] if nexts[-1] > i else None
        if n is not None and n not in left and not carried(s, segs[n]):
            handed_on += 1
            continue
        uncovered.append((i, j, why))
    drops = {name: v for name, v in (counters or {}).items() if name.startswith("drop_")}
    if counters is not None:
        # Overload losses of the ACK class come from drop_ack_front only; an
        # "unsure" segment may also have been handled as data (any drop), and
        # with the filter off every frame is data.
        budget = sum(drops.values()) if filter_off else drops.get("drop_ack_front", 0)
        lost_acks = [u for u in uncovered if segs[u[0]].cls == "ack"]
        if len(lost_acks) > budget:
            # Which of them were the overload losses is not known: the excess
            # counts as violations, each lost ACK is listed as a candidate.
            excess = len(lost_acks) - budget
            violate("coverage", (), f"{len(lost_acks)} ACKs lost without a carrier, {excess} more than "
                                    f"{'the drops' if filter_off else 'drop_ack_front'} = {budget}")
            counts["coverage"] += excess - 1
            for i, j, why in lost_acks[:max_violations]:
                violations.append(Violation(
                    "coverage", (i,) if j is None else (i, j),
                    f"candidate: ACK #{i} ({_describe(segs[i])}) lost: {why}"
                    + (f" (survivor #{j}: {_describe(segs[j])})" if j is not None else "")))
        elif missing_other + len(lost_acks) > sum(drops.values()):
            # Data is never superseded: it and the ACKs no survivor carries were dropped.
            violate("coverage", (), f"{missing_other} non-ACK frames and {len(lost_acks)} uncovered "
                                    f"ACKs did not leave; the drop counters sum to {sum(drops.values())}")
        fin, fout = counters.get("frames_in"), counters.get("frames_out")
        if fin != len(inputs):
            violate("counters", (), f"frames_in = {fin}, but {len(inputs)} frames arrived")
        if fout != len(outputs):
            violate("counters", (), f"frames_out = {fout}, but {len(outputs)} frames left")
        balance = (fout or 0) + counters.get("acks_superseded", 0) + sum(drops.values())
        if fin != balance:
            violate("counters", (), f"frames_in = {fin} != frames_out + acks_superseded + drops = {balance} "
                                    f"({', '.join(f'{k}={v}' for k, v in drops.items() if v)})")
    return CheckReport(violations, counts, classes, removed, covered, handed_on, len(uncovered))


def _describe(s):
    """A short text of an ACK-flagged segment, for messages."""
    names = [(0x800, "r2"), (0x400, "r1"), (0x200, "r0"), (0x100, "AE"), (CWR, "CWR"), (ECE, "ECE"),
             (URG, "URG"), (PSH, "PSH"), (ACK, "ACK")]
    text = "|".join(name for bit, name in names if s.flags & bit) + f" ack {s.ack}"
    if s.has_ts:
        text += f" ts {s.tsval}/{s.tsecr}"
    if s.sack:
        text += " sack " + " ".join(f"[{a},{b})" for a, b in s.sack)
    why = eligible(s)
    if why:
        text += f"; ineligible: {why}"
    return text
