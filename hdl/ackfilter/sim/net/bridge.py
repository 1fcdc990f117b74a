"""The real-time bridge (``sim/net/bridge.cpp``): build it, run it, read its figures.

The bridge is the Verilated ``core-replay`` top between two TAP devices, plus
the links around it (uplink serializer and delay; downlink FIFO, rate, loss
and delay). :class:`Bridge` starts it, waits for ``ready`` and, on
:meth:`Bridge.stop`, parses what it prints: :class:`BridgeStats`.
"""

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field

from ... import params
from ...paths import REPO_ROOT
from ..replay import build_harness, generate_verilog

__all__ = ["BRIDGE_CPP", "Link", "Bridge", "BridgeStats", "BridgeError", "ValidityBounds",
           "build_bridge", "validity_bounds", "FULL_FRAME_BYTES", "MIN_MAX_LATE_S", "MIN_LATE_S",
           "MAX_LATE_SHARE"]

BRIDGE_CPP = REPO_ROOT / "sim" / "net" / "bridge.cpp"

#: A full-size Ethernet frame as the bridge stores it (no FCS): what the
#: validity bounds measure a link's time in.
FULL_FRAME_BYTES = 1514
#: The floor of the bound on any frame's lateness (a fifth of the 50 ms RTT).
MIN_MAX_LATE_S = 0.010
#: The floor of the lateness from which a frame counts as "late".
MIN_LATE_S = 0.001
#: At most this share of the frames may be late.
MAX_LATE_SHARE = 0.01


@dataclass(frozen=True)
class ValidityBounds:
    """When a run counts: no frame written more than ``max_late_s`` after it
    was due, and at most ``late_share`` of the frames more than ``late_s``."""
    max_late_s: float = MIN_MAX_LATE_S
    late_s: float = MIN_LATE_S
    late_share: float = MAX_LATE_SHARE


def validity_bounds(link):
    """The :class:`ValidityBounds` of a run over ``link``, in proportion to its bottleneck.

    Let T be the bottleneck's time for one full-size frame,
    ``(1514 + overhead) * 8 / min(up_rate, down_rate)`` (a rate of 0, no
    serializer, does not count). A frame may be written at most
    ``max(10 ms, T / 10)`` late, and at most 1 % of the frames more than
    ``max(1 ms, T / 100)`` late. Why: a frame late by a tenth of a
    bottleneck frame slot moves no event by more than that, and the
    bottleneck spaces the events a TCP reacts to (ACKs, data) by a frame slot
    or more; at 28.8 kb/s (T = 420 ms) 12 ms changes nothing a host could
    tell, at 10 Mb/s (T = 1.2 ms) the 10 ms floor, a fifth of the 50 ms RTT,
    still holds. Lateness comes from the machine (a stalled or overslept
    bridge), not from the simulation.

    The lag (the simulation behind the wall clock) is no criterion; the
    bridge still reports it (``max_lag_ms``). It changes what the hosts see
    only through the frames it makes late: arrivals at the core are stamped
    with their wall-clock read time, and a frame leaving the core at
    simulated time t is due at t + serialization + delay on the wall clock,
    so a lag past that makes the frame late, which the bridge measures per
    frame against these bounds. A separate lag bound would only repeat that
    check, less exactly (a lag while the core emits nothing harms nothing).
    """
    rates = [r for r in (link.up_rate_bps, link.down_rate_bps) if r and r > 0]
    slot_s = (FULL_FRAME_BYTES + link.overhead) * 8 / min(rates) if rates else 0.0
    return ValidityBounds(max_late_s=max(MIN_MAX_LATE_S, slot_s / 10),
                          late_s=max(MIN_LATE_S, slot_s / 100))


class BridgeError(RuntimeError):
    """The bridge could not be built, started, or failed while running."""


def build_bridge(elab=None):
    """Path of the bridge binary (generated Verilog + ``bridge.cpp``), built when not cached."""
    return build_harness(generate_verilog(elab), harness=BRIDGE_CPP)


@dataclass
class Link:
    """What the bridge does around the core (see ``bridge.cpp``'s options)."""
    up_rate_bps: float
    down_rate_bps: float = 10e6
    down_queue: int = 10
    up_queue: int = 10              # only for uplink="fifo"
    uplink: str = "core"            # "core" or "fifo" (the modem's own FIFO, no core)
    overhead: int = 0               # bytes added to the frame length (as stored) when charged
    up_delay_s: float = 0.025
    down_delay_s: float = 0.025
    loss: float = 0.0               # independent downlink loss
    ge: tuple = None                # (mean good s, mean bad s, p_good, p_bad) Gilbert-Elliott
    seed: int = 1

    def args(self):
        a = ["--uplink", self.uplink, "--up-rate", repr(float(self.up_rate_bps)),
             "--down-rate", repr(float(self.down_rate_bps)), "--down-queue", str(self.down_queue),
             "--up-queue", str(self.up_queue), "--overhead", str(self.overhead),
             "--up-delay-us", str(round(self.up_delay_s * 1e6)),
             "--down-delay-us", str(round(self.down_delay_s * 1e6)),
             "--seed", str(self.seed)]
        if self.loss:
            a += ["--loss", repr(float(self.loss))]
        if self.ge:
            tg, tb, pg, pb = self.ge
            a += ["--ge", f"{tg * 1e6:.3f}:{tb * 1e6:.3f}:{pg}:{pb}"]
        a += ["--late-us", str(round(validity_bounds(self).late_s * 1e6))]
        return a


@dataclass
class BridgeStats:
    """The bridge's figures (``values``), the core's counters and registers,
    its messages, and the bounds the run is judged by (:func:`validity_bounds`
    of its link; the bridge counted frames late past ``bounds.late_s``)."""
    values: dict
    counters: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)
    messages: list = field(default_factory=list)
    bounds: ValidityBounds = field(default_factory=ValidityBounds)

    def __getitem__(self, key):
        return self.values[key]

    @property
    def max_lag_s(self):
        return self.values["max_lag_ms"] / 1e3

    @property
    def max_late_s(self):
        return max(self.values["up_max_late_ms"], self.values["down_max_late_ms"]) / 1e3

    def late_share(self):
        v = self.values
        frames = v["up_out_frames"] + v["down_out_frames"]
        return (v["up_late_frames"] + v["down_late_frames"]) / frames if frames else 0.0

    @property
    def valid(self):
        return not self.invalid_reason()

    def invalid_reason(self):
        """Why the run does not count ('' when it does); see :func:`validity_bounds`."""
        b = self.bounds
        why = []
        if self.max_late_s > b.max_late_s:
            why.append(f"a frame was written {self.max_late_s * 1e3:.1f} ms late "
                       f"(bound {b.max_late_s * 1e3:.1f} ms)")
        if self.late_share() > b.late_share:
            why.append(f"{self.late_share():.2%} of the frames were written more than "
                       f"{b.late_s * 1e3:.1f} ms late (bound {b.late_share:.1%})")
        if self.values.get("core_overruns"):
            why.append(f"the core dropped {self.values['core_overruns']} frames offered faster "
                       f"than it decides (the bridge's input pace)")
        if self.values["protocol_errors"]:
            why.append(f"{self.values['protocol_errors']} output stream errors")
        for d in ("up", "down"):
            if self.values[f"{d}_write_errors"]:
                err = self.values.get(f"{d}_write_errno", 0)
                why.append(f"{self.values[f'{d}_write_errors']} {d}link TAP write errors"
                           + (f" ({os.strerror(err)})" if err else ""))
        return "; ".join(why)

    def link_rate_bps(self, direction="up"):
        """Charged bit/s at the TAP, from the first frame's write to the last
        (the first frame's bytes not counted: they were sent before the span)."""
        v = self.values
        span = v[f"{direction}_last_out_s"] - v[f"{direction}_first_out_s"]
        if span <= 0:
            return 0.0
        return 8 * (v[f"{direction}_charged_bytes"] - v[f"{direction}_first_charged"]) / span


class Bridge:
    """Run the bridge between ``lan`` and ``wan`` (``(netns, tap_name)`` pairs).

    ``csr``: ``{name: value}`` core parameters (written after reset). The TAPs
    exist from :meth:`start` until the bridge exits."""

    def __init__(self, lan, wan, link, csr=None, *, binary=None, realtime=True, log=None):
        self.lan, self.wan, self.link = lan, wan, link
        self.csr = dict(csr or {})
        self.binary = binary
        self.realtime = realtime
        self.log = log
        self.proc = None
        self._out = []
        self._err = []
        self._threads = []

    def command(self):
        cmd = [str(self.binary or build_bridge()), "--lan", f"{self.lan[0]}:{self.lan[1]}",
               "--wan", f"{self.wan[0]}:{self.wan[1]}", *self.link.args()]
        for name, value in self.csr.items():
            p = params.param(name)
            names = params.ENUMS.get(name, {})
            value = names.get(value, value)
            if not p.minimum <= int(value) <= p.maximum:
                raise ValueError(f"{name} = {value} is out of range {p.minimum}..{p.maximum}")
            cmd += ["--csr", f"{p.addr:#x}={p.to_word(int(value))}"]
        if self.realtime:
            cmd += ["--realtime"]
        return cmd

    def start(self, timeout=10.0):
        cmd = self.command()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            err = self.proc.stderr.read() if self.proc.poll() is not None else ""
            self.proc.kill()
            raise BridgeError(f"bridge did not start: {line.strip()} {err.strip()}")

        def pump(stream, sink, echo):
            for ln in stream:
                sink.append(ln.rstrip("\n"))
                if echo is not None and not ln.startswith("status "):
                    echo(ln.rstrip("\n"))
        self._threads = [threading.Thread(target=pump, args=(self.proc.stdout, self._out, None), daemon=True),
                         threading.Thread(target=pump, args=(self.proc.stderr, self._err, self.log),
                                          daemon=True)]
        for t in self._threads:
            t.start()
        return self

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=20.0):
        """Stop the bridge and return its :class:`BridgeStats`."""
        if self.proc is None:
            raise BridgeError("bridge not started")
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        for t in self._threads:
            t.join(5)
        if rc != 0:
            raise BridgeError(f"bridge exited with {rc}: " + "\n".join(self._err[-20:]))
        values, csr = {}, {}
        for line in self._out:
            parts = line.split()
            if not parts:
                continue
            if parts[0] == "csr":
                csr[int(parts[1], 0)] = int(parts[2])
            elif parts[0] == "lag_hist":
                values["lag_hist"] = [int(x) for x in parts[1:]]
            elif parts[0].endswith("_series"):    # per second: [acks, other frames, their bytes]
                values[parts[0]] = [[int(v) for v in x.split(",")] for x in parts[1:]]
            else:
                values[parts[0]] = float(parts[1]) if "." in parts[1] else int(parts[1])
        if "run_s" not in values:
            raise BridgeError("bridge printed no figures: " + "\n".join(self._err[-20:]))
        counters = {c.name: csr.get(c.addr, 0) | (csr.get(c.addr + 1, 0) << 32) for c in params.COUNTERS}
        readback = {p.name: p.from_word(csr.get(p.addr, 0)) for p in params.PARAMS}
        msgs = [ln for ln in self._err if not ln.startswith("status ")]
        return BridgeStats(values, counters, readback, msgs, validity_bounds(self.link))

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def status_lines(self):
        return [ln for ln in self._err if ln.startswith("status ")]
