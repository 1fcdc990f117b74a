"""The parameter and counter register bank of the uplink core.

Built from :mod:`ackfilter.params`, the single table of names, addresses,
widths and defaults. The bus (:data:`CSRBusSignature`, the usual CSR bus
names, so a CPU bus bridge attaches as it is) is a word-addressed register
port: ``r_stb`` with ``addr`` gives ``r_data`` on the next cycle; ``w_stb``
with ``addr``/``w_data`` writes. Writes to parameters are clamped to the range
the table gives; a signed parameter reads ``w_data`` as a signed 32-bit word
and reads back sign-extended (a write of -10 reads as 0xFFFFFFF6). Reading a
counter's low word latches its high word, so low-then-high is one atomic
64-bit read. Counter increments are registered before they are added (they
come from decisions deep in other blocks), so a counter shows an event one
cycle after it; ``busy`` is high while an increment is still on its way.
"""

from amaranth.hdl import *
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .. import params as P

__all__ = ["CSRBusSignature", "CSRBank", "param_layout", "counter_layout", "info_layout",
           "ADDR_BITS", "DATA_BITS"]

ADDR_BITS = 8
DATA_BITS = 32

#: The register bus, seen from the side that drives it (a CPU bridge, a
#: harness): ``addr``, ``r_stb``, ``w_stb`` and ``w_data`` out, ``r_data`` in.
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
    """One 16-bit increment per counter."""
    return data.StructLayout({c.name: 16 for c in P.COUNTERS})


def info_layout():
    """One 32-bit word per read-only register the core supplies (all but ``id``)."""
    return data.StructLayout({name: 32 for name in P.INFO if name != "id"})


class CSRBank(wiring.Component):
    """Registers for every entry of ``params.PARAMS``/``COUNTERS``/``INFO``.

    Ports
    -----
    bus : In(CSRBusSignature)     the register bus
    params : Out(param_layout())  current value of each parameter (``params.ack_mode``, ...)
    inc : In(counter_layout())    amount to add to each counter this cycle
    info : In(info_layout())      read-only words (capacities, live levels)
    busy : Out(1)                 an increment is registered but not yet added
    """

    def __init__(self):
        super().__init__({
            "bus":    In(CSRBusSignature),
            "params": Out(param_layout(), init={p.name: p.default for p in P.PARAMS}),
            "inc":    In(counter_layout()),
            "info":   In(info_layout()),
            "busy":   Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        bus = self.bus

        # Writes: one clamp for all parameters, its bounds and signedness
        # chosen by the address (a pair of 33-bit compares instead of a pair
        # per parameter).
        def by_param(value_of, shape):
            table = [C(0, shape)] * 32
            for p in P.PARAMS:
                table[p.addr - P.PARAM_BASE] = C(value_of(p), shape)
            return Array(table)[bus.addr[0:5]]

        assert all(P.PARAM_BASE <= p.addr < P.PARAM_BASE + 32 for p in P.PARAMS)
        w_signed = by_param(lambda p: int(p.signed), 1)
        w_min, w_max = by_param(lambda p: p.minimum, signed(33)), by_param(lambda p: p.maximum, signed(33))
        w_value = Signal(signed(33))
        w_clamped = Signal(signed(33))
        m.d.comb += [
            w_value.eq(Mux(w_signed, bus.w_data.as_signed(), bus.w_data)),
            w_clamped.eq(Mux(w_value < w_min, w_min, Mux(w_value > w_max, w_max, w_value))),
        ]
        for p in P.PARAMS:
            with m.If(bus.w_stb & (bus.addr == p.addr)):
                m.d.sync += self.params[p.name].eq(w_clamped)

        counters = {}
        pending = []
        for c in P.COUNTERS:
            cnt = Signal(64, name=f"cnt_{c.name}")
            inc = Signal(16, name=f"inc_{c.name}_q")
            m.d.sync += [inc.eq(self.inc[c.name]), cnt.eq(cnt + inc)]
            counters[c.name] = cnt
            pending.append(inc.any())
        m.d.comb += self.busy.eq(Cat(*pending).any())

        # Reads: one word per address region, each through a balanced
        # multiplexer indexed by address bits (a flat case statement over
        # every address maps to priority chains several times the size).
        def region_word(words, lsb):
            """``words``: offset -> Value; a 32-bit word for ``addr[lsb:lsb+5]``."""
            table = [C(0, 32)] * 32
            for offset, value in words.items():
                assert 0 <= offset < 32, offset
                table[offset] = value
            return Array(table)[bus.addr[lsb:lsb + 5]]

        assert P.PARAM_BASE == 0x00 and P.INFO_BASE == 0x20 and P.COUNTER_BASE == 0x40
        param_word = Signal(32)
        info_word = Signal(32)
        counter_lo = Signal(32)
        counter_hi = Signal(32)
        m.d.comb += [
            param_word.eq(region_word({p.addr: self.params[p.name] for p in P.PARAMS}, 0)),
            info_word.eq(region_word({addr - P.INFO_BASE: (P.ID_VALUE if name == "id" else
                                                            self.info[name])
                                      for name, addr in P.INFO.items()}, 0)),
            counter_lo.eq(region_word({(c.addr - P.COUNTER_BASE) // 2: counters[c.name][0:32]
                                       for c in P.COUNTERS}, 1)),
            counter_hi.eq(region_word({(c.addr - P.COUNTER_BASE) // 2: counters[c.name][32:64]
                                       for c in P.COUNTERS}, 1)),
        ]
        hi_latch = Signal(32)
        # An odd address reads the latched high word only where a counter is
        # (the rest of the region reads 0, as every unused address does).
        counter_at = Array([C(int(any((c.addr - P.COUNTER_BASE) // 2 == i for c in P.COUNTERS)), 1)
                            for i in range(32)])[bus.addr[1:6]]
        with m.If(bus.r_stb):
            with m.Switch(bus.addr[5:8]):
                with m.Case(0):
                    m.d.sync += bus.r_data.eq(param_word)
                with m.Case(1):
                    m.d.sync += bus.r_data.eq(info_word)
                with m.Case(2, 3):
                    with m.If(bus.addr[0]):
                        m.d.sync += bus.r_data.eq(Mux(counter_at, hi_latch, 0))
                    with m.Else():
                        m.d.sync += [bus.r_data.eq(counter_lo), hi_latch.eq(counter_hi)]
                with m.Default():
                    m.d.sync += bus.r_data.eq(0)
        return m
