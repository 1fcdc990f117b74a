"""The board's cocotb bench (``tb_board``) on the gates: the board's
simulation top as the bitstream's synthesis maps it to ECP5 cells, with the
cells' simulation models (:mod:`ackfilter.sim.gatesim`). Built once
(``build_name="board-gates"``).

``make gatesim`` runs every test and case of the bench (``ACKFILTER_GATESIM=all``);
``make test`` (and so CI) runs :data:`CI_CASES`: the uplink filter with both
ports at 1000 Mb/s, and a LAN port at 100 Mb/s beside a modem port at 1000."""

import os

import pytest

import runner
import test_board
from ackfilter.sim import gatesim

#: One pytest worker builds the gates and runs them (``--dist loadgroup``);
#: the repository's conftest.py collects them first.
pytestmark = pytest.mark.xdist_group("gates")

#: The bench's tests ``make test`` runs on the gates, each with the cocotb
#: parameter case it runs ("" for a test without parameters).
CI_CASES = {
    "test_uplink_ack_burst_leaves_the_modem_port_unchanged": "",
    "test_uplink_data_leaves_unchanged_and_queued_acks_are_filtered": "",
    "test_mixed_speeds_cross_both_ways_and_the_link_registers_read_them": "speeds=lan100_modem1000",
}
assert set(CI_CASES) <= set(test_board.TESTS), "a CI case names a test tb_board does not have"

ALL = os.environ.get("ACKFILTER_GATESIM") == "all"
CASES = [(name, "") for name in test_board.TESTS] if ALL else list(CI_CASES.items())


@pytest.mark.parametrize("name,case", CASES, ids=[n + (f"/{c}" if c else "") for n, c in CASES])
def test_board_on_gates(name, case):
    only = rf"/{case}" if case else r"(/.*)?"
    runner.run_cocotb("tb_board", toplevel="board_top", verilog_sources=gatesim.sources("board"),
                      build_name="board-gates", build_args=gatesim.build_args(runner.BUILD_ARGS),
                      make_args=gatesim.MAKE_ARGS,
                      extra_env={"COCOTB_TEST_FILTER": rf"^tb_board\.{name}{only}$"})
