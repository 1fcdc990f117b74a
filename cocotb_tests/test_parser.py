"""pytest wrappers of ``tb_parser``: spec section 2 through the real RTL.

Each wrapper runs one cocotb test function (all its parametrizations) of
``tb_parser`` on the default elaboration (``build_name="core"``).
"""

import pytest

from runner import CORE_BUILDS, run_core

TESTS = [
    "test_each_frame_gets_its_class_and_neighbours_pass_intact",
    "test_frame_leaves_no_parser_state_behind",
    "test_parsed_fields_decide_supersession",
]


@pytest.mark.parametrize("build", CORE_BUILDS)
@pytest.mark.parametrize("name", TESTS)
def test_parser(name, build):
    run_core("tb_parser", build, rf"^tb_parser\.{name}(/.*)?$")
