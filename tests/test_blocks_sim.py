"""Small gateware blocks in the Amaranth simulator, against independent references.

* the parser against the model's byte classifier (``model.pktparse``) on every
  hand-reasoned edge case, on a slice of a random trace, on mutated and cut
  frames, and every frame's flow key against words written out by hand
  (``tests/flowkeys.py``);
* the shaper and its link accounting (``LinkCharge``, exhaustively over
  every length) against the model (``model.shaper``), and the charge it
  tells the flow queues (``charged``) for each frame;
* the flow CAM, the buffer pool and the free stack against plain Python sets;
* the stream register against the words it was given.

The CSR bank has its own file (test_csr_bank.py). Set ``ACKFILTER_VCD=1`` to
write a VCD per test into build/vcd/ (tests/blocksim.py).
"""

import random

import pytest

import flowkeys
from blocksim import simulate
from ackfilter.sim import traces
from ackfilter.sim.malformed import expected_class, malformed_cases
from ackfilter.sim.random_trace import random_trace
from ackfilter.sim.fuzz import mutate
from ackfilter.gateware.lib.buffer_pool import BufferPool, FreeStack
from ackfilter.gateware.flow_cam import SET_CYCLES, FlowCAM
from ackfilter.flowkey import HOST_BITS, flow_tag, host_bucket
from ackfilter.model.pktparse import classify, ip_packet_length
from ackfilter.model.red import ecn_codepoint, ip_header as red_ip_header
from ackfilter.model.segmenter import SegInfo, lane_block_sums, seg_info, why_whole
from ackfilter.model.shaper import GcraShaper, LinkAccounting
from ackfilter import params
from ackfilter.params import MAX_FRAME_BYTES
from ackfilter.gateware.parser import FrameClass, FrameParser
from ackfilter.gateware.shaper import CHARGED_LATENCY, RECOVERY_CYCLES, LinkCharge, Shaper

CLS = {FrameClass.DATA: "data", FrameClass.ACK: "ack", FrameClass.RUNT: "runt",
       FrameClass.OVERSIZE: "oversize"}


def run_parser(frames, *, gaps=None):
    """Feed ``frames`` back to back (as fast as ``ready`` allows), or with idle
    cycles before some words when ``gaps`` is a seed; return the results."""
    dut = FrameParser()
    results = []
    rng = random.Random(gaps)

    async def feed(ctx):
        for frame in frames:
            words = [frame[i:i + 4] for i in range(0, len(frame), 4)]
            for n, w in enumerate(words):
                if gaps is not None:
                    ctx.set(dut.valid, 0)
                    for _ in range(rng.choice((0, 0, 1, 2))):
                        await ctx.tick()
                ctx.set(dut.valid, 1)
                ctx.set(dut.data, int.from_bytes(w.ljust(4, b"\0"), "little"))
                ctx.set(dut.keep, (1 << len(w)) - 1)
                ctx.set(dut.last, n == len(words) - 1)
                await ctx.tick().until(dut.ready)
            ctx.set(dut.valid, 0)
        for _ in range(8):
            await ctx.tick()

    async def collect(ctx):
        sums = {}
        async for _clk, _rst, done, result, we, block, value, pay_word in ctx.tick().sample(
                dut.done, dut.result, dut.sum_we, dut.sum_block, dut.sum_value, dut.pay_word):
            if we:
                assert block not in sums, f"block {block} summed twice"
                sums[block] = (value, pay_word)
            if done:
                results.append((result, sums))
                sums = {}

    simulate(dut, feed, processes=[collect], name="parser")
    return results


def check_against_model(frames, results):
    assert len(results) == len(frames)
    for frame, (r, sums) in zip(frames, results):
        want = classify(frame, ack_mode=1)
        where = f"frame {frame[:80].hex()} ({len(frame)} bytes, model: {want.reason or want.cls})"
        assert CLS[r.cls] == want.cls, where
        assert bool(r.pure_ack) == want.pure_ack, where
        # Every frame's flow key and tag (spec section 2, "Flow key").
        assert [r.key[i] for i in range(len(want.key))] == list(want.key), where
        assert r.meta.tag == want.tag, where
        assert r.meta.host == host_bucket(want.key, 1 << HOST_BITS), where
        if want.pure_ack:
            assert bool(r.meta.eligible) == want.eligible, where
        assert r.nbytes == min(len(frame), 0xFFFF), where
        if len(frame) <= 0xFFFF:
            assert r.l3_bytes == ip_packet_length(frame), where
        # RED's view of every frame (model.red.ip_header, ecn_codepoint)
        hdr = red_ip_header(frame)
        assert bool(r.ip.found) == (hdr is not None), where
        if hdr is not None:
            off, version = hdr
            assert (r.ip.word, bool(r.ip.ipv6)) == (off // 4, version == 6), where
            assert off % 4 == 2, where
            assert r.meta.ecn == ecn_codepoint(frame), where
        if want.eligible:
            meta, det = r.meta, r.details
            assert meta.ack == want.ack, where
            assert bool(meta.has_ts) == want.has_ts, where
            if want.has_ts:
                assert (det.tsval, det.tsecr) == (want.tsval, want.tsecr), where
            assert meta.sack_n == len(want.sack), where
            assert [(det.sack[k].start, det.sack[k].end) for k in range(len(want.sack))] == want.sack, where
            assert bool(meta.other_opts) == want.other_opts, where
            assert (bool(meta.ece), bool(meta.cwr), bool(meta.ae), meta.ecn) == (want.ece, want.cwr, want.ae, want.ecn), where
            assert (bool(meta.accecn_opt), meta.accecn_mask, tuple(det.accecn[i] for i in range(3))) == \
                (want.accecn_opt, want.accecn_mask, want.accecn), where
        check_seg(frame, r.seg, sums, where)


def check_seg(frame, seg, sums, where):
    """The segmenter's view of ``frame`` (``model.segmenter.seg_info`` and
    ``lane_block_sums``): whether it may be cut, and if so every field and
    every block sum (the one strobe per block that the ingress writes)."""
    want = seg_info(frame)
    assert bool(seg.ok) == want.ok, f"{where}: seg ok {bool(seg.ok)}, model {why_whole(frame, 16)!r}"
    if not want.ok:
        return
    got = SegInfo(ok=True, pppoe=bool(seg.pppoe), tcp_word=seg.tcp_word, pay_word=seg.pay_word,
                  pay_bytes=seg.pay_bytes, seq=seg.seq, offflags=seg.offflags, sum=seg.sum,
                  hdr_tail=seg.hdr_tail)
    assert got == want, where
    blocks = lane_block_sums(frame)
    assert {b: v for b, (v, _pw) in sums.items()} == dict(enumerate(blocks)), where
    assert all(pw == want.pay_word for _v, pw in sums.values()), where


def test_parser_agrees_with_the_model_on_every_edge_case():
    cases = malformed_cases()
    frames = [frame for frame, _cls in cases.values()]
    # The hand-reasoned classes are the independent expectation for the model...
    for name, (frame, expected) in cases.items():
        p = classify(frame, ack_mode=1)
        assert (p.cls, p.eligible) == expected_class(expected), name
    # ... and the model the reference for every field the parser extracts.
    check_against_model(frames, run_parser(frames))


def test_parser_agrees_with_the_model_on_a_random_trace():
    frames = [f for _t, f in random_trace(7, 150, 30) if len(f) <= 2100]
    check_against_model(frames, run_parser(frames))


def test_parser_agrees_with_the_model_when_words_come_with_gaps():
    # Idle cycles between words, including before each word of TCP options
    # (the walker takes two cycles per options word and must not wait for a
    # word that is not offered yet).
    frames = [f for _t, f in random_trace(8, 150, 30) if len(f) <= 2100]
    check_against_model(frames, run_parser(frames, gaps=3))


def test_parser_agrees_with_the_model_on_single_bit_flips_in_the_headers():
    # Every header field of a few pure ACKs, one random bit at a time: class,
    # eligibility (both checksums, flags, lengths, options), key and tag.
    rng = random.Random(9)
    ts_sack = [("NOP", None), ("NOP", None), ("Timestamp", (7, 8)), ("NOP", None), ("NOP", None),
               ("SAck", (5000, 6000))]
    templates = [
        traces.tcp_frame(traces.Flow(), ack=1000, flags="A", options=ts_sack, builder="raw"),
        traces.tcp_frame(traces.Flow(src="2001:db8::1", dst="2001:db8::2", vlans=((0x88A8, 3), (0x8100, 4))),
                         ack=1000, flags="AE", options=ts_sack, builder="raw"),
        traces.tcp_frame(traces.Flow(pppoe_session=0x1234), ack=1000, flags="A", builder="raw"),
    ]
    frames = []
    for t in templates:
        for _ in range(120):
            f = bytearray(t)
            bit = rng.randrange(8 * min(len(f), 110))
            f[bit // 8] ^= 1 << (bit % 8)
            frames.append(bytes(f))
    assert sum(classify(f, ack_mode=1).eligible for f in frames) < len(frames) // 4
    check_against_model(frames, run_parser(frames))


def test_parser_gives_every_frame_the_flow_key_the_spec_gives_it():
    # UDP, ICMP, fragments, IPv4 options, IPv6 with and without extension
    # headers, tags and PPPoE, non-IP, frames cut short: the words reasoned
    # by hand (tests/flowkeys.py), and the tag as the model computes it.
    names = sorted(flowkeys.CASES)
    frames = [flowkeys.CASES[n][0] for n in names]
    results = run_parser(frames)
    for name, (r, _sums) in zip(names, results):
        assert [hex(r.key[i]) for i in range(11)] == [hex(w) for w in flowkeys.CASES[name][1]], name
        assert r.meta.tag == flow_tag(flowkeys.CASES[name][1]), name
    check_against_model(frames, results)


def test_parser_agrees_with_the_model_on_frames_cut_at_every_length():
    # The key of a frame that ends inside a tag, the PPPoE header, the IP
    # header, IPv4 options or the ports, at every byte (spec section 2:
    # a header word not wholly in the frame reads as 0).
    from scapy.layers.inet import IP, UDP, IPOption_Router_Alert
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Dot1AD, Dot1Q, Ether
    from scapy.layers.ppp import PPP, PPPoE
    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    templates = [
        eth / Dot1Q(vlan=5) / IP(src="192.0.2.1", dst="198.51.100.2", options=[IPOption_Router_Alert()]) /
        UDP(sport=1234, dport=53) / b"q",
        eth / Dot1AD(vlan=6) / Dot1Q(vlan=7) / PPPoE(sessionid=0x99) / PPP(proto=0x0057) /
        IPv6(src="2001:db8::1", dst="2001:db8::2") / UDP(sport=443, dport=4433) / b"r",
        traces.tcp_frame(traces.Flow(pppoe_session=0x1234), ack=1000, flags="A", builder="raw"),
    ]
    frames = []
    for t in templates:
        t = bytes(t)
        frames += [t[:n] for n in range(1, min(len(t), 90) + 1)]
    assert len({classify(f, ack_mode=1).key for f in frames}) >= 20     # every step of the parse
    check_against_model(frames, run_parser(frames))


def test_parser_agrees_with_the_model_on_mutated_frames():
    # The fuzz campaign's mutations (every frame of a random trace mutated
    # once or twice: bits, truncations, tags, IP options, padding) on every
    # field, the flow key and tag of data frames included.
    rng = random.Random(11)
    frames = [f for _t, f in random_trace(12, 300, 30) if len(f) <= 2100]
    applied = mutate.mutate_trace(frames, rng, share=1.0)
    frames = [f for f in frames if f]
    assert sum(a is not None for a in applied) > 250
    assert sum(classify(f, ack_mode=1).cls == "data" for f in frames) > 100
    check_against_model(frames, run_parser(frames))


def test_equal_keys_give_equal_tags_and_neighbouring_flows_spread():
    flows = [traces.Flow(src=f"10.0.0.{i}", dst="198.51.100.1", sport=40000 + i, dport=443)
             for i in range(1, 41)]
    frames = [traces.tcp_frame(f, ack=1000, flags="A") for f in flows]
    frames += [traces.tcp_frame(flows[0], ack=5000, flags="A")]
    results = run_parser(frames)
    tags = [r.meta.tag for r, _sums in results]
    assert tags[-1] == tags[0]                  # same flow, other ack: same tag
    assert len(set(tags[:-1])) == len(flows)    # 40 neighbouring flows: 40 tags


def run_link_charge(cases):
    """Feed ``LinkCharge`` one case a cycle (``(frame_bytes, l3_bytes,
    LinkAccounting)``); return its ``charge_bytes`` for each."""
    dut = LinkCharge()
    got = []

    async def bench(ctx):
        for k in range(len(cases) + LinkCharge.LATENCY - 1):
            if k < len(cases):
                frame_bytes, l3_bytes, acc = cases[k]
                ctx.set(dut.frame_bytes, frame_bytes)
                ctx.set(dut.l3_bytes, l3_bytes)
                for name, value in acc.registers().items():
                    ctx.set(getattr(dut, name[len("shaper_"):]), value)
            await ctx.tick()
            if k >= LinkCharge.LATENCY - 1:
                got.append(ctx.get(dut.charge_bytes))

    simulate(dut, bench, name="link_charge")
    return got


@pytest.mark.parametrize("link_layer", ["none", "atm", "ptm"])
def test_link_charge_matches_the_model_for_every_length(link_layer):
    # Every frame length the core can store, with the largest and the most
    # negative overhead (every sum 0..MAX_FRAME_BYTES + 256 reaches the
    # atm/ptm step, negative sums included), and every IP packet length with
    # an mpu, on the IP base.
    cases = []
    for ovh in (-64, 256):
        acc = LinkAccounting(charge_base="frame", overhead_bytes=ovh, link_layer=link_layer)
        cases += [(n, 0, acc) for n in range(MAX_FRAME_BYTES + 1)]
    acc = LinkAccounting(charge_base="ip", overhead_bytes=-64, mpu_bytes=256, link_layer=link_layer)
    cases += [(MAX_FRAME_BYTES, n, acc) for n in range(MAX_FRAME_BYTES + 1)]
    got = run_link_charge(cases)
    want = [acc.charged_bytes(f, l3) for f, l3, acc in cases]
    bad = [(c, g, w) for c, g, w in zip(cases, got, want) if g != w]
    assert not bad, f"{len(bad)} mismatches, first {bad[:3]}"
    # The model's rounding itself, on a few hand-computed points.
    atm = {0: 0, 1: 53, 48: 53, 49: 106, 96: 106, 97: 159}
    ptm = {0: 0, 1: 2, 64: 65, 65: 67, 128: 130, 129: 132}
    acc0 = LinkAccounting(overhead_bytes=0, link_layer=link_layer)
    for n in atm:
        assert acc0.charged_bytes(n) == {"none": n, "atm": atm[n], "ptm": ptm.get(n, n + -(-n // 64))}[link_layer]


def test_link_charge_follows_each_cycles_settings():
    # Random lengths and settings that change every cycle: each charge is the
    # model's for the settings that came with its lengths.
    rng = random.Random(5)
    cases = []
    for _ in range(4000):
        frame_bytes = rng.randrange(14, MAX_FRAME_BYTES + 1)
        acc = LinkAccounting(charge_base=rng.choice(["frame", "ip"]),
                             overhead_bytes=rng.randint(-64, 256),
                             mpu_bytes=rng.choice([0, 0, 64, 84, rng.randint(0, 256)]),
                             link_layer=rng.choice(["none", "atm", "ptm"]))
        cases.append((frame_bytes, rng.randint(0, frame_bytes - 14), acc))
    got = run_link_charge(cases)
    want = [acc.charged_bytes(f, l3) for f, l3, acc in cases]
    assert got == want


@pytest.mark.parametrize("cpb_q16,burst,accounting", [
    (65536 * 50, 1514, LinkAccounting()),                            # 10 Mb/s, Ethernet wire
    (65536 * 500, 0, LinkAccounting()),                              # 1 Mb/s, no burst
    (123457, 3000, LinkAccounting(overhead_bytes=0)),                # an odd rate
    (65536 * 50, 0, LinkAccounting(charge_base="ip", overhead_bytes=18, mpu_bytes=64)),   # docsis
    (65536 * 50, 0, LinkAccounting(charge_base="ip", overhead_bytes=30, link_layer="ptm")),
    (65536 * 50, 0, LinkAccounting(charge_base="ip", overhead_bytes=10, link_layer="atm")),
    (65536 * 50, 0, LinkAccounting(charge_base="frame", overhead_bytes=-40)),
], ids=["wire-10M", "wire-1M", "odd-rate", "docsis", "pppoe-ptm", "pppoa-vcmux", "negative"])
def test_shaper_starts_frames_when_the_gcra_reference_does(cpb_q16, burst, accounting):
    dut = Shaper()
    rng = random.Random(cpb_q16 + accounting.overhead_bytes)
    lengths = [rng.choice([60, 64, 300, 1514]) for _ in range(30)]
    l3s = [rng.choice([n - 14, n - 22, 40]) for n in lengths]
    starts = []

    async def bench(ctx):
        ctx.set(dut.cpb_q16, cpb_q16)
        ctx.set(dut.burst_bytes, burst)
        for name, value in accounting.registers().items():
            ctx.set(getattr(dut, name[len("shaper_"):]), value)
        now = 0
        for length, l3 in zip(lengths, l3s):
            # Ask every cycle, as the queue manager does when the egress is
            # free; skip idle time to `wake_at`, as the replay harness does.
            while True:
                ctx.set(dut.now, now)
                await ctx.delay(1e-9)
                if ctx.get(dut.eligible):
                    break
                wake_at = ctx.get(dut.wake_at)
                await ctx.tick()
                now = max(now + 1, wake_at)
            starts.append(now)
            ctx.set(dut.charge, 1)
            ctx.set(dut.charge_bytes, length)
            ctx.set(dut.charge_l3_bytes, l3)
            await ctx.tick()
            now += 1
            ctx.set(dut.charge, 0)
            ctx.set(dut.charge_bytes, 0)          # the lengths count only with `charge`
            ctx.set(dut.charge_l3_bytes, 0)
            ctx.set(dut.now, now)
            await ctx.tick()     # the eligible register follows one cycle later
            now += 1

    simulate(dut, bench, name="shaper")
    # Step the reference through the hardware's own start times: each start
    # must be allowed, and no later than one cycle (the registered `eligible`)
    # after the earliest the reference allows.
    ref = GcraShaper(cpb_q16=cpb_q16, burst_bytes=burst, accounting=accounting)
    ready = 0
    for n, (length, l3, start) in enumerate(zip(lengths, l3s, starts)):
        earliest = max(ready, ref.wake_at())
        assert ref.may_start(start), f"frame {n} started at {start}, before the GCRA allows"
        assert start - earliest <= 1, f"frame {n} started at {start}, allowed from {earliest}"
        ref.start(start, length, l3)
        ready = start + RECOVERY_CYCLES
    # Over the whole burst the rate is the configured one, in charged bytes.
    if burst == 0:
        span = (starts[-1] - starts[0]) * 65536
        want = sum(accounting.charged_bytes(n, l3) for n, l3 in zip(lengths[:-1], l3s[:-1])) * cpb_q16
        assert abs(span - want) <= len(lengths) * 65536


def test_flow_cam_matches_like_a_dictionary():
    dut = FlowCAM(entries=8, tag_bits=16)
    rng = random.Random(3)

    async def bench(ctx):
        table = {}                          # index -> tag
        await ctx.tick()                    # the encoders are registered
        for step in range(300):
            op = rng.random()
            if op < 0.4 and len(table) < 8:
                free = min(set(range(8)) - set(table))
                assert ctx.get(dut.free) and ctx.get(dut.free_index) == free
                tag = rng.randrange(1 << 16) if rng.random() < 0.7 else rng.choice([0x1234, 0x4321])
                if tag in table.values():
                    continue
                ctx.set(dut.set_en, 1)
                ctx.set(dut.set_index, free)
                ctx.set(dut.set_tag, tag)
                await ctx.tick()
                ctx.set(dut.set_en, 0)
                # Other inputs change while the tag is written: only what
                # was presented with set_en counts.
                ctx.set(dut.set_index, rng.randrange(8))
                ctx.set(dut.set_tag, rng.randrange(1 << 16))
                table[free] = tag
                cycles = 0
                while ctx.get(dut.busy):
                    # `ending` marks the last busy cycle: a lookup presented
                    # in the next one (the probe below) is answered.
                    assert ctx.get(dut.ending) == (cycles == SET_CYCLES - 1), cycles
                    ctx.set(dut.lookup_tag, rng.randrange(1 << 16))
                    await ctx.tick()
                    cycles += 1
                assert cycles == SET_CYCLES and not ctx.get(dut.ending)
            elif op < 0.6 and table:
                idx = rng.choice(list(table))
                ctx.set(dut.clear_en, 1)
                ctx.set(dut.clear_index, idx)
                ctx.set(dut.lookup_tag, table[idx])     # looked up as it is cleared
                await ctx.tick()
                ctx.set(dut.clear_en, 0)
                await ctx.tick()
                assert not ctx.get(dut.hit), "a lookup in the clearing cycle hit the cleared entry"
                del table[idx]
            probe = rng.choice(list(table.values()) + [rng.randrange(1 << 16)])
            ctx.set(dut.lookup_tag, probe)
            await ctx.tick()
            await ctx.tick()
            hits = [i for i, t in table.items() if t == probe]
            assert ctx.get(dut.hit) == bool(hits)
            if hits:
                assert ctx.get(dut.hit_index) == hits[0]
            assert ctx.get(dut.used) == len(table)
            assert ctx.get(dut.free) == (len(table) < 8)

    simulate(dut, bench, name="flow_cam")


def _with_reset(dut):
    from amaranth.hdl import Module, ResetInserter, Signal
    rst = Signal()
    top = Module()
    top.submodules.dut = ResetInserter(rst)(dut)
    return top, rst


async def _built(ctx, dut, cycles):
    """Wait for ``ready`` after a reset: exactly ``cycles`` cycles."""
    for _ in range(cycles):
        assert not ctx.get(dut.ready)
        await ctx.tick()
    assert ctx.get(dut.ready)


def test_buffer_pool_never_hands_out_a_buffer_twice():
    # Two stacks, one per free port: the offer is the last buffer given back
    # on port a while port a's stack holds one, else port b's. Two frees and
    # a take in one cycle, a free of the buffer just taken too. A reset (every
    # 200 cycles) rebuilds the stacks, whatever the LUT RAM holds.
    dut = BufferPool(count=10)
    top, rst = _with_reset(dut)
    rng = random.Random(5)

    async def bench(ctx):
        for run in range(3):
            if run:
                ctx.set(rst, 1)
                await ctx.tick()
                ctx.set(rst, 0)
            await _built(ctx, dut, 9)
            stack_a, stack_b = list(range(9)), []   # buffer count-1 starts out taken
            in_use = {9}
            for _ in range(200):
                assert ctx.get(dut.alloc_valid) == bool(stack_a or stack_b)
                if stack_a or stack_b:
                    assert ctx.get(dut.alloc_id) == (stack_a or stack_b)[-1]
                take = bool(stack_a or stack_b) and rng.random() < 0.5
                if take:
                    got = (stack_a or stack_b).pop()
                    assert got not in in_use
                    in_use.add(got)
                # Any buffer in use may come back, the one taken in this cycle too.
                frees = rng.sample(sorted(in_use), k=min(2, len(in_use), rng.randrange(3)))
                ctx.set(dut.take, take)
                ctx.set(dut.free_a_en, len(frees) > 0)
                ctx.set(dut.free_a_id, frees[0] if frees else 0)
                ctx.set(dut.free_b_en, len(frees) > 1)
                ctx.set(dut.free_b_id, frees[1] if len(frees) > 1 else 0)
                await ctx.tick()
                ctx.set(dut.take, 0)
                ctx.set(dut.free_a_en, 0)
                ctx.set(dut.free_b_en, 0)
                if frees:
                    stack_a.append(frees[0])
                if len(frees) > 1:
                    stack_b.append(frees[1])
                in_use -= set(frees)
                assert len(stack_a) + len(stack_b) + len(in_use) == 10

    simulate(top, bench, name="buffer_pool")


@pytest.mark.parametrize("initial", [8, 3, 0])
def test_free_stack_hands_out_every_id_once_and_the_last_freed_first(initial):
    # The ACK queue's node allocator and each half of the buffer pool: a
    # stack, a take and a free in one cycle (the free takes the top's place).
    # A reset (every 200 cycles) rebuilds it, whatever the LUT RAM holds.
    dut = FreeStack(count=8, initial=initial)
    top, rst = _with_reset(dut)
    rng = random.Random(6 + initial)

    async def bench(ctx):
        for run in range(3):
            if run:
                ctx.set(rst, 1)
                await ctx.tick()
                ctx.set(rst, 0)
            await _built(ctx, dut, initial)
            free = list(range(initial))     # the stack, top last: initial-1 on top at first
            in_use = set(range(initial, 8))
            for _ in range(200):
                assert ctx.get(dut.alloc_valid) == bool(free)
                if free:
                    assert ctx.get(dut.alloc_id) == free[-1]
                take = bool(free) and rng.random() < 0.5
                if take:
                    in_use.add(free.pop())
                back = rng.choice(sorted(in_use)) if in_use and rng.random() < 0.5 else None
                ctx.set(dut.take, take)
                ctx.set(dut.free_en, back is not None)
                ctx.set(dut.free_id, back if back is not None else 0)
                await ctx.tick()
                ctx.set(dut.take, 0)
                ctx.set(dut.free_en, 0)
                if back is not None:
                    in_use.remove(back)
                    free.append(back)
                assert len(free) + len(in_use) == 8

    simulate(top, bench, name=f"free_stack{initial}")


def test_stream_register_passes_every_word_in_order_under_backpressure():
    from ackfilter.gateware.lib.stream import StreamRegister
    dut = StreamRegister()
    rng = random.Random(7)
    # Whole beats: data, keep and last travel together.
    words = [(rng.getrandbits(32), rng.getrandbits(4), rng.getrandbits(1)) for _ in range(300)]
    got = []

    async def producer(ctx):
        for data, keep, last in words:
            while rng.random() < 0.3:                  # idle cycles
                ctx.set(dut.i.valid, 0)
                await ctx.tick()
            ctx.set(dut.i.valid, 1)
            ctx.set(dut.i.payload.data, data)
            ctx.set(dut.i.payload.keep, keep)
            ctx.set(dut.i.payload.last, last)
            while True:                                # held until taken at an edge
                _clk, _rst, taken = await ctx.tick().sample(dut.i.ready)
                if taken:
                    break
        ctx.set(dut.i.valid, 0)

    async def consumer(ctx):
        for _ in range(4000):                          # ample: 300 words at ~0.4 a cycle
            ready = rng.random() < 0.6
            ctx.set(dut.o.ready, ready)
            _clk, _rst, valid, data, keep, last = await ctx.tick().sample(
                dut.o.valid, dut.o.payload.data, dut.o.payload.keep, dut.o.payload.last)
            if ready and valid:
                got.append((data, keep, last))

    simulate(dut, producer, consumer, name="stream_register")
    assert got == words


def test_parser_gathers_the_segmenters_sums_and_fields_like_the_model():
    # The segmenter model's frames: every "never cut" case (the parser must
    # refuse each one), and random segments in every encapsulation with IP
    # and TCP options, odd payloads, trailers and flags, all of which it must
    # accept with every field and block sum the model computes.
    import test_segmenter_model as seg
    frames = [build() for build, _reason in seg.NEVER_CUT.values()]
    rng = random.Random(12)
    cases = [seg.random_case(rng)[0] for _ in range(60)]
    frames += [f for f in cases if len(f) <= MAX_FRAME_BYTES]
    results = run_parser(frames)
    check_against_model(frames, results)
    ok = [f for f in frames if seg_info(f).ok and seg_info(f).pay_bytes > 0]
    assert len(ok) >= 30, "most random cases must be segments the segmenter may cut"


def random_accounting(rng):
    """Link accounting settings drawn over the registers' whole ranges."""
    ovh, mpu = params.param("shaper_overhead_bytes"), params.param("shaper_mpu_bytes")
    return LinkAccounting(charge_base=rng.choice(list(params.SHAPER_CHARGE_BASES)),
                          overhead_bytes=rng.choice([ovh.minimum, ovh.maximum, 0,
                                                     rng.randint(ovh.minimum, ovh.maximum)]),
                          mpu_bytes=rng.choice([0, mpu.maximum, rng.randint(0, mpu.maximum)]),
                          link_layer=rng.choice(list(params.SHAPER_LINK_LAYERS)))


@pytest.mark.parametrize("cpb_q16", [0, 65536 * 3, 123457])
def test_shaper_tells_each_charge_charged_latency_cycles_after_its_grant(cpb_q16):
    # The flow queues' credit pays exactly what the shaper charges: one
    # `charged` strobe per grant, CHARGED_LATENCY cycles after it (before
    # the shaper is eligible again), with the model's link charge for the
    # frame and the settings of the grant's cycle (they change every cycle
    # here; the charge is that of the cycle the lengths came in).
    dut = Shaper()
    rng = random.Random(cpb_q16)
    frames = []
    for _ in range(150):
        length = rng.choice([1, 14, 54, 60, 64, 1514, MAX_FRAME_BYTES, rng.randint(1, MAX_FRAME_BYTES)])
        frames.append((length, rng.choice([0, 20, length, rng.randint(0, length)])))
    seen = []

    async def bench(ctx):
        ctx.set(dut.cpb_q16, cpb_q16)
        cycle, now, grants = 0, 0, {}
        pending = list(frames)
        while pending or any(c + CHARGED_LATENCY >= cycle for c in grants):
            # `now` skips ahead to `wake_at` while the shaper waits (as the replay harness does).
            now = max(now + 1, ctx.get(dut.wake_at)) if cycle else 0
            ctx.set(dut.now, now)
            accounting = random_accounting(rng)
            for name, value in accounting.registers().items():
                ctx.set(getattr(dut, name[len("shaper_"):]), value)
            start = bool(pending) and ctx.get(dut.eligible) and rng.random() < 0.5
            if start:
                length, l3 = pending.pop(0)
                grants[cycle] = (length, l3, accounting)
                ctx.set(dut.charge, 1)
                ctx.set(dut.charge_bytes, length)
                ctx.set(dut.charge_l3_bytes, l3)
            if ctx.get(dut.charged):
                assert cycle - CHARGED_LATENCY in grants, f"cycle {cycle}: charged without a grant"
                length, l3, acc = grants[cycle - CHARGED_LATENCY]
                assert ctx.get(dut.charged_bytes) == acc.charged_bytes(length, l3), (length, l3, acc)
                assert not ctx.get(dut.eligible), f"cycle {cycle}: eligible before the charge came"
                seen.append((length, l3))
            await ctx.tick()
            ctx.set(dut.charge, 0)
            ctx.set(dut.charge_bytes, rng.randint(0, MAX_FRAME_BYTES))     # count only with `charge`
            ctx.set(dut.charge_l3_bytes, rng.randint(0, MAX_FRAME_BYTES))
            cycle += 1

    simulate(dut, bench, name=f"shaper_charged_{cpb_q16}")
    assert seen == frames
