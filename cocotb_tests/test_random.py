"""pytest wrappers of ``tb_random``: seeded 10,000-frame random traces
through the RTL, scoreboarded against the golden model.

Each wrapper runs one cocotb test of ``tb_random`` on the board's core (per-flow
data queues), and with ``ACKFILTER_BOTH_BUILDS=1`` on the data FIFO's build too where
``DATA_PATH_TESTS`` says so (``runner.core_cases``); each takes about a minute.
"""

import pytest

from runner import core_cases, run_core, tb_tests

#: Every test of the bench.
TESTS = tb_tests("tb_random")


#: On the data FIFO's build as well (``runner.core_cases``): one of the
#: three mixed traces (each takes 20 s or more; the fuzz campaign covers the
#: rest).
DATA_PATH_TESTS = [
    "test_random_trace_aggressive_backpressured",
]


@pytest.mark.parametrize("name, build", core_cases(TESTS, DATA_PATH_TESTS))
def test_random(name, build):
    run_core("tb_random", build, rf"^tb_random\.{name}$")
