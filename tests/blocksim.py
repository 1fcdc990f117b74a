"""Shared helpers of the block-level simulation tests (tests/test_*_sim.py,
tests/test_csr_bank.py): the simulator runner and frame <-> word helpers.

Set ``ACKFILTER_VCD=1`` to write a VCD per simulation into build/vcd/.
"""

import os
from pathlib import Path

from amaranth.sim import Simulator

from ackfilter import params as P

__all__ = ["simulate", "frame_words", "words_to_bytes", "nwords"]


def simulate(dut, *testbenches, processes=(), name="sim", period=1 / P.F_SYS_HZ):
    """Run ``dut`` with a clock of ``period`` seconds (the system clock's by
    default), the given testbenches and processes; ``ACKFILTER_VCD=1`` writes
    ``build/vcd/<name>.vcd``."""
    sim = Simulator(dut)
    sim.add_clock(period)
    for tb in testbenches:
        sim.add_testbench(tb)
    for p in processes:
        sim.add_process(p)
    if os.environ.get("ACKFILTER_VCD") == "1":
        out = Path("build/vcd")
        out.mkdir(parents=True, exist_ok=True)
        with sim.write_vcd(str(out / f"{name}.vcd")):
            sim.run()
    else:
        sim.run()


def nwords(nbytes):
    """32-bit words a frame of ``nbytes`` bytes occupies."""
    return (nbytes + 3) // 4


def frame_words(frame, *, fill=None):
    """``frame`` as stream beats ``(data, keep, last)``, byte k in lane k % 4.

    The lanes of a partial last word that ``keep`` excludes hold zeros, or
    the bytes ``fill(n)`` returns (garbage a block must ignore)."""
    beats = []
    for i in range(0, len(frame), 4):
        w = frame[i:i + 4]
        pad = 4 - len(w)
        w = w + (fill(pad) if fill is not None and pad else bytes(pad))
        beats.append((int.from_bytes(w, "little"), (1 << (4 - pad)) - 1, i + 4 >= len(frame)))
    return beats


def words_to_bytes(words, nbytes):
    """The first ``nbytes`` bytes of a list of 32-bit words (lane 0 first)."""
    return b"".join(int(w).to_bytes(4, "little") for w in words)[:nbytes]
