"""In-place supersession through the real RTL (``docs/spec.md`` section 3).

Every test holds the output so that ACKs accumulate, sends a hand-made
sequence of frames, checks what the queue manager decided for each (the
event trace) and what left, in which order, against expectations written out
here by hand from the spec, and finally replays the whole event trace through
the golden model (:func:`ackfilter_tb.scoreboard`, which also checks the
counters).

Holding the output: a *plug* (a data frame) is sent first; with ``o_ready``
held low it enters the egress and stays there, so every later frame waits in
its queue until the output is released. (The drop-from-front test holds with
a closed shaper instead, so that its scoreboard can be split in phases.)

The flow table: the default core (the only build these tests use) has
FLOW_ENTRIES entries and ACK_SLOTS queue positions. Untracked ACKs come from
CAM tag collisions (two flows whose 16-bit tags are equal) and, when there
are fewer entries than positions, from a full table (``cam_full``; the test
with more flows than entries).

Frames of one scenario are written ``A0, A1, ...`` for flow A; the expected
output lists them by name. Event letters: ``N`` ``ARRIVE_ACK_NEW``, ``S``
``ARRIVE_ACK_SUPERSEDE``, ``U`` ``ARRIVE_ACK_UNTRACKED``, ``D``
``ARRIVE_DATA``, ``F`` ``DROP_ACK_FRONT``, ``C`` ``DROP_ACK_COVERED``.
"""

import itertools
from dataclasses import replace

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge

from ackfilter import params as P
from ackfilter.model import classify
from ackfilter.flowkey import flow_tag
from ackfilter.sim.traces import Flow, MSS, tcp_frame
from ackfilter_tb import FLOW_QUEUES, TB, scoreboard
from ackfilter.params import ARRIVAL_EVENTS

CONSERVATIVE, AGGRESSIVE = P.ACK_FILTER_MODES["conservative"], P.ACK_FILTER_MODES["aggressive"]
MODES = {"conservative": CONSERVATIVE, "aggressive": AGGRESSIVE}
LETTER = {"ARRIVE_ACK_NEW": "N", "ARRIVE_ACK_SUPERSEDE": "S", "ARRIVE_ACK_UNTRACKED": "U",
          "ARRIVE_DATA": "D", "DROP_ACK_FRONT": "F", "DROP_ACK_COVERED": "C", "DROP_RUNT": "r",
          "DROP_OVERSIZE": "o",
          "DROP_DATA_FULL": "d"}
ARRIVAL_KINDS = ARRIVAL_EVENTS
#: Idle cycles after each frame. The queue manager needs more than 19 cycles
#: for some ACKs (record read, drop from front, second lookup and record read,
#: record write) and its input FIFO holds 4 frames; 60-byte frames sent back
#: to back (19 cycles each) would overflow it (``drop_overrun``, allowed above
#: line rate by spec section 5). 19 + 30 = 49 cycles per minimum frame is
#: slower than line rate (84 byte times: 33.6 cycles at 50 MHz).
PACE_GAP = 30

#: A base ack number far from the wrap; ``M`` one full segment.
A = 0x1000_0000
M = MSS
NOP = ("NOP", None)

_uid = itertools.count(1)


# --------------------------------------------------------------------------
# Frames

def flow(n, **kw):
    """Flow number ``n``: its own source port (and address), LAN -> modem."""
    return Flow(src=f"10.7.{n >> 8 & 255}.{n & 255 or 1}", dst="198.51.100.9", sport=40000 + n,
                dport=443, **kw)


def v6flow(n, **kw):
    return Flow(src=f"2001:db8:7::{n + 1:x}", dst="2001:db8:ffff::9", sport=40000 + n, dport=443, **kw)


def ack(fl, ackno, *, ts=None, sack=(), flags="A", ecn=0, opts=(), payload=b"", ip_option_words=0,
        bad_csum=False):
    """A TCP segment of flow ``fl`` (a pure ACK unless the flags/payload/options
    say otherwise), Scapy-built, unique by its IP id / flow label;
    ``bad_csum`` flips a bit of its TCP checksum."""
    options = list(opts)
    if ts is not None:
        options += [NOP, NOP, ("Timestamp", tuple(v & 0xFFFFFFFF for v in ts))]
    if sack:
        options += [NOP, NOP, ("SAck", tuple(v & 0xFFFFFFFF for blk in sack for v in blk))]
    uid = next(_uid)
    frame = tcp_frame(fl, seq=1, ack=ackno & 0xFFFFFFFF, flags=flags, options=options, ecn=ecn,
                      payload=payload, ip_id=uid, flow_label=uid, ip_option_words=ip_option_words)
    if bad_csum:
        tcp = 14 + 4 * len(fl.vlans) + (8 if fl.pppoe_session is not None else 0) + \
            (40 if fl.ipv6 else 20 + 4 * ip_option_words)
        frame = frame[:tcp + 17] + bytes([frame[tcp + 17] ^ 1]) + frame[tcp + 18:]
    return frame


def plug():
    """A data frame (TCP PSH|ACK with payload) that holds the egress."""
    uid = next(_uid)
    return tcp_frame(Flow(src="192.168.50.1", dst="203.0.113.50", sport=5000, dport=5001), seq=uid,
                     ack=1, flags="PA", payload=bytes(range(40)), ip_id=uid)


# --------------------------------------------------------------------------
# Holding the output

class OutputGate:
    """An ``o_ready`` source for ``TB.o_ready_pattern``: 0 while held, 1 once open."""

    def __init__(self):
        self.open = True

    def __iter__(self):
        return self

    def __next__(self):
        return int(self.open)


async def start(dut, *, mode, ack_queue_limit=64, data_share=0):
    tb = TB(dut)
    gate = OutputGate()
    tb.o_ready_pattern = gate
    await tb.reset()
    await tb.set_param("ack_mode", mode)
    await tb.set_param("ack_queue_limit", ack_queue_limit)
    await tb.set_param("data_share", data_share)
    await tb.set_param("shaper_cpb_q16", 0)
    model = tb.model(ack_mode=mode, ack_queue_limit=ack_queue_limit, data_share=data_share)
    return tb, gate, model


def arrivals(tb):
    return sum(1 for _, ev in tb.events if ev in ARRIVAL_KINDS)


async def settle(tb):
    """Wait until the queue manager has taken every frame sent so far."""
    for _ in range(100_000):
        if arrivals(tb) >= len(tb.sent):
            break
        await RisingEdge(tb.dut.clk)
    else:
        raise AssertionError("queue manager did not take every frame")
    await ClockCycles(tb.dut.clk, 4)


async def held(tb, gate, frames):
    """Plug the egress, send ``frames``, wait until all are queued.

    Returns ``(e0, r0)``: where this scenario's events and received frames start."""
    await tb.drain(quiet_cycles=20)
    e0, r0 = len(tb.events), len(tb.received)
    gate.open = False
    await tb.send(plug())
    for f in frames:
        await tb.send(f, gap=PACE_GAP)
    await settle(tb)
    return e0, r0


async def release(tb, gate):
    gate.open = True
    await tb.drain(quiet_cycles=50)


def decisions(tb, e0):
    """Letters of the arrival decisions since event ``e0`` (the plug's first)."""
    return "".join(LETTER[ev] for _, ev in tb.events[e0:] if ev in LETTER)


def check_scenario(tb, e0, r0, *, frames, names, events, out, what):
    """The plug and the frames named in ``out`` left, in that order, and the
    arrival decisions were ``events`` (letters, plug excluded)."""
    got_ev = decisions(tb, e0)
    assert got_ev == "D" + events, f"{what}: decisions {got_ev[1:]!r}, expected {events!r}"
    by_bytes = {f: n for n, f in zip(names, frames)}
    got_out = [by_bytes.get(f, "plug" if i == 0 else f.hex()) for i, (_, f) in enumerate(tb.received[r0:])]
    assert got_out == ["plug"] + list(out), f"{what}: left {got_out[1:]}, expected {list(out)}"


async def finish(tb, model):
    cnt = await tb.counters()
    model = scoreboard(tb, model, counters=cnt)
    model.check_invariants()
    assert model.ack_queue_depth == 0 and model.data_queue_frames == 0
    return cnt


# --------------------------------------------------------------------------
# Dup ACKs

@cocotb.test(timeout_time=50, timeout_unit="ms")
@cocotb.parametrize(mode=list(MODES))
async def test_dup_acks_are_never_superseded(dut, mode):
    """Four ACKs with the same ack (TSval growing, no SACK) all leave; a
    later higher ACK may only take the place of the newest of them."""
    tb, gate, model = await start(dut, mode=MODES[mode])
    a = flow(1)
    # Series 1: A0 (ack A), then 4 dups of ack A+M: d1..d4, then nothing.
    frames = [ack(a, A, ts=(100, 9))] + [ack(a, A + M, ts=(100 + k, 9)) for k in range(1, 5)]
    names = ["A0", "d1", "d2", "d3", "d4"]
    e0, r0 = await held(tb, gate, frames)
    await release(tb, gate)
    if mode == "aggressive":   # d1 acknowledges more than A0 and takes its place; dups stay
        check_scenario(tb, e0, r0, frames=frames, names=names, events="NSNNN",
                       out=["d1", "d2", "d3", "d4"], what="dup series")
    else:                      # A0 alone in the queue: kept (two per flow)
        check_scenario(tb, e0, r0, frames=frames, names=names, events="NNNNN",
                       out=["A0", "d1", "d2", "d3", "d4"], what="dup series")

    # Series 2: four ACKs with the same ack, then the recovery ACK (ack
    # A+5M): it overwrites the newest of them only, three still leave.
    frames = [ack(a, A, ts=(200 + k, 9)) for k in range(4)] + [ack(a, A + 5 * M, ts=(210, 9))]
    names = ["x1", "x2", "x3", "x4", "R"]
    e0, r0 = await held(tb, gate, frames)
    await release(tb, gate)
    check_scenario(tb, e0, r0, frames=frames, names=names, events="NNNNS",
                   out=["x1", "x2", "x3", "R"], what="dups then recovery")
    await finish(tb, model)


# --------------------------------------------------------------------------
# The supersession rules, one flow per case.
#
# A case is (name, frames, events, acks_out, data_out) with frames given as
# keyword dicts for ack() (plus "v6": True for an IPv6 flow); events are the
# decisions in aggressive mode; acks_out/data_out the indices of the frames
# that leave through the ACK and the data queue. In conservative mode the
# same case runs after a plain "base" ACK of the flow, so that the flow has
# two ACKs queued when the case's second ACK arrives: the decisions are
# "N" + events and the base leaves first.

def _c(name, frames, events, acks_out, data_out=()):
    return (name, frames, events, acks_out, data_out)


SACK_CASES = [
    _c("same_ack_bigger_sack_block_supersedes",
       [dict(ackno=A, sack=[(A + M, A + 2 * M)]), dict(ackno=A, sack=[(A + M, A + 3 * M)])], "NS", [1]),
    _c("same_ack_extra_sack_block_supersedes",
       [dict(ackno=A, sack=[(A + M, A + 2 * M)]),
        dict(ackno=A, sack=[(A + 3 * M, A + 4 * M), (A + M, A + 2 * M)])], "NS", [1]),
    _c("same_ack_first_sack_block_supersedes_plain",
       [dict(ackno=A), dict(ackno=A, sack=[(A + M, A + 2 * M)])], "NS", [1]),
    _c("same_ack_smaller_sack_block_does_not",
       [dict(ackno=A, sack=[(A + M, A + 3 * M)]), dict(ackno=A, sack=[(A + M, A + 2 * M)])], "NN", [0, 1]),
    _c("same_ack_same_sack_is_a_dup",
       [dict(ackno=A, sack=[(A + M, A + 2 * M)]), dict(ackno=A, sack=[(A + M, A + 2 * M)])], "NN", [0, 1]),
    _c("same_ack_sack_not_covering_the_older_block_does_not",
       [dict(ackno=A, sack=[(A + 4 * M, A + 5 * M)]), dict(ackno=A, sack=[(A + M, A + 2 * M)])], "NN", [0, 1]),
    _c("merged_block_covering_two_older_blocks_supersedes",
       [dict(ackno=A, sack=[(A + 3 * M, A + 4 * M), (A + M, A + 2 * M)]),
        dict(ackno=A, sack=[(A + M, A + 4 * M)])], "NS", [1]),
    _c("higher_ack_covering_the_older_sack_block_supersedes",
       [dict(ackno=A, sack=[(A + M, A + 2 * M)]), dict(ackno=A + 2 * M)], "NS", [1]),
    _c("higher_ack_leaving_the_older_sack_block_uncovered_does_not",
       [dict(ackno=A, sack=[(A + 3 * M, A + 4 * M)]), dict(ackno=A + 2 * M)], "NN", [0, 1]),
    _c("higher_ack_with_a_block_covering_the_older_block_supersedes",
       [dict(ackno=A, sack=[(A + 3 * M, A + 4 * M)]), dict(ackno=A + 2 * M, sack=[(A + 3 * M, A + 5 * M)])],
       "NS", [1]),
    _c("same_ack_newer_dsack_only_is_a_dup",
       [dict(ackno=A), dict(ackno=A, sack=[(A - M, A)])], "NN", [0, 1]),
    _c("four_older_blocks_all_covered_supersedes",
       [dict(ackno=A, sack=[(A + 7 * M, A + 8 * M), (A + 5 * M, A + 6 * M), (A + 3 * M, A + 4 * M),
                            (A + M, A + 2 * M)]),
        dict(ackno=A, sack=[(A + M, A + 8 * M)])], "NS", [1]),
    _c("fourth_older_block_uncovered_does_not",
       [dict(ackno=A, sack=[(A + 7 * M, A + 8 * M), (A + 5 * M, A + 6 * M), (A + 3 * M, A + 4 * M),
                            (A + M, A + 2 * M)]),
        dict(ackno=A, sack=[(A + 3 * M, A + 9 * M)])], "NN", [0, 1]),
    _c("new_information_in_the_fourth_block_supersedes",
       [dict(ackno=A, sack=[(A + 5 * M, A + 6 * M), (A + 3 * M, A + 4 * M), (A + M, A + 2 * M)]),
        dict(ackno=A, sack=[(A + 5 * M, A + 6 * M), (A + 3 * M, A + 4 * M), (A + M, A + 2 * M),
                            (A + 7 * M, A + 8 * M)])], "NS", [1]),
    _c("three_blocks_with_timestamps_growing_supersedes",
       [dict(ackno=A, ts=(10, 20), sack=[(A + 5 * M, A + 6 * M), (A + 3 * M, A + 4 * M), (A + M, A + 2 * M)]),
        dict(ackno=A, ts=(11, 20), sack=[(A + 5 * M, A + 7 * M), (A + 3 * M, A + 4 * M), (A + M, A + 2 * M)])],
       "NS", [1]),
    _c("sack_blocks_across_the_wrap_supersede",
       [dict(ackno=-3 * M // 2, sack=[(-M // 2, M // 2)]), dict(ackno=-3 * M // 2, sack=[(-M // 2, 3 * M // 2)])],
       "NS", [1]),
]

DSACK_CASES = [
    _c("older_dsack_below_its_ack_is_kept",
       [dict(ackno=A, sack=[(A - M, A)]), dict(ackno=A + 2 * M)], "NN", [0, 1]),
    _c("older_dsack_inside_its_second_block_is_kept",
       [dict(ackno=A, sack=[(A + M, A + 2 * M), (A + M, A + 3 * M)]), dict(ackno=A + 4 * M)], "NN", [0, 1]),
    _c("newer_dsack_supersedes_a_plain_ack_then_is_kept",
       [dict(ackno=A), dict(ackno=A + M, sack=[(A, A + M)]), dict(ackno=A + 2 * M)], "NSN", [1, 2]),
    _c("older_malformed_sack_block_is_kept",
       [dict(ackno=A, sack=[(A + 3 * M, A + 2 * M)]), dict(ackno=A + 5 * M)], "NN", [0, 1]),
]

ECN_CASES = [
    _c("ece_set_blocks", [dict(ackno=A), dict(ackno=A + M, flags="AE")], "NN", [0, 1]),
    _c("ece_cleared_blocks", [dict(ackno=A, flags="AE"), dict(ackno=A + M)], "NN", [0, 1]),
    _c("ece_on_both_supersedes", [dict(ackno=A, flags="AE"), dict(ackno=A + M, flags="AE")], "NS", [1]),
    _c("cwr_set_blocks", [dict(ackno=A), dict(ackno=A + M, flags="AC")], "NN", [0, 1]),
    _c("cwr_cleared_blocks", [dict(ackno=A, flags="AC"), dict(ackno=A + M)], "NN", [0, 1]),
    _c("ip_ecn_ect0_to_ce_blocks", [dict(ackno=A, ecn=2), dict(ackno=A + M, ecn=3)], "NN", [0, 1]),
    _c("ip_ecn_ect1_to_ect0_blocks", [dict(ackno=A, ecn=1), dict(ackno=A + M, ecn=2)], "NN", [0, 1]),
    _c("ip_ecn_equal_supersedes", [dict(ackno=A, ecn=2), dict(ackno=A + M, ecn=2)], "NS", [1]),
    _c("ipv6_ecn_change_blocks", [dict(v6=True, ackno=A, ecn=2), dict(v6=True, ackno=A + M, ecn=3)],
       "NN", [0, 1]),
    _c("ipv6_plain_supersedes", [dict(v6=True, ackno=A), dict(v6=True, ackno=A + M)], "NS", [1]),
]

TS_CASES = [
    _c("ts_advancing_supersedes", [dict(ackno=A, ts=(100, 50)), dict(ackno=A + M, ts=(101, 51))], "NS", [1]),
    _c("ts_equal_supersedes", [dict(ackno=A, ts=(100, 50)), dict(ackno=A + M, ts=(100, 50))], "NS", [1]),
    _c("tsval_backwards_blocks", [dict(ackno=A, ts=(100, 50)), dict(ackno=A + M, ts=(99, 50))], "NN", [0, 1]),
    _c("tsecr_backwards_blocks", [dict(ackno=A, ts=(100, 50)), dict(ackno=A + M, ts=(100, 49))], "NN", [0, 1]),
    _c("ts_dropped_blocks", [dict(ackno=A, ts=(100, 50)), dict(ackno=A + M)], "NN", [0, 1]),
    _c("ts_added_blocks", [dict(ackno=A), dict(ackno=A + M, ts=(100, 50))], "NN", [0, 1]),
    _c("tsval_wrapping_supersedes",
       [dict(ackno=A, ts=(0xFFFF_FFF0, 50)), dict(ackno=A + M, ts=(0x10, 50))], "NS", [1]),
    _c("tsecr_wrapping_supersedes",
       [dict(ackno=A, ts=(100, 0xFFFF_FFFF)), dict(ackno=A + M, ts=(100, 0))], "NS", [1]),
    _c("tsval_backwards_across_the_wrap_blocks",
       [dict(ackno=A, ts=(0x10, 50)), dict(ackno=A + M, ts=(0xFFFF_FFF0, 50))], "NN", [0, 1]),
]

ACKNO_CASES = [
    _c("ack_wrapping_supersedes", [dict(ackno=0xFFFF_FF00), dict(ackno=0x0000_0100)], "NS", [1]),
    _c("ack_backwards_across_the_wrap_does_not", [dict(ackno=0x0000_0100), dict(ackno=0xFFFF_FF00)],
       "NN", [0, 1]),
    _c("reordered_older_ack_does_not", [dict(ackno=A + M), dict(ackno=A)], "NN", [0, 1]),
    # Exactly 2^31 apart: undefined in RFC 1982, refused (issue 9).
    _c("ack_exactly_2pow31_ahead_does_not", [dict(ackno=0), dict(ackno=0x8000_0000)], "NN", [0, 1]),
    _c("ack_just_below_2pow31_ahead_does_not_either", [dict(ackno=0), dict(ackno=0x7FFF_FFFF)], "NN", [0, 1]),
    _c("three_advancing_acks_collapse_to_the_newest",
       [dict(ackno=A), dict(ackno=A + M), dict(ackno=A + 2 * M)], "NSS", [2]),
]

DATA_CASES = [
    # Zero-payload ACKs that are not eligible keep their place among the
    # flow's pure ACKs (issue 9): queued, never superseded, never superseding.
    _c("psh_ack_without_payload_is_queued_and_does_not_supersede",
       [dict(ackno=A), dict(ackno=A + M, flags="PA")], "NN", [0, 1]),
    _c("psh_ack_without_payload_is_never_superseded",
       [dict(ackno=A, flags="PA"), dict(ackno=A + M)], "NN", [0, 1]),
    _c("ae_flagged_ack_keeps_its_place_before_a_later_pure_ack",
       [dict(ackno=A), dict(ackno=A + M, flags="AN"), dict(ackno=A + 2 * M)], "NNN", [0, 1, 2]),
    _c("urg_ack_without_payload_does_not_supersede",
       [dict(ackno=A), dict(ackno=A + M, flags="AU")], "NN", [0, 1]),
    _c("ack_with_a_bad_tcp_checksum_never_overwrites_a_good_one",
       [dict(ackno=A), dict(ackno=A + M, bad_csum=True)], "NN", [0, 1]),
    _c("ack_with_a_bad_tcp_checksum_is_never_overwritten",
       [dict(ackno=A, bad_csum=True), dict(ackno=A + M)], "NN", [0, 1]),
    _c("ack_with_ipv4_options_is_kept_in_its_place",
       [dict(ackno=A, ip_option_words=1), dict(ackno=A + M), dict(ackno=A + 2 * M)], "NNS", [0, 2]),
    _c("ack_with_payload_is_data_and_a_later_ack_supersedes_across_it",
       [dict(ackno=A), dict(ackno=A + M, payload=b"0123456789"), dict(ackno=A + 2 * M)], "NDS", [2], [1]),
    _c("ack_with_payload_is_never_superseded",
       [dict(ackno=A, payload=b"x"), dict(ackno=A + M)], "DN", [1], [0]),
    _c("fin_ack_is_data", [dict(ackno=A), dict(ackno=A + M, flags="FA")], "ND", [0], [1]),
]

OPTION_CASES = [
    _c("older_with_mss_is_kept", [dict(ackno=A, opts=[("MSS", 1460)]), dict(ackno=A + M)], "NN", [0, 1]),
    _c("older_with_window_scale_is_kept",
       [dict(ackno=A, opts=[NOP, ("WScale", 7)]), dict(ackno=A + M)], "NN", [0, 1]),
    _c("older_with_sack_permitted_is_kept",
       [dict(ackno=A, opts=[("SAckOK", b""), NOP, NOP]), dict(ackno=A + M)], "NN", [0, 1]),
    _c("older_with_an_unknown_option_is_kept",
       [dict(ackno=A, opts=[(99, b"\x00\x00")]), dict(ackno=A + M)], "NN", [0, 1]),
    _c("newer_with_mss_supersedes_then_is_kept",
       [dict(ackno=A), dict(ackno=A + M, opts=[("MSS", 1460)]), dict(ackno=A + 2 * M)], "NSN", [1, 2]),
    _c("older_with_only_nop_and_eol_supersedes",
       [dict(ackno=A, opts=[NOP, NOP, NOP, ("EOL", None)]), dict(ackno=A + M)], "NS", [1]),
]

RULE_GROUPS = {
    "sack": SACK_CASES, "dsack": DSACK_CASES, "ecn": ECN_CASES, "timestamps": TS_CASES,
    "ack_numbers": ACKNO_CASES, "data": DATA_CASES, "options": OPTION_CASES,
}


async def run_cases(dut, mode, cases, first_flow):
    tb, gate, model = await start(dut, mode=MODES[mode])
    for i, (name, specs, events, acks_out, data_out) in enumerate(cases):
        fl = None
        frames = []
        for spec in specs:
            spec = dict(spec)
            v6 = spec.pop("v6", False)
            fl = (v6flow if v6 else flow)(first_flow + i)
            frames.append(ack(fl, **spec))
        names = [str(k) for k in range(len(frames))]
        want_out = [str(k) for k in acks_out] + [str(k) for k in data_out]   # data_share 0: ACKs first
        if mode == "conservative":
            first_ack = specs[0]["ackno"]
            frames.insert(0, ack(fl, first_ack - 100 * M))
            names.insert(0, "base")
            events = "N" + events
            want_out.insert(0, "base")
        e0, r0 = await held(tb, gate, frames)
        await release(tb, gate)
        check_scenario(tb, e0, r0, frames=frames, names=names, events=events, out=want_out, what=name)
    await finish(tb, model)


@cocotb.test(timeout_time=100, timeout_unit="ms")
@cocotb.parametrize(mode=list(MODES), group=list(RULE_GROUPS))
async def test_supersession_rules(dut, mode, group):
    """Each case of the group: its own flow, older then newer ACK(s); which
    decisions and which frames leave (see the tables above)."""
    await run_cases(dut, mode, RULE_GROUPS[group], first_flow=100 * (1 + list(RULE_GROUPS).index(group)))


# --------------------------------------------------------------------------
# How many ACKs per flow stay queued

@cocotb.test(timeout_time=50, timeout_unit="ms")
@cocotb.parametrize(mode=list(MODES))
async def test_conservative_keeps_two_queued_per_flow_aggressive_one(dut, mode):
    """Six advancing ACKs of one flow: aggressive keeps the newest only,
    conservative the first and the newest (the second and later overwrite the
    second place); the ACK queue depth and flow count say so before release."""
    tb, gate, model = await start(dut, mode=MODES[mode])
    a = flow(2)
    frames = [ack(a, A + k * M, ts=(1000 + k, 7)) for k in range(6)]
    names = [f"A{k}" for k in range(6)]
    e0, r0 = await held(tb, gate, frames)
    depth = await tb.info("ack_queue_depth")
    flows = await tb.info("flows_active")
    await release(tb, gate)
    if mode == "aggressive":
        assert (depth, flows) == (1, 1), (depth, flows)
        check_scenario(tb, e0, r0, frames=frames, names=names, events="NSSSSS", out=["A5"], what=mode)
    else:
        assert (depth, flows) == (2, 1), (depth, flows)
        check_scenario(tb, e0, r0, frames=frames, names=names, events="NNSSSS", out=["A0", "A5"], what=mode)
    cnt = await finish(tb, model)
    assert cnt["acks_superseded"] == (5 if mode == "aggressive" else 4)


# --------------------------------------------------------------------------
# Only the newest is overwritten, in place

@cocotb.test(timeout_time=50, timeout_unit="ms")
@cocotb.parametrize(mode=list(MODES))
async def test_only_the_newest_is_overwritten_in_its_place(dut, mode):
    """Flows A, B, C interleaved with a data flow D. A superseding ACK takes
    the queue position of its flow's newest ACK (not the tail, not an older
    ACK of the flow), so flows keep their order and their place."""
    tb, gate, model = await start(dut, mode=MODES[mode], data_share=0)
    fa, fb, fc = flow(3), flow(4), v6flow(5)
    fd = Flow(src="192.168.60.2", dst="203.0.113.60", sport=6000, dport=6001)
    seq = [
        ("A1", ack(fa, A + M)), ("B1", ack(fb, A + M)),
        ("D1", tcp_frame(fd, seq=1, ack=5, flags="PA", payload=bytes(300), ip_id=1)),
        ("A2", ack(fa, A + 2 * M)), ("C1", ack(fc, A + M)), ("B2", ack(fb, A + 2 * M)),
        ("D2", tcp_frame(fd, seq=301, ack=5, flags="PA", payload=bytes(300), ip_id=2)),
        ("A3", ack(fa, A + 3 * M)), ("C2", ack(fc, A + 2 * M)), ("A4", ack(fa, A + 4 * M)),
        ("B3", ack(fb, A + 2 * M)),                      # a dup of B2: never superseding it
    ]
    names, frames = zip(*seq)
    e0, r0 = await held(tb, gate, list(frames))
    await release(tb, gate)
    if mode == "aggressive":
        # [A1] [A1 B1] [A2 B1] [A2 B1 C1] [A2 B2 C1] [A3 B2 C1] [A3 B2 C2] [A4 B2 C2] [A4 B2 C2 B3]
        check_scenario(tb, e0, r0, frames=frames, names=names, events="NNDSNSDSSSN",
                       out=["A4", "B2", "C2", "B3", "D1", "D2"], what=mode)
    else:
        # [A1 B1 A2 C1 B2]; A3 overwrites A2 (A1 stays, only the newest is
        # overwritten); C2 is C's second; A4 overwrites A3 in A2's old place.
        check_scenario(tb, e0, r0, frames=frames, names=names, events="NNDNNNDSNSN",
                       out=["A1", "B1", "A4", "C1", "B2", "C2", "B3", "D1", "D2"], what=mode)
    await finish(tb, model)


# --------------------------------------------------------------------------
# Mode off

@cocotb.test(timeout_time=50, timeout_unit="ms")
async def test_mode_off_is_a_plain_fifo(dut):
    """ack_mode 0: pure ACKs are data; nothing is superseded, everything
    leaves in arrival order; ``acks_in`` still counts the pure ACKs. With
    flow queues (spec section 12) each flow's frames leave in their order,
    the flows in the order they became active (the new list), each flow's
    backlog together (all of it fits one quantum, 1514 bytes unshaped)."""
    tb, gate, model = await start(dut, mode=P.ACK_FILTER_MODES["off"], data_share=64)
    a, b = flow(6), flow(7)
    fd = Flow(src="192.168.60.2", dst="203.0.113.60", sport=6000, dport=6001)
    seq = [("A1", ack(a, A)), ("A2", ack(a, A + M)), ("B1", ack(b, A)),
           ("D1", tcp_frame(fd, seq=1, ack=5, flags="PA", payload=bytes(300), ip_id=1)),
           ("A3", ack(a, A + 2 * M)), ("B2", ack(b, A + M))]
    names, frames = zip(*seq)
    e0, r0 = await held(tb, gate, list(frames))
    await release(tb, gate)
    check_scenario(tb, e0, r0, frames=frames, names=names, events="DDDDDD",
                   out=(["A1", "A2", "A3", "B1", "B2", "D1"] if FLOW_QUEUES else
                        ["A1", "A2", "B1", "D1", "A3", "B2"]), what="mode off")
    cnt = await finish(tb, model)
    assert cnt["acks_in"] == 5 and cnt["acks_superseded"] == 0, cnt


# --------------------------------------------------------------------------
# Flow keys: IPv6, VLANs, PPPoE

def _key_variants():
    base = dict(src="192.0.2.1", dst="198.51.100.1", sport=41000, dport=443)
    v6 = dict(src="::ffff:192.0.2.1", dst="::ffff:198.51.100.1", sport=41000, dport=443)
    return [
        ("plain", Flow(**base)),
        ("vlan10", Flow(**base, vlans=((0x8100, 10),))),
        ("vlan20", Flow(**base, vlans=((0x8100, 20),))),
        ("qinq10_20", Flow(**base, vlans=((0x88A8, 10), (0x8100, 20)))),
        ("qinq20_10", Flow(**base, vlans=((0x88A8, 20), (0x8100, 10)))),
        ("stag10", Flow(**base, vlans=((0x88A8, 10),))),
        ("qinq10_20_ctags", Flow(**base, vlans=((0x8100, 10), (0x8100, 20)))),
        ("vlan0", Flow(**base, vlans=((0x8100, 0),))),
        ("pppoe1", Flow(**base, pppoe_session=1)),
        ("pppoe2", Flow(**base, pppoe_session=2)),
        ("pppoe0", Flow(**base, pppoe_session=0)),
        ("v6mapped", Flow(**v6)),
        ("v6other", Flow(**{**v6, "src": "2001:db8::c000:201"})),
        ("v6vlan10", Flow(**v6, vlans=((0x8100, 10),))),
    ]


@cocotb.test(timeout_time=50, timeout_unit="ms")
async def test_ipv6_vlan_and_pppoe_flows_are_keyed_separately(dut):
    """Same addresses and ports in different VLANs / tag stacks / PPPoE
    sessions / IP versions are different flows: round 1 sends one ACK per
    variant with acks increasing across variants (if two variants shared a
    key, the later would supersede the earlier, aggressive mode); round 2 a
    higher ACK per variant, each superseding its own variant's ACK."""
    tb, gate, model = await start(dut, mode=AGGRESSIVE)
    variants = _key_variants()
    tags = {flow_tag_of(fl) for _, fl in variants}
    assert len(tags) == len(variants), "two variants' CAM tags collide: pick other addresses"
    frames, names = [], []
    for k, (name, fl) in enumerate(variants):
        frames.append(ack(fl, A + k * M))
        names.append(f"{name}/1")
    for k, (name, fl) in enumerate(variants):
        frames.append(ack(fl, A + (100 + k) * M))
        names.append(f"{name}/2")
    e0, r0 = await held(tb, gate, frames)
    flows = await tb.info("flows_active")
    await release(tb, gate)
    n = len(variants)
    assert flows == n, f"{flows} flow entries for {n} distinct keys"
    check_scenario(tb, e0, r0, frames=frames, names=names, events="N" * n + "S" * n,
                   out=[f"{name}/2" for name, _ in variants], what="key variants")
    await finish(tb, model)


@cocotb.test(timeout_time=50, timeout_unit="ms")
async def test_vlan_tag_type_is_part_of_the_flow_key_priority_is_not(dut):
    """The key holds the 12-bit VLAN IDs, the tag count and each tag's TPID
    (spec section 2): an S-tag 10 and a C-tag 10 are different links, so
    neither supersedes the other's ACK; the same flow seen with another
    priority (PCP) is the same flow, so its newer ACK supersedes."""
    tb, gate, model = await start(dut, mode=AGGRESSIVE)
    base = dict(src="192.0.2.7", dst="198.51.100.7", sport=42000, dport=443)
    f1 = ack(Flow(**base, vlans=((0x8100, 10),)), A)
    f2 = ack(Flow(**base, vlans=((0x88A8, 10),)), A + M)
    f3 = ack(Flow(**base, vlans=((0x9100, 10),)), A + 2 * M)
    f4 = bytearray(ack(Flow(**base, vlans=((0x8100, 10),)), A + 3 * M))
    f4[14] |= 0xE0                                    # PCP 7 in the TCI, VID unchanged
    f4 = bytes(f4)
    frames = [f1, f2, f3, f4]
    e0, r0 = await held(tb, gate, frames)
    await release(tb, gate)
    check_scenario(tb, e0, r0, frames=frames, names=["8100", "88a8", "9100", "8100pcp7"], events="NNNS",
                   out=["8100pcp7", "88a8", "9100"], what="tpid/pcp")
    await finish(tb, model)


@cocotb.test(timeout_time=50, timeout_unit="ms")
async def test_three_vlan_tags_make_a_frame_data(dut):
    """Spec section 2 rule 1: up to two VLAN tags; a third tag makes the
    frame ``data``. Two otherwise pure ACKs under three tags, differing only
    in the outermost VID (so of different flows in any case), must both
    leave through the data queue, neither superseding the other."""
    tb, gate, model = await start(dut, mode=AGGRESSIVE)
    base = dict(src="192.0.2.8", dst="198.51.100.8", sport=43000, dport=443)
    f1 = ack(Flow(**base, vlans=((0x8100, 5), (0x88A8, 7), (0x8100, 9))), A)
    f2 = ack(Flow(**base, vlans=((0x8100, 6), (0x88A8, 7), (0x8100, 9))), A + M)
    frames = [f1, f2]
    e0, r0 = await held(tb, gate, frames)
    await release(tb, gate)
    check_scenario(tb, e0, r0, frames=frames, names=["vid5/7/9", "vid6/7/9"], events="DD",
                   out=["vid5/7/9", "vid6/7/9"], what="three tags")
    await finish(tb, model)


# --------------------------------------------------------------------------
# Tag collisions and a full flow table

def flow_tag_of(fl):
    """The CAM tag of ``fl``'s pure ACKs, as the model computes it from the bytes."""
    return classify(tcp_frame(fl, ack=1, builder="raw"), ack_mode=AGGRESSIVE).tag


_colliding = None


def colliding_flows():
    """Two flows (same addresses, other ports) whose CAM tags are equal."""
    global _colliding
    if _colliding is None:
        fa = Flow(src="10.9.0.1", dst="198.51.100.99", sport=50000, dport=443)
        key = list(classify(tcp_frame(fa, ack=1, builder="raw"), ack_mode=AGGRESSIVE).key)
        want = flow_tag(key)
        for dport in (443, 80, 8080, 22, 8443, 25, 993, 5001):
            for sport in range(1024, 65536):
                key[10] = int.from_bytes(sport.to_bytes(2, "big") + dport.to_bytes(2, "big"), "little")
                if (sport, dport) != (fa.sport, fa.dport) and flow_tag(key) == want:
                    _colliding = (fa, replace(fa, sport=sport, dport=dport))
                    assert flow_tag_of(_colliding[1]) == want
                    return _colliding
        raise AssertionError("no flow with a colliding tag found")
    return _colliding


def distinct_tag_flows(count, *, first):
    """``count`` flows ``flow(first + k)`` whose CAM tags are all different
    (a chance collision would make one of them untracked)."""
    out, tags = [], set()
    n = first
    while len(out) < count:
        fl = flow(n)
        n += 1
        tag = flow_tag_of(fl)
        if tag not in tags:
            tags.add(tag)
            out.append(fl)
    return out


@cocotb.test(timeout_time=50, timeout_unit="ms")
@cocotb.parametrize(mode=list(MODES))
async def test_tag_collision_never_supersedes_another_flow(dut, mode):
    """B's tag equals A's: while A owns the entry, B's ACKs are queued
    untracked (counted ``cam_collisions``), never superseded and never
    superseding A's, though by their fields they could. Once A has left, B
    gets an entry of its own and supersedes normally."""
    tb, gate, model = await start(dut, mode=MODES[mode])
    fa, fb = colliding_flows()
    seq = [("A1", ack(fa, A)), ("A2", ack(fa, A + M)), ("B1", ack(fb, A + 2 * M)),
           ("B2", ack(fb, A + 3 * M)), ("A3", ack(fa, A + 4 * M)), ("B3", ack(fb, A + 5 * M))]
    names, frames = zip(*seq)
    e0, r0 = await held(tb, gate, list(frames))
    await release(tb, gate)
    if mode == "aggressive":
        check_scenario(tb, e0, r0, frames=frames, names=names, events="NSUUSU",
                       out=["A3", "B1", "B2", "B3"], what=mode)
    else:
        check_scenario(tb, e0, r0, frames=frames, names=names, events="NNUUSU",
                       out=["A1", "A3", "B1", "B2", "B3"], what=mode)
    cnt = await tb.counters()
    assert cnt["cam_collisions"] == 3, cnt
    # A is gone: B now owns the entry.
    seq = [("B4", ack(fb, A + 6 * M)), ("B5", ack(fb, A + 7 * M)), ("B6", ack(fb, A + 8 * M))]
    names, frames = zip(*seq)
    e0, r0 = await held(tb, gate, list(frames))
    await release(tb, gate)
    if mode == "aggressive":
        check_scenario(tb, e0, r0, frames=frames, names=names, events="NSS", out=["B6"], what=mode)
    else:
        check_scenario(tb, e0, r0, frames=frames, names=names, events="NNS", out=["B4", "B6"], what=mode)
    cnt = await finish(tb, model)
    assert cnt["cam_collisions"] == 3, cnt


def table_and_queue_by_hand(arrivals, entries, slots):
    """What spec section 3 decides for ``arrivals`` (``(flow, frame)``, each
    ACK higher than its flow's earlier ones) in aggressive mode with the
    output held, written out step by step: a flow with an entry supersedes
    its one queued ACK in place (``S``: the position now holds the new
    frame); otherwise a full queue drops its head (``F``, freeing the head's
    entry if it was tracked) and the ACK is appended, tracked in a free entry
    (``N``) or untracked when none is free (``U``, counted ``cam_full``).
    Returns the letters and the frames in the queue from head to tail."""
    queue, owners, letters = [], {}, []
    for f, frame in arrivals:
        if f in owners:
            owners[f][2] = frame
            letters.append("S")
            continue
        if len(queue) == slots:
            head, tracked, _ = queue.pop(0)
            letters.append("F")
            if tracked:
                del owners[head]
        pos = [f, len(owners) < entries, frame]
        if pos[1]:
            owners[f] = pos
        queue.append(pos)
        letters.append("N" if pos[1] else "U")
    return "".join(letters), [frame for _, _, frame in queue]


@cocotb.test(timeout_time=100, timeout_unit="ms")
async def test_more_flows_than_entries_everything_still_leaves(dut):
    """100 flows with the output held, against the step-by-step reading of
    the spec above (:func:`table_and_queue_by_hand`).

    Round 1: one ACK per flow 0..99. Round 2: a higher ACK for flows 99 down
    to 36 (reverse order). Round 3: a higher ACK for flows 0..35.

    With FLOW_ENTRIES = ACK_SLOTS = n (32 by default, at most 64) an entry
    exists only while its flow has a tracked ACK queued, so the table is full
    only when the queue is: the (n+1)th ACK drops the head from the front
    (freeing its entry) and is tracked; round 1 is ``N`` x n then ``FN`` x
    (100 - n), round 2 supersedes the n queued flows in place (``S`` x n) and
    drops the rest of its 64 from the front, round 3 drops from the front
    again (``FN`` x 36), and ``cam_full`` stays 0. With fewer entries than
    slots the ACKs of flows beyond the table are queued untracked and counted
    ``cam_full``; they never supersede, and still leave in order."""
    entries, slots = P.FLOW_ENTRIES, P.ACK_SLOTS
    assert P.param("ack_queue_limit").default >= slots, "the test fills the whole ACK queue"
    tb, gate, model = await start(dut, mode=AGGRESSIVE)
    flows = distinct_tag_flows(100, first=1000)
    rounds = [[(i, ack(flows[i], A + i)) for i in range(100)],
              [(i, ack(flows[i], A + 5000 + i)) for i in reversed(range(36, 100))],
              [(i, ack(flows[i], A + 9000 + i)) for i in range(36)]]
    want_letters, want_out = table_and_queue_by_hand([a for r in rounds for a in r], entries, slots)
    if entries == slots <= 64:
        # The reading in closed form: round 1 queues the last `slots` flows
        # (the earlier ones dropped from the front), round 2 supersedes them
        # and drops the rest of its 64 from the front, round 3 finds none of
        # its flows queued.
        n = slots
        assert want_letters == ("N" * n + "FN" * (100 - n) + "S" * n + "FN" * (64 - n) +
                                "FN" * 36), "the hand reading"
    e0, r0 = await held(tb, gate, [f for _, f in rounds[0]])
    assert await tb.info("ack_queue_depth") == slots
    for r in rounds[1:]:
        for _, f in r:
            await tb.send(f, gap=PACE_GAP)
        await settle(tb)
    got = decisions(tb, e0)
    assert got == "D" + want_letters, f"decisions {got[1:]!r}, expected {want_letters!r}"
    assert await tb.info("flows_active") == min(entries, slots)
    await release(tb, gate)
    out = [f for _, f in tb.received[r0 + 1:]]
    assert out == want_out, "the ACKs that left, in order"
    cnt = await finish(tb, model)
    assert (cnt["cam_full"], cnt["drop_ack_front"], cnt["acks_superseded"]) == (
        want_letters.count("U"), want_letters.count("F"), want_letters.count("S")), cnt


# --------------------------------------------------------------------------
# Drop from front

class _View:
    """A slice of a TB's record, for scoreboarding a run in phases."""

    def __init__(self, tb, e, s, r, e_end=None, s_end=None, r_end=None):
        self.events = tb.events[e:e_end]
        self.sent = tb.sent[s:s_end]
        self.received = tb.received[r:r_end]


async def shaper_open(tb):
    """A shaper at ~1 s per byte with a 65535-byte bucket: open while the
    bucket lasts (the tests here send a few kB in all), closed by setting
    the bucket to 0 once a frame has pushed ``tat`` into the future."""
    await tb.set_param("shaper_cpb_q16", 0xFFFF_FFFF)
    await tb.set_param("shaper_burst_bytes", 0xFFFF)


async def shaper_held(tb, frames):
    """Send the plug through the open shaper, close it, send ``frames``,
    wait until queued."""
    await tb.drain(quiet_cycles=20)
    e0, r0 = len(tb.events), len(tb.received)
    await tb.send(plug())
    for _ in range(1000):
        if len(tb.received) > r0:
            break
        await RisingEdge(tb.dut.clk)
    else:
        raise AssertionError("the plug did not leave")
    await tb.set_param("shaper_burst_bytes", 0)
    for f in frames:
        await tb.send(f, gap=PACE_GAP)
    await settle(tb)
    return e0, r0


async def shaper_release(tb):
    await tb.set_param("shaper_burst_bytes", 0xFFFF)
    await tb.drain(quiet_cycles=50)


@cocotb.test(timeout_time=100, timeout_unit="ms")
async def test_drop_from_front_with_a_small_queue_limit(dut):
    """ack_queue_limit 4: a fifth ACK that needs a place drops the head; the
    arrival is then processed again from the lookup (spec section 3 step 3),
    which can change its outcome."""
    tb = TB(dut)
    await tb.reset()
    await tb.set_param("ack_mode", AGGRESSIVE)
    await tb.set_param("ack_queue_limit", 4)
    await tb.set_param("data_share", 0)
    await shaper_open(tb)
    model = tb.model(ack_mode=AGGRESSIVE, ack_queue_limit=4, data_share=0)
    w, x, y, z, v = (flow(20 + i) for i in range(5))

    async def scenario(seq, events, out, what):
        names, frames = zip(*seq)
        e0, r0 = await shaper_held(tb, list(frames))
        await shaper_release(tb)
        check_scenario(tb, e0, r0, frames=frames, names=names, events=events, out=out, what=what)

    # 1. Plain: the head (W1) goes, V1 joins the tail. X2 then supersedes X1
    #    in place (no drop: supersession needs no room).
    await scenario([("W1", ack(w, A)), ("X1", ack(x, A)), ("Y1", ack(y, A)), ("Z1", ack(z, A)),
                    ("V1", ack(v, A)), ("X2", ack(x, A + M))],
                   "NNNNFNS", ["X2", "Y1", "Z1", "V1"], "plain drop from front")
    # 2. The head is the arriving flow's only ACK and cannot be superseded
    #    (a dup): dropping it frees the flow's entry, the re-processed arrival
    #    is a miss and gets a new entry, which the next ACK supersedes.
    await scenario([("W1", ack(w, A)), ("X1", ack(x, A)), ("Y1", ack(y, A)), ("Z1", ack(z, A)),
                    ("W2", ack(w, A)), ("W3", ack(w, A + M))],
                   "NNNNFNS", ["X1", "Y1", "Z1", "W3"], "drop frees the arriving flow's entry")
    # 3. A tag collision: B's tag hits A's entry, B would be untracked; the
    #    queue is full, A1 (head) is dropped, which frees the entry: B1 is
    #    re-processed as a miss and is tracked (no collision counted), so B2
    #    supersedes it.
    fa, fb = colliding_flows()
    await scenario([("A1", ack(fa, A)), ("X1", ack(x, A)), ("Y1", ack(y, A)), ("Z1", ack(z, A)),
                    ("B1", ack(fb, A)), ("B2", ack(fb, A + M))],
                   "NNNNFNS", ["X1", "Y1", "Z1", "B2"], "collision resolved by the drop")
    cnt = await tb.counters()
    assert cnt["drop_ack_front"] == 3 and cnt["cam_collisions"] == 0, cnt
    # The scoreboard runs in phases: the model's limit changes where the
    # hardware's does.
    model = scoreboard(_View(tb, 0, 0, 0), model)
    e1, s1, r1 = len(tb.events), len(tb.sent), len(tb.received)

    # 4. Lowering the limit under a full queue: limit 8, eight ACKs queued;
    #    limit 3. An ACK that supersedes (Q7' over Q7) needs no room: no drop.
    #    The next ACK that needs a place drops from the front until it fits
    #    (8 -> 2: six drops).
    await tb.set_param("ack_queue_limit", 8)
    model.ack_limit = 8
    flows = [flow(30 + i) for i in range(9)]
    seq = [(f"Q{i}", ack(flows[i], A)) for i in range(9)] + [("Q7'", ack(flows[7], A + M))]
    names, frames = zip(*seq)
    e0, r0 = await shaper_held(tb, list(frames[:8]))
    assert await tb.info("ack_queue_depth") == 8
    model = scoreboard(_View(tb, e1, s1, r1), model)
    e1, s1, r1 = len(tb.events), len(tb.sent), len(tb.received)
    await tb.set_param("ack_queue_limit", 3)
    model.ack_limit = 3
    await tb.send(frames[9], gap=PACE_GAP)          # Q7'
    await tb.send(frames[8], gap=PACE_GAP)          # Q8
    await settle(tb)
    await shaper_release(tb)
    check_scenario(tb, e0, r0, frames=frames[:8] + (frames[9], frames[8]),
                   names=names[:8] + (names[9], names[8]), events="N" * 8 + "S" + "F" * 6 + "N",
                   out=["Q6", "Q7'", "Q8"], what="limit lowered")
    cnt = await tb.counters()
    model = scoreboard(_View(tb, e1, s1, r1), model, counters=cnt)
    model.check_invariants()
    assert cnt["drop_ack_front"] == 3 + 6, cnt


# --------------------------------------------------------------------------
# A full queue drops covered ACKs first

@cocotb.test(timeout_time=100, timeout_unit="ms")
async def test_a_full_queue_drops_covered_acks_before_the_front(dut):
    """Conservative mode, ack_queue_limit 4 (issue 9, item 4). A flow's older
    ACK whose news its next ACK carries (the older of a conservative pair) is
    *covered*; a full queue removes a covered ACK first, from wherever it is
    in the queue (``DROP_ACK_COVERED``; the ACK that covers it stays in its
    place), and drops from the front only when no covered ACK is queued."""
    tb = TB(dut)
    await tb.reset()
    await tb.set_param("ack_mode", CONSERVATIVE)
    await tb.set_param("ack_queue_limit", 4)
    await tb.set_param("data_share", 0)
    await shaper_open(tb)
    model = tb.model(ack_mode=CONSERVATIVE, ack_queue_limit=4, data_share=0)
    fa, fb, fc, fd, fe, fx = (flow(40 + i) for i in range(6))

    async def scenario(seq, events, out, what):
        names, frames = zip(*seq)
        e0, r0 = await shaper_held(tb, list(frames))
        await shaper_release(tb)
        check_scenario(tb, e0, r0, frames=frames, names=names, events=events, out=out, what=what)

    # 1. [B1 A1 A2 C1], A2 covers A1. D1 needs a place: A1 goes from the
    #    middle; B1, the only ACK of its flow, stays.
    await scenario([("B1", ack(fb, A)), ("A1", ack(fa, A)), ("A2", ack(fa, A + M)), ("C1", ack(fc, A)),
                    ("D1", ack(fd, A))],
                   "NNNNCN", ["B1", "A2", "C1", "D1"], "covered ACK first")
    # 2. The covering ACK is not the newest: A3 (ECE set) does not cover A2
    #    and is appended; C1 drops A1, A2 and A3 stay. E1 then finds nothing
    #    covered and drops the head.
    await scenario([("A1", ack(fa, A)), ("A2", ack(fa, A + M)), ("A3", ack(fa, A + 2 * M, flags="AE")),
                    ("B1", ack(fb, A)), ("C1", ack(fc, A)), ("E1", ack(fe, A))],
                   "NNNNCNFN", ["A3", "B1", "C1", "E1"], "covering ACK not the newest")
    # 3. The arrival's own flow: A3, a duplicate of A2, cannot supersede it;
    #    A1 is dropped, and A3, looked up again, joins the tail.
    await scenario([("A1", ack(fa, A)), ("A2", ack(fa, A + M)), ("B1", ack(fb, A)), ("X1", ack(fx, A)),
                    ("A3", ack(fa, A + M))],
                   "NNNNCN", ["A2", "B1", "X1", "A3"], "the arrival's own flow")
    # 4. Covered ACKs not next to their coverer, one at the head: [A1 B1 A2
    #    G1], then [B1 G1 A2 H1] with G2 covering G1 behind A2.
    fg, fh, fi = flow(46), flow(47), flow(48)
    await scenario([("A1", ack(fa, A)), ("B1", ack(fb, A)), ("A2", ack(fa, A + M)), ("G1", ack(fg, A)),
                    ("H1", ack(fh, A))],
                   "NNNNCN", ["B1", "A2", "G1", "H1"], "covered ACK at the head")
    await scenario([("B1", ack(fb, A)), ("G1", ack(fg, A)), ("X1", ack(fx, A)), ("G2", ack(fg, A + M)),
                    ("I1", ack(fi, A))],
                   "NNNNCN", ["B1", "X1", "G2", "I1"], "covered ACK in the middle")
    cnt = await finish(tb, model)
    assert (cnt["drop_ack_covered"], cnt["drop_ack_front"]) == (5, 1), cnt
