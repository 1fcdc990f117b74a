"""Yosys's and nextpnr's output read (pure functions: the unit tests feed
them canned text): cells per report column, per block of the hierarchy,
Fmax per clock against its target, the costs of a sweep."""

import json

__all__ = ["DEVICE", "COLUMNS", "MEMORY_CELLS", "parse_yosys_stat", "block_usage", "parse_nextpnr_report",
           "clock_margins", "sweep_costs"]

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
