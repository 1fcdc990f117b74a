"""The parameter and counter register bank of the uplink core.

Built from :mod:`ackfilter.params`, the single table of names, addresses,
widths and defaults. The bus (:data:`CSRBusSignature`, the usual CSR bus
names, so a CPU bus bridge attaches as it is) is a word-addressed register
port: ``r_stb`` with ``addr`` gives ``r_data`` two cycles later (it holds
until the next read's), and comes at most every other cycle; ``w_stb`` with
``addr``/``w_data`` writes (the parameter holds the value from the second
cycle after the strobe's). Writes to parameters are
clamped to the range the table gives; a signed parameter reads ``w_data`` as
a signed 32-bit word and reads back sign-extended (a write of -10 reads as
0xFFFFFFF6). Reading a counter's low word latches its high word, so
low-then-high is one atomic 64-bit read. The counters' values live in block
RAM, not in 64-bit registers with an adder each (a control plane on the bus
keeps every register live, and 22 such counters with their read multiplexer
took 4,700 LUT4 of the 25F; in LUT RAM with two read ports they still took
about 500 LUT positions): each counter gathers its increments in a short
pending sum, and a sweep adds one counter's sum to its value per step, each
in turn; a bus read of a counter takes the RAM's read port for a cycle, and
the sweep waits. So a counter shows an event within 2N + 3 cycles (N
counters, 22), and ``busy`` is high while any increment is registered or
pending (and during the first sweep after a reset, which clears the values).
"""

from amaranth.hdl import *
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .. import params as P

__all__ = ["CSRBusSignature", "CSRBank", "param_layout", "counter_layout", "info_layout",
           "ADDR_BITS", "DATA_BITS", "READ_LATENCY"]

ADDR_BITS = 8
DATA_BITS = 32
#: Cycles from ``r_stb`` to its ``r_data`` (``params.CSR_READ_LATENCY``).
READ_LATENCY = P.CSR_READ_LATENCY

#: The register bus, seen from the side that drives it (a CPU bridge, a
#: harness): ``addr``, ``r_stb``, ``w_stb`` and ``w_data`` out, ``r_data`` in
#: (two cycles after ``r_stb``; at most one ``r_stb`` in two cycles).
CSRBusSignature = wiring.Signature({
    "addr":   Out(ADDR_BITS),
    "r_stb":  Out(1),
    "r_data": In(DATA_BITS),
    "w_stb":  Out(1),
    "w_data": Out(DATA_BITS),
})


def param_layout():
    """One field per parameter, named and shaped as the table says."""
    return data.StructLayout({p.name: signed(p.width) if p.signed else unsigned(p.width)
                              for p in P.PARAMS})


def counter_layout():
    """One increment per counter, ``inc_bits`` wide (a strobe, or a byte count)."""
    return data.StructLayout({c.name: c.inc_bits for c in P.COUNTERS})


def info_layout():
    """One 32-bit word per read-only register the core supplies (all but ``id``)."""
    return data.StructLayout({name: 32 for name in P.INFO if name != "id"})


class CSRBank(wiring.Component):
    """Registers for every entry of ``params.PARAMS``/``COUNTERS``/``INFO``.

    Ports
    -----
    bus : In(CSRBusSignature)     the register bus
    params : Out(param_layout())  current value of each parameter (``params.ack_mode``, ...)
    inc : In(counter_layout())    amount to add to each counter this cycle (``inc_bits`` wide)
    info : In(info_layout())      read-only words (capacities, live levels)
    busy : Out(1)                 a write, or an increment, is registered or pending, or the values are
                                  being cleared after a reset
    """

    def __init__(self):
        super().__init__({
            "bus":    In(CSRBusSignature),
            "params": Out(param_layout(), init={p.name: p.default for p in P.PARAMS}),
            "inc":    In(counter_layout()),
            "info":   In(info_layout()),
            "busy":   Out(1),
        })
        # The counters' state, here before elaboration for the proofs
        # (ackfilter.formal): their values in block RAM, each counter's
        # registered increment and pending sum (by counter index; a counter
        # waits at most 2N + 2 cycles for the sweep), the sweep's place, and
        # whether it is still clearing after a reset.
        n = len(P.COUNTERS)
        self.values = Memory(shape=64, depth=1 << (n - 1).bit_length(), init=[],
                             attrs={"ram_style": "block"})
        self.incs = [Signal(c.inc_bits, name=f"inc_{c.name}_q") for c in P.COUNTERS]
        self.pends = [Signal(c.inc_bits + (2 * n + 2).bit_length(), name=f"pend_{c.name}")
                      for c in P.COUNTERS]
        self.upd = Signal(range(n))                  # the counter whose value is out of the RAM
        self.upd_valid = Signal()                    # ... read by the sweep (not by the bus)
        self.clearing = Signal(init=1)
        self.hi_latch = Signal(32)

    def elaborate(self, platform):
        m = Module()
        bus = self.bus

        # Writes: one clamp for all parameters, its bounds and signedness
        # chosen by the address (a pair of 33-bit compares instead of a pair
        # per parameter). The write is registered first and takes effect a
        # cycle later (strobes come at most every other cycle): the bus
        # comes from the CPU's side of the chip, and the address decode, the
        # bounds and the compares' carry chains did not fit in the same cycle.
        w_stb, w_addr, w_data = Signal(), Signal.like(bus.addr), Signal.like(bus.w_data)
        m.d.sync += [w_stb.eq(bus.w_stb), w_addr.eq(bus.addr), w_data.eq(bus.w_data)]

        def by_param(value_of, shape):
            table = [C(0, shape)] * 32
            for p in P.PARAMS:
                table[p.addr - P.PARAM_BASE] = C(value_of(p), shape)
            return Array(table)[w_addr[0:5]]

        assert all(P.PARAM_BASE <= p.addr < P.PARAM_BASE + 32 for p in P.PARAMS)
        w_signed = by_param(lambda p: int(p.signed), 1)
        w_min, w_max = by_param(lambda p: p.minimum, signed(33)), by_param(lambda p: p.maximum, signed(33))
        w_value = Signal(signed(33))
        w_clamped = Signal(signed(33))
        m.d.comb += [
            w_value.eq(Mux(w_signed, w_data.as_signed(), w_data)),
            w_clamped.eq(Mux(w_value < w_min, w_min, Mux(w_value > w_max, w_max, w_value))),
        ]
        for p in P.PARAMS:
            with m.If(w_stb & (w_addr == p.addr)):
                m.d.sync += self.params[p.name].eq(w_clamped)

        # Counters: the 64-bit values in block RAM (one read port, one write
        # port), each counter's recent increments in a short pending sum; a
        # sweep reads one counter's value per cycle and, a cycle later,
        # writes it back with the pending sum added, every counter in turn.
        # A bus read of a counter borrows the read port for its cycle (the
        # sweep waits), so the sweep advances at least every other cycle (the
        # bus reads at most every other cycle) and a value lags its
        # increments by at most 2N + 2 cycles (N counters). After a reset
        # the first sweep writes zeros.
        n = len(P.COUNTERS)
        m.submodules.values = values = self.values
        rd = values.read_port(transparent_for=())
        wr = values.write_port()
        ptr = Signal(range(n))                  # the counter the sweep reads next
        upd, upd_valid, clearing = self.upd, self.upd_valid, self.clearing
        incs, pends = self.incs, self.pends
        for c, inc in zip(P.COUNTERS, incs):
            m.d.sync += inc.eq(self.inc[c.name])
        pend_now = Array(pends)[upd]
        counter_index = {c.name: (c.addr - P.COUNTER_BASE) // 2 for c in P.COUNTERS}
        assert sorted(counter_index.values()) == list(range(n))
        assert P.PARAM_BASE == 0x00 and P.INFO_BASE == 0x20 and P.COUNTER_BASE == 0x40
        bus_counter_read = bus.r_stb & (bus.addr[6:8] != 0) & ~bus.addr[0]
        m.d.comb += [
            rd.addr.eq(Mux(bus_counter_read, bus.addr[1:6], ptr)),
            wr.addr.eq(upd), wr.en.eq(upd_valid),
            wr.data.eq(Mux(clearing, 0, rd.data) + pend_now),
        ]
        m.d.sync += [upd.eq(ptr), upd_valid.eq(~bus_counter_read)]
        with m.If(~bus_counter_read):
            with m.If(ptr == n - 1):
                m.d.sync += ptr.eq(0)
            with m.Else():
                m.d.sync += ptr.eq(ptr + 1)
        for i, (inc, pend) in enumerate(zip(incs, pends)):
            with m.If(upd_valid & (upd == i)):
                m.d.sync += pend.eq(inc)            # the rest went into the value
            with m.Else():
                m.d.sync += pend.eq(pend + inc)
        with m.If(upd_valid & (upd == n - 1)):
            m.d.sync += clearing.eq(0)
        m.d.comb += self.busy.eq(clearing | w_stb | Cat(*incs, *pends).any())

        # Reads, in two stages (READ_LATENCY): the word is chosen (and a
        # counter's value read) in the cycle after r_stb, and registered into
        # r_data.
        assert READ_LATENCY == 2
        def region_word(words, lsb):
            """``words``: offset -> Value; a 32-bit word for ``addr[lsb:lsb+5]``."""
            table = [C(0, 32)] * 32
            for offset, value in words.items():
                assert 0 <= offset < 32, offset
                table[offset] = value
            return Array(table)[bus.addr[lsb:lsb + 5]]

        param_word = region_word({p.addr: self.params[p.name] for p in P.PARAMS}, 0)
        info_word = region_word({addr - P.INFO_BASE: (P.ID_VALUE if name == "id" else self.info[name])
                                 for name, addr in P.INFO.items()}, 0)
        hi_latch = self.hi_latch
        # An odd address reads the latched high word only where a counter is
        # (the rest of the region reads 0, as every unused address does).
        counter_at = Array([C(int(any((c.addr - P.COUNTER_BASE) // 2 == i for c in P.COUNTERS)), 1)
                            for i in range(32)])[bus.addr[1:6]]
        word_q = Signal(32)                     # the word, unless it is a counter's low word
        lo_q = Signal()                         # ... a counter's low word: from the RAM
        lo_at_q = Signal()
        read_q = Signal()
        m.d.sync += [read_q.eq(bus.r_stb), lo_q.eq(0)]
        with m.If(bus.r_stb):
            with m.Switch(bus.addr[5:8]):
                with m.Case(0):
                    m.d.sync += word_q.eq(param_word)
                with m.Case(1):
                    m.d.sync += word_q.eq(info_word)
                with m.Case(2, 3):
                    m.d.sync += [word_q.eq(Mux(counter_at & bus.addr[0], hi_latch, 0)),
                                 lo_q.eq(~bus.addr[0]), lo_at_q.eq(counter_at)]
                with m.Default():
                    m.d.sync += word_q.eq(0)
        with m.If(read_q):
            with m.If(lo_q):
                m.d.sync += [bus.r_data.eq(Mux(lo_at_q, rd.data[0:32], 0)),
                             hi_latch.eq(Mux(lo_at_q, rd.data[32:64], 0))]
            with m.Else():
                m.d.sync += bus.r_data.eq(word_q)
        return m
