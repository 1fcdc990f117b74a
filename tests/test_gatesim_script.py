"""The gate-level simulation's synthesis is the bitstream's (the bench on
the gates runs in ``cocotb_tests/test_gatesim.py``)."""

from ackfilter.sim import gatesim


def test_the_gate_simulation_synthesizes_as_the_bitstream_does():
    """The board build's Yosys script (Amaranth's ECP5 template, rendered
    for the board top as ``make bitstream`` renders it) runs, after reading
    the design, exactly :data:`gatesim.SYNTH` and writes the netlist."""
    from ackfilter.board.build import BOARDS
    from ackfilter.board.revisions import platform_class
    from ackfilter.board.top import BoardTop
    platform = platform_class(BOARDS["colorlight-5a-75b"]["revision"])()
    plan = platform.prepare(BoardTop(), name="top")
    lines = [" ".join(ln.split()) for ln in plan.files["top.ys"].splitlines()]
    steps = [ln for ln in lines if ln and not ln.startswith("#") and not ln.startswith("read_")]
    assert steps == [s.format(top="top") for s in gatesim.SYNTH] + ["write_json top.json"]

