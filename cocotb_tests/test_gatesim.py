"""The board's cocotb bench (``tb_board``) on the gates: the board's
simulation top as the bitstream's synthesis maps it to ECP5 cells, with the
cells' simulation models (:mod:`ackfilter.sim.gatesim`). Built once
(``build_name="board-gates"``).

``make test`` (and so CI) runs two cases, the uplink filter with both ports
at 1000 Mb/s and a LAN at 100 Mb/s with the modem at 1000; ``make gatesim``
(``ACKFILTER_GATESIM=all``) runs every test of the bench."""

import os

import pytest

import runner
import test_board
from ackfilter.sim import gatesim

#: What ``make test`` runs on the gates: (test, cocotb parameter or None).
CI_CASES = [
    ("test_uplink_data_leaves_unchanged_and_queued_acks_are_filtered", None),
    ("test_mixed_speeds_cross_both_ways_and_the_link_registers_read_them", "lan100_modem1000"),
]
ALL = os.environ.get("ACKFILTER_GATESIM") == "all"
#: One pytest worker builds the gates and runs them (``--dist loadgroup``);
#: the repository's conftest.py collects them first.
pytestmark = pytest.mark.xdist_group("gates")


def _cases():
    if ALL:
        return [(name, None) for name in test_board.TESTS]
    return CI_CASES


@pytest.mark.parametrize("name,param", _cases(), ids=lambda x: x or "")
def test_board_on_gates(name, param):
    pattern = rf"^tb_board\.{name}" + (rf"/speeds={param}$" if param else r"(/.*)?$")
    runner.run_cocotb("tb_board", toplevel="board_top", verilog_sources=gatesim.sources("board"),
                      build_name="board-gates", build_args=gatesim.build_args(runner.BUILD_ARGS),
                      make_args=gatesim.MAKE_ARGS,
                      extra_env={"COCOTB_TEST_FILTER": pattern})
