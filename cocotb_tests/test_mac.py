"""pytest wrappers of ``tb_mac``: one EthernetMAC against cocotbext-eth's RGMII models.

The MAC top (``ackfilter.gateware.mac.sim_top.MACSimTop``) is built once (``build_name="mac"``) with a
1 fs simulator precision, so the RX/TX clocks can be 100 ppm off (8.0008 ns).
"""

from contextlib import contextmanager

import pytest

import runner
from ackfilter.sim.verilog import verilog

TESTS = [
    "test_rx_frame_sizes_arrive_intact_without_fcs",
    "test_rx_crc_errors_runts_rx_er_and_oversize_are_dropped_and_counted",
    "test_rx_stalled_system_side_drops_whole_frames_and_counts_overflows",
    "test_the_speed_is_measured_from_rxc_and_a_change_mid_traffic_recovers",
    "test_in_band_link_status_is_decoded_between_frames",
    "test_tx_frames_leave_with_preamble_padding_fcs_and_12_byte_gaps",
    "test_tx_oversize_frames_are_dropped_and_counted",
    "test_back_to_back_min_frames_both_directions_at_once_lose_nothing",
]

#: 100 ppm of 8 ns is 0.8 ps: needs a finer precision than the default 1 ps.
TIMESCALE = ("1ns", "1fs")


@contextmanager
def _timescale(ts):
    # run_cocotb reads runner.TIMESCALE at call time; restore it for the others.
    old = runner.TIMESCALE
    runner.TIMESCALE = ts
    try:
        yield
    finally:
        runner.TIMESCALE = old


@pytest.mark.parametrize("name", TESTS)
def test_mac(name):
    with _timescale(TIMESCALE):
        runner.run_cocotb("tb_mac", toplevel="mac_top", verilog_sources=[verilog("mac")],
                          build_name="mac",
                          extra_env={"COCOTB_TEST_FILTER": rf"^tb_mac\.{name}(/.*)?$"})
