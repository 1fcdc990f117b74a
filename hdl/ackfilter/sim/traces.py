"""Traffic traces for the ackfilter tests, the replay harness and the demo.

A trace is a list of ``(time_s, frame_bytes)`` sorted by time; frames carry no
preamble and no FCS (what the core sees) and are padded to 60 bytes like a
real NIC's.

Two frame builders make the same bytes:

* :func:`tcp_frame` with ``builder="scapy"`` builds with Scapy (the reference);
* ``builder="raw"`` assembles the bytes directly, about 50x faster, for the
  long traces (``random_trace``, :func:`demo_scenario`). The tests check
  that both builders agree byte for byte.

Generators:

* :func:`ack_stream` — one flow's pure ACKs with a fixed ack step;
* :func:`demo_scenario` — ~2 s of a home uplink (~1 Mb/s): four downloads' ACK
  streams, one upload, a little other traffic;
* :func:`~ackfilter.sim.random_trace.random_trace` (a module of its own) —
  many flows and encapsulations, every supersession corner and malformed
  frames, each frame's bytes unique;
* :func:`~ackfilter.sim.malformed.malformed_cases` (a module of its own) —
  every parser edge case of spec section 2 with its expected class.

:mod:`ackfilter.sim.pcap` stores traces (``write_pcap(path, trace, seconds=True)``).
"""

import random
import struct
import ipaddress
from dataclasses import dataclass, replace

__all__ = [
    "Flow", "tcp_frame", "tcp_options_bytes", "ack_stream", "data_stream", "demo_scenario",
    "arp_frame", "udp_frame", "unique_mac", "inet_checksum", "MSS", "MIN_FRAME_BYTES",
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


def inet_checksum(data):
    """RFC 1071 checksum (the ones' complement of the ones' complement sum)."""
    data = bytes(data)
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
    struct.pack_into("!H", tcp, 16, inet_checksum(pseudo + tcp))
    if flow.ipv6:
        ip = struct.pack("!IHBB", (6 << 28) | (ecn << 20) | flow_label, tcp_len, 6, ttl) + src_ip + dst_ip
    else:
        ihl = 5 + ip_option_words
        hdr = bytearray(struct.pack("!BBHHHBBH", 0x40 | ihl, ecn, 4 * ihl + tcp_len, ip_id, frag,
                                    ttl, 6, 0) + src_ip + dst_ip + b"\x01" * (4 * ip_option_words))
        struct.pack_into("!H", hdr, 10, inet_checksum(bytes(hdr)))
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

def arp_frame(src_mac, sender_ip, target_ip):
    body = struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + _mac(src_mac) + \
        ipaddress.ip_address(sender_ip).packed + b"\x00" * 6 + ipaddress.ip_address(target_ip).packed
    frame = b"\xff" * 6 + _mac(src_mac) + b"\x08\x06" + body
    return frame + b"\x00" * max(0, MIN_FRAME_BYTES - len(frame))


def udp_frame(src_mac, dst_mac, src, dst, sport, dport, payload, ip_id=0, vlans=()):
    if ":" in src:
        s, d = ipaddress.ip_address(src).packed, ipaddress.ip_address(dst).packed
        udp = bytearray(struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload)
        struct.pack_into("!H", udp, 6, inet_checksum(s + d + struct.pack("!IxxxB", len(udp), 17) + udp) or 0xFFFF)
        ip = struct.pack("!IHBB", 6 << 28, len(udp), 17, 64) + s + d + bytes(udp)
        etype = 0x86DD
    else:
        s, d = ipaddress.ip_address(src).packed, ipaddress.ip_address(dst).packed
        udp = bytearray(struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload)
        struct.pack_into("!H", udp, 6, inet_checksum(s + d + struct.pack("!xBH", 17, len(udp)) + udp) or 0xFFFF)
        hdr = bytearray(struct.pack("!BBHHHBBH", 0x45, 0, 20 + len(udp), ip_id & 0xFFFF, 0, 64, 17, 0) + s + d)
        struct.pack_into("!H", hdr, 10, inet_checksum(bytes(hdr)))
        ip = bytes(hdr) + bytes(udp)
        etype = 0x0800
    l2 = _mac(dst_mac) + _mac(src_mac)
    types = [t for t, _ in vlans] + [etype]
    l2 += struct.pack("!H", types[0])
    for (_, vid), nt in zip(vlans, types[1:]):
        l2 += struct.pack("!HH", vid, nt)
    frame = l2 + ip
    return frame + b"\x00" * max(0, MIN_FRAME_BYTES - len(frame))


def unique_mac(counter):
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
        add(rng.uniform(0, duration_s), lambda mac, k=k: arp_frame(mac, "192.168.1.10", f"192.168.1.{200 + k}"))
    for k in range(int(duration_s * 5)):
        q = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00" + bytes([7]) + b"example" + \
            bytes([3]) + b"com\x00\x00\x01\x00\x01"
        add(rng.uniform(0, duration_s), lambda mac, k=k, q=q: udp_frame(
            mac, "02:00:00:00:00:01", "192.168.1.11", "192.168.1.1", 30000 + k, 53, q, ip_id=k))

    events.sort(key=lambda e: (e[0], e[1]))
    return [(t, make(unique_mac(n))) for n, (t, _, make) in enumerate(events)]


def _ack_maker(flow, ack, tsval, tsecr, sack, ip_id):
    opts = _ts_options(tsval, tsecr, sack)
    return lambda mac: tcp_frame(flow, seq=1, ack=ack, options=opts, ip_id=ip_id, flow_label=ip_id,
                                 src_mac=mac, builder="raw")
