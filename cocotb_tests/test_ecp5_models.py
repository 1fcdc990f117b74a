"""pytest wrapper of ``tb_ecp5_models``: the gate-level simulation's DP16KD
model at the widths and write modes Yosys maps the board's memories to."""

import pytest

import runner
from ackfilter.sim import gatesim


@pytest.mark.parametrize("width,mode", [(36, "NORMAL"), (18, "READBEFOREWRITE"), (18, "NORMAL"),
                                        (9, "READBEFOREWRITE"), (2, "READBEFOREWRITE"),
                                        (9, "WRITETHROUGH")])
def test_dp16kd_model(width, mode):
    runner.run_cocotb("tb_ecp5_models", toplevel="DP16KD", verilog_sources=[gatesim.MODELS / "ecp5_dp16kd.v"],
                      build_name=f"dp16kd-{width}-{mode.lower()}",
                      parameters={"DATA_WIDTH_A": width, "DATA_WIDTH_B": width,
                                  "WRITEMODE_A": f'"{mode}"', "WRITEMODE_B": f'"{mode}"'},
                      build_args=runner.BUILD_ARGS + ["-Wno-MULTIDRIVEN"],
                      extra_env={"WIDTH": str(width), "MODE": mode})
