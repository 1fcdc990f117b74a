"""Shared cocotb testbench for ``ackfilter_core`` (``docs/spec.md`` section 8).

:class:`TB` owns the clock, the ``now`` counter, the LAN-side driver, the
modem-side monitor, the CSR bus and the event trace; :func:`scoreboard`
replays the trace through the golden model and checks every decision and
every frame that left.
"""

import itertools

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge

from ackfilter import params as P
from ackfilter.model import FilterModel
from ackfilter.model.filter import EVENTS
from ackfilter.model.scoreboard import ARRIVALS, check_run

__all__ = ["TB", "scoreboard", "EVENTS", "frame_words"]

CLK_NS = 16      # 62.5 MHz


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
        self.events = []                # (cycle, name); "OVERRUN" for ev_overrun
        self.o_ready_pattern = itertools.repeat(1)
        dut.i_valid.value = 0
        dut.i_data.value = 0
        dut.i_keep.value = 0
        dut.i_first.value = 0
        dut.i_last.value = 0
        dut.o_ready.value = 0
        dut.now.value = 0
        dut.csr_addr.value = 0
        dut.csr_r_en.value = 0
        dut.csr_w_en.value = 0
        dut.csr_w_data.value = 0
        cocotb.start_soon(Clock(dut.clk, CLK_NS, unit="ns").start())
        cocotb.start_soon(self._time())
        cocotb.start_soon(self._monitor())

    async def reset(self):
        self.dut.rst.value = 1
        for _ in range(4):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0
        await RisingEdge(self.dut.clk)

    async def _time(self):
        while True:
            await RisingEdge(self.dut.clk)
            self.cycle += 1
            self.dut.now.value = self.cycle

    async def _monitor(self):
        dut = self.dut
        cur, start = b"", None
        dut.o_ready.value = next(self.o_ready_pattern)
        while True:
            # Values read at the edge are those the design sampled at it.
            await RisingEdge(dut.clk)
            if dut.ev_valid.value:
                self.events.append((self.cycle, EVENTS[int(dut.ev_kind.value)]))
            if dut.ev_overrun.value:
                self.events.append((self.cycle, "OVERRUN"))
            if dut.o_valid.value and dut.o_ready.value:
                if not cur:
                    start = self.cycle
                n = bin(int(dut.o_keep.value)).count("1")
                cur += int(dut.o_data.value).to_bytes(4, "little")[:n]
                if dut.o_last.value:
                    self.received.append((start, cur))
                    cur = b""
            dut.o_ready.value = next(self.o_ready_pattern)

    # --- LAN side ---------------------------------------------------------
    async def send(self, frame, *, word_interval=1, gap=0):
        """Offer one frame: a word every ``word_interval`` cycles, then ``gap``
        idle cycles. ``word_interval=2, gap=10`` is 1 Gb/s line rate."""
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
                await RisingEdge(dut.clk)
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
        dut.csr_w_en.value = 1
        await RisingEdge(dut.clk)
        dut.csr_w_en.value = 0

    async def csr_read(self, addr):
        dut = self.dut
        dut.csr_addr.value = addr
        dut.csr_r_en.value = 1
        await RisingEdge(dut.clk)
        dut.csr_r_en.value = 0
        await RisingEdge(dut.clk)
        return int(dut.csr_r_data.value)

    async def set_param(self, name, value):
        await self.csr_write(P.param(name).addr, value)

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


def scoreboard(tb, model, *, counters=None):
    """Replay ``tb.events`` through ``model``; check every decision, every
    frame that left (bytes and order) and, if given, the hardware counters.
    Returns the model (see :func:`ackfilter.model.scoreboard.check_run`)."""
    return check_run(model, tb.sent, tb.events, [f for _, f in tb.received], counters=counters)
