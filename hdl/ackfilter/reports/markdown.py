"""The reports as Markdown: a target's resources, blocks, clocks and
critical paths (:func:`format_markdown`), and a sweep's table
(:func:`format_sweep_markdown`)."""

from .parse import COLUMNS, DEVICE

__all__ = ["format_markdown", "format_sweep_markdown"]

#: The Markdown block table shows rows down to this depth, and children only
#: from this many LUT4 or FF up, or with RAM (the JSON has every row).
MARKDOWN_DEPTH = 2
MARKDOWN_MIN_CELLS = 16


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
