"""The frame parser (``gateware.parser.FrameParser``) in the Amaranth simulator, alone.

The testbench plays the parser's upstream as the ingress is to it
(``gateware.ingress``): frame words, byte lane 0 first, with ``valid``,
``data``, ``keep`` and ``last``; a word offered is held until the parser's
``ready`` takes it, the next frame's first word follows the last one at once
(back to back) or after idle cycles, and the lanes that ``keep`` excludes,
and everything while ``valid`` is low, hold junk. A monitor records the
outputs at every clock edge. Every frame is checked against:

* the golden model (``model.pktparse.classify``, ``flow_key``,
  ``ip_packet_length``; ``model.red.ip_header``; ``model.segmenter.seg_info``
  and ``lane_block_sums``; ``flowkey.host_bucket``): its class and
  ``pure_ack``, length, IP packet length, where its IP header is, its flow
  key, tag and host; for a pure ACK its ack number, eligibility and
  ECE/CWR/AE/ECN; for an eligible one its option summary and values
  (timestamps, SACK blocks, AccECN counters, 0 where absent); the
  segmenter's fields, and the payload block sums it strobes;
* the class reasoned by hand from spec section 2 for every case of
  ``cocotb_tests/tb_parser.py``'s ``parser_cases`` (which include
  ``sim.malformed.malformed_cases``): ``ack`` (eligible), ``ack-ineligible``,
  ``data``, ``runt``, ``oversize``;
* for a few frames, every field written out literally from the spec
  (section 2, "Flow key" and "Option summary"), so that the parser is not
  only compared with another implementation;
* the port contract of the block's docstring: ``done`` once per frame,
  exactly three cycles after its last word was taken, ``ready`` low in
  those three cycles and, inside a frame, for exactly one cycle per word of
  TCP options; the block sums counted from 0, none for a frame that is not
  a TCP segment, and ``pay_word`` with them.

The random mixes run over a hundred frames of every kind through one parser,
back to back and with idle cycles, so state one frame left behind would
show in the next frame's fields.
"""

import functools
import random
from dataclasses import dataclass, field

import pytest
from amaranth.lib import data
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Dot1Q, Ether
from scapy.layers.ppp import PPP, PPPoE

import tb_parser
from blocksim import frame_words, simulate
from ackfilter.flowkey import HOST_BITS, flow_tag, host_bucket
from ackfilter.gateware.parser import DONE_AFTER_LAST, FrameClass, FrameParser, parse_result_layout
from ackfilter.model.pktparse import classify, ip_packet_length
from ackfilter.model.red import ip_header
from ackfilter.model.segmenter import lane_block_sums, seg_info
from ackfilter.params import MAX_FRAME_BYTES
from ackfilter.sim.random_trace import random_trace

CLASSES = {"runt": FrameClass.RUNT, "oversize": FrameClass.OVERSIZE, "ack": FrameClass.ACK,
           "data": FrameClass.DATA}
#: The segmenter's fields of a result (``parser.seg_info_layout``).
SEG_FIELDS = ("ok", "pppoe", "tcp_word", "pay_word", "pay_bytes", "seq", "offflags", "sum", "hdr_tail")


# -- driving the parser ------------------------------------------------------

@dataclass
class Seen:
    """What the parser did with one frame."""
    result: dict                              # the result at `done`, flattened (see `flat`)
    sums: list = field(default_factory=list)  # (block, value, pay_word) of each sum strobe
    stalls: int = 0                           # words refused between its first and last word
    done_delay: int = None                    # edges from its last word to `done`
    ready_after_last: tuple = ()              # `ready` at the DONE_AFTER_LAST edges after the last word


def plain(value):
    """A result (``data.Const``) as dicts and lists of its fields."""
    if isinstance(value, data.Const):
        layout = value.shape()
        if isinstance(layout, data.ArrayLayout):
            return [plain(value[i]) for i in range(layout.length)]
        return {name: plain(value[name]) for name, _field in layout}
    return value


def flat(tree, prefix=""):
    """``{"meta.ack": ..., "details.sack": ((start, end), ...), "key": (...)}``."""
    out = {}
    for name, v in tree.items():
        if isinstance(v, dict):
            out.update(flat(v, f"{prefix}{name}."))
        elif isinstance(v, list):
            out[prefix + name] = tuple(tuple(x.values()) if isinstance(x, dict) else x for x in v)
        else:
            out[prefix + name] = v
    return out


def run_parser(frames, *, seed=0, gap_p=0.0):
    """Feed ``frames`` to a :class:`FrameParser`, a word offered in each cycle
    but with probability ``gap_p`` an idle one before it; return a
    :class:`Seen` per frame, in order."""
    dut = FrameParser()
    rng = random.Random(seed)
    junk = random.Random(seed + 1)
    edges = []                                # the outputs at every clock edge

    def idle(ctx):
        ctx.set(dut.valid, 0)
        ctx.set(dut.data, junk.getrandbits(32))
        ctx.set(dut.keep, junk.getrandbits(4))
        ctx.set(dut.last, junk.getrandbits(1))

    async def upstream(ctx):
        for frame in frames:
            for word, keep, last in frame_words(frame, fill=junk.randbytes):
                while rng.random() < gap_p:
                    idle(ctx)
                    await ctx.tick()
                ctx.set(dut.valid, 1)
                ctx.set(dut.data, word)
                ctx.set(dut.keep, keep)
                ctx.set(dut.last, last)
                await ctx.tick().until(dut.ready)
        idle(ctx)
        await ctx.tick().repeat(DONE_AFTER_LAST + 2)

    async def monitor(ctx):
        async for _clk, _rst, *outputs in ctx.tick().sample(
                dut.valid, dut.ready, dut.last, dut.done, dut.sum_we, dut.sum_block, dut.sum_value,
                dut.pay_word, dut.result.as_value()):
            edges.append(outputs)

    simulate(dut, upstream, processes=[monitor], name="parser")

    seen, cur, words, last_at = [], Seen(result=None), 0, None
    for t, (valid, ready, last, done, sum_we, block, value, pay_word, result) in enumerate(edges):
        if sum_we:
            cur.sums.append((block, value, pay_word))
        if valid and last_at is None:
            if ready:
                words += 1
                if last:
                    last_at = t
            elif words:
                cur.stalls += 1
        if done:
            assert last_at is not None, f"edge {t}: done for frame #{len(seen)} before its last word"
            cur.result = flat(plain(data.Const(parse_result_layout, result)))
            cur.done_delay = t - last_at
            cur.ready_after_last = tuple(e[1] for e in edges[last_at + 1:last_at + 1 + DONE_AFTER_LAST])
            seen.append(cur)
            cur, words, last_at = Seen(result=None), 0, None
    assert len(seen) == len(frames), f"{len(frames)} frames, {len(seen)} done strobes"
    return seen


# -- what to expect ----------------------------------------------------------

def describe(name, frame):
    return f"{name} ({len(frame)} bytes: {frame[:64].hex()}{'...' if len(frame) > 64 else ''})"


def tcp_header(frame):
    """``(offset, data offset)`` of the TCP header the parser reads to its
    end (IP in the encapsulations of spec section 2, TCP, not a fragment,
    the 20 fixed bytes in the frame), or None."""
    hdr = ip_header(frame)
    if hdr is None:
        return None
    ip, version = hdr
    if version == 4:
        fragment = int.from_bytes(frame[ip + 6:ip + 8], "big") & 0x3FFF
        if frame[ip + 9] != 6 or fragment:
            return None
        tcp = ip + 4 * (frame[ip] & 0x0F)
    else:
        if frame[ip + 6] != 6:
            return None
        tcp = ip + 40
    if len(frame) < tcp + 20:
        return None
    return tcp, frame[tcp + 12] >> 4


def model_fields(frame):
    """Every result field the golden model decides for ``frame``."""
    p = classify(frame, ack_mode=1)
    want = {
        "cls": CLASSES[p.cls], "pure_ack": int(p.pure_ack), "nbytes": min(len(frame), 0xFFFF),
        "l3_bytes": ip_packet_length(frame), "key": p.key, "meta.tag": p.tag,
        "meta.host": host_bucket(p.key, 1 << HOST_BITS),
    }
    hdr = ip_header(frame)
    want["ip.found"] = int(hdr is not None)
    if hdr is not None:
        want["ip.word"], want["ip.ipv6"] = hdr[0] // 4, int(hdr[1] == 6)
    si = seg_info(frame)
    if p.cls != "oversize":                   # (dropped: its 11-bit payload length may wrap)
        want["seg.ok"] = int(si.ok)
    if si.ok and p.cls != "oversize":
        want.update({f"seg.{name}": int(getattr(si, name)) for name in SEG_FIELDS})
    if p.pure_ack:
        want.update({"meta.ack": p.ack, "meta.eligible": int(p.eligible), "meta.ece": int(p.ece),
                     "meta.cwr": int(p.cwr), "meta.ae": int(p.ae), "meta.ecn": p.ecn})
    if p.eligible:
        want.update({
            "meta.has_ts": int(p.has_ts), "meta.sack_n": p.sack_n, "meta.other_opts": int(p.other_opts),
            "meta.accecn_opt": int(p.accecn_opt), "meta.accecn_mask": p.accecn_mask,
            "details.tsval": p.tsval, "details.tsecr": p.tsecr,
            "details.sack": tuple(p.sack) + ((0, 0),) * (4 - p.sack_n), "details.accecn": tuple(p.accecn),
        })
    return want


def hand_fields(expected):
    """The fields a hand-reasoned class of ``parser_cases`` pins."""
    if expected == "ack":
        return {"cls": FrameClass.ACK, "meta.eligible": 1}
    if expected == "ack-ineligible":
        return {"cls": FrameClass.ACK, "meta.eligible": 0}
    return {"cls": CLASSES[expected]}


def show(value):
    """A field for a failure message: numbers in hex, tuples (the key, SACK blocks) spelled out."""
    if isinstance(value, tuple):
        return "(" + ", ".join(show(v) for v in value) + ")"
    return f"{value:#x}" if isinstance(value, int) and not isinstance(value, FrameClass) else repr(value)


def assert_fields(seen, want, where, against):
    wrong = {k: f"{show(seen.result[k])}, {against} {show(v)}" for k, v in want.items() if seen.result[k] != v}
    assert not wrong, f"{where}: " + "; ".join(f"{k} {msg}" for k, msg in wrong.items())


def check_port_contract(frame, seen, where):
    """``done`` three cycles after the last word, ``ready`` low meanwhile and
    once per TCP options word; the block sums."""
    assert seen.done_delay == DONE_AFTER_LAST, f"{where}: done {seen.done_delay} cycles after the last word"
    assert seen.ready_after_last == (0,) * DONE_AFTER_LAST, f"{where}: ready {seen.ready_after_last} after the last word"
    tcp = tcp_header(frame)
    opt_words = max(0, tcp[1] - 5) if tcp else 0
    if tcp is None or len(frame) >= tcp[0] + 4 * tcp[1]:
        assert seen.stalls == opt_words, f"{where}: {seen.stalls} stalls, {opt_words} words of TCP options"
    else:                                     # cut short inside its options
        assert seen.stalls <= opt_words, f"{where}: {seen.stalls} stalls, {opt_words} words of TCP options"
    if len(frame) > MAX_FRAME_BYTES:
        return                                # dropped: its block numbers (7 bits) may wrap
    blocks = [b for b, _v, _w in seen.sums]
    assert blocks == list(range(len(blocks))), f"{where}: block sums strobed for blocks {blocks}"
    if tcp is None:
        assert not seen.sums, f"{where}: block sums for a frame without a TCP header"
    si = seg_info(frame)
    if si.ok:
        want = [(j, s, si.pay_word) for j, s in enumerate(lane_block_sums(frame))]
        assert seen.sums == want, f"{where}: block sums (block, sum, pay_word) {seen.sums}, model {want}"


def check_against_model(frames, seen, names=None):
    for i, (frame, s) in enumerate(zip(frames, seen)):
        where = describe(names[i] if names else f"frame #{i}", frame)
        assert_fields(s, model_fields(frame), where, "model")
        check_port_contract(frame, s, where)


# -- frames ------------------------------------------------------------------

ETH = dict(dst="02:00:00:00:00:fe", src="02:00:00:00:00:01")
NOP = ("NOP", None)


def pad(frame, to=60):
    return frame + bytes(max(0, to - len(frame)))


def le32(*octets):
    """A key word: the field's bytes in arrival order, byte k in bits 8k..8k+7."""
    return int.from_bytes(bytes(octets), "little")


def literal_cases():
    """``[(name, frame, fields)]``: frames whose fields are written out from
    spec section 2 (the key's words from its table), not from the model. The
    tag and host are the ``flowkey`` functions of the literal key."""
    c = []

    # One 0x8100 tag (VID 100, PCP 5: not in the key), IPv4 ECT(0), ECE, timestamps and two SACK
    # blocks: 14 + 4 + 20 + 20 + 32 (options: 2 + 10 + 2 + 18) = 90 bytes, data offset 13.
    frame = bytes(Ether(**ETH, type=0x8100) / Dot1Q(prio=5, vlan=100, type=0x0800) /
                  IP(src="192.168.1.10", dst="203.0.113.5", tos=0x02, id=7) /
                  TCP(sport=50000, dport=443, seq=1, ack=0x12345678, flags="AE", window=65535,
                      options=[NOP, NOP, ("Timestamp", (1000, 2000)), NOP, NOP,
                               ("SAck", (3000, 4000, 5000, 6000))]))
    key = (le32(0x64, 0x00, 0x00, 0x11), le32(0, 0, 6, 1),         # VID 100, 1 tag, TPID 0x8100; TCP, IP
           le32(192, 168, 1, 10), 0, 0, 0, le32(203, 0, 113, 5), 0, 0, 0,
           le32(0xC3, 0x50, 0x01, 0xBB))                            # ports 50000, 443
    c.append(("vlan_ipv4_ack_with_timestamps_and_two_sack_blocks", frame, {
        "cls": FrameClass.ACK, "pure_ack": 1, "nbytes": 90, "l3_bytes": 72,
        "ip.found": 1, "ip.word": 4, "ip.ipv6": 0, "key": key, "meta.tag": flow_tag(key),
        "meta.host": host_bucket(key, 1 << HOST_BITS),
        "meta.ack": 0x12345678, "meta.eligible": 1, "meta.ece": 1, "meta.cwr": 0, "meta.ae": 0, "meta.ecn": 2,
        "meta.has_ts": 1, "meta.sack_n": 2, "meta.other_opts": 0, "meta.accecn_opt": 0, "meta.accecn_mask": 0,
        "details.tsval": 1000, "details.tsecr": 2000,
        "details.sack": ((3000, 4000), (5000, 6000), (0, 0), (0, 0)), "details.accecn": (0, 0, 0),
        # Section 9: may be cut (no SYN/RST/URG/CWR); TCP header at byte 38 (word 9), no payload.
        "seg.ok": 1, "seg.pppoe": 0, "seg.tcp_word": 9, "seg.pay_word": 22, "seg.pay_bytes": 0,
        "seg.seq": 1, "seg.offflags": 0xD050,
    }))

    # QinQ (0x88A8 VID 10 with PCP 3 and DEI; 0x9100 VID 4095), PPPoE session 0xBEEF, IPv6 ECT(1),
    # ECE + CWR + AE, AccECN1 (kind 174) with two counters: EE1B 0x0a0b0c, ECEB 0x1a1b1c.
    # 14 + 8 + 8 + 40 + 28 = 98 bytes.
    frame = bytes(Ether(**ETH, type=0x88A8) / Dot1Q(prio=3, dei=1, vlan=10, type=0x9100) /
                  Dot1Q(vlan=4095, type=0x8864) / PPPoE(sessionid=0xBEEF) / PPP(proto=0x0057) /
                  IPv6(src="2001:db8::10", dst="2001:db8::20", tc=0x01) /
                  TCP(sport=443, dport=61000, seq=5, ack=0xFFFFFFF0, flags="AECN", window=1000,
                      options=[(174, bytes.fromhex("0a0b0c1a1b1c"))]))
    key = (le32(0x0A, 0xF0, 0xFF, 0xEE),      # VIDs 10, 4095; 2 tags, PPPoE, IPv6; TPIDs 0x88A8, 0x9100
           le32(0xEF, 0xBE, 6, 1),            # session 0xBEEF, TCP, IP
           le32(0x20, 0x01, 0x0D, 0xB8), 0, 0, le32(0, 0, 0, 0x10),
           le32(0x20, 0x01, 0x0D, 0xB8), 0, 0, le32(0, 0, 0, 0x20),
           le32(0x01, 0xBB, 0xEE, 0x48))      # ports 443, 61000
    c.append(("qinq_pppoe_ipv6_ack_with_accecn1_two_counters", frame, {
        "cls": FrameClass.ACK, "pure_ack": 1, "nbytes": 98, "l3_bytes": 68,
        "ip.found": 1, "ip.word": 7, "ip.ipv6": 1, "key": key, "meta.tag": flow_tag(key),
        "meta.host": host_bucket(key, 1 << HOST_BITS),
        "meta.ack": 0xFFFFFFF0, "meta.eligible": 1, "meta.ece": 1, "meta.cwr": 1, "meta.ae": 1, "meta.ecn": 1,
        "meta.has_ts": 0, "meta.sack_n": 0, "meta.other_opts": 0, "meta.accecn_opt": 1,
        "meta.accecn_mask": 0b110, "details.accecn": (0, 0x1A1B1C, 0x0A0B0C),
        "details.tsval": 0, "details.tsecr": 0, "details.sack": ((0, 0),) * 4,
        "seg.ok": 0,                          # CWR: never cut (section 9)
    }))

    # A pure ACK with PSH and an MSS option: an ACK, not eligible; 60 bytes (6 of padding).
    frame = pad(bytes(Ether(**ETH) / IP(src="10.1.2.3", dst="10.9.8.7") /
                      TCP(sport=1, dport=2, ack=77, flags="PA", options=[("MSS", 1460)])))
    key = (0, le32(0, 0, 6, 1), le32(10, 1, 2, 3), 0, 0, 0, le32(10, 9, 8, 7), 0, 0, 0, le32(0, 1, 0, 2))
    c.append(("psh_ack_is_an_ineligible_pure_ack", frame, {
        "cls": FrameClass.ACK, "pure_ack": 1, "nbytes": 60, "l3_bytes": 44, "key": key,
        "meta.tag": flow_tag(key), "meta.ack": 77, "meta.eligible": 0,
    }))

    # The same with its TCP checksum one off: not eligible, and never cut.
    good = pad(bytes(Ether(**ETH) / IP(src="10.1.2.3", dst="10.9.8.7") / TCP(sport=1, dport=2, ack=77, flags="A")))
    bad = bytearray(good)
    bad[14 + 20 + 17] ^= 1
    c.append(("ack_with_a_wrong_tcp_checksum_is_ineligible", bytes(bad), {
        "cls": FrameClass.ACK, "pure_ack": 1, "meta.eligible": 0, "seg.ok": 0, "meta.ack": 77}))
    c.append(("the_same_ack_with_its_checksum_right_is_eligible", good, {
        "cls": FrameClass.ACK, "pure_ack": 1, "meta.eligible": 1, "seg.ok": 1, "meta.ack": 77,
        "meta.has_ts": 0, "meta.sack_n": 0, "meta.other_opts": 0}))

    # UDP: data, with its ports in the key; 14 + 20 + 8 + 100 = 142 bytes.
    frame = bytes(Ether(**ETH) / IP(src="10.0.0.1", dst="10.0.0.2", tos=3) /
                  UDP(sport=53, dport=5353) / bytes(100))
    key = (0, le32(0, 0, 17, 1), le32(10, 0, 0, 1), 0, 0, 0, le32(10, 0, 0, 2), 0, 0, 0, le32(0, 53, 0x14, 0xE9))
    c.append(("ipv4_udp_is_data_with_its_ports_in_the_key", frame, {
        "cls": FrameClass.DATA, "pure_ack": 0, "nbytes": 142, "l3_bytes": 128, "ip.found": 1, "ip.word": 3,
        "ip.ipv6": 0, "key": key, "meta.tag": flow_tag(key), "seg.ok": 0}))

    # An IPv4 fragment of a TCP segment (MF): data, no ports in the key.
    frame = pad(bytes(Ether(**ETH) / IP(src="10.0.0.1", dst="10.0.0.2", flags="MF") /
                      TCP(sport=7, dport=9, ack=1, flags="A")))
    key = (0, le32(0, 0, 6, 1), le32(10, 0, 0, 1), 0, 0, 0, le32(10, 0, 0, 2), 0, 0, 0, 0)
    c.append(("ipv4_fragment_is_data_without_ports", frame, {
        "cls": FrameClass.DATA, "pure_ack": 0, "key": key, "meta.tag": flow_tag(key), "seg.ok": 0}))

    # ARP behind a 0x8100 tag (VID 42): data, one flow per link; 64 bytes.
    frame = pad(bytes(Ether(**ETH, type=0x8100) / Dot1Q(vlan=42, type=0x0806) /
                      ARP(psrc="192.168.1.10", pdst="192.168.1.1")), 64)
    key = (le32(42, 0, 0, 0x11),) + (0,) * 10
    c.append(("arp_behind_a_tag_is_data_keyed_by_its_link", frame, {
        "cls": FrameClass.DATA, "pure_ack": 0, "nbytes": 64, "l3_bytes": 46, "ip.found": 0, "key": key,
        "meta.tag": flow_tag(key), "meta.host": 0, "seg.ok": 0}))

    # Runts, the largest frame and the smallest oversize one.
    runt = bytes(Ether(**ETH))[:13]
    c.append(("runt_13_bytes_has_the_key_0", runt, {
        "cls": FrameClass.RUNT, "pure_ack": 0, "nbytes": 13, "l3_bytes": 0, "ip.found": 0,
        "key": (0,) * 11, "meta.tag": flow_tag((0,) * 11)}))
    udp = bytes(Ether(**ETH) / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1, dport=2))
    c.append(("frame_of_2048_bytes_is_data", udp + bytes(2048 - len(udp)), {
        "cls": FrameClass.DATA, "nbytes": 2048, "l3_bytes": 28}))     # padding is not charged
    c.append(("frame_of_2049_bytes_is_oversize", udp + bytes(2049 - len(udp)), {
        "cls": FrameClass.OVERSIZE, "nbytes": 2049}))
    return c


@functools.cache
def parser_cases():
    """``{group: [(name, frame, expected class)]}`` of ``cocotb_tests/tb_parser.py``
    (built once: Scapy takes a while)."""
    return tb_parser.parser_cases()


def random_mix(seed, n):
    """``n`` frames: the random trace's mix (pure ACKs of many flows and
    encapsulations, data, UDP, ARP, fragments, malformed and oversize
    frames), the hand-reasoned cases, and both with a byte flipped in the
    headers, cut short or followed by junk."""
    rng = random.Random(seed)
    cases = [f for group in parser_cases().values() for _name, f, _cls in group if len(f) <= 2100]
    trace = [f for _t, f in random_trace(seed, n, 40)]
    out = []
    for _ in range(n):
        frame = bytearray(rng.choice(trace) if rng.random() < 0.6 else rng.choice(cases))
        how = rng.random()
        if how < 0.1 and len(frame) > 14:
            i = rng.randrange(12, min(len(frame), 100))
            frame[i] ^= 1 << rng.randrange(8)
        elif how < 0.15:
            frame = frame[:rng.randrange(1, len(frame) + 1)]
        elif how < 0.2:
            frame += rng.randbytes(rng.randrange(1, 12))
        out.append(bytes(frame))
    return out


# -- tests -------------------------------------------------------------------

def test_hand_written_frames_give_every_field_the_spec_gives_them():
    cases = literal_cases()
    frames = [f for _n, f, _want in cases]
    seen = run_parser(frames, seed=1, gap_p=0.2)
    for (name, frame, want), s in zip(cases, seen):
        where = describe(name, frame)
        assert_fields(s, want, where, "spec")
        check_port_contract(frame, s, where)
    # The timing of those, by hand: one refused word per options word.
    stalls = {name: s.stalls for (name, _f, _w), s in zip(cases, seen)}
    assert stalls["vlan_ipv4_ack_with_timestamps_and_two_sack_blocks"] == 8
    assert stalls["qinq_pppoe_ipv6_ack_with_accecn1_two_counters"] == 2
    assert stalls["psh_ack_is_an_ineligible_pure_ack"] == 1
    assert stalls["ipv4_udp_is_data_with_its_ports_in_the_key"] == 0


def test_hand_written_frames_agree_with_the_model():
    # The literal expectations above and the model's must not drift apart.
    for name, frame, want in literal_cases():
        model = model_fields(frame)
        differ = {k: (v, model[k]) for k, v in want.items() if k in model and model[k] != v}
        assert not differ, f"{describe(name, frame)}: spec vs model {differ}"


@pytest.mark.parametrize("group", ["malformed_cases", "l2", "ipv4", "ipv6", "tcp", "frame_length"])
def test_every_hand_reasoned_case_gets_its_class_and_the_models_fields(group):
    # The cases of one group back to back, no idle cycle between frames.
    cases = parser_cases()[group]
    frames = [f for _n, f, _cls in cases]
    names = [n for n, _f, _cls in cases]
    seen = run_parser(frames, seed=len(group))
    for (name, frame, cls), s in zip(cases, seen):
        assert_fields(s, hand_fields(cls), describe(name, frame), "hand-reasoned")
    check_against_model(frames, seen, names)


def test_a_random_mix_back_to_back_leaves_no_state_behind():
    frames = random_mix(7, 200)
    seen = run_parser(frames, seed=7, gap_p=0.0)
    check_against_model(frames, seen)
    classes = {s.result["cls"] for s in seen}
    assert classes == set(FrameClass), classes
    assert sum(s.result["meta.eligible"] and s.result["cls"] == FrameClass.ACK for s in seen) > 50


def test_a_random_mix_with_idle_cycles_and_junk_between_words():
    # Idle cycles anywhere (also before a last word, as the ingress holds
    # one while it writes a key slot), junk on the lanes while valid is low.
    frames = random_mix(8, 150)
    seen = run_parser(frames, seed=8, gap_p=0.3)
    check_against_model(frames, seen)
    assert sum(bool(s.sums) for s in seen) > 10
