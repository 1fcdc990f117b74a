"""The egress (``gateware.egress.Egress``) sending the chunks of cut data
frames (spec section 9), in the Amaranth simulator, alone.

A wrapper gives it the core's memories with their synchronous read ports:
a data buffer of 64 cells of 32 words, the payload block sums (8 16-bit
words a cell, one per four of its words) and the ACK buffers; and the cells'
``next`` table with a combinational read port, as the free list
(``lib.cells.CellList``) has it. Each data frame is stored in cells drawn at
random (scattered, as the free list hands them out after frames left in
any order), word ``w`` at ``cell(w) * 32 + w % 32``, ``next`` linking its
cells; the sum of the payload block that starts in frame word ``b``
(``model.segmenter.lane_block_sums``) at ``cell(b) * 8 + (b % 32) // 4``,
the ingress's address rule (spec sections 9 and 12). Every other word of
the memories (the ``next`` of a frame's last cell among them) holds junk.
The testbench grants frames as the queue manager does: a one-cycle
``start`` while ``busy`` is low (a data frame named by its first cell), a
cut frame as one grant per chunk with ``start_seg``, ACKs and whole data
frames between them; it takes the output under random ``o.ready``.
Expectations:

* chunk *i* of a frame cut at ``C`` bytes leaves as
  ``model.segmenter.segment(frame, C)[i]`` byte for byte (with RED's CE
  mark, ``segment(model.red.set_ce(frame), C)[i]``), whatever the cells
  hold past the payload; ``keep``, ``first`` and ``last`` as for any frame;
* independently of the model, Scapy finds each chunk's IPv4 header checksum
  and TCP checksum right;
* ACK frames and whole data frames leave as before (a whole frame with the
  CE mark as ``set_ce`` makes it);
* with each chunk's last word: ``stat_frame`` with the chunk frame's bytes
  (padded to 60); ``release_cells_en`` with the stored frame's cells
  (``release_cells``: first, last, count) only with the last chunk's;
  ``busy`` from the cycle after ``start`` (the preparation, which waits for
  the walk of the frame's cells, included) until the cycle after the last
  word was taken.
"""

import random
from dataclasses import dataclass, field

import pytest
from amaranth.hdl import Cat, Elaboratable, Module, Mux, Signal, Value
from amaranth.lib.memory import Memory
from encaps import dissect, l2_header
from scapy.layers.inet import IP, TCP, IPOption_Router_Alert
from scapy.layers.inet6 import IPv6
from scapy.layers.ppp import PPPoE

from blocksim import nwords, simulate
from ackfilter.gateware.egress import Egress
from ackfilter.gateware.ingress import CELL_WORDS
from ackfilter.model.red import ip_header, set_ce
from ackfilter.model.segmenter import (MAX_CHUNK_BYTES, MIN_FRAME_BYTES, SEGMENT_BLOCK_BYTES,
                                       lane_block_sums, seg_info, segment)
from ackfilter.params import ACK_SLOT_BYTES, DATA_CELL_BYTES, MAX_FRAME_BYTES

CELLS = 64
SUMS_PER_CELL = CELL_WORDS // 4      # one block sum per four words of a cell (spec section 9)
BUF_COUNT = 8
SLOT_WORDS = ACK_SLOT_BYTES // 4
TS = [("NOP", None), ("NOP", None), ("Timestamp", (123456, 654321))]
SACK = [("NOP", None), ("NOP", None), ("SAck", (5000, 6000, 7000, 8000))]
ECT0 = 0b10                          # RFC 3168 section 5


def ncells(nbytes):
    """Cells a frame of ``nbytes`` bytes takes (spec section 12)."""
    return -(-nbytes // DATA_CELL_BYTES)


class SegBench(Elaboratable):
    """The egress with a preloaded data buffer, ``next`` table, block-sum
    memory and ACK buffers."""

    def __init__(self, data_init, next_init, sum_init, ack_init, *, steal=True):
        self.steal = steal
        self.data_init, self.next_init = data_init, next_init
        self.sum_init, self.ack_init = sum_init, ack_init
        self.egress = Egress(cells=CELLS, buf_bits=(BUF_COUNT - 1).bit_length(), slot_words=SLOT_WORDS)

    def elaborate(self, platform):
        m = Module()
        m.submodules.egress = eg = self.egress
        lfsr = Signal(16, init=0xACE1)
        m.d.sync += lfsr.eq(Cat(lfsr[1:], lfsr[0] ^ lfsr[2] ^ lfsr[3] ^ lfsr[5]))
        m.submodules.data = data = Memory(shape=32, depth=CELLS * CELL_WORDS, init=self.data_init)
        m.submodules.next = nxt = Memory(shape=range(CELLS), depth=CELLS, init=self.next_init)
        m.submodules.sums = sums = Memory(shape=16, depth=CELLS * SUMS_PER_CELL, init=self.sum_init)
        m.submodules.acks = acks = Memory(shape=32, depth=BUF_COUNT * SLOT_WORDS, init=self.ack_init)
        data_r, sum_r, ack_r = data.read_port(), sums.read_port(), acks.read_port()
        next_r = nxt.read_port(domain="comb")
        m.d.comb += [
            data_r.addr.eq(eg.ring_rd_addr), eg.ring_rd_data.eq(data_r.data),
            next_r.addr.eq(eg.cell_addr),
            # The ingress has `next`'s read port first: with `steal`, a
            # pseudo-random quarter of the cycles; `cell_next` is then wrong.
            eg.cell_ok.eq(~(lfsr[0] & lfsr[1]) if self.steal else 1),
            eg.cell_next.eq(Mux(eg.cell_ok, next_r.data, ~next_r.data)),
            sum_r.addr.eq(eg.sum_rd_addr), eg.sum_rd_data.eq(sum_r.data),
            ack_r.addr.eq(eg.ack_rd_addr), eg.ack_rd_data.eq(ack_r.data),
        ]
        return m


# --- frames -----------------------------------------------------------------------------------

def pattern(n, seed):
    """``n`` payload bytes that differ from their neighbours (a misplaced byte shows)."""
    return random.Random(seed).randbytes(n)


def tcp_frame(payload_bytes, *, encap="eth", v6=False, seq=1000, flags="A", ip_id=7,
              ip_opts=0, tcp_opts=(), ecn=ECT0, trailer=b"", seed=0):
    """A TCP segment with ``payload_bytes`` of payload in an Ethernet frame
    (``encaps.l2_header``), ``trailer`` bytes after the IP packet; ``ip_opts``
    IPv4 Router Alert options of 4 bytes each."""
    l2 = l2_header(encap, v6=v6)
    if v6:
        ip = IPv6(src="2001:db8::1", dst="2001:db8:ffff::2", tc=ecn, fl=0xABCDE)
    else:
        ip = IP(src="192.0.2.1", dst="198.51.100.2", id=ip_id, tos=ecn, flags="DF",
                options=[IPOption_Router_Alert()] * int(ip_opts))
    tcp = TCP(sport=40000, dport=443, seq=seq & 0xFFFF_FFFF, ack=777, flags=flags, window=500,
              options=list(tcp_opts))
    return bytes(l2 / ip / tcp / pattern(payload_bytes, seed)) + trailer


@dataclass
class Data:
    """A data frame to store in cells and grant: cut at ``chunk_bytes``
    (0: whole), with RED's CE mark or not."""
    frame: bytes
    chunk_bytes: int = 0
    mark: bool = False


@dataclass
class Grant:
    """One ``start`` of the egress and what must come out of it."""
    what: str                         # "ack", "whole" or "chunk"
    addr: int                         # ACK buffer, or the data frame's first cell
    nbytes: int                       # as stored
    want: bytes                       # the frame that must leave
    releases: tuple                   # the cells (first, last, n) that go back with it, or None
    mark: bool = False
    ip: dict = field(default_factory=lambda: dict(found=0, word=0, ipv6=0))
    seg: dict = None                  # start_seg_info
    chunk: tuple = (0, 0, 0, 0)       # idx, off, len, last
    item: int = None                  # the data frame's index in the items
    label: str = ""


def ip_fields(frame):
    found = ip_header(frame)
    if found is None:
        return dict(found=0, word=0, ipv6=0)
    off, version = found
    assert off % 4 == 2
    return dict(found=1, word=(off - 2) // 4, ipv6=int(version == 6))


def seg_fields(frame):
    s = seg_info(frame)
    return dict(ok=int(s.ok), pppoe=int(s.pppoe), tcp_word=s.tcp_word, pay_word=s.pay_word,
                pay_bytes=s.pay_bytes, seq=s.seq, offflags=s.offflags, sum=s.sum, hdr_tail=s.hdr_tail)


def data_grants(item, k, cells, label):
    """The grants of data frame ``k`` stored in ``cells``: one, or one per chunk."""
    frame = item.frame
    sent = set_ce(frame) if item.mark else frame
    ip = ip_fields(frame)
    addr, chain = cells[0], (cells[0], cells[-1], len(cells))
    if not item.chunk_bytes:
        return [Grant("whole", addr, len(frame), sent, chain, item.mark, ip, item=k, label=label)]
    info = seg_fields(frame)
    chunks = segment(sent, item.chunk_bytes)
    assert info["ok"] and len(chunks) > 1, f"{label}: the model does not cut it"
    grants = []
    for i, want in enumerate(chunks):
        off = i * item.chunk_bytes
        n = min(item.chunk_bytes, info["pay_bytes"] - off)
        last = i == len(chunks) - 1
        grants.append(Grant("chunk", addr, len(frame), want, chain if last else None, item.mark, ip, info,
                            (i, off, n, int(last)), k, f"{label} chunk {i}/{len(chunks)}"))
    return grants


def merge(rng, streams):
    """The grants of ``streams`` (lists), each in its order, interleaved at
    random (every interleaving equally likely)."""
    streams = [list(s) for s in streams if s]
    out = []
    while streams:
        s = rng.choices(streams, weights=[len(x) for x in streams])[0]
        out.append(s.pop(0))
        if not s:
            streams.remove(s)
    return out


def sum_addr(cells, b):
    """Where the sum of the payload block that starts in frame word ``b`` lives,
    for a frame in ``cells`` (the ingress's rule)."""
    return cells[b // CELL_WORDS] * SUMS_PER_CELL + b % CELL_WORDS // 4


def build(items, *, seed, acks=0, interleave=True):
    """Memories and grants for ``items`` (``Data``), each stored in cells
    drawn at random (as the ingress stores them, the partial last word's
    other lanes junk), and ``acks`` random ACK frames. With ``interleave``
    the chunks of one frame have other frames' grants between them."""
    rng = random.Random(seed)
    data = [rng.getrandbits(32) for _ in range(CELLS * CELL_WORDS)]
    nxt = [rng.randrange(CELLS) for _ in range(CELLS)]
    sums = [rng.getrandbits(16) for _ in range(CELLS * SUMS_PER_CELL)]
    ack_mem = [rng.getrandbits(32) for _ in range(BUF_COUNT * SLOT_WORDS)]
    free = list(range(CELLS))
    rng.shuffle(free)
    streams, scattered = [], False
    for k, item in enumerate(items):
        frame = item.frame
        n = ncells(len(frame))
        assert n <= len(free), f"the frames need more than {CELLS} cells"
        cells, free = free[:n], free[n:]
        for a, b in zip(cells, cells[1:]):
            nxt[a] = b
        words = frame + rng.randbytes(-len(frame) % 4)
        for j in range(0, len(words), 4):
            w = j // 4
            data[cells[w // CELL_WORDS] * CELL_WORDS + w % CELL_WORDS] = int.from_bytes(words[j:j + 4], "little")
        if item.chunk_bytes:
            pay_word = seg_info(frame).pay_word
            for j, s in enumerate(lane_block_sums(frame)):
                sums[sum_addr(cells, pay_word + 4 * j)] = s
        streams.append(data_grants(item, k, cells, f"frame #{k} ({len(frame)} bytes in cells {cells})"))
        scattered |= any(b != a + 1 for a, b in zip(cells, cells[1:]))
    assert scattered, "no frame is in scattered cells"
    ack_grants = []
    for k in range(acks):
        buf, n = rng.randrange(BUF_COUNT), rng.choice([54, 60, 64, 66, 78, 90, 150, 253])
        want = b"".join(ack_mem[(buf * SLOT_WORDS + j) % len(ack_mem)].to_bytes(4, "little")
                        for j in range(nwords(n)))[:n]
        ack_grants.append(Grant("ack", buf, n, want, None, label=f"ACK #{k} (buffer {buf})"))
    if interleave:
        # ACKs and whole frames land between chunks; the cut frames keep their order.
        wholes = [g for s in streams for g in s if g.what == "whole"]
        cuts = [g for s in streams for g in s if g.what == "chunk"]
        grants = merge(rng, [cuts] + [[g] for g in wholes] + [[a] for a in ack_grants])
    else:
        grants = [g for s in streams for g in s] + ack_grants
    return data, nxt, sums, ack_mem, grants


# --- simulation -------------------------------------------------------------------------------

def run(data, nxt, sums, ack_mem, grants, *, seed, ready_p, max_gap=3, steal=True):
    """Send ``grants``; returns per grant the beats received, the strobes
    (with their cycle) and the cycles of its start, first and last word."""
    rng = random.Random(seed)
    top = SegBench(data, nxt, sums, ack_mem, steal=steal)
    dut = top.egress
    received = [[] for _ in grants]
    strobes = [[] for _ in grants]
    timing = [{} for _ in grants]

    def set_start_fields(ctx, g):
        ctx_set = ctx.set
        ctx_set(dut.start_is_ack, g.what == "ack")
        ctx_set(dut.start_addr, g.addr)
        ctx_set(dut.start_bytes, g.nbytes)
        ctx_set(dut.start_mark, g.mark)
        for k, v in g.ip.items():
            ctx_set(getattr(dut.start_ip, k), v)
        ctx_set(dut.start_seg, g.what == "chunk")
        for k, v in (g.seg or {}).items():
            ctx_set(getattr(dut.start_seg_info, k), v)
        idx, off, n, last = g.chunk
        ctx_set(dut.start_chunk_idx, idx)
        ctx_set(dut.start_chunk_off, off)
        ctx_set(dut.start_chunk_len, n)
        ctx_set(dut.start_chunk_last, last)

    def junk(ctx):
        ctx_set = ctx.set
        # Between starts the start fields carry junk.
        for s in (dut.start_is_ack, dut.start_addr, dut.start_bytes, dut.start_mark, dut.start_ip,
                  dut.start_seg, dut.start_seg_info, dut.start_chunk_idx, dut.start_chunk_off,
                  dut.start_chunk_len, dut.start_chunk_last):
            s = Value.cast(s)
            ctx_set(s, rng.getrandbits(len(s)))

    async def bench(ctx):
        cur, nxt, wait = None, 0, 0
        busy_want, cycle = False, 0
        while nxt < len(grants) or cur is not None:
            cycle += 1
            assert cycle < 200_000, "the egress hangs"
            assert ctx.get(dut.busy) == busy_want, f"cycle {cycle}: busy {ctx.get(dut.busy)}"
            ctx.set(dut.start, 0)
            if cur is None and nxt < len(grants) and not wait:
                set_start_fields(ctx, grants[nxt])
                ctx.set(dut.start, 1)
                cur, nxt = nxt, nxt + 1
                timing[cur]["start"] = cycle
                wait = rng.randrange(max_gap + 1)
            else:
                if cur is None and wait:
                    wait -= 1
                if rng.random() < 0.3:
                    junk(ctx)
            ready = rng.random() < ready_p
            ctx.set(dut.o.ready, ready)
            took_last = False
            if ctx.get(dut.o.valid):
                assert cur is not None, f"cycle {cycle}: o.valid with no frame started"
                timing[cur].setdefault("first", cycle)
                if ready:
                    beat = ctx.get(dut.o.payload)
                    received[cur].append((beat.data, beat.keep, beat.first, beat.last))
                    took_last = bool(beat.last)
            cells = ctx.get(dut.release_cells)
            s = dict(stat=ctx.get(dut.stat_frame), bytes=ctx.get(dut.stat_bytes),
                     rel=ctx.get(dut.release_buf_en), cells_rel=ctx.get(dut.release_cells_en),
                     cells=(cells.first, cells.last, cells.n))
            if s["stat"] or s["rel"] or s["cells_rel"] or s["bytes"]:
                assert cur is not None, f"cycle {cycle}: strobes {s} with no frame"
                strobes[cur].append((cycle, s))
            await ctx.tick()
            if ctx.get(dut.start):
                busy_want = True
            if took_last:
                timing[cur]["last"] = cycle
                busy_want = False
                cur = None
        for _ in range(4):                                    # nothing more comes out
            ctx.set(dut.o.ready, 1)
            assert not ctx.get(dut.o.valid) and not ctx.get(dut.busy)
            await ctx.tick()

    simulate(top, bench, name="egress_seg")
    return received, strobes, timing


# --- checks -----------------------------------------------------------------------------------

def checksums_verify(frame):
    """Scapy's own IPv4 header checksum and TCP checksum of ``frame`` are the ones it carries."""
    pkt = dissect(frame)
    assert TCP in pkt, "Scapy finds no TCP segment"
    if IP in pkt:
        del pkt[IP].chksum
    del pkt[TCP].chksum
    return bytes(pkt) == frame


def check(grants, received, strobes, timing):
    for g, beats, st, t in zip(grants, received, strobes, timing):
        n = len(g.want)
        nw = nwords(n)
        assert len(beats) == nw, f"{g.label}: {len(beats)} words, want {nw}"
        got = b"".join(d.to_bytes(4, "little") for d, _k, _f, _l in beats)[:n]
        if got != g.want:
            diff = [k for k in range(n) if got[k] != g.want[k]]
            raise AssertionError(f"{g.label}: {len(diff)} bytes differ, first at {diff[0]}: "
                                 f"got {got[diff[0]:diff[0] + 8].hex()} want "
                                 f"{g.want[diff[0]:diff[0] + 8].hex()}")
        tail = n % 4
        keeps = [k for _d, k, _f, _l in beats]
        assert keeps == [0b1111] * (nw - 1) + [(1 << tail) - 1 if tail else 0b1111], \
            f"{g.label}: keep {keeps}"
        assert [f for _d, _k, f, _l in beats] == [1] + [0] * (nw - 1), f"{g.label}: first"
        assert [l for _d, _k, _f, l in beats] == [0] * (nw - 1) + [1], f"{g.label}: last"
        s = st[0][1] if st else {}
        want_st = dict(stat=1, bytes=n, rel=int(g.what == "ack"), cells_rel=int(g.releases is not None),
                       cells=s.get("cells") if g.releases is None else g.releases)
        assert [c for c, _s in st] == [t["last"]], f"{g.label}: strobes at {st}, last word at {t['last']}"
        assert s == want_st, f"{g.label}: strobes {s}, want {want_st}"
        if g.what == "chunk":
            assert len(g.want) >= MIN_FRAME_BYTES
            assert checksums_verify(g.want), f"{g.label}: the model's chunk has a wrong checksum"


def send(items, *, seed, ready_p=0.6, acks=0, interleave=True):
    data, nxt, sums, ack_mem, grants = build(items, seed=seed, acks=acks, interleave=interleave)
    result = run(data, nxt, sums, ack_mem, grants, seed=seed + 1, ready_p=ready_p)
    check(grants, *result)
    return grants, result


# --- tests ------------------------------------------------------------------------------------

@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_chunks_of_every_encapsulation_equal_the_model(v6):
    # Ethernet II, one VLAN tag, QinQ (0x88A8 and 0x9100 outer tags), PPPoE
    # and PPPoE in a VLAN tag; IPv4 with and without options. The payloads
    # are not a multiple of the chunk, some odd; the frames in scattered cells.
    encaps = ["eth", "dot1q", "qinq", "qinq-9100", "pppoe", "pppoe-dot1q"]
    items = [Data(tcp_frame(333 + 57 * k, encap=e, v6=v6, seed=k), chunk_bytes=[96, 208, 64][k % 3])
             for k, e in enumerate(encaps)]
    if not v6:
        items += [Data(tcp_frame(501, ip_opts=True, seed=9), chunk_bytes=128),
                  Data(tcp_frame(400, encap="pppoe", ip_opts=True, seed=10), chunk_bytes=48)]
    send(items, seed=1 + v6, acks=6)


def test_tcp_options_and_odd_data_offsets_are_copied_to_every_chunk():
    # doff 5 (none), 6 (MSS), 7 (window scale: an odd-length option, a NOP
    # and MSS), 8 (timestamps), 13 (timestamps and SACK), 15 (the largest).
    opt_sets = [
        [],
        [("MSS", 1460)],
        [("WScale", 7), ("NOP", None), ("MSS", 1400)],
        TS,
        TS + SACK,
        TS + [("NOP", None), ("NOP", None), ("SAck", (1, 2, 3, 4, 5, 6))],
    ]
    items = []
    for k, opts in enumerate(opt_sets):
        frame = tcp_frame(250 + 31 * k, v6=k % 2 == 1, tcp_opts=opts, seed=20 + k)
        items.append(Data(frame, chunk_bytes=80))
    # The longest headers: their end in a frame's second cell (PPPoE in a
    # VLAN tag, IPv4 with 40 bytes of options, doff 15: the payload from
    # byte 146), and the first payload block across the cells' border
    # (IPv6: from byte 126).
    items += [Data(tcp_frame(300, encap="pppoe-dot1q", ip_opts=10, tcp_opts=opt_sets[5], seed=26),
                   chunk_bytes=48),
              Data(tcp_frame(280, encap="pppoe-dot1q", v6=True, tcp_opts=opt_sets[5], seed=27),
                   chunk_bytes=64)]
    doffs = {dissect(d.frame)[TCP].dataofs for d in items}
    assert {5, 6, 7, 8, 13, 15} <= doffs, doffs
    assert [seg_info(d.frame).pay_word for d in items[-2:]] == [36, 31]
    send(items, seed=3, acks=4)


def test_chunk_16_pads_a_short_last_chunk_with_zeros_to_60_bytes():
    # No VLAN, no options: headers of 54 bytes, so a last chunk of 1..5
    # payload bytes makes a frame shorter than 60; its cell holds junk there.
    # The first frame is cut into 91 chunks.
    items = [Data(tcp_frame(n, seed=n), chunk_bytes=SEGMENT_BLOCK_BYTES)
             for n in (1456, 17, 34, 35, 53, 100, 21)]
    grants, _ = send(items, seed=4, acks=3, ready_p=0.7)
    padded = [g for g in grants if g.what == "chunk" and len(g.want) == MIN_FRAME_BYTES
              and g.chunk[2] < 6]
    assert len(padded) >= 5


def test_chunk_1456_of_full_size_frames():
    # The largest chunk: 91 block sums read per chunk. IPv4 and IPv6 with
    # a full 1460-byte payload and more, PPPoE; a trailer after the IP
    # packet is not payload; the largest frame (2048 bytes, 16 cells).
    items = [
        Data(tcp_frame(1460, seed=30), chunk_bytes=MAX_CHUNK_BYTES),
        Data(tcp_frame(1500, v6=True, tcp_opts=TS, seed=31), chunk_bytes=MAX_CHUNK_BYTES),
        Data(tcp_frame(1461, encap="pppoe", seed=32, trailer=bytes(range(7))),
             chunk_bytes=MAX_CHUNK_BYTES),
        Data(tcp_frame(1966, encap="qinq", v6=True, seed=33), chunk_bytes=MAX_CHUNK_BYTES),
    ]
    assert len(items[-1].frame) == MAX_FRAME_BYTES
    send(items, seed=5, acks=4)


def test_fin_and_psh_only_on_the_last_chunk():
    items = [Data(tcp_frame(700, flags="FPA", seed=40), chunk_bytes=160),
             Data(tcp_frame(300, v6=True, flags="PA", tcp_opts=TS, seed=41), chunk_bytes=64),
             Data(tcp_frame(200, flags="FA", encap="dot1q", seed=42), chunk_bytes=48),
             Data(tcp_frame(321, flags="EA", seed=43), chunk_bytes=112)]
    grants, _ = send(items, seed=6, acks=3)
    for g in grants:
        if g.what == "chunk":
            sent = dissect(items[g.item].frame)[TCP].flags.value
            flags = dissect(g.want)[TCP].flags.value
            fin_psh = 0x09                               # RFC 9293 section 3.1
            assert flags & fin_psh == (sent & fin_psh if g.chunk[3] else 0), g.label
            assert flags & ~fin_psh == sent & ~fin_psh, g.label


def test_sequence_number_and_ipv4_identification_wrap():
    items = [Data(tcp_frame(1000, seq=2**32 - 300, ip_id=0xFFFD, seed=50), chunk_bytes=64),
             Data(tcp_frame(500, seq=2**32 - 1, ip_id=0xFFFF, encap="pppoe", seed=51),
                  chunk_bytes=32),
             Data(tcp_frame(600, seq=2**32 - 64, v6=True, seed=52), chunk_bytes=64)]
    grants, _ = send(items, seed=7, acks=2)
    ids = [dissect(g.want)[IP].id for g in grants if g.what == "chunk" and IP in dissect(g.want)]
    assert 0xFFFF in ids and 0 in ids
    seqs = [dissect(g.want)[TCP].seq for g in grants if g.what == "chunk"]
    assert min(seqs) < 1000 and max(seqs) > 2**32 - 1000


def test_ce_mark_on_every_chunk_and_on_whole_frames():
    # RED's CE mark with the chunk's IPv4 checksum update (one update for
    # both); ECT(1) and an already-CE frame; whole frames marked and not.
    items = [
        Data(tcp_frame(600, seed=60), chunk_bytes=128, mark=True),
        Data(tcp_frame(500, ecn=0b01, ip_opts=True, ip_id=0xFFFE, seed=61), chunk_bytes=96,
             mark=True),
        Data(tcp_frame(400, ecn=0b11, encap="pppoe", seed=62), chunk_bytes=64, mark=True),
        Data(tcp_frame(450, v6=True, encap="dot1q", seed=63), chunk_bytes=80, mark=True),
        Data(tcp_frame(300, seed=64), mark=True),
        Data(tcp_frame(300, v6=True, seed=65), mark=True),
        Data(tcp_frame(100, encap="qinq", seed=66)),
    ]
    send(items, seed=8, acks=4)


@pytest.mark.parametrize("ready_p", [0.3, 0.9])
def test_acks_and_whole_frames_between_chunks_cells_released_after_the_last(ready_p):
    # Chunks of several frames with ACKs and whole data frames (some random
    # bytes, some TCP) granted between them; `check` pins the strobes: every
    # chunk counts as a frame, only the last one gives the frame's cells back.
    rng = random.Random(9)
    items = []
    for k in range(10):
        if k % 3 == 2:
            items.append(Data(rng.randbytes(rng.choice([60, 61, 63, 130, 1514]))))
        else:
            items.append(Data(tcp_frame(rng.randrange(100, 600), v6=k % 2 == 0, seed=70 + k,
                                        flags=rng.choice(["A", "PA", "FPA"])),
                              chunk_bytes=rng.choice([16, 32, 64, 96])))
    grants, _ = send(items, seed=10 + int(ready_p * 10), acks=12, ready_p=ready_p)
    kinds = [g.what for g in grants]
    first = kinds.index("chunk")
    last = len(kinds) - 1 - kinds[::-1].index("chunk")
    between = set(kinds[first:last])
    assert {"ack", "whole"} <= between, "nothing was granted between the chunks"


def test_each_chunk_reads_its_own_frames_cells_after_another_frames_grant():
    # Two frames cut at 256 bytes, their chunks alternating, and a whole
    # frame of ten cells between them: every chunk after the first starts
    # (block sums, payload) in its frame's third cell or later, right after
    # a grant of other cells; the chunk must wait for the walk of its own.
    items = [Data(tcp_frame(1400, seed=90), chunk_bytes=256),
             Data(tcp_frame(1300, v6=True, encap="dot1q", seed=91), chunk_bytes=256),
             Data(tcp_frame(1200, seed=92))]
    data, nxt, sums, ack_mem, grants = build(items, seed=13, interleave=False)
    a, b = ([g for g in grants if g.item == k] for k in (0, 1))
    whole = [g for g in grants if g.item == 2]
    order = [g for pair in zip(a, b) for g in pair]
    order = order[:5] + whole + order[5:] + a[len(b):] + b[len(a):]
    assert len(order) == len(grants)
    result = run(data, nxt, sums, ack_mem, order, seed=14, ready_p=0.8)
    check(order, *result)


def test_cycle_cost_of_a_chunk_without_back_pressure():
    # With o.ready always high, starts back to back and `next` never taken
    # by the ingress: a chunk's first word
    # is offered at most max(blocks + 5, 9) + ncells - 1 cycles later than a
    # whole frame's (the preparation waits for the walk of the frame's
    # ncells cells, one a cycle from the first, then reads the block sums
    # one per cycle, and the IP header's words for its checksum), then the
    # chunk streams as fast as a whole frame, one word every cycle or two.
    items = [Data(tcp_frame(100, seed=79)),
             Data(tcp_frame(1460, seed=80), chunk_bytes=MAX_CHUNK_BYTES),
             Data(tcp_frame(300, seed=81), chunk_bytes=SEGMENT_BLOCK_BYTES),
             Data(tcp_frame(700, v6=True, seed=82), chunk_bytes=256)]
    data, nxt, sums, ack_mem, grants = build(items, seed=11, interleave=False)
    received, strobes, timing = run(data, nxt, sums, ack_mem, grants, seed=12, ready_p=1.0, max_gap=0,
                                    steal=False)
    check(grants, received, strobes, timing)
    assert grants[0].what == "whole"
    whole_wait = timing[0]["first"] - timing[0]["start"]
    for g, t in zip(grants, timing):
        wait = t["first"] - t["start"]
        span = t["last"] - t["first"] + 1
        if g.what == "chunk":
            blocks = -(-g.chunk[2] // SEGMENT_BLOCK_BYTES)
            prep = max(blocks + 5, 9) + ncells(g.nbytes) - 1
            assert wait <= whole_wait + prep, f"{g.label}: first word {wait} cycles after start"
        assert span <= 2 * nwords(len(g.want)), f"{g.label}: {span} cycles for {len(g.want)} bytes"
