"""What the harnesses share: textual mutations of a block's source, and the
facts a :class:`~ackfilter.gateware.lib.buffer_pool.FreeStack` keeps.

A mutation is a textual change to a copy of a block's source, loaded as a
module of its own (the repository's file is never touched): the proof must
fail on it, which shows the proof can see the fault it is about.
"""

import importlib.util
import sys
from pathlib import Path

from amaranth.hdl import *
from amaranth.hdl._ast import AnySeq
from amaranth.lib import wiring

__all__ = ["drive_inputs", "mutant", "popcount", "stack_facts"]


def mutant(module, old, new):
    """A copy of ``module`` with the text ``old`` (exactly once in it)
    replaced by ``new``, imported under a name of its own."""
    path = Path(module.__file__)
    text = path.read_text()
    if text.count(old) != 1:
        raise ValueError(f"a mutation of {path.name} must match exactly once, it matches "
                         f"{text.count(old)} times: {old!r}")
    name = f"{module.__name__}__mutant{abs(hash((old, new)))}"
    spec = importlib.util.spec_from_loader(name, loader=None)
    mod = importlib.util.module_from_spec(spec)
    mod.__package__ = module.__package__
    mod.__file__ = str(path)
    sys.modules[name] = mod
    exec(compile(text.replace(old, new), f"{path} (mutant)", "exec"), mod.__dict__)
    return mod


def drive_inputs(m, dut, skip=()):
    """Every input of ``dut`` but those named in ``skip`` free in every cycle."""
    for name, member in dut.signature.members.items():
        if member.is_port and member.flow == wiring.In and name not in skip:
            port = Value.cast(getattr(dut, name))
            m.d.comb += port.eq(AnySeq(len(port)))


def popcount(v, n):
    return sum((v >> i) & 1 for i in range(n))


def stack_facts(m, stack, used):
    """Assert what a :class:`~ackfilter.gateware.lib.buffer_pool.FreeStack`
    keeps, against ``used`` (the ids in use, a shadow): while it is built
    after a reset, nothing is offered and the words written so far are the
    ids ``0, 1, ...``; then an offered id is never in use, the stack's words
    below its depth are free and distinct, and its top is right. Returns the
    stack's words and whether it is built."""
    n, k = stack.count, stack.initial
    words = []
    for i in range(n):
        rp = stack.stack.read_port(domain="comb")
        m.d.comb += rp.addr.eq(i)
        words.append(rp.data)
    depth, top = stack.depth, stack.top
    with m.If(stack.building):
        m.d.comb += [
            Assert(~stack.ready),
            Assert((depth == k) & (top == k - 1) & (stack.build_i < k)),
        ]
        for i in range(n):
            with m.If(i < stack.build_i):
                m.d.comb += Assert(words[i] == i)
    with m.Else():
        m.d.comb += [
            Assert(stack.ready),
            Assert(stack.alloc_valid == (depth != 0)),
            Assert(~stack.alloc_valid | (used.bit_select(stack.alloc_id, 1) == 0)),   # never twice
            Assert(Mux(depth == 0, top == 0, top == depth - 1)),
        ]
        for i in range(n):
            with m.If(i < depth):
                m.d.comb += [Assert(words[i] < n),                                 # an id
                             Assert(used.bit_select(words[i], 1) == 0)]            # never both
                for j in range(i + 1, n):
                    with m.If(j < depth):
                        m.d.comb += Assert(words[i] != words[j])
    return words
