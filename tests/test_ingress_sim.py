"""The ingress (``gateware.ingress.Ingress``) in the Amaranth simulator, alone.

The testbench plays everything around it, cycle by cycle: the LAN stream
(random idle cycles, garbage in the lanes ``keep`` excludes), the data ring
and the ACK slot buffers (Python dicts written through the block's write
ports), the ACK buffer pool (``stage_alloc_id``/``stage_take``; buffers of
committed ACKs come back at random, as the queue manager and the egress
would free them), the entry FIFO's ``entry_ready``, and the egress's release
of data frames (``data_frame_released`` with ``data_rd_ptr``, in commit order).

The expectation of every frame comes from the golden model's byte classifier
(``model.pktparse.classify``) and from the buffer rules of the spec (section
5), never from the RTL:

* each frame gives exactly one entry (``entry_valid`` strobe), in order, with
  the model's class as verdict, its length, IP packet length and, for a pure
  ACK, its key, tag, ack and option summary;
* an ACK entry names the staging buffer the frame was written to, whose
  first ``len`` bytes are the frame; a DATA entry names the ring address
  where the previous data frame ended, and the ring holds the frame there;
* no write touches a committed, unreleased ACK buffer or ring word;
* the statistics strobes count each frame once (frames, bytes, pure ACKs,
  ineligible ones) and are zero otherwise;
* a frame whose entry meets ``entry_ready`` low is dropped with
  ``ev_overrun`` and consumes nothing; only then is ``ev_overrun`` raised;
* a data frame is DATA_FULL exactly when the ring or the descriptor count
  (``desc_depth``) lacks room for it.
"""

import random

import pytest

from blocksim import frame_words, nwords, simulate
from ackfilter.gateware.ingress import Ingress, Verdict
from ackfilter.model.pktparse import classify, ip_packet_length
from ackfilter.params import ACK_SLOT_BYTES
from ackfilter.sim import traces

SLOT_WORDS = ACK_SLOT_BYTES // 4

VERDICT = {"runt": Verdict.RUNT, "oversize": Verdict.OVERSIZE, "ack": Verdict.ACK}


# -- frames ----------------------------------------------------------------

def ack_flows():
    """Pure ACKs of several flows and encapsulations, interleaved."""
    flows = [
        traces.Flow(),
        traces.Flow(src="10.0.0.2", sport=40001),
        traces.Flow(src="2001:db8::1", dst="2001:db8::2", sport=40002),
        traces.Flow(vlans=((0x8100, 12),), sport=40003),
        traces.Flow(vlans=((0x88A8, 3), (0x8100, 4)), sport=40004),
        traces.Flow(pppoe_session=0x1234, sport=40005),
        traces.Flow(src="2001:db8::5", dst="2001:db8::6", pppoe_session=7, vlans=((0x9100, 9),)),
    ]
    out = []
    for k in range(4):
        for n, f in enumerate(flows):
            ts = [("NOP", None), ("NOP", None), ("Timestamp", (1000 + k, 2000 + n))]
            sack = [("NOP", None), ("NOP", None), ("SAck", (5000 + k, 6000 + k))] if k % 2 else []
            flags = "AE" if (n + k) % 5 == 0 else "A"
            out.append(traces.tcp_frame(f, ack=100000 + 1448 * k, flags=flags, options=ts + sack,
                                        ip_id=16 * k + n, builder="raw"))
    # An ineligible one (PSH) and one with other options.
    out.append(traces.tcp_frame(flows[0], ack=5, flags="PA", builder="raw"))
    out.append(traces.tcp_frame(flows[1], ack=5, options=[("MSS", 1460)], builder="raw"))
    return out


def odd_frames(rng):
    """Runts, data of every length modulo 4, the largest frame, oversize ones."""
    out = [bytes(rng.getrandbits(8) for _ in range(n)) for n in (1, 2, 3, 4, 5, 13)]
    for n in (14, 15, 16, 17, 61, 62, 63, 64, 255, 256, 257, 258, 1514, 2047, 2048):
        out.append(bytes([0x02] + [rng.getrandbits(8) for _ in range(n - 1)]))
    out += [bytes(rng.getrandbits(8) for _ in range(n)) for n in (2049, 2051, 2300)]
    return out


def mixed_frames(seed, n_random):
    rng = random.Random(seed)
    frames = ack_flows() + odd_frames(rng)
    frames += [f for _t, f in traces.random_trace(seed, n_random, 20)]
    rng.shuffle(frames)
    return frames


# -- the harness -----------------------------------------------------------

def run_ingress(frames, *, ack_mode=1, ring_words=2048, desc_depth=16, buf_count=8, seed=0,
                ready_p=1.0, gap_p=0.2, release_p=0.05, release_before=None):
    """Feed ``frames`` through an :class:`Ingress`; return ``(records, dut)``.

    ``ready_p``: probability that ``entry_ready`` is high in a cycle.
    ``release_p``: probability per cycle that the oldest committed data frame
    is released (the egress sent it). ``release_before``: ``{i: n}``, release
    the ``n`` oldest data frames while the ingress is idle before frame ``i``
    (then no release happens during a frame, and ``release_p`` should be 0).

    Every write is checked against the buffers in use as it happens; each
    frame's entry is recorded with what it needs for the post-run checks.
    """
    dut = Ingress(ring_words=ring_words, desc_depth=desc_depth, buf_count=buf_count)
    rng = random.Random(seed)
    release_before = release_before or {}
    ptr_mod = 2 * ring_words
    records = []

    async def bench(ctx):
        ring, slots = {}, {}
        free = list(range(buf_count - 1))     # buffer buf_count - 1 is the first stage
        stage = buf_count - 1
        held = set()                          # committed ACK buffers not yet freed
        live = []                             # committed data frames: (start, nwords)
        live_words = set()
        wr = 0                                # end of the committed data (model), mod 2 * ring
        rd = 0                                # data_rd_ptr as driven
        rd_next = None                        # egress: data_rd_ptr follows the strobe a cycle later
        queued = 0                            # data frames committed and not released (model)
        taken = 0                             # words of the current frame taken
        used_first = used_last = None         # ring words in use at the first/last word taken
        fi, bi, beats = 0, 0, None
        ctx.set(dut.ack_mode, ack_mode)
        cycle = 0

        def release_one():
            nonlocal rd_next, queued
            start, nw = live.pop(0)
            for k in range(nw):
                live_words.discard((start + k) % ring_words)
            ctx.set(dut.data_frame_released, 1)
            rd_next = (rd + nw) % ptr_mod
            queued -= 1

        while fi < len(frames) or beats is not None or not ctx.get(dut.idle):
            cycle += 1
            assert cycle < 200_000, "the ingress hangs"
            queued_reg = queued                   # before this cycle's release
            assert ctx.get(dut.data_frames_queued) == queued_reg
            ctx.set(dut.data_frame_released, 0)
            # The LAN side: the next word, after a random gap.
            if beats is None and fi < len(frames):
                n_rel = release_before.get(fi, 0) if live else 0
                if n_rel:
                    if ctx.get(dut.idle) and rd_next is None:   # after the last frame's entry
                        release_before[fi] = n_rel - 1
                        release_one()
                else:
                    beats, bi = frame_words(frames[fi], fill=rng.randbytes), 0
            offer = beats is not None and rng.random() >= gap_p
            if offer:
                data, keep, last = beats[bi]
                ctx.set(dut.i.payload.data, data)
                ctx.set(dut.i.payload.keep, keep)
                ctx.set(dut.i.payload.last, last)
                ctx.set(dut.i.payload.first, bi == 0)
            ctx.set(dut.i.valid, offer)
            # The egress releasing data frames at random.
            if live and rd_next is None and not ctx.get(dut.data_frame_released) \
                    and rng.random() < release_p:
                release_one()
            # The pool; buffers of committed ACKs come back at random.
            if held and (len(free) < 2 or rng.random() < 0.05):
                back = rng.choice(sorted(held))
                held.remove(back)
                free.insert(rng.randrange(len(free) + 1), back)
            ctx.set(dut.stage_alloc_valid, 1)
            ctx.set(dut.stage_alloc_id, free[-1])
            ready = rng.random() < ready_p
            ctx.set(dut.entry_ready, ready)

            # What the ingress does at this edge.
            if offer and ctx.get(dut.i.ready):
                used = (wr - rd) % ptr_mod
                if bi == 0:
                    used_first = used
                used_last = used
                taken += 1
                bi += 1
                if bi == len(beats):
                    beats, fi = None, fi + 1
            if ctx.get(dut.ring_wr_en):
                a = ctx.get(dut.ring_wr_addr)
                assert a not in live_words, f"cycle {cycle}: ring word {a} of a queued frame overwritten"
                ring[a] = ctx.get(dut.ring_wr_data)
            if ctx.get(dut.ack_wr_en):
                a = ctx.get(dut.ack_wr_addr)
                assert a // SLOT_WORDS == stage, \
                    f"cycle {cycle}: ACK write to buffer {a // SLOT_WORDS}, staging is {stage}"
                assert a // SLOT_WORDS not in held
                slots[a] = ctx.get(dut.ack_wr_data)
            take = ctx.get(dut.stage_take)
            if ctx.get(dut.entry_valid):
                e = ctx.get(dut.entry)
                n = min(e.nbytes, 4 * SLOT_WORDS)
                rec = dict(
                    index=len(records), cycle=cycle, ready=ready, overrun=ctx.get(dut.ev_overrun),
                    verdict=e.verdict, nbytes=e.nbytes, l3_bytes=e.l3_bytes, start=e.start, buf=e.buf,
                    meta=e.meta, take=take, stage=stage, wr=wr % ring_words, words=taken,
                    used_first=used_first, used_last=used_last, queued=queued_reg,
                    stats=(ctx.get(dut.stat_frame), ctx.get(dut.stat_bytes),
                           ctx.get(dut.stat_pure_ack), ctx.get(dut.stat_ineligible)),
                    slot=[slots.get(e.buf * SLOT_WORDS + k) for k in range(nwords(n))],
                    ring=[ring.get((e.start + k) % ring_words) for k in range(min(taken, ring_words))],
                )
                records.append(rec)
                taken = 0
                if ready and e.verdict == Verdict.DATA:
                    nw = nwords(e.nbytes)
                    live.append((wr % ring_words, nw))
                    live_words.update((wr + k) % ring_words for k in range(nw))
                    wr = (wr + nw) % ptr_mod
                    queued += 1
                if take:
                    assert e.verdict == Verdict.ACK and ready
                    held.add(stage)
                    stage = free.pop()
            else:
                for s in ("stat_frame", "stat_bytes", "stat_pure_ack", "stat_ineligible",
                          "ev_overrun", "stage_take"):
                    assert ctx.get(getattr(dut, s)) == 0, f"cycle {cycle}: {s} without a frame"
            if ctx.get(dut.idle):
                assert beats is None or bi == 0, f"cycle {cycle}: idle in the middle of a frame"
                assert taken == 0, f"cycle {cycle}: idle before the frame's entry"
            await ctx.tick()
            if rd_next is not None:
                rd, rd_next = rd_next, None
                ctx.set(dut.data_rd_ptr, rd)

    simulate(dut, bench, name="ingress")
    return records, dut


def expected_verdict(p, rec, ring_words, desc_depth):
    """The verdict the spec gives a frame (``None``: either DATA or DATA_FULL,
    when ring space was freed while the frame was being written)."""
    if p.cls in VERDICT:
        return VERDICT[p.cls]
    nw = nwords(p.length)
    if rec["queued"] == desc_depth or rec["used_last"] + nw > ring_words:
        return Verdict.DATA_FULL
    if rec["used_first"] + nw <= ring_words:
        return Verdict.DATA
    return None


def check_records(frames, records, *, ack_mode, ring_words, desc_depth):
    """Every frame against the model; returns a tally of what was seen."""
    assert len(records) == len(frames), f"{len(frames)} frames, {len(records)} entries"
    tally = {"ambiguous": 0, "overrun": 0}
    for frame, rec in zip(frames, records):
        p = classify(frame, ack_mode=ack_mode)
        where = f"frame #{rec['index']} ({len(frame)} bytes, model: {p.reason or p.cls}): {frame[:40].hex()}"
        want = expected_verdict(p, rec, ring_words, desc_depth)
        if want is None:
            tally["ambiguous"] += 1
            assert rec["verdict"] in (Verdict.DATA, Verdict.DATA_FULL), where
        else:
            assert rec["verdict"] == want, f"{where}: {rec['verdict']}, want {want}"
        assert rec["words"] == nwords(len(frame)), where
        assert rec["nbytes"] == len(frame), where
        if len(frame) <= 2048:
            assert rec["l3_bytes"] == ip_packet_length(frame), where
        assert rec["stats"] == (1, len(frame), int(p.pure_ack), int(p.pure_ack and not p.eligible)), where
        assert rec["overrun"] == (not rec["ready"]), where
        meta = rec["meta"]
        # Every frame's flow key and tag reach the entry (spec section 2, "Flow key").
        assert [meta.key[i] for i in range(len(p.key))] == list(p.key), where
        assert meta.tag == p.tag, where
        if p.cls == "ack":
            assert (meta.ack, bool(meta.eligible)) == (p.ack, p.eligible), where
            if p.eligible:
                assert (bool(meta.has_ts), bool(meta.other_opts)) == (p.has_ts, p.other_opts), where
                if p.has_ts:
                    assert (meta.tsval, meta.tsecr) == (p.tsval, p.tsecr), where
                assert [(meta.sack[k].start, meta.sack[k].end) for k in range(meta.sack_n)] == p.sack, where
                assert (bool(meta.ece), bool(meta.cwr), bool(meta.ae), meta.ecn) == (p.ece, p.cwr, p.ae, p.ecn), where
                assert (bool(meta.accecn_opt), meta.accecn_mask, tuple(meta.accecn[i] for i in range(3))) == \
                    (p.accecn_opt, p.accecn_mask, p.accecn), where
        committed = rec["ready"]
        tally["overrun"] += not committed
        v = rec["verdict"]
        tally[v.name] = tally.get(v.name, 0) + 1
        assert rec["take"] == (committed and v == Verdict.ACK), where
        if committed and v == Verdict.ACK:
            assert rec["buf"] == rec["stage"], where
            assert b"".join(w.to_bytes(4, "little") for w in rec["slot"])[:len(frame)] == frame, \
                f"{where}: ACK buffer {rec['buf']} does not hold the frame"
        if committed and v == Verdict.DATA:
            assert rec["start"] == rec["wr"], \
                f"{where}: data at {rec['start']}, the ring's end is {rec['wr']}"
            assert None not in rec["ring"], f"{where}: ring words not written"
            assert b"".join(w.to_bytes(4, "little") for w in rec["ring"])[:len(frame)] == frame, \
                f"{where}: the ring does not hold the frame at {rec['start']}"
    return tally


# -- tests -----------------------------------------------------------------

@pytest.mark.parametrize("ack_mode,release_p", [(1, 0.003), (0, 0.08)])
def test_every_frame_gives_one_entry_and_lands_byte_exact(ack_mode, release_p):
    # A ring of 512 words, released at random (also while a frame is being
    # written): the data frames wrap around it and, in mode 1, fill it at
    # times (DATA_FULL).
    frames = mixed_frames(31 + ack_mode, 90 if ack_mode else 40)
    if ack_mode == 0:
        frames = frames[:120]
    records, _ = run_ingress(frames, ack_mode=ack_mode, ring_words=512, desc_depth=64,
                             seed=ack_mode, release_p=release_p)
    tally = check_records(frames, records, ack_mode=ack_mode, ring_words=512, desc_depth=64)
    assert tally.get("DATA", 0) > 30 and tally.get("RUNT", 0) >= 6 and tally.get("OVERSIZE", 0) >= 3
    if ack_mode:
        assert tally.get("ACK", 0) > 40 and tally.get("DATA_FULL", 0) >= 2
    else:
        assert "ACK" not in tally
    # The ring wrapped: the data committed exceeds it twice.
    assert sum(nwords(len(f)) for f, r in zip(frames, records) if r["verdict"] == Verdict.DATA) > 2 * 512


def test_every_parser_edge_case_lands_byte_exact():
    frames = [f for f, _cls in traces.malformed_cases().values()]
    records, _ = run_ingress(frames, ack_mode=2, ring_words=2048, desc_depth=64, seed=3)
    tally = check_records(frames, records, ack_mode=2, ring_words=2048, desc_depth=64)
    assert tally.get("ACK", 0) > 40 and tally.get("DATA", 0) > 30


def test_back_pressure_drops_a_frame_with_overrun_and_nothing_else():
    # entry_ready low about half the time: a frame whose entry meets it low
    # is dropped and counted (ev_overrun, statistics), takes no staging
    # buffer and no ring space; every other frame is committed, in order.
    frames = mixed_frames(41, 60)
    records, _ = run_ingress(frames, ack_mode=1, ring_words=1024, desc_depth=64, seed=5,
                             ready_p=0.5, release_p=0.08)
    tally = check_records(frames, records, ack_mode=1, ring_words=1024, desc_depth=64)
    assert 20 < tally["overrun"] < len(frames) - 20
    dropped = [r for r in records if not r["ready"]]
    assert sum(r["verdict"] == Verdict.ACK for r in dropped) > 5
    assert sum(r["verdict"] == Verdict.DATA for r in dropped) > 5


def test_data_full_exactly_when_the_ring_or_the_descriptors_lack_room():
    # A ring of 2048 bytes (512 words) and 3 descriptors; data frames are
    # released only between frames, so the expectation is exact: DATA iff
    # the frame's words fit beside the queued ones and fewer than 3 are queued.
    rng = random.Random(51)
    flow = traces.Flow()

    def data(n):
        hdr = traces.tcp_frame(flow, builder="raw", pad_to=0)
        return traces.tcp_frame(flow, flags="PA", payload=rng.randbytes(n - len(hdr)),
                                ip_id=rng.getrandbits(16), builder="raw")

    def raw(n):                                          # not IP: data
        return bytes([0x02]) + rng.randbytes(n - 1)

    ack = traces.tcp_frame(flow, ack=7, builder="raw")
    # (frame, verdict) by hand: words in use / descriptors in use before it.
    plan = [
        (data(1514), "DATA"),          #   0 + 379          q 0
        (data(400), "DATA"),           # 379 + 100 = 479    q 1
        (ack, "ACK"),
        (data(200), "DATA_FULL"),      # 479 +  50 > 512: ring
        (raw(100), "DATA"),            # 479 +  25 = 504    q 2
        (raw(20), "DATA_FULL"),        # 504 +   5 <= 512, but q 3: descriptors
        (ack, "ACK"),                  # (release #0: 125 in use, q 2)
        (data(1514), "DATA"),          # 125 + 379 = 504    q 2
        (data(600), "DATA_FULL"),      # (release #1, #4: 379, q 1) 379 + 150 > 512
        (data(100), "DATA"),           # 379 +  25 = 404    q 1
        (data(2048), "DATA"),          # (release #7, #9: 0, q 0) 0 + 512 = 512
        (raw(14), "DATA_FULL"),        # 512 +   4 > 512
    ]
    frames = [f for f, _v in plan]
    frames += [data(rng.choice([64, 300, 800, 1514])) for _ in range(12)]
    release_before = {6: 1, 8: 2, 10: 2, 12: 1, 14: 1, 16: 2, 19: 1, 21: 3}
    records, _ = run_ingress(frames, ack_mode=1, ring_words=512, desc_depth=3, seed=7,
                             gap_p=0.1, release_p=0.0, release_before=release_before)
    tally = check_records(frames, records, ack_mode=1, ring_words=512, desc_depth=3)
    assert tally["ambiguous"] == 0
    assert [r["verdict"].name for r in records[:len(plan)]] == [v for _f, v in plan]
    assert tally.get("DATA", 0) >= 10
