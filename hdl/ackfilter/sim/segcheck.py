"""Independent checks of the segmenter's output (spec section 9), shared by
the replay test (tests/test_segmenter_core.py) and the cocotb bench
(cocotb_tests/tb_segmenter.py).

Everything here reads frames with Scapy and RFC 1071 sums, not with the
golden model: what left must be valid TCP/IP whatever the model says, and
each flow's byte stream must survive the cutting.
"""

from scapy.layers.inet import IP, TCP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.layers.ppp import PPPoE  # noqa: F401 (binds PPPoE sessions to PPP, IP, IPv6)

from ..model.pktparse import ones_complement_sum

__all__ = ["ip_tcp", "flow_of", "tcp_payload", "tcp_checksum_ok", "streams", "reassemble",
           "check_segmented", "splits_between_chunks", "data_between_chunks"]


def ip_tcp(frame):
    """``(ip, tcp)`` Scapy layers of a TCP frame in any encapsulation the core
    handles (VLAN tags, PPPoE), or ``None``."""
    pkt = Ether(frame)
    ip = pkt.getlayer(IP) or pkt.getlayer(IPv6)
    if ip is None or not ip.haslayer(TCP):
        return None
    return ip, ip[TCP]


def flow_of(frame):
    found = ip_tcp(frame)
    if found is None:
        return None
    ip, tcp = found
    return (ip.src, ip.dst, tcp.sport, tcp.dport)


def tcp_payload(ip, tcp):
    """The TCP payload as the IP length announces it (not the frame's padding)."""
    end = (ip.len - 4 * ip.ihl) if ip.version == 4 else ip.plen
    return bytes(tcp)[4 * tcp.dataofs:end]


def tcp_checksum_ok(frame):
    """The TCP checksum verifies (RFC 9293 section 3.1 pseudo-header, RFC 1071)."""
    ip, tcp = ip_tcp(frame)
    seg = bytes(tcp)[:(ip.len - 4 * ip.ihl) if ip.version == 4 else ip.plen]
    addrs = bytes(ip)[12:20] if ip.version == 4 else bytes(ip)[8:40]
    return ones_complement_sum(addrs + bytes([0, 6]) + len(seg).to_bytes(2, "big") + seg) == 0xFFFF


def streams(frames):
    """Per flow, ``[(seq, payload)]`` of the TCP segments among ``frames``
    whose TCP checksum verifies."""
    out = {}
    for f in frames:
        found = ip_tcp(f)
        if found is None or not tcp_checksum_ok(f):
            continue
        data = tcp_payload(*found)
        if data:
            out.setdefault(flow_of(f), []).append((found[1].seq, data))
    return out


def reassemble(pieces):
    """``{offset: byte}`` of ``(seq, payload)`` pieces, offsets from the
    lowest seq (mod 2^32; the pieces within 2^31 of each other). Holes (a
    dropped segment) are simply absent."""
    first = pieces[0][0]
    base = min((s for s, _d in pieces), key=lambda s: (s - first + 2**31) & 0xFFFF_FFFF)
    out = {}
    for s, d in pieces:
        off = (s - base) & 0xFFFF_FFFF
        for i, b in enumerate(d):
            out[off + i] = b
    return out


def check_segmented(sent, out, chunk_bytes, cut):
    """Assert what the segmenter's output must be, from the frames alone.

    ``sent``: the input frames; ``out``: the frames that left; ``cut``: the
    input frames the segmenter was to cut. Every IPv4 header that left is
    right; each flow's reassembled payload is the one that arrived in
    segments with a right checksum; a segment with a wrong checksum left
    whole and still wrong; each cut frame left as ceil(payload / chunk)
    segments of at most a chunk, at consecutive sequence numbers, FIN and PSH
    only on the last, which has the input's; a segment carrying more than a
    chunk left only as it came. Returns the number of chunks seen.
    """
    sent_set = set(sent)
    for f in out:
        found = ip_tcp(f)
        if found is not None and found[0].version == 4:
            ip = found[0]
            assert ones_complement_sum(bytes(ip)[:4 * ip.ihl]) == 0xFFFF, f.hex()
    good_in, good_out = streams(sent), streams(out)
    assert good_in.keys() == good_out.keys()
    for flow, pieces in good_in.items():
        assert reassemble(good_out[flow]) == reassemble(pieces), f"flow {flow}: stream differs"
    bad_in = sum(1 for f in sent if ip_tcp(f) and not tcp_checksum_ok(f))
    bad_out = sum(1 for f in out if ip_tcp(f) and not tcp_checksum_ok(f))
    assert bad_in == bad_out, (bad_in, bad_out)

    by_seq = {}
    for f in out:
        found = ip_tcp(f)
        if found is not None and tcp_checksum_ok(f):
            ip, tcp = found
            n = len(tcp_payload(ip, tcp))
            by_seq[(flow_of(f), tcp.seq)] = (tcp, n)
            if n > chunk_bytes:
                assert f in sent_set, f"a segment of {n} bytes > chunk {chunk_bytes} left changed"
    chunks = 0
    for f in cut:
        ip, tcp = ip_tcp(f)
        pay = len(tcp_payload(ip, tcp))
        n = -(-pay // chunk_bytes)
        assert n >= 2
        for i in range(n):
            t, length = by_seq[(flow_of(f), (tcp.seq + i * chunk_bytes) & 0xFFFF_FFFF)]
            assert length == min(chunk_bytes, pay - i * chunk_bytes)
            want = int(tcp.flags) & 0x09 if i == n - 1 else 0       # FIN, PSH
            assert int(t.flags) & 0x09 == want, (i, n, t.flags, tcp.flags)
            assert int(t.flags) & ~0x09 == int(tcp.flags) & ~0x09
            chunks += 1
    return chunks


def _continues(a, c, chunk_bytes):
    """``c`` continues ``a``'s payload and ``a`` carries exactly a chunk: two
    chunks of one cut frame, one after the other."""
    ia, ic = ip_tcp(a), ip_tcp(c)
    if ia is None or ic is None or flow_of(a) != flow_of(c):
        return False
    return (len(tcp_payload(*ia)) == chunk_bytes
            and (ia[1].seq + chunk_bytes) & 0xFFFF_FFFF == ic[1].seq)


def splits_between_chunks(out, chunk_bytes, flow):
    """How often a frame of ``flow`` (e.g. a download's ACKs) left between
    two chunks of one cut frame: ``a``, then ``flow``'s frame, then the
    segment that continues ``a``'s payload, ``a`` carrying exactly a chunk."""
    return sum(1 for a, b, c in zip(out, out[1:], out[2:])
               if flow_of(b) == flow and _continues(a, c, chunk_bytes))


def data_between_chunks(out, chunk_bytes, arrived):
    """The frames other than pure ACKs (a SYN, a segment with data, a frame
    of another protocol) that left between two chunks of one cut frame of
    another flow: with flow queues, new flows' frames (spec section 12).
    Two chunks are of one frame when one segment that ``arrived`` holds
    both their payloads (a frame's last chunk and the next frame's first
    would otherwise look like one frame's)."""
    def data(b):
        found = ip_tcp(b)
        if found is None:
            return True
        ip, tcp = found
        return bool(tcp_payload(ip, tcp)) or bool(int(tcp.flags) & 0x07)     # FIN, SYN, RST
    arrived_set = set(arrived)
    segments = {}                       # flow: [(first sequence number, payload bytes)]
    for f in arrived:
        found = ip_tcp(f)
        if found is not None:
            segments.setdefault(flow_of(f), []).append((found[1].seq, len(tcp_payload(*found))))

    def one_frame(a, c):
        sa, sc = ip_tcp(a)[1].seq, ip_tcp(c)[1].seq
        end = (sc + len(tcp_payload(*ip_tcp(c))) - 1) & 0xFFFF_FFFF
        return any((sa - s0) & 0xFFFF_FFFF < n and (end - s0) & 0xFFFF_FFFF < n
                   for s0, n in segments.get(flow_of(a), ()))
    flows = [flow_of(f) for f in out]
    between = []
    for i, a in enumerate(out):
        if flows[i] is None or a in arrived_set:
            continue
        j = next((j for j in range(i + 1, len(out)) if flows[j] == flows[i]), None)
        if (j is not None and j > i + 1 and _continues(a, out[j], chunk_bytes)
                and one_frame(a, out[j])):
            between += [b for b in out[i + 1:j] if data(b)]
    return between
