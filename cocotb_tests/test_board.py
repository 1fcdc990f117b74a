"""pytest wrapper of ``tb_board``: the board top (``ackfilter.board.sim_top.BoardSimTop``) end
to end, LAN -> modem through the uplink core and modem -> LAN passthrough,
against cocotbext-eth's RGMII models. Built once (``build_name="board"``)."""

import pytest

import runner
from ackfilter.sim.verilog import verilog

#: Every test of the bench.
TESTS = runner.tb_tests("tb_board")


@pytest.mark.parametrize("name", TESTS)
def test_board(name):
    runner.run_cocotb("tb_board", toplevel="board_top", verilog_sources=[verilog("board")],
                      build_name="board",
                      extra_env={"COCOTB_TEST_FILTER": rf"^tb_board\.{name}(/.*)?$"})
