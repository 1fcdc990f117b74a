"""The flow queues' block (``ackfilter.gateware.flow_queues``) against the
model's :class:`~ackfilter.model.flowq.FlowQueues`, operation by operation:
random arrivals into heavy and sparse queues and the shared one (with its
classes), the overflow's drops from the fattest queue (also behind a frame
leaving in chunks), departures whole or in chunks with the link's charges
(with host fairness times the queue's host's bulk queues),
and after every operation the queue the scheduler picked, the frames
dropped, the queues released, and every queue's and class's state as the
queue manager's queries see it."""

import random

import pytest

from blocksim import simulate
from ackfilter.gateware.flow_queues import FlowQueues
from ackfilter.model.flowq import QUANTUM_MAX, QUANTUM_MIN, FlowQueues as Model, cells_of
from ackfilter.params import DATA_CELL_BYTES, DATA_CELL_RESERVE, MAX_FRAME_BYTES, OVERFLOW_BATCH, SHARED_CLASSES


class Frame:
    """A queued frame (or a chunk of one): its length and its id in the block."""

    def __init__(self, nbytes, fid=None):
        self.nbytes, self.fid = nbytes, fid

    def __len__(self):
        return self.nbytes

    def __repr__(self):
        return f"Frame({self.nbytes}, id {self.fid})"


def run(*, entries, cells, quantum, ops, seed, heavy=2, chunk_p=0.2, pick_p=0.45, late_p=0.5, sizes=None,
        hosts=0, host_values=64):
    """``ops`` random operations; returns a tally of what happened. With
    ``late_p`` a departure's charge comes only before the next pick, with
    arrivals in between, as the queue manager lets them (the model takes it
    with ``sent``). ``sizes``: the frame sizes to draw from (default: a mix
    of 60 to MAX_FRAME_BYTES). ``hosts``: the blocks' host buckets; each
    arrival names one of ``host_values`` 6-bit folds, of which they keep the
    low bits."""
    rng = random.Random(seed)
    reserve = DATA_CELL_RESERVE
    nq = entries + 1
    dut = FlowQueues(queues=nq, ids=cells, cells=cells, reserve=reserve, shared=entries, hosts=hosts)
    model = Model(entries=entries, cells=cells, reserve=reserve, quantum=quantum, charge=len, hosts=hosts)
    folds = rng.sample(range(64), host_values)
    tally = {"enq": 0, "drops": 0, "picks": 0, "none": 0, "chunks": 0, "released": 0,
             "shared": 0, "behind_chunks": 0, "late_charges": 0, "rejoined_before_charge": 0,
             "full_batches": 0, "loaded": 0, "between": 0}
    heavy_q = rng.sample(range(nq), heavy)

    async def bench(ctx):
        ctx.set(dut.quantum, quantum)
        free_ids = list(range(cells))
        rng.shuffle(free_ids)
        chunk_left = None                   # bytes of the frame in chunks not yet sent
        cycle = 0
        late = None                         # a charge still to give the block: (bytes, queue left)

        names = ("done", "found", "pick_q", "pick_id", "pick_whole", "drop", "drop_q", "drop_id", "released", "released_q")

        async def op(**strobes):
            """Start an operation with its strobe and run it to its end (``busy``
            low); returns the drops, the queues released, and the outputs of
            the cycle that said ``done`` (or None)."""
            nonlocal cycle
            for k, v in strobes.items():
                ctx.set(getattr(dut, k), v)
            drops, released, done = [], [], None
            first = True
            while first or ctx.get(dut.busy):
                cycle += 1
                assert cycle < 2_000_000, "the block hangs"
                seen = {k: ctx.get(getattr(dut, k)) for k in names}
                if seen["drop"]:
                    drops.append((seen["drop_q"], seen["drop_id"]))
                if seen["released"]:
                    released.append(seen["released_q"])
                if seen["done"]:
                    assert done is None, "done twice"
                    done = seen
                await ctx.tick()
                if first:
                    # The strobe and its arguments hold for one cycle only.
                    for k in strobes:
                        ctx.set(getattr(dut, k), 0)
                    first = False
            return drops, released, done

        def check_state(where):
            assert ctx.get(dut.frames) == model.frames, f"{where}: frames {ctx.get(dut.frames)}, model {model.frames}"
            assert ctx.get(dut.cells) == model.cells, f"{where}: cells {ctx.get(dut.cells)}, model {model.cells}"
            for q in range(nq):
                ctx.set(dut.query_q, q)
                got = (ctx.get(dut.query_empty), ctx.get(dut.query_busy))
                assert got == (model.empty(q), model.busy(q)), f"{where}: queue {q} empty/busy {got}"
            for c in range(SHARED_CLASSES):
                ctx.set(dut.query_cls, c)
                assert ctx.get(dut.cls_busy) == (model.class_frames[c] > 0), f"{where}: class {c}"

        await ctx.tick().repeat(2)
        while ctx.get(dut.busy):            # clearing its host counts after the reset
            await ctx.tick()
        for k in range(ops):
            where = f"op {k}"
            r = rng.random()
            if r < 1 - pick_p:
                # An arrival: a heavy queue, a sparse one, or the shared one.
                pick_kind = rng.random()
                if pick_kind < 0.6:
                    q = rng.choice(heavy_q)
                elif pick_kind < 0.8:
                    q = entries
                else:
                    q = rng.randrange(nq)
                nbytes = rng.choice(sizes or [60, 60, 100, 576, 1514, 1514, 1514,
                                              rng.randrange(60, MAX_FRAME_BYTES + 1)])
                c = cells_of(nbytes)
                if model.cells + c > cells:
                    continue                # the ingress would have found no cells
                cls = rng.randrange(SHARED_CLASSES)
                # The overflow first (spec section 12, "Buffer").
                want = [(vq, f.fid) for vq, f in model.overflow(nbytes)]
                drops, released, done = await op(ovf=1, ovf_cells=c)
                assert done is not None, f"{where}: the overflow check did not end with done"
                assert drops == want, f"{where}: drops {drops}, model {want}"
                assert not released
                tally["drops"] += len(drops)
                tally["full_batches"] += len(drops) == OVERFLOW_BATCH
                tally["behind_chunks"] += any(vq == model.current for vq, _ in want)
                free_ids.extend(fid for _, fid in drops)
                fid = free_ids.pop()
                frame = Frame(nbytes, fid)
                fold = rng.choice(folds)
                model.enqueue(q, frame, tag=cls, host=fold & (hosts - 1) if hosts else 0)
                if late is not None and late[1] == q:
                    tally["rejoined_before_charge"] += 1
                _, released, _ = await op(enq=1, enq_q=q, enq_id=fid, enq_cells=c, enq_cls=cls, enq_host=fold)
                assert not released
                tally["enq"] += 1
                tally["shared"] += q == entries
            else:
                # A departure: the pick, then the frame or its next chunk, then the charge.
                released = []
                if late is not None:
                    _, released, _ = await op(charge=1, charge_bytes=late[0])
                    late = None
                want_q = model.pick()
                _, rel1, seen = await op(pick=1)
                released += rel1
                assert seen is not None, f"{where}: the pick did not end with done"
                if want_q is None:
                    assert not seen["found"], f"{where}: picked {seen['pick_q']}, model nothing"
                    tally["none"] += 1
                else:
                    head = model.queues[want_q].frames[0]
                    between = model.between(want_q)
                    got = (seen["found"], seen["pick_q"], seen["pick_id"], seen["pick_whole"])
                    assert got == (1, want_q, head.fid, between), \
                        f"{where}: picked {got}, model {want_q} (head {head}, between chunks {between})"
                    tally["picks"] += 1
                    tally["between"] += between
                    if chunk_left is None and rng.random() < chunk_p and len(head) > 200:
                        chunk_left = len(head)
                    if between:
                        # A new flow's frame between the chunks: whole.
                        last, sent = True, Frame(len(head) + rng.choice([0, 24, 40]))
                    elif chunk_left is not None:
                        size = min(chunk_left, rng.choice([16, 64, 256, 512]))
                        chunk_left -= size
                        last = chunk_left == 0
                        sent = Frame(size + 54)         # a chunk: its headers and payload
                        tally["chunks"] += 1
                        if last:
                            chunk_left = None
                    else:
                        last, sent = True, Frame(len(head) + rng.choice([0, 24, 40]))
                    tally["loaded"] += model.load(want_q) > 1
                    model.sent(want_q, sent, last=last)
                    if last:
                        free_ids.append(head.fid)
                    _, rel2, _ = await op(sent=1, sent_last=last)
                    released += rel2
                    if rng.random() < late_p:
                        left = want_q if last and not model.queues[want_q].frames else None
                        late = (len(sent), left)
                        tally["late_charges"] += 1
                    else:
                        _, rel3, _ = await op(charge=1, charge_bytes=len(sent))
                        released += rel3
                # Queues leave as the pick looks at them (emptied by drops) and
                # as their last frame leaves, in order.
                want_rel = model.take_released()
                tally["released"] += len(want_rel)
                assert released == want_rel, f"{where}: released {released}, model {want_rel}"
            model.check_invariants()
            check_state(where)

    simulate(dut, bench, name="flow_queues")
    return tally


@pytest.mark.parametrize("quantum", [QUANTUM_MIN, 610, QUANTUM_MAX])
def test_the_flow_queues_agree_with_the_model(quantum):
    tally = run(entries=7, cells=32, quantum=quantum, ops=2500, seed=quantum)
    # Every path was taken: overflow drops (also behind a frame in chunks),
    # chunks, queues leaving, the shared queue, picks with nothing queued.
    assert tally["drops"] > 50 and tally["behind_chunks"] > 0 and tally["chunks"] > 50, tally
    assert tally["between"] > 10, tally
    assert tally["released"] > 50 and tally["shared"] > 100 and tally["none"] > 0, tally
    # Charges that came after arrivals, some after their emptied queue had joined again.
    assert tally["late_charges"] > 100 and tally["rejoined_before_charge"] > 5, tally


@pytest.mark.parametrize("quantum", [QUANTUM_MIN, QUANTUM_MAX])
def test_host_fairness_agrees_with_the_model(quantum):
    """Four host buckets among eight queues and three folds of the six
    bits (two of them one bucket): the charges times a host's bulk queues,
    the counts as queues move to the old list and leave it."""
    tally = run(entries=7, cells=32, quantum=quantum, ops=2500, seed=quantum + 1, heavy=4, hosts=4,
                host_values=3)
    assert tally["loaded"] > 15 and tally["chunks"] > 50 and tally["released"] > 50, tally
    assert tally["late_charges"] > 100 and tally["rejoined_before_charge"] > 5, tally


def test_the_flow_queues_agree_with_the_model_at_the_cores_sizes():
    """params' FLOW_ENTRIES queues and the shared one, DATA_CELLS cells, a
    few heavy queues among many sparse ones."""
    from ackfilter.params import DATA_CELLS, FLOW_ENTRIES
    from ackfilter.params import HOST_BUCKETS
    tally = run(entries=FLOW_ENTRIES, cells=DATA_CELLS, quantum=QUANTUM_MAX, ops=2000, seed=7, heavy=4,
                hosts=HOST_BUCKETS, host_values=5)
    assert tally["drops"] > 20 and tally["released"] > 50 and tally["loaded"] > 50, tally


def test_an_overflow_of_small_frames_stops_at_a_batch():
    """Minimum frames only, at the core's sizes: a full buffer holds far more
    frames than OVERFLOW_BATCH, and an overflow drops a batch, as the model."""
    from ackfilter.params import DATA_CELLS, FLOW_ENTRIES
    tally = run(entries=FLOW_ENTRIES, cells=DATA_CELLS, quantum=QUANTUM_MAX, ops=1500, seed=11, heavy=2,
                pick_p=0.2, sizes=[60, 64, 100])
    assert tally["full_batches"] > 2, tally
