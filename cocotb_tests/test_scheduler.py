"""pytest wrappers of ``tb_scheduler``: acks first with a guaranteed data
share, and the GCRA shaper, through the RTL.

Each wrapper runs one cocotb test function (all its parametrizations) of
``tb_scheduler`` on the board's core (per-flow data queues), and with ``ACKFILTER_BOTH_BUILDS=1`` on the data FIFO's build too where
``DATA_PATH_TESTS`` says so (``runner.core_cases``).
"""

import pytest

from runner import core_cases, run_core, tb_tests

#: Every test of the bench.
TESTS = tb_tests("tb_scheduler")


#: On the data FIFO's build as well (``runner.core_cases``): all of them
#: (the data path).
DATA_PATH_TESTS = TESTS


@pytest.mark.parametrize("name, build", core_cases(TESTS, DATA_PATH_TESTS))
def test_scheduler(name, build):
    run_core("tb_scheduler", build, rf"^tb_scheduler\.{name}(/.*)?$")
