"""pytest wrappers of ``tb_parser``: spec section 2 through the real RTL.

Each wrapper runs one cocotb test function (all its parametrizations) of
``tb_parser`` on the board's core (per-flow data queues), and with ``ACKFILTER_BOTH_BUILDS=1`` on the data FIFO's build too where
``DATA_PATH_TESTS`` says so (``runner.core_cases``).
"""

import pytest

from runner import core_cases, run_core, tb_tests

#: Every test of the bench.
TESTS = tb_tests("tb_parser")


#: On the data FIFO's build as well (``runner.core_cases``): the tests whose
#: frames reach the data path (the rest is the ACK path and the parser, the
#: same in both builds).
DATA_PATH_TESTS = [
    "test_each_frame_gets_its_class_and_neighbours_pass_intact",
]


@pytest.mark.parametrize("name, build", core_cases(TESTS, DATA_PATH_TESTS))
def test_parser(name, build):
    run_core("tb_parser", build, rf"^tb_parser\.{name}(/.*)?$")
