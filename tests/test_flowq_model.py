"""The golden model's flow queues (spec section 12; ``ackfilter.model.flowq``):
deficit round robin with sparse-flow priority, the mapping of flows to
queues, the overflow rule, RED's exemption of sparse flows, per-flow order.

Expectations are worked out by hand from RFC 8290 section 4 and sch_cake's
rules, not by running the model twice."""

import random

import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether

from ackfilter.model import FilterModel
from ackfilter.model.flowq import QUANTUM_MAX, QUANTUM_MIN, FlowQueues, cells_of, quantum_for_cpb
from ackfilter.model.red import Red
from ackfilter.model.shaper import LinkAccounting
from ackfilter.params import (DATA_CELL_BYTES, DATA_CELL_RESERVE, DATA_CELLS, OVERFLOW_BATCH, SHARED_CLASSES,
                             cpb_q16_for_rate)
from ackfilter.sim.traces import Flow, data_stream, tcp_frame


def bulk(sport, n, size=1514, seq=1):
    return [f for _, f in data_stream(Flow(sport=sport), n, size=size, start_seq=seq)]


def udp(sport, payload=b"q" * 30, dst="198.51.100.53", dport=53, ident=0):
    return bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:fe") /
                 IP(src="192.168.1.10", dst=dst, id=ident) / UDP(sport=sport, dport=dport) / payload)


def syn(sport):
    return tcp_frame(Flow(sport=sport), seq=1000, flags="S")


def fq_model(**kw):
    kw.setdefault("ack_mode", 2)
    return FilterModel(flow_queues=True, **kw)


def data_departures(model):
    return [f for kind, f in model.drain() if kind == "DEPART_DATA"]


# -- the quantum --------------------------------------------------------------

@pytest.mark.parametrize("rate_bps, want", [
    (1_000_000, QUANTUM_MIN),      # 125,000 B/s >> 12 = 30
    (20_000_000, 610),             # 2,500,000 >> 12 = 610
    (40_000_000, 1220),
    (100_000_000, QUANTUM_MAX),    # 12,500,000 >> 12 = 3051
])
def test_the_quantum_follows_the_shaped_rate_as_cakes_does(rate_bps, want):
    assert quantum_for_cpb(cpb_q16_for_rate(rate_bps)) == want
    assert quantum_for_cpb(0) == QUANTUM_MAX        # unshaped


@pytest.mark.parametrize("bad", [-1, 2**32, 1.5, True, None])
def test_the_quantum_refuses_a_register_value_out_of_range(bad):
    with pytest.raises(ValueError, match="cpb_q16"):
        quantum_for_cpb(bad)


def test_cells_round_up():
    assert DATA_CELLS * DATA_CELL_BYTES == 32768 and DATA_CELL_RESERVE == 8
    assert [cells_of(n) for n in (60, 256, 257, 1514, 2048)] == [1, 1, 2, 6, 8]


# -- sparse flows first ---------------------------------------------------------

def test_a_new_flow_waits_for_no_backlog():
    """A bulk upload queues 15 frames; a DNS query and a new connection's SYN
    arrive: each leaves as the next data frame (the bulk's head left first,
    it was in flight), not after the 14 frames ahead of it."""
    m = fq_model()
    up = bulk(40000, 15)
    for f in up:
        m.arrive(f)
    assert m.depart() == ("DEPART_DATA", up[0])
    q, s = udp(5353), syn(40001)
    m.arrive(q)
    m.arrive(s)
    out = data_departures(m)
    assert out[:2] == [q, s]
    assert out[2:] == up[1:]
    m.check_invariants()
    assert m.flows_active == 0


def test_a_flow_whose_credit_is_spent_goes_behind_the_others():
    """Two bulk flows of full frames, one quantum each (1514 B unshaped,
    charged 1514 + 24 B): after their first frames the credits are
    negative, so they alternate frame by frame."""
    m = fq_model()
    a, b = bulk(41000, 4), bulk(41001, 4)
    for f in a + b:
        m.arrive(f)
    assert data_departures(m) == [a[0], b[0], a[1], b[1], a[2], b[2], a[3], b[3]]


def test_credit_is_charged_in_link_bytes():
    """Small frames against large ones, both backlogged, at the minimum
    quantum: over many rounds each flow gets the same link bytes (frame +
    24 B of Ethernet overhead) within a quantum and a frame."""
    acct = LinkAccounting()
    m = fq_model(quantum=QUANTUM_MIN, charge=acct.charge)
    small, large = bulk(42000, 200, size=64), bulk(42001, 12, size=1514)
    for f in large + small:
        m.arrive(f)
    sent = {"small": 0, "large": 0}
    while True:
        d = m.depart()
        if d is None or not (m.fq.queues[0].frames and m.fq.queues[1].frames):
            break
        sent["large" if len(d[1]) == 1514 else "small"] += acct.charge(d[1])
    assert abs(sent["small"] - sent["large"]) <= QUANTUM_MIN + 1538, sent


# -- flows to queues ----------------------------------------------------------------

def test_udp_flows_are_flows_of_their_own():
    """Two UDP flows (a call and DNS) and a TCP upload take three queues."""
    m = fq_model()
    m.arrive(bulk(43000, 1)[0])
    m.arrive(udp(6000, dport=3478))
    m.arrive(udp(5353))
    assert m.flows_active == 3
    assert [len(m.fq.frames_of(q)) for q in range(3)] == [1, 1, 1]


def test_a_full_table_sends_new_flows_to_the_shared_queue_and_keeps_their_order():
    """Four entries, five bulk flows: the fifth shares the extra queue. When
    an entry frees while the shared queue still holds that flow's frames,
    its next frames follow them there, never overtake them."""
    m = fq_model(flow_entries=4)
    flows = [bulk(44000 + i, 3, size=200, seq=1) for i in range(5)]
    for i in range(3):
        for f in flows:
            m.arrive(f[i])
    shared = m.fq.shared
    assert m.fq.frames_of(shared) == flows[4]
    # Drain until flow 0's queue empties and its entry goes.
    while m.fq.frames_of(0):
        m.depart()
    assert m.entries[0] is None and m.fq.frames_of(shared)
    late = bulk(44004, 1, size=200, seq=1 + 3 * 146)[0]
    m.arrive(late)
    assert m.fq.frames_of(shared)[-1] == late and m.entries[0] is None
    m.check_invariants()
    out = data_departures(m)
    mine = [f for f in out if f in flows[4] or f == late]
    assert mine == [f for f in flows[4] if f in out] + [late]


def test_the_shared_queue_holds_back_only_flows_of_the_classes_it_holds():
    """While the shared queue holds a flow's frames, a new flow of another
    tag class takes a free entry; one of the same class (its frames could be
    the held flow's, as far as the class tells) joins the shared queue."""
    m = fq_model(flow_entries=4)
    flows = [bulk(44100 + i, 2, size=200) for i in range(5)]
    for i in range(2):
        for f in flows:
            m.arrive(f[i])
    held = m.classify(flows[4][0]).tag % SHARED_CLASSES
    while m.fq.frames_of(0):
        m.depart()
    assert m.entries[0] is None and m.fq.frames_of(m.fq.shared)
    def first_sport(same):
        return next(p for p in range(30000, 31000)
                    if (m.classify(syn(p)).tag % SHARED_CLASSES == held) == same)
    other, same = syn(first_sport(False)), syn(first_sport(True))
    m.arrive(other)
    assert m.fq.frames_of(0) == [other]
    m.arrive(same)
    assert m.fq.frames_of(m.fq.shared)[-1] == same
    m.check_invariants()


def test_every_flow_keeps_its_order_under_random_traffic():
    """Random arrivals and departures of 40 flows (TCP data and ACKs, UDP)
    through 8 entries: every flow's data leave in arrival order, and so do
    its ACKs; nothing is lost but counted drops; the table ends empty."""
    rng = random.Random(7)
    m = fq_model(flow_entries=8, data_cells=96, cell_reserve=8)
    arrived, seqs, acks, out = {}, {}, {}, []
    shared_used = table_full = 0
    for step in range(4000):
        if rng.random() < 0.55:
            sport = 45000 + rng.randrange(40)
            kind = rng.choice(["data", "data", "ack", "udp"])
            if kind == "udp":
                f = udp(sport, payload=bytes([step & 0xFF]) * rng.randrange(20, 400), ident=step)
                key = ("udp", sport)
            elif kind == "data":
                s = seqs.get(sport, 1)
                f = tcp_frame(Flow(sport=sport), seq=s, ack=1, flags="PA", payload=b"x" * rng.randrange(1, 1400))
                seqs[sport] = s + 1400
                key = ("tcp", sport)
            else:
                a = acks.get(sport, 1) + rng.randrange(1, 3000)
                acks[sport] = a
                f = tcp_frame(Flow(sport=sport), seq=1, ack=a, flags="A")
                key = ("ack", sport)
            arrived.setdefault(key, []).append(f)
            m.arrive(f)
        elif (d := m.depart()) is not None:
            out.append(d[1])
        shared_used += not m.fq.empty(m.fq.shared)
        table_full += m.flows_active == 8
        if step % 97 == 0:
            m.check_invariants()
    assert shared_used > 100 and table_full > 100      # the traffic reached both
    out += [f for _, f in m.drain()]
    m.check_invariants()
    assert m.flows_active == 0 and m.data_queue_frames == 0
    position = {f: i for i, f in enumerate(out)}
    for key, frames in arrived.items():
        left = [position[f] for f in frames if f in position]
        assert left == sorted(left), f"{key} reordered"
    c = m.counters
    assert c["frames_in"] == len(out) + c["acks_superseded"] + m.dropped()
    assert c["drop_data_overflow"] > 0 and c["drop_data_full"] == 0


# -- overflow -------------------------------------------------------------------------

def test_overflow_drops_from_the_head_of_the_fattest_queue_never_a_sparse_flow():
    """The bulk fills the buffer to its limit (128 - 8 cells = 20 frames of
    6 cells); a SYN arrives over the limit and halves the bulk's queue from
    its head (10 frames, 60 cells); a DNS query and the next bulk frame
    then fit."""
    m = fq_model()
    up = bulk(46000, 21)
    evs = [m.arrive(f) for f in up[:20]]
    assert all(e == ["ARRIVE_DATA"] for e in evs) and m.fq.cells == 120
    assert m.arrive(syn(46001)) == ["DROP_DATA_OVERFLOW"] * 10 + ["ARRIVE_DATA"]
    assert m.fq.frames_of(0) == up[10:20]           # the head half went
    assert m.arrive(udp(5353)) == ["ARRIVE_DATA"]
    assert m.arrive(up[20]) == ["ARRIVE_DATA"]
    assert m.counters["drop_data_overflow"] == 10
    out = data_departures(m)
    assert out[:3] == [up[10], syn(46001), udp(5353)]


def test_an_overflow_drops_at_most_a_batch_of_small_frames():
    """120 one-cell frames fill the buffer; a DNS query over the limit
    drops from the bulk's head until half its cells are gone or
    OVERFLOW_BATCH (16) frames, whichever comes first: 16 frames, 16 cells."""
    assert OVERFLOW_BATCH == 16
    m = fq_model()
    up = bulk(49000, 120, size=100)
    assert all(m.arrive(f) == ["ARRIVE_DATA"] for f in up) and m.fq.cells == 120
    assert m.arrive(udp(5354)) == ["DROP_DATA_OVERFLOW"] * 16 + ["ARRIVE_DATA"]
    assert m.fq.frames_of(0) == up[16:] and m.fq.cells == 105
    assert m.overflow_dropped == up[:16]


def test_an_overflow_spares_the_frame_leaving_in_chunks():
    """With the segmenter on, the bulk's head has started in chunks: the
    overflow drops the frames behind it, and it finishes whole."""
    m = fq_model(chunk_bytes=512)
    up = bulk(47000, 21)
    for f in up[:20]:
        m.arrive(f)
    kind, first = m.depart()
    assert kind == "DEPART_DATA" and len(first) < 1514 and m.fq.current == 0
    ev = m.arrive(up[20])
    # 114 droppable cells of 19 frames: drops until 57 or more are gone (10 frames).
    assert ev == ["DROP_DATA_OVERFLOW"] * 10 + ["ARRIVE_DATA"]
    assert m.fq.frames_of(0) == [up[0]] + up[11:21]
    m.check_invariants()


def _seq_and_payload(frame):
    """A TCP segment's sequence number and payload bytes (by the IP length)."""
    ip = Ether(frame)[IP]
    return ip[TCP].seq, ip.len - 4 * ip.ihl - 4 * ip[TCP].dataofs


def test_a_new_flows_frame_leaves_whole_between_two_chunks():
    """A bulk upload on the old list leaves in 512-byte chunks; a SYN and a
    second upload's first full frame arrive after one chunk of its second
    frame: both leave next, whole (the second upload's frame too, though
    the segmenter would cut it), then the cut frame goes on from its second
    chunk."""
    m = fq_model(chunk_bytes=512)
    up = bulk(48000, 4)                   # 1460 bytes of payload: chunks of 512, 512, 436
    for f in up:
        m.arrive(f)
    first = [m.depart()[1] for _ in range(3)]          # up[0] in three chunks: its credit is spent
    assert [_seq_and_payload(f)[1] for f in first] == [512, 512, 436]
    kind, c0 = m.depart()                              # up[1]'s first chunk, from the old list
    seq1 = Ether(up[1])[TCP].seq
    assert kind == "DEPART_DATA" and _seq_and_payload(c0) == (seq1, 512)
    assert m.fq.current == 0 and list(m.fq.old) == [0]
    s, other = syn(48001), bulk(48002, 1)[0]
    m.arrive(s)
    m.arrive(other)
    assert m.depart() == ("DEPART_DATA", s)
    assert m.depart() == ("DEPART_DATA", other)        # whole: 1514 bytes, as it came
    assert [_seq_and_payload(m.depart()[1]) for _ in range(2)] == [(seq1 + 512, 512), (seq1 + 1024, 436)]
    assert m.counters["seg_frames"] == 2 and m.counters["seg_chunks"] == 6
    m.check_invariants()


def test_nothing_passes_a_frame_in_chunks_at_the_new_lists_head():
    """A queue joins the new list at its end: a frame leaving in chunks
    from the new list's head has no new flow before it, and a SYN that
    arrives meanwhile waits for its last chunk (then goes first)."""
    m = fq_model(chunk_bytes=512)
    up = bulk(49000, 2)
    for f in up:
        m.arrive(f)
    assert _seq_and_payload(m.depart()[1])[1] == 512
    assert list(m.fq.new) == [0] and m.fq.current == 0
    s = syn(49001)
    m.arrive(s)
    assert [_seq_and_payload(m.depart()[1])[1] for _ in range(2)] == [512, 436]
    assert m.depart() == ("DEPART_DATA", s)
    m.check_invariants()


# -- RED --------------------------------------------------------------------------------

def test_red_never_notifies_a_frame_of_a_flow_without_data_queued():
    """RED forced on (thresholds 1 and 2 bytes): the bulk's second frame is
    dropped, a new flow's first frame (the queue of its flow empty) passes."""
    red = Red(min_bytes=1, max_bytes=2, max_p=65536, wq_shift=1, gentle=False, idle_shift=16)
    m = fq_model(red=red)
    up = bulk(48000, 3)
    assert m.arrive(up[0], now=10) == ["ARRIVE_DATA"]
    assert m.arrive(up[1], now=20) == ["DROP_RED"]
    assert m.arrive(syn(48001), now=30) == ["ARRIVE_DATA"]
    assert m.arrive(udp(5353), now=40) == ["ARRIVE_DATA"]
    assert m.arrive(up[2], now=50) == ["DROP_RED"]


def test_flow_queues_refuse_bad_sizes():
    with pytest.raises(ValueError, match="reserve"):
        FlowQueues(entries=4, cells=16, reserve=16)
    with pytest.raises(ValueError, match="quantum"):
        FlowQueues(entries=4, cells=16, reserve=1, quantum=100)
    with pytest.raises(ValueError, match="hosts"):
        FlowQueues(entries=4, cells=16, reserve=1, hosts=3)
    with pytest.raises(ValueError, match="hosts"):
        FlowQueues(entries=4, cells=16, reserve=1, hosts=128)


# -- hosts (spec section 12, "Hosts") ----------------------------------------------

def host_fold_by_hand(words):
    """The host fold written another way than the model's: the source
    address's four words XORed, then that word's 6-bit pieces XORed."""
    x, h = words[2] ^ words[3] ^ words[4] ^ words[5], 0
    while x:
        h ^= x & 63
        x >>= 6
    return h


@pytest.mark.parametrize("src", ["192.168.1.10", "10.0.0.1", "2001:db8::42", "fe80::1:2:3:4"])
def test_a_hosts_bucket_is_its_source_address_folded(src):
    from ackfilter.flowkey import host_bucket
    words = FilterModel().classify(tcp_frame(Flow(src=src, dst="2001:db8::1" if ":" in src else "203.0.113.5"),
                                             seq=1, flags="S")).key
    assert host_bucket(words, 64) == host_fold_by_hand(words)
    assert host_bucket(words, 16) == host_fold_by_hand(words) & 15


def test_a_dhcp_pools_hosts_have_buckets_of_their_own():
    """The 64 addresses of an aligned block share no bucket (the last byte's
    low six bits are the fold's, the rest adds a constant)."""
    from ackfilter.flowkey import flow_key_words, host_bucket
    for base in (0, 64, 128, 192):
        buckets = {host_bucket(flow_key_words(ip=True, src=bytes([192, 168, 1, base + i])), 64) for i in range(64)}
        assert len(buckets) == 64


def host_bulk(src, sport, n, size):
    return [f for _, f in data_stream(Flow(src=src, sport=sport), n, size=size, start_seq=1)]


def link_shares(hosts):
    """Host A (one upload) and host B (four) backlogged with 576-byte frames;
    the link bytes each host sent while both still had frames queued."""
    acct = LinkAccounting()
    m = fq_model(quantum=QUANTUM_MIN, charge=acct.charge, host_buckets=hosts)
    a = host_bulk("192.168.1.10", 45000, 12, 576)
    bs = [host_bulk("192.168.1.11", 45001 + i, 6, 576) for i in range(4)]
    for i in range(12):
        for f in ([a[i]] + [b[i] for b in bs if i < len(b)]):
            m.arrive(f)
    assert m.counters["drop_data_overflow"] == 0
    sent = {"a": 0, "b": 0}
    while m.fq.frames_of(0) and any(m.fq.frames_of(q) for q in range(1, 5)):
        _, f = m.depart()
        sent["a" if f in a else "b"] += acct.charge(f)
        m.check_invariants()
    return sent


def test_hosts_share_the_link_by_host_first():
    """With host fairness the host of one upload gets as many link bytes as
    the host of four (CAKE's dual-srchost: each of B's flows a quarter),
    within a quantum and a frame for each of B's flows; with flows only it
    gets a fifth."""
    frame = 576 + 24
    sent = link_shares(64)
    assert abs(sent["a"] - sent["b"]) <= QUANTUM_MIN + 4 * frame, sent
    flows = link_shares(0)
    assert abs(4 * flows["a"] - flows["b"]) <= 4 * (QUANTUM_MIN + frame), flows


def test_a_sparse_flow_of_a_loaded_host_still_goes_first():
    """Host B's four uploads make each of its flows pay four times its bytes;
    a DNS query from B is a new flow and leaves next all the same."""
    m = fq_model(host_buckets=64, quantum=QUANTUM_MIN)
    bs = [host_bulk("192.168.1.10", 45100 + i, 4, 576) for i in range(4)]
    for i in range(4):
        for b in bs:
            m.arrive(b[i])
    for _ in range(6):
        m.depart()
    assert max(m.fq.bulk) == 4
    q = udp(5353)                               # from 192.168.1.10, host B
    m.arrive(q)
    assert m.depart() == ("DEPART_DATA", q)
