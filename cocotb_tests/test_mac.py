"""pytest wrappers of ``tb_mac``: one EthernetMAC against cocotbext-eth's RGMII models.

The MAC top (``ackfilter.gateware.mac.sim_top.MACSimTop``) is built once (``build_name="mac"``) with a
1 fs simulator precision, so the RX/TX clocks can be 100 ppm off (8.0008 ns).
"""

from contextlib import contextmanager

import pytest

import runner
from ackfilter.sim.verilog import verilog

#: Every test of the bench.
TESTS = runner.tb_tests("tb_mac")

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
