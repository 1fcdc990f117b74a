"""Check a hardware run against the golden model, decision by decision.

The queue manager reports every operation on its event port
(``docs/spec.md`` section 7) in the order it did them. :func:`check_run`
replays that order through :class:`~ackfilter.model.FilterModel`: each
arrival event (with the drops that made room for it) must be exactly what the
model decides for the next input frame, each departure must be of the class
the model's scheduler picks, the frames that left must be exactly the
model's, in order, and every counter must agree. The model predicts flow-tag
collisions itself, so nothing the hardware did is excused. Used by the cocotb
benches, the replay tests and the fuzz campaign alike.
"""

from ..params import ARRIVAL_EVENTS, OVERRUN_EVENT, RED_DECISION_LEAD
from .filter import FilterModel

__all__ = ["ARRIVALS", "check_run"]

ARRIVALS = ARRIVAL_EVENTS
#: Drops that make room for the arrival reported next.
ROOM = frozenset({"DROP_ACK_FRONT", "DROP_ACK_COVERED", "DROP_DATA_OVERFLOW"})


def check_run(model, sent, events, received, *, counters=None, writes=()):
    """Raise ``AssertionError`` at the first disagreement; return the model.

    ``sent``: input frames in order; ``events``: ``(cycle, name)`` in order;
    ``received``: output frames in order; ``counters``: hardware counters by
    name (optional; then every counter of the model is compared);
    ``writes``: ``(index, apply)`` of registers written while frames were
    queued: ``apply(model)`` is called before event ``index`` (the number of
    events the hardware had reported when the write took effect).
    """
    writes = sorted(writes, key=lambda w: w[0])
    if not isinstance(model, FilterModel):
        raise TypeError(f"model must be a FilterModel, not {model!r}")
    pending = []
    first_cycle = None       # of the arrival's first event (its drops' or its own)
    frames = iter(sent)
    n_in = 0
    expected_out = []
    for i, (cycle, ev) in enumerate(events):
        while writes and writes[0][0] <= i:
            assert not pending, f"a register written between an arrival's events ({pending})"
            writes.pop(0)[1](model)
        if ev == OVERRUN_EVENT:
            raise AssertionError(f"cycle {cycle}: drop_overrun (the core fell behind its input)")
        if ev in ROOM:
            if not pending:
                first_cycle = cycle
            pending.append(ev)
            continue
        if ev in ARRIVALS:
            frame = next(frames, None)
            assert frame is not None, f"cycle {cycle}: {ev} but every input frame was accounted for"
            n_in += 1
            # RED decided RED_DECISION_LEAD cycles before the arrival's
            # first event (spec section 10: an overflow's drops come after
            # the verdict, and its decision does not depend on `now`).
            now = (first_cycle if pending else cycle) - RED_DECISION_LEAD
            got = model.arrive(frame, data_full=(ev == "DROP_DATA_FULL"), now=now)
            want = pending + [ev]
            assert got == want, (
                f"cycle {cycle}, event #{i}: input frame #{n_in - 1} ({frame[:64].hex()}...): "
                f"hardware did {want}, model says {got}")
            pending = []
            continue
        if ev == "MODE_SWITCH":
            assert not pending, f"cycle {cycle}: MODE_SWITCH between an arrival's events ({pending})"
            model.switch_mode()
            continue
        assert ev in ("DEPART_ACK", "DEPART_DATA"), f"unknown event {ev!r}"
        got = model.depart(now=cycle)
        assert got is not None, f"cycle {cycle}: hardware sent {ev}, the model has nothing queued"
        assert got[0] == ev, f"cycle {cycle}, event #{i}: hardware {ev}, model {got[0]}"
        # The frame too, as it happens (the n-th departure is the n-th frame out).
        n = len(expected_out)
        assert n >= len(received) or received[n] == got[1], (
            f"cycle {cycle}, event #{i}: output frame #{n} differs from the model:\n"
            f" hw    {received[n].hex()}\n model {got[1].hex()}")
        expected_out.append(got[1])
    for _, apply in writes:                  # written after the last event
        apply(model)
    assert not pending, f"{pending} without the arrival that caused it"
    assert len(received) == len(expected_out), (
        f"{len(received)} frames left, the model expected {len(expected_out)}")
    for n, (a, b) in enumerate(zip(received, expected_out)):
        assert a == b, f"output frame #{n} differs from the model:\n hw    {a.hex()}\n model {b.hex()}"
    if counters is not None:
        for name, value in model.counters.items():
            assert counters[name] == value, f"counter {name}: hardware {counters[name]}, model {value}"
    return model
