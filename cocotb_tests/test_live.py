"""pytest wrappers of ``tb_live``: every register written while frames are
queued, the scoreboard and the independent checker finding nothing (issue:
a control plane that never breaks the link's safety). On the board's core,
and with ``ACKFILTER_BOTH_BUILDS=1`` on the data FIFO's build too
(``runner.core_cases``): the rules of
spec section 4 ("Changing ack_mode") differ between them in where a flow's
ACKs wait."""

import pytest

from runner import core_cases, run_core, tb_tests

#: Every test of the bench.
TESTS = tb_tests("tb_live")
DATA_PATH_TESTS = ["test_every_register_written_mid_traffic"]


@pytest.mark.parametrize("name, build", core_cases(TESTS, DATA_PATH_TESTS))
def test_live(name, build):
    run_core("tb_live", build, rf"^tb_live\.{name}$")
