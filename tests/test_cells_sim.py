# amaranth: UnusedElaboratable=no
"""The data buffer's free list of cells (``gateware.lib.cells.CellList``) in
the Amaranth simulator, alone, against a Python model of the list.

The testbench plays the ingress (it takes frames of ``take_n`` cells from the
head, naming ``take_head``, the cell after the frame's last, as the model
has it), the egress (``rel_en``: a frame sent gives its chain back) and the
queue manager (``dis_en``: a frame dropped gives its chain back), each give
at most every other cycle, in any order of the frames, and a release and a
drop now and then in the same cycle. The model is the spec's (section 12,
"Buffer"; ``lib/cells.py``): the free list is a sequence of cells from
``head`` to ``tail``, all cells in order after reset; a take removes the
first ``take_n``; a give appends the frame's cells, in its chain's order
(``next[tail] := first``); a drop given in the cycle of a release is
appended one cycle later, after it. Checked every cycle:

* ``head`` is the model's first free cell and ``free`` its length;
* following ``rd_next`` (with ``ing_req``, the ingress's address) from
  ``head`` visits the model's free list, cell by cell, up to its tail;
* following ``rd_next`` (without ``ing_req``: the egress's address, and
  ``eg_ok``) from the first cell of every frame taken and not given back
  visits the frame's cells: no chain is ever corrupted;
* at the end, every frame given back, ``free`` is all cells and the list
  holds each cell once.
"""

import random
from collections import deque

import pytest

from blocksim import simulate
from ackfilter.gateware.lib.cells import CellList


def run_cells(*, cells, max_cells, seed, cycles, take_p=0.3, rel_p=0.3, dis_p=0.3,
              coincide_p=0.3, script=None):
    """Run a :class:`CellList` against the model for ``cycles`` cycles of
    random takes and gives (or those ``script(cycle)`` names: ``take`` cells,
    ``rel``, ``dis`` a random frame), then give every frame back. Returns a
    tally."""
    dut = CellList(cells=cells, max_cells=max_cells)
    rng = random.Random(seed)
    tally = {"takes": 0, "rels": 0, "dis": 0, "held": 0, "took_to_the_tail": 0, "only_tail": 0,
             "non_contiguous": 0}

    async def bench(ctx):
        free = deque(range(cells))      # the model's free list, head first
        live = []                       # frames taken, not given back: lists of cells
        held = None                     # a drop that waits a cycle (its cells)
        last_rel = last_dis = -2        # cycles of the last rel_en / dis_en
        cycle = 0
        while not ctx.get(dut.ready):   # the free list is built after reset
            await ctx.tick()

        def check():
            assert ctx.get(dut.head) == free[0], f"cycle {cycle}: head {ctx.get(dut.head)}, model {free[0]}"
            assert ctx.get(dut.free) == len(free), f"cycle {cycle}: free {ctx.get(dut.free)}, model {len(free)}"
            c = free[0]
            ctx.set(dut.ing_req, 1)
            ctx.set(dut.eg_addr, rng.randrange(cells))        # not read: the ingress has the port
            assert not ctx.get(dut.eg_ok)
            for want in list(free)[1:]:
                ctx.set(dut.ing_addr, c)
                c = ctx.get(dut.rd_next)
                assert c == want, f"cycle {cycle}: the free list goes on at {c}, model {want}"
            ctx.set(dut.ing_req, 0)
            assert ctx.get(dut.eg_ok)
            for frame in live:
                c = frame[0]
                for want in frame[1:]:
                    ctx.set(dut.ing_addr, rng.randrange(cells))   # not read
                    ctx.set(dut.eg_addr, c)
                    c = ctx.get(dut.rd_next)
                    assert c == want, f"cycle {cycle}: frame {frame} goes on at {c}"

        def chain(frame):
            return {"first": frame[0], "last": frame[-1], "n": len(frame)}

        def pick():
            return live.pop(rng.randrange(len(live)))

        while cycle < cycles or live or held is not None:
            check()
            draining = cycle >= cycles
            forced = script(cycle) if script and not draining else None
            # The ingress: a frame of n cells, at most free - 1 (the tail stays).
            n = 0
            room = min(max_cells, len(free) - 1)
            if forced is not None:
                n = forced.get("take", 0)
                assert n <= room
            elif not draining and room and rng.random() < take_p:
                n = rng.choice([room, rng.randint(1, room)])
            # The egress and the queue manager: each at most every other cycle.
            rel = dis = None
            if forced is not None:
                if forced.get("rel") and live:
                    rel = pick()
                if forced.get("dis") and live:
                    dis = pick()
            else:
                both = rng.random() < coincide_p
                if live and cycle - last_rel > 1 and (draining or rng.random() < rel_p):
                    rel = pick()
                if live and cycle - last_dis > 1 and (both and rel is not None or rng.random() < dis_p):
                    dis = pick()
            assert rel is None or cycle - last_rel > 1
            assert dis is None or cycle - last_dis > 1
            ctx.set(dut.take_en, n > 0)
            ctx.set(dut.take_n, n)
            ctx.set(dut.take_head, free[n] if n else rng.randrange(cells))
            ctx.set(dut.rel_en, rel is not None)
            ctx.set(dut.rel, chain(rel or [rng.randrange(cells)]))
            ctx.set(dut.dis_en, dis is not None)
            ctx.set(dut.dis, chain(dis or [rng.randrange(cells)]))
            await ctx.tick()
            cycle += 1
            # The model after this edge: the take, the release, the drop
            # held from the cycle before or this cycle's (unless it waits).
            if n:
                frame = [free.popleft() for _ in range(n)]
                live.append(frame)
                tally["takes"] += 1
                tally["took_to_the_tail"] += len(free) == 1
                tally["non_contiguous"] += any((b - a) % cells != 1 for a, b in zip(frame, frame[1:]))
            tally["only_tail"] += len(free) == 1
            if rel is not None:
                last_rel = cycle - 1
                tally["rels"] += 1
                free.extend(rel)
            if held is not None:
                free.extend(held)
                held = None
            if dis is not None:
                last_dis = cycle - 1
                tally["dis"] += 1
                if rel is not None:
                    held = dis
                    tally["held"] += 1
                else:
                    free.extend(dis)
        ctx.set(dut.take_en, 0)
        ctx.set(dut.rel_en, 0)
        ctx.set(dut.dis_en, 0)
        await ctx.tick()
        check()
        assert len(free) == cells and sorted(free) == list(range(cells))

    simulate(dut, bench, name=f"cells_{seed}")
    return tally


def test_after_reset_every_cell_is_free_in_order():
    dut = CellList(cells=8, max_cells=4)

    async def bench(ctx):
        assert not ctx.get(dut.ready)
        await ctx.tick().repeat(8)              # a cell a cycle
        assert ctx.get(dut.ready)
        assert ctx.get(dut.head) == 0 and ctx.get(dut.free) == 8
        for c in range(7):
            ctx.set(dut.ing_req, 1)
            ctx.set(dut.ing_addr, c)
            ctx.set(dut.eg_addr, 7 - c)
            assert ctx.get(dut.rd_next) == c + 1
            ctx.set(dut.ing_req, 0)
            assert ctx.get(dut.rd_next) == (7 - c + 1) % 8

    simulate(dut, bench, name="cells_reset")


@pytest.mark.parametrize("cells,max_cells,seed", [(16, 4, 1), (32, 16, 2), (24, 16, 3)])
def test_random_takes_and_gives_agree_with_the_free_list_model(cells, max_cells, seed):
    # Frames of up to max_cells cells taken while at least one cell more is
    # free (often exactly to the tail), given back in random order by the
    # egress and the queue manager, sometimes in the same cycle.
    tally = run_cells(cells=cells, max_cells=max_cells, seed=seed, cycles=3000)
    assert tally["takes"] > 300 and tally["rels"] > 100 and tally["dis"] > 100, tally
    assert tally["held"] > 20 and tally["took_to_the_tail"] > 20 and tally["only_tail"] > 20, tally
    # The cells were recycled out of order: frames got scattered cells.
    assert tally["non_contiguous"] > 50, tally


def test_a_drop_in_the_cycle_of_a_release_is_given_back_one_cycle_later():
    # Three frames; release #0 and drop #1 in the same cycle, with a take in
    # it and in the next: `free` grows by the release at once and by the
    # drop a cycle later, and the list goes on with the released cells,
    # then the dropped ones (check() every cycle, against the model).
    plan = {0: {"take": 3}, 1: {"take": 2}, 2: {"take": 4}, 4: {"rel": 1, "dis": 1, "take": 2},
            5: {"take": 1}, 7: {"rel": 1, "dis": 1}, 8: {"take": 2}, 9: {"rel": 1}, 11: {"dis": 1}}
    tally = run_cells(cells=12, max_cells=4, seed=4, cycles=12, script=lambda c: plan.get(c, {}))
    assert tally["held"] == 2, tally


def test_the_constructor_checks_its_sizes():
    with pytest.raises(TypeError, match=r"cells must be an integer 4\.\.4096, not 3"):
        CellList(cells=3, max_cells=1)
    with pytest.raises(TypeError, match=r"max_cells must be an integer 1\.\.15, not 16"):
        CellList(cells=16, max_cells=16)
    with pytest.raises(TypeError, match=r"cells must be an integer 4\.\.4096, not 8\.0"):
        CellList(cells=8.0, max_cells=2)


def test_a_reset_rebuilds_the_free_list_whatever_order_the_cells_came_back_in():
    # Frames given back out of order scramble `next`, which a reset does not
    # clear (LUT RAM): after a reset the list is 0 -> 1 -> ... again, built a
    # cell a cycle while `ready` is low.
    from amaranth.hdl import Module, ResetInserter, Signal
    dut = CellList(cells=8, max_cells=4)
    rst = Signal()
    top = Module()
    top.submodules.dut = ResetInserter(rst)(dut)

    async def bench(ctx):
        while not ctx.get(dut.ready):
            await ctx.tick()
        # Take 0-1, 2-3, 4-5 (frames of two), give them back 4-5, 0-1, 2-3.
        for first in (0, 2, 4):
            ctx.set(dut.take_en, 1)
            ctx.set(dut.take_n, 2)
            ctx.set(dut.take_head, first + 2)
            await ctx.tick()
        ctx.set(dut.take_en, 0)
        for first in (4, 0, 2):
            ctx.set(dut.rel_en, 1)
            ctx.set(dut.rel, {"first": first, "last": first + 1, "n": 2})
            await ctx.tick()
            ctx.set(dut.rel_en, 0)
            await ctx.tick()
        ctx.set(dut.ing_req, 1)
        ctx.set(dut.ing_addr, 7)
        assert ctx.get(dut.rd_next) == 4                # scrambled: ... 7 -> 4 -> 5 -> 0 ...
        ctx.set(rst, 1)
        await ctx.tick()
        ctx.set(rst, 0)
        assert not ctx.get(dut.ready)
        await ctx.tick().repeat(8)
        assert ctx.get(dut.ready) and ctx.get(dut.head) == 0 and ctx.get(dut.free) == 8
        for c in range(8):
            ctx.set(dut.ing_addr, c)
            assert ctx.get(dut.rd_next) == (c + 1) % 8

    simulate(top, bench, name="cells_reset_rebuild")
