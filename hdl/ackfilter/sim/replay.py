"""Fast replay: the real RTL, compiled by Verilator, run on a list of frames.

The per-cycle loop is C++ (``sim/replay/harness.cpp``); Python only writes the
input file, starts the binary and reads its results. The Verilog comes from
:func:`ackfilter.sim.verilog.verilog` (cached per sizes and RTL sources); the
harness binary is cached under ``build/replay/<key>/`` (key: hash of the
Verilog text, ``harness.cpp``, the generated ``ackfilter_regs.h``, the
shared headers ``sim/common/wire_pace.h`` and ``core_stream.h``, and the
build command) and rebuilt only when one of them changes.

    >>> res = replay([(0.0, frame0), (0.001, frame1)], uplink_rate_bps=1_000_000)
    >>> res.frames_out[0]      # (time_s, bytes), time in the input's time base
    >>> res.counters["acks_superseded"]
"""

import hashlib
import numbers
import os
import shutil
import struct
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from .. import params
from ..model.shaper import LinkAccounting
from ..paths import REPO_ROOT, build_dir, file_lock
from .verilog import HARNESS_FLAGS, VerilogError, build_executable, verilog, verilog_path
from .wire import OVERHEAD_BYTES, cycles_per_byte

__all__ = [
    "ReplayResult", "ReplayError",
    "replay", "generate_verilog", "build_harness", "run_harness",
    "input_warnings", "build_needed", "elaboration", "DATA_FIFO", "FLOW_QUEUES",
]

#: Elaboration options of the core's two data paths (spec section 12): one
#: data FIFO in arrival order, and the per-flow queues (``params.FLOW_QUEUES``
#: says which the board has; ``{}`` is that one).
DATA_FIFO = {"flow_queues": 0}
FLOW_QUEUES = {"flow_queues": 1}

#: Cycles per second of the core clock (``now`` counts these).
F_SYS_HZ = params.F_SYS_HZ

HARNESS_CPP = REPO_ROOT / "sim" / "replay" / "harness.cpp"
#: The Verilog module the harness drives (the ``core-replay`` top).
TOP = "ackfilter_core"
#: The generated register map the harness includes (``python -m ackfilter.regmap``).
REGS_H = REPO_ROOT / "firmware" / "include" / "ackfilter_regs.h"
#: The 1 Gb/s MAC models the harness (and the net bridge) includes.
WIRE_PACE_H = REPO_ROOT / "sim" / "common" / "wire_pace.h"
#: The core's frame streams as the harness and the net bridge drive and read them.
CORE_STREAM_H = REPO_ROOT / "sim" / "common" / "core_stream.h"
#: The headers copied next to a harness to build it (part of its cache key).
HARNESS_HEADERS = (REGS_H, WIRE_PACE_H, CORE_STREAM_H)

class ReplayError(RuntimeError):
    """Generating, building or running the replay failed."""


@dataclass
class ReplayResult:
    #: ``(time_s, frame)`` for each frame leaving the core, in order; time is the
    #: start of the frame on the output, in the time base of the input list.
    frames_out: list
    #: ``(cycle, kind_name)`` per event (only with ``events=True``); cycle 0 is
    #: the arrival of the first input frame.
    events: list
    #: Every counter of ``params.COUNTERS``, 64-bit.
    counters: dict
    #: Every word of ``params.INFO``.
    info: dict
    #: ``now`` when traffic was over (cycle 0 = first input frame).
    cycles: int
    #: Wall time of the simulation (reset, traffic, CSR read-out).
    wallclock_s: float
    #: Run-time parameters as read back from the core.
    params: dict = field(default_factory=dict)
    #: Start cycle of each frame of ``frames_out``.
    out_cycles: list = field(default_factory=list)
    #: Raw CSR words, address -> value.
    csr: dict = field(default_factory=dict)
    #: Output stream rule violations the harness saw (should be 0).
    protocol_errors: int = 0
    #: Warnings the harness printed.
    messages: list = field(default_factory=list)
    #: Verilog file and harness binary used.
    verilog: Path = None
    binary: Path = None

    @property
    def sim_seconds(self):
        return self.cycles / F_SYS_HZ

    def model_options(self):
        """The :class:`~ackfilter.model.FilterModel` options that describe the
        core this run replayed, read from the core itself (its information
        words and registers): its sizes, and with per-flow data queues the
        DRR quantum of its shaper's rate, the credit charged as its shaper
        charges, and its host buckets. The run-time settings (``ack_mode``,
        RED, ...) are the caller's."""
        from ..model.flowq import quantum_for_cpb
        opts = {"ack_slots": self.info["ack_slots"], "flow_entries": self.info["flow_entries"]}
        if self.info.get("data_queues"):
            opts.update(flow_queues=True,
                        quantum=quantum_for_cpb(self.params["shaper_cpb_q16"]),
                        charge=LinkAccounting.from_registers(self.params).charge,
                        host_buckets=self.info.get("host_buckets", 0))
        return opts


# --- tools ------------------------------------------------------------------

def _hash(*parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else str(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def build_needed(elab=None):
    """True when :func:`replay` with these elaboration options must generate
    Verilog and compile a harness first (minutes), False when both are cached."""
    if os.environ.get("ACKFILTER_REPLAY_VERILOG"):
        verilog = Path(os.environ["ACKFILTER_REPLAY_VERILOG"])
    else:
        verilog = verilog_path("core-replay", **dict(elab or {}))
        if not verilog.is_file():
            return True
    return not _harness_path(verilog).exists()


def generate_verilog(elab=None):
    """Path of ``ackfilter_core.v`` for these elaboration options
    (:func:`ackfilter.sim.verilog.verilog`: generated when not cached).

    The environment variable ``ACKFILTER_REPLAY_VERILOG=FILE.v`` replaces the
    generated file (debugging aid; a ``core-replay`` top, whose reset the
    harness drives one cycle less)."""
    override = os.environ.get("ACKFILTER_REPLAY_VERILOG")
    if override:  # debugging aid: replay a given netlist instead of generating one
        return Path(override)
    try:
        return verilog("core-replay", **dict(elab or {}))
    except VerilogError as e:
        raise ReplayError(str(e)) from None


_KEEP_BUILDS = 6


def _prune(parent, keep):
    """Remove all but the ``keep`` most recently used finished builds."""
    done = [d for d in parent.iterdir() if d.is_dir() and ".tmp-" not in d.name
            and (d / "replay").exists()]
    done.sort(key=lambda d: d.stat().st_mtime, reverse=True)
    for d in done[keep:]:
        shutil.rmtree(d, ignore_errors=True)


def _harness_path(verilog, harness=HARNESS_CPP):
    key = _hash(Path(verilog).read_bytes(), Path(harness).read_bytes(),
                *(h.read_bytes() for h in HARNESS_HEADERS), " ".join(HARNESS_FLAGS), TOP)
    return build_dir() / "replay" / key / "replay"


def build_harness(verilog, *, harness=HARNESS_CPP):
    """Path of the replay binary for this Verilog file, built when not cached."""
    verilog = Path(verilog)
    vtext = verilog.read_bytes()
    htext = Path(harness).read_bytes()
    binary = _harness_path(verilog, harness)
    final = binary.parent
    key = final.name
    if binary.exists():
        os.utime(final)  # most recently used, for _prune
        return binary
    final.parent.mkdir(parents=True, exist_ok=True)
    # One build per model: a parallel caller (another pytest-xdist worker)
    # waits for it instead of compiling the same model beside it.
    with file_lock(final.parent / f".{key}.lock"):
        if binary.exists():
            return binary
        _build_harness(vtext, htext, binary)
    return binary


def _build_harness(vtext, htext, binary):
    files = {"ackfilter_core.v": vtext, "harness.cpp": htext,
             **{header.name: header.read_bytes() for header in HARNESS_HEADERS}}
    build_executable(binary.parent, binary.name, files, ["ackfilter_core.v", "harness.cpp"],
                     top=TOP, error=ReplayError)
    _prune(binary.parent.parent, keep=_KEEP_BUILDS)


# --- running ------------------------------------------------------------------

def _csr_value(name, value):
    """``(address, bus word)`` that writes ``value`` to the parameter ``name``."""
    p = params.param(name)
    names = params.ENUMS.get(name, {})
    if isinstance(value, str) and value in names:
        value = names[value]
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer{' or one of ' + ', '.join(names) if names else ''}, "
                        f"not {value!r}")
    value = int(value)
    if not p.minimum <= value <= p.maximum:
        raise ValueError(f"{name} = {value} is out of range {p.minimum}..{p.maximum}")
    return p.addr, p.to_word(value)


def elaboration(ack_slots=None, elab=None):
    """The elaboration options :func:`replay` uses: ``elab``, with its ACK
    slots raised to ``ack_slots`` when that is more (the run-time queue limit
    cannot exceed the slots the core was built with)."""
    elab = dict(elab or {})
    if ack_slots is not None and ack_slots > elab.get("ack_slots", params.ACK_SLOTS):
        elab["ack_slots"] = ack_slots
    return elab


def input_warnings(frames, times=None):
    """Warnings about an input a user should know of before trusting the run:
    frames longer than the core takes, and timestamps out of order (one line
    each, with the count)."""
    from ..params import MAX_FRAME_BYTES
    out = []
    lengths = [len(f) for f in frames]
    big = [n for n in lengths if n > MAX_FRAME_BYTES]
    if big:
        out.append(
            f"warning: {len(big)} of {len(frames)} frames are longer than the core's maximum of "
            f"{MAX_FRAME_BYTES} bytes (the longest {max(big)}): the core drops them (drop_oversize). "
            "Frames this long in a capture usually come from a host with segmentation or receive "
            "offloads on (TSO/GSO/GRO glue segments into super-packets before tcpdump sees them) or "
            "from jumbo frames; capture with the offloads off "
            "(ethtool -K IFACE tso off gso off gro off lro off) for a trace the uplink would see")
    if times is not None:
        back = [(a - b) for a, b in zip(times, times[1:]) if b < a]
        if back:
            out.append(
                f"warning: {len(back)} frames have a timestamp earlier than the frame before them "
                f"(by up to {max(back) * 1e3:.3f} ms): they are fed in file order, each right after "
                "the one before it, not sorted by time")
    return out


def run_harness(binary, in_path, out_path, *, csr_writes=(), events_path=None,
                max_cycles=None, progress=None, feed=None, read_last=None, link_mbps=1000):
    """Run a built harness on files; returns (stdout dict, warning lines).

    ``csr_writes``: (addr, value) pairs. ``progress(frames_in, frames_out, cycle)``
    is called about once a second. The harness reads the CSR words 0 ..
    ``read_last`` at the end (default: the parameter table's last address).
    ``feed``: None (the LAN side at 1 Gb/s) or ``(cycles_per_word, gap_cycles)``
    (see :func:`replay`)."""
    cmd = [str(binary), str(in_path), str(out_path),
           "--csr-read-last", f"{params.csr_last() if read_last is None else read_last:#x}"]
    if events_path is not None:
        cmd += ["--events", str(events_path)]
    for addr, value in csr_writes:
        cmd += ["--csr", f"{addr:#x}={value}"]
    if max_cycles is not None:
        cmd += ["--max-cycles", str(int(max_cycles))]
    if link_mbps != 1000:
        cmd += ["--mbps", str(int(link_mbps))]
    if feed is not None:
        cycles_per_word, gap = feed
        cmd += ["--in-cycles-per-word", str(int(cycles_per_word)), "--in-gap", str(int(gap))]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out_chunks = []
    reader = threading.Thread(target=lambda: out_chunks.append(proc.stdout.read()), daemon=True)
    reader.start()
    messages = []
    for line in proc.stderr:
        line = line.rstrip("\n")
        if line.startswith("progress "):
            if progress is not None:
                fi, fo, cyc = (int(x) for x in line.split()[1:4])
                progress(fi, fo, cyc)
        elif line:
            messages.append(line)
    rc = proc.wait()
    reader.join()
    if rc != 0:
        tail = "\n".join(messages[-20:])
        if rc == 3:
            raise ReplayError(f"replay did not finish within {max_cycles} cycles "
                              f"(the core may be stuck):\n{tail}")
        raise ReplayError(f"replay harness failed (exit {rc}):\n{tail}")
    csr = {}
    stats = {}
    for line in "".join(out_chunks).splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "csr":
            csr[int(parts[1], 0)] = int(parts[2], 0)
        elif parts[0] == "wallclock_s":
            stats["wallclock_s"] = float(parts[1])
        else:
            stats[parts[0]] = int(parts[1])
    stats["csr"] = csr
    return stats, messages


def _write_frames(path, arrivals, frames):
    with open(path, "wb", buffering=1 << 20) as f:
        for cyc, data in zip(arrivals, frames):
            f.write(struct.pack("<QI", cyc, len(data)))
            f.write(data)


def _read_frames(path):
    out = []
    data = Path(path).read_bytes()
    pos = 0
    while pos < len(data):
        cyc, n = struct.unpack_from("<QI", data, pos)
        pos += 12
        out.append((cyc, data[pos:pos + n]))
        pos += n
    return out


def _read_events(path):
    data = Path(path).read_bytes()
    names = dict(enumerate(params.EVENTS))       # the harness writes ev_overrun as OVERRUN_KIND
    names[params.OVERRUN_KIND] = params.OVERRUN_EVENT
    return [(cyc, names.get(kind, f"KIND_{kind}"))
            for cyc, kind in struct.iter_unpack("<QB", data)]


def _wire_cycles(frame_bytes, feed, link_mbps=1000):
    """Cycles (whole, rounded up) the harness's LAN side takes to feed a frame."""
    if feed is None:                          # ceil((L + 24) * cycles per byte)
        cpb = cycles_per_byte() * (1000 // link_mbps)
        return -(-(frame_bytes + OVERHEAD_BYTES) * cpb.numerator // cpb.denominator)
    cycles_per_word, gap = feed
    return cycles_per_word * ((frame_bytes + 3) // 4) + gap


def _max_cycles_bound(arrivals, frames, cpb_q16, csr_values, feed=None, link_mbps=1000):
    """A generous upper bound on the cycles a correct core needs."""
    # Charged on the frame: never less than on its IP packet (which is shorter).
    acc = LinkAccounting.from_registers(csr_values)
    acc = LinkAccounting(overhead_bytes=acc.overhead_bytes, mpu_bytes=acc.mpu_bytes,
                         link_layer=acc.link_layer)
    wire = sum(_wire_cycles(len(f), feed, link_mbps) + 2 for f in frames)
    shaped = sum(acc.charged_bytes(len(f)) * cpb_q16 for f in frames) >> 16
    last = max(arrivals, default=0)
    return 2 * (last + 2 * wire + shaped) + 1_000_000


def replay(in_frames, *, uplink_rate_bps=0, ack_slots=None, ack_mode="conservative",
           data_share=None, accounting=None, events=False, progress=None, elab=None, csr=None,
           max_cycles=None, keep_files=None, feed=None, link_mbps=1000):
    """Run the RTL on ``in_frames`` (``[(time_s, bytes), ...]``, LAN side).

    * ``uplink_rate_bps``: shaper rate in bit/s; exactly 0 = unshaped, else
      within :func:`params.rate_limits_bps` (a ``ValueError`` otherwise);
    * ``accounting``: the shaper's link accounting, a
      :class:`~ackfilter.model.shaper.LinkAccounting` (e.g.
      ``ackfilter.model.cake.cake_accounting("docsis")``); None: the core's default,
      the Ethernet wire (the frame + 24 bytes);
    * ``ack_slots``: run-time ``ack_queue_limit`` (None: the core's default);
      when larger than the elaboration's ACK slots, ``elab["ack_slots"]`` is
      raised to match;
    * ``ack_mode``: "off", "conservative" or "aggressive";
    * ``data_share``: data share in 1/256 (None: the core's default);
    * ``events``: collect the event trace;
    * ``progress(frames_in, frames_out, cycle)``: called about once a second;
    * ``elab``: elaboration options for ``gen_verilog`` (``{"ack_slots": 128}``
      becomes ``--ack-slots 128``);
    * ``csr``: more run-time parameters by name, e.g. ``{"shaper_burst_bytes": 3000}``
      (negative values for signed ones; names for ``ack_mode``,
      ``shaper_charge_base``, ``shaper_link_layer``); applied last;
    * ``max_cycles``: give up (``ReplayError``) past this cycle (default: a
      generous bound from the input);
    * ``keep_files``: a directory to keep the harness's input/output files in;
    * ``feed``: the LAN-side MAC model. None (the default): exactly 1 Gb/s at
      the core's clock, a frame of ``L`` bytes taking ``L + 24`` byte times
      (:mod:`ackfilter.sim.wire`; 84 byte times = 33.6 cycles for a 60-byte
      frame at 50 MHz), each word offered from the first cycle at or after its
      wire time; ``(cycles_per_word, gap_cycles)``: a word every
      ``cycles_per_word`` cycles and ``gap_cycles`` more after a frame
      (``(1, 0)`` offers words back to back, faster than any 1 Gb/s MAC);
    * ``link_mbps``: 1000 (the default), 100 or 10: both MAC models (the LAN
      side's without ``feed``, and the modem side's) at that rate.

    Frame times are rounded to cycles of the core's clock (``1 / F_SYS_HZ``),
    counted from the first frame.
    """
    if ack_mode not in params.ACK_FILTER_MODES:
        raise ValueError(f"ack_mode must be one of {', '.join(params.ACK_FILTER_MODES)}, "
                         f"not {ack_mode!r}")
    csr_values = {}
    csr_values["ack_mode"] = params.ACK_FILTER_MODES[ack_mode]
    cpb = params.cpb_q16_for_rate(uplink_rate_bps)
    csr_values["shaper_cpb_q16"] = cpb
    if ack_slots is not None:
        csr_values["ack_queue_limit"] = ack_slots
    elab = elaboration(ack_slots, elab)
    if data_share is not None:
        csr_values["data_share"] = data_share
    if accounting is not None:
        if not isinstance(accounting, LinkAccounting):
            raise TypeError(f"accounting must be a LinkAccounting, not {accounting!r}")
        csr_values.update(accounting.registers())
    for name, value in (csr or {}).items():
        csr_values[name] = value
    csr_writes = [_csr_value(name, value) for name, value in csr_values.items()]
    csr_values = {name: params.param(name).from_word(word)          # names as numbers
                  for name, (_addr, word) in zip(csr_values, csr_writes)}

    frames = []
    times = []
    for t, data in in_frames:
        data = bytes(data)
        if not data:
            raise ValueError("an input frame is empty")
        times.append(t)
        frames.append(data)
    t0 = times[0] if times else 0.0
    arrivals = [max(0, round((t - t0) * F_SYS_HZ)) for t in times]
    if max_cycles is None:
        max_cycles = _max_cycles_bound(arrivals, frames, cpb, csr_values, feed, link_mbps)

    verilog = generate_verilog(elab)
    binary = build_harness(verilog)

    tmpdir = None
    if keep_files is None:
        tmpdir = tempfile.TemporaryDirectory(prefix="ackfilter-replay-")
        workdir = Path(tmpdir.name)
    else:
        workdir = Path(keep_files)
        workdir.mkdir(parents=True, exist_ok=True)
    try:
        in_path, out_path = workdir / "in.frames", workdir / "out.frames"
        ev_path = workdir / "events.bin" if events else None
        _write_frames(in_path, arrivals, frames)
        stats, messages = run_harness(binary, in_path, out_path, csr_writes=csr_writes,
                                      events_path=ev_path, max_cycles=max_cycles,
                                      progress=progress, feed=feed, link_mbps=link_mbps)
        messages = input_warnings(frames, times) + messages
        out = _read_frames(out_path)
        evs = _read_events(ev_path) if events else []
    finally:
        if tmpdir is not None:
            tmpdir.cleanup()

    words = stats["csr"]
    missing = [a for a in range(params.csr_last() + 1) if a not in words]
    if missing:
        raise ReplayError(f"harness did not report CSR words {missing[:8]}")
    counters = {c.name: words[c.addr] | (words[c.addr + 1] << 32) for c in params.COUNTERS}
    info = {name: words[addr] for name, addr in params.INFO.items()}
    readback = {p.name: p.from_word(words[p.addr]) for p in params.PARAMS}
    if ack_slots is not None and info.get("ack_slots", ack_slots) < ack_slots:
        messages.append(f"warning: the core has {info['ack_slots']} ACK slots, "
                        f"fewer than the {ack_slots} asked for")
    return ReplayResult(
        frames_out=[(t0 + cyc / F_SYS_HZ, data) for cyc, data in out],
        events=evs,
        counters=counters,
        info=info,
        cycles=stats["cycles"],
        wallclock_s=stats["wallclock_s"],
        params=readback,
        out_cycles=[cyc for cyc, _ in out],
        csr=words,
        protocol_errors=stats.get("protocol_errors", 0),
        messages=messages,
        verilog=verilog,
        binary=binary,
    )
