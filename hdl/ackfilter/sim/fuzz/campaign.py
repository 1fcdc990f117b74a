"""The mutation campaign: chunks of real and generated frames, mutated, replayed
through the RTL and judged three ways.

Each chunk (deterministic from the seed and its index, :func:`make_chunk`):

1. takes frames from sources laid end to end — windows of the committed
   captures (``sim/captures/*.pcap.gz``), :func:`ackfilter.sim.random_trace.random_trace`,
   :func:`ackfilter.sim.traces.demo_scenario`, a capture window with the parser's
   edge cases (:func:`ackfilter.sim.malformed.malformed_cases`) mixed in, or ACK
   streams of flows whose CAM tags collide (found with the model's tag
   function, when it has one);
2. mutates about a quarter of them in place (:mod:`.mutate`) and stamps each
   frame's source MAC with a counter so every frame is unique;
3. picks settings: ACK filter mode, unshaped or shaped well below the offered
   load, the ACK queue limit (small or the core's), the data share, and a time
   scale (captures replayed as captured or compressed up to back to back);
4. replays it through the Verilated RTL with the event trace
   (:func:`ackfilter.sim.replay.replay`) and checks
   (a) every decision against the golden model
   (:func:`ackfilter.model.scoreboard.check_run`), (b) the output with the
   independent :mod:`.checker`, (c) that it finished within the replay's cycle
   bound, (d) that the counters balance.

A failing chunk is written to ``build/fuzz/seed<S>-chunk<K>/`` (input and
output pcaps, the report, the commands that reproduce it).
"""

import argparse
import json
import random
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ... import params
from .. import traces
from ..malformed import malformed_cases
from ..random_trace import random_trace
from ..pcap import read_pcap, write_pcap
from ...paths import REPO_ROOT
from ..replay import DATA_FIFO, FLOW_QUEUES, ReplayError, replay
from . import checker, mutate

__all__ = ["Settings", "Chunk", "ChunkResult", "load_captures", "make_chunk", "ack_slot_bytes",
           "run_chunk", "run_campaign", "make_parser", "main"]

F_SYS_HZ = params.F_SYS_HZ
CAPTURES_DIR = REPO_ROOT / "sim" / "captures"
OUT_DIR = REPO_ROOT / "build" / "fuzz"
#: Frames per chunk by default (one replay, one model check, one checker run).
CHUNK_FRAMES = 20_000
#: Shaper overhead the core charges per frame by default (for the offered load).
_OVERHEAD = params.param("shaper_overhead_bytes").default


def load_captures(directory=CAPTURES_DIR):
    """``{name: [(time_s, bytes)]}`` of every ``*.pcap.gz`` / ``*.pcap`` in ``directory``."""
    directory = Path(directory)
    files = sorted(list(directory.glob("*.pcap.gz")) + list(directory.glob("*.pcap")))
    return {p.name.split(".pcap")[0]: read_pcap(p, seconds=True, strict=True) for p in files}


# --- chunks --------------------------------------------------------------------

@dataclass
class Settings:
    """Run-time settings of one chunk's replay."""

    ack_mode: str              # "off", "conservative", "aggressive"
    uplink_rate_bps: int       # 0 = unshaped
    ack_slots: int             # run-time ack_queue_limit; None: the core's default
    data_share: int            # 1/256
    time_scale: float          # input times multiplied by this (0: back to back)

    def replay_args(self):
        """The ``ackfilter replay`` options for these settings."""
        args = [f"--ack-filter {self.ack_mode}"]
        if self.uplink_rate_bps:
            args.append(f"--uplink-rate {self.uplink_rate_bps}bit")
        if self.ack_slots is not None:
            args.append(f"--ack-slots {self.ack_slots}")
        args.append(f"--data-share {self.data_share}")
        return " ".join(args)


@dataclass
class Chunk:
    index: int
    source: str                # e.g. "capture ecn [1200:21200]"
    frames: list               # [(time_s, bytes)], times on the core's cycle grid (1 / F_SYS_HZ)
    mutations: list            # per frame: None or the mutation names
    settings: Settings


_MALFORMED = None


def _malformed_frames():
    global _MALFORMED
    if _MALFORMED is None:
        _MALFORMED = [frame for _name, (frame, _cls) in sorted(malformed_cases().items())]
    return _MALFORMED


def _window(rng, frames, n):
    """A random window of at most ``n`` frames, times from 0, and its start index."""
    start = rng.randrange(max(1, len(frames) - n))
    window = frames[start:start + n]
    t0 = window[0][0]
    return start, [(t - t0, f) for t, f in window]


def _piece(rng, captures, n):
    """``(description, [(time_s, bytes)])``: one source piece of at most ``n`` frames, times from 0."""
    kinds = ["capture"] * 5 + ["random"] * 2 + ["demo", "mixed", "collisions"]
    if not captures:
        kinds = ["random", "random", "demo", "collisions"]
    kind = rng.choice(kinds)
    if kind == "collisions":
        piece = _collision_piece(rng, n)
        if piece is not None:
            return piece
        kind = "random"
    if kind in ("capture", "mixed"):
        name = rng.choice(sorted(captures))
        start, out = _window(rng, captures[name], n)
        desc = f"capture {name} [{start}:{start + len(out)}]"
        if kind == "mixed":
            # The parser's edge cases and a random trace's frames sprinkled in.
            span = out[-1][0]
            extra = [f for _t, f in random_trace(rng.getrandbits(32), max(1, n // 10),
                                                        rng.choice((10, 50)))]
            extra += _malformed_frames()
            out += [(rng.uniform(0, span), f) for f in extra]
            out.sort(key=lambda tf: tf[0])
            out = out[:n]
            desc += f" + {len(extra)} random-trace and malformed-case frames"
        return desc, out
    seed = rng.getrandbits(32)
    if kind == "random":
        flows = rng.choice((8, 40, 200, 300))
        return f"random_trace({seed}, {n}, {flows})", random_trace(seed, n, flows)
    start, out = _window(rng, traces.demo_scenario(seed, duration_s=2.0), n)
    return f"demo_scenario({seed}) [{start}:{start + len(out)}]", out


def _model_tag(frame):
    """The model's CAM tag of a pure ACK, or None when the model has no tag function."""
    from ...model import classify
    p = classify(frame, ack_mode=params.ACK_FILTER_MODES["conservative"])
    return getattr(p, "tag", None) if p.cls == "ack" else None


def _collision_piece(rng, n):
    """ACK streams of flows whose CAM tags collide (found through the model's
    tag function); None when the model has none (it then cannot predict them)."""
    seed = rng.getrandbits(32)
    r = random.Random(seed)
    by_tag = {}
    for k in range(6000):
        v6 = r.random() < 0.3
        flow = traces.Flow(
            src=f"2001:db8:{r.getrandbits(16):x}::{r.getrandbits(16):x}" if v6 else
            f"10.{r.randrange(256)}.{r.randrange(256)}.{r.randrange(1, 255)}",
            dst=f"2001:db8:ffff::{r.getrandbits(16):x}" if v6 else f"198.51.100.{r.randrange(1, 255)}",
            sport=r.randrange(1024, 65536), dport=r.choice((80, 443)),
            vlans=((r.choice((0x8100, 0x88A8)), r.randrange(4096)),) if r.random() < 0.2 else ())
        tag = _model_tag(traces.tcp_frame(flow, ack=1, builder="raw"))
        if tag is None:
            return None
        by_tag.setdefault(tag, []).append(flow)
    groups = [flows for flows in by_tag.values() if len(flows) >= 2][:24]
    flows = [f for g in groups for f in g]
    per_flow = max(1, n // max(1, len(flows)))
    out = []
    for flow in flows:
        step = r.choice((1448, 2896, 2896, 0))
        interval = r.uniform(2e-6, 40e-6)
        out += traces.ack_stream(flow, per_flow, r.getrandbits(32), step, start_time=r.uniform(0, 1e-4),
                                 interval=interval, ts=(r.getrandbits(32), r.getrandbits(32)),
                                 ip_id=r.getrandbits(16), builder="raw")
    out.sort(key=lambda tf: tf[0])
    return f"collisions({seed}: {len(groups)} tag groups, {len(flows)} flows)", out[:n]


def _source(rng, captures, n):
    """``(description, [(time_s, bytes)])`` of exactly ``n`` frames: pieces end to end."""
    descs, out = [], []
    while len(out) < n:
        desc, piece = _piece(rng, captures, n - len(out))
        t0 = out[-1][0] + 1e-4 if out else 0.0
        out += [(t0 + t, f) for t, f in piece]
        descs.append(desc)
    return " + ".join(descs), out


def _settings(rng, frames, time_scale):
    mode = rng.choices(("conservative", "aggressive", "off"), (45, 45, 10))[0]
    span = (frames[-1][0] - frames[0][0]) * time_scale if frames else 0.0
    bits = sum(8 * (len(f) + _OVERHEAD) for _t, f in frames)
    # Offered load; back to back means the 1 Gb/s LAN port's.
    offered = min(1e9, bits / span) if span > 0 else 1e9
    if rng.random() < 0.35:
        rate = 0
    else:
        # Well below the offered load: queues build, the ACK pool fills.
        rate = int(max(64_000, min(900e6, offered * rng.uniform(0.05, 0.7))))
    slots = rng.choice((None, None, None, 2, 4, 8, 16, 32))
    share = rng.choice((0, 16, 64, 128, 128, 192, 256))
    return Settings(mode, rate, slots, share, time_scale)


def make_chunk(seed, index, captures, n_frames=CHUNK_FRAMES):
    """Chunk ``index`` of the campaign of ``seed``: deterministic from both and the captures."""
    rng = random.Random(f"ackfilter-fuzz:{seed}:{index}")
    desc, timed = _source(rng, captures, n_frames)
    time_scale = rng.choice((1.0, 1.0, 0.3, 0.1, 0.01, 0.0))
    frames = [f for _t, f in timed]
    applied = mutate.mutate_trace(frames, rng, share=rng.choice((0.1, 0.25, 0.4)))
    frames = mutate.stamp_unique(frames, index << 20)
    # Times on the core's cycle grid (1 / F_SYS_HZ), so a pcap of the chunk replays exactly.
    out = [(round(t * time_scale * F_SYS_HZ) / F_SYS_HZ, f) for (t, _old), f in zip(timed, frames)]
    settings = _settings(rng, out, 1.0)
    settings.time_scale = time_scale
    return Chunk(index, desc, out, applied, settings)


# --- judging -------------------------------------------------------------------

@dataclass
class ChunkResult:
    index: int
    frames: int
    source: str
    settings: Settings
    mismatch: str = ""           # the model scoreboard's first disagreement
    violations: list = field(default_factory=list)   # checker violations (str), the first of each rule
    violation_counts: dict = field(default_factory=dict)   # rule -> number
    hang: str = ""               # ReplayError: cycle bound
    error: str = ""              # other ReplayError
    unbalanced: str = ""         # counters do not balance
    counters: dict = field(default_factory=dict)
    mutations: dict = field(default_factory=dict)   # mutation name -> frames it was applied to
    wallclock_s: float = 0.0
    saved: str = ""              # directory of the saved failure

    @property
    def failed(self):
        return bool(self.mismatch or self.violations or self.hang or self.error or self.unbalanced)


def ack_slot_bytes():
    """ACK slot size of the core under test (the model's constant; the checker gets it as a number)."""
    from ... import model
    return getattr(params, "ACK_SLOT_BYTES", None) or model.ACK_SLOT_BYTES


def _make_model(settings, res):
    """The golden model of the core ``res`` replayed (its sizes and data path,
    read from the core: :meth:`~ackfilter.sim.replay.ReplayResult.model_options`)
    with the chunk's settings."""
    from ...model import FilterModel
    return FilterModel(ack_mode=params.ACK_FILTER_MODES[settings.ack_mode],
                       ack_queue_limit=settings.ack_slots or params.param("ack_queue_limit").default,
                       **({"data_share": settings.data_share} if settings.data_share is not None else {}),
                       **res.model_options())


def balance_error(counters, n_in, n_out):
    """Text of what does not balance in the counters, or ``""``."""
    drops = sum(v for k, v in counters.items() if k.startswith("drop_"))
    problems = []
    if counters["frames_in"] != n_in:
        problems.append(f"frames_in {counters['frames_in']} != {n_in} frames sent")
    if counters["frames_out"] != n_out:
        problems.append(f"frames_out {counters['frames_out']} != {n_out} frames received")
    if counters["frames_in"] != params.frames_accounted(counters):
        problems.append(f"frames_in {counters['frames_in']} != frames_out {counters['frames_out']} + "
                        f"acks_superseded {counters['acks_superseded']} + drops {drops}")
    return "; ".join(problems)


def run_chunk(chunk, *, elab=None):
    """Replay one chunk and judge it; returns a :class:`ChunkResult`."""
    from ...model.scoreboard import check_run
    s = chunk.settings
    result = ChunkResult(chunk.index, len(chunk.frames), chunk.source, s)
    for names in chunk.mutations:
        for name in (names or "").split("+"):
            if name:
                result.mutations[name] = result.mutations.get(name, 0) + 1
    t0 = time.monotonic()
    try:
        res = replay(chunk.frames, uplink_rate_bps=s.uplink_rate_bps, ack_slots=s.ack_slots,
                     ack_mode=s.ack_mode, data_share=s.data_share, events=True, elab=elab)
    except ReplayError as e:
        text = str(e)
        if "did not finish within" in text:
            result.hang = text.splitlines()[0]
        else:
            result.error = text[:2000]
        result.wallclock_s = time.monotonic() - t0
        return result
    sent = [f for _t, f in chunk.frames]
    received = [f for _t, f in res.frames_out]
    result.counters = dict(res.counters)
    try:
        check_run(_make_model(s, res), sent, res.events, received, counters=res.counters)
    except AssertionError as e:
        result.mismatch = str(e) or "AssertionError"
    report = checker.check(sent, received, res.counters, slot_bytes=ack_slot_bytes(),
                           filter_off=(s.ack_mode == "off"))
    result.violations = [str(v) for v in report.violations]
    result.violation_counts = dict(report.counts)
    result.unbalanced = balance_error(res.counters, len(sent), len(received))
    if res.protocol_errors:
        result.error = f"{res.protocol_errors} output stream rule violations"
    result.wallclock_s = time.monotonic() - t0
    result._received = res.frames_out
    return result


def save_failure(chunk, result, seed, n_frames, out_dir=OUT_DIR, elab=None):
    """Write the failing chunk's input/output pcaps and report; returns the directory."""
    fifo = (elab or {}).get("flow_queues", int(params.FLOW_QUEUES)) == 0
    d = Path(out_dir) / f"seed{seed}-chunk{chunk.index}"
    d.mkdir(parents=True, exist_ok=True)
    write_pcap(d / "in.pcap", chunk.frames, seconds=True)
    write_pcap(d / "out.pcap", getattr(result, "_received", []), seconds=True)
    lines = [
        f"ackfilter fuzz: chunk {chunk.index} of seed {seed} failed",
        f"source: {chunk.source}",
        f"settings: {asdict(chunk.settings)}",
        "",
        "reproduce the whole chunk (same frames, settings and checks):",
        f"  ackfilter fuzz --seed {seed} --chunk-frames {n_frames} --only-chunk {chunk.index}"
        + (" --fifo" if fifo else ""),
        "replay its input alone:",
        f"  ackfilter replay --in {d / 'in.pcap'} --out /tmp/out.pcap {chunk.settings.replay_args()}"
        + (" --fifo" if fifo else ""),
        "",
    ]
    if result.hang:
        lines += ["HANG: " + result.hang]
    if result.error:
        lines += ["ERROR: " + result.error]
    if result.unbalanced:
        lines += ["UNBALANCED: " + result.unbalanced]
    if result.mismatch:
        lines += ["MODEL MISMATCH:", result.mismatch]
    if result.violations:
        lines += [f"CHECKER: {sum(result.violation_counts.values())} violations "
                  f"({', '.join(f'{n} {rule}' for rule, n in sorted(result.violation_counts.items()))}); "
                  f"the first 50 of each rule:"] + result.violations
    lines += ["", "mutations (frame index: names):"]
    lines += [f"  #{i}: {m}" for i, m in enumerate(chunk.mutations) if m][:2000]
    (d / "report.txt").write_text("\n".join(lines) + "\n")
    return d


# --- the campaign ----------------------------------------------------------------

def _fmt_time(s):
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def run_campaign(*, seed=1, frames=1_000_000, chunk_frames=CHUNK_FRAMES, captures_dir=CAPTURES_DIR,
                 out_dir=OUT_DIR, only_chunk=None, elab=None, log=None, save=True):
    """Run the campaign; returns ``(summary dict, [ChunkResult])``.

    ``log(text)`` gets the progress lines (None: quiet).
    """
    captures = load_captures(captures_dir)
    n_chunks = max(1, -(-frames // chunk_frames))
    indices = [only_chunk] if only_chunk is not None else range(n_chunks)
    total = chunk_frames * len(indices) if only_chunk is not None else frames
    results = []
    done = 0
    t_start = time.monotonic()
    for k in indices:
        n = chunk_frames if only_chunk is not None else min(chunk_frames, frames - k * chunk_frames)
        chunk = make_chunk(seed, k, captures, n)
        result = run_chunk(chunk, elab=elab)
        if result.failed and save:
            result.saved = str(save_failure(chunk, result, seed, chunk_frames, out_dir, elab=elab))
        results.append(result)
        done += result.frames
        if log:
            elapsed = time.monotonic() - t_start
            rate = done / elapsed if elapsed else 0.0
            eta = (total - done) / rate if rate else 0.0
            failures = sum(r.failed for r in results)
            status = "ok" if not result.failed else _short_failure(result)
            log(f"fuzz: {done:,}/{total:,} frames ({100 * done / total:.0f} %), chunk {k} "
                f"[{chunk.source[:48]}; {chunk.settings.replay_args()}]: {status}; "
                f"{rate:,.0f} frames/s, ETA {_fmt_time(eta)}, {failures} failing chunks")
    elapsed = time.monotonic() - t_start
    summary = {
        "seed": seed,
        "frames": done,
        "chunks": len(results),
        "mismatches": sum(bool(r.mismatch) for r in results),
        "checker_violations": sum(sum(r.violation_counts.values()) for r in results),
        "checker_violations_by_rule": _sum_dicts(r.violation_counts for r in results),
        "hangs": sum(bool(r.hang) for r in results),
        "errors": sum(bool(r.error) for r in results),
        "unbalanced": sum(bool(r.unbalanced) for r in results),
        "failing_chunks": [r.index for r in results if r.failed],
        "counters": _sum_dicts(r.counters for r in results),
        "mutations": _sum_dicts(r.mutations for r in results),
        "settings": _sum_dicts({f"mode {r.settings.ack_mode}": 1,
                                "shaped" if r.settings.uplink_rate_bps else "unshaped": 1,
                                f"ack_slots {r.settings.ack_slots or 'default'}": 1} for r in results),
        "saved": [r.saved for r in results if r.saved],
        "seconds": round(elapsed, 1),
        "frames_per_s": round(done / elapsed) if elapsed else 0,
    }
    return summary, results


def _sum_dicts(dicts):
    total = {}
    for d in dicts:
        for k, v in d.items():
            total[k] = total.get(k, 0) + v
    return total


def _short_failure(r):
    parts = []
    if r.hang:
        parts.append("HANG")
    if r.error:
        parts.append("ERROR")
    if r.mismatch:
        parts.append("model mismatch")
    if r.violations:
        parts.append("checker: " + ", ".join(f"{n} {rule}" for rule, n in sorted(r.violation_counts.items())))
    if r.unbalanced:
        parts.append("unbalanced")
    return "FAIL (" + ", ".join(parts) + f") -> {r.saved or 'not saved'}"


def summary_line(summary):
    return (f"fuzz: seed {summary['seed']}: {summary['frames']:,} frames in {summary['chunks']} chunks, "
            f"{summary['mismatches']} model mismatches, {summary['checker_violations']} checker violations, "
            f"{summary['hangs']} hangs, {summary['unbalanced']} unbalanced, {summary['errors']} errors; "
            f"{summary['seconds']:.0f} s ({summary['frames_per_s']:,} frames/s)")


def _count(text, *, lo, hi, what):
    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what} must be a whole number, not {text!r}")
    if not lo <= value <= hi:
        raise argparse.ArgumentTypeError(f"{what} must be within {lo:,} .. {hi:,}, not {value:,}")
    return value


def make_parser():
    p = argparse.ArgumentParser(
        prog="ackfilter fuzz",
        description="Mutation campaign (issue 9): frames from the committed real captures "
                    "(sim/captures/) and the generated traces, a share of them mutated (header bit "
                    "flips, truncation, random TCP options, nudged ack/SACK/timestamps and flags with "
                    "valid checksums, broken checksums, IPv4 options, VLAN and padding changes), "
                    "replayed through the Verilated RTL in chunks under varied settings (filter mode, "
                    "shaped or not, ACK queue limit, data share). Each chunk is checked decision by "
                    "decision against the golden model, by an independent checker (byte-identical "
                    "survivors, per-flow ACK order, per-flow data order, ACK coverage), for hangs and for "
                    "balanced counters. Exit status 1 when any chunk fails; failing chunks are saved "
                    "as pcaps with the command that reproduces them.",
        epilog="Example: ackfilter fuzz --seed 7 --frames 200000   (make fuzz SEED=7 FRAMES=200000)")
    p.add_argument("--seed", type=lambda t: _count(t, lo=0, hi=2**63 - 1, what="--seed"), default=1,
                   help="campaign seed: the same seed gives the same chunks (default 1)")
    p.add_argument("--frames", type=lambda t: _count(t, lo=1, hi=10**9, what="--frames"),
                   default=1_000_000, help="frames in all (default 1,000,000)")
    p.add_argument("--chunk-frames", type=lambda t: _count(t, lo=100, hi=1_000_000, what="--chunk-frames"),
                   default=CHUNK_FRAMES, help=f"frames per replay (default {CHUNK_FRAMES:,}); part of "
                                              "what a seed means")
    p.add_argument("--only-chunk", type=lambda t: _count(t, lo=0, hi=10**6, what="--only-chunk"),
                   default=None, metavar="K", help="run chunk K alone (to reproduce a failure)")
    p.add_argument("--captures", default=str(CAPTURES_DIR), metavar="DIR",
                   help="directory of *.pcap.gz captures (default sim/captures)")
    p.add_argument("--out", default=str(OUT_DIR), metavar="DIR",
                   help="where failing chunks are saved (default build/fuzz)")
    data = p.add_mutually_exclusive_group()
    data.add_argument("--flow-queues", action="store_true",
                      help="replay the core with per-flow data queues (spec section 12), checked "
                           "against the model's: the board's core, the default")
    data.add_argument("--fifo", action="store_true",
                      help="replay the core built with one data FIFO instead (flow_queues=0), "
                           "checked against the model's FIFO")
    p.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")
    return p


def main(args=None):
    """``ackfilter fuzz``; ``args`` is a namespace with ``argv`` (from the CLI) or a list."""
    argv = getattr(args, "argv", args) or []
    p = make_parser()
    a = p.parse_args(argv)
    if not Path(a.captures).is_dir():
        p.error(f"--captures {a.captures}: no such directory")
    log = None if a.quiet else (lambda text: print(text, file=sys.stderr, flush=True))
    elab = DATA_FIFO if a.fifo else FLOW_QUEUES if a.flow_queues else None    # None: the board's
    summary, _results = run_campaign(seed=a.seed, frames=a.frames, chunk_frames=a.chunk_frames,
                                     captures_dir=a.captures, out_dir=a.out, only_chunk=a.only_chunk,
                                     elab=elab, log=log)
    if a.json:
        print(json.dumps(summary, indent=2))
    print(summary_line(summary), file=sys.stderr)
    for d in summary["saved"]:
        print(f"fuzz: failing chunk saved in {d} (report.txt says how to reproduce it)", file=sys.stderr)
    failed = summary["mismatches"] or summary["checker_violations"] or summary["hangs"] or \
        summary["unbalanced"] or summary["errors"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
