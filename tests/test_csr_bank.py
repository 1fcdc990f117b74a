"""The CSR bank (``gateware.csr.CSRBank``) in the Amaranth simulator, against
the register table (``ackfilter.params``) and hand-reasoned expectations.

The bus contract (csr.py): ``r_stb`` with ``addr`` gives ``r_data``
``READ_LATENCY`` (2) cycles later, at most every other cycle; ``w_stb`` with
``addr``/``w_data`` writes, the parameter holding the value from the second
cycle after the strobe's. Parameters are clamped to their range and read
back sign-extended; a counter's low word latches its high word, so reading
low then high is one atomic 64-bit read; an increment (``inc.<name>``,
``inc_bits`` wide) reaches its counter's value within 2N + 3 cycles (N
counters: a sweep adds one counter's pending sum per step, and waits a
cycle for each bus read of a counter), and
``busy`` is high from the cycle after an increment until every value has
it, and during the first sweep after reset.
"""

import random

from blocksim import simulate
from ackfilter import params as P
from ackfilter.gateware.csr import READ_LATENCY, CSRBank

MASK32 = 0xFFFF_FFFF


async def write(ctx, dut, addr, word):
    ctx.set(dut.bus.addr, addr)
    ctx.set(dut.bus.w_data, word)
    ctx.set(dut.bus.w_stb, 1)
    await ctx.tick()
    ctx.set(dut.bus.w_stb, 0)
    await ctx.tick()


async def read(ctx, dut, addr):
    ctx.set(dut.bus.addr, addr)
    ctx.set(dut.bus.r_stb, 1)
    await ctx.tick()
    ctx.set(dut.bus.r_stb, 0)
    await ctx.tick().repeat(READ_LATENCY - 1)
    return ctx.get(dut.bus.r_data)


N = len(P.COUNTERS)


def max_inc(c):
    return (1 << c.inc_bits) - 1


async def settle(ctx, dut):
    """Let every increment reach its counter's value: busy falls within N + 3 cycles."""
    for c in P.COUNTERS:
        ctx.set(dut.inc[c.name], 0)
    for _ in range(N + 3):
        await ctx.tick()
        if not ctx.get(dut.busy):
            return
    raise AssertionError(f"busy still high {N + 3} cycles after the last increment")


async def read_counter(ctx, dut, c):
    lo = await read(ctx, dut, c.addr)
    hi = await read(ctx, dut, c.addr + 1)
    return hi << 32 | lo


async def count_up(ctx, dut, c, amount):
    """Add ``amount`` to counter ``c`` (and nothing to the others) through
    its increment port, its widest increment a cycle at most; returns when it
    has landed."""
    full, rest = divmod(amount, max_inc(c))
    if full:
        ctx.set(dut.inc[c.name], max_inc(c))
        await ctx.tick().repeat(full)
    ctx.set(dut.inc[c.name], rest)
    await ctx.tick()
    await settle(ctx, dut)


# -- parameters ----------------------------------------------------------

def test_csr_bank_clamps_signed_parameters_and_reads_them_back_sign_extended():
    dut = CSRBank()
    ovh, mpu = P.param("shaper_overhead_bytes"), P.param("shaper_mpu_bytes")
    # (register, word written, value held, word read back)
    writes = [
        (ovh, ovh.to_word(-10), -10, 0xFFFF_FFF6),
        (ovh, ovh.to_word(-64), -64, 0xFFFF_FFC0),
        (ovh, ovh.to_word(-65), -64, 0xFFFF_FFC0),        # below the range: the minimum
        (ovh, 0x8000_0000, -64, 0xFFFF_FFC0),             # the most negative word
        (ovh, 256, 256, 256),
        (ovh, 257, 256, 256),
        (ovh, 0x7FFF_FFFF, 256, 256),
        (ovh, 0, 0, 0),
        (mpu, 0xFFFF_FFFF, 256, 256),                     # unsigned: a huge value, the maximum
        (mpu, 84, 84, 84),
    ]
    seen = []

    async def bench(ctx):
        assert ctx.get(dut.params.shaper_overhead_bytes) == ovh.default == 24
        for p, word, _value, _back in writes:
            await write(ctx, dut, p.addr, word)
            back = await read(ctx, dut, p.addr)
            seen.append((ctx.get(dut.params[p.name]), back))

    simulate(dut, bench, name="csr_signed")
    assert seen == [(value, back) for _p, _w, value, back in writes]
    assert [ovh.from_word(back) for _p, _w, _v, back in writes[:8]] == [v for _p, _w, v, _b in writes[:8]]


def test_csr_bank_clamps_every_parameter_to_its_range():
    dut = CSRBank()
    plan = []
    for p in P.PARAMS:
        for value in (p.minimum, p.maximum, p.minimum - 1, p.maximum + 1, 0, 1, -1, 2**31 - 1, -2**31):
            word = value & MASK32
            as_int = word - (1 << 32) if p.signed and word >> 31 else word
            plan.append((p, word, min(max(as_int, p.minimum), p.maximum)))
    seen = []

    async def bench(ctx):
        for p, word, _want in plan:
            await write(ctx, dut, p.addr, word)
            seen.append(ctx.get(dut.params[p.name]))

    simulate(dut, bench, name="csr_clamp")
    assert seen == [want for _p, _w, want in plan]


def test_every_parameter_reads_its_default_after_reset():
    dut = CSRBank()
    got_ports, got_bus = {}, {}

    async def bench(ctx):
        for p in P.PARAMS:
            got_ports[p.name] = ctx.get(dut.params[p.name])
        for p in P.PARAMS:
            got_bus[p.name] = await read(ctx, dut, p.addr)

    simulate(dut, bench, name="csr_defaults")
    assert got_ports == {p.name: p.default for p in P.PARAMS}
    assert got_bus == {p.name: p.to_word(p.default) for p in P.PARAMS}
    # The table's own defaults, as documented (spec sections 3, 4, 6).
    assert got_ports["ack_mode"] == P.ACK_FILTER_MODES["aggressive"]
    assert got_ports["ack_queue_limit"] == 32 == P.ACK_SLOTS and got_ports["data_share"] == 128
    assert got_ports["shaper_cpb_q16"] == 0 and got_ports["shaper_overhead_bytes"] == 24


# -- read-only words and the address map ------------------------------------

def test_info_words_read_what_the_core_supplies_and_id_reads_ackf():
    dut = CSRBank()
    rng = random.Random(11)
    names = [n for n in P.INFO if n != "id"]
    rounds = [{n: rng.getrandbits(32) for n in names} for _ in range(3)]
    rounds.append({n: 0 for n in names})
    rounds.append({n: MASK32 for n in names})
    seen = []

    async def bench(ctx):
        for values in rounds:
            for n, v in values.items():
                ctx.set(dut.info[n], v)
            seen.append({n: await read(ctx, dut, addr) for n, addr in P.INFO.items()})

    simulate(dut, bench, name="csr_info")
    assert P.ID_VALUE == 0x41434B46 == int.from_bytes(b"ACKF", "big")
    for values, got in zip(rounds, seen):
        assert got == {"id": 0x41434B46, **values}


def known_addresses():
    known = {p.addr for p in P.PARAMS} | set(P.INFO.values())
    for c in P.COUNTERS:
        known |= {c.addr, c.addr + 1}
    return known


def test_unknown_addresses_read_zero_and_ignore_writes():
    dut = CSRBank()
    known = known_addresses()
    # The odd addresses after the last counter are the high words of counters
    # that do not exist (test_unknown_counter_high_words_read_zero).
    unknown = [a for a in range(1 << 8) if a not in known
               and not (P.COUNTER_BASE <= a < 0x80 and a % 2)]
    assert len(unknown) > 100
    got = {}
    params_after = {}

    async def bench(ctx):
        for c in P.COUNTERS:                  # every counter non-zero
            ctx.set(dut.inc[c.name], min(c.addr, max_inc(c)))
        await ctx.tick()
        await settle(ctx, dut)
        for a in unknown:
            await write(ctx, dut, a, MASK32)
        for p in P.PARAMS:
            params_after[p.name] = ctx.get(dut.params[p.name])
        for a in unknown:
            # Right after a non-zero word, so a stale r_data is seen.
            assert await read(ctx, dut, P.INFO["id"]) == P.ID_VALUE
            got[a] = await read(ctx, dut, a)

    simulate(dut, bench, name="csr_unknown")
    assert {a: v for a, v in got.items() if v} == {}
    assert params_after == {p.name: p.default for p in P.PARAMS}


def test_unknown_counter_high_words_read_zero():
    dut = CSRBank()
    c = P.counter("bytes_in")
    spare_odd = [a for a in range(P.COUNTER_BASE, 0x80) if a % 2 and a not in known_addresses()]
    got = {}

    async def bench(ctx):
        await count_up(ctx, dut, c, (1 << 32) + 7)    # high word 1
        for a in spare_odd:
            assert await read(ctx, dut, c.addr) == 7  # latches the high word (1)
            got[a] = await read(ctx, dut, a)

    simulate(dut, bench, name="csr_unknown_hi")
    assert {a: v for a, v in got.items() if v} == {}


# -- counters --------------------------------------------------------------

def test_increment_widths_are_the_tables():
    assert {c.name for c in P.COUNTERS if c.inc_bits == 16} == {"bytes_in", "bytes_out"}
    assert all(c.inc_bits == 1 for c in P.COUNTERS if not c.name.startswith("bytes_"))


def test_every_counter_adds_its_own_increments():
    # Each counter its own random increments (its full range, zeros
    # included), all at once: each 64-bit value is the sum of its own only.
    dut = CSRBank()
    rng = random.Random(12)
    plan = [{c.name: rng.choice([0, 1, max_inc(c), rng.randrange(max_inc(c) + 1)])
             for c in P.COUNTERS} for _ in range(300)]
    seen = {}

    async def bench(ctx):
        for incs in plan:
            for name, v in incs.items():
                ctx.set(dut.inc[name], v)
            await ctx.tick()
        await settle(ctx, dut)
        for c in P.COUNTERS:
            seen[c.name] = await read_counter(ctx, dut, c)

    simulate(dut, bench, name="csr_counters")
    assert seen == {c.name: sum(incs[c.name] for incs in plan) for c in P.COUNTERS}


def test_counter_read_is_atomic_across_a_low_word_wrap():
    # bytes_in counts up to just below 2^32; then it keeps counting by random
    # steps while low/high pairs are read with random gaps. The value of a
    # pair is one the counter held: at least every increment driven 2N + 3
    # cycles before the low read and at most every one driven before it; a
    # high word read live instead of latched would be 2^32 off in the pairs
    # whose low word wrapped between the two reads.
    dut = CSRBank()
    c = P.counter("bytes_in")
    other = P.counter("frames_out")       # counts too: a read must not mix counters
    rng = random.Random(13)
    start = (1 << 32) - 0x3_0000
    pairs = []                            # (value read, lowest allowed, highest allowed)
    stats = {"torn": 0}

    async def bench(ctx):
        await count_up(ctx, dut, c, start)
        incs = []                         # incs[t]: driven in cycle t (bytes_in)
        t = 0

        def total(upto):                  # increments driven before cycle `upto`
            return start + sum(incs[:max(0, upto)])

        async def cycle(addr=None):
            nonlocal t
            step = rng.choice([0, 0xFFFF, 0xFFFF, rng.getrandbits(16)])
            incs.append(step)
            ctx.set(dut.inc[c.name], step)
            ctx.set(dut.inc[other.name], rng.getrandbits(1))
            if addr is not None:
                ctx.set(dut.bus.addr, addr)
            ctx.set(dut.bus.r_stb, addr is not None)
            await ctx.tick()
            t += 1
            return ctx.get(dut.bus.r_data)

        while len(pairs) < 80:
            for _ in range(rng.randrange(3)):
                await cycle()
            # A read strobe, then its word READ_LATENCY cycles after it
            # (the next strobe may come then, at the earliest).
            assert READ_LATENCY == 2
            t_lo = t
            await cycle(c.addr)
            lo = await cycle()
            for _ in range(rng.choice([0, 0, 1, 2, 5, 30])):
                await cycle()
            t_hi = t
            await cycle(c.addr + 1)
            hi = await cycle()
            pairs.append((hi << 32 | lo, total(t_lo - 2 * N - 3), total(t_lo)))
            if total(t_hi) >> 32 != total(t_lo - 2 * N - 3) >> 32:
                stats["torn"] += 1

    simulate(dut, bench, name="csr_atomic")
    bad = [(hex(g), hex(a), hex(b)) for g, a, b in pairs if not a <= g <= b]
    assert not bad, f"{len(bad)} of {len(pairs)} pairs out of bounds (got, min, max): {bad[:4]}"
    assert pairs[0][2] < 1 << 32 < pairs[-1][1], "the run must carry into the high word"
    assert stats["torn"] >= 1, "no pair straddled the wrap: the test proves nothing"


def test_counter_carries_into_the_high_word_and_low_then_high_is_latched():
    # Hand-reasoned: 2^32 - 5, read low (latching high 0); 100 more arrive
    # before the high read, which still gives 0; the next pair gives 95 and 1.
    dut = CSRBank()
    c = P.counter("bytes_out")
    seen = []

    async def bench(ctx):
        await count_up(ctx, dut, c, (1 << 32) - 5)
        seen.append(await read(ctx, dut, c.addr))
        await count_up(ctx, dut, c, 100)
        seen.append(await read(ctx, dut, c.addr + 1))
        seen.append(await read(ctx, dut, c.addr))
        seen.append(await read(ctx, dut, c.addr + 1))

    simulate(dut, bench, name="csr_carry")
    assert seen == [0xFFFF_FFFB, 0, 95, 1]


def test_busy_covers_every_increment_until_the_values_have_it():
    # Random increments with pauses. Whenever busy is low, every counter's
    # value (read through the bus) is the sum of all its increments so far;
    # busy falls within N + 3 cycles of the last increment; it is high
    # during the clearing sweep after reset and low when nothing happens.
    dut = CSRBank()
    rng = random.Random(14)
    sums = {c.name: 0 for c in P.COUNTERS}
    checks = {"idle_reads": 0}

    async def bench(ctx):
        assert ctx.get(dut.busy)                      # clearing after reset
        await settle(ctx, dut)
        for _ in range(40):
            for _ in range(rng.choice([1, 3, 10])):
                names = rng.sample([c.name for c in P.COUNTERS], rng.choice([1, 2, 15]))
                for c in P.COUNTERS:
                    v = rng.randrange(1, max_inc(c) + 1) if c.name in names else 0
                    ctx.set(dut.inc[c.name], v)
                    sums[c.name] += v
                await ctx.tick()
            for c in P.COUNTERS:
                ctx.set(dut.inc[c.name], 0)
            await ctx.tick()
            assert ctx.get(dut.busy), "an increment is on its way: busy must be high"
            await settle(ctx, dut)
            for _ in range(rng.choice([0, 5])):
                await ctx.tick()
                assert not ctx.get(dut.busy)
            for c in rng.sample(P.COUNTERS, 4):
                assert await read_counter(ctx, dut, c) == sums[c.name], c.name
                checks["idle_reads"] += 1

    simulate(dut, bench, name="csr_busy")
    assert checks["idle_reads"] == 160


def test_counters_read_zero_after_a_reset_in_the_middle_of_counting():
    from amaranth.hdl import ClockDomain, Elaboratable, Module, Signal

    class WithReset(Elaboratable):
        def __init__(self):
            self.bank = CSRBank()
            self.rst = Signal()

        def elaborate(self, platform):
            m = Module()
            m.domains.sync = sync = ClockDomain("sync")
            m.d.comb += sync.rst.eq(self.rst)
            m.submodules.bank = self.bank
            return m

    top = WithReset()
    dut = top.bank
    c = P.counter("bytes_in")
    got = []

    async def bench(ctx):
        await count_up(ctx, dut, c, 123_456)
        got.append(await read_counter(ctx, dut, c))
        ctx.set(dut.inc[c.name], 999)
        ctx.set(top.rst, 1)
        await ctx.tick()
        ctx.set(top.rst, 0)
        ctx.set(dut.inc[c.name], 0)
        assert ctx.get(dut.busy)                   # the clearing sweep
        await settle(ctx, dut)
        got.append(await read_counter(ctx, dut, c))
        await count_up(ctx, dut, c, 7)
        got.append(await read_counter(ctx, dut, c))

    simulate(top, bench, name="csr_reset")
    assert got == [123_456, 0, 7]


def test_counters_keep_every_increment_while_the_bus_reads_every_other_cycle():
    # The fastest reader the contract allows (a counter's low word every
    # other cycle, each taking the RAM's read port from the sweep) while
    # every counter gets its largest increment every cycle: the sweep then
    # visits a counter only every 2N cycles, and no pending sum may wrap.
    dut = CSRBank()
    rng = random.Random(15)
    cycles = 600
    got = {}

    async def bench(ctx):
        await settle(ctx, dut)
        for k in range(cycles):
            for c in P.COUNTERS:
                ctx.set(dut.inc[c.name], max_inc(c))
            ctx.set(dut.bus.addr, rng.choice(P.COUNTERS).addr)
            ctx.set(dut.bus.r_stb, k % 2 == 0)
            await ctx.tick()
        ctx.set(dut.bus.r_stb, 0)
        await settle(ctx, dut)
        for c in P.COUNTERS:
            got[c.name] = await read_counter(ctx, dut, c)

    simulate(dut, bench, name="csr_reads_vs_sweep")
    assert got == {c.name: cycles * max_inc(c) for c in P.COUNTERS}
