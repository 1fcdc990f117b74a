"""Traffic traces for the ackfilter tests, the replay harness and the demo.

A trace is a list of ``(time_s, frame_bytes)`` sorted by time; frames carry no
preamble and no FCS (what the core sees) and are padded to 60 bytes like a
real NIC's.

Two frame builders make the same bytes:

* :func:`tcp_frame` with ``builder="scapy"`` builds with Scapy (the reference);
* ``builder="raw"`` assembles the bytes directly, about 50x faster, for the
  long traces (:func:`random_trace`, :func:`demo_scenario`). The tests check
  that both builders agree byte for byte.

Generators:

* :func:`ack_stream` — one flow's pure ACKs with a fixed ack step;
* :func:`demo_scenario` — ~2 s of a home uplink (~1 Mb/s): four downloads' ACK
  streams, one upload, a little other traffic;
* :func:`random_trace` — many flows and encapsulations, every supersession
  corner and malformed frames, each frame's bytes unique;
* :func:`malformed_cases` — every parser edge case of spec section 2 with its
  expected class.

:mod:`ackfilter.sim.pcap` stores traces (``write_pcap(path, trace, seconds=True)``).
"""

import random
import struct
import ipaddress
from dataclasses import dataclass, replace

__all__ = [
    "Flow", "tcp_frame", "tcp_options_bytes", "ack_stream", "data_stream",
    "demo_scenario", "random_trace", "malformed_cases", "expected_class",
    "MSS", "MIN_FRAME_BYTES",
]

#: Payload of a full-size segment (1514-byte frame, IPv4, timestamps off: 1460).
MSS = 1448
#: Frames shorter than this are padded (60 bytes: 64 minus the FCS).
MIN_FRAME_BYTES = 60

_FLAG_BITS = {"F": 0x01, "S": 0x02, "R": 0x04, "P": 0x08, "A": 0x10, "U": 0x20,
              "E": 0x40, "C": 0x80, "N": 0x100}


@dataclass(frozen=True)
class Flow:
    """Addressing of one TCP flow (the direction the core sees: LAN -> modem).

    ``vlans`` is a tuple of ``(tpid, vid)``, outermost first; ``pppoe_session``
    puts the IP packet in a PPPoE session (PPP protocol 0x0021 or 0x0057).
    The IP version follows from the addresses.
    """

    src: str = "192.168.1.10"
    dst: str = "203.0.113.5"
    sport: int = 50000
    dport: int = 443
    vlans: tuple = ()
    pppoe_session: int = None
    src_mac: str = "02:00:00:00:00:01"
    dst_mac: str = "02:00:00:00:00:fe"

    @property
    def ipv6(self):
        return ":" in self.src


def _flags_int(flags):
    if isinstance(flags, int):
        return flags
    value = 0
    for ch in flags:
        value |= _FLAG_BITS[ch]
    return value


def tcp_options_bytes(options):
    """Encode TCP options given the way Scapy takes them, as Scapy encodes them.

    ``options`` is a list of ``("NOP", None)``, ``("EOL", None)``,
    ``("MSS", n)``, ``("WScale", n)``, ``("SAckOK", b"")``,
    ``("SAck", (s0, e0, ...))``, ``("Timestamp", (tsval, tsecr))`` or
    ``(kind, payload_bytes)``; the result is zero-padded to a multiple of 4.
    """
    out = bytearray()
    for name, value in options:
        if name == "NOP":
            out += b"\x01"
        elif name == "EOL":
            out += b"\x00"
        elif name == "MSS":
            out += struct.pack("!BBH", 2, 4, value)
        elif name == "WScale":
            out += struct.pack("!BBB", 3, 3, value)
        elif name == "SAckOK":
            out += b"\x04\x02"
        elif name == "SAck":
            out += struct.pack("!BB", 5, 2 + 4 * len(value)) + b"".join(struct.pack("!I", v) for v in value)
        elif name == "Timestamp":
            out += struct.pack("!BBII", 8, 10, *value)
        elif isinstance(name, int):
            out += struct.pack("!BB", name, 2 + len(value)) + bytes(value)
        else:
            raise ValueError(f"unknown TCP option {name!r}")
    if len(out) % 4:
        out += b"\x00" * (4 - len(out) % 4)
    return bytes(out)


def _csum(data):
    if len(data) % 2:
        data += b"\x00"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _mac(text):
    return bytes.fromhex(text.replace(":", ""))


def _raw_frame(flow, *, seq, ack, flags, window, options, payload, ip_id, ecn, ttl,
               flow_label, ip_option_words, frag, reserved, urgptr):
    src_ip = ipaddress.ip_address(flow.src).packed
    dst_ip = ipaddress.ip_address(flow.dst).packed
    opts = tcp_options_bytes(options)
    if len(opts) > 40:
        raise ValueError(f"TCP options of {len(opts)} bytes do not fit in a TCP header (40 at most)")
    flags = _flags_int(flags)
    doff = 5 + len(opts) // 4
    tcp_len = 4 * doff + len(payload)
    tcp = bytearray(struct.pack("!HHIIBBHHH", flow.sport, flow.dport, seq & 0xFFFFFFFF,
                                ack & 0xFFFFFFFF, (doff << 4) | (reserved << 1) | (flags >> 8),
                                flags & 0xFF, window, 0, urgptr)) + opts + payload
    if flow.ipv6:
        pseudo = src_ip + dst_ip + struct.pack("!IxxxB", tcp_len, 6)
    else:
        pseudo = src_ip + dst_ip + struct.pack("!xBH", 6, tcp_len)
    struct.pack_into("!H", tcp, 16, _csum(pseudo + tcp))
    if flow.ipv6:
        ip = struct.pack("!IHBB", (6 << 28) | (ecn << 20) | flow_label, tcp_len, 6, ttl) + src_ip + dst_ip
    else:
        ihl = 5 + ip_option_words
        hdr = bytearray(struct.pack("!BBHHHBBH", 0x40 | ihl, ecn, 4 * ihl + tcp_len, ip_id, frag,
                                    ttl, 6, 0) + src_ip + dst_ip + b"\x01" * (4 * ip_option_words))
        struct.pack_into("!H", hdr, 10, _csum(bytes(hdr)))
        ip = bytes(hdr)
    packet = ip + bytes(tcp)
    if flow.pppoe_session is not None:
        packet = struct.pack("!BBHHH", 0x11, 0, flow.pppoe_session, len(packet) + 2,
                             0x0057 if flow.ipv6 else 0x0021) + packet
        inner_type = 0x8864
    else:
        inner_type = 0x86DD if flow.ipv6 else 0x0800
    l2 = _mac(flow.dst_mac) + _mac(flow.src_mac)
    types = [tpid for tpid, _ in flow.vlans] + [inner_type]
    l2 += struct.pack("!H", types[0])
    for (_, vid), next_type in zip(flow.vlans, types[1:]):
        l2 += struct.pack("!HH", vid & 0x0FFF, next_type)
    return l2 + packet


def _scapy_frame(flow, *, seq, ack, flags, window, options, payload, ip_id, ecn, ttl,
                 flow_label, ip_option_words, frag, reserved, urgptr):
    from scapy.layers.l2 import Ether, Dot1Q
    from scapy.layers.inet import IP, TCP, IPOption_NOP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.ppp import PPPoE, PPP
    from scapy.packet import Raw

    inner_type = 0x8864 if flow.pppoe_session is not None else (0x86DD if flow.ipv6 else 0x0800)
    types = [tpid for tpid, _ in flow.vlans] + [inner_type]
    pkt = Ether(dst=flow.dst_mac, src=flow.src_mac, type=types[0])
    for (_, vid), next_type in zip(flow.vlans, types[1:]):
        pkt = pkt / Dot1Q(vlan=vid, type=next_type)
    if flow.pppoe_session is not None:
        pkt = pkt / PPPoE(version=1, type=1, code=0, sessionid=flow.pppoe_session) \
                  / PPP(proto=0x0057 if flow.ipv6 else 0x0021)
    if flow.ipv6:
        pkt = pkt / IPv6(src=flow.src, dst=flow.dst, tc=ecn, fl=flow_label, hlim=ttl, nh=6)
    else:
        pkt = pkt / IP(src=flow.src, dst=flow.dst, id=ip_id, tos=ecn, ttl=ttl, proto=6,
                       flags=frag >> 13, frag=frag & 0x1FFF,
                       options=[IPOption_NOP() for _ in range(4 * ip_option_words)])
    pkt = pkt / TCP(sport=flow.sport, dport=flow.dport, seq=seq & 0xFFFFFFFF, ack=ack & 0xFFFFFFFF,
                    flags=_flags_int(flags), reserved=reserved, window=window, urgptr=urgptr,
                    options=list(options))
    if payload:
        pkt = pkt / Raw(payload)
    return bytes(pkt)


def tcp_frame(flow, *, seq=1, ack=0, flags="A", window=0xFFFF, options=(), payload=b"",
              ip_id=0, ecn=0, ttl=64, flow_label=0, ip_option_words=0, frag=0, reserved=0,
              urgptr=0, pad_to=MIN_FRAME_BYTES, pad_byte=0, src_mac=None, builder="scapy"):
    """One TCP segment of ``flow`` as frame bytes.

    Parameters
    ----------
    flags : str or int
        Scapy letters (``"A"``, ``"PA"``, ``"AE"``; ``"N"`` is the AE bit) or the
        9-bit flag value.
    options : list
        TCP options as Scapy takes them (see :func:`tcp_options_bytes`).
    ecn : int
        IP ECN field (IPv4 TOS / IPv6 traffic class; DSCP 0).
    ip_option_words : int
        IPv4 options of NOPs, in 4-byte words (IHL = 5 + this).
    frag : int
        IPv4 flags and fragment offset word (``0x2000`` MF, ``0x4000`` DF).
    reserved : int
        The three reserved TCP header bits.
    pad_to, pad_byte : int
        Pad a shorter frame to ``pad_to`` bytes with ``pad_byte``.
    src_mac : str
        Overrides ``flow.src_mac`` (traces make frames unique through it).
    builder : "scapy" or "raw"
    """
    if src_mac is not None:
        flow = replace(flow, src_mac=src_mac)
    build = {"scapy": _scapy_frame, "raw": _raw_frame}[builder]
    frame = build(flow, seq=seq, ack=ack, flags=flags, window=window, options=options,
                  payload=bytes(payload), ip_id=ip_id & 0xFFFF, ecn=ecn, ttl=ttl,
                  flow_label=flow_label & 0xFFFFF, ip_option_words=ip_option_words,
                  frag=frag, reserved=reserved, urgptr=urgptr)
    if len(frame) < pad_to:
        frame += bytes([pad_byte]) * (pad_to - len(frame))
    return frame


def _ts_options(tsval, tsecr, sack=()):
    opts = [("NOP", None), ("NOP", None), ("Timestamp", (tsval & 0xFFFFFFFF, tsecr & 0xFFFFFFFF))]
    if sack:
        opts += [("NOP", None), ("NOP", None),
                 ("SAck", tuple(v & 0xFFFFFFFF for block in sack for v in block))]
    return opts


def ack_stream(flow, n, start_ack, step, *, start_time=0.0, interval=1e-3, seq=1,
               ts=None, ts_step=1, window=0xFFFF, ecn=0, flags="A", ip_id=0, builder="scapy"):
    """``n`` pure ACKs of ``flow``: ack ``start_ack + i*step`` (mod 2^32) at ``start_time + i*interval``.

    ``ts=(tsval, tsecr)`` adds a timestamps option (NOP, NOP, TS) whose TSval
    advances by ``ts_step`` per ACK. ``ip_id`` (and the IPv6 flow label)
    counts up per frame so the frames are unique. Returns ``[(time_s, bytes)]``.
    """
    out = []
    for i in range(n):
        opts = _ts_options(ts[0] + i * ts_step, ts[1]) if ts is not None else ()
        frame = tcp_frame(flow, seq=seq, ack=(start_ack + i * step) & 0xFFFFFFFF, flags=flags,
                          window=window, options=opts, ecn=ecn, ip_id=ip_id + i,
                          flow_label=ip_id + i, builder=builder)
        out.append((start_time + i * interval, frame))
    return out


def data_stream(flow, n, *, start_seq=1, ack=1, size=1514, start_time=0.0, interval=1e-3,
                ip_id=0, builder="raw"):
    """``n`` full data segments (PSH|ACK) of ``size``-byte frames of ``flow``."""
    out = []
    seq = start_seq
    for i in range(n):
        hdr = tcp_frame(flow, builder=builder, pad_to=0)
        payload_len = size - len(hdr)
        payload = bytes((seq + k) & 0xFF for k in range(payload_len))
        frame = tcp_frame(flow, seq=seq, ack=ack, flags="PA", payload=payload,
                          ip_id=ip_id + i, flow_label=ip_id + i, builder=builder)
        out.append((start_time + i * interval, frame))
        seq = (seq + payload_len) & 0xFFFFFFFF
    return out


# --------------------------------------------------------------------------
# Other frames (ARP, UDP) built raw.

def _arp_frame(src_mac, sender_ip, target_ip):
    body = struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + _mac(src_mac) + \
        ipaddress.ip_address(sender_ip).packed + b"\x00" * 6 + ipaddress.ip_address(target_ip).packed
    frame = b"\xff" * 6 + _mac(src_mac) + b"\x08\x06" + body
    return frame + b"\x00" * max(0, MIN_FRAME_BYTES - len(frame))


def _udp_frame(src_mac, dst_mac, src, dst, sport, dport, payload, ip_id=0, vlans=()):
    if ":" in src:
        s, d = ipaddress.ip_address(src).packed, ipaddress.ip_address(dst).packed
        udp = bytearray(struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload)
        struct.pack_into("!H", udp, 6, _csum(s + d + struct.pack("!IxxxB", len(udp), 17) + udp) or 0xFFFF)
        ip = struct.pack("!IHBB", 6 << 28, len(udp), 17, 64) + s + d + bytes(udp)
        etype = 0x86DD
    else:
        s, d = ipaddress.ip_address(src).packed, ipaddress.ip_address(dst).packed
        udp = bytearray(struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload)
        struct.pack_into("!H", udp, 6, _csum(s + d + struct.pack("!xBH", 17, len(udp)) + udp) or 0xFFFF)
        hdr = bytearray(struct.pack("!BBHHHBBH", 0x45, 0, 20 + len(udp), ip_id & 0xFFFF, 0, 64, 17, 0) + s + d)
        struct.pack_into("!H", hdr, 10, _csum(bytes(hdr)))
        ip = bytes(hdr) + bytes(udp)
        etype = 0x0800
    l2 = _mac(dst_mac) + _mac(src_mac)
    types = [t for t, _ in vlans] + [etype]
    l2 += struct.pack("!H", types[0])
    for (_, vid), nt in zip(vlans, types[1:]):
        l2 += struct.pack("!HH", vid, nt)
    frame = l2 + ip
    return frame + b"\x00" * max(0, MIN_FRAME_BYTES - len(frame))


def _uniq_mac(counter):
    """A locally administered source MAC carrying a 32-bit frame counter."""
    return "02:5a:" + ":".join(f"{b:02x}" for b in counter.to_bytes(4, "big"))


# --------------------------------------------------------------------------
# Demo scenario.

def demo_scenario(seed=1, *, duration_s=2.0, uplink_bps=1_000_000):
    """About ``duration_s`` of a home uplink of ``uplink_bps`` (default ~1 Mb/s).

    * four downloads at 10-20 Mb/s each: their receivers' ACK streams, one ACK
      per two 1448-byte segments (ack += 2*1448), timestamps (1 kHz clock),
      a few loss episodes with one dup ACK per segment carrying growing SACK
      blocks, then the recovery ACK;
    * one upload of 1514-byte segments at the uplink rate (it alone fills it);
    * a little other traffic: ARP, DNS over UDP, an IPv6 ACK flow, an ACK flow
      on VLAN 100.

    Every frame's bytes are unique (its source MAC carries a frame counter).
    Returns ``[(time_s, bytes)]`` sorted by time.
    """
    rng = random.Random(seed)
    events = []        # (time, order, builder-callable producing bytes given a uniq MAC)

    def add(t, make):
        events.append((t, len(events), make))

    def download(flow, rate_bps, t0, loss_episodes):
        seg_interval = MSS * 8 / rate_bps
        ack = rng.getrandbits(32)
        ts_clock = rng.getrandbits(32)       # receiver's 1 kHz clock at t=0
        peer_ts = rng.getrandbits(32)        # echoed sender clock
        ip_id = rng.getrandbits(16)
        t = t0
        losses = sorted(rng.uniform(0.2, duration_s - 0.3) for _ in range(loss_episodes))
        while t < duration_s:
            if losses and t >= losses[0]:
                losses.pop(0)
                # One segment is lost: one dup ACK per later segment, SACKing them.
                hole = ack
                dups = rng.randint(3, 12)
                for k in range(1, dups + 1):
                    t += seg_interval * rng.uniform(0.9, 1.1)
                    sack = ((hole + MSS) & 0xFFFFFFFF, (hole + MSS * (k + 1)) & 0xFFFFFFFF)
                    tsval = ts_clock + int(t * 1000)
                    add(t, _ack_maker(flow, ack, tsval, peer_ts + int(t * 1000) - 40, [sack], ip_id))
                    ip_id += 1
                # Retransmission arrives one RTT later: everything acknowledged.
                t += 0.04
                ack = (ack + MSS * (dups + 1)) & 0xFFFFFFFF
            else:
                t += 2 * seg_interval * rng.uniform(0.8, 1.2)
                ack = (ack + 2 * MSS) & 0xFFFFFFFF
            tsval = ts_clock + int(t * 1000)
            add(t, _ack_maker(flow, ack, tsval, peer_ts + int(t * 1000) - 40, (), ip_id))
            ip_id += 1

    base = Flow(src_mac="02:00:00:00:00:10", dst_mac="02:00:00:00:00:01")
    for i in range(4):
        flow = replace(base, src=f"192.168.1.{10 + i}", dst=f"198.51.100.{20 + i}",
                       sport=40000 + rng.randrange(20000), dport=443)
        download(flow, rng.uniform(10e6, 20e6), rng.uniform(0, 0.01), loss_episodes=rng.randint(1, 3))
    v6 = replace(base, src="2001:db8:1::10", dst="2001:db8:2::20", sport=51000, dport=443)
    download(v6, 2e6, 0.005, loss_episodes=0)
    vlan = replace(base, src="10.10.0.5", dst="198.51.100.99", sport=52000, dport=80, vlans=((0x8100, 100),))
    download(vlan, 1e6, 0.007, loss_episodes=0)

    # Upload: 1514-byte segments at the uplink rate.
    up = replace(base, src="192.168.1.50", dst="203.0.113.80", sport=53000, dport=22)
    interval = 1514 * 8 / uplink_bps
    seq, up_ack, ip_id = rng.getrandbits(32), rng.getrandbits(32), 0
    t = 0.001
    while t < duration_s:
        hdr_len = 14 + 20 + 20
        payload = bytes((seq + k) & 0xFF for k in range(1514 - hdr_len))
        add(t, lambda mac, s=seq, a=up_ack, i=ip_id, p=payload: tcp_frame(
            up, seq=s, ack=a, flags="PA", payload=p, ip_id=i, src_mac=mac, builder="raw"))
        seq = (seq + len(payload)) & 0xFFFFFFFF
        ip_id += 1
        t += interval

    # Other traffic.
    for k in range(int(duration_s / 0.5)):
        add(rng.uniform(0, duration_s), lambda mac, k=k: _arp_frame(mac, "192.168.1.10", f"192.168.1.{200 + k}"))
    for k in range(int(duration_s * 5)):
        q = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00" + bytes([7]) + b"example" + \
            bytes([3]) + b"com\x00\x00\x01\x00\x01"
        add(rng.uniform(0, duration_s), lambda mac, k=k, q=q: _udp_frame(
            mac, "02:00:00:00:00:01", "192.168.1.11", "192.168.1.1", 30000 + k, 53, q, ip_id=k))

    events.sort(key=lambda e: (e[0], e[1]))
    return [(t, make(_uniq_mac(n))) for n, (t, _, make) in enumerate(events)]


def _ack_maker(flow, ack, tsval, tsecr, sack, ip_id):
    opts = _ts_options(tsval, tsecr, sack)
    return lambda mac: tcp_frame(flow, seq=1, ack=ack, options=opts, ip_id=ip_id, flow_label=ip_id,
                                 src_mac=mac, builder="raw")


# --------------------------------------------------------------------------
# Random trace.

_TPIDS = (0x8100, 0x88A8, 0x9100)


class _RandomFlow:
    """State of one random flow's receiver (the side whose ACKs the core sees)."""

    def __init__(self, rng, index):
        self.rng = rng
        r = rng.random()
        v6 = rng.random() < 0.3
        if v6:
            src, dst = f"2001:db8:{index:x}::{rng.randrange(1, 0xFFFF):x}", f"2001:db8:ffff::{rng.randrange(1, 0xFFFF):x}"
        else:
            src, dst = f"10.{index >> 8 & 255}.{index & 255}.{rng.randrange(1, 255)}", f"198.51.{rng.randrange(256)}.{rng.randrange(1, 255)}"
        vlans, pppoe = (), None
        if r < 0.15:
            vlans = ((rng.choice(_TPIDS), rng.randrange(4096)),)
        elif r < 0.25:
            vlans = ((rng.choice(_TPIDS), rng.randrange(4096)), (rng.choice(_TPIDS), rng.randrange(4096)))
        elif r < 0.35:
            pppoe = rng.randrange(1, 0xFFFF)
        elif r < 0.40:
            vlans, pppoe = ((0x8100, rng.randrange(4096)),), rng.randrange(1, 0xFFFF)
        elif r < 0.43:
            vlans, pppoe = ((0x88A8, rng.randrange(4096)), (0x8100, rng.randrange(4096))), rng.randrange(1, 0xFFFF)
        self.flow = Flow(src=src, dst=dst, sport=rng.randrange(1024, 65536), dport=rng.choice((80, 443, 8080, 22)),
                         vlans=vlans, pppoe_session=pppoe)
        # Start near the 2^32 wrap for some flows.
        self.ack = (2**32 - rng.randrange(1, 50) * MSS) if rng.random() < 0.2 else rng.getrandbits(32)
        self.seq = rng.getrandbits(32)
        self.has_ts = rng.random() < 0.8
        self.tsval = (2**32 - rng.randrange(1, 40)) if rng.random() < 0.2 else rng.getrandbits(32)
        self.tsecr = rng.getrandbits(32)
        self.ecn = rng.choice((0, 0, 0, 1, 2))   # ECT(1)/ECT(0) for ECN-capable flows
        self.ece = False
        self.cwr = False
        self.sack = []                          # current SACK blocks (relative to a hole)
        self.window = rng.randrange(1000, 65536)

    def next_ack_fields(self):
        """Advance the receiver and return the fields of its next pure ACK."""
        rng = self.rng
        r = rng.random()
        sack = []
        if r < 0.45:                                    # cumulative advance
            self.ack = (self.ack + rng.choice((MSS, 2 * MSS, 2 * MSS, 3 * MSS, rng.randrange(1, 5000)))) & 0xFFFFFFFF
            self.sack = []
        elif r < 0.65:                                  # dup ACK series, SACK growing or not
            if self.sack or rng.random() < 0.5:
                if not self.sack:
                    s = (self.ack + MSS) & 0xFFFFFFFF
                    self.sack = [(s, (s + MSS) & 0xFFFFFFFF)]
                elif rng.random() < 0.8:
                    s, e = self.sack[0]
                    self.sack[0] = (s, (e + MSS) & 0xFFFFFFFF)
                elif len(self.sack) < 3:
                    s, e = self.sack[0]
                    ns = (e + MSS) & 0xFFFFFFFF
                    self.sack.insert(0, (ns, (ns + MSS) & 0xFFFFFFFF))
            sack = list(self.sack)
        elif r < 0.70:                                  # D-SACK: block below the ack
            s = (self.ack - rng.randrange(1, 4) * MSS) & 0xFFFFFFFF
            sack = [(s, (s + MSS) & 0xFFFFFFFF)] + list(self.sack[:2])
        elif r < 0.73:                                  # D-SACK inside block 1
            if self.sack:
                s, e = self.sack[0]
                sack = [(s, (s + min(MSS, (e - s) & 0xFFFFFFFF)) & 0xFFFFFFFF)] + list(self.sack)
            else:
                sack = []
        elif r < 0.77:                                  # ECE/CWR change
            self.ece = not self.ece if rng.random() < 0.7 else self.ece
            self.cwr = rng.random() < 0.3
        elif r < 0.80:                                  # reordered: an older ACK
            return self._fields(((self.ack - rng.randrange(1, 4) * MSS) & 0xFFFFFFFF),
                                (self.tsval - rng.randrange(0, 3)) & 0xFFFFFFFF, sack=[])
        elif r < 0.82:                                  # malformed SACK block (end before start)
            s = (self.ack + 5 * MSS) & 0xFFFFFFFF
            sack = [(s, (s - MSS) & 0xFFFFFFFF)]
        elif r < 0.85:                                  # recovery: everything SACKed is acked
            if self.sack:
                self.ack = max(((e - self.ack) & 0xFFFFFFFF for _, e in self.sack)) + self.ack & 0xFFFFFFFF
                self.sack = []
        else:                                           # pure dup ACK without SACK
            pass
        if rng.random() < 0.7:
            self.tsval = (self.tsval + rng.randrange(0, 4)) & 0xFFFFFFFF
        if rng.random() < 0.5:
            self.tsecr = (self.tsecr + rng.randrange(0, 4)) & 0xFFFFFFFF
        ecn = self.ecn
        if ecn and rng.random() < 0.02:
            ecn = 3                                     # CE on this one
        return self._fields(self.ack, self.tsval, sack=sack, ecn=ecn)

    def _fields(self, ack, tsval, *, sack, ecn=None):
        opts = []
        if self.has_ts:
            opts += [("NOP", None), ("NOP", None), ("Timestamp", (tsval, self.tsecr))]
        if sack:
            max_blocks = 3 if self.has_ts else 4     # 40 bytes of options at most
            opts += [("NOP", None), ("NOP", None), ("SAck", tuple(v for b in sack[:max_blocks] for v in b))]
        flags = "A" + ("E" if self.ece else "") + ("C" if self.cwr else "")
        return dict(seq=self.seq, ack=ack, flags=flags, options=opts, window=self.window,
                    ecn=self.ecn if ecn is None else ecn)


def _malformed_random(rng, frame):
    """Corrupt a well-formed frame in one of the ways the parser must reject or survive."""
    kind = rng.randrange(7)
    f = bytearray(frame)
    if kind == 0:                        # truncated anywhere after the Ethernet header
        return bytes(f[:rng.randrange(14, max(15, len(f)))])
    if kind == 1:                        # random byte flipped in the headers
        i = rng.randrange(12, min(len(f), 80))
        f[i] ^= 1 << rng.randrange(8)
        return bytes(f)
    if kind == 2:                        # trailing garbage
        return bytes(f) + bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 20)))
    if kind == 3:                        # random bytes after the MACs
        return bytes(f[:12]) + bytes(rng.getrandbits(8) for _ in range(rng.randrange(2, 120)))
    if kind == 4:                        # third VLAN tag / unknown EtherType
        return bytes(f[:12]) + struct.pack("!HH", rng.choice(_TPIDS + (0x88B5, 0x8863, 0x0600)), 5) + bytes(f[12:])
    if kind == 5:                        # half of the frame
        return bytes(f[:max(14, len(f) // 2)])
    return bytes(f[:-1])                 # one byte short


def random_trace(seed, n_frames=10_000, n_flows=200):
    """A deterministic random trace of exactly ``n_frames`` frames over ``n_flows`` ACK flows.

    Mix (by frame): ~62 % pure ACKs of the flows (random advances, dup-ACK
    series with growing SACK blocks, D-SACK, malformed SACK blocks, ECE/CWR
    and CE changes, reordered older ACKs, timestamps and ack numbers wrapping
    at 2^32; IPv4/IPv6 over plain Ethernet, VLAN, QinQ, PPPoE, VLAN+PPPoE;
    a few with padding bytes that are not zero), PSH|ACK without payload,
    ACKs with payload, SYN/FIN/RST, ACKs with MSS/window-scale/unknown
    options, data segments of 60..1514 bytes, UDP/ARP, IPv4 fragments, IPv6
    with an extension header, IP options, malformed frames (runts, truncated
    headers, bad IHL, TCP option lengths 0/1/past the header, IP total length
    longer or shorter than the frame) and oversize frames.

    Every frame is unique: its source MAC carries the frame's index (runts,
    which have no whole source MAC, are made unique otherwise). Frames are
    spaced by exponential gaps of mean 2 us. Returns ``[(time_s, bytes)]``.
    """
    rng = random.Random(seed)
    flows = [_RandomFlow(rng, i) for i in range(n_flows)]
    # Zipf-like popularity so some flows are busy (supersession) and some idle.
    weights = [1 / (i + 1) ** 0.8 for i in range(n_flows)]
    out, seen = [], set()
    t = 0.0
    n = 0
    while len(out) < n_frames:
        mac = _uniq_mac(n)
        n += 1
        fl = rng.choices(flows, weights)[0]
        r = rng.random()
        ip_id = n & 0xFFFF
        common = dict(ip_id=ip_id, flow_label=n, src_mac=mac, builder="raw")
        if r < 0.62:
            fields = fl.next_ack_fields()
            pad_byte = rng.choice((0, 0, 0, 0xAA))
            frame = tcp_frame(fl.flow, pad_byte=pad_byte, **fields, **common)
        elif r < 0.64:                               # PSH|ACK without payload
            f = fl.next_ack_fields()
            f["flags"] = "PA"
            frame = tcp_frame(fl.flow, **f, **common)
        elif r < 0.67:                               # ACK with a little payload
            f = fl.next_ack_fields()
            frame = tcp_frame(fl.flow, payload=bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 40))),
                              **f, **common)
        elif r < 0.69:                               # SYN/FIN/RST/URG/AE/reserved
            f = fl.next_ack_fields()
            choice = rng.randrange(6)
            if choice < 4:
                f["flags"] = ("SA", "FA", "R", "RA", "UA", "AN")[rng.randrange(6)]
                frame = tcp_frame(fl.flow, **f, **common)
            else:
                frame = tcp_frame(fl.flow, reserved=1 << rng.randrange(3), **f, **common)
        elif r < 0.71:                               # other options on an otherwise pure ACK
            f = fl.next_ack_fields()
            f["options"] = [o for o in f["options"] if o[0] != "SAck"] + rng.choice((
                [("MSS", 1460)], [("NOP", None), ("WScale", 7)], [("SAckOK", b""), ("NOP", None), ("NOP", None)],
                [(34, b"\x00" * 6)], [(19, b"\x11" * 16)], [(99, b"")]))
            frame = tcp_frame(fl.flow, **f, **common)
        elif r < 0.86:                               # data segments 60..1514
            size = rng.randrange(60, 1515)
            hdr = 14 + 4 * len(fl.flow.vlans) + (8 if fl.flow.pppoe_session is not None else 0) + \
                (40 if fl.flow.ipv6 else 20) + 20
            payload = bytes(rng.getrandbits(8) for _ in range(max(1, size - hdr)))
            fl.seq = (fl.seq + len(payload)) & 0xFFFFFFFF
            frame = tcp_frame(fl.flow, seq=fl.seq, ack=fl.ack, flags=rng.choice(("A", "PA")),
                              payload=payload, **common)
        elif r < 0.89:                               # other protocols
            k = rng.randrange(4)
            if k == 0:
                frame = _arp_frame(mac, "192.168.1.2", f"192.168.1.{rng.randrange(1, 255)}")
            elif k == 1:
                frame = _udp_frame(mac, "02:00:00:00:00:fe", "192.168.1.2", "8.8.8.8", rng.randrange(1024, 65536),
                                   53, bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 200))), ip_id=ip_id,
                                   vlans=fl.flow.vlans[:1])
            elif k == 2:                             # IPv4 fragment of a pure ACK
                f = fl.next_ack_fields()
                frame = tcp_frame(replace(fl.flow, src="10.200.0.1", dst="10.200.0.2", pppoe_session=None),
                                  frag=rng.choice((0x2000, 0x0001, 0x2010)), **f, **common)
            else:                                    # IPv6 with a hop-by-hop header before TCP
                f = fl.next_ack_fields()
                v6 = replace(fl.flow, src="2001:db8::1", dst="2001:db8::2", vlans=(), pppoe_session=None)
                b = bytearray(tcp_frame(v6, **f, **common))
                tcp = b[54:]
                hbh = bytes([6, 0, 1, 4, 0, 0, 0, 0])
                b = b[:54] + hbh + tcp
                b[20] = 0                            # next header: hop-by-hop
                struct.pack_into("!H", b, 18, len(tcp) + 8)
                frame = bytes(b)
        elif r < 0.90:                               # pure ACK with IPv4 options
            f = fl.next_ack_fields()
            v4 = replace(fl.flow, src="10.201.0.1", dst="10.201.0.2") if fl.flow.ipv6 else fl.flow
            frame = tcp_frame(v4, ip_option_words=rng.randrange(1, 11), **f, **common)
        elif r < 0.96:                               # malformed
            f = fl.next_ack_fields()
            k = rng.randrange(7)
            if k == 0:                               # runt
                frame = bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 14)))
            elif k == 1:                             # bad option lengths
                bad = rng.choice((b"\x08\x00\x00\x00", b"\x05\x01\x00\x00", b"\x01\x01\x02\x09",
                                  b"\x01\x01\x01\x08", b"\x08\x08\x00\x00\x00\x00\x00\x00",
                                  b"\x05\x0c" + b"\x00" * 10, b"\x03\x00\x01\x01"))
                frame = tcp_frame(fl.flow, **{**f, "options": [("NOP", None)] * 0}, **common)
                frame = _insert_raw_options(frame, fl.flow, bad + b"\x00" * (-len(bad) % 4))
            elif k == 2:                             # bad IHL (IPv4 only)
                frame = bytearray(tcp_frame(fl.flow, **f, **common))
                ip = _ip_offset(fl.flow)
                if not fl.flow.ipv6:
                    frame[ip] = 0x40 | rng.choice((0, 1, 4, 6, 15))
                else:
                    frame[ip] = 0x40 | (frame[ip] & 0x0F)      # version 4 in an IPv6 slot
                frame = bytes(frame)
            elif k == 3:                             # IP length longer or shorter than the frame
                frame = bytearray(tcp_frame(fl.flow, **f, **common))
                ip = _ip_offset(fl.flow)
                pos = ip + (4 if fl.flow.ipv6 else 2)
                delta = rng.choice((-8, -4, -1, 1, 4, 8, 100))
                struct.pack_into("!H", frame, pos, (struct.unpack_from("!H", frame, pos)[0] + delta) & 0xFFFF)
                frame = bytes(frame)
            else:
                frame = _malformed_random(rng, tcp_frame(fl.flow, **f, **common))
        elif r < 0.97:                               # oversize
            size = rng.randrange(2049, 2600)
            frame = tcp_frame(fl.flow, flags="PA", payload=bytes(size - 54 - 4 * len(fl.flow.vlans)), **common)
            frame = frame[:size] if len(frame) > size else frame
        else:                                        # pure ACK near the slot size
            f = fl.next_ack_fields()          # options filled up to 40 bytes with NOPs
            opts = [("NOP", None)] * (40 - len(tcp_options_bytes(f["options"]))) + list(f["options"])
            v4 = not fl.flow.ipv6
            frame = tcp_frame(fl.flow, **{**f, "options": opts},
                              ip_option_words=rng.randrange(0, 11) if v4 else 0, **common)
        if frame in seen:
            continue            # only random runts can repeat; draw again
        seen.add(frame)
        t += rng.expovariate(1 / 2e-6)
        out.append((t, frame))
    return out


def _ip_offset(flow):
    return 14 + 4 * len(flow.vlans) + (8 if flow.pppoe_session is not None else 0)


def _insert_raw_options(frame, flow, raw_opts):
    """Replace a frame's TCP options (none) with ``raw_opts`` and fix every length field."""
    ip = _ip_offset(flow)
    ip_len = 40 if flow.ipv6 else 4 * (frame[ip] & 0x0F)
    tcp = ip + ip_len
    doff = frame[tcp + 12] >> 4
    end = tcp + 4 * doff
    f = bytearray(frame[:end]) + raw_opts     # no payload, drop any padding
    f[tcp + 12] = ((doff + len(raw_opts) // 4) << 4) | (f[tcp + 12] & 0x0F)
    _fix_lengths(f, flow, len(f) - ip)
    return bytes(f) + b"\x00" * max(0, MIN_FRAME_BYTES - len(f))


def _fix_lengths(f, flow, ip_packet_len):
    ip = _ip_offset(flow)
    if flow.pppoe_session is not None:
        struct.pack_into("!H", f, ip - 4, ip_packet_len + 2)
    if flow.ipv6:
        struct.pack_into("!H", f, ip + 4, ip_packet_len - 40)
    else:
        struct.pack_into("!H", f, ip + 2, ip_packet_len)
        struct.pack_into("!H", f, ip + 10, 0)
        struct.pack_into("!H", f, ip + 10, _csum(bytes(f[ip:ip + 4 * (f[ip] & 0x0F)])))


# --------------------------------------------------------------------------
# Parser edge cases.

def expected_class(expected):
    """``(cls, eligible)`` of a :func:`malformed_cases` expectation."""
    if expected in ("ack", "ack-ineligible"):
        return "ack", expected == "ack"
    return expected, False


def malformed_cases():
    """Every parser edge case of spec section 2, built with Scapy, with its expected class.

    Returns ``{name: (frame_bytes, expected)}`` where ``expected`` is the class
    a filtering mode (conservative or aggressive) gives, ``"ack"`` for an
    eligible pure ACK and ``"ack-ineligible"`` for a pure ACK that may neither
    supersede nor be superseded; in mode ``off`` every pure ACK is ``data``.
    Each expectation is reasoned by hand from the spec and noted in the name.
    """
    from scapy.layers.l2 import Ether, Dot1Q, ARP
    from scapy.layers.inet import IP, TCP, UDP, IPOption_NOP, IPOption_Router_Alert
    from scapy.layers.inet6 import IPv6, IPv6ExtHdrHopByHop
    from scapy.layers.ppp import PPPoE, PPPoED, PPP

    eth = dict(dst="02:00:00:00:00:fe", src="02:00:00:00:00:01")
    ip4 = dict(src="192.168.1.10", dst="203.0.113.5", id=7)
    ip6 = dict(src="2001:db8::10", dst="2001:db8::20")
    ts = [("NOP", None), ("NOP", None), ("Timestamp", (1000, 2000))]

    def tcp(**kw):
        base = dict(sport=50000, dport=443, seq=1, ack=100000, flags="A", window=65535)
        base.update(kw)
        return TCP(**base)

    def pad(b, to=MIN_FRAME_BYTES, byte=0):
        return b + bytes([byte]) * max(0, to - len(b))

    def v4(raw_opts=None, **kw):
        """``raw_opts`` replaces the last ``len(raw_opts)`` option bytes, with the TCP checksum fixed."""
        pkt = Ether(**eth) / IP(**ip4) / tcp(**kw)
        if raw_opts is None:
            return bytes(pkt)
        b = bytearray(bytes(pkt))
        b[len(b) - len(raw_opts):] = raw_opts
        b[50:52] = b"\0\0"
        b[50:52] = _csum(bytes(b[26:34]) + b"\x00\x06" + (len(b) - 34).to_bytes(2, "big") +
                         bytes(b[34:])).to_bytes(2, "big")
        return bytes(b)

    def patch(b, offset, value):
        b = bytearray(b)
        b[offset:offset + len(value)] = value
        return bytes(b)

    c = {}
    # -- frame size classes
    c["runt_1_byte"] = (b"\x02", "runt")
    c["runt_13_bytes"] = (bytes(Ether(**eth))[:13], "runt")
    c["ethernet_header_only_14_bytes_is_data"] = (bytes(Ether(**eth, type=0x0800))[:14], "data")
    c["oversize_2049_bytes"] = (pad(bytes(Ether(**eth) / IP(**ip4) / UDP(sport=1, dport=2)), 2049), "oversize")
    c["data_2048_bytes_is_largest_accepted"] = (pad(bytes(Ether(**eth) / IP(**ip4) / UDP(sport=1, dport=2)), 2048), "data")
    # -- the plain pure ACK and padding (rule 5)
    c["ack_ipv4_54_bytes_unpadded"] = (v4(), "ack")
    c["ack_ipv4_padded_to_60_with_zeros"] = (pad(v4()), "ack")
    c["ack_ipv4_padded_with_nonzero_bytes"] = (pad(v4(), byte=0xAA), "ack")
    c["ack_ipv4_padded_to_64"] = (pad(v4(), 64), "ack")
    c["padding_to_65_bytes_is_ineligible"] = (pad(v4(), 65), "ack-ineligible")
    c["ack_66_bytes_with_2_trailing_bytes_is_ineligible"] = (v4(options=ts) + b"\x00\x00", "ack-ineligible")
    c["ack_vlan_padded_to_68"] = (pad(bytes(Ether(**eth, type=0x8100) / Dot1Q(vlan=5, type=0x0800) /
                                             IP(**ip4) / tcp()), 68), "ack")
    c["ack_vlan_padded_to_69_is_ineligible"] = (pad(bytes(Ether(**eth, type=0x8100) / Dot1Q(vlan=5, type=0x0800) /
                                                          IP(**ip4) / tcp()), 69), "ack-ineligible")
    c["ack_qinq_padded_to_72"] = (pad(bytes(Ether(**eth, type=0x88A8) / Dot1Q(vlan=10, type=0x8100) /
                                            Dot1Q(vlan=20, type=0x0800) / IP(**ip4) / tcp()), 72), "ack")
    c["ack_with_timestamps_66_bytes"] = (v4(options=ts), "ack")
    c["frame_shorter_than_ip_total_length_is_data"] = (v4(options=ts)[:-4], "data")
    c["padded_frame_shorter_than_ip_total_length_is_data"] = (
        pad(bytes(Ether(**eth) / IP(**ip4, len=64) / tcp())), "data")
    c["ip_total_length_4_more_than_tcp_header_is_payload_data"] = (
        pad(bytes(Ether(**eth) / IP(**ip4, len=44) / tcp())), "data")
    c["ip_total_length_below_ihl_plus_20_is_data"] = (
        pad(bytes(Ether(**eth) / IP(**ip4, len=36) / tcp())), "data")
    # -- L2 (rule 1)
    for tpid in (0x8100, 0x88A8, 0x9100):
        c[f"ack_vlan_tpid_{tpid:04x}"] = (
            pad(bytes(Ether(**eth, type=tpid) / Dot1Q(vlan=100, type=0x0800) / IP(**ip4) / tcp())), "ack")
    c["ack_qinq_88a8_8100"] = (bytes(Ether(**eth, type=0x88A8) / Dot1Q(vlan=10, type=0x8100) /
                                     Dot1Q(vlan=20, type=0x0800) / IP(**ip4) / tcp(options=ts)), "ack")
    c["ack_qinq_9100_9100"] = (bytes(Ether(**eth, type=0x9100) / Dot1Q(vlan=10, type=0x9100) /
                                     Dot1Q(vlan=20, type=0x0800) / IP(**ip4) / tcp(options=ts)), "ack")
    c["three_vlan_tags_is_data"] = (bytes(Ether(**eth, type=0x8100) / Dot1Q(vlan=1, type=0x8100) /
                                          Dot1Q(vlan=2, type=0x8100) / Dot1Q(vlan=3, type=0x0800) /
                                          IP(**ip4) / tcp()), "data")
    c["vlan_tpid_88b5_is_data"] = (pad(patch(bytes(Ether(**eth, type=0x8100) / Dot1Q(vlan=100, type=0x0800) /
                                                   IP(**ip4) / tcp()), 12, b"\x88\xb5")), "data")
    c["arp_is_data"] = (pad(bytes(Ether(dst="ff:ff:ff:ff:ff:ff", src=eth["src"]) /
                                  ARP(psrc="192.168.1.10", pdst="192.168.1.1"))), "data")
    c["ieee_802_3_length_field_is_data"] = (pad(patch(v4(), 12, b"\x00\x2e")), "data")
    ppp4 = Ether(**eth, type=0x8864) / PPPoE(sessionid=0x1234) / PPP(proto=0x0021) / IP(**ip4) / tcp()
    c["ack_pppoe_ipv4"] = (pad(bytes(ppp4)), "ack")
    c["ack_pppoe_ipv6"] = (bytes(Ether(**eth, type=0x8864) / PPPoE(sessionid=0x1234) / PPP(proto=0x0057) /
                                 IPv6(**ip6) / tcp(options=ts)), "ack")
    c["ack_vlan_pppoe_ipv4"] = (bytes(Ether(**eth, type=0x8100) / Dot1Q(vlan=7, type=0x8864) /
                                      PPPoE(sessionid=9) / PPP(proto=0x0021) / IP(**ip4) / tcp(options=ts)), "ack")
    c["pppoe_discovery_is_data"] = (pad(bytes(Ether(**eth, type=0x8863) / PPPoED(code=0x09))), "data")
    c["pppoe_discovery_ethertype_with_session_body_is_data"] = (pad(patch(bytes(ppp4), 12, b"\x88\x63")), "data")
    c["pppoe_version_2_is_data"] = (pad(patch(bytes(ppp4), 14, b"\x21")), "data")
    c["pppoe_type_2_is_data"] = (pad(patch(bytes(ppp4), 14, b"\x12")), "data")
    c["pppoe_code_nonzero_is_data"] = (pad(patch(bytes(ppp4), 15, b"\x09")), "data")
    c["ppp_protocol_lcp_is_data"] = (pad(patch(bytes(ppp4), 20, b"\xc0\x21")), "data")
    c["ppp_ipv4_protocol_with_ipv6_packet_is_data"] = (
        patch(c["ack_pppoe_ipv6"][0], 20, b"\x00\x21"), "data")
    # -- IPv4 (rule 2)
    c["ipv4_ihl_4_is_data"] = (pad(patch(v4(), 14, b"\x44")), "data")
    c["ipv4_ihl_0_is_data"] = (pad(patch(v4(), 14, b"\x40")), "data")
    c["ack_ipv4_with_options_ihl_6_is_ineligible"] = (
        bytes(Ether(**eth) / IP(**ip4, options=[IPOption_NOP()] * 4) / tcp(options=ts)), "ack-ineligible")
    c["ack_ipv4_with_router_alert_is_ineligible"] = (
        bytes(Ether(**eth) / IP(**ip4, options=[IPOption_Router_Alert()]) / tcp(options=ts)), "ack-ineligible")
    c["ipv4_ihl_6_without_room_for_tcp_is_data"] = (pad(patch(v4(), 14, b"\x46")), "data")
    c["ipv4_version_6_in_ipv4_ethertype_is_data"] = (pad(patch(v4(), 14, b"\x65")), "data")
    c["ipv4_more_fragments_is_data"] = (pad(bytes(Ether(**eth) / IP(**ip4, flags="MF") / tcp())), "data")
    c["ipv4_fragment_offset_is_data"] = (pad(bytes(Ether(**eth) / IP(**ip4, frag=1) / tcp())), "data")
    c["ack_ipv4_dont_fragment_set"] = (pad(bytes(Ether(**eth) / IP(**ip4, flags="DF") / tcp())), "ack")
    c["ipv4_udp_is_data"] = (pad(bytes(Ether(**eth) / IP(**ip4) / UDP(sport=1, dport=53))), "data")
    c["ipv4_bad_header_checksum_is_ineligible"] = (pad(patch(v4(), 24, b"\xde\xad")), "ack-ineligible")
    c["tcp_bad_checksum_is_ineligible"] = (pad(patch(v4(), 50, b"\xde\xad")), "ack-ineligible")
    c["ipv6_tcp_bad_checksum_is_ineligible"] = (
        bytes(Ether(**eth) / IPv6(**ip6) / tcp(options=ts, chksum=0x1234)), "ack-ineligible")
    c["ipv4_truncated_header_is_data"] = (v4()[:30], "data")
    # -- IPv6 (rule 3)
    c["ack_ipv6"] = (bytes(Ether(**eth) / IPv6(**ip6) / tcp(options=ts)), "ack")
    c["ack_ipv6_no_options_74_bytes"] = (bytes(Ether(**eth) / IPv6(**ip6) / tcp()), "ack")
    c["ipv6_hop_by_hop_header_is_data"] = (bytes(Ether(**eth) / IPv6(**ip6) / IPv6ExtHdrHopByHop() / tcp()), "data")
    c["ipv6_payload_length_16_is_data"] = (patch(bytes(Ether(**eth) / IPv6(**ip6) / tcp()), 18, b"\x00\x10"), "data")
    c["ipv6_version_4_in_ipv6_ethertype_is_data"] = (patch(bytes(Ether(**eth) / IPv6(**ip6) / tcp()), 14, b"\x40"), "data")
    c["ipv6_truncated_header_is_data"] = (bytes(Ether(**eth) / IPv6(**ip6) / tcp())[:50], "data")
    # -- TCP (rule 4)
    for name, flags in (("fin", "FA"), ("syn", "SA"), ("rst", "RA")):
        c[f"tcp_{name}_with_ack_is_data"] = (pad(v4(flags=flags)), "data")
    for name, flags in (("psh", "PA"), ("urg", "UA")):
        c[f"tcp_{name}_with_ack_is_ineligible"] = (pad(v4(flags=flags)), "ack-ineligible")
    c["ack_with_ae"] = (pad(v4(flags="AN")), "ack")               # RFC 9768: part of the ACE counter
    c["tcp_without_ack_flag_is_data"] = (pad(v4(flags="")), "data")
    c["tcp_rst_alone_is_data"] = (pad(v4(flags="R")), "data")
    for bit in range(3):
        c[f"tcp_reserved_bit_{bit}_is_ineligible"] = (pad(v4(reserved=1 << bit)), "ack-ineligible")
    c["ack_with_ece"] = (pad(v4(flags="AE")), "ack")
    c["ack_with_cwr"] = (pad(v4(flags="AC")), "ack")
    c["ack_with_ece_and_cwr"] = (pad(v4(flags="AEC")), "ack")
    c["tcp_data_offset_4_is_data"] = (pad(v4(dataofs=4)), "data")
    c["tcp_data_offset_past_ip_payload_is_data"] = (pad(v4(dataofs=6)), "data")
    c["ack_with_1_byte_payload_is_data"] = (pad(bytes(Ether(**eth) / IP(**ip4) / tcp() / b"x")), "data")
    c["psh_ack_without_payload_is_ineligible"] = (pad(v4(flags="PA", ack=200000)), "ack-ineligible")
    # -- TCP options (rule 6)
    c["ack_with_sack_1_block"] = (v4(options=ts + [("NOP", None), ("NOP", None), ("SAck", (1, 2))]), "ack")
    c["ack_with_sack_3_blocks"] = (v4(options=ts + [("NOP", None), ("NOP", None), ("SAck", (1, 2, 3, 4, 5, 6))]), "ack")
    c["ack_with_sack_4_blocks_no_ts"] = (v4(options=[("NOP", None), ("NOP", None),
                                                     ("SAck", (1, 2, 3, 4, 5, 6, 7, 8))]), "ack")
    c["ack_with_eol_then_garbage"] = (v4(options=[("EOL", None), (99, b"\xff\xff")]), "ack")
    c["ack_with_mss_option_other_opts"] = (v4(options=[("MSS", 1460)]), "ack")
    c["ack_with_window_scale_option"] = (v4(options=[("NOP", None), ("WScale", 7)]), "ack")
    c["ack_with_unknown_option_kind_99"] = (v4(options=[(99, b"\x01\x02")]), "ack")
    c["ack_with_mss_length_3_is_still_well_formed"] = (v4(options=[(2, b"\x05"), ("NOP", None)]), "ack")
    c["option_length_0_is_ineligible"] = (v4(options=[(2, b"\x05\xb4")], raw_opts=b"\x02\x00\x05\xb4"),
                                          "ack-ineligible")
    c["option_length_1_is_ineligible"] = (v4(options=[(2, b"\x05\xb4")], raw_opts=b"\x02\x01\x05\xb4"),
                                          "ack-ineligible")
    c["option_running_past_header_is_ineligible"] = (v4(options=[(2, b"\x05\xb4")], raw_opts=b"\x01\x01\x02\x04"),
                                                     "ack-ineligible")
    c["option_kind_without_length_byte_is_ineligible"] = (
        v4(options=[(2, b"\x05\xb4")], raw_opts=b"\x01\x01\x01\x03"), "ack-ineligible")
    c["timestamps_length_8_is_ineligible"] = (v4(options=ts, raw_opts=b"\x01\x01\x08\x08" + bytes(8)),
                                              "ack-ineligible")
    c["sack_length_12_is_ineligible"] = (v4(options=[(5, bytes(10))]), "ack-ineligible")
    c["sack_length_2_is_ineligible"] = (v4(options=[(5, b""), ("NOP", None), ("NOP", None)]), "ack-ineligible")
    c["two_timestamps_options_is_ineligible"] = (v4(options=ts + ts), "ack-ineligible")
    c["two_sack_options_is_ineligible"] = (v4(options=[("NOP", None), ("NOP", None), ("SAck", (1, 2)),
                                                       ("NOP", None), ("NOP", None), ("SAck", (3, 4))]),
                                           "ack-ineligible")
    # AccECN (RFC 9768 section 3.2.3): kind 172 and 174, 0 to 3 24-bit counters.
    for kind in (172, 174):
        for n in range(4):
            body = bytes.fromhex("0a0b0c1a1b1c2a2b2c")[:3 * n]
            c[f"ack_with_accecn{kind - 172 >> 1}_{n}_counters"] = (
                v4(options=ts + [(kind, body)] + [("NOP", None)] * (-(2 + 3 * n) % 4)), "ack")
    c["accecn_length_6_is_ineligible"] = (v4(options=[(172, bytes(4)), ("NOP", None), ("NOP", None)]),
                                          "ack-ineligible")
    c["two_accecn_options_is_ineligible"] = (v4(options=[(172, b""), (174, b"")]), "ack-ineligible")
    # -- PPPoE length (eligibility)
    bad_len = bytearray(pad(bytes(ppp4)))
    bad_len[18:20] = (len(bytes(ppp4)) - 22 + 2 + 4).to_bytes(2, "big")
    c["pppoe_length_not_matching_ip_is_ineligible"] = (bytes(bad_len), "ack-ineligible")
    # -- slot size (rule 5)
    big = [("NOP", None), ("NOP", None), ("Timestamp", (1, 2)), ("NOP", None), ("NOP", None),
           ("SAck", (1, 2, 3, 4, 5, 6))]                          # 40 bytes of options: doff 15
    c["ack_126_bytes_with_ip_options_is_ineligible"] = (bytes(Ether(**eth, type=0x88A8) / Dot1Q(vlan=1, type=0x8100) /
                                          Dot1Q(vlan=2, type=0x0800) / IP(**ip4, options=[IPOption_NOP()] * 24) /
                                          tcp(options=big)), "ack-ineligible")
    c["ack_130_bytes_qinq_pppoe_ipv6"] = (bytes(Ether(**eth, type=0x88A8) / Dot1Q(vlan=1, type=0x8100) /
                                                Dot1Q(vlan=2, type=0x8864) / PPPoE(sessionid=5) /
                                                PPP(proto=0x0057) / IPv6(**ip6) / tcp(options=big)), "ack")
    longest = bytes(Ether(**eth, type=0x88A8) / Dot1Q(vlan=1, type=0x8100) / Dot1Q(vlan=2, type=0x8864) /
                    PPPoE(sessionid=5) / PPP(proto=0x0021) / IP(**ip4, options=[IPOption_NOP()] * 40) /
                    tcp(options=big))
    c["ack_150_bytes_longest_fits_a_slot_ineligible"] = (longest, "ack-ineligible")
    c["pure_ack_with_trailer_over_the_256_byte_slot_is_data"] = (longest + bytes(107), "data")
    return c
