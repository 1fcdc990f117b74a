"""The flow queues' quantum (``gateware.lib.quantum.Quantum``) in the Amaranth
simulator against ``model.flowq.quantum_for_cpb`` (spec section 12,
"Quantum").

Set ``ACKFILTER_VCD=1`` to write a VCD per test into build/vcd/
(tests/blocksim.py).
"""

import random

from blocksim import simulate
from ackfilter.gateware.lib.quantum import DIVIDEND, Quantum
from ackfilter.model.flowq import QUANTUM_MAX, QUANTUM_MIN, quantum_for_cpb
from ackfilter.params import cpb_q16_for_rate

#: The clamps' edges (quotient 1514, 300 and 2048, the divider's 11 bits),
#: the divisor's 22 bits, the register's extremes.
EDGES = sorted({c + d for c in (DIVIDEND // 1514, DIVIDEND // 300, DIVIDEND // 2048,
                                DIVIDEND // 1515, DIVIDEND // 301, DIVIDEND // 2047, 2**22,
                                DIVIDEND)
                for d in (-1, 0, 1)} | {0, 1, 2, 3, 100, 2**32 - 1, 2**32 - 2, 2**31, 2**22 * 3})
#: Rates from a modem's to a gigabit.
RATES = [cpb_q16_for_rate(r) for r in (28_800, 56_000, 1_000_000, 9_600_000, 10_000_000,
                                       20_000_000, 49_000_000, 50_000_000, 100_000_000,
                                       1_000_000_000)]


def in_range_cpb(rng):
    """A divisor whose quantum is between the clamps (or just outside)."""
    return rng.randrange(DIVIDEND // 1600, DIVIDEND // 280)


def test_the_quantum_ports_and_reset_value():
    dut = Quantum()
    assert len(dut.cpb_q16) == 32 and len(dut.quantum) == 11
    seen = []

    async def bench(ctx):
        ctx.set(dut.cpb_q16, DIVIDEND // 1000)
        for _ in range(Quantum.DIVISION_CYCLES + 1):
            seen.append(ctx.get(dut.quantum))
            await ctx.tick()
        seen.append(ctx.get(dut.quantum))

    simulate(dut, bench, name="quantum_reset")
    # 1514 (the default rate's, unshaped) until the first division, which
    # takes the new rate, ends.
    assert seen == [QUANTUM_MAX] * (Quantum.DIVISION_CYCLES + 1) + [1000]


def test_the_quantum_is_the_models_for_every_rate_after_settling():
    rng = random.Random(7)
    values = (EDGES + RATES + [rng.randrange(2**32) for _ in range(40)]
              + [rng.randrange(2**23) for _ in range(20)] + [in_range_cpb(rng) for _ in range(150)])
    dut = Quantum()
    got = []

    async def bench(ctx):
        for cpb in values:
            ctx.set(dut.cpb_q16, cpb)
            await ctx.tick().repeat(Quantum.SETTLE_CYCLES)
            got.append(ctx.get(dut.quantum))

    simulate(dut, bench, name="quantum")
    want = [quantum_for_cpb(v) for v in values]
    assert [(v, g) for v, g in zip(values, got)] == [(v, w) for v, w in zip(values, want)]
    # Both clamps and many values between them.
    assert {QUANTUM_MIN, QUANTUM_MAX} < set(got) and len(set(got)) > 100


def test_a_new_rate_shows_within_settle_cycles_and_that_bound_is_tight():
    # Change the rate at every phase of a division: the new quantum shows
    # after DIVISION_CYCLES + 1 cycles at best, SETTLE_CYCLES at worst, and
    # then stays.
    dut = Quantum()
    a, b = DIVIDEND // 500, DIVIDEND // 1200
    delays = []

    async def bench(ctx):
        for phase in range(Quantum.DIVISION_CYCLES):
            for old, new in ((a, b), (b, a)):
                ctx.set(dut.cpb_q16, old)
                await ctx.tick().repeat(Quantum.SETTLE_CYCLES + phase)
                assert ctx.get(dut.quantum) == quantum_for_cpb(old)
                ctx.set(dut.cpb_q16, new)
                n = 0
                while ctx.get(dut.quantum) != quantum_for_cpb(new):
                    assert ctx.get(dut.quantum) == quantum_for_cpb(old)
                    await ctx.tick()
                    n += 1
                delays.append(n)
                for _ in range(2 * Quantum.DIVISION_CYCLES):
                    assert ctx.get(dut.quantum) == quantum_for_cpb(new)
                    await ctx.tick()

    simulate(dut, bench, name="quantum_settle")
    assert min(delays) == Quantum.DIVISION_CYCLES + 1
    assert max(delays) == Quantum.SETTLE_CYCLES == 62
    assert len(set(delays)) == Quantum.DIVISION_CYCLES


def test_a_change_mid_division_shows_the_old_quantum_or_the_new_never_another():
    # The rate changes every 1 .. 100 cycles, to values whose quanta all
    # differ (and to 0 and to the slow clamp, whose flags must be the
    # division's own). In every cycle the quantum is that of a value the
    # input held between SETTLE_CYCLES and DIVISION_CYCLES + 1 cycles
    # before (the division that ended last took it), never a mix.
    rng = random.Random(8)
    dut = Quantum()
    history = []            # cpb_q16 in each cycle
    checked = []

    async def bench(ctx):
        cpb = 0
        for _ in range(4000):
            if rng.random() < 0.03 or len(history) % 97 == 5:
                cpb = rng.choice([0, 2**32 - 1, 2**22, DIVIDEND // 2048] + [in_range_cpb(rng)] * 6)
                ctx.set(dut.cpb_q16, cpb)
            t = len(history)
            history.append(cpb)
            q = ctx.get(dut.quantum)
            if t > Quantum.SETTLE_CYCLES:
                held = history[t - Quantum.SETTLE_CYCLES:t - Quantum.DIVISION_CYCLES]
                assert q in {quantum_for_cpb(v) for v in held}, (t, q, sorted(set(held)))
                checked.append(len({quantum_for_cpb(v) for v in held}) > 1)
            await ctx.tick()

    simulate(dut, bench, name="quantum_change")
    # Many cycles where the window held two rates (a change under way).
    assert sum(checked) > 300, sum(checked)
