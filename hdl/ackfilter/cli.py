"""Command line: ``ackfilter replay|demo|bench``.

``ackfilter replay --in IN.pcap --out OUT.pcap`` runs the real RTL (Verilator)
on the frames of IN.pcap as if they arrived on the LAN port at their capture
times, and writes the frames that leave towards the modem, with the time they
start on the output, to OUT.pcap. See docs/stats.md for ``--stats``.
"""

import argparse
import json
import os
import struct
import sys
import time
from fractions import Fraction

from . import params
from .units import RATE_FORMS, format_rate, parse_rate

__all__ = ["main", "read_pcap", "write_pcap", "PcapError"]

LINKTYPE_ETHERNET = 1
EXIT_USAGE = 2


class PcapError(Exception):
    """A capture file that cannot be used (missing, unreadable, not Ethernet)."""


# --- pcap I/O -------------------------------------------------------------------

def read_pcap(path):
    """``(frames, t0_ns)``: frames as ``[(t_ns, bytes)]`` from an Ethernet pcap or
    pcapng file, in file order; ``t_ns`` are integer nanoseconds since the epoch."""
    if not os.path.exists(path):
        raise PcapError(f"{path}: no such file")
    if os.path.isdir(path):
        raise PcapError(f"{path}: is a directory, not a capture file")
    try:
        from scapy.utils import RawPcapReader
        from scapy.error import Scapy_Exception
    except ImportError as e:  # pragma: no cover
        raise PcapError(f"Scapy is needed to read captures: {e}")
    try:
        reader = RawPcapReader(path)
    except (Scapy_Exception, OSError, EOFError, struct.error) as e:
        raise PcapError(f"{path}: not a readable pcap or pcapng file ({e})")
    frames = []
    truncated = 0
    try:
        with reader:
            file_linktype = getattr(reader, "linktype", None)
            nano = getattr(reader, "nano", False)
            for data, meta in reader:
                if hasattr(meta, "tsresol"):  # pcapng
                    linktype = meta.linktype
                    ts = (meta.tshigh << 32) | meta.tslow
                    t_ns = round(Fraction(ts * 10**9, meta.tsresol))
                else:
                    linktype = file_linktype
                    t_ns = meta.sec * 10**9 + meta.usec * (1 if nano else 1000)
                if linktype != LINKTYPE_ETHERNET:
                    raise PcapError(f"{path}: link type {linktype} is not Ethernet (1); "
                                    "only Ethernet captures can be replayed")
                if getattr(meta, "wirelen", None) is not None and meta.wirelen > len(data):
                    truncated += 1
                if data:
                    frames.append((t_ns, bytes(data)))
    except PcapError:
        raise
    except (Scapy_Exception, OSError, EOFError, struct.error) as e:
        raise PcapError(f"{path}: error reading the capture ({e})")
    if truncated:
        print(f"warning: {path}: {truncated} frames were truncated by the capture (snaplen); "
              "replaying the captured bytes only", file=sys.stderr)
    return frames


def write_pcap(path, frames):
    """Write ``[(t_ns, bytes)]`` as a nanosecond-resolution Ethernet pcap."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, LINKTYPE_ETHERNET))
        for t_ns, data in frames:
            sec, nsec = divmod(int(t_ns), 10**9)
            f.write(struct.pack("<IIII", sec, nsec, len(data), len(data)))
            f.write(data)


# --- replay ---------------------------------------------------------------------

def _positive_int(text):
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer {text!r}")
    return value


def _rate(text):
    try:
        value = parse_rate(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))
    try:
        params.cpb_q16_for_rate(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{text!r}: {e}")
    return value


def _check_param(parser, name, value, option):
    p = params.param(name)
    if value is not None and not p.minimum <= value <= p.maximum:
        parser.error(f"{option} {value}: must be {p.minimum}..{p.maximum} ({p.doc})")


class _Progress:
    def __init__(self, total, quiet, every_s=2.0):
        self.total = max(total, 1)
        self.quiet = quiet
        self.every_s = every_s
        self.t_start = None
        self.t_next = None

    def __call__(self, frames_in, frames_out, cycle):
        if self.quiet:
            return
        t = time.monotonic()
        if self.t_start is None:  # first report: the simulation has started
            self.t_start, self.t_next = t, t + self.every_s
        if t < self.t_next:
            return
        self.t_next = t + self.every_s
        print(f"replay: {100 * frames_in / self.total:5.1f}% "
              f"({frames_in}/{self.total} frames in, {frames_out} out, "
              f"{cycle / params.F_SYS_HZ:.3f} s simulated, {t - self.t_start:.0f} s)",
              file=sys.stderr, flush=True)


def build_stats(result, *, input_frames, output_frames, uplink_rate_bps, ack_filter,
                in_path=None, out_path=None):
    """The ``--stats`` dictionary (docs/stats.md)."""
    c = result.counters
    drops = {k[len("drop_"):]: v for k, v in c.items() if k.startswith("drop_")}
    accounted = c["frames_out"] + c["acks_superseded"] + sum(drops.values())
    run_params = dict(result.params)
    run_params.update({
        "ack_filter": ack_filter,
        "uplink_rate_bps": uplink_rate_bps,
        "uplink_rate": format_rate(uplink_rate_bps) if uplink_rate_bps else "unshaped",
        "ack_slots": result.info.get("ack_slots"),
        "flow_entries": result.info.get("flow_entries"),
        "data_buffer_bytes": result.info.get("data_buffer_bytes"),
    })
    return {
        "frames_in": c["frames_in"],
        "frames_out": c["frames_out"],
        "acks_in": c["acks_in"],
        "acks_ineligible": c["acks_ineligible"],
        "acks_superseded": c["acks_superseded"],
        "drops": drops,
        "counters": dict(c),
        "cycles": result.cycles,
        "sim_seconds": result.cycles / params.F_SYS_HZ,
        "wallclock_s": result.wallclock_s,
        "params": run_params,
        "info": dict(result.info),
        "input": {"path": in_path, "frames": input_frames},
        "output": {"path": out_path, "frames": output_frames},
        "check": {
            "ok": c["frames_in"] == accounted and c["frames_in"] == input_frames
                  and c["frames_out"] == output_frames and result.protocol_errors == 0,
            "frames_in": c["frames_in"],
            "frames_out_plus_superseded_plus_drops": accounted,
            "protocol_errors": result.protocol_errors,
        },
    }


def cmd_replay(args, parser):
    from .replay import ReplayError, replay

    _check_param(parser, "ack_queue_limit", args.ack_slots, "--ack-slots")
    _check_param(parser, "data_share", args.data_share, "--data-share")
    try:
        frames = read_pcap(args.inp)
    except PcapError as e:
        parser.error(str(e))
    if not frames:
        parser.error(f"{args.inp}: the capture holds no frames")
    t0 = frames[0][0]
    in_frames = [((t - t0) / 1e9, data) for t, data in frames]

    if not args.quiet:
        rate = format_rate(args.uplink_rate) if args.uplink_rate else "unshaped"
        print(f"replay: {len(frames)} frames from {args.inp}, uplink {rate}, "
              f"ACK filter {args.ack_filter} (building the simulator if needed)",
              file=sys.stderr, flush=True)
    try:
        result = replay(in_frames, uplink_rate_bps=args.uplink_rate, ack_slots=args.ack_slots,
                        ack_mode=args.ack_filter, data_share=args.data_share,
                        progress=_Progress(len(frames), args.quiet))
    except ReplayError as e:
        print(f"ackfilter replay: error: {e}", file=sys.stderr)
        return 1
    for msg in result.messages:
        print(msg, file=sys.stderr)

    # Egress times: the input's first timestamp + start cycle (exact: 16 ns/cycle).
    ns_per_cycle = Fraction(10**9, params.F_SYS_HZ)
    out = [(t0 + round(cyc * ns_per_cycle), data)
           for cyc, (_, data) in zip(result.out_cycles, result.frames_out)]
    try:
        write_pcap(args.out, out)
    except OSError as e:
        print(f"ackfilter replay: error: cannot write {args.out}: {e}", file=sys.stderr)
        return 1

    stats = build_stats(result, input_frames=len(frames), output_frames=len(out),
                        uplink_rate_bps=args.uplink_rate, ack_filter=args.ack_filter,
                        in_path=args.inp, out_path=args.out)
    chk = stats["check"]
    if chk["frames_in"] != chk["frames_out_plus_superseded_plus_drops"]:
        print(f"warning: frames_in ({chk['frames_in']}) != frames_out + acks_superseded + drops "
              f"({chk['frames_out_plus_superseded_plus_drops']})", file=sys.stderr)
    if stats["frames_in"] != len(frames):
        print(f"warning: the core counted {stats['frames_in']} frames in, "
              f"the capture holds {len(frames)}", file=sys.stderr)
    if stats["frames_out"] != len(out):
        print(f"warning: the core counted {stats['frames_out']} frames out, "
              f"{len(out)} left its output", file=sys.stderr)
    if result.protocol_errors:
        print(f"warning: {result.protocol_errors} stream rule violations on the core's output",
              file=sys.stderr)
    if args.stats:
        try:
            with open(args.stats, "w") as f:
                json.dump(stats, f, indent=2)
                f.write("\n")
        except OSError as e:
            print(f"ackfilter replay: error: cannot write {args.stats}: {e}", file=sys.stderr)
            return 1
    if not args.quiet:
        drops = sum(stats["drops"].values())
        print(f"replay: {stats['frames_in']} frames in, {stats['frames_out']} out, "
              f"{stats['acks_in']} pure ACKs, {stats['acks_superseded']} superseded, "
              f"{drops} dropped; {stats['sim_seconds']:.3f} s simulated in "
              f"{stats['wallclock_s']:.2f} s; wrote {args.out}", file=sys.stderr)
    return 0


def _lazy(module_name):
    def run(args, parser):
        import importlib
        try:
            mod = importlib.import_module(f"ackfilter.{module_name}")
        except ModuleNotFoundError as e:
            if e.name != f"ackfilter.{module_name}":
                raise
            parser.error(f"the {module_name} command is not available in this build")
        return mod.main(args)
    return run


def make_parser():
    parser = argparse.ArgumentParser(
        prog="ackfilter", description="FPGA TCP ACK filter: simulation and tools.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser(
        "replay", help="run the RTL on a pcap and write what leaves towards the modem",
        description="Run the real RTL (Verilator) on the frames of a pcap/pcapng "
                    "capture as they arrive on the LAN port, and write the frames "
                    "that leave towards the modem, with their egress times.")
    p.add_argument("--in", dest="inp", required=True, metavar="IN.pcap",
                   help="Ethernet capture (pcap or pcapng) of the LAN side")
    p.add_argument("--out", required=True, metavar="OUT.pcap",
                   help="capture to write (nanosecond pcap)")
    p.add_argument("--uplink-rate", type=_rate, default=0, metavar="RATE",
                   help=f"shape the uplink to RATE, tc style: {RATE_FORMS} "
                        "(default: unshaped, 1 Gb/s line rate)")
    p.add_argument("--ack-slots", type=_positive_int, default=None, metavar="N",
                   help="ACK queue length at which drop-from-front starts "
                        "(run-time ack_queue_limit; default: the core's, 64)")
    p.add_argument("--ack-filter", choices=list(params.ACK_FILTER_MODES), default="conservative",
                   help="ACK filter mode (default: conservative)")
    p.add_argument("--data-share", type=_positive_int, default=None, metavar="N",
                   help="uplink share guaranteed to data while ACKs wait, in 1/256 "
                        "(0..256, default 128 = 50%%)")
    p.add_argument("--stats", metavar="FILE.json", help="write statistics (docs/stats.md)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress or summary output")
    p.set_defaults(func=cmd_replay)

    for name, text in (("demo", "run the demonstration scenario"),
                       ("bench", "measure the simulator and the filter on generated traces"),
                       ("fuzz", "mutation campaign: real captures and traces, mutated, replayed "
                                "through the RTL, checked against the model and an independent checker")):
        p = sub.add_parser(name, help=text, description=text, add_help=False)
        p.add_argument("argv", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
        p.set_defaults(func=_lazy(name))
    return parser


_PASSTHROUGH = ("demo", "bench", "fuzz")


def main(argv=None):
    """Entry point; returns the exit status (argument errors exit 2)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = make_parser()
    args, extra = parser.parse_known_args(argv)
    sub = parser._subparsers._group_actions[0].choices[args.command]
    if args.command in _PASSTHROUGH:
        # Everything after the command word belongs to the command's own parser.
        args.argv = argv[argv.index(args.command) + 1:]
    elif extra:
        sub.error(f"unrecognized arguments: {' '.join(extra)}")
    return args.func(args, sub)


if __name__ == "__main__":
    sys.exit(main())
