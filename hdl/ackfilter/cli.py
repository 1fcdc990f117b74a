"""Command line: ``ackfilter replay|demo|bench``.

``ackfilter replay --in IN.pcap --out OUT.pcap`` runs the real RTL (Verilator)
on the frames of IN.pcap as if they arrived on the LAN port at their capture
times, and writes the frames that leave towards the modem, with the time they
start on the output, to OUT.pcap. See docs/stats.md for ``--stats``.
"""

import argparse
import json
import sys
import textwrap
import time
from fractions import Fraction

from . import params
from .model.cake import CAKE_KEYWORDS, CakeError, cake_accounting, keyword_summary
from .model.shaper import LinkAccounting
from .sim.pcap import PcapError, read_pcap, write_pcap
from .units import RATE_FORMS, format_rate, parse_rate

__all__ = ["main"]

EXIT_USAGE = 2


# --- replay ---------------------------------------------------------------------

def _positive_int(text):
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer {text!r}")
    return value


def _rate(text):
    """bit/s for ``--uplink-rate``: ``0`` (any unit) or ``unshaped`` for none,
    else a tc rate within what the shaper expresses."""
    if text.strip().lower() == "unshaped":
        return 0
    lo, hi = params.rate_limits_bps()
    allowed = (f"a shaped rate must be {format_rate(lo)} .. {format_rate(hi)} "
               f"({lo} .. {hi} bit/s), or 0 / unshaped for none")
    try:
        value = parse_rate(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{e}; {allowed}")
    if value and not lo <= value <= hi:
        raise argparse.ArgumentTypeError(
            f"invalid rate {text!r}: {'more' if value > hi else 'less'} than the shaper can "
            f"express; {allowed}")
    return value


class _LinkWords(argparse.Action):
    """Collect the link accounting options in command-line order, as tc
    words (``--overhead 18`` -> ``overhead 18``), for :func:`cake_accounting`."""

    def __init__(self, option_strings, dest, word=None, **kwargs):
        self.word = word
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        words = list(getattr(namespace, self.dest) or [])
        if self.word is None:           # --link-preset KEYWORD
            words.append(values)
        elif self.nargs == 0:           # --atm, --ptm, --noatm
            words.append(self.word)
        else:                           # --overhead N, --mpu N
            words += [self.word, values]
        setattr(namespace, self.dest, words)


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


def _describe_accounting(accounting, words):
    if accounting is None:
        return f"{LinkAccounting().describe()} (the Ethernet wire, the default)"
    return f"{accounting.describe()} (tc-cake: {' '.join(map(str, words))})"


def build_stats(result, *, input_frames, output_frames, uplink_rate_bps, ack_filter,
                in_path=None, out_path=None, link_words=None):
    """The ``--stats`` dictionary (docs/stats.md)."""
    c = result.counters
    drops = {k[len("drop_"):]: v for k, v in c.items() if k.startswith("drop_")}
    accounted = params.frames_accounted(c)
    run_params = dict(result.params)
    run_params.update({
        "ack_filter": ack_filter,
        "uplink_rate_bps": uplink_rate_bps,
        "uplink_rate": format_rate(uplink_rate_bps) if uplink_rate_bps else "unshaped",
        "link_accounting": LinkAccounting.from_registers(result.params).describe(),
        "link_words": " ".join(map(str, link_words)) if link_words is not None else None,
        "ack_slots": result.info.get("ack_slots"),
        "flow_entries": result.info.get("flow_entries"),
        "data_buffer_bytes": result.info.get("data_buffer_bytes"),
        "data_queues": result.info.get("data_queues"),
        "host_buckets": result.info.get("host_buckets"),
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
            "frames_out_plus_superseded_plus_drops": accounted,     # less each cut frame's extra chunks
            "protocol_errors": result.protocol_errors,
        },
    }


def _link_accounting(args, parser):
    """The shaper's link accounting for the options (None: the core's default)."""
    if args.link_words is None:
        return None
    try:
        return cake_accounting(*args.link_words)
    except CakeError as e:
        parser.error(f"--overhead/--mpu/--atm/--ptm/--noatm/--link-preset: {e}")


def _red_setting(text):
    """``--red``: ``off`` (None) or ``MIN_BYTES:MAX_BYTES:MAX_P`` as RED registers."""
    if text == "off":
        return None
    parts = text.split(":")
    if len(parts) != 3:
        raise argparse.ArgumentTypeError(f"{text!r}: give MIN_BYTES:MAX_BYTES:MAX_P or 'off'")
    try:
        lo, hi = int(parts[0]), int(parts[1])
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: MIN_BYTES and MAX_BYTES must be whole numbers "
                                         f"of bytes") from None
    try:
        p = float(parts[2])
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: MAX_P must be a probability 0..1 "
                                         f"or an integer N/65536") from None
    max_p = round(p * 65536) if p <= 1 else p
    if max_p != int(max_p) or not 0 <= max_p <= params.param("red_max_p").maximum:
        raise argparse.ArgumentTypeError(f"{text!r}: MAX_P must be 0..1 or an integer N/65536 "
                                         f"up to 65536")
    rows = {"red_min_bytes": lo, "red_max_bytes": hi}
    for name, value in rows.items():
        q = params.param(name)
        if not q.minimum <= value <= q.maximum:
            raise argparse.ArgumentTypeError(f"{text!r}: {name} must be {q.minimum}..{q.maximum}, "
                                             f"not {value}")
    if lo >= hi:
        raise argparse.ArgumentTypeError(f"{text!r}: MIN_BYTES must be below MAX_BYTES")
    return {"red_enable": 1, **rows, "red_max_p": int(max_p)}


def _chunk_setting(text):
    """``--chunk``: ``off`` or 0, or a chunk size in bytes (a multiple of 16 up to 1456)."""
    from .model.segmenter import check_chunk_bytes
    if text == "off":
        return 0
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of bytes or 'off'") from None
    try:
        return check_chunk_bytes(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def red_registers(setting, uplink_rate_bps):
    """The RED registers of a ``--red`` setting on an uplink of ``uplink_rate_bps``
    (0: unshaped, the idle decay of a 1 Gb/s port)."""
    from .model.red import idle_shift_for_rate
    if setting is None:
        return {}
    return {**setting, "red_idle_shift": idle_shift_for_rate(uplink_rate_bps or 1e9)}


def cmd_replay(args, parser):
    from .sim import replay as rp

    _check_param(parser, "ack_queue_limit", args.ack_slots, "--ack-slots")
    _check_param(parser, "data_share", args.data_share, "--data-share")
    accounting = _link_accounting(args, parser)
    try:
        frames = read_pcap(args.inp)
    except PcapError as e:
        parser.error(str(e))
    if not frames:
        parser.error(f"{args.inp}: the capture holds no frames")
    t0 = frames[0][0]
    in_frames = [((t - t0) / 1e9, data) for t, data in frames]

    # What the user should know before a long run: odd input, a long build.
    early = rp.input_warnings([d for _, d in frames], [t / 1e9 for t, _ in frames])
    for msg in early:
        print(msg, file=sys.stderr)
    elab = rp.elaboration(args.ack_slots, rp.DATA_FIFO if args.fifo else None)
    building = rp.build_needed(elab)
    if building and elab.get("ack_slots", params.ACK_SLOTS) > params.ACK_SLOTS:
        n = elab["ack_slots"]
        print(f"note: --ack-slots {n} is more than the {params.ACK_SLOTS} ACK slots of the "
              f"default core, so a core with {n} ACK slots ({n + 8} ACK buffers of 128 bytes, "
              f"{n} queue places) is generated and compiled by Verilator first: about 2-4 minutes "
              f"on two cores, once (then cached in build/replay/). To avoid it, use --ack-slots "
              f"{params.ACK_SLOTS} or less (the run-time queue limit of the default core).",
              file=sys.stderr, flush=True)
    if not args.quiet:
        rate = format_rate(args.uplink_rate) if args.uplink_rate else "unshaped"
        link = _describe_accounting(accounting, args.link_words)
        print(f"replay: {len(frames)} frames from {args.inp}, uplink {rate} charged {link}, "
              f"ACK filter {args.ack_filter}, RED "
              f"{'off' if args.red is None else '{red_min_bytes}..{red_max_bytes} bytes, max_p {red_max_p}/65536'.format(**args.red)}, "
              f"segmenter {f'{args.chunk}-byte chunks' if args.chunk else 'off'}, "
              f"data {'in one FIFO' if elab.get('flow_queues', params.FLOW_QUEUES) == 0 else 'in per-flow queues'}"
              f"{' (building the simulator first: about 2 minutes, once)' if building else ''}",
              file=sys.stderr, flush=True)
    try:
        result = rp.replay(in_frames, uplink_rate_bps=args.uplink_rate, ack_slots=args.ack_slots,
                           ack_mode=args.ack_filter, data_share=args.data_share,
                           accounting=accounting, elab=elab,
                           csr={**red_registers(args.red, args.uplink_rate),
                                **({"chunk_bytes": args.chunk} if args.chunk else {})},
                           progress=_Progress(len(frames), args.quiet))
    except rp.ReplayError as e:
        print(f"ackfilter replay: error: {e}", file=sys.stderr)
        return 1
    for msg in result.messages:
        if msg not in early:
            print(msg, file=sys.stderr)

    # Egress times: the input's first timestamp + start cycle (exact in ns while
    # 1e9 / F_SYS_HZ is: 20 ns at 50 MHz; else rounded to the ns).
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
                        in_path=args.inp, out_path=args.out, link_words=args.link_words)
    chk = stats["check"]
    if chk["frames_in"] != chk["frames_out_plus_superseded_plus_drops"]:
        print(f"warning: frames_in ({chk['frames_in']}) != frames_out - (seg_chunks - seg_frames) "
              f"+ acks_superseded + drops "
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


#: Commands whose module is not ``ackfilter.sim.<command>``.
_MODULES = {"experiments": "net.experiments"}


def _lazy(module_name):
    def run(args, parser):
        import importlib
        try:
            mod = importlib.import_module(f"ackfilter.sim.{_MODULES.get(module_name, module_name)}")
        except ModuleNotFoundError as e:
            if e.name != f"ackfilter.sim.{_MODULES.get(module_name, module_name)}":
                raise
            parser.error(f"the {module_name} command is not available in this build")
        return mod.main(args)
    return run


def _link_epilog():
    lines = ["link presets (tc-cake(8)'s keywords; --link-preset KEYWORD; \"+N\" adds to the",
             "overhead so far, a plain number sets it; after 'raw', words add to the frame):"]
    for kw in CAKE_KEYWORDS:
        if kw.name in ("atm", "ptm", "noatm"):
            continue
        lines.append(f"  {kw.name:<16} {keyword_summary(kw)}")
        lines.append(f"  {'':<16} {kw.doc}")
    lines += ["",
              "examples: --link-preset docsis (cable), --link-preset pppoe-ptm (VDSL2, PPPoE),",
              "  --overhead 18 --mpu 64 (docsis spelled out), --link-preset conservative (an",
              "  unknown link); --link-preset docsis --overhead 22 is overhead 22 mpu 64 (a",
              "  later overhead replaces the keyword's, as in tc)."]
    return "\n".join(lines)


def make_parser():
    parser = argparse.ArgumentParser(
        prog="ackfilter", description="FPGA TCP ACK filter: simulation and tools.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser(
        "replay", help="run the RTL on a pcap and write what leaves towards the modem",
        description=textwrap.fill(
            "Run the real RTL (Verilator) on the frames of a pcap/pcapng capture as they "
            "arrive on the LAN port, and write the frames that leave towards the modem, "
            "with their egress times.", 79),
        epilog=_link_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--in", dest="inp", required=True, metavar="IN.pcap",
                   help="Ethernet capture (pcap or pcapng) of the LAN side")
    p.add_argument("--out", required=True, metavar="OUT.pcap",
                   help="capture to write (nanosecond pcap)")
    lo, hi = params.rate_limits_bps()
    p.add_argument("--uplink-rate", type=_rate, default=0, metavar="RATE",
                   help=f"shape the uplink to RATE, tc style: {RATE_FORMS}; "
                        f"{format_rate(lo)} .. {format_rate(hi)}, or 0 or 'unshaped' "
                        "(default: unshaped, 1 Gb/s line rate)")
    link = p.add_argument_group(
        "link accounting (tc-cake's; see the list below)", textwrap.fill(
            "What each frame costs the shaped uplink. Without any of these options: the frame "
            "as stored + 24 bytes (preamble, FCS, inter-frame gap: the Ethernet wire). With any "
            "of them, the options are read in order as tc-cake reads its words, so a CAKE/SQM "
            "user's numbers give the same charges; tc-cake's own default is 'raw' (the frame, "
            "nothing added).", 77, initial_indent="  ", subsequent_indent="  "))
    link.add_argument("--overhead", action=_LinkWords, word="overhead", dest="link_words",
                      metavar="N", help="add N bytes (-64..256) to each IP packet (tc-cake: overhead N)")
    link.add_argument("--mpu", action=_LinkWords, word="mpu", dest="link_words", metavar="N",
                      help="charge at least N bytes (0..256) after the overhead (tc-cake: mpu N)")
    for flag, text in (("atm", "round up to 48-byte ATM cells of 53 bytes (ADSL)"),
                       ("ptm", "add 1 byte per 64 or part thereof (PTM 64b/65b, VDSL2)"),
                       ("noatm", "neither (tc-cake's default)")):
        link.add_argument(f"--{flag}", action=_LinkWords, word=flag, dest="link_words", nargs=0,
                          help=text)
    link.add_argument("--link-preset", action=_LinkWords, dest="link_words", metavar="KEYWORD",
                      choices=[k.name for k in CAKE_KEYWORDS if k.name not in ("atm", "ptm", "noatm")],
                      help="a tc-cake keyword (listed below); may be repeated "
                           "(e.g. --link-preset pppoe-ptm --link-preset ether-vlan)")
    p.add_argument("--ack-slots", type=_positive_int, default=None, metavar="N",
                   help="ACK queue length at which drop-from-front starts "
                        "(run-time ack_queue_limit; default: the core's, 64)")
    default_mode = params.default_name("ack_mode")
    p.add_argument("--ack-filter", choices=list(params.ACK_FILTER_MODES), default=default_mode,
                   help=f"ACK filter mode (default: {default_mode}, the core's)")
    p.add_argument("--data-share", type=_positive_int, default=None, metavar="N",
                   help="uplink share guaranteed to data while ACKs wait, in 1/256 "
                        "(0..256, default 128 = 50%%)")
    p.add_argument("--red", type=_red_setting, default=None, metavar="MIN_BYTES:MAX_BYTES:MAX_P",
                   help="RED on the data queue (docs/spec.md section 10): thresholds on the average "
                        "queue in bytes and the probability at MAX_BYTES (0..1, or N/65536 as an "
                        "integer > 1); ECT frames are marked CE, others dropped; gentle, w_q 2^-9, "
                        "the idle decay from --uplink-rate. 'off' (the default): the core's reset, "
                        "RED off")
    p.add_argument("--chunk", type=_chunk_setting, default=0, metavar="BYTES",
                   help="the segmenter (docs/spec.md section 9): TCP segments with more payload leave "
                        "as valid segments of at most BYTES payload each (a multiple of 16, 16..1456), "
                        "so ACKs can leave between them. 'off' or 0 (the default): the core's reset")
    p.add_argument("--fifo", action="store_true",
                   help="upload data in one FIFO in arrival order instead of the board's per-flow "
                        "queues (docs/spec.md section 12): the core built with flow_queues=0, for "
                        "comparison (compiled once, about 2 minutes)")
    p.add_argument("--stats", metavar="FILE.json", help="write statistics (docs/stats.md)")
    p.add_argument("--quiet", "-q", action="store_true",
                   help="no progress or summary output (warnings and notes still go to stderr)")
    p.set_defaults(func=cmd_replay)

    for name, text in (("demo", "run the demonstration scenario"),
                       ("bench", "measure the simulator and the filter on generated traces"),
                       ("fuzz", "mutation campaign: real captures and traces, mutated, replayed "
                                "through the RTL, checked against the model and an independent checker"),
                       ("experiments", "real Linux TCP through the RTL: the research's asymmetric-link "
                                       "scenarios against the CAKE anchors (root)")):
        p = sub.add_parser(name, help=text, description=text, add_help=False)
        p.add_argument("argv", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
        p.set_defaults(func=_lazy(name))
    return parser


_PASSTHROUGH = ("demo", "bench", "fuzz", "experiments")


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
