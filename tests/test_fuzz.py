"""The mutation campaign (``ackfilter.sim.fuzz``): the committed captures, the mutator,
and a short campaign through the RTL (the default replay binary, shared with
``test_replay.py``).

Checksums are verified with Scapy here, independently of the mutator's and
the checker's own sums.
"""

import gzip
import json
import os
import random
import subprocess
import sys

import pytest
from scapy.utils import checksum
from scapy.layers.inet import IP, TCP, in4_chksum
from scapy.layers.inet6 import IPv6, in6_chksum
from scapy.layers.l2 import Ether
from scapy.layers.ppp import PPPoE  # noqa: F401  (Ether then dissects PPPoE sessions)

from ackfilter.sim.random_trace import random_trace
from ackfilter.sim.fuzz import campaign
from ackfilter.sim.pcap import read_pcap, write_pcap
from ackfilter.sim.fuzz import checker
from ackfilter.sim.fuzz import mutate

SHORT_FRAMES = 50_000


def run_cli(*args):
    env = dict(os.environ, PYTHONPATH=str(campaign.REPO_ROOT / "hdl"))
    return subprocess.run([sys.executable, "-m", "ackfilter.cli", *args], capture_output=True,
                          text=True, env=env)


@pytest.fixture(scope="module")
def captures():
    return campaign.load_captures()


def scapy_checksums_ok(frame):
    """(IPv4 header checksum ok, or None for IPv6; TCP checksum ok), by Scapy's sums over the
    bytes as received (re-serializing would "repair" malformed options)."""
    pkt = Ether(frame)
    if IP in pkt:
        ip = pkt[IP]
        raw = bytes(ip.original)
        return checksum(raw[:4 * ip.ihl]) == 0, in4_chksum(6, ip, raw[4 * ip.ihl:ip.len]) == 0
    ip6 = pkt[IPv6]
    return None, in6_chksum(6, ip6, bytes(ip6.original)[40:40 + ip6.plen]) == 0


# --- the captures --------------------------------------------------------------------

def test_captures_hold_over_a_hundred_thousand_real_frames_within_1514_bytes(captures):
    names = set(captures)
    assert {"download-loss", "ecn", "upload-and-downloads", "interactive", "ipv6", "vlan"} <= names
    frames = [f for trace in captures.values() for _t, f in trace]
    assert len(frames) >= 100_000
    assert max(len(f) for f in frames) <= 1514          # offloads were off
    for trace in captures.values():                      # time goes forward
        times = [t for t, _f in trace]
        assert times == sorted(times)


def test_captures_show_sack_dsack_ece_ipv6_and_tagged_frames(captures):
    seen = set()
    for name, trace in captures.items():
        for _t, f in trace:
            s = checker.parse_segment(f, slot_bytes=campaign.ack_slot_bytes())
            if s.cls != "ack":
                continue
            if s.sack:
                seen.add("sack")
                if checker.before(s.sack[0][0], s.ack):
                    seen.add("dsack")
            if s.flags & checker.ECE:
                seen.add("ece")
            seen.add("v6" if s.flow.ipv6 else "v4")
            seen.update(f"tpid {tpid:#06x}" for tpid, _vid in s.flow.tags)
    assert {"sack", "dsack", "ece", "v4", "v6", "tpid 0x8100", "tpid 0x88a8"} <= seen


def test_capture_checksums_are_real(captures):
    # tcpdump saw software checksums (tx offload off): Scapy agrees on a sample.
    rng = random.Random(1)
    frames = [f for trace in captures.values() for _t, f in trace]
    checked = 0
    for f in rng.sample(frames, 1500):
        pkt = Ether(f)
        if TCP not in pkt or (IP not in pkt and IPv6 not in pkt):
            continue
        ip_ok, tcp_ok = scapy_checksums_ok(f)
        assert ip_ok in (None, True) and tcp_ok, f.hex()
        checked += 1
    assert checked > 1000


def test_read_pcap_reads_what_write_pcap_wrote(tmp_path):
    frames = random_trace(3, 300, 10)
    write_pcap(tmp_path / "t.pcap", frames, seconds=True)
    (tmp_path / "t.pcap.gz").write_bytes(gzip.compress((tmp_path / "t.pcap").read_bytes()))
    for name in ("t.pcap", "t.pcap.gz"):
        back = read_pcap(tmp_path / name, seconds=True, strict=True)
        assert [f for _t, f in back] == [f for _t, f in frames]
        assert all(abs(a - b) < 1e-9 for (a, _), (b, _) in zip(back, frames))
    (tmp_path / "cut.pcap").write_bytes((tmp_path / "t.pcap").read_bytes()[:-5])
    with pytest.raises(ValueError, match="cut short"):
        read_pcap(tmp_path / "cut.pcap", seconds=True, strict=True)


# --- the mutator ---------------------------------------------------------------------

def sample_frames(captures, n=400, seed=2):
    rng = random.Random(seed)
    frames = [f for trace in captures.values() for _t, f in trace]
    pool = rng.sample(frames, n) + [f for _t, f in random_trace(seed, n, 20)]
    return [f for f in pool if mutate.layout(f) is not None and TCP in Ether(f)]


@pytest.mark.parametrize("name", ["nudge_ack", "nudge_sack", "nudge_ts", "flags", "tcp_options",
                                  "ip_options", "ecn"])
def test_mutations_said_to_keep_checksums_valid_do(captures, name):
    rng = random.Random(name)
    changed = 0
    for f in sample_frames(captures):
        if not all(scapy_checksums_ok(f)[k] in (None, True) for k in (0, 1)):
            continue                      # random_trace has deliberately broken frames
        g = mutate.MUTATIONS[name](rng, f)
        if g is None or g == f:
            continue
        ip_ok, tcp_ok = scapy_checksums_ok(g)
        assert ip_ok in (None, True) and tcp_ok, (name, f.hex(), g.hex())
        changed += 1
    assert changed > 30


@pytest.mark.parametrize("name", ["bad_ip_csum", "bad_tcp_csum"])
def test_checksum_breaking_mutations_break_them(captures, name):
    rng = random.Random(name)
    changed = 0
    for f in sample_frames(captures):
        g = mutate.MUTATIONS[name](rng, f)
        if g is None:
            continue
        ip_ok, tcp_ok = scapy_checksums_ok(g)
        assert (ip_ok is False) if name == "bad_ip_csum" else (tcp_ok is False)
        changed += 1
    assert changed > 30


def test_ip_options_insert_router_alert_or_record_route_with_lengths_fixed(captures):
    rng = random.Random(5)
    kinds = set()
    for f in sample_frames(captures):
        g = mutate.ip_options(rng, f)
        if g is None:
            continue
        before, after = Ether(f)[IP], Ether(g)[IP]
        assert after.ihl > before.ihl
        assert after.len == before.len + 4 * (after.ihl - before.ihl)      # total length follows
        kinds.add(bytes(after.original)[4 * before.ihl])                   # the inserted option
        assert TCP in after and before[TCP].ack == after[TCP].ack
    assert kinds == {0x94, 0x07}


def test_mutated_acks_stay_in_their_flow_among_unmutated_neighbours(captures):
    # A chunk cut from one capture (the first such of seed 11).
    chunk = next(c for c in (campaign.make_chunk(11, k, captures, 5000) for k in range(50))
                 if c.source.startswith("capture") and " + " not in c.source)
    mutated = [i for i, m in enumerate(chunk.mutations) if m]
    assert 0.05 * 5000 < len(mutated) < 0.5 * 5000
    segs = [checker.parse_segment(f, slot_bytes=campaign.ack_slot_bytes()) for _t, f in chunk.frames]
    mutated_acks = [i for i in mutated if segs[i].ack_flagged]
    with_neighbours = [i for i in mutated_acks
                       if any(segs[j].ack_flagged and segs[j].flow == segs[i].flow and not chunk.mutations[j]
                              for j in range(max(0, i - 200), min(len(segs), i + 200)))]
    assert len(mutated_acks) > len(mutated) // 2
    # (the others had their flow changed: VLAN, addresses or ports hit)
    assert len(with_neighbours) > 0.8 * len(mutated_acks)


def test_collision_pieces_hold_flows_that_share_a_cam_tag():
    piece = campaign._collision_piece(random.Random(1), 3000)
    if piece is None:
        pytest.skip("the model has no CAM tag function (before issue 9)")
    from ackfilter.model import classify
    _desc, frames = piece
    keys_by_tag = {}
    for _t, f in frames:
        p = classify(f, ack_mode=1)
        keys_by_tag.setdefault(p.tag, set()).add(p.key)
    assert len(frames) > 2900
    assert sum(len(keys) >= 2 for keys in keys_by_tag.values()) >= 10


def test_chunks_are_deterministic_from_seed_and_index_and_frames_unique(captures):
    a = campaign.make_chunk(3, 7, captures, 3000)
    b = campaign.make_chunk(3, 7, captures, 3000)
    c = campaign.make_chunk(3, 8, captures, 3000)
    assert a.frames == b.frames and a.settings == b.settings and a.mutations == b.mutations
    assert a.frames != c.frames
    assert len(a.frames) == 3000
    long_enough = [f for _t, f in a.frames if len(f) >= 12]
    assert len(set(long_enough)) == len(long_enough)


# --- the campaign through the RTL -----------------------------------------------------

def test_the_checker_passes_a_clean_real_run_and_catches_each_kind_of_tampering(captures):
    from ackfilter.sim.replay import replay
    frames = captures["download-loss"][:4000]
    # Aggressive mode on a slow uplink: every flow keeps about one ACK queued,
    # so supersession is constant and the queue never overflows.
    res = replay(frames, uplink_rate_bps=500_000, ack_mode="aggressive")
    sent = [f for _t, f in frames]
    out = [f for _t, f in res.frames_out]
    c = dict(res.counters)
    assert c["acks_superseded"] > 1000 and c["drop_ack_front"] == 0

    def judge(outputs, counters):
        return checker.check(sent, outputs, counters, slot_bytes=campaign.ack_slot_bytes())

    assert judge(out, c).ok
    segs = [checker.parse_segment(f, slot_bytes=campaign.ack_slot_bytes()) for f in out]
    # Two ACKs of one flow swapped on the way out.
    # (every frame has a flow: the ACK-flagged ones are picked)
    a = next(k for k in range(len(out) - 1) if segs[k].cls == "ack" and any(
        segs[m].ack_flagged and segs[m].flow == segs[k].flow for m in range(k + 1, len(out))))
    b = next(m for m in range(a + 1, len(out)) if segs[m].ack_flagged and segs[m].flow == segs[a].flow)
    swapped = list(out)
    swapped[a], swapped[b] = swapped[b], swapped[a]
    assert {v.rule for v in judge(swapped, c).violations} == {"ack-order"}
    # Two data frames of one flow swapped; two of different flows, next to
    # each other among the data, swapped (the flow queues may do that).
    data = [k for k in range(len(out)) if segs[k].cls == "data"]
    d1, d2 = next((x, y) for i, x in enumerate(data) for y in data[i + 1:]
                  if segs[x].flow == segs[y].flow and out[x] != out[y])
    e1, e2 = next((x, y) for x, y in zip(data, data[1:]) if segs[x].flow != segs[y].flow)
    for (x, y), rules in (((d1, d2), {"data-order"}), ((e1, e2), set())):
        swapped = list(out)
        swapped[x], swapped[y] = swapped[y], swapped[x]
        assert {v.rule for v in judge(swapped, c).violations} == rules
    # The last ACK of a flow withheld (and counted as superseded): nothing carries it.
    last = max(k for k in range(len(out)) if segs[k].ack_flagged and segs[k].flow == segs[a].flow)
    withheld = out[:last] + out[last + 1:]
    c2 = dict(c, frames_out=c["frames_out"] - 1, acks_superseded=c["acks_superseded"] + 1)
    assert {v.rule for v in judge(withheld, c2).violations} == {"coverage"}
    # A byte changed; a frame sent twice; a counter off by one.
    changed = list(out)
    changed[a] = changed[a][:-1] + bytes([changed[a][-1] ^ 1])
    assert "identity" in {v.rule for v in judge(changed, c).violations}
    assert "identity" in {v.rule for v in judge(out + [out[0]], dict(c, frames_out=len(out) + 1)).violations}
    assert {v.rule for v in judge(out, dict(c, drop_runt=c["drop_runt"] + 1)).violations} == {"counters"}


def test_short_campaign_has_no_mismatch_violation_hang_or_imbalance(tmp_path):
    summary, results = campaign.run_campaign(seed=2026, frames=SHORT_FRAMES, chunk_frames=10_000,
                                             out_dir=tmp_path)
    assert summary["frames"] == SHORT_FRAMES
    modes = {r.settings.ack_mode for r in results}
    assert modes & {"conservative", "aggressive"}
    assert sum(r.counters.get("acks_superseded", 0) for r in results) > 1000
    details = "\n".join(f"chunk {r.index} ({r.source[:60]}; {r.settings.replay_args()}): "
                        f"{r.hang or r.error or r.unbalanced or r.mismatch[:300]} "
                        f"{r.violations[:3]} -> {r.saved}" for r in results if r.failed)
    assert not details, campaign.summary_line(summary) + "\n" + details


def test_the_command_saves_a_failing_chunk_with_its_reproduction_and_exits_accordingly(tmp_path):
    proc = run_cli("fuzz", "--seed", "5", "--frames", "3000", "--chunk-frames", "1500",
                   "--out", str(tmp_path), "--json", "--quiet")
    summary = json.loads(proc.stdout)
    assert summary["frames"] == 3000 and summary["chunks"] == 2
    failed = summary["failing_chunks"]
    assert proc.returncode == (1 if failed else 0), proc.stderr
    assert "fuzz: seed 5: 3,000 frames in 2 chunks" in proc.stderr
    for k in failed:
        d = tmp_path / f"seed5-chunk{k}"
        report = (d / "report.txt").read_text()
        assert f"--only-chunk {k}" in report and "ackfilter replay --in" in report
        assert len(read_pcap(d / "in.pcap", seconds=True)) == 1500


@pytest.mark.parametrize("argv, elab", [([], None), (["--fifo"], {"flow_queues": 0}),
                                        (["--flow-queues"], {"flow_queues": 1})])
def test_the_command_asks_for_the_data_path_it_is_told(monkeypatch, tmp_path, argv, elab):
    """No option: the board's core; ``--fifo`` and ``--flow-queues`` name a
    build whatever the default is; the two together are refused."""
    seen = []

    def fake_campaign(**kw):
        seen.append(kw["elab"])
        return {"saved": [], "mismatches": 0, "checker_violations": 0, "hangs": 0, "unbalanced": 0,
                "errors": 0}, []

    monkeypatch.setattr(campaign, "run_campaign", fake_campaign)
    monkeypatch.setattr(campaign, "summary_line", lambda summary: "")
    assert campaign.main(["--captures", str(tmp_path), "--quiet", *argv]) == 0
    assert seen == [elab]
    with pytest.raises(SystemExit):
        campaign.main(["--captures", str(tmp_path), "--fifo", "--flow-queues"])


def test_the_command_explains_a_bad_frame_count():
    proc = run_cli("fuzz", "--frames", "0")
    assert proc.returncode == 2 and "1 .. 1,000,000,000" in proc.stderr


def test_a_short_campaign_on_the_data_fifo_core_passes(tmp_path):
    """The core with one data FIFO (``--fifo``) against the model's FIFO
    (the board's core, with per-flow data queues, is the other tests')."""
    summary, results = campaign.run_campaign(seed=2027, frames=10_000, chunk_frames=10_000,
                                             out_dir=tmp_path, elab={"flow_queues": 0})
    assert summary["frames"] == 10_000
    details = "\n".join(f"chunk {r.index} ({r.source[:60]}; {r.settings.replay_args()}): "
                        f"{r.hang or r.error or r.unbalanced or r.mismatch[:300]} "
                        f"{r.violations[:3]} -> {r.saved}" for r in results if r.failed)
    assert not details, campaign.summary_line(summary) + "\n" + details
    assert not summary["saved"]


def test_a_failing_data_fifo_chunk_says_how_to_reproduce_it_on_that_core(captures, tmp_path):
    chunk = campaign.make_chunk(1, 0, captures, 200)
    result = campaign.ChunkResult(chunk.index, len(chunk.frames), chunk.source, chunk.settings,
                                  mismatch="made up for the test")
    d = campaign.save_failure(chunk, result, 1, 200, tmp_path / "fifo", elab={"flow_queues": 0})
    report = (d / "report.txt").read_text()
    assert "--only-chunk 0 --fifo\n" in report and report.count(" --fifo") == 2, report
    d = campaign.save_failure(chunk, result, 1, 200, tmp_path / "board")
    assert "--only-chunk 0\n" in (d / "report.txt").read_text()
    assert "--fifo" not in (d / "report.txt").read_text()
