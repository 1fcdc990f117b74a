"""pytest wrappers of ``tb_linerate``: line rate, back-pressure, buffer full.

Each wrapper runs one cocotb test function (all its parametrizations) of
``tb_linerate`` on the board's core (per-flow data queues), and on the data
FIFO's build too where ``DATA_PATH_TESTS`` says so (``runner.core_cases``).
"""

import pytest

from runner import core_cases, run_core

TESTS = [
    "test_min_size_data_frames_at_line_rate_lose_nothing",
    "test_min_size_acks_of_many_flows_at_line_rate_lose_nothing",
    "test_mixed_trace_at_line_rate_loses_nothing",
    "test_full_ack_queue_at_line_rate_drops_from_front_without_overrun",
    "test_frame_sizes_pass_intact_with_idle_and_backpressure",
    "test_full_data_buffer_drops_excess_1514_byte_frames_and_keeps_the_rest_intact",
    "test_full_buffer_drops_min_size_frames_beyond_its_cells",
]


#: On the data FIFO's build as well (``runner.core_cases``): all of them
#: (the data path).
DATA_PATH_TESTS = TESTS


@pytest.mark.parametrize("name, build", core_cases(TESTS, DATA_PATH_TESTS))
def test_linerate(name, build):
    run_core("tb_linerate", build, rf"^tb_linerate\.{name}(/.*)?$")
