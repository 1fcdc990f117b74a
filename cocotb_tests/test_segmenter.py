"""pytest wrapper of ``tb_segmenter``: the segmenter's edge cases through the
RTL at line rate, on the default elaboration (``build_name="core"``)."""

from runner import core_verilog, run_cocotb


def test_segmenter():
    run_cocotb("tb_segmenter", verilog_sources=[core_verilog()], build_name="core")
