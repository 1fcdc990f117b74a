"""pytest wrappers of ``tb_supersede``: in-place supersession through the RTL.

Each wrapper runs one cocotb test function (all its parametrizations) of
``tb_supersede`` on the board's core (per-flow data queues), and with ``ACKFILTER_BOTH_BUILDS=1`` on the data FIFO's build too where
``DATA_PATH_TESTS`` says so (``runner.core_cases``).
"""

import pytest

from runner import core_cases, run_core, tb_tests

#: Every test of the bench.
TESTS = tb_tests("tb_supersede")


#: On the data FIFO's build as well (``runner.core_cases``): the tests whose
#: frames reach the data path (the rest is the ACK path and the parser, the
#: same in both builds).
DATA_PATH_TESTS = [
    "test_mode_off_is_a_plain_fifo",
    "test_more_flows_than_entries_everything_still_leaves",
]


@pytest.mark.parametrize("name, build", core_cases(TESTS, DATA_PATH_TESTS))
def test_supersede(name, build):
    run_core("tb_supersede", build, rf"^tb_supersede\.{name}(/.*)?$")
