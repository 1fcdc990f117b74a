"""``ackfilter demo``: a home uplink scenario through the real RTL, filter off and on.

The scenario (:func:`ackfilter.sim.traces.demo_scenario`) is four downloads whose
receivers' ACK streams alone exceed a ~1 Mb/s uplink, plus an upload that
fills it, plus a little other traffic. It is replayed through the Verilated
core (:func:`ackfilter.sim.replay.replay`) once per ACK filter mode, then
once per two-way setting (the data share off and on, the segmenter off and
on: :data:`TWO_WAY`), and :func:`analyze` measures what a user cares about
from the frames that left: how many ACKs went up, how late the downloads'
senders learn each cumulative ack, how much upload data got through, what
was dropped.
"""

import bisect
import statistics
import sys
import time

from .. import params
from ..model.pktparse import before, classify
from ..model.segmenter import segment
from .replay import replay
from .traces import demo_scenario
from ..units import format_rate, parse_rate

__all__ = ["analyze", "run_modes", "format_table", "main"]

MODES = ("off", "conservative", "aggressive")
#: The two-way settings: the default filter with the data share off (strict
#: acks-first, seeds' Table 3) and on, each with whole upload frames and with
#: the segmenter cutting them into chunks (spec section 9).
DEMO_CHUNK_BYTES = 256
TWO_WAY = {
    "share 0": dict(data_share=0),
    "share 0, chunks": dict(data_share=0, chunk_bytes=DEMO_CHUNK_BYTES),
    "share 128": dict(data_share=128),
    "share 128, chunks": dict(data_share=128, chunk_bytes=DEMO_CHUNK_BYTES),
}


def _pct(values, q):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def analyze(in_frames, result, *, duration_s, chunk_bytes=0):
    """Figures of one replay.

    ``in_frames`` is the LAN-side list that was replayed, ``result`` its
    :class:`~ackfilter.sim.replay.ReplayResult`. Delays are from a frame's arrival
    on the LAN to the start of its transmission to the modem. *ACK latency* is
    the time from the arrival of a pure ACK until *some* ACK of its flow
    acknowledging at least as much leaves: with supersession a newer ACK
    carries the information, so this is what the download's sender feels.
    With ``chunk_bytes``, a chunk's delay is its frame's (its arrival).
    """
    arrival = {}
    acks_in = {}                                # flow key -> [(t_in, ack)]
    n_acks_in = 0
    for t, frame in in_frames:
        arrival[frame] = t
        if chunk_bytes:
            for piece in segment(frame, chunk_bytes):
                arrival.setdefault(piece, t)
        p = classify(frame, ack_mode=1)
        if p.pure_ack:
            n_acks_in += 1
            acks_in.setdefault(p.key, []).append((t, p.ack))

    ack_delay, data_delay = [], []
    acks_out = {}                               # flow key -> ([t_out], [ack])
    ack_bytes = data_bytes = n_acks_out = 0
    for t_out, frame in result.frames_out:
        t_in = arrival.get(frame)
        if t_in is None:
            raise AssertionError("a frame left that never arrived (corrupted?)")
        p = classify(frame, ack_mode=1)
        in_window = t_out <= duration_s
        if p.pure_ack:
            n_acks_out += 1
            ack_delay.append(t_out - t_in)
            ack_bytes += len(frame) if in_window else 0
            times, acks = acks_out.setdefault(p.key, ([], []))
            times.append(t_out)
            acks.append(p.ack)
        else:
            data_delay.append(t_out - t_in)
            data_bytes += len(frame) if in_window else 0

    latency, undelivered = [], 0
    for key, arrivals in acks_in.items():
        times, acks = acks_out.get(key, ([], []))
        for t_in, ack in arrivals:
            i = bisect.bisect_left(times, t_in)
            while i < len(times) and before(acks[i], ack):
                i += 1
            if i == len(times):
                undelivered += 1
            else:
                latency.append(times[i] - t_in)

    c = result.counters
    drops = {cn.name[5:]: c[cn.name] for cn in params.COUNTERS if cn.is_drop and c[cn.name]}
    return {
        "frames_in": c["frames_in"],
        "frames_out": c["frames_out"],
        "acks_in": n_acks_in,
        "acks_out": n_acks_out,
        "ack_reduction": 1 - n_acks_out / n_acks_in if n_acks_in else 0.0,
        "acks_superseded": c["acks_superseded"],
        "drops": drops,
        "upload_kbps": data_bytes * 8 / duration_s / 1000,
        "ack_kbps": ack_bytes * 8 / duration_s / 1000,
        "ack_delay_ms": (1000 * statistics.fmean(ack_delay) if ack_delay else 0.0,
                         1000 * _pct(ack_delay, 0.95)),
        "data_delay_ms": (1000 * statistics.fmean(data_delay) if data_delay else 0.0,
                          1000 * _pct(data_delay, 0.95)),
        "ack_latency_ms": (1000 * statistics.fmean(latency) if latency else 0.0,
                           1000 * _pct(latency, 0.95)),
        "acks_never_answered": undelivered,
        "sim_cycles": result.cycles,
        "wallclock_s": result.wallclock_s,
    }


def run_modes(frames, *, uplink_bps, duration_s, modes=MODES, log=None):
    """Replay ``frames`` once per mode; return ``{mode: analyze(...)}``."""
    return run_settings(frames, {m: dict(ack_mode=m) for m in modes},
                        uplink_bps=uplink_bps, duration_s=duration_s, log=log)


def run_settings(frames, settings, *, uplink_bps, duration_s, log=None):
    """Replay ``frames`` once per setting (``{label: registers}``, ``ack_mode``
    by name; the rest as the core's registers); return ``{label: analyze(...)}``."""
    out = {}
    for label, regs in settings.items():
        regs = dict(regs)
        mode = regs.pop("ack_mode", params.default_name("ack_mode"))
        if log:
            log(f"replaying {len(frames)} frames through the RTL, {label} ...")
        res = replay(frames, uplink_rate_bps=uplink_bps, ack_mode=mode, csr=regs)
        out[label] = analyze(frames, res, duration_s=duration_s,
                             chunk_bytes=regs.get("chunk_bytes", 0))
    return out


def format_table(results, *, title):
    modes = list(results)
    rows = [
        ("frames in / out",          lambda r: f"{r['frames_in']} / {r['frames_out']}"),
        ("pure ACKs in / out",       lambda r: f"{r['acks_in']} / {r['acks_out']}"),
        ("ACKs not sent (superseded or dropped)", lambda r: f"{100 * r['ack_reduction']:.1f} %"),
        ("ACKs superseded in place", lambda r: f"{r['acks_superseded']}"),
        ("frames dropped",           lambda r: ", ".join(f"{k} {v}" for k, v in r["drops"].items()) or "none"),
        ("upload data sent",         lambda r: f"{r['upload_kbps']:.0f} kb/s"),
        ("ACKs sent",                lambda r: f"{r['ack_kbps']:.0f} kb/s"),
        ("ACK queueing mean / p95",  lambda r: "{:.1f} / {:.1f} ms".format(*r["ack_delay_ms"])),
        ("data queueing mean / p95", lambda r: "{:.1f} / {:.1f} ms".format(*r["data_delay_ms"])),
        ("ack news latency mean/p95", lambda r: "{:.1f} / {:.1f} ms".format(*r["ack_latency_ms"])),
        ("ACKs whose news never left", lambda r: f"{r['acks_never_answered']}"),
    ]
    head = ["", *modes]
    body = [[name, *[fmt(results[m]) for m in modes]] for name, fmt in rows]
    widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]
    line = lambda row: "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                                  for i, (cell, w) in enumerate(zip(row, widths)))
    sep = "  ".join("-" * w for w in widths)
    return "\n".join([title, sep, line(head), sep, *[line(r) for r in body], sep])


def make_parser():
    import argparse
    ap = argparse.ArgumentParser(
        prog="ackfilter demo",
        description="Replay a built-in home-uplink scenario (four downloads' ACK streams plus an "
                    "upload) through the Verilated RTL with the ACK filter off, conservative and "
                    "aggressive, and print what each did.")
    ap.add_argument("--uplink-rate", default="1mbit", metavar="RATE",
                    help="uplink (shaper) rate, tc syntax: 1mbit, 512kbit ... (default 1mbit)")
    ap.add_argument("--duration", type=float, default=2.0, metavar="SECONDS",
                    help="length of the scenario (default 2)")
    ap.add_argument("--seed", type=int, default=1, help="scenario seed (default 1)")
    return ap


def main(args):
    ap = make_parser()
    args = ap.parse_args(getattr(args, "argv", None) or [])
    try:
        uplink_bps = parse_rate(args.uplink_rate)
    except ValueError as e:
        ap.error(str(e))
    if not 0.1 <= args.duration <= 60:
        ap.error(f"--duration must be within 0.1 .. 60 s, not {args.duration}")
    duration_s = args.duration
    log = (lambda msg: print(msg, file=sys.stderr, flush=True))
    log(f"building the scenario: 4 downloads' ACK streams + an upload, {duration_s:g} s, "
        f"uplink {format_rate(uplink_bps)}")
    frames = demo_scenario(args.seed, duration_s=duration_s, uplink_bps=uplink_bps)
    t0 = time.monotonic()
    results = run_modes(frames, uplink_bps=uplink_bps, duration_s=duration_s, log=log)
    default = params.default_name("ack_mode")
    two_way = run_settings(frames, {k: dict(ack_mode=default, **v) for k, v in TWO_WAY.items()},
                           uplink_bps=uplink_bps, duration_s=duration_s, log=log)
    print()
    print(format_table({f"filter {m}": r for m, r in results.items()}, title=f"ackfilter demo: {len(frames)} frames, {duration_s:g} s, "
                                      f"uplink shaped to {format_rate(uplink_bps)} (RTL in Verilator)"))
    print()
    print(format_table(two_way, title=f"both ways, filter {default}: the data share (1/256 of the "
                                      f"uplink kept for upload data while ACKs wait) and the "
                                      f"segmenter ({DEMO_CHUNK_BYTES}-byte chunks) off and on"))
    print()
    print("ack news latency: from a pure ACK's arrival until an ACK of its flow acknowledging at\n"
          "least as much leaves for the modem: the delay the download's sender actually sees.")
    print("chunks: upload frames leave as valid TCP segments of at most that much payload, so an\n"
          "ACK waits behind one chunk instead of a whole frame (each chunk counts as a frame).")
    runs = [*results.values(), *two_way.values()]
    print(f"(simulated {sum(r['sim_cycles'] for r in runs) / params.F_SYS_HZ:.1f} s of "
          f"hardware time in {time.monotonic() - t0:.1f} s)")
    return 0
