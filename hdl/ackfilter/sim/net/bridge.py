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
from ..replay import REPO_ROOT, build_harness, generate_verilog

__all__ = ["BRIDGE_CPP", "Link", "Bridge", "BridgeStats", "BridgeError", "build_bridge",
           "MAX_LAG_S", "MAX_LATE_S", "MAX_LATE_SHARE"]

BRIDGE_CPP = REPO_ROOT / "sim" / "net" / "bridge.cpp"

#: A run is valid when the simulation never fell further behind the wall clock
#: than this while the core had work. A lag below the one-way delay (25 ms in
#: the experiments) changes no frame's timing: a frame leaving the core at
#: simulated time t is written to the far TAP at t + serialization + delay,
#: a wall-clock instant still ahead when the lag is smaller than the delay.
#: 20 ms keeps 5 ms of margin. (Upload bursts make the lag: a 1514-byte
#: frame takes the simulation about 0.5 ms, the wire 12 us.)
MAX_LAG_S = 0.020
#: ... no frame was written to a TAP more than this after it was due (a
#: fifth of the RTT) ...
MAX_LATE_S = 0.010
#: ... and at most this share of the frames was written more than 1 ms late.
#: What makes frames late is the machine, not the simulation: on a 2-core VM
#: the bridge, a SCHED_FIFO task, has overslept a 1 ms ppoll by 2.6 ms now
#: and then, which at 10 Mb/s delays the two or three frames due meanwhile
#: by about one frame time (1.2 ms) each.
MAX_LATE_SHARE = 0.01


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
        return a


@dataclass
class BridgeStats:
    values: dict
    counters: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)
    messages: list = field(default_factory=list)

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
        """Why the run does not count ('' when it does)."""
        why = []
        if self.max_lag_s > MAX_LAG_S:
            why.append(f"simulation fell {self.max_lag_s * 1e3:.1f} ms behind the wall clock "
                       f"(bound {MAX_LAG_S * 1e3:.0f} ms)")
        if self.max_late_s > MAX_LATE_S:
            why.append(f"a frame was written {self.max_late_s * 1e3:.1f} ms late "
                       f"(bound {MAX_LATE_S * 1e3:.0f} ms)")
        if self.late_share() > MAX_LATE_SHARE:
            why.append(f"{self.late_share():.2%} of the frames were written more than 1 ms late "
                       f"(bound {MAX_LATE_SHARE:.1%})")
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
        return BridgeStats(values, counters, readback, msgs)

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def status_lines(self):
        return [ln for ln in self._err if ln.startswith("status ")]
