"""pytest wrappers of ``tb_supersede``: in-place supersession through the RTL.

Each wrapper runs one cocotb test function (all its parametrizations) of
``tb_supersede`` on the board's core (per-flow data queues), and on the data
FIFO's build too where ``DATA_PATH_TESTS`` says so (``runner.core_cases``).
"""

import pytest

from runner import core_cases, run_core

TESTS = [
    "test_dup_acks_are_never_superseded",
    "test_supersession_rules",
    "test_conservative_keeps_two_queued_per_flow_aggressive_one",
    "test_only_the_newest_is_overwritten_in_its_place",
    "test_mode_off_is_a_plain_fifo",
    "test_ipv6_vlan_and_pppoe_flows_are_keyed_separately",
    "test_vlan_tag_type_is_part_of_the_flow_key_priority_is_not",
    "test_three_vlan_tags_make_a_frame_data",
    "test_tag_collision_never_supersedes_another_flow",
    "test_more_flows_than_entries_everything_still_leaves",
    "test_drop_from_front_with_a_small_queue_limit",
    "test_a_full_queue_drops_covered_acks_before_the_front",
]


#: On the data FIFO's build as well (``runner.core_cases``): the tests whose
#: frames reach the data path (the rest is the ACK path and the parser, the
#: same in both builds).
DATA_PATH_TESTS = [
    "test_mode_off_is_a_plain_fifo",
    "test_more_flows_than_entries_everything_still_leaves",
]


@pytest.mark.parametrize("name, build", core_cases(TESTS, DATA_PATH_TESTS))
def test_supersede(name, build):
    run_core("tb_supersede", build, rf"^tb_supersede\.{name}(/.*)?$")
