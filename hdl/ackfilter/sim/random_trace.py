"""A random trace for the tests and the mutation campaign: many flows and
encapsulations (VLAN tags, PPPoE, IPv6), every supersession corner (SACK,
timestamps, ECN, AccECN, window changes, duplicate and old ACKs), data,
other protocols and malformed frames, each frame's bytes unique (the
tests find a frame by its bytes). Built with :mod:`.traces`' raw builder."""

import random
import struct
from dataclasses import replace

from .traces import (MIN_FRAME_BYTES, MSS, Flow, arp_frame, inet_checksum, tcp_frame, tcp_options_bytes,
                     udp_frame, unique_mac)

__all__ = ["random_trace"]


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
        mac = unique_mac(n)
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
                frame = arp_frame(mac, "192.168.1.2", f"192.168.1.{rng.randrange(1, 255)}")
            elif k == 1:
                frame = udp_frame(mac, "02:00:00:00:00:fe", "192.168.1.2", "8.8.8.8", rng.randrange(1024, 65536),
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
        struct.pack_into("!H", f, ip + 10, inet_checksum(bytes(f[ip:ip + 4 * (f[ip] & 0x0F)])))
