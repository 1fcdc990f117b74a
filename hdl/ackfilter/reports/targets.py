"""What the reports build: a :class:`Design` (sources, top module, clock
targets, constraints) per :class:`Target`, registered by name
(:func:`register_target`): the board as ``make bitstream`` builds it, and
the uplink core alone in a pin harness."""

import dataclasses
import functools

from .. import params as P

__all__ = ["Design", "Target", "TARGETS", "register_target", "HARNESS_PINS"]


@dataclasses.dataclass
class Design:
    """What the flow needs of an elaborated target.

    sources : list of (file name, text); ``.il`` is read as RTLIL, ``.v`` as Verilog.
    top : the top module's name.
    block_root : the module whose direct submodules are the report's blocks.
    clocks : {clock port or net name: target MHz}; becomes ``FREQUENCY`` lines.
    lpf : extra LPF text (pin ``LOCATE``/``IOBUF``); the board top's constraints.
    excluded : module names reported as rows of their own but not as blocks
        (a measurement harness, a board's pads and clocking).
    clock_names : {clock net label: clock domain}; the report names a clock
        by its domain.
    clock_targets : {clock or domain: MHz} the margin is taken against (when
        higher than the constraint nextpnr reports), without a ``FREQUENCY``
        line of its own (a board's LPF has them).
    nextpnr_args : the device options, when not :data:`DEVICE`'s (another
        package: rev 6.1 of the board is a BG381).
    flat_script : the Yosys script of the flat netlist for place and route
        (reading ``sources``, writing ``netlist.json``), when it must be the
        bitstream build's own: the board's, so its placement and Fmax are the
        bitstream's. Empty: read the sources, ``synth_ecp5``.
    """
    sources: list
    top: str
    block_root: str
    clocks: dict
    lpf: str = ""
    excluded: tuple = ()
    clock_names: dict = dataclasses.field(default_factory=dict)
    clock_targets: dict = dataclasses.field(default_factory=dict)
    nextpnr_args: tuple = ()
    flat_script: str = ""


@dataclasses.dataclass
class Target:
    """A named design: ``build(**params)`` returns a :class:`Design`."""
    name: str
    description: str
    build: object
    sweepable: bool = False


TARGETS = {}


def register_target(target):
    """Add a target (e.g. a board top) so ``python -m ackfilter.reports NAME`` builds it."""
    if not isinstance(target, Target):
        raise TypeError(f"target must be a Target, not {target!r}")
    TARGETS[target.name] = target
    return target


#: The harness's clock pin: P6, the board's 25 MHz input, a primary clock pin.
HARNESS_PINS = 'LOCATE COMP "clk" SITE "P6";\nIOBUF PORT "clk" IO_TYPE=LVCMOS33;\n'


def _build_uplink_core(*, ack_slots=P.ACK_SLOTS, flow_entries=P.FLOW_ENTRIES,
                       data_buffer_bytes=P.DATA_BUFFER_BYTES, flow_queues=P.FLOW_QUEUES):
    from amaranth.back import rtlil
    from ..gateware.core import UplinkCore
    from ..gateware.lib.pin_harness import PinHarness
    core = UplinkCore(ack_slots=ack_slots, flow_entries=flow_entries,
                      data_buffer_bytes=data_buffer_bytes, flow_queues=flow_queues)
    text = rtlil.convert(PinHarness(core), name="harness", emit_src=False)
    return Design(sources=[("harness.il", text)], top="harness", block_root="harness.core",
                  clocks={"clk": P.F_SYS_HZ / 1e6}, lpf=HARNESS_PINS, excluded=("harness",))


register_target(Target(
    name="uplink-core",
    description=f"UplinkCore (system domain, {P.F_SYS_HZ / 1e6:g} MHz) in a 4-pin harness",
    build=_build_uplink_core, sweepable=True))


def _build_colorlight(*, ack_slots=P.ACK_SLOTS, flow_entries=P.FLOW_ENTRIES,
                      data_buffer_bytes=P.DATA_BUFFER_BYTES, flow_queues=P.FLOW_QUEUES,
                      board="colorlight-5a-75b"):
    from ..board.build import BOARDS, REPO, domain_of_clock
    from ..board.revisions import platform_class
    from ..board.top import CLOCK_TARGETS_HZ, BoardTop
    from ..firmware import build_firmware, firmware_image
    extra = (REPO / "constraints" / BOARDS[board]["lpf"]).read_text()
    top = BoardTop(ack_slots=ack_slots, flow_entries=flow_entries,
                   data_buffer_bytes=data_buffer_bytes, flow_queues=flow_queues,
                   firmware=firmware_image(build_firmware()))
    platform = platform_class(BOARDS[board]["revision"])()
    plan = platform.prepare(top, name="top", add_preferences=extra)
    package = {"BG256": "CABGA256", "BG381": "CABGA381"}[platform.package]
    nets = ("clk", "clk_tx", "tx_clk", "lan_tx_clk", "modem_tx_clk", "lan_rx_clk", "modem_rx_clk")
    # The design (top.il) and the Verilog it instantiates (the SoC's CPU).
    from ..soc.cpu import serv_sources
    sources = [("top.il", plan.files["top.il"])] + [(n, plan.files[n]) for n, _ in serv_sources()]
    # The flat netlist exactly as `make bitstream` synthesizes it (Amaranth's
    # script: the same reads in the same order), so nextpnr places the same.
    flat = plan.files["top.ys"].replace("write_json top.json", "write_json netlist.json")
    assert "write_json netlist.json" in flat
    return Design(sources=sources, top="top", flat_script=flat,
                  block_root="top.datapath", clocks={}, lpf=plan.files["top.lpf"],
                  clock_names={net: domain_of_clock(net) for net in nets},
                  clock_targets={d: hz / 1e6 for d, hz in CLOCK_TARGETS_HZ.items()},
                  nextpnr_args=("--25k", "--package", package, "--speed", platform.speed))


for _rev in ("5a-75b-v6.1", "5a-75b-v7.0", "5a-75b-v8.0", "5a-75b-v8.2"):
    register_target(Target(
        name=_rev,
        description=f"the board top on revision {_rev[7:]} (its pins and package; "
                    f"make bitstream BOARD={_rev})",
        build=functools.partial(_build_colorlight, board=_rev)))


register_target(Target(
    name="colorlight-5a-75b",
    description="the Colorlight 5A-75B board top (both MACs, the core and the control "
                "plane's SoC; clocks and pins as make bitstream builds them)",
    build=_build_colorlight, sweepable=True))
