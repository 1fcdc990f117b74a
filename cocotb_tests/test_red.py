"""pytest wrapper of ``tb_red``: RED's marking and drop rules through the RTL
at line rate, on the default elaboration (``build_name="core"``)."""

from runner import core_verilog, run_cocotb


def test_red():
    run_cocotb("tb_red", verilog_sources=[core_verilog()], build_name="core")
