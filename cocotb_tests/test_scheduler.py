"""pytest wrappers of ``tb_scheduler``: acks first with a guaranteed data
share, and the GCRA shaper, through the RTL.

Each wrapper runs one cocotb test function (all its parametrizations) of
``tb_scheduler`` on the default elaboration (``build_name="core"``).
"""

import pytest

from runner import core_verilog, run_cocotb

TESTS = [
    "test_data_share_under_contention",
    "test_shaper_departures_follow_gcra_at_10_mbps",
    "test_shaper_departures_follow_gcra_at_a_fractional_rate",
    "test_shaper_departures_follow_gcra_with_cake_accounting",
]


@pytest.mark.parametrize("name", TESTS)
def test_scheduler(name):
    run_cocotb("tb_scheduler", verilog_sources=[core_verilog()], build_name="core",
               extra_env={"COCOTB_TEST_FILTER": rf"^tb_scheduler\.{name}(/.*)?$"})
