"""The replay path end to end: Verilated RTL in the C++ harness, checked
against the golden model, and the ``ackfilter replay`` command on pcaps.

The harness binary is built once (about two minutes) and cached under build/.
"""

import json
import subprocess
import sys

import pytest

from ackfilter import params, traces
from ackfilter.model import FilterModel
from ackfilter.model.scoreboard import check_run
from ackfilter.replay import replay


@pytest.mark.parametrize("mode,elab", [
    ("conservative", {}),                                  # the default core: 64 slots, 64 flows
    ("aggressive", {"ack_slots": 32, "flow_entries": 8}),  # more queued flows than flow entries
])
def test_random_trace_of_ten_thousand_frames_matches_the_model(mode, elab):
    # 300 flows, a shaped uplink so that ACKs queue up, an ACK queue limit
    # short enough that drop-from-front happens too.
    frames = traces.random_trace(11, 10_000, 300)
    limit = 24
    res = replay(frames, uplink_rate_bps=200_000_000, ack_mode=mode, ack_slots=limit,
                 events=True, elab=elab)
    model = FilterModel(ack_mode=params.ACK_FILTER_MODES[mode], ack_queue_limit=limit,
                        ack_slots=elab.get("ack_slots", 64), flow_entries=elab.get("flow_entries", 64))
    check_run(model, [f for _t, f in frames], res.events, [f for _t, f in res.frames_out],
              counters=res.counters)
    c = res.counters
    assert c["frames_in"] == 10_000
    assert c["acks_superseded"] > 100 and c["drop_ack_front"] > 0
    if elab:
        assert c["cam_full"] > 0
    assert res.protocol_errors == 0


def test_output_times_follow_the_shaper_rate():
    flow = traces.Flow(src="10.0.0.2", dst="203.0.113.5", sport=5000, dport=80)
    frames = [(0.0, traces.tcp_frame(flow, seq=1 + 1460 * i, ack=1, flags="A",
                                     payload=bytes(1460), ip_id=i)) for i in range(200)]
    rate = 10_000_000
    res = replay(frames, uplink_rate_bps=rate, ack_mode="conservative",
                 csr={"shaper_burst_bytes": 0, "shaper_overhead_bytes": 24})
    times = [t for t, _f in res.frames_out]
    assert len(times) == 200 - res.counters["drop_data_full"]
    # Each frame is charged (1514 + 24) bytes at 10 Mb/s: 1.2304 ms.
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert all(abs(g - 1538 * 8 / rate) < 1e-6 for g in gaps), (min(gaps), max(gaps))


def write_pcap(path, frames):
    traces.write_pcap(str(path), frames)


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
    out = traces.read_pcap(str(dst))
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
