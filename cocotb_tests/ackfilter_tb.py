"""Shared cocotb testbench for ``ackfilter_core`` (``docs/spec.md`` section 8).

:class:`TB` owns the clock, the ``now`` counter, the LAN-side driver, the
modem-side monitor, the CSR bus and the event trace; :func:`scoreboard`
replays the trace through the golden model and checks every decision and
every frame that left.
"""

import itertools
import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge

from ackfilter import params as P
from ackfilter.gateware.csr import READ_LATENCY as CSR_READ_LATENCY
from ackfilter.model import FilterModel
from ackfilter.model.flowq import quantum_for_cpb
from ackfilter.model.pktparse import flow_key
from ackfilter.model.scoreboard import check_run
from ackfilter.model.shaper import LinkAccounting

__all__ = ["TB", "scoreboard", "frame_words", "CLK_NS", "FLOW_QUEUES", "data_order"]

#: The core under test keeps upload data in per-flow queues (spec section
#: 12): set by the pytest wrapper that built it (``runner.CORE_BUILDS``);
#: the board's default (``params.FLOW_QUEUES``) when it does not say.
FLOW_QUEUES = os.environ.get("ACKFILTER_FLOW_QUEUES", str(int(P.FLOW_QUEUES))) == "1"
_PARAM_AT = {p.addr: p.name for p in P.PARAMS}

#: The system clock period in ns (``1e9 / params.F_SYS_HZ``: 20 ns at 50 MHz).
CLK_NS = 1e9 / P.F_SYS_HZ


def frame_words(frame):
    """(data, keep, last) per 32-bit word, byte 0 in lane 0."""
    words = []
    for i in range(0, len(frame), 4):
        chunk = frame[i:i + 4]
        words.append((int.from_bytes(chunk.ljust(4, b"\0"), "little"),
                      (1 << len(chunk)) - 1, i + 4 >= len(frame)))
    return words


class TB:
    """Clock, reset, LAN driver, modem monitor, CSR bus, event trace."""

    def __init__(self, dut):
        self.dut = dut
        self.cycle = 0
        self.sent = []                  # frames offered, in order
        self.received = []              # (start_cycle, frame)
        self.events = []                # (cycle, name); params.OVERRUN_EVENT for ev_overrun
        self.params = {}                # name -> value of every parameter written
        self.o_ready_pattern = itertools.repeat(1)
        self.hold_output = False        # o_ready low whatever the pattern (set_param_live)
        self.live_writes = []           # (event index, name, value, params) of set_param_live
        dut.i_valid.value = 0
        dut.i_data.value = 0
        dut.i_keep.value = 0
        dut.i_first.value = 0
        dut.i_last.value = 0
        dut.o_ready.value = 0
        dut.now.value = 0
        dut.csr_addr.value = 0
        dut.csr_r_stb.value = 0
        dut.csr_w_stb.value = 0
        dut.csr_w_data.value = 0
        cocotb.start_soon(Clock(dut.clk, CLK_NS, unit="ns").start())
        self.edge = RisingEdge(dut.clk)
        cocotb.start_soon(self._every_cycle())

    async def reset(self):
        self.dut.rst.value = 1
        for _ in range(4):
            await self.edge
        self.dut.rst.value = 0
        await self.edge
        # The core takes nothing while it builds its free list of cells (a
        # cell a cycle): a sender that starts at once would start late.
        while not self.dut.i_ready.value:
            await self.edge

    async def _every_cycle(self):
        """Count cycles into ``now``; record events and frames that leave.

        One coroutine with cached handles: this runs every simulated cycle."""
        dut = self.dut
        edge = self.edge
        now, ev_valid, ev_kind, ev_overrun = dut.now, dut.ev_valid, dut.ev_kind, dut.ev_overrun
        o_valid, o_ready, o_keep, o_data, o_last = dut.o_valid, dut.o_ready, dut.o_keep, dut.o_data, dut.o_last
        events, received = self.events, self.received
        cur, start = b"", None
        ready = next(self.o_ready_pattern)
        o_ready.value = ready
        while True:
            # Values read at the edge are those the design sampled at it.
            await edge
            self.cycle += 1
            now.value = self.cycle
            if ev_valid.value:
                events.append((self.cycle, P.EVENTS[int(ev_kind.value)]))
            if ev_overrun.value:
                events.append((self.cycle, P.OVERRUN_EVENT))
            if ready and o_valid.value:
                if not cur:
                    start = self.cycle
                n = bin(int(o_keep.value)).count("1")
                cur += int(o_data.value).to_bytes(4, "little")[:n]
                if o_last.value:
                    received.append((start, cur))
                    cur = b""
            ready = 0 if self.hold_output else next(self.o_ready_pattern)
            o_ready.value = ready

    # --- LAN side ---------------------------------------------------------
    async def send(self, frame, *, word_interval=1, gap=0):
        """Offer one frame: a word every ``word_interval`` cycles (each once
        the one before was taken), then ``gap`` idle cycles. Whole cycles only:
        for exactly 1 Gb/s at any clock see ``tb_linerate.send_at_line_rate``."""
        dut = self.dut
        self.sent.append(frame)
        words = frame_words(frame)
        for n, (data, keep, last) in enumerate(words):
            dut.i_valid.value = 1
            dut.i_data.value = data
            dut.i_keep.value = keep
            dut.i_first.value = int(n == 0)
            dut.i_last.value = int(last)
            while True:
                await self.edge
                if dut.i_ready.value:
                    break
            if word_interval > 1:
                dut.i_valid.value = 0
                for _ in range(word_interval - 1):
                    await RisingEdge(dut.clk)
        dut.i_valid.value = 0
        for _ in range(gap):
            await RisingEdge(dut.clk)

    async def send_all(self, frames, **kw):
        for f in frames:
            await self.send(f, **kw)

    # --- Registers ---------------------------------------------------------
    async def csr_write(self, addr, value):
        dut = self.dut
        dut.csr_addr.value = addr
        dut.csr_w_data.value = value
        dut.csr_w_stb.value = 1
        await RisingEdge(dut.clk)
        dut.csr_w_stb.value = 0
        if addr in _PARAM_AT:
            name = _PARAM_AT[addr]
            self.params[name] = P.param(name).from_word(value)

    async def csr_read(self, addr):
        dut = self.dut
        dut.csr_addr.value = addr
        dut.csr_r_stb.value = 1
        await RisingEdge(dut.clk)
        dut.csr_r_stb.value = 0
        for _ in range(CSR_READ_LATENCY):
            await RisingEdge(dut.clk)
        return int(dut.csr_r_data.value)

    async def set_param(self, name, value):
        await self.csr_write(P.param(name).addr, value)

    async def set_param_live(self, name, value, *, quiet_cycles=300, arrivals=None):
        """Write a register while frames are queued, at a moment the
        scoreboard can place exactly: every frame sent has been reported
        (``arrivals()``, the arrival events so far), and with the output held
        no decision has been made for ``quiet_cycles``; the write is then
        recorded against the number of events so far (:func:`scoreboard`
        applies it to the model there), and the output released."""
        self.hold_output = True
        last, quiet = len(self.events), 0
        while quiet < quiet_cycles or (arrivals is not None and arrivals() < len(self.sent)):
            await self.edge
            quiet = quiet + 1 if len(self.events) == last else 0
            last = len(self.events)
        await self.set_param(name, value)
        self.live_writes.append((len(self.events), name, value, dict(self.params)))
        self.hold_output = False

    def model(self, **kw):
        """The golden model of the core under test, ``FilterModel(**kw)``;
        of the flow-queue build (:data:`FLOW_QUEUES`, whose host buckets are
        the board's ``params.HOST_BUCKETS``) with the DRR quantum and link
        charge of the shaper registers this TB wrote."""
        if FLOW_QUEUES:
            cpb = self.params.get("shaper_cpb_q16", P.param("shaper_cpb_q16").default)
            kw.update(flow_queues=True, quantum=quantum_for_cpb(cpb),
                      charge=LinkAccounting.from_registers(self.params).charge,
                      host_buckets=P.HOST_BUCKETS)
        return FilterModel(**kw)

    async def counters(self):
        out = {}
        for c in P.COUNTERS:
            lo = await self.csr_read(c.addr)
            hi = await self.csr_read(c.addr + 1)
            out[c.name] = lo | hi << 32
        return out

    async def info(self, name):
        return await self.csr_read(P.INFO[name])

    async def drain(self, *, quiet_cycles=200, timeout_cycles=2_000_000):
        """Wait until no frame has left for ``quiet_cycles`` and the core is idle."""
        last = (len(self.received), len(self.events))
        quiet = 0
        for _ in range(timeout_cycles):
            await RisingEdge(self.dut.clk)
            now = (len(self.received), len(self.events))
            if now == last and self.dut.idle.value and not self.dut.backlog.value:
                quiet += 1
                if quiet >= quiet_cycles:
                    return
            else:
                quiet, last = 0, now
        raise AssertionError(f"core did not drain within {timeout_cycles} cycles")


def data_order(frames):
    """The order of data the core keeps (safety rule 1): with one FIFO all
    of ``frames`` in turn; with flow queues (:data:`FLOW_QUEUES`) each
    flow's frames in turn, flows apart (``{flow key: [frame, ...]}``)."""
    if not FLOW_QUEUES:
        return list(frames)
    out = {}
    for f in frames:
        out.setdefault(tuple(flow_key(f)), []).append(f)
    return out


def live_writes(tb):
    """``tb.live_writes`` as the scoreboard takes them: ``(event index,
    apply(model))``. A shaper register changes the flow queues' quantum and
    link charge (as the core derives them); the others are the model's own."""
    out = []
    for index, name, value, written in getattr(tb, "live_writes", ()):   # (or a view of a TB)
        params = {**{p.name: p.default for p in P.PARAMS}, **written}
        if name.startswith("shaper_"):
            kw = {}
            if FLOW_QUEUES:
                kw = dict(quantum=quantum_for_cpb(params["shaper_cpb_q16"]),
                          charge=LinkAccounting.from_registers(dict(params)).charge)
            out.append((index, lambda model, kw=kw: model.set(None, **kw) if kw else None))
        else:
            out.append((index, lambda model, name=name, value=value: model.set(name, value)))
    return out


def scoreboard(tb, model, *, counters=None):
    """Replay ``tb.events`` through ``model``; check every decision, every
    frame that left (bytes and order) and, if given, the hardware counters.
    Registers written with :meth:`TB.set_param_live` are applied to the
    model where they were written. Returns the model (see
    :func:`ackfilter.model.scoreboard.check_run`)."""
    return check_run(model, tb.sent, tb.events, [f for _, f in tb.received], counters=counters,
                     writes=live_writes(tb))
