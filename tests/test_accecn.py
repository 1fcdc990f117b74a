"""Accurate-ECN-aware supersession (spec section 3, "AccECN"; RFC 9768).

Hand cases, each with the decisions worked out from the spec's rules by hand
(not by the model): through the golden model, then all of them through the
Verilated RTL in the replay harness, decision by decision against both the
hand table and the model. Then AccECN download flows built from the RFC
(``ackfilter.sim.accecn``: full, cut-short and absent options, both option
kinds, IPv4, IPv6, VLAN, PPPoE) through the RTL at a slow uplink, checked
against the model and, independently of it, against the receivers' own
counts: a sender decodes every CE mark and byte from what left.
"""

import collections

import pytest

from ackfilter import params
from ackfilter.model import FilterModel
from ackfilter.model.pktparse import OPT_ACCECN0, OPT_ACCECN1, classify
from ackfilter.model.scoreboard import check_run
from ackfilter.sim import accecn, traces
from ackfilter.sim.replay import replay

AGGRESSIVE = params.ACK_FILTER_MODES["aggressive"]
LETTER = {"ARRIVE_ACK_NEW": "N", "ARRIVE_ACK_SUPERSEDE": "S"}
A, M = 0x2000_0000, 1448
C0 = (0x10_0000, 0x20_0000, 0x30_0000)        # counters a case starts from


def aack(flow, n, ackno, ace, counters=C0, *, kind=OPT_ACCECN0, fields=3, option=True, ecn=0):
    """A pure ACK of case flow ``flow`` with ACE field ``ace`` (mod 8) and an
    AccECN option of ``kind`` carrying the first ``fields`` counters in that
    kind's order (``counters`` given as EE0B, ECEB, EE1B)."""
    fl = traces.Flow(src=f"10.9.{flow >> 8}.{flow & 255 or 1}", sport=41000 + flow)
    opts = [("NOP", None), ("NOP", None), ("Timestamp", (100 + n, 7))]
    if option:
        order = (0, 1, 2) if kind == OPT_ACCECN0 else (2, 1, 0)
        body = b"".join((counters[i] & 0xFF_FFFF).to_bytes(3, "big") for i in order[:fields])
        opts += [(kind, body)] + [("NOP", None)] * (-(2 + len(body)) % 4)
    ace &= 7
    flags = "A" + "E" * (ace & 1) + "C" * (ace >> 1 & 1) + "N" * (ace >> 2)
    return traces.tcp_frame(fl, seq=1, ack=ackno, flags=flags, options=opts, ecn=ecn, ip_id=n,
                            builder="raw")


def grown(by, c=C0):
    return tuple(v + b for v, b in zip(c, by))


# (name, [(ace, counters, keyword args)], decisions in aggressive mode)
CASES = [
    ("equal_ace_growing_counters_supersede", [(5, C0, {}), (5, grown((M, 0, 0)), {})], "NS"),
    ("ace_step_behind_a_new_entry_is_appended", [(5, C0, {}), (6, grown((0, M, 0)), {})], "NN"),
    # X1 is appended behind X0 (ACE 5): its chain's reference. The chain
    # may advance 7 from it (6, 7, then 4 = 12), not 8 (5 = 13).
    ("ace_advances_up_to_7_from_the_ack_ahead",
     [(5, C0, {}), (6, grown((0, M, 0)), {}), (7, grown((0, 2 * M, 0)), {}),
      (12, grown((0, 7 * M, 0)), {}), (13, grown((0, 8 * M, 0)), {})], "NNSSN"),
    ("ace_advance_of_7_from_the_reference_in_one_step",
     [(5, C0, {}), (6, grown((0, M, 0)), {}), (12, grown((0, 7 * M, 0)), {})], "NNS"),
    ("ace_advance_of_8_from_the_reference_in_one_step_is_kept",
     [(5, C0, {}), (6, grown((0, M, 0)), {}), (13, grown((0, 8 * M, 0)), {})], "NNN"),
    ("a_counter_going_back_is_kept", [(5, C0, {}), (5, grown((-1, 0, 0)), {})], "NN"),
    ("a_counter_dropped_from_the_option_is_kept",
     [(5, C0, {}), (5, grown((M, 0, 0)), dict(fields=2))], "NN"),
    ("a_counter_added_to_the_option_supersedes",
     [(5, C0, dict(fields=1)), (5, grown((M, 0, 0)), {})], "NS"),
    ("the_option_dropped_is_kept", [(5, C0, {}), (5, C0, dict(option=False))], "NN"),
    # X1 brings the option under the exact flag rule; the floor (X0) has no
    # counters, so nothing may overwrite X1's.
    ("the_option_added_supersedes_then_is_kept",
     [(5, C0, dict(option=False)), (5, C0, {}), (5, grown((M, 0, 0)), {})], "NSN"),
    ("without_the_option_the_exact_flag_rule",
     [(5, C0, dict(option=False)), (6, C0, dict(option=False))], "NN"),
    ("kind_174_is_compared_counter_by_counter",
     [(5, C0, {}), (5, grown((M, 0, 0)), dict(kind=OPT_ACCECN1))], "NS"),
    ("kind_174_cut_short_carries_ee1b_first",
     [(5, C0, dict(kind=OPT_ACCECN1, fields=1)), (5, grown((0, 0, M)), dict(kind=OPT_ACCECN1, fields=1))],
     "NS"),
    # Top 8 bits of EE0B: 0x10 at the floor; 0x4e is 62 steps on, 0x50 64.
    ("counters_stay_within_2_22_of_the_floor",
     [(5, C0, {}), (5, grown((0x3E_0000, 0, 0)), {}), (5, grown((0x40_0000, 0, 0)), {})], "NSN"),
    ("a_counter_wrapping_at_2_24_still_grows",
     [(5, (0xFF_FF00, 0, 1), {}), (5, (0x100, 0, 1), {})], "NS"),
    ("the_ip_ecn_field_still_must_match",
     [(5, C0, dict(ecn=2)), (5, grown((M, 0, 0)), dict(ecn=3))], "NN"),
]


def case_frames(k, case):
    name, steps, _ = case
    return [aack(k + 1, n, A + n * M, ace, c, **kw) for n, (ace, c, kw) in enumerate(steps)]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_model_decides_as_the_spec_says(case):
    m = FilterModel(ack_mode=AGGRESSIVE)
    frames = case_frames(0, case)
    assert all(classify(f, ack_mode=AGGRESSIVE).eligible for f in frames)
    got = "".join(LETTER[ev] for f in frames for ev in m.arrive(f))
    assert got == case[2]


def test_rtl_decides_every_hand_case_as_the_spec_and_the_model():
    # The cases, each on its own flow, in batches that fit the ACK queue,
    # each batch behind a 1500-byte data frame that holds the 10 kb/s uplink
    # for 1.2 s: nothing else leaves before the batch's last frame arrives,
    # so every decision sees its case's whole queue.
    plug = traces.tcp_frame(traces.Flow(sport=9), seq=1, ack=1, flags="PA", payload=bytes(1446))
    batches = [[]]
    for k, case in enumerate(CASES):
        if 1 + sum(len(c[1]) for _k, c in batches[-1]) + len(case[1]) >= params.ACK_SLOTS:
            batches.append([])
        batches[-1].append((k, case))
    assert sum(len(b) for b in batches) == len(CASES)
    for batch in batches:
        frames, want = [plug], []
        for k, case in batch:
            frames += case_frames(k, case)
            want += list(case[2])
        assert len(frames) < params.ACK_SLOTS
        res = replay([(0.0, f) for f in frames], uplink_rate_bps=10_000, ack_mode="aggressive", events=True)
        arrivals = [LETTER[ev] for _c, ev in res.events if ev in LETTER]
        assert res.events[0][1] == "ARRIVE_DATA"
        assert "".join(arrivals) == "".join(want)
        check_run(FilterModel(ack_mode=AGGRESSIVE, **res.model_options()), frames, res.events, [f for _t, f in res.frames_out],
                  counters=res.counters)


class _LossTrackingModel(FilterModel):
    """The model, noting the ACKs it dropped from the front (a loss by the
    spec: the ACE check starts again after one)."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.front_dropped = set()

    def _remove_head_ack(self):
        self.front_dropped.add(self.ack_queue[0].frame)
        return super()._remove_head_ack()


def _run_flows(seed, mode, *, ack_slots=None, rate=1_000_000):
    frames, truth = accecn.accecn_trace(seed, segments=2500)
    res = replay(frames, uplink_rate_bps=rate, ack_mode=mode, ack_slots=ack_slots, events=True)
    kw = {} if ack_slots is None else {"ack_queue_limit": ack_slots}
    model = _LossTrackingModel(ack_mode=params.ACK_FILTER_MODES[mode], **kw, **res.model_options())
    out = [f for _t, f in res.frames_out]
    check_run(model, [f for _t, f in frames], res.events, out, counters=res.counters)
    per_flow = collections.defaultdict(list)
    for _t, f in frames:
        per_flow[truth[f][0]].append((f, truth[f][1]))
    removed = {}
    for k, sent in per_flow.items():
        mine = {f for f, _ in sent}
        removed[k] = check_flow_with_losses(sent, [f for f in out if f in mine], model.front_dropped)
    return res, removed, per_flow, out


def check_flow_with_losses(sent, received, lost):
    """:func:`accecn.check_flow` on the stretches between ACKs lost from the
    front of a full queue (each stretch starts afresh)."""
    if not lost & {f for f, _ in sent}:
        return accecn.check_flow(sent, received)
    removed, start = 0, 0
    got = set(received)
    for i, (f, _) in enumerate(sent + [(None, None)]):
        if f is None or f in lost:
            part = sent[start:i]
            if part:
                # A stretch before a loss may have handed its news to the
                # lost ACK (superseded by it): its newest need not leave.
                removed += accecn.check_flow(part, [g for g, _ in part if g in got],
                                             newest_leaves=f is None)
            start = i + 1
    return removed


# The uplink rate of the lossless run: conservative keeps two ACKs a flow and
# appends every ACE step its chain cannot take, so at 1 Mb/s the default
# core's 32 ACK slots fill (4 ACKs dropped from the front); at 1.25 Mb/s
# they do not, and 905 of 1,394 ACKs are still superseded.
@pytest.mark.parametrize("mode,rate", [("aggressive", 1_000_000), ("conservative", 1_250_000)])
def test_accecn_flows_through_the_rtl_keep_every_ce_mark_readable(mode, rate):
    res, removed, per_flow, out = _run_flows(1, mode, rate=rate)
    c = res.counters
    assert c["drop_ack_front"] == 0, c            # the strict check, no losses
    assert res.protocol_errors == 0
    options = ("full", "full", "short", "none")
    # AccECN flows are filtered: most of their ACKs are superseded, also
    # across CE marks (an output ACK whose ACE moved while ACKs between it
    # and the previous output were removed).
    for k, sent in per_flow.items():
        assert removed[k] > len(sent) // 3, (k, options[k], removed[k], len(sent))
    across = 0
    for k in (0, 1):
        index = {f: i for i, (f, _) in enumerate(per_flow[k])}
        left = [index[f] for f in out if f in index]
        for i, j in zip(left, left[1:]):
            a, b = per_flow[k][i][1], per_flow[k][j][1]
            across += j - i > 1 and b.cep != a.cep
    assert across > 20, across


def test_accecn_flows_with_a_short_queue_lose_acks_only_from_the_front():
    # 8 ACK slots for 4 flows: the queue is full now and then, covered ACKs
    # go first, then the head. Between the losses every stretch is checked.
    res, removed, per_flow, out = _run_flows(2, "conservative", ack_slots=8, rate=200_000)
    c = res.counters
    assert c["drop_ack_front"] > 0 and c["drop_ack_covered"] > 0, c
