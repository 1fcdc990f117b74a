"""pytest wrappers of ``tb_scheduler``: acks first with a guaranteed data
share, and the GCRA shaper, through the RTL.

Each wrapper runs one cocotb test function (all its parametrizations) of
``tb_scheduler`` on the default elaboration (``build_name="core"``).
"""

import pytest

from runner import CORE_BUILDS, run_core

TESTS = [
    "test_data_share_under_contention",
    "test_shaper_departures_follow_gcra_at_10_mbps",
    "test_shaper_departures_follow_gcra_at_a_fractional_rate",
    "test_shaper_departures_follow_gcra_with_cake_accounting",
]


@pytest.mark.parametrize("build", CORE_BUILDS)
@pytest.mark.parametrize("name", TESTS)
def test_scheduler(name, build):
    run_core("tb_scheduler", build, rf"^tb_scheduler\.{name}(/.*)?$")
