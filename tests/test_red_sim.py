"""RED (``gateware.red.RedUnit``) in the Amaranth simulator, decision by
decision against the golden model (``model.red.Red``, ``docs/spec.md``
section 10).

The testbench plays the queue manager around the block: it keeps a data
queue that is either empty (an idle period, from reset or from an
``emptied`` strobe, until a frame is stored) or not, and offers frames at
cycles of its choosing, waiting for ``ready``. The model gets the same
cycles: ``Red.emptied(t0)`` for a strobe in cycle t0, ``Red.arrive(frame,
qlen, D)`` for a ``start`` in cycle D, with a frame built to carry the ECN
field (or no IP header) the block is given. Per decision, ``done`` comes
exactly ``RED_LATENCY`` cycles after ``start``, with the model's action and
CE-already flag, and ``avg_q16``, ``count`` and ``prng`` are the model's.

Set ``ACKFILTER_VCD=1`` to write a VCD per test into build/vcd/
(tests/blocksim.py).
"""

import copy
import math
import random
from collections import Counter

import pytest
from amaranth.back import verilog

from blocksim import simulate
from ackfilter.gateware.red import RED_LATENCY, RED_PARAM_PORTS, RedAction, RedUnit
from ackfilter.model.red import (COUNT_MAX, ECN_CE, ECN_ECT0, ECN_ECT1, ECN_NOT_ECT, P_ONE, Red,
                                 ecn_codepoint, ip_header, pb_terms, region)

ACTIONS = {"pass": RedAction.PASS, "mark": RedAction.MARK, "drop": RedAction.DROP}


def red_frame(ecn, *, has_ip=True, v6=False):
    """A 60-byte frame whose IP header (the model's ``ip_header``) carries
    ``ecn``, or, without ``has_ip``, an ARP frame (no IP header)."""
    tos = 10 << 2 | ecn                         # DSCP AF11 and the ECN field
    if not has_ip:
        frame = bytes(12) + b"\x08\x06" + bytes.fromhex("0001080006040001")
    elif v6:
        frame = bytes(12) + b"\x86\xdd" + bytes([0x60 | tos >> 4, (tos & 0xF) << 4]) + bytes(38)
    else:
        frame = bytes(12) + b"\x08\x00" + bytes([0x45, tos]) + bytes(18)
    frame = frame.ljust(60, b"\0")
    assert (ip_header(frame) is not None) == has_ip
    assert ecn_codepoint(frame) == (ecn if has_ip else None)
    return frame


def make_model(params):
    """The model of the block's parameter ports: ``min_bytes >= max_bytes``
    is RED off (the model refuses such thresholds; they do not matter then)."""
    kw = {name: params[name] for name in ("min_bytes", "max_bytes", "max_p", "wq_shift", "gentle",
                                          "idle_shift")}
    kw["enable"] = bool(params["enable"])
    if params["min_bytes"] >= params["max_bytes"]:
        kw.update(min_bytes=0, max_bytes=1, enable=False)
    return Red(**kw)


class RedBench:
    """The block, the model fed the same cycles, and the current cycle.

    ``now`` is the cycle the testbench is in: what it sets now is sampled at
    the coming clock edge, what it reads is the registers' value in this
    cycle. The reset idle period starts at cycle 0, as the model's."""

    def __init__(self, params):
        self.params = params
        self.dut = RedUnit()
        self.model = make_model(params)
        self.now = 0
        self.stats = Counter()

    def begin(self, ctx):
        for name in RED_PARAM_PORTS:
            ctx.set(getattr(self.dut, name), self.params[name])
        ctx.set(self.dut.now, 0)

    async def tick(self, ctx, n=1, *, jump=False):
        """``n`` cycles on; ``jump``: as a harness skips the clock while the
        core is idle, ``now`` moves ``n`` on in one clock edge."""
        if not n:
            return
        if jump:
            self.now += n - 1
            ctx.set(self.dut.now, self.now)
            n = 1
            self.stats["jumps"] += 1
        for _ in range(n):
            await ctx.tick()
            self.now += 1
            ctx.set(self.dut.now, self.now)

    async def emptied(self, ctx):
        """An ``emptied`` strobe in this cycle, alone."""
        ctx.set(self.dut.emptied, 1)
        self.model.emptied(self.now)
        await self.tick(ctx)
        ctx.set(self.dut.emptied, 0)

    async def arrive(self, ctx, qlen, *, ecn, has_ip=True, v6=False, will_store=True, emptied=False,
                     exempt=False):
        """Offer a frame as soon as ``ready`` (with an ``emptied`` strobe in
        the same cycle if asked), check the decision against the model's,
        and return the model's action; the testbench is then in the cycle of
        ``done``."""
        dut, model = self.dut, self.model
        while not ctx.get(dut.ready):
            self.stats["waited"] += 1
            await self.tick(ctx)
        frame = red_frame(ecn, has_ip=has_ip, v6=v6)
        ctx.set(dut.start, 1)
        ctx.set(dut.qlen, qlen)
        ctx.set(dut.ecn, ecn)
        ctx.set(dut.has_ip, has_ip)
        ctx.set(dut.will_store, will_store)
        # `exempt` counts only in the verdict's cycle (D + 8): until then it
        # carries the opposite, as the queue manager's may while it looks up.
        ctx.set(dut.exempt, not exempt)
        if emptied:
            ctx.set(dut.emptied, 1)
            model.emptied(self.now)
        before = model.avg_q16
        ce_before = model.counters["red_ce_already"]
        decided_at = self.now
        # What the frame would have met without `exempt` (a copy of the model).
        unexempt = copy.deepcopy(model) if exempt else None
        count_before = model.count
        want, _frame = model.arrive(frame, qlen, self.now, exempt=exempt)
        await self.tick(ctx)
        ctx.set(dut.start, 0)
        ctx.set(dut.emptied, 0)
        for k in range(RED_LATENCY - 1):
            assert not ctx.get(dut.done), f"done early, decision at {decided_at}"
            assert not ctx.get(dut.ready), f"ready while deciding, decision at {decided_at}"
            if k == RED_LATENCY - 2:                 # the cycle D + 8
                ctx.set(dut.exempt, exempt)
            await self.tick(ctx)
        ctx.set(dut.exempt, not exempt)
        where = (f"decision at cycle {decided_at}: qlen {qlen}, ecn {ecn}, has_ip {has_ip}, "
                 f"will_store {will_store}, exempt {exempt}; model {want}, avg_q16 {model.avg_q16}, "
                 f"count {model.count}")
        assert ctx.get(dut.done), where
        assert ctx.get(dut.action) == ACTIONS[want].value, where
        assert ctx.get(dut.ce_already) == (model.counters["red_ce_already"] - ce_before), where
        assert ctx.get(dut.avg_q16) == model.avg_q16, where
        assert ctx.get(dut.count) == model.count, where
        assert ctx.get(dut.prng) == model.prng, where
        if exempt:
            # An exempt frame passes and leaves count as it was (spec section 12);
            # count what the exemption changed, so the tests know it was exercised.
            would, _ = unexempt.arrive(frame, qlen, decided_at)
            assert want == "pass" and model.count == count_before, where
            self.stats["exempt"] += 1
            self.stats["exempt-spared"] += would != "pass"
            self.stats["exempt-kept-count"] += unexempt.count != model.count
        self.stats[want] += 1
        self.stats["ce_already"] += model.counters["red_ce_already"] - ce_before
        if model.enable:
            self.stats[region(model.avg_bytes, min_bytes=model.min_bytes, max_bytes=model.max_bytes,
                              gentle=model.gentle)] += 1
        if qlen == 0 and decided_at > model.idle_since:
            phase = (decided_at - model.idle_since) % (1 << model.idle_shift)
            if phase in (0, 1, (1 << model.idle_shift) - 1):
                self.stats[f"step{(phase + 1) % (1 << model.idle_shift) - 1:+d}"] += 1
        if qlen == 0 and model.avg_q16 < before:
            self.stats["decayed"] += 1
        return want


def random_ecn(rng):
    return rng.choice((ECN_NOT_ECT, ECN_ECT1, ECN_ECT0, ECN_CE))


# Parameter sets: the thresholds sit where the average goes with the samples
# drawn (up to `qmax`), so that every region is visited.
PARAM_SETS = {
    "wq1-idle1-gentle":  (dict(enable=1, min_bytes=2000, max_bytes=5000, max_p=6554, wq_shift=1,
                               gentle=1, idle_shift=1), 16000),
    "wq4-idle2":         (dict(enable=1, min_bytes=1000, max_bytes=2500, max_p=32768, wq_shift=4,
                               gentle=0, idle_shift=2), 7000),
    "wq9-idle6-maxp1":   (dict(enable=1, min_bytes=300, max_bytes=700, max_p=P_ONE, wq_shift=9,
                               gentle=1, idle_shift=6), 20000),
    "wq15-idle12":       (dict(enable=1, min_bytes=500, max_bytes=1200, max_p=20000, wq_shift=15,
                               gentle=1, idle_shift=12), (1 << 20) - 1),
    "wq2-idle3-maxp0":   (dict(enable=1, min_bytes=500, max_bytes=1500, max_p=0, wq_shift=2,
                               gentle=1, idle_shift=3), 7000),
    "off":               (dict(enable=0, min_bytes=1000, max_bytes=3000, max_p=32768, wq_shift=4,
                               gentle=1, idle_shift=2), 7000),
    "min-equals-max":    (dict(enable=1, min_bytes=1000, max_bytes=1000, max_p=32768, wq_shift=1,
                               gentle=1, idle_shift=2), 7000),
    "min-above-max":     (dict(enable=1, min_bytes=3000, max_bytes=1000, max_p=32768, wq_shift=1,
                               gentle=0, idle_shift=1), 7000),
}

#: Longest idle gap drawn, in cycles (keeps idle_shift 12 affordable).
MAX_GAP = 3 << 12


async def random_traffic(bench, ctx, rng, *, qmax, decisions):
    """``decisions`` frames, the queue emptying now and then: arrivals at an
    empty queue on, one before and one after a decay step's cycle, after
    short gaps (some shorter than a decision) and long ones; arrivals at a
    non-empty queue with random occupancies; strobes from the cycle of
    ``done`` on, some in the same cycle as the next arrival."""
    s = bench.params["idle_shift"]
    queue_empty, t0 = True, 0
    for _ in range(decisions):
        strobe = False
        if not queue_empty and rng.random() < 0.3:
            await bench.tick(ctx, rng.choice((0, 0, 1, 2, 3, rng.randrange(40))))
            if rng.random() < 0.25:
                strobe = True                   # and an arrival in the same cycle
            else:
                await bench.emptied(ctx)
            queue_empty, t0 = True, bench.now - (not strobe)
        if strobe:
            target, qlen = bench.now, 0
        elif queue_empty:
            r = rng.random()
            if r < 0.4:
                target = bench.now + rng.randrange(RED_LATENCY + 3)
            elif r < 0.8:
                # On a step's cycle, or one before or after it.
                k = max(1, ((bench.now - t0) >> s) + rng.randint(1, 2))
                target = t0 + (k << s) + rng.choice((-1, 0, 1))
            else:
                target = bench.now + rng.randrange(min(MAX_GAP, 40 << s))
            if target - bench.now > MAX_GAP:
                target = bench.now + rng.randrange(RED_LATENCY + 3)
            qlen = 0
        else:
            target = bench.now + rng.choice((0, 0, 1, 2, rng.randrange(30)))
            qlen = rng.randint(1, qmax)
        gap = max(0, target - bench.now)
        await bench.tick(ctx, gap, jump=gap > 2 and rng.random() < 0.5)
        has_ip = rng.random() < 0.85
        will_store = rng.random() < 0.7
        want = await bench.arrive(ctx, qlen, ecn=random_ecn(rng), has_ip=has_ip, v6=rng.random() < 0.3,
                                  will_store=will_store, emptied=strobe, exempt=rng.random() < 0.15)
        if will_store and want != "drop":
            queue_empty = False


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("name", PARAM_SETS)
def test_decisions_average_count_and_prng_follow_the_model_cycle_by_cycle(name, seed):
    params, qmax = PARAM_SETS[name]
    bench = RedBench(params)
    rng = random.Random(f"{name}/{seed}")

    async def testbench(ctx):
        bench.begin(ctx)
        await random_traffic(bench, ctx, rng, qmax=qmax, decisions=400)

    simulate(bench.dut, testbench, name=f"red_{name}_{seed}")
    st = bench.stats
    on = params["enable"] and params["min_bytes"] < params["max_bytes"]
    # The sequence did what it is for: idle periods decayed the average,
    # and decisions waited for the steps that fell due while deciding.
    assert st["decayed"] > 0 and st["pass"] > 0 and st["jumps"] > 0 and st["exempt"] > 20, st
    # Arrivals at an empty queue on a step's cycle and one cycle either side
    # of it (the same cycle with steps two cycles apart).
    assert st["step-1"] > 0 and st["step+0"] > 0, st
    assert st["step+1"] > 0 or params["idle_shift"] == 1, st
    if params["idle_shift"] <= 2:
        assert st["waited"] > 0, st
    if on:
        assert st["mark"] > 0 and st["drop"] > 0 and st["ce_already"] > 0, st
        assert st["below"] > 0 and st["early"] > 0 and st["forced"] > 0, st
        # Exempt frames that would have been notified, or would have moved count.
        assert st["exempt-spared"] > 0 and st["exempt-kept-count"] > 0, st
    else:
        assert st["mark"] == st["drop"] == 0, st


def test_an_arrival_sees_the_decay_step_due_in_its_own_cycle_and_none_later():
    # wq 1 halves the average per step, so one step more or less shows.
    # Each round: fill the average, let the queue empty at t0 and offer a
    # frame (not stored: the idle period goes on) at t0 + 2^s - 1, t0 + 2^s
    # or t0 + 2^s + 1, then a second one just after it.
    params = dict(enable=1, min_bytes=100, max_bytes=200, max_p=0, wq_shift=1, gentle=0,
                  idle_shift=4)
    bench = RedBench(params)
    seen = {}

    async def testbench(ctx):
        bench.begin(ctx)
        await bench.arrive(ctx, 0, ecn=ECN_ECT0)                    # store: the queue fills
        for offset in (-1, 0, 1):
            for _ in range(6):
                await bench.arrive(ctx, 50_000, ecn=ECN_ECT0)
            await bench.emptied(ctx)
            t0 = bench.now - 1
            await bench.tick(ctx, t0 + (1 << 4) + offset - bench.now)
            before = bench.model.avg_q16
            await bench.arrive(ctx, 0, ecn=ECN_ECT0, will_store=False)
            seen[offset] = bench.model.avg_q16 < before
            # The queue fills again: a frame stored, so one RED passes (the average is in
            # the forced region, which drops every frame): RED off for it, block and model.
            ctx.set(bench.dut.enable, 0)
            bench.model.enable = False
            await bench.arrive(ctx, 0, ecn=ECN_ECT0, will_store=True)
            ctx.set(bench.dut.enable, 1)
            bench.model.enable = True

    simulate(bench.dut, testbench, name="red_step_cycle")
    assert seen == {-1: False, 0: True, 1: True}


def test_count_saturates_at_65535_as_the_model_does():
    # p_b = 0 in the early region (max_p 0): never notified, count grows.
    # count starts near the top (set in the block and the model alike).
    params = dict(enable=1, min_bytes=100, max_bytes=200, max_p=0, wq_shift=1, gentle=0,
                  idle_shift=4)
    bench = RedBench(params)

    async def testbench(ctx):
        bench.begin(ctx)
        await bench.arrive(ctx, 0, ecn=ECN_ECT0)
        for _ in range(20):
            await bench.arrive(ctx, 150, ecn=ECN_ECT0)
        assert bench.model.avg_bytes >= 100
        ctx.set(bench.dut.count, COUNT_MAX - 3)
        bench.model.count = COUNT_MAX - 3
        for _ in range(6):
            await bench.arrive(ctx, 150, ecn=ECN_ECT0)
        assert bench.model.count == COUNT_MAX

    simulate(bench.dut, testbench, name="red_count_max")



def test_an_exempt_frame_passes_where_it_would_be_dropped_and_keeps_count():
    # The average held in the early region with max_p 0 (never notified:
    # count grows) and then in the forced region (every frame notified: a
    # Not-ECT frame dropped); exempt frames in between pass and leave count
    # as it is, while the average and the random numbers go on (checked per
    # decision against the model by RedBench.arrive).
    params = dict(enable=1, min_bytes=100, max_bytes=200, max_p=0, wq_shift=1, gentle=0,
                  idle_shift=4)
    bench = RedBench(params)
    seen = []

    async def testbench(ctx):
        bench.begin(ctx)
        await bench.arrive(ctx, 0, ecn=ECN_ECT0)                    # the queue fills
        for _ in range(12):
            await bench.arrive(ctx, 150, ecn=ECN_ECT0)
        grown = bench.model.count
        for _ in range(5):
            await bench.arrive(ctx, 150, ecn=ECN_ECT0, exempt=True)
        seen.append((grown, bench.model.count))
        await bench.arrive(ctx, 150, ecn=ECN_ECT0)                  # and grows on from there
        seen.append(bench.model.count)
        for _ in range(12):
            await bench.arrive(ctx, 5000, ecn=ECN_NOT_ECT, exempt=True)
        assert bench.model.avg_bytes >= 200                         # forced
        seen.append(bench.model.count)
        seen.append(await bench.arrive(ctx, 5000, ecn=ECN_NOT_ECT))
        seen.append(bench.model.count)

    simulate(bench.dut, testbench, name="red_exempt")
    (grown, held), after_one, in_forced, verdict, after_drop = seen
    assert grown >= 10 and held == grown and after_one == grown + 1
    assert in_forced == grown + 1 and verdict == "drop" and after_drop == 0


@pytest.mark.parametrize("avg_bytes,gentle", [(2000, False), (4125, True)])
def test_the_share_of_notified_frames_is_2pb_over_1_plus_pb(avg_bytes, gentle):
    # A queue held at q = avg_bytes + 1 bytes: with w_q = 1/2 the average
    # settles at (q << 16) - 1, i.e. avg_bytes whole bytes, in the early
    # region: p_b = 0.1 at 2000 (max_p 0.2 halfway from min to max), 0.5 at
    # 4125 (gentle: 0.2 + 0.8 * 1125 / 3000). Count-based spacing gives gaps
    # uniform on 1 .. 1/p_b, a share of 2 p_b / (1 + p_b) (spec section 10;
    # exact where 1/p_b is a whole number, as here to within 2e-5). The gaps
    # vary less than independent trials would, so the binomial standard
    # deviation is a safe bound: 4.5 of them. (Each decision is the model's
    # too: RedBench.arrive.)
    params = dict(enable=1, min_bytes=1000, max_bytes=3000, max_p=13107, wq_shift=1, gentle=gentle,
                  idle_shift=10)
    n = 3000
    bench = RedBench(params)
    outs = []

    async def testbench(ctx):
        bench.begin(ctx)
        await bench.arrive(ctx, 0, ecn=ECN_ECT0)                    # the queue fills
        for _ in range(40):
            await bench.arrive(ctx, avg_bytes + 1, ecn=ECN_ECT0)
        assert bench.model.avg_bytes == avg_bytes
        for _ in range(n):
            outs.append(await bench.arrive(ctx, avg_bytes + 1, ecn=ECN_ECT0))

    simulate(bench.dut, testbench, name="red_share")
    num, den = pb_terms(avg_bytes, min_bytes=params["min_bytes"], max_bytes=params["max_bytes"],
                        max_p=params["max_p"])
    pb = num / (den << 16)
    assert abs(1 / pb - round(1 / pb)) < 1e-3
    share = 2 * pb / (1 + pb)
    marked = outs.count("mark")
    sigma = math.sqrt(n * share * (1 - share))
    assert abs(marked - n * share) <= 4.5 * sigma, (marked, n * share, sigma)
    assert outs.count("drop") == 0


def test_red_unit_converts_to_verilog():
    text = verilog.convert(RedUnit(), name="red_unit")
    assert "module red_unit" in text
    for port in ("start", "emptied", "exempt", "ready", "done", "action", "avg_q16", "prng"):
        assert port in text
