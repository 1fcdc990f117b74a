"""pytest wrappers of ``tb_parser``: spec section 2 through the real RTL.

Each wrapper runs one cocotb test function (all its parametrizations) of
``tb_parser`` on the default elaboration (``build_name="core"``).
"""

import pytest

from runner import core_verilog, run_cocotb

TESTS = [
    "test_each_frame_gets_its_class_and_neighbours_pass_intact",
    "test_frame_leaves_no_parser_state_behind",
    "test_parsed_fields_decide_supersession",
]


@pytest.mark.parametrize("name", TESTS)
def test_parser(name):
    run_cocotb("tb_parser", verilog_sources=[core_verilog()], build_name="core",
               extra_env={"COCOTB_TEST_FILTER": rf"^tb_parser\.{name}(/.*)?$"})
