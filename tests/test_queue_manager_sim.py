"""The queue manager (``gateware.queue_manager.QueueManager``) in the Amaranth
simulator, alone, decision by decision against the golden model.

The testbench plays the ingress, the egress and the shaper around it:

* the ingress: each frame becomes the entry the ingress would commit
  (``ingress_entry_layout``), built from the model's classifier
  (``model.pktparse.classify``): verdict, length, IP packet length, the ACK
  buffer (``buf``, unique among the buffers in use) or the data frame's
  cells (``chain``: first, last, count; drawn from the testbench's free
  list of ``CELLS`` cells, from its head, as the ingress takes them; a
  frame's first cell is unique among the frames holding cells) and the
  pure ACK's metadata. Entries wait in a FIFO (``entry_valid``/``entry``;
  ``entry_ready`` pops the head) and come in bursts. A data frame is
  DATA_FULL when it needs more cells than the free list has but its tail
  (spec section 12, "Buffer"), or at random (the ingress found no room
  while it wrote it). The descriptor FIFO is as deep as there are cells,
  as in the core;
* the egress: ``egress_busy`` rises the cycle after ``egress_start`` and
  stays high for a random time; an ACK buffer comes back to the pool when
  its frame has left, a data frame's cells to the free list;
* the shaper: ``shaper_eligible`` falls after each start for a random time,
  long in congested phases, so that both queues fill.

Every event (``ev_valid``/``ev_kind``) is checked as it happens against
:class:`~ackfilter.model.FilterModel` fed the same frames (the scoreboard
rule of ``model.scoreboard``: each arrival, with the drops that made room for
it, is exactly what the model decides for the next frame; each departure is
the class the model's scheduler picks); and beyond the event port:

* a departure starts the egress in the same cycle, only while the egress
  is free and the shaper allows, with the model's frame (its buffer or
  first cell, its length and IP packet length, RED's mark);
* with RED on (``red``), a data frame RED drops gives its cells back in the
  cycle of its ``DROP_RED`` event (``discard_en``, ``discard_cells`` its
  chain), and ``discard_en`` is never high otherwise; at the end every
  cell is free again: none was lost or given back twice;
* the ACK buffers freed (``free_buf_en``/``free_buf_id``) at an arrival are
  exactly those of the frames the model's ACK queue lost (a superseded ACK,
  a dropped one), and nothing is freed otherwise;
* ``stat_superseded``/``stat_collision``/``stat_cam_full`` move as the
  model's counters do, arrival by arrival;
* when nothing is happening, ``ack_queue_depth``, ``data_queue_frames``,
  ``flows_active`` and ``backlog`` are the model's.
"""

import random
from collections import deque
from dataclasses import replace

import pytest

from blocksim import simulate
from ackfilter.gateware.flow_record import SLOT_TAKE_AT, SLOT_WORDS, SLOT_WRITE_ORDER
from ackfilter.gateware.ingress import KEY_SLOTS, MAX_CELLS, Verdict, ingress_entry_layout
from ackfilter.gateware.queue_manager import QueueManager
from ackfilter.model import FilterModel
from ackfilter.flowkey import KEY_V6_BIT
from ackfilter.model.pktparse import classify, ip_packet_length
from ackfilter.model.red import ECN_CE, Red, ecn_codepoint, ip_header
from ackfilter.gateware.shaper import CHARGED_LATENCY
from ackfilter.params import ARRIVAL_EVENTS, DATA_CELL_BYTES, EVENTS, RED_DECISION_LEAD
from ackfilter.sim import traces
from ackfilter.sim.random_trace import random_trace

CELLS = 64              # the data buffer: 8 KiB in cells of 128 bytes
BUF_BITS = 8            # 256 ACK buffers: never short of one
DESC_DEPTH = CELLS      # as the core: a queued frame holds a cell at least
ARRIVALS = ARRIVAL_EVENTS
ROOM = {"DROP_ACK_FRONT", "DROP_ACK_COVERED"}
DEPARTS = {"DEPART_ACK", "DEPART_DATA"}
STATS = {"stat_superseded": "acks_superseded", "stat_collision": "cam_collisions",
         "stat_cam_full": "cam_full"}


# -- frames ----------------------------------------------------------------

def tag_of(flow):
    return classify(traces.tcp_frame(flow, ack=1, builder="raw"), ack_mode=2).tag


#: Flows whose 16-bit CAM tags equal FLOW_A's (found by search; checked
#: below): one differs in its ports only (the flow record's word 5), one in
#: its addresses only (words 1 and 3).
FLOW_A = traces.Flow(src="10.9.0.1", dst="198.51.100.99", sport=50000, dport=443)
FLOW_B = replace(FLOW_A, sport=17347, dport=80)
FLOW_C = replace(FLOW_A, src="10.9.80.207", dst="198.51.100.1")


def frames_for(seed, n_random, n_flows):
    """A random trace of a few busy flows (every supersession corner of
    ``random_trace``), with the ACK streams of three flows whose tags
    collide woven in; every frame unique."""
    assert tag_of(FLOW_A) == tag_of(FLOW_B) == tag_of(FLOW_C)
    rng = random.Random(seed)
    frames = [f for _t, f in random_trace(seed, n_random, n_flows)]
    ts = 5000
    for k in range(n_random // 5):
        fl = (FLOW_A, FLOW_B, FLOW_C)[k % 3]
        ts += rng.randrange(3)
        opts = [("NOP", None), ("NOP", None), ("Timestamp", (ts, 77))]
        ack = traces.tcp_frame(fl, ack=1000 + 1448 * (k // 3 + rng.randrange(2)), options=opts,
                               ip_id=k, builder="raw")
        frames.insert(rng.randrange(len(frames) + 1), ack)
    assert len(set(frames)) == len(frames)
    return frames


def ncells(nbytes):
    """Cells a frame of ``nbytes`` bytes takes (spec section 12)."""
    return -(-nbytes // DATA_CELL_BYTES)


def slot_words(p):
    """The key slot the ingress writes for a frame (``p``: the model's
    classification), word by word: the key as the flow record holds it
    (32-bit words 2j and 2j + 1 in 64-bit word j), then words 6-13 (the
    pure ACK's option values at the record's word numbers: 7 its
    timestamps, 8-11 its SACK blocks, 12-13 its AccECN counters; the
    segmenter's fields, unused here, 0)."""
    key = list(p.key) + [0]
    words = [key[2 * j] | key[2 * j + 1] << 32 for j in range(len(key) // 2)]
    ack = p.pure_ack
    sack = (p.sack if ack else []) + [(0, 0)] * (4 - len(p.sack if ack else []))
    aecn = p.accecn if ack else (0, 0, 0)
    words.append(0)
    words.append(p.tsval | p.tsecr << 32 if ack else 0)
    words += [s | e << 32 for s, e in sack]
    words += [aecn[0] | aecn[1] << 24, aecn[2]]
    return words


def entry_value(p, frame, *, verdict, chain, buf, key_slot):
    """The ingress's entry for ``frame`` (``p``: the model's classification):
    for every frame its IP header, ECN field (RED's), flow tag and key slot,
    for a pure ACK its metadata."""
    hdr = ip_header(frame)
    ip = dict(found=0, word=0, ipv6=0) if hdr is None else \
        dict(found=1, word=(hdr[0] - 2) // 4, ipv6=int(hdr[1] == 6))
    meta = dict(ecn=ecn_codepoint(frame) or 0, tag=p.tag if p.key else 0)
    if p.pure_ack:
        meta = dict(tag=p.tag, ack=p.ack, has_ts=int(p.has_ts), sack_n=len(p.sack),
                    other_opts=int(p.other_opts), eligible=int(p.eligible), ece=int(p.ece),
                    cwr=int(p.cwr), ae=int(p.ae), ecn=p.ecn, accecn_opt=int(p.accecn_opt),
                    accecn_mask=p.accecn_mask)
    layout = ingress_entry_layout(cells=CELLS, buf_bits=BUF_BITS)
    return layout.const(dict(verdict=verdict, nbytes=min(len(frame), 0xFFFF),
                             l3_bytes=ip_packet_length(frame) & 0xFFF if len(frame) <= 2048 else 0,
                             chain=chain, buf=buf, ip=ip, meta=meta, key_slot=key_slot,
                             key_v6=p.key[0] >> KEY_V6_BIT & 1 if p.key else 0))


# -- the harness -----------------------------------------------------------

def run_manager(frames, *, ack_mode, ack_queue_limit, data_share, ack_slots=16, flow_entries=8,
                seed=0, congest=0.7, full_p=0.03, hold=False, red=None, flow_queues=False):
    """Run the frames through a QueueManager; every check is made as it
    happens. ``hold``: the shaper stays closed until every frame has
    arrived. ``red``: RED's registers (``red_*`` without the prefix), on.
    Returns the model and a tally of the events seen (and of the frames
    the free list had no room for, ``"no cells"``, and of the frames whose
    cells a RED drop gave back, ``"discard"``). ``flow_queues``: the data in
    per-flow queues (spec section 12); the bench plays the shaper's charge
    of each frame that leaves (its length, CHARGED_LATENCY cycles on)."""
    dut = QueueManager(ack_slots=ack_slots, flow_entries=flow_entries, cells=CELLS,
                       buf_bits=BUF_BITS, desc_depth=DESC_DEPTH, flow_queues=flow_queues)
    model = FilterModel(ack_mode=ack_mode, ack_queue_limit=ack_queue_limit, flow_entries=flow_entries,
                        data_share=data_share, ack_slots=ack_slots,
                        red=Red(**red) if red is not None else None,
                        flow_queues=flow_queues, data_cells=CELLS, charge=len)
    room = ROOM | ({"DROP_DATA_OVERFLOW"} if flow_queues else set())
    # Cycles a frame may wait to leave while an arrival is handled; with flow
    # queues the arrival may scan every queue, drop up to half the buffer's
    # frames (three cycles each) and write a new entry, and the departure
    # waits for the last one's charge and looks at every queue twice.
    wait_bound = 60 if not flow_queues else 60 + 4 * (flow_entries + 1) + 3 * CELLS // 2 + 40
    rng = random.Random(seed)
    tally = {"no cells": 0, "discard": 0}

    async def bench(ctx):
        ctx.set(dut.ack_mode, ack_mode)
        ctx.set(dut.ack_queue_limit, ack_queue_limit)
        ctx.set(dut.data_share, data_share)
        # Nothing on its way from the "ingress" but what the bench hands over:
        # the written mode comes into force before the first frame.
        ctx.set(dut.entries_quiet, 1)
        for name, value in (red or {}).items():
            ctx.set(getattr(dut, f"red_{name}"), value)
        ctx.set(dut.red_enable, red is not None)
        # The stack of list nodes is rebuilt after a reset, a node a cycle;
        # in the core nothing comes in meanwhile (it waits longer, for the
        # ACK buffers' stacks and the free list of cells).
        await ctx.tick().repeat(ack_slots)
        pool = list(range(1 << BUF_BITS))       # ACK buffers the "ingress" may use
        rng.shuffle(pool)
        buf_of, chain_of = {}, {}               # frame -> ACK buffer / its cells
        cells = deque(range(CELLS))             # the free list of cells, head first
        cells_of = {}                           # first cell -> the cells of a frame holding them
        marked = set()                          # data frames RED marked (as the model queued them)
        fifo = []                               # (frame, verdict, entry): the entry FIFO
        key_writes = deque()                    # (address, word): the ingress's, a word a cycle
        key_slot = 0                            # the next key's slot
        sent = 0                                # frames handed to the FIFO
        arrived = 0                             # frames the manager reported
        popped = []                             # frames popped, not yet reported
        busy_left = 0                           # egress busy for this many more cycles
        in_egress = None                        # the frame being sent
        closed = 0                              # shaper: not eligible for this many cycles
        frees, pending_room = [], []
        stats = {s: 0 for s in STATS}
        counters_before = dict(model.counters)
        charges = {}                            # cycle -> the shaper's charge reported then
        overflowed = []                         # frames an overflow dropped, for the next arrival
        quiet = 0                               # cycles since the last event
        waited = 0                              # cycles a frame could have left
        burst = 0
        cycle = 0

        def next_entry():
            nonlocal sent, key_slot
            frame = frames[sent]
            sent += 1
            p = classify(frame, ack_mode=ack_mode)
            buf = 0
            chain = dict(first=0, last=0, n=0)
            n = ncells(len(frame))
            if p.cls == "runt":
                verdict = Verdict.RUNT
            elif p.cls == "oversize":
                verdict = Verdict.OVERSIZE
            elif p.cls == "ack":
                verdict = Verdict.ACK
                buf = buf_of[frame] = pool.pop()
            elif n > min(MAX_CELLS, len(cells) - 1) or rng.random() < full_p:
                # The free list keeps its tail.
                verdict = Verdict.DATA_FULL
                tally["no cells"] += n > len(cells) - 1
            else:
                verdict = Verdict.DATA
                mine = [cells.popleft() for _ in range(n)]
                chain = chain_of[frame] = dict(first=mine[0], last=mine[-1], n=n)
                cells_of[mine[0]] = mine
            # As the ingress does: the slot's words into the next slot, word
            # SLOT_WRITE_ORDER[c] c cycles after the entry is offered (none
            # for a runt or an oversize frame).
            slot = key_slot
            if verdict not in (Verdict.RUNT, Verdict.OVERSIZE):
                words = slot_words(p)
                key_writes.extend((slot * SLOT_WORDS + j, words[j]) for j in SLOT_WRITE_ORDER)
                key_slot = (key_slot + 1) % KEY_SLOTS
            fifo.append((frame, verdict, entry_value(p, frame, verdict=verdict, chain=chain, buf=buf,
                                                     key_slot=slot)))

        def give_back(chain):
            """A frame's cells go back to the free list, at its tail."""
            mine = cells_of.pop(chain["first"])
            assert (mine[-1], len(mine)) == (chain["last"], chain["n"])
            cells.extend(mine)

        give = None                             # cells given back at this edge
        while sent < len(frames) or fifo or popped or model.ack_queue or model.data_queue_frames \
                or in_egress is not None or charges or quiet < 16:
            cycle += 1
            assert cycle < 400_000, "the queue manager hangs"
            ctx.set(dut.now, cycle)
            # The ingress: bursts of frames into the FIFO.
            if burst == 0 and sent < len(frames) and rng.random() < 0.02:
                burst = rng.choice([1, 2, 4, 8, 20])
            if burst and sent < len(frames) and len(fifo) < 4 and not key_writes:
                next_entry()
                burst -= 1
            write = key_writes.popleft() if key_writes else None
            ctx.set(dut.key_wr_en, write is not None)
            if write is not None:
                ctx.set(dut.key_wr_addr, write[0])
                ctx.set(dut.key_wr_data, write[1])
            # As the core does: the newest entry waits until SLOT_TAKE_AT
            # cycles after its push (the write of its slot's word
            # SLOT_WRITE_ORDER[SLOT_TAKE_AT] is in this cycle).
            written = len(SLOT_WRITE_ORDER) - len(key_writes)
            ctx.set(dut.entry_valid, bool(fifo) and not (len(fifo) == 1 and key_writes
                                                         and written <= SLOT_TAKE_AT))
            if fifo:
                ctx.set(dut.entry, fifo[0][2])
            # The egress and the shaper.
            eligible = closed == 0 and not (hold and arrived < len(frames))
            ctx.set(dut.egress_busy, busy_left > 0)
            charge = charges.pop(cycle, None)
            ctx.set(dut.charged, charge is not None)
            ctx.set(dut.charged_bytes, charge or 0)
            ctx.set(dut.shaper_eligible, eligible)
            congested = (sent * 3 // len(frames)) % 2 == 0 and sent < len(frames)

            # What the manager does in this cycle.
            if ctx.get(dut.entry_ready):
                assert fifo, f"cycle {cycle}: entry_ready with the FIFO empty"
                popped.append(fifo.pop(0))
            if ctx.get(dut.free_buf_en):
                frees.append(ctx.get(dut.free_buf_id))
            for s in STATS:
                stats[s] += ctx.get(getattr(dut, s))
            start = ctx.get(dut.egress_start)
            discard = ctx.get(dut.discard_en)
            discard_cells = ctx.get(dut.discard_cells)
            if start:
                assert busy_left == 0 and eligible, \
                    f"cycle {cycle}: egress started while busy ({busy_left}) or the shaper closed"
            if ctx.get(dut.ev_valid):
                quiet = 0
                kind = ctx.get(dut.ev_kind)
                ev = kind.name if hasattr(kind, "name") else EVENTS[kind]
                tally[ev] = tally.get(ev, 0) + 1
                assert bool(start) == (ev in DEPARTS), f"cycle {cycle}: {ev} with egress_start={start}"
                if ev == "MODE_SWITCH":
                    # (the written mode's switch from the reset value's, before any frame)
                    assert sent == 0, f"cycle {cycle}: {ev}"
                elif ev in room:
                    pending_room.append(ev)
                    if ev == "DROP_DATA_OVERFLOW":
                        # A queued frame gives its cells back.
                        assert discard, f"cycle {cycle}: {ev} without discard_en"
                        first = [f for f, ch in chain_of.items() if ch["first"] == discard_cells.first]
                        assert len(first) == 1, f"cycle {cycle}: {ev} of cells {discard_cells.first}, no queued frame's"
                        got_chain = dict(first=discard_cells.first, last=discard_cells.last, n=discard_cells.n)
                        assert got_chain == chain_of[first[0]], f"cycle {cycle}: {ev} chain {got_chain}"
                        overflowed.append(first[0])
                        give = chain_of.pop(first[0])
                    else:
                        assert not discard, f"cycle {cycle}: discard_en with {ev}"
                elif ev in ARRIVALS:
                    assert popped, f"cycle {cycle}: {ev} before its entry was taken"
                    frame, verdict, _e = popped.pop(0)
                    arrived += 1
                    before = set(model.queued_ack_frames()) | ({frame} if verdict == Verdict.ACK else set())
                    data_before = set(model.queued_data_frames())
                    qmap = {f: q for q in range(len(model.fq.queues)) for f in model.fq.frames_of(q)} if model.fq else {}
                    qcells_before = [(q, qq.cells) for q, qq in enumerate(model.fq.queues) if qq.cells] if model.fq else []
                    want = model.arrive(frame, data_full=(verdict == Verdict.DATA_FULL),
                                        now=cycle - RED_DECISION_LEAD if red is not None else None)
                    data_after = set(model.queued_data_frames())
                    # The overflow dropped the frames the model dropped.
                    assert set(overflowed) == data_before - data_after, \
                        f"cycle {cycle}: overflow dropped {len(overflowed)} frames, the model " \
                        f"{len(data_before - data_after)} (or others); hardware's from model queues " \
                        f"{[qmap.get(f) for f in overflowed]}, the model's {[qmap.get(f) for f in data_before - data_after]}; " \
                        f"queue cells before {qcells_before}, current {model.fq.current if model.fq else None}"
                    overflowed = []
                    got = pending_room + [ev]
                    assert got == want, (f"cycle {cycle}: frame #{arrived - 1} ({frame[:60].hex()}): "
                                         f"hardware {got}, model {want}")
                    # A data frame RED drops gives its cells back at once.
                    dropped = ev == "DROP_RED" and verdict == Verdict.DATA
                    assert bool(discard) == dropped, f"cycle {cycle}: {ev} ({verdict.name}) with discard_en={discard}"
                    if dropped:
                        got_chain = dict(first=discard_cells.first, last=discard_cells.last, n=discard_cells.n)
                        assert got_chain == chain_of[frame], \
                            f"cycle {cycle}: discard_cells {got_chain}, the frame's {chain_of[frame]}"
                        give = chain_of.pop(frame)
                        tally["discard"] += 1
                    if ev == "ARRIVE_DATA_MARKED":
                        # The model queues the frame with CE: the same cells.
                        queued = (data_after - data_before)
                        assert len(queued) == 1
                        queued = queued.pop()
                        chain_of[queued] = chain_of.pop(frame)
                        if ecn_codepoint(frame) != ECN_CE:      # (CE already: it leaves as it is)
                            marked.add(queued)
                    pending_room = []
                    gone = before - set(model.queued_ack_frames())
                    assert sorted(frees) == sorted(buf_of[f] for f in gone), \
                        f"cycle {cycle}: {ev}: freed buffers {frees}, model lost {[buf_of[f] for f in gone]}"
                    pool.extend(frees)
                    frees = []
                    for s, c in STATS.items():
                        assert stats[s] == model.counters[c] - counters_before[c], \
                            f"cycle {cycle}: {ev}: {s} {stats[s]}, model {c} moved by " \
                            f"{model.counters[c] - counters_before[c]}"
                    stats = {s: 0 for s in STATS}
                    counters_before = dict(model.counters)
                else:
                    assert ev in DEPARTS, ev
                    assert not pending_room and not frees, f"cycle {cycle}: {ev} after {pending_room} {frees}"
                    assert not discard, f"cycle {cycle}: discard_en with {ev}"
                    got = model.depart(now=cycle if red is not None else None)
                    assert got is not None, f"cycle {cycle}: {ev}, the model has nothing queued"
                    assert got[0] == ev, f"cycle {cycle}: hardware {ev}, model {got[0]}"
                    frame = departing = got[1]
                    is_ack = ev == "DEPART_ACK"
                    assert ctx.get(dut.egress_is_ack) == is_ack
                    assert ctx.get(dut.egress_addr) == (buf_of[frame] if is_ack else chain_of[frame]["first"]), \
                        f"cycle {cycle}: {ev} of the wrong frame" + (
                            "" if model.fq is None or is_ack else
                            f"; model queues (first cells): "
                            f"{[(q, [chain_of[f]['first'] if f in chain_of else '?' for f in model.fq.frames_of(q)]) for q in range(len(model.fq.queues)) if model.fq.frames_of(q)]}"
                            f", new {list(model.fq.new)} old {list(model.fq.old)}")
                    assert ctx.get(dut.egress_bytes) == len(frame)
                    assert ctx.get(dut.egress_l3_bytes) == ip_packet_length(frame)
                    if not is_ack:
                        assert ctx.get(dut.egress_mark) == (frame in marked), \
                            f"cycle {cycle}: {ev} with egress_mark={ctx.get(dut.egress_mark)}"
            else:
                quiet += 1
                assert not start, f"cycle {cycle}: egress_start without an event"
                assert not discard, f"cycle {cycle}: discard_en without an event"
            # The scheduler does not sit on a frame it may send: at most one
            # arrival (with its drops) goes first.
            may_send = busy_left == 0 and eligible and (model.ack_queue or model.data_queue_frames)
            waited = waited + 1 if may_send and not start else 0
            assert waited < wait_bound, f"cycle {cycle}: a frame could leave for {waited} cycles"
            if quiet >= 4 and ctx.get(dut.idle) and not popped:
                assert ctx.get(dut.ack_queue_depth) == model.ack_queue_depth
                assert ctx.get(dut.data_queue_frames) == model.data_queue_frames
                assert ctx.get(dut.flows_active) == model.flows_active
                assert ctx.get(dut.backlog) == bool(model.ack_queue or model.data_queue_frames)
            await ctx.tick()

            # The free list after this edge: a drop's cells.
            if give is not None:
                give_back(give)
                give = None
            # The egress and the shaper after this edge.
            if busy_left:
                busy_left -= 1
                if busy_left == 0:
                    if in_egress in buf_of:
                        pool.append(buf_of[in_egress])
                    else:
                        give_back(chain_of.pop(in_egress))
                    in_egress = None
            if closed:
                closed -= 1
            if start:
                in_egress = departing
                charges[cycle + CHARGED_LATENCY] = len(departing)    # (the shaper's, for every frame)
                busy_left = rng.choice([1, 2, 5, 20, len(in_egress) // 4 + 5])
                closed = rng.randrange(300) if congested and rng.random() < congest else \
                    rng.choice([0, 0, 3, 12])

        assert arrived == len(frames)
        assert not frees and not pending_room
        assert not cells_of and sorted(cells) == list(range(CELLS)), f"cells lost: {cells_of}"
        assert ctx.get(dut.idle) and not ctx.get(dut.backlog)
        assert ctx.get(dut.ack_queue_depth) == 0 and ctx.get(dut.flows_active) == 0

    simulate(dut, bench, name=f"queue_manager_{ack_mode}")
    model.check_invariants()
    return model, tally


# -- tests -----------------------------------------------------------------

def test_conservative_mode_agrees_with_the_model():
    # Conservative (two ACKs kept per flow), a queue as long as the node
    # count, more flows than flow entries now and then (cam_full), a tag
    # collision, byte round-robin between ACKs and data.
    frames = frames_for(61, 320, 10)
    model, tally = run_manager(frames, ack_mode=1, ack_queue_limit=16, data_share=128, seed=1)
    c = model.counters
    assert c["acks_superseded"] > 15 and c["cam_collisions"] > 0 and c["cam_full"] > 0, c
    assert tally["DEPART_ACK"] > 50 and tally["DEPART_DATA"] > 20, tally


def test_aggressive_mode_agrees_with_the_model():
    # Aggressive (one ACK kept per flow), a limit above the node count (the
    # queue holds 40), a data share of 1/4.
    frames = frames_for(62, 300, 6)
    model, tally = run_manager(frames, ack_mode=2, ack_queue_limit=200, data_share=64, seed=2,
                               ack_slots=40, flow_entries=16)
    c = model.counters
    assert c["acks_superseded"] > 40 and c["cam_collisions"] > 0, c


@pytest.mark.parametrize("ack_mode", [1, 2])
def test_a_full_queue_drops_covered_acks_then_the_front(ack_mode):
    # A limit of 5 of 16 positions, long congested phases: drop-from-front,
    # and in conservative mode covered ACKs dropped from the middle first.
    frames = frames_for(63 + ack_mode, 220, 8)
    model, tally = run_manager(frames, ack_mode=ack_mode, ack_queue_limit=5, data_share=128,
                               seed=3 + ack_mode, congest=0.9)
    c = model.counters
    assert c["drop_ack_front"] > 5, c
    if ack_mode == 1:
        assert c["drop_ack_covered"] > 5, c


@pytest.mark.parametrize("data_share", [0, 256, 200])
def test_departures_follow_the_data_share(data_share):
    # Acks-first with a guaranteed data share, at the extremes (0: strict
    # acks-first; 256: data first whenever credit allows) and in between.
    frames = frames_for(70 + data_share, 150, 6)
    model, tally = run_manager(frames, ack_mode=1, ack_queue_limit=16, data_share=data_share,
                               seed=data_share, full_p=0.0)
    assert tally["DEPART_ACK"] > 15 and tally["DEPART_DATA"] > 10, tally


def test_mode_off_is_a_fifo():
    # Every frame is data; the data queue fills the cells.
    frames = frames_for(75, 120, 4)
    model, tally = run_manager(frames, ack_mode=0, ack_queue_limit=16, data_share=128, seed=9)
    assert "DEPART_ACK" not in tally and tally["DEPART_DATA"] > 30 and tally["DROP_DATA_FULL"] > 5
    assert tally["no cells"] > 5, tally


def test_a_data_frame_red_drops_gives_its_cells_back_at_once():
    # RED on, its thresholds within the 8 KiB of cells, w_q = 1/4: the
    # average follows the queue; RED drops Not-ECT data frames and marks
    # ECT ones, decision by decision as the model decides (``now`` the
    # event's cycle less RED_DECISION_LEAD). run_manager checks that each
    # dropped frame's cells come back with its DROP_RED (a frame the
    # ingress had no room for has none), the marks at the departures, and
    # that no cell is lost.
    frames = frames_for(80, 320, 6)
    red = dict(min_bytes=800, max_bytes=4000, max_p=32768, wq_shift=2, gentle=1, idle_shift=10)
    model, tally = run_manager(frames, ack_mode=1, ack_queue_limit=16, data_share=128, seed=12,
                               red=red)
    assert tally["discard"] > 10 and tally.get("ARRIVE_DATA_MARKED", 0) > 3, tally
    assert tally["DEPART_DATA"] > 20, tally


def corner_frames():
    """Hand-made ACK sequences, one flow each, for the supersession rules
    (spec section 3), with the events aggressive mode gives them when
    nothing leaves meanwhile (N new, S supersede), reasoned from the spec."""
    def ack(flow, n, a, *, ts=None, sack=(), flags="A"):
        opts = []
        if ts is not None:
            opts += [("NOP", None), ("NOP", None), ("Timestamp", ts)]
        if sack:
            opts += [("NOP", None), ("NOP", None), ("SAck", tuple(v for b in sack for v in b))]
        return traces.tcp_frame(flow, ack=a, flags=flags, options=opts, ip_id=n, builder="raw")

    T, F, G, E, S, Z = (traces.Flow(src=f"10.7.0.{k}", sport=41000 + k) for k in range(1, 7))
    seq = [
        # Timestamps must not go back from the newest's (still within 2^30
        # of the floor's): T3's TSval, T5's TSecr do.
        (ack(T, 1, 1000, ts=(100, 50)), "N"),
        (ack(T, 2, 2000, ts=(110, 60)), "S"),
        (ack(T, 3, 3000, ts=(105, 60)), "N"),
        (ack(T, 4, 4000, ts=(115, 70)), "S"),
        (ack(T, 5, 5000, ts=(120, 65)), "N"),
        (ack(T, 6, 6000, ts=(121, 65)), "S"),
        # The ack may move at most 2^30 beyond the floor (the chain's first).
        (ack(F, 1, 0x1000_0000), "N"),
        (ack(F, 2, 0x4000_0000), "S"),            # floor + 0x3000_0000
        (ack(F, 3, 0x6000_0000), "N"),            # floor + 0x5000_0000: a new chain
        (ack(F, 4, 0x6000_0100), "S"),
        # So may TSval.
        (ack(G, 1, 10, ts=(0x100, 5)), "N"),
        (ack(G, 2, 20, ts=(0x3000_0100, 5)), "S"),
        (ack(G, 3, 30, ts=(0x5000_0100, 5)), "N"),
        (ack(G, 4, 40, ts=(0x5000_0101, 5)), "S"),
        # ECE must be equal.
        (ack(E, 1, 100), "N"),
        (ack(E, 2, 200, flags="AE"), "N"),
        (ack(E, 3, 300, flags="AE"), "S"),
        # SACK: same ack with a new block supersedes; a block the new ACK
        # neither acks nor SACKs must stay; a D-SACK is no news.
        (ack(S, 1, 1000, sack=[(3000, 4000)]), "N"),
        (ack(S, 2, 1000, sack=[(3000, 5000)]), "S"),
        (ack(S, 3, 2000), "N"),
        (ack(S, 4, 2000, sack=[(1000, 1500)]), "N"),
        (ack(S, 5, 2000, sack=[(1000, 1500)]), "N"),
        # Nor is an empty block: same ack, no news.
        (ack(Z, 1, 7000), "N"),
        (ack(Z, 2, 7000, sack=[(9000, 9000)]), "N"),
        (ack(Z, 3, 7000, sack=[(9000, 9001)]), "N"),     # Z2 holds an insane block
        (ack(Z, 4, 7000, sack=[(9000, 9002)]), "S"),
    ]
    assert len({tag_of(f) for f in (T, F, G, E, S, Z)}) == 6
    return [f for f, _e in seq], [e for _f, e in seq]


@pytest.mark.parametrize("ack_mode", [2, 1])
def test_supersession_corners_agree_with_the_model(ack_mode):
    frames, letters = corner_frames()
    model, tally = run_manager(frames, ack_mode=ack_mode, ack_queue_limit=16, data_share=128,
                               seed=ack_mode, hold=True)
    arrivals = [e for e in model.events if e in ARRIVALS]
    if ack_mode == 2:
        names = {"N": "ARRIVE_ACK_NEW", "S": "ARRIVE_ACK_SUPERSEDE"}
        assert arrivals == [names[x] for x in letters]
    else:
        assert arrivals.count("ARRIVE_ACK_SUPERSEDE") >= 3


@pytest.mark.parametrize("ack_mode", [2, 1])
def test_each_frame_decides_on_its_own_option_values(ack_mode):
    # The manager loads an ACK's option values from its key slot as its
    # handling starts, and decides on them a few cycles later (SACK, TS:
    # docs/design.md, "The flow key and the option values beside the
    # entry"). Between the frames of the corner sequences, and of two with
    # four SACK blocks (the last one insane, then all sane, each followed
    # by an ACK that supersedes only the sane one), come ACKs of other
    # flows whose values would change those decisions were any of them
    # still in use: far timestamps and three insane SACK blocks, no options,
    # four sane blocks, four insane ones. Every event is checked against
    # the model.
    def ack(flow, a, n, sack=(), ts=None):
        opts = [] if ts is None else [("NOP", None), ("NOP", None), ("Timestamp", ts)]
        if sack:
            opts += [("NOP", None), ("NOP", None), ("SAck", tuple(v for b in sack for v in b))]
        return traces.tcp_frame(flow, ack=a, options=opts, ip_id=n, builder="raw")

    Q, R = traces.Flow(src="10.8.1.1", sport=43001), traces.Flow(src="10.8.1.2", sport=43002)
    sane4 = [(5000 + 100 * j, 5050 + 100 * j) for j in range(4)]
    frames, _letters = corner_frames()
    frames += [ack(Q, 1000, 1, sack=sane4[:3] + [(5400, 5300)]), ack(Q, 6000, 2),
               ack(R, 1000, 1, sack=sane4), ack(R, 6000, 2)]
    decoys = [
        lambda k: ack(traces.Flow(src="10.8.0.1", sport=42001), 70_000 + k, k,
                      sack=[(90_000 + 10 * j, 80_000 + j) for j in range(3)],
                      ts=(0xF000_0000 + k, 0xE000_0000)),
        lambda k: ack(traces.Flow(src="10.8.0.2", sport=42002), 500 + k, k),
        lambda k: ack(traces.Flow(src="10.8.0.3", sport=42003), 1000 + k, k, sack=sane4),
        lambda k: ack(traces.Flow(src="10.8.0.4", sport=42004), 9000 + k, k,
                      sack=[(e, s) for s, e in sane4]),
    ]
    mixed = []
    for k, f in enumerate(frames):
        mixed += [decoys[k % 4](k), f]
    assert len(set(mixed)) == len(mixed)
    model, tally = run_manager(mixed, ack_mode=ack_mode, ack_queue_limit=16, data_share=128,
                               seed=20 + ack_mode, flow_entries=12)
    assert tally.get("ARRIVE_ACK_SUPERSEDE", 0) >= 6, tally


@pytest.mark.parametrize("ack_mode", [0, 1, 2])
def test_flow_queues_agree_with_the_model(ack_mode):
    # Per-flow data queues (spec section 12): data frames of many flows
    # looked up in the flow table beside the ACKs, DRR between their
    # queues, the shared queue for flows without an entry, overflow drops
    # from the fattest queue, entries freed when neither ACKs nor data remain.
    frames = frames_for(80 + ack_mode, 300, 10)
    model, tally = run_manager(frames, ack_mode=ack_mode, ack_queue_limit=16, data_share=128,
                               seed=9 + ack_mode, flow_queues=True, full_p=0.0)
    c = model.counters
    assert tally["DEPART_DATA"] > 30 and c["drop_data_overflow"] > 20, tally
    if ack_mode:
        # ACKs superseded beside the data; flows beyond the table (the shared queue).
        assert tally["DEPART_ACK"] > 50 and c["acks_superseded"] > 10 and c["cam_full"] > 0, (tally, c)


def test_flow_queues_with_red_agree_with_the_model():
    # RED beside the flow queues: a frame whose queue is empty is never
    # notified (RED's exempt input), the rest as above; overflow drops from
    # the fattest queue when RED lets the buffer fill.
    frames = frames_for(90, 320, 6)
    red = dict(min_bytes=800, max_bytes=4000, max_p=32768, wq_shift=2, gentle=1, idle_shift=10)
    model, tally = run_manager(frames, ack_mode=1, ack_queue_limit=16, data_share=128, seed=13,
                               red=red, flow_queues=True)
    assert tally["discard"] > 5 and tally.get("ARRIVE_DATA_MARKED", 0) > 3, tally
    assert tally["DEPART_DATA"] > 20, tally


def test_one_subtraction_orders_both_ways_at_the_serial_corners():
    """`_order(a, b)` is RFC 1982's "a before b" and "b before a" (the SACK
    coverage compares each pair of block ends with one subtraction),
    checked at 0, 2^31 and their neighbours, where the two are not each
    other's negation."""
    from amaranth.hdl import Module, Signal
    from amaranth.sim import Simulator
    from ackfilter.gateware.queue_manager import _order

    def before(x, y):
        return ((x - y) % 2**32) >= 2**31

    m = Module()
    a, b = Signal(32), Signal(32)
    (ab, ba), stmts = _order(a, b)
    m.d.comb += stmts
    rng = random.Random(7)
    diffs = [0, 1, 2, 2**31 - 1, 2**31, 2**31 + 1, 2**32 - 1, 2**32 - 2] + [rng.getrandbits(32) for _ in range(8)]
    seen = []

    async def bench(ctx):
        for bv in (0, 5, 2**31, 2**32 - 1, rng.getrandbits(32)):
            for d in diffs:
                av = (bv + d) % 2**32
                ctx.set(a, av)
                ctx.set(b, bv)
                seen.append(((ctx.get(ab), ctx.get(ba)), (before(av, bv), before(bv, av))))

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert seen and all((bool(x), bool(y)) == exp for (x, y), exp in seen), \
        [s for s in seen if (bool(s[0][0]), bool(s[0][1])) != s[1]][:4]
