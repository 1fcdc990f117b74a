"""The board's cocotb bench (``tb_board``), every test of it, on the gates:
the board's simulation top as the bitstream's synthesis maps it to ECP5
cells, with the cells' simulation models (:mod:`ackfilter.sim.gatesim`).
Built once (``build_name="board-gates"``); ``make test`` (and so CI) runs
them, ``make gatesim`` runs only them."""

import pytest

import runner
import test_board
from ackfilter.sim import gatesim

#: One pytest worker builds the gates and runs them (``--dist loadgroup``);
#: the repository's conftest.py collects them first.
pytestmark = pytest.mark.xdist_group("gates")


@pytest.mark.parametrize("name", test_board.TESTS)
def test_board_on_gates(name):
    runner.run_cocotb("tb_board", toplevel="board_top", verilog_sources=gatesim.sources("board"),
                      build_name="board-gates", build_args=gatesim.build_args(runner.BUILD_ARGS),
                      make_args=gatesim.MAKE_ARGS,
                      extra_env={"COCOTB_TEST_FILTER": rf"^tb_board\.{name}(/.*)?$"})
