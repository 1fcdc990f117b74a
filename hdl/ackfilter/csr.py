"""The parameter and counter register bank of the uplink core.

Built from :mod:`ackfilter.params`, the single table of names, addresses,
widths and defaults. The bus is a plain word-addressed register port:
``r_en`` with ``addr`` gives ``r_data`` on the next cycle; ``w_en`` with
``addr``/``w_data`` writes. Writes to parameters are clamped to the range the
table gives; a signed parameter reads ``w_data`` as a signed 32-bit word and
reads back sign-extended (a write of -10 reads as 0xFFFFFFF6). Reading a counter's low word latches its high word. Counter
increments are registered before they are added (they come from decisions
deep in other blocks), so a counter shows an event one cycle after it;
``busy`` is high while an increment is still on its way.
"""

from amaranth.hdl import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from . import params as P

__all__ = ["CSRBank"]


class CSRBank(wiring.Component):
    """Registers for every entry of ``params.PARAMS``/``COUNTERS``/``INFO``.

    Ports
    -----
    addr, r_en, r_data, w_en, w_data : the bus
    p_<name> : Out(width)      current value of each parameter
    inc_<name> : In(16)        amount to add to each counter this cycle
    info_<name> : In(32)       read-only words (capacities, live levels)
    busy : Out(1)              an increment is registered but not yet added
    """

    def __init__(self):
        members = {
            "addr":   In(8),
            "r_en":   In(1),
            "r_data": Out(32),
            "w_en":   In(1),
            "w_data": In(32),
            "busy":   Out(1),
        }
        for p in P.PARAMS:
            shape = signed(p.width) if p.signed else unsigned(p.width)
            members[f"p_{p.name}"] = Out(shape, init=p.default)
        for c in P.COUNTERS:
            members[f"inc_{c.name}"] = In(16)
        for name in P.INFO:
            if name != "id":
                members[f"info_{name}"] = In(32)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()

        # Writes: one clamp for all parameters, its bounds and signedness
        # chosen by the address (a pair of 33-bit compares instead of a pair
        # per parameter).
        def by_param(value_of, shape):
            table = [C(0, shape)] * 32
            for p in P.PARAMS:
                table[p.addr - P.PARAM_BASE] = C(value_of(p), shape)
            return Array(table)[self.addr[0:5]]

        assert all(P.PARAM_BASE <= p.addr < P.PARAM_BASE + 32 for p in P.PARAMS)
        w_signed = by_param(lambda p: int(p.signed), 1)
        w_min, w_max = by_param(lambda p: p.minimum, signed(33)), by_param(lambda p: p.maximum, signed(33))
        w_value = Signal(signed(33))
        w_clamped = Signal(signed(33))
        m.d.comb += [
            w_value.eq(Mux(w_signed, self.w_data.as_signed(), self.w_data)),
            w_clamped.eq(Mux(w_value < w_min, w_min, Mux(w_value > w_max, w_max, w_value))),
        ]
        for p in P.PARAMS:
            reg = getattr(self, f"p_{p.name}")
            with m.If(self.w_en & (self.addr == p.addr)):
                m.d.sync += reg.eq(w_clamped)

        counters = {}
        pending = []
        for c in P.COUNTERS:
            cnt = Signal(64, name=f"cnt_{c.name}")
            inc = Signal(16, name=f"inc_{c.name}_q")
            m.d.sync += [inc.eq(getattr(self, f"inc_{c.name}")), cnt.eq(cnt + inc)]
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
            return Array(table)[self.addr[lsb:lsb + 5]]

        assert P.PARAM_BASE == 0x00 and P.INFO_BASE == 0x20 and P.COUNTER_BASE == 0x40
        param_word = Signal(32)
        info_word = Signal(32)
        counter_lo = Signal(32)
        counter_hi = Signal(32)
        m.d.comb += [
            param_word.eq(region_word({p.addr: getattr(self, f"p_{p.name}") for p in P.PARAMS}, 0)),
            info_word.eq(region_word({addr - P.INFO_BASE: (P.ID_VALUE if name == "id" else
                                                            getattr(self, f"info_{name}"))
                                      for name, addr in P.INFO.items()}, 0)),
            counter_lo.eq(region_word({(c.addr - P.COUNTER_BASE) // 2: counters[c.name][0:32]
                                       for c in P.COUNTERS}, 1)),
            counter_hi.eq(region_word({(c.addr - P.COUNTER_BASE) // 2: counters[c.name][32:64]
                                       for c in P.COUNTERS}, 1)),
        ]
        hi_latch = Signal(32)
        with m.If(self.r_en):
            with m.Switch(self.addr[5:8]):
                with m.Case(0):
                    m.d.sync += self.r_data.eq(param_word)
                with m.Case(1):
                    m.d.sync += self.r_data.eq(info_word)
                with m.Case(2, 3):
                    with m.If(self.addr[0]):
                        m.d.sync += self.r_data.eq(hi_latch)
                    with m.Else():
                        m.d.sync += [self.r_data.eq(counter_lo), hi_latch.eq(counter_hi)]
                with m.Default():
                    m.d.sync += self.r_data.eq(0)
        return m
