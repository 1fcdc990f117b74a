"""pytest wrappers of ``tb_random``: seeded 10,000-frame random traces
through the RTL, scoreboarded against the golden model.

Each wrapper runs one cocotb test of ``tb_random`` on the default
elaboration (``build_name="core"``); each takes about a minute.
"""

import pytest

from runner import CORE_BUILDS, run_core

TESTS = [
    "test_random_trace_conservative_shaped",
    "test_random_trace_aggressive_backpressured",
    "test_random_trace_small_ack_queue_drops_from_front",
]


@pytest.mark.parametrize("build", CORE_BUILDS)
@pytest.mark.parametrize("name", TESTS)
def test_random(name, build):
    run_core("tb_random", build, rf"^tb_random\.{name}$")
