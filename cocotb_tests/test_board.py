"""pytest wrapper of ``tb_board``: the board top (``ackfilter.board.sim_top.BoardSimTop``) end
to end, LAN -> modem through the uplink core and modem -> LAN passthrough,
against cocotbext-eth's RGMII models. Built once (``build_name="board"``)."""

import pytest

import runner
from ackfilter.sim.verilog import verilog

TESTS = [
    "test_uplink_ack_burst_leaves_the_modem_port_unchanged",
    "test_uplink_data_leaves_unchanged_and_queued_acks_are_filtered",
    "test_downlink_passes_unchanged_while_uplink_is_busy",
    "test_mixed_speeds_cross_both_ways_and_the_link_registers_read_them",
    "test_the_shaper_holds_a_100_mbps_modem_port_to_its_rate",
    "test_a_port_that_renegotiates_mid_traffic_recovers",
]


@pytest.mark.parametrize("name", TESTS)
def test_board(name):
    runner.run_cocotb("tb_board", toplevel="board_top", verilog_sources=[verilog("board")],
                      build_name="board",
                      extra_env={"COCOTB_TEST_FILTER": rf"^tb_board\.{name}(/.*)?$"})
