"""The segmenter in the whole core (spec section 9), through the Verilated RTL
in the replay harness.

Each run is checked three ways:

* against the golden model with the same ``chunk_bytes`` (``check_run``:
  every event, a ``DEPART_DATA`` per chunk, every output byte, every
  counter);
* independently of the model, with Scapy: every TCP segment that leaves has
  a right IPv4 header checksum and TCP checksum, carries at most
  ``chunk_bytes`` of payload when it was cut, FIN and PSH only on a frame's
  last chunk; and each flow's payload, reassembled by sequence number from
  what left, is exactly the payload that arrived;
* the scheduling: a download's ACK that arrives while an upload frame is
  being cut leaves between two of its chunks, and so does a new flow's
  frame (a SYN, a short segment of a queue that had emptied), whole.

The upload flows cover every encapsulation the segmenter cuts (IPv4, IPv6,
a VLAN tag, PPPoE, IPv6 in PPPoE under two tags) with and without TCP and
IP options, and the trace mixes in frames that must leave whole: SYN with
data, CWR, UDP, a bad TCP checksum, short segments, ARP.
"""

import random

import pytest
from ackfilter import params
from ackfilter.model import FilterModel
from ackfilter.model.pktparse import ones_complement_sum
from ackfilter.model.scoreboard import check_run
from ackfilter.model.segmenter import why_whole
from ackfilter.sim import traces
from ackfilter.sim.redcheck import FLOWS
from ackfilter.sim.replay import replay
from ackfilter.sim.segcheck import (check_segmented, data_between_chunks, ip_tcp, splits_between_chunks,
                                    tcp_checksum_ok)

UPLINK_BPS = 4_000_000
TS = [("NOP", None), ("NOP", None), ("Timestamp", (1234, 5678))]
DOWNLOAD = traces.Flow(src="192.168.1.20", dst="198.51.100.9", sport=40000, dport=80)


def upload_trace(seed, *, n=700):
    """Upload segments of the five flows (sizes around the chunk sizes under
    test, odd ones too, some with timestamps or IPv4 options, some with FIN),
    frames that must leave whole, and a download's pure ACKs, at about twice
    the uplink rate (queues form, so ACKs and chunks compete)."""
    rng = random.Random(seed)
    seq = {k: rng.getrandbits(32) for k in range(len(FLOWS))}
    # First, into an empty buffer, a segment with a bad TCP checksum (it
    # must leave whole; later ones may find the buffer full).
    bad = bytearray(traces.tcp_frame(FLOWS[0], seq=1, ack=1, flags="PA", payload=bytes(range(256)) * 3,
                                     builder="raw"))
    bad[-5] ^= 0x40
    out, t = [(0.0, bytes(bad))], len(bad) * 8 / (2 * UPLINK_BPS)
    for i in range(n):
        k = rng.randrange(len(FLOWS))
        flow = FLOWS[k]
        r = rng.random()
        if r < 0.25:
            frame = traces.tcp_frame(DOWNLOAD, seq=7, ack=1000 + 1448 * i, flags="A",
                                     ip_id=i, builder="raw")
        elif r < 0.30:
            kind = rng.randrange(5)
            if kind == 0:      # CWR: never cut
                frame = traces.tcp_frame(flow, seq=seq[k], ack=1, flags="PAC", payload=bytes(900),
                                         ip_id=i, builder="raw")
                seq[k] = (seq[k] + 900) & 0xFFFF_FFFF
            elif kind == 1:    # a bad TCP checksum: never cut (and not counted in the stream)
                good = bytearray(traces.tcp_frame(flow, seq=seq[k], ack=1, flags="PA",
                                                  payload=bytes(range(256)) * 3, ip_id=i, builder="raw"))
                good[-5] ^= 0x40
                frame = bytes(good)
            elif kind == 2:
                frame = traces.arp_frame("02:00:00:00:00:%02x" % (i % 200 + 1), "192.168.1.10",
                                          "192.168.1.1")
            elif kind == 3:    # SYN with data: never cut
                frame = traces.tcp_frame(traces.Flow(sport=51000 + i), seq=5, flags="S",
                                         payload=bytes(700), ip_id=i, builder="raw")
            else:              # a short segment
                size = rng.randint(1, 40)
                frame = traces.tcp_frame(flow, seq=seq[k], ack=1, flags="PA",
                                         payload=rng.randbytes(size), ip_id=i, builder="raw")
                seq[k] = (seq[k] + size) & 0xFFFF_FFFF
        else:
            # (1900: longer than an Ethernet MTU allows, as a LAN host with
            # TSO off and jumbo frames could send; the core takes up to 2048.)
            size = rng.choice((100, 257, 511, 999, 1000, 1200, 1400, 1448, 1900, rng.randint(1, 1448)))
            opts = TS if rng.random() < 0.4 else ()
            ip_words = rng.choice((0, 0, 0, 2)) if not flow.ipv6 else 0
            flags = "FPA" if rng.random() < 0.05 else rng.choice(("PA", "A", "PAE"))
            frame = traces.tcp_frame(flow, seq=seq[k], ack=1, flags=flags, options=opts,
                                     payload=rng.randbytes(size), ip_id=rng.getrandbits(16),
                                     ip_option_words=ip_words, ecn=rng.choice((0, 2)), builder="raw")
            seq[k] = (seq[k] + size) & 0xFFFF_FFFF
        out.append((t, frame))
        t += len(frame) * 8 / (2 * UPLINK_BPS)
    return out


def _checked_run(frames, chunk, *, mode="aggressive"):
    res = replay(frames, uplink_rate_bps=UPLINK_BPS, ack_mode=mode, events=True,
                 csr={"chunk_bytes": chunk})
    model = FilterModel(ack_mode=params.ACK_FILTER_MODES[mode], chunk_bytes=chunk, **res.model_options())
    check_run(model, [f for _t, f in frames], res.events, [f for _t, f in res.frames_out],
              counters=res.counters)
    assert res.protocol_errors == 0
    assert res.counters["frames_in"] == params.frames_accounted(res.counters) == len(frames)
    res.overflow_dropped = model.overflow_dropped
    return res


@pytest.mark.parametrize("chunk", [16, 256, 512, 1456])
def test_the_segmenter_cuts_as_the_model_decides_through_the_whole_core(chunk):
    frames = upload_trace(chunk)
    res = _checked_run(frames, chunk)
    c = res.counters
    sent = [f for _t, f in frames]
    out = [f for _t, f in res.frames_out]
    # The frames queued (not dropped for want of ring room, nor later from
    # the fattest flow queue's head) that are to be cut.
    arrivals = [e for _c, e in res.events if e in params.ARRIVAL_EVENTS]
    queued = [f for f, e in zip(sent, arrivals) if e in ("ARRIVE_DATA", "ARRIVE_DATA_MARKED")]
    for f in res.overflow_dropped:
        queued.remove(f)
    cuttable = [f for f in queued if why_whole(f, chunk) is None]
    # A new flow's frame between two chunks of another frame leaves whole
    # (spec section 12): those left as they came, between two chunks.
    between = data_between_chunks(out, chunk, sent)
    out_whole = set(out)
    cut = [f for f in cuttable if f not in out_whole]
    assert all(f in between for f in cuttable if f in out_whole)
    # (only the 1900-byte segments are longer than 1456)
    assert c["seg_frames"] == len(cut) > (5 if chunk == 1456 else 50), c
    assert c["seg_chunks"] > c["seg_frames"]

    # Scapy, not the model (ackfilter.sim.segcheck).
    assert check_segmented(queued + [f for f in sent if f not in set(queued) and ip_tcp(f) is None],
                           out, chunk, cut) >= 2 * len(cut)
    assert any(not tcp_checksum_ok(f) for f in out if ip_tcp(f))

    # ACKs overtake the rest of a frame being cut: a download ACK leaves
    # between two chunks of one frame.
    download = (DOWNLOAD.src, DOWNLOAD.dst, DOWNLOAD.sport, DOWNLOAD.dport)
    assert splits_between_chunks(out, chunk, download) > (0 if chunk == 1456 else 5)
    # So does a new flow's frame (spec section 12), whole, as it arrived.
    assert len(between) > 0 and all(b in sent for b in between), len(between)


def test_chunk_bytes_0_leaves_every_frame_whole():
    frames = upload_trace(5, n=300)
    res = _checked_run(frames, 0)
    assert res.counters["seg_frames"] == res.counters["seg_chunks"] == 0
    sent = {f for _t, f in frames}
    assert all(f in sent for _t, f in res.frames_out)


def test_cut_frames_keep_red_s_ce_mark_on_every_chunk():
    from ackfilter.cli import red_registers
    frames = [(t, f) for t, f in upload_trace(6, n=500)]
    regs = red_registers({"red_enable": 1, "red_min_bytes": 2000, "red_max_bytes": 6000,
                          "red_max_p": 30000}, UPLINK_BPS)
    res = replay(frames, uplink_rate_bps=UPLINK_BPS, ack_mode="aggressive", events=True,
                 csr={**regs, "red_wq_shift": 3, "chunk_bytes": 256})
    from ackfilter.sim.redcheck import CountingRed
    red = CountingRed(min_bytes=2000, max_bytes=6000, max_p=30000, wq_shift=3, gentle=True,
                      idle_shift=regs["red_idle_shift"])
    model = FilterModel(ack_mode=2, red=red, chunk_bytes=256, **res.model_options())
    check_run(model, [f for _t, f in frames], res.events, [f for _t, f in res.frames_out],
              counters=res.counters)
    ce_chunks = [f for _t, f in res.frames_out
                 if ip_tcp(f) and (ip_tcp(f)[0].tos if ip_tcp(f)[0].version == 4
                                    else ip_tcp(f)[0].tc) & 3 == 3 and tcp_checksum_ok(f)]
    assert res.counters["red_marked"] > 5 and len(ce_chunks) > res.counters["red_marked"]
    for f in ce_chunks:
        ip, _tcp = ip_tcp(f)
        if ip.version == 4:
            assert ones_complement_sum(bytes(ip)[:4 * ip.ihl]) == 0xFFFF
