"""The replay path end to end: Verilated RTL in the C++ harness, checked
against the golden model, and the ``ackfilter replay`` command on pcaps.

The harness binary is built once (about two minutes) and cached under build/.
"""

import json
import subprocess
import sys

import pytest

from ackfilter import params
from ackfilter.sim import pcap, traces
from ackfilter.sim.random_trace import random_trace
from ackfilter.model import FilterModel
from ackfilter.model.flowq import quantum_for_cpb
from ackfilter.model.shaper import LinkAccounting
from ackfilter.model.scoreboard import check_run
from ackfilter.sim.replay import replay


@pytest.mark.parametrize("mode,elab", [
    ("conservative", {"flow_queues": 0}),                  # the data FIFO (params' sizes)
    ("aggressive", {"ack_slots": 32, "flow_entries": 8, "flow_queues": 0}),  # more queued flows than entries
])
def test_random_trace_of_ten_thousand_frames_matches_the_model(mode, elab):
    # 300 flows, a shaped uplink so that ACKs queue up, an ACK queue limit
    # short enough that drop-from-front happens too.
    frames = random_trace(11, 10_000, 300)
    limit = 24
    res = replay(frames, uplink_rate_bps=200_000_000, ack_mode=mode, ack_slots=limit,
                 events=True, elab=elab)
    assert res.info["data_queues"] == 0
    model = FilterModel(ack_mode=params.ACK_FILTER_MODES[mode], ack_queue_limit=limit,
                        ack_slots=elab.get("ack_slots", params.ACK_SLOTS),
                        flow_entries=elab.get("flow_entries", params.FLOW_ENTRIES))
    check_run(model, [f for _t, f in frames], res.events, [f for _t, f in res.frames_out],
              counters=res.counters)
    c = res.counters
    assert c["frames_in"] == 10_000
    assert c["acks_superseded"] > 100 and c["drop_ack_front"] > 0
    if "flow_entries" in elab:
        assert c["cam_full"] > 0
    assert res.protocol_errors == 0


@pytest.mark.parametrize("mode", ["off", "conservative"])
def test_the_flow_queue_core_matches_the_model(mode):
    # The board's core, with per-flow data queues (spec section 12): 300
    # flows, data and ACKs, a shaped uplink that fills the buffer (overflow
    # drops from the fattest queue), DRR with the quantum of the shaped rate
    # and the credit charged with the link accounting (the shaper's defaults)
    # times the queue's host's bulk queues (its 64 host buckets).
    frames = random_trace(13, 10_000, 300)
    rate, limit = 200_000_000, 24
    res = replay(frames, uplink_rate_bps=rate, ack_mode=mode, ack_slots=limit, events=True)
    assert params.FLOW_QUEUES and res.info["data_queues"] == params.FLOW_ENTRIES + 1
    assert res.model_options()["quantum"] == quantum_for_cpb(params.cpb_q16_for_rate(rate))
    assert res.info["host_buckets"] == res.model_options()["host_buckets"] == params.HOST_BUCKETS == 64
    model = FilterModel(ack_mode=params.ACK_FILTER_MODES[mode], ack_queue_limit=limit, flow_queues=True,
                        quantum=quantum_for_cpb(params.cpb_q16_for_rate(rate)),
                        charge=LinkAccounting().charge, host_buckets=64)
    check_run(model, [f for _t, f in frames], res.events, [f for _t, f in res.frames_out],
              counters=res.counters)
    c = res.counters
    assert c["frames_in"] == 10_000 and c["drop_data_overflow"] > 0, c
    if mode != "off":
        assert c["acks_superseded"] > 100, c
    assert res.protocol_errors == 0


def test_output_times_follow_the_shaper_rate():
    flow = traces.Flow(src="10.0.0.2", dst="203.0.113.5", sport=5000, dport=80)
    frames = [(0.0, traces.tcp_frame(flow, seq=1 + 1460 * i, ack=1, flags="A",
                                     payload=bytes(1460), ip_id=i)) for i in range(200)]
    rate = 10_000_000
    res = replay(frames, uplink_rate_bps=rate, ack_mode="conservative",
                 csr={"shaper_burst_bytes": 0, "shaper_overhead_bytes": 24})
    times = [t for t, _f in res.frames_out]
    c = res.counters
    # A full buffer drops (from the fattest queue's head with flow queues).
    assert len(times) == 200 - c["drop_data_full"] - c["drop_data_overflow"] < 200
    # Each frame is charged (1514 + 24) bytes at 10 Mb/s: 1.2304 ms.
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert all(abs(g - 1538 * 8 / rate) < 1e-6 for g in gaps), (min(gaps), max(gaps))


@pytest.mark.parametrize("flags,payload", [("A", 0), ("PA", 100)])
def test_a_lone_frame_leaves_at_once_not_when_the_next_one_arrives(flags, payload):
    """The harness skips cycles while the core says it is idle; a frame in
    flight must keep it from saying so. A pure ACK (ACK queue) and a data
    frame (data ring and its descriptor FIFO) alone on an unshaped link leave
    within 2 us of arriving (about 100 cycles: input, parse, queue, egress),
    not 1 ms later with the next frame (found with real TCP: a SYN waited
    in the descriptor FIFO until the SYN's retransmission one second later)."""
    flow = traces.Flow(src="10.0.0.2", dst="203.0.113.5", sport=5000, dport=80)
    frame = traces.tcp_frame(flow, seq=1, ack=1, flags=flags, payload=bytes(payload))
    res = replay([(0.0, frame), (0.001, frame)], uplink_rate_bps=0)
    first, second = (t for t, _f in res.frames_out)
    assert first < 2e-6, f"first frame left at {first * 1e6:.2f} us"
    assert 0.001 < second < 0.001 + 2e-6


def _data_frames_of(lengths):
    """Data frames (PSH|ACK with payload, one flow) of exactly these lengths, all at t = 0."""
    flow = traces.Flow(src="10.0.0.2", dst="203.0.113.5", sport=5000, dport=80)
    hdr = len(traces.tcp_frame(flow, flags="PA", pad_to=0))
    frames = [(0.0, traces.tcp_frame(flow, seq=1 + 1460 * i, ack=1, flags="PA",
                                     payload=bytes(n - hdr), ip_id=i, pad_to=0))
              for i, n in enumerate(lengths)]
    assert [len(f) for _t, f in frames] == lengths
    return frames


def test_back_to_back_frames_come_and_go_at_exactly_one_gigabit():
    """The harness's MACs run at 1 Gb/s whatever the core's clock: a frame of L
    bytes takes (L + 24) byte times, F_SYS_HZ / 125e6 cycles each, with the
    fractions carried on (a short last word counts its bytes only). Frames of
    one length come and go exactly that far apart on average; of mixed lengths
    none leaves sooner after the one before than that one's wire time."""
    from ackfilter.sim.wire import frame_cycles
    same = _data_frames_of([62] * 200)              # 86 byte times: 34.4 cycles at 50 MHz
    res = replay(same, uplink_rate_bps=0)
    assert [f for _t, f in res.frames_out] == [f for _t, f in same]
    starts = res.out_cycles
    assert abs(starts[-1] - starts[0] - 199 * frame_cycles(62)) <= 1, (starts[0], starts[-1])
    lengths = [60, 61, 62, 63, 64, 99, 555, 1514] * 10
    mixed = _data_frames_of(lengths)
    res = replay(mixed, uplink_rate_bps=0)
    assert [f for _t, f in res.frames_out] == [f for _t, f in mixed]
    starts = res.out_cycles
    for a, b, n in zip(starts, starts[1:], lengths):
        assert b - a >= int(frame_cycles(n)), (a, b, n)


@pytest.mark.parametrize("data_flows", [1, params.FLOW_ENTRIES + 1])
def test_the_flow_queue_core_keeps_up_with_min_size_frames_at_one_gigabit(data_flows):
    """Line rate is the core's to keep, with flow queues too (issue 26): 64-byte
    frames back to back, half pure ACKs of 256 flows, half the data of one
    upload or of as many as there are queues; every frame leaves, at the
    wire's pace (84 byte times each), and nothing is dropped."""
    from ackfilter.sim.bench import line_rate_frames
    from ackfilter.sim.wire import frame_cycles
    frames = line_rate_frames(4000, data_flows=data_flows)
    res = replay(frames, ack_mode="conservative")       # the board's core
    assert res.info["data_queues"] == params.FLOW_ENTRIES + 1
    c = res.counters
    assert {x.name: c[x.name] for x in params.COUNTERS if x.is_drop and c[x.name]} == {}
    assert c["frames_out"] == len(frames) and params.frames_accounted(c) == len(frames)
    assert res.cycles <= len(frames) * frame_cycles(60) + 200, res.cycles / len(frames)


def test_the_ingress_takes_minimum_frames_offered_a_word_a_cycle_without_waiting():
    """The ingress takes a frame's words as they come and needs three cycles
    after its last (the parser's); the key slot it writes meanwhile (14
    cycles from the push) is written before a frame of 53 bytes or more has
    all its words in, so 60-byte frames offered back to back, a word a cycle,
    go in 15 words and 4 cycles apart (the core's input register takes one
    more), whatever the lanes hold between them: the queue manager's
    arrival events come that far apart on the data FIFO's core, whose
    manager is never the slower."""
    from ackfilter.sim.bench import arrival_cycles, line_rate_frames
    from ackfilter.sim.replay import DATA_FIFO
    frames = line_rate_frames(600)
    res = replay(frames, ack_mode="conservative", feed=(1, 0), events=True, elab=DATA_FIFO)
    arrivals = arrival_cycles(res.events)
    assert res.counters["drop_overrun"] == 0 and len(arrivals) == len(frames)
    # An arrival is reported when the manager has decided it: up to about 30
    # cycles after the take, by what the decision took (a drop to make room,
    # the start of a record write), so the span has that much slack.
    assert (arrivals[-1] - arrivals[0]) / (len(arrivals) - 1) <= 19.0 + 30 / (len(arrivals) - 1), \
        arrivals[:10]


@pytest.mark.parametrize("mbps", [100, 10])
def test_at_100_and_10_mbps_frames_come_and_go_at_that_line_rate(mbps):
    """`--mbps`: both MAC models at a Fast (or plain) Ethernet rate, each byte
    10 (100) times as long: 200 frames of 62 bytes leave exactly (L + 24)
    byte times apart on average (344 cycles at 100 Mb/s, 3440 at 10, at 50
    MHz), none lost, and the output keeps the input's rate: 1.000 of it."""
    from ackfilter.sim.wire import frame_cycles
    same = _data_frames_of([62] * 200)
    res = replay(same, uplink_rate_bps=0, link_mbps=mbps)
    assert [f for _t, f in res.frames_out] == [f for _t, f in same]
    starts = res.out_cycles
    want = 199 * frame_cycles(62) * (1000 // mbps)
    assert abs(starts[-1] - starts[0] - want) <= 1, (starts[-1] - starts[0], float(want))


def _mixed_data_frames(n, seed):
    """``n`` data frames (PSH|ACK, so none is a pure ACK) of 60..1514 bytes
    from one flow, all offered at once, with their IP packet lengths."""
    import random
    rng = random.Random(seed)
    flow = traces.Flow(src="10.0.0.2", dst="203.0.113.5", sport=5000, dport=80)
    out = []
    for i in range(n):
        payload = rng.choice([0, 1, 6, 7, 100, 500, 1000, 1459, 1460])
        out.append((0.0, traces.tcp_frame(flow, seq=1 + 1460 * i, ack=1, flags="PA",
                                          payload=bytes(payload), ip_id=i)))
    return out


def grant_late_cycles(res, charge=1538):
    """Cycles a departure may start after the shaper allows it, on the core
    ``res`` replayed: the grant's 0..3 (SHAPER_LATENCY_CYCLES in the
    scheduler's cocotb bench), and with flow queues the DRR's pick (two
    cycles) and one step per quantum a backlogged flow's deficit takes back
    (a frame charged ``charge`` bytes; docs/design.md section 3)."""
    quantum = res.model_options().get("quantum")
    return 3 if quantum is None else 3 + 2 + -(-charge // quantum)


def arrival_hold_cycles(res):
    """Cycles a data arrival may hold a departure back: its RED decision,
    and with flow queues its flow's lookup first (three cycles)."""
    return params.RED_DECISION_LEAD + 2 + (3 if res.info["data_queues"] else 0)


@pytest.mark.parametrize("words", [None, "docsis", "pppoe-ptm ether-vlan", "pppoa-vcmux", "overhead -30"])
def test_output_times_follow_the_charged_bytes(words):
    # 10 Mb/s is a whole number of cycles per byte (F_SYS_HZ * 8 / 1e7: 40 at
    # 50 MHz); with no burst each frame starts its predecessor's charge later,
    # never sooner, plus the 0..3 cycles of the grant and, while frames still
    # arrive, the data arrival the queue manager may be handling when the
    # shaper opens (its RED decision: RED_DECISION_LEAD + 2 cycles; the
    # scheduler's cocotb bench measures the same bound).
    from ackfilter.model.cake import cake_accounting
    from ackfilter.model.shaper import LinkAccounting
    acc = LinkAccounting() if words is None else cake_accounting(words)
    frames = _mixed_data_frames(60, seed=len(words or ""))
    rate = 10_000_000
    res = replay(frames, uplink_rate_bps=rate, accounting=None if words is None else acc,
                 csr={"shaper_burst_bytes": 0})
    assert res.params["shaper_overhead_bytes"] == acc.overhead_bytes          # read back signed
    assert LinkAccounting.from_registers(res.params) == acc
    out = res.frames_out
    c = res.counters
    assert len(out) == 60 - c["drop_data_full"] - c["drop_data_overflow"] >= 20
    gaps = [(b[0] - a[0], acc.charge(a[1]) * 8 / rate) for a, b in zip(out, out[1:])]
    cycle = 1 / params.F_SYS_HZ
    grant = grant_late_cycles(res, max(acc.charge(f) for _t, f in frames))
    late_max = (grant + arrival_hold_cycles(res)) * cycle
    assert all(want - cycle / 2 <= got <= want + late_max for got, want in gaps), \
        [(round((got - want) / cycle), n) for n, (got, want) in enumerate(gaps) if got - want > 3 * cycle]
    # Once every frame has arrived, only the grant's latency remains.
    assert all(abs(got - want) <= (grant + 1) * cycle for got, want in gaps[-10:]), gaps[-10:]
    # The charges differ from the default's where they should (the registers took).
    if words is not None:
        assert any(acc.charge(f) != LinkAccounting().charge(f) for _t, f in out)


def test_full_size_frames_leave_one_charge_apart_under_docsis_and_by_default():
    # Hand numbers: a 1514-byte frame (IP 1500) is charged 1518 under docsis
    # (1500 + 18) and 1538 by default (1514 + 24): 1.2144 ms and 1.2304 ms at 10 Mb/s.
    from ackfilter.model.cake import cake_accounting
    flow = traces.Flow(src="10.0.0.2", dst="203.0.113.5", sport=5000, dport=80)
    frames = [(0.0, traces.tcp_frame(flow, seq=1 + 1460 * i, ack=1, flags="PA",
                                     payload=bytes(1460), ip_id=i)) for i in range(12)]
    for acc, gap_s in ((None, 1538 * 8 / 1e7), (cake_accounting("docsis"), 1518 * 8 / 1e7)):
        res = replay(frames, uplink_rate_bps=10_000_000, accounting=acc, csr={"shaper_burst_bytes": 0})
        times = [t for t, _f in res.frames_out]
        assert len(times) == 12
        # With no burst a departure's grant latency adds to its gap.
        late = (grant_late_cycles(res) + 1) / params.F_SYS_HZ
        assert all(gap_s <= b - a <= gap_s + late for a, b in zip(times, times[1:])), gap_s


def test_replay_command_charges_a_cake_preset(tmp_path):
    frames = _mixed_data_frames(40, seed=3)
    src, dst, stats = tmp_path / "in.pcap", tmp_path / "out.pcap", tmp_path / "stats.json"
    write_pcap(src, frames)
    proc = run_cli("replay", "--in", src, "--out", dst, "--uplink-rate", "10mbit",
                   "--link-preset", "pppoe-ptm", "--overhead", "-20", "--stats", stats, "--quiet")
    assert proc.returncode == 0, proc.stderr
    s = json.loads(stats.read_text())
    assert s["params"]["shaper_overhead_bytes"] == -20 and s["params"]["shaper_link_layer"] == 2
    assert s["params"]["link_accounting"] == "ip - 20, ptm"
    assert s["params"]["link_words"] == "pppoe-ptm overhead -20"
    from ackfilter.model.cake import cake_accounting
    acc = cake_accounting("overhead -20 ptm")
    out = pcap.read_pcap(str(dst), seconds=True)
    assert len(out) >= 20
    # The default bucket (1514 bytes) lets the first frames go at once; once
    # twice that has been charged, each frame leaves its predecessor's charge
    # later, give or take the difference of their grant latencies (the
    # board's core: a DRR step per quantum of deficit; 4 cycles on the FIFO).
    quantum = quantum_for_cpb(params.cpb_q16_for_rate(10_000_000))
    jitter = (4 if not s["info"]["data_queues"] else 3 + 2 + -(-1538 // quantum)) / params.F_SYS_HZ
    charged = 0
    checked = 0
    for (t0, f0), (t1, _f1) in zip(out, out[1:]):
        charged += acc.charge(f0)
        if charged > 2 * 1514:
            assert abs((t1 - t0) - acc.charge(f0) * 8 / 1e7) <= jitter + 1e-9
            checked += 1
    assert checked >= 20


def test_replay_reads_every_csr_word_the_table_names(monkeypatch):
    # Counters beyond the table's last one today are read too: the harness is
    # told the table's last address, not a number of its own.
    base = params.csr_last() + 1
    grown = params.COUNTERS + tuple(params.Counter(f"extra_{k}", base + 2 * k, "a counter to come")
                                    for k in range(3))
    monkeypatch.setattr(params, "COUNTERS", grown)
    flow = traces.Flow(src="10.0.0.2", dst="203.0.113.5", sport=5000, dport=80)
    res = replay([(0.0, traces.tcp_frame(flow, ack=1, flags="PA", payload=b"x"))])
    assert max(res.csr) == base + 5
    assert [res.counters[f"extra_{k}"] for k in range(3)] == [0, 0, 0]   # no such register: 0
    assert res.counters["frames_in"] == 1


def write_pcap(path, frames):
    pcap.write_pcap(str(path), frames, seconds=True)


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "ackfilter.cli", *map(str, args)],
                          capture_output=True, text=True)


def test_replay_command_writes_pcap_and_stats_that_account_for_every_frame(tmp_path):
    frames = traces.demo_scenario(2, duration_s=0.3, uplink_bps=1_000_000)
    src, dst, stats = tmp_path / "in.pcap", tmp_path / "out.pcap", tmp_path / "stats.json"
    write_pcap(src, frames)
    proc = run_cli("replay", "--in", src, "--out", dst, "--uplink-rate", "1mbit",
                   "--ack-filter", "aggressive", "--stats", stats, "--quiet")
    assert proc.returncode == 0, proc.stderr
    s = json.loads(stats.read_text())
    out = pcap.read_pcap(str(dst), seconds=True)
    assert s["frames_in"] == len(frames)
    assert s["frames_out"] == len(out)
    assert s["frames_in"] == s["frames_out"] + s["acks_superseded"] + sum(s["drops"].values())
    assert s["acks_superseded"] > 0
    # Every frame that left is one that arrived, unchanged, and not earlier.
    arrival = {f: t for t, f in frames}
    for t, f in out:
        assert f in arrival
        assert t >= arrival[f] - 1e-9
    assert [t for t, _ in out] == sorted(t for t, _ in out)


def test_replay_command_rejects_a_capture_that_is_not_ethernet(tmp_path):
    from scapy.layers.inet import IP, TCP
    from scapy.utils import wrpcap
    src = tmp_path / "raw_ip.pcap"
    wrpcap(str(src), [IP() / TCP()])
    proc = run_cli("replay", "--in", src, "--out", tmp_path / "o.pcap")
    assert proc.returncode == 2
    assert "Ethernet" in proc.stderr
