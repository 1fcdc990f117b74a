"""Tests of the segmenter's golden model (``ackfilter.model.segmenter``, spec section 9).

Frames are built with Scapy. Every chunk is checked against an independent
reference: Scapy dissects it, recomputes the IPv4 header and TCP checksums
(``del ...chksum``) and must rebuild the same bytes.
"""

import math
import random

import pytest
from encaps import ENCAPS, L2_BYTES, MACS, dissect, l2_header
from scapy.layers.inet import IP, TCP, UDP, IPOption_Router_Alert
from scapy.layers.inet6 import IPv6, IPv6ExtHdrHopByHop
from scapy.layers.l2 import ARP, Dot1Q, Ether
from scapy.layers.ppp import PPP, PPPoE, PPPoED

from ackfilter.model.pktparse import ones_complement_sum
from ackfilter.model.segmenter import (MAX_CHUNK_BYTES, MIN_FRAME_BYTES, SEGMENT_BLOCK_BYTES,
                                       WriteSums, check_chunk_bytes, chunk_tcp_checksum,
                                       payload_block_sums, segment, why_whole)

B = SEGMENT_BLOCK_BYTES
TS = [("NOP", None), ("NOP", None), ("Timestamp", (123456, 654321))]
SACK = [("NOP", None), ("NOP", None), ("SAck", (5000, 6000, 7000, 8000))]


def pattern(n, seed=0):
    """``n`` payload bytes that differ from their neighbours (a misplaced byte shows)."""
    return random.Random(seed).randbytes(n)


def mk_segment(payload, *, encap="eth", v6=False, seq=1000, flags="PA", ip_id=7, ip_opts=False,
               tcp_opts=(), ecn=0, tos=0, ttl=64, ip_flags="DF", trailer=b"", ip_extra=None, tcp_extra=None):
    """A TCP segment carrying ``payload`` (bytes, or a length) in an Ethernet frame,
    padded to 60 bytes, then ``trailer`` appended."""
    if isinstance(payload, int):
        payload = pattern(payload)
    l2 = l2_header(encap, v6=v6)
    if v6:
        ip = IPv6(src="2001:db8::1", dst="2001:db8:ffff::2", tc=(tos & 0xFC) | ecn, fl=0xABCDE,
                  hlim=ttl, **(ip_extra or {}))
    else:
        ip = IP(src="192.0.2.1", dst="198.51.100.2", id=ip_id, tos=(tos & 0xFC) | ecn, ttl=ttl,
                flags=ip_flags, options=[IPOption_Router_Alert()] if ip_opts else [],
                **(ip_extra or {}))
    tcp = TCP(sport=40000, dport=443, seq=seq & 0xFFFF_FFFF, ack=777, flags=flags, window=500,
              options=list(tcp_opts), **(tcp_extra or {}))
    frame = bytes(l2 / ip / tcp / payload) if payload else bytes(l2 / ip / tcp)
    return frame.ljust(MIN_FRAME_BYTES, b"\0") + trailer


def scapy_rebuilt(frame):
    """``frame`` with Scapy's IPv4 header checksum and TCP checksum in place of its own."""
    pkt = dissect(frame)
    if IP in pkt:
        del pkt[IP].chksum
    del pkt[TCP].chksum
    return bytes(pkt)


def ip_layer(pkt):
    return pkt[IP] if IP in pkt else pkt[IPv6]


def tcp_payload(frame):
    """The TCP payload of ``frame``, by its IP length (padding and trailer excluded)."""
    pkt = dissect(frame)
    ip = ip_layer(pkt)
    tcp_len = ip.len - 4 * ip.ihl if IP in pkt else ip.plen
    return bytes(pkt[TCP])[4 * pkt[TCP].dataofs:tcp_len]


def assert_valid_chunks(frame, chunks, chunk_bytes):
    """Every property a cut must have, checked with Scapy."""
    original = dissect(frame)
    payload = tcp_payload(frame)
    assert len(chunks) == max(1, math.ceil(len(payload) / chunk_bytes))
    assert b"".join(tcp_payload(c) for c in chunks) == payload
    offset = 0
    for i, c in enumerate(chunks):
        assert scapy_rebuilt(c) == c, f"chunk {i}: a checksum is wrong"
        assert len(c) >= MIN_FRAME_BYTES
        pkt = dissect(c)
        assert pkt[TCP].seq == (original[TCP].seq + offset) & 0xFFFF_FFFF
        assert bytes(pkt[TCP])[20:4 * pkt[TCP].dataofs] == \
            bytes(original[TCP])[20:4 * original[TCP].dataofs]           # options copied
        if PPPoE in pkt:
            assert pkt[PPPoE].len == len(ip_packet(c)) + 2
        if len(chunks) > 1:
            assert len(tcp_payload(c)) == (chunk_bytes if i < len(chunks) - 1
                                           else len(payload) - chunk_bytes * (len(chunks) - 1))
        offset += len(tcp_payload(c))


def ip_packet(frame):
    pkt = dissect(frame)
    ip = ip_layer(pkt)
    n = ip.len if IP in pkt else 40 + ip.plen
    return bytes(ip)[:n]


# ---------------------------------------------------------------------------
# Cutting

def test_chunk_larger_than_the_payload_leaves_the_frame_whole():
    frame = mk_segment(100)
    assert segment(frame, 128) == [frame]
    assert why_whole(frame, 128) == "payload of 100 bytes <= chunk_bytes 128"


def test_payload_equal_to_the_chunk_leaves_the_frame_whole():
    frame = mk_segment(128)
    assert segment(frame, 128) == [frame]


def test_payload_not_a_multiple_of_the_chunk_makes_a_shorter_last_chunk():
    frame = mk_segment(1000)
    chunks = segment(frame, 256)
    assert [len(tcp_payload(c)) for c in chunks] == [256, 256, 256, 232]
    assert why_whole(frame, 256) is None
    assert_valid_chunks(frame, chunks, 256)


def test_payload_an_exact_multiple_of_the_chunk_makes_equal_chunks():
    frame = mk_segment(1024)
    chunks = segment(frame, 256)
    assert [len(tcp_payload(c)) for c in chunks] == [256] * 4
    assert_valid_chunks(frame, chunks, 256)


def test_full_size_frame_cut_at_the_largest_chunk():
    frame = mk_segment(1460)
    assert len(frame) == 1514
    chunks = segment(frame, MAX_CHUNK_BYTES)
    assert [len(tcp_payload(c)) for c in chunks] == [MAX_CHUNK_BYTES, 1460 - MAX_CHUNK_BYTES]
    assert_valid_chunks(frame, chunks, MAX_CHUNK_BYTES)


def test_a_short_last_chunk_is_padded_with_zeros_to_60_bytes():
    frame = mk_segment(B + 1)
    first, last = segment(frame, B)
    assert len(first) == 14 + 20 + 20 + B
    assert len(last) == MIN_FRAME_BYTES == 60 and last[55:] == bytes(5)
    assert tcp_payload(last) == frame[54 + B:55 + B]
    assert_valid_chunks(frame, [first, last], B)


def test_padding_or_trailer_after_the_ip_packet_is_not_payload():
    frame = mk_segment(300, trailer=b"TRAILER!")
    chunks = segment(frame, 128)
    assert all(b"TRAILER" not in c for c in chunks)
    assert all(len(c) == 14 + len(ip_packet(c)) for c in chunks)
    assert_valid_chunks(frame, chunks, 128)


@pytest.mark.parametrize("opts", [TS, TS + SACK, [("NOP", None)] * 4 + TS, [("WScale", 7), ("EOL", None)]],
                         ids=["timestamps", "timestamps-sack", "nops", "eol-padding"])
def test_tcp_options_are_copied_to_every_chunk(opts):
    frame = mk_segment(700, tcp_opts=opts)
    options = dissect(frame)[TCP].options
    chunks = segment(frame, 160)
    assert len(chunks) == 5
    assert all(dissect(c)[TCP].options == options for c in chunks)
    assert_valid_chunks(frame, chunks, 160)


def test_ipv4_options_are_copied_to_every_chunk():
    frame = mk_segment(500, ip_opts=True, tcp_opts=TS)
    chunks = segment(frame, 128)
    assert len(chunks) == 4
    assert all(dissect(c)[IP].ihl == 6 and dissect(c)[IP].options == dissect(frame)[IP].options
               for c in chunks)
    assert_valid_chunks(frame, chunks, 128)


def flag_sets(chunks):
    """Each chunk's TCP flags as Scapy spells them (in bit order: F S R P A U E C N)."""
    return [str(dissect(c)[TCP].flags) for c in chunks]


def test_fin_and_psh_only_on_the_last_chunk():
    chunks = segment(mk_segment(400, flags="FPA"), 128)
    assert flag_sets(chunks) == ["A", "A", "A", "FPA"]


def test_a_segment_with_cwr_is_never_cut():
    """Classic ECN wants CWR on the first chunk only, Accurate ECN (CWR is a
    bit of the ACE counter) on every chunk: only a whole segment is right
    for both."""
    frame = mk_segment(400, flags="CPA")
    assert segment(frame, 128) == [frame]
    assert "CWR" in why_whole(frame, 128)


def test_ece_ack_and_ae_are_on_every_chunk():
    frame = mk_segment(400, flags="AEN")         # Scapy's "N" is the AE (formerly NS) bit
    chunks = segment(frame, 128)
    assert flag_sets(chunks) == ["AEN", "AEN", "AEN", "AEN"]
    assert_valid_chunks(frame, chunks, 128)


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_ip_fields_other_than_length_id_and_checksum_are_copied(v6):
    frame = mk_segment(300, v6=v6, ecn=3, tos=0xB8, ttl=17)
    chunks = segment(frame, 128)
    ip0 = ip_layer(dissect(frame))
    for c in chunks:
        ip = ip_layer(dissect(c))
        names = ("tc", "fl", "hlim", "src", "dst") if v6 else ("tos", "flags", "ttl", "src", "dst")
        assert [getattr(ip, n) for n in names] == [getattr(ip0, n) for n in names]
    assert_valid_chunks(frame, chunks, 128)


def test_df_clear_is_copied_too():
    chunks = segment(mk_segment(300, ip_flags=0), 128)
    assert all(dissect(c)[IP].flags == 0 for c in chunks)


def test_ipv4_id_increments_per_chunk_and_wraps_at_65535():
    frame = mk_segment(4 * 64, ip_id=65534)
    chunks = segment(frame, 64)
    assert [dissect(c)[IP].id for c in chunks] == [65534, 65535, 0, 1]
    assert_valid_chunks(frame, chunks, 64)


def test_sequence_numbers_wrap_at_2_to_the_32():
    frame = mk_segment(4 * 64, seq=2**32 - 100)
    chunks = segment(frame, 64)
    assert [dissect(c)[TCP].seq for c in chunks] == [2**32 - 100, 2**32 - 36, 28, 92]
    assert_valid_chunks(frame, chunks, 64)


def test_ack_number_window_and_ports_are_copied():
    frame = mk_segment(300)
    for c in segment(frame, 128):
        tcp = dissect(c)[TCP]
        assert (tcp.sport, tcp.dport, tcp.ack, tcp.window) == (40000, 443, 777, 500)


@pytest.mark.parametrize("tcp_opts", [(), TS], ids=["no-options", "timestamps"])
def test_ipv6_is_cut(tcp_opts):
    frame = mk_segment(1000, v6=True, tcp_opts=tcp_opts)
    chunks = segment(frame, 512)
    tcp_header = 20 + (12 if tcp_opts else 0)
    assert [dissect(c)[IPv6].plen for c in chunks] == [tcp_header + n for n in (512, 488)]
    assert_valid_chunks(frame, chunks, 512)


@pytest.mark.parametrize("encap", ["dot1q", "qinq", "qinq-9100"])
def test_vlan_tagged_frames_are_cut_with_their_tags_copied(encap):
    frame = mk_segment(600, encap=encap)
    tags = 8 if "qinq" in encap else 4
    chunks = segment(frame, 256)
    assert len(chunks) == 3
    assert all(c[:14 + tags] == frame[:14 + tags] for c in chunks)
    assert_valid_chunks(frame, chunks, 256)


@pytest.mark.parametrize("encap", ["pppoe", "pppoe-dot1q"])
@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_pppoe_length_is_the_chunks_ip_length_plus_2(encap, v6):
    frame = mk_segment(600, encap=encap, v6=v6, tcp_opts=TS)
    chunks = segment(frame, 256)
    assert len(chunks) == 3
    for c in chunks:
        pkt = dissect(c)
        assert pkt[PPPoE].sessionid == dissect(frame)[PPPoE].sessionid
        assert pkt[PPPoE].len == len(ip_packet(c)) + 2
    assert [dissect(c)[PPPoE].len for c in chunks] == \
        [2 + (40 if v6 else 20) + 32 + n for n in (256, 256, 88)]
    assert_valid_chunks(frame, chunks, 256)


# ---------------------------------------------------------------------------
# Never cut

def patched(frame, **at):
    """``frame`` with bytes replaced: ``at={"o23": b"..."}`` writes at offset 23."""
    f = bytearray(frame)
    for key, value in at.items():
        o = int(key[1:])
        f[o:o + len(value)] = value
    return bytes(f)


def flipped(frame, offset):
    """``frame`` with the byte at ``offset`` inverted."""
    return patched(frame, **{f"o{offset}": bytes([frame[offset] ^ 0xFF])})


def with_ip_checksum(frame, ip=14):
    """``frame`` with its IPv4 header checksum recomputed (after a patch)."""
    ihl = 4 * (frame[ip] & 0x0F)
    header = bytearray(frame[ip:ip + ihl])
    header[10:12] = bytes(2)
    return patched(frame, **{f"o{ip + 10}": (~ones_complement_sum(header) & 0xFFFF).to_bytes(2, "big")})


BIG = 600
NEVER_CUT = {
    "udp": (lambda: bytes(Ether(**MACS) / IP() / UDP() / pattern(BIG)), "IP protocol is not TCP"),
    "arp": (lambda: bytes(Ether(**MACS) / ARP()).ljust(60, b"\0"), "EtherType 0x0806"),
    "runt": (lambda: mk_segment(BIG)[:13], "frame ends inside the Ethernet header"),
    "syn": (lambda: mk_segment(BIG, flags="S"), "SYN, RST or URG set"),
    "syn-ack": (lambda: mk_segment(BIG, flags="SA"), "SYN, RST or URG set"),
    "rst": (lambda: mk_segment(BIG, flags="RA"), "SYN, RST or URG set"),
    "urg": (lambda: mk_segment(BIG, flags="UA", tcp_extra=dict(urgptr=5)), "SYN, RST or URG set"),
    "ipv4-mf": (lambda: mk_segment(BIG, ip_flags="MF"), "IPv4 fragment"),
    "ipv4-offset": (lambda: mk_segment(BIG, ip_flags=0, ip_extra=dict(frag=100)), "IPv4 fragment"),
    "ipv6-hop-by-hop": (lambda: bytes(Ether(**MACS) / IPv6() / IPv6ExtHdrHopByHop() / TCP(flags="A")
                                      / pattern(BIG)), "IPv6 next header is not TCP"),
    "third-vlan-tag": (lambda: bytes(Ether(**MACS) / Dot1Q(vlan=1) / Dot1Q(vlan=2) / Dot1Q(vlan=3) / IP()
                                     / TCP(flags="A") / pattern(BIG)), "third VLAN tag"),
    "pppoe-discovery": (lambda: bytes(Ether(**MACS) / PPPoED() / pattern(BIG)), "EtherType 0x8863"),
    "ppp-not-ip": (lambda: bytes(Ether(**MACS) / PPPoE() / PPP(proto=0xC021) / pattern(BIG)),
                   "PPP protocol 0xc021"),
    "pppoe-code-not-0": (lambda: patched(mk_segment(BIG, encap="pppoe"), o15=b"\x09"), "PPPoE ver/type"),
    "pppoe-length-short": (lambda: patched(mk_segment(BIG, encap="pppoe"), o18=(BIG).to_bytes(2, "big")),
                           "PPPoE length"),
    "pppoe-length-long": (lambda: patched(mk_segment(BIG, encap="pppoe", v6=True), o18=b"\x05\xdc"),
                          "PPPoE length"),
    "truncated": (lambda: mk_segment(BIG)[:-10], "frame shorter than its IP packet"),
    "truncated-in-ipv6-header": (lambda: mk_segment(BIG, v6=True)[:40], "frame ends inside the IPv6 header"),
    "ipv4-total-too-long": (lambda: with_ip_checksum(patched(mk_segment(BIG),
                                                             o16=(41 + BIG).to_bytes(2, "big"))),
                            "frame shorter than its IP packet"),
    "ipv4-total-below-headers": (lambda: with_ip_checksum(patched(mk_segment(BIG), o16=b"\x00\x27")),
                                 "IPv4 total length < 4*IHL + 20"),
    "ipv4-ihl-below-5": (lambda: with_ip_checksum(patched(mk_segment(BIG), o14=b"\x44")), "IHL < 5"),
    "ipv6-payload-below-20": (lambda: patched(mk_segment(BIG, v6=True), o18=b"\x00\x13"),
                              "IPv6 payload length < 20"),
    "tcp-doff-below-5": (lambda: patched(mk_segment(BIG), o46=b"\x40"), "TCP data offset < 5"),
    "tcp-doff-beyond-packet": (lambda: mk_segment(0, tcp_extra=dict(dataofs=15)) + pattern(BIG),
                               "TCP header longer than the IP payload"),
    "bad-tcp-checksum": (lambda: flipped(mk_segment(BIG), 51), "TCP checksum is wrong"),
    "bad-tcp-checksum-ipv6-qinq": (lambda: flipped(mk_segment(BIG, v6=True, encap="qinq"), 22 + 40 + 17),
                                   "TCP checksum is wrong"),
    "payload-byte-flipped": (lambda: flipped(mk_segment(BIG), 300), "TCP checksum is wrong"),
    "bad-ip-checksum": (lambda: flipped(mk_segment(BIG), 25), "IPv4 header checksum is wrong"),
    "tcp-md5": (lambda: mk_segment(BIG, tcp_opts=[(19, bytes(16)), ("NOP", None), ("NOP", None)]),
                "TCP-MD5 or TCP-AO"),
    "tcp-ao": (lambda: mk_segment(BIG, tcp_opts=[(29, bytes(14))]), "TCP-MD5 or TCP-AO"),
    "malformed-tcp-option": (lambda: mk_segment(BIG, tcp_opts=[(254, bytes(2))]).replace(
        b"\xfe\x04", b"\xfe\x09"), "malformed TCP option 254"),
    "pure-ack": (lambda: mk_segment(0, flags="A"), "payload of 0 bytes"),
}


@pytest.mark.parametrize("case", NEVER_CUT)
def test_never_cut_frames_leave_byte_for_byte_whole(case):
    build, reason = NEVER_CUT[case]
    frame = build()
    assert segment(frame, B) == [frame]
    assert reason in why_whole(frame, B)


def test_the_patches_in_the_never_cut_table_hit_the_intended_field():
    """The same frames unpatched (or with the field's right value) are cut."""
    for frame in (mk_segment(BIG), mk_segment(BIG, encap="pppoe"), mk_segment(BIG, v6=True),
                  mk_segment(BIG, v6=True, encap="qinq"), with_ip_checksum(mk_segment(BIG)),
                  mk_segment(BIG, tcp_opts=[(254, bytes(2))])):
        assert why_whole(frame, B) is None and len(segment(frame, B)) > 1


def test_chunk_bytes_zero_is_off():
    frame = mk_segment(1460)
    assert segment(frame, 0) == [frame]
    assert why_whole(frame, 0) == "segmenter off (chunk_bytes 0)"


@pytest.mark.parametrize("bad", [-B, 1, B // 2, B + 1, 100, MAX_CHUNK_BYTES + B, 1460, 65536])
def test_bad_chunk_sizes_raise_naming_the_value_and_the_range(bad):
    with pytest.raises(ValueError, match=rf"chunk_bytes must be 0 \(off\) or a multiple of {B} "
                                         rf"from {B} to {MAX_CHUNK_BYTES}, not {bad}$"):
        segment(mk_segment(100), bad)
    with pytest.raises(ValueError, match=rf"not {bad}$"):
        why_whole(mk_segment(100), bad)


@pytest.mark.parametrize("bad", [32.0, "32", None, True])
def test_chunk_sizes_that_are_not_integers_raise_type_error(bad):
    with pytest.raises(TypeError, match=rf"chunk_bytes must be an integer number of bytes, not {bad!r}"):
        check_chunk_bytes(bad)


def test_every_multiple_of_the_block_up_to_1456_is_a_valid_chunk_size():
    assert MAX_CHUNK_BYTES == 1456
    for n in [0] + list(range(B, MAX_CHUNK_BYTES + 1, B)):
        assert check_chunk_bytes(n) == n


# ---------------------------------------------------------------------------
# The checksum from block partial sums (what the hardware computes)

def test_block_sums_are_the_sums_of_aligned_blocks_with_a_short_odd_last_block():
    payload = pattern(3 * B + 5)
    sums = payload_block_sums(payload)
    assert len(sums) == 4
    assert sums[1] == ones_complement_sum(payload[B:2 * B])
    assert sums[3] == ones_complement_sum(payload[3 * B:] + b"\0")
    assert payload_block_sums(b"") == ()


@pytest.mark.parametrize("n", [B, B + 1, 5 * B - 1, 1460])
def test_chunk_checksum_from_block_sums_equals_a_full_pass_and_scapy(n):
    frame = mk_segment(n, tcp_opts=TS)
    tcp = frame[34:34 + 32]
    payload = frame[66:66 + n]
    fixed = bytearray(tcp)             # seq, offset/flags and checksum words as zero
    for lo, hi in ((4, 8), (12, 14), (16, 18)):
        fixed[lo:hi] = bytes(hi - lo)
    sums = WriteSums(addr_sum=ones_complement_sum(frame[26:34]), header_sum=ones_complement_sum(fixed),
                     block_sums=payload_block_sums(payload), payload_bytes=n)
    seq = int.from_bytes(tcp[4:8], "big")
    offset_flags = int.from_bytes(tcp[12:14], "big")
    start = B if n > B else 0
    length = n - start
    got = chunk_tcp_checksum(sums, tcp_header_bytes=32, seq=seq + start, offset_flags=offset_flags,
                             start=start, length=length)
    # A full pass over the chunk as it will be sent.
    chunk_tcp = bytearray(tcp)
    chunk_tcp[4:8] = ((seq + start) & 0xFFFF_FFFF).to_bytes(4, "big")
    chunk_tcp[16:18] = bytes(2)
    pseudo = frame[26:34] + bytes([0, 6]) + (32 + length).to_bytes(2, "big")
    full = ~ones_complement_sum(bytes(chunk_tcp) + payload[start:], ones_complement_sum(pseudo)) & 0xFFFF
    assert got == full
    # Scapy's checksum of the same segment.
    pkt = Ether(frame)
    pkt[TCP].seq = (seq + start) & 0xFFFF_FFFF
    pkt[TCP].remove_payload()
    pkt[IP].len = 20 + 32 + length
    pkt = pkt / payload[start:]
    del pkt[TCP].chksum
    assert Ether(bytes(pkt))[TCP].chksum == got


def test_chunk_checksum_refuses_a_chunk_that_is_not_whole_blocks():
    sums = WriteSums(addr_sum=0, header_sum=0, block_sums=payload_block_sums(bytes(3 * B + 3)),
                     payload_bytes=3 * B + 3)
    common = dict(tcp_header_bytes=20, seq=0, offset_flags=0x5010)
    with pytest.raises(ValueError, match=rf"must start at a multiple of {B}"):
        chunk_tcp_checksum(sums, start=2, length=B, **common)
    with pytest.raises(ValueError, match=rf"must end at a multiple of {B} or at the payload's end"):
        chunk_tcp_checksum(sums, start=0, length=B + 2, **common)
    chunk_tcp_checksum(sums, start=B, length=2 * B + 3, **common)      # to the end: fine


# ---------------------------------------------------------------------------
# Property test

def random_case(rng):
    encap = rng.choice(ENCAPS)
    v6 = rng.random() < 0.4
    ip_opts = not v6 and rng.random() < 0.2
    opts = rng.choice([(), TS, TS + SACK, SACK, [("NOP", None)] * rng.randint(1, 8)])
    l2 = L2_BYTES[encap]
    tcp_opts_len = 4 * math.ceil(sum({"NOP": 1, "Timestamp": 10, "SAck": 18}[k] for k, _ in opts) / 4)
    room = 2048 - l2 - (40 if v6 else 24 if ip_opts else 20) - 20 - tcp_opts_len
    n = rng.choice([rng.randint(0, 200), rng.randint(0, 1500), rng.randint(1400, room)])
    flags = "".join(f for f in "FPACEN" if rng.random() < (0.9 if f == "A" else 0.3))
    frame = mk_segment(pattern(n, rng.getrandbits(32)), encap=encap, v6=v6, ip_opts=ip_opts, tcp_opts=opts,
                       seq=rng.choice([rng.getrandbits(32), 2**32 - rng.randint(1, 3000)]),
                       ip_id=rng.getrandbits(16), flags=flags, ecn=rng.randint(0, 3),
                       trailer=rng.choice([b"", b"", bytes(rng.randint(1, 8))]))
    chunk_bytes = rng.choice([B * rng.randint(1, MAX_CHUNK_BYTES // B), B * rng.randint(1, 8)])
    return frame, chunk_bytes, n


def test_random_frames_are_cut_into_valid_contiguous_chunks():
    rng = random.Random(20000)
    cut = 0
    for _ in range(300):
        frame, chunk_bytes, n = random_case(rng)
        chunks = segment(frame, chunk_bytes)
        cwr = bool(dissect(frame)[TCP].flags.C)
        assert (why_whole(frame, chunk_bytes) is None) == (len(chunks) > 1) == (n > chunk_bytes and not cwr)
        if len(chunks) == 1:
            assert chunks == [frame]
            continue
        cut += 1
        assert_valid_chunks(frame, chunks, chunk_bytes)
        flags = [dissect(c)[TCP].flags for c in chunks]
        f0 = dissect(frame)[TCP].flags
        assert all(not f.C and f.F == (f0.F and i == len(chunks) - 1)
                   and f.P == (f0.P and i == len(chunks) - 1) and (f.A, f.E, f.N) == (f0.A, f0.E, f0.N)
                   for i, f in enumerate(flags))
        if IP in dissect(frame):
            id0 = dissect(frame)[IP].id
            assert [dissect(c)[IP].id for c in chunks] == [(id0 + i) & 0xFFFF for i in range(len(chunks))]
    assert cut > 100
