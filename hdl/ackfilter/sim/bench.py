"""``ackfilter bench``: throughput, capacity and filtering figures of the RTL.

Everything runs the Verilated core through the C++ replay harness:

1. **Line rate**: minimum-size frames (60 bytes + FCS = 84 byte times on the
   wire) back to back at 1 Gb/s, half pure ACKs of many flows, half data, the
   shaper open: every frame must be accounted for with no drop, and the
   cycles per frame show the budget used (84 byte times: 33.6 cycles at
   50 MHz, :func:`ackfilter.sim.wire.frame_cycles`).
   With flow queues (1c, 2b) the same, the data of as many uploads as there
   are queues.
2. **Capacity**: the same frames offered one word per cycle, faster than any
   1 Gb/s MAC can deliver: the cycles per frame the ingress and queue manager
   take them in (from the queue manager's arrival events) without an overrun (the output is still a 1 Gb/s MAC, so the
   data buffer may fill: those drops are the output's, not the core's).
3. **Simulation speed** of both runs (frames/s and cycles/s of wall time).
4. **Filtering** on the demo scenario: ACK reduction and per-class queueing
   delay for each ACK filter mode.
"""

import argparse
import random
import sys
import time

from .. import params
from .demo import run_modes
from .replay import DATA_FIFO, replay
from .traces import Flow, demo_scenario, tcp_frame
from .wire import OVERHEAD_BYTES, frame_cycles
from ..units import format_rate

__all__ = ["line_rate_frames", "main"]


def _capacity_lines(res, line_cycles):
    c = res.counters
    arrivals = arrival_cycles(res.events)
    _line("frames in", f"{c['frames_in']}")
    _line("dropped by the core (overrun)", f"{c['drop_overrun']}")
    _line("dropped for the 1 Gb/s output (buffer full, fattest queue)",
          f"{c['drop_data_full']}, {c['drop_data_overflow']}")
    _line("cycles per frame taken in (capacity)", f"{arrivals[-1] / len(arrivals):.2f} "
          f"(= {line_cycles * len(arrivals) / arrivals[-1]:.2f} x line rate)")


def line_rate_frames(n_frames, *, n_flows=256, data_flows=1, seed=1):
    """``n_frames`` minimum-size frames, all arriving at t = 0 (so the harness
    feeds them back to back at its line rate): every other one a pure ACK of
    one of ``n_flows`` flows with an advancing ack, the rest 60-byte data
    segments of ``data_flows`` uploads in turn."""
    rng = random.Random(seed)
    flows = [Flow(src=f"10.{i >> 8}.{i & 255}.2", dst="198.51.100.7",
                  sport=rng.randrange(1024, 65536), dport=443) for i in range(n_flows)]
    acks = [rng.getrandbits(32) for _ in flows]
    uploads = [Flow(src="10.99.0.2", dst="203.0.113.9", sport=50000 + j, dport=22)
               for j in range(data_flows)]
    frames = []
    for i in range(n_frames):
        if i % 2 == 0:
            k = rng.randrange(n_flows)
            acks[k] = (acks[k] + 2896) & 0xFFFFFFFF
            frame = tcp_frame(flows[k], seq=1, ack=acks[k], flags="A", ip_id=i & 0xFFFF,
                              builder="raw")
        else:
            upload = uploads[(i // 2) % data_flows]
            frame = tcp_frame(upload, seq=1 + 6 * i, ack=1, flags="A", payload=b"\x55" * 6,
                              ip_id=i & 0xFFFF, builder="raw")
        frames.append((0.0, frame))
    return frames


def arrival_cycles(events):
    """The cycle of each frame's arrival event (``params.ARRIVAL_EVENTS``: one
    per frame the queue manager took, whatever it dropped to make room)."""
    return [cycle for cycle, ev in events if ev in params.ARRIVAL_EVENTS]


def _line(label, value):
    print(f"  {label:<48} {value}")


def _loss_lines(res, n):
    """A line-rate run's figures: frames in and out, loss, accounting, cycles per frame."""
    c = res.counters
    drops = sum(c[x.name] for x in params.COUNTERS if x.is_drop)
    accounted = params.frames_accounted(c)
    _line("frames in / out / superseded", f"{c['frames_in']} / {c['frames_out']} / "
                                          f"{c['acks_superseded']}")
    _line("frames dropped (loss)", f"{drops} ({100 * drops / n:.3f} %)")
    _line("every frame accounted for", "yes" if accounted == n else f"NO ({accounted} of {n})")
    _line(f"cycles per frame ({60 + OVERHEAD_BYTES} byte times at 1 Gb/s: {float(frame_cycles(60)):g})",
          f"{res.cycles / n:.2f}")


def main(args):
    ap = argparse.ArgumentParser(
        prog="ackfilter bench",
        description="Measure the RTL (in Verilator): loss and cycles per frame at 1 Gb/s line "
                    "rate with minimum-size frames, ingress capacity, simulation speed, and ACK "
                    "reduction and queueing delay on the demo scenario.")
    ap.add_argument("--frames", type=int, default=100_000,
                    help="minimum-size frames for the line-rate runs (default 100000)")
    ap.add_argument("--skip-demo", action="store_true", help="leave out the demo-scenario part")
    args = ap.parse_args(getattr(args, "argv", None) or [])
    if not 100 <= args.frames <= 10_000_000:
        ap.error(f"--frames must be within 100 .. 10000000, not {args.frames}")
    log = lambda msg: print(msg, file=sys.stderr, flush=True)

    log(f"generating {args.frames} minimum-size frames ...")
    frames = line_rate_frames(args.frames)
    n = len(frames)
    wire_bytes = 60 + OVERHEAD_BYTES      # frame, FCS, preamble, IFG
    line_cycles = float(frame_cycles(60))  # a frame's cycles at 1 Gb/s

    queues = params.FLOW_ENTRIES + 1
    data_path = (f"{queues} per-flow data queues" if params.FLOW_QUEUES else "one data FIFO")
    print("ackfilter bench (RTL in Verilator, system clock "
          f"{params.F_SYS_HZ / 1e6:g} MHz, 32-bit datapath; the board's core: {data_path})")
    print()
    print(f"1. Line rate: {n} frames of 64 bytes at 1 Gb/s, half pure ACKs of 256 flows, "
          "shaper open")
    log("   replaying at 1 Gb/s ...")
    res = replay(frames, ack_mode="conservative")
    _loss_lines(res, n)
    _line("offered rate", f"{n / (res.cycles / params.F_SYS_HZ) / 1e6:.3f} Mpps = "
                          f"{format_rate(n * wire_bytes * 8 / (res.cycles / params.F_SYS_HZ))} "
                          "on the wire")
    _line("simulation speed", f"{n / res.wallclock_s:,.0f} frames/s, "
                              f"{res.cycles / res.wallclock_s / 1e6:.2f} M cycles/s")
    print()

    slow_n = min(n, 20_000)
    print(f"1b. Line rate at 100 Mb/s: the first {slow_n} frames, both ports at 100 Mb/s "
          "(a Fast Ethernet modem port), shaper open")
    log("   replaying at 100 Mb/s ...")
    slow = replay(frames[:slow_n], ack_mode="conservative", link_mbps=100)
    sc = slow.counters
    slow_drops = sum(sc[x.name] for x in params.COUNTERS if x.is_drop)
    out_t = [t for t, _f in slow.frames_out]
    line_fps = 100e6 / 8 / wire_bytes                      # 148,810 frames/s
    got_fps = (len(out_t) - 1) / (out_t[-1] - out_t[0])
    _line("frames in / out / superseded / dropped",
          f"{sc['frames_in']} / {sc['frames_out']} / {sc['acks_superseded']} / {slow_drops}")
    _line("frames out per second / 100 Mb/s line rate", f"{got_fps:,.0f} / {line_fps:,.0f} = "
                                                         f"{got_fps / line_fps:.3f}")
    print()

    print(f"1c. Line rate with {queues} uploads: {n} frames of 64 bytes at 1 Gb/s, "
          f"half pure ACKs of 256 flows, the data of {queues} uploads in turn (as many as "
          "there are flow queues, spec section 12), shaper open")
    log("   replaying at 1 Gb/s ...")
    fq_frames = line_rate_frames(args.frames, data_flows=queues)
    fq = replay(fq_frames, ack_mode="conservative")
    _loss_lines(fq, n)
    print()

    print("2. Capacity: the same frames offered one word per cycle (no gap)")
    log("   replaying at full input speed ...")
    fast = replay(frames, ack_mode="conservative", feed=(1, 0), events=True)
    _capacity_lines(fast, line_cycles)
    _line("ACKs superseded while the output was busy", f"{fast.counters['acks_superseded']}")
    _line("simulation speed", f"{n / fast.wallclock_s:,.0f} frames/s, "
                              f"{fast.cycles / fast.wallclock_s / 1e6:.2f} M cycles/s")
    print()

    print(f"2b. Capacity with {queues} uploads: the frames of 1c offered one word per cycle")
    log("   replaying at full input speed ...")
    _capacity_lines(replay(fq_frames, ack_mode="conservative", feed=(1, 0), events=True),
                    line_cycles)
    print()

    print("2c. Capacity of the core with one data FIFO (flow_queues=0, for comparison): "
          "the frames of 2")
    log("   building that core (once) and replaying at full input speed ...")
    _capacity_lines(replay(frames, ack_mode="conservative", feed=(1, 0), events=True,
                           elab=DATA_FIFO), line_cycles)
    print()

    if not args.skip_demo:
        uplink = 1_000_000
        print(f"3. Demo scenario (4 downloads' ACKs + an upload, 2 s, uplink {format_rate(uplink)})")
        log("   replaying the demo scenario in three modes ...")
        scen = demo_scenario(1, duration_s=2.0, uplink_bps=uplink)
        t0 = time.monotonic()
        results = run_modes(scen, uplink_bps=uplink, duration_s=2.0)
        wall = time.monotonic() - t0
        head = f"  {'mode':<14}{'ACKs in':>9}{'ACKs out':>10}{'reduction':>11}" \
               f"{'ACK delay mean/p95':>22}{'data delay mean/p95':>23}{'upload':>11}"
        print(head)
        for mode, r in results.items():
            print(f"  {mode:<14}{r['acks_in']:>9}{r['acks_out']:>10}"
                  f"{100 * r['ack_reduction']:>10.1f}%"
                  f"{r['ack_delay_ms'][0]:>13.1f} /{r['ack_delay_ms'][1]:>6.1f} ms"
                  f"{r['data_delay_ms'][0]:>14.1f} /{r['data_delay_ms'][1]:>6.1f} ms"
                  f"{r['upload_kbps']:>7.0f} kb/s")
        print(f"  ({len(scen)} frames x 3 modes replayed in {wall:.1f} s)")
    return 0
