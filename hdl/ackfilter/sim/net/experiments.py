"""The asymmetric-link experiments with real Linux TCP through the RTL.

Each run: fresh namespaces and bridge (:class:`~.testbed.Testbed`), a server
agent, a client agent with the scenario's jobs, then the figures. The
scenarios and their settings are in ``docs/experiments.md``. The command
line is here; the parts are modules of their own: :mod:`.variants`,
:mod:`.scenarios` (with the CAKE anchors and the plans), :mod:`.runs`,
:mod:`.tables` and :mod:`.plots`.

    python -m ackfilter.sim.net.experiments --quick     # make experiments-quick
    python -m ackfilter.sim.net.experiments             # make experiments
"""

import argparse
import json
import signal
import sys
import time
from pathlib import Path

from ...paths import REPO_ROOT
from ...units import parse_rate
from ..verilog import normal_sizes
from .bridge import BridgeError, build_bridge
from .plots import plots
from .runs import run_one
from .scenarios import SCENARIOS, cake_text, plan
from .tables import checks, link_text, markdown, nominal_s, probe_text, row_key, scenario_key, summary
from .testbed import TestbedError, require_root
from .variants import VARIANTS, default_variant

__all__ = ["run_counted", "main"]


def run_counted(sc, variant_name, *, attempts=3, run=None, log=None, **kw):
    """Run ``sc`` with ``variant_name`` until the run counts, at most ``attempts`` times.

    A run that does not count (``valid`` false: frames written late past the
    link's bounds, ``bridge.validity_bounds``; a testbed failure) says
    something about the machine, not the design: it is run again from
    scratch, and the row kept is the first valid one, with ``attempts``
    saying how many it took. Discarded attempts are reported through
    ``log``, never averaged in.
    ``run`` is :func:`run_one` unless a test gives another."""
    run = run or run_one
    log = log or (lambda line: None)
    for attempt in range(1, attempts + 1):
        try:
            row = run(sc, variant_name, log=lambda line: log(f"bridge: {line}"), **kw)
        except (TestbedError, BridgeError, OSError, ValueError) as e:
            row = {"scenario": sc.name, "variant": variant_name, "uplink_bps": sc.uplink_bps, "cc": sc.cc,
                   "downlink_bps": sc.downlink_bps, "flows": sc.flows or (len(sc.downloads) or None),
                   "forward_goodput_bps": None, "reverse_goodput_bps": None, "jain": None,
                   "page_time_s": None, "valid": False, "invalid_reason": f"{type(e).__name__}: {e}",
                   "default": variant_name == default_variant(),
                   "cake": cake_text(sc.name, sc.uplink_bps, sc.flows)}
        row["attempts"] = attempt
        if row["valid"]:
            return row
        if attempt < attempts:
            log(f"attempt {attempt} of {sc.name} {link_text(sc)} {variant_name} does not "
                f"count ({row['invalid_reason']}); running it again")
    return row


def main(argv=None):
    """``ackfilter experiments ARGS`` (``argv``: a list, or the CLI's namespace
    whose ``argv`` holds the list); returns the exit status."""
    if argv is not None and not isinstance(argv, (list, tuple)):
        argv = getattr(argv, "argv", None) or []
    ap = argparse.ArgumentParser(
        prog="ackfilter experiments",
        description="Real Linux TCP through the RTL: the research's asymmetric-link scenarios, "
                    "each with the variants, against the CAKE anchors (needs root). Writes "
                    "OUT/NAME.json, OUT/NAME.md and PNG plots.")
    ap.add_argument("--quick", action="store_true",
                    help="S1 at 28.8k and 64k, S3 at 64k and S5 at 28.8k, modem FIFO and the default "
                         "variant, plus the filter off at S1 64k (about 5 minutes); exits 1 if a run "
                         "is invalid or a gate check fails")
    ap.add_argument("--only", metavar="S1,S3,...", help=f"scenarios to run (of {' '.join(SCENARIOS)})")
    ap.add_argument("--variants", metavar="V1,V2,...", help=f"variants to run (of {' '.join(VARIANTS)})")
    ap.add_argument("--uplink", metavar="RATE",
                    help="only the scenarios whose uplink is RATE (tc's grammar: 1mbit, 64kbit)")
    ap.add_argument("--out", default=str(REPO_ROOT / "build" / "experiments"), help="output directory")
    ap.add_argument("--name", help="output name (default: quick or full)")
    ap.add_argument("--list", action="store_true", help="print the plan and exit")
    ap.add_argument("--report", action="store_true",
                    help="run nothing: remake OUT/NAME.md, the summary and the plots from OUT/NAME.json "
                         "(each row's 'default' says whether its variant is the one the core ships "
                         "with now)")
    ap.add_argument("--seed", type=int, default=1, help="random seed of the bridge's loss (default 1)")
    ap.add_argument("--attempts", type=int, default=3, metavar="N",
                    help="run a scenario up to N times until the bridge counts it valid (frames "
                         "written late past the link's bounds: the machine, not the design); the "
                         "row says how many it took (default 3)")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="run every scenario and variant N times (in rounds: all once, then all "
                         "again); the tables give the median and the range (default 1)")
    ap.add_argument("--resume", action="store_true",
                    help="keep the valid rows of an earlier OUT/NAME.json and run only the rest "
                         "(missing or invalid)")
    args = ap.parse_args(argv)
    if args.attempts < 1:
        ap.error(f"--attempts must be 1 or more, not {args.attempts}")
    if args.repeat < 1:
        ap.error(f"--repeat must be 1 or more, not {args.repeat}")

    only = [s.strip().upper() for s in args.only.split(",")] if args.only else None
    for s in only or ():
        if s not in SCENARIOS:
            ap.error(f"unknown scenario {s!r}; known: {' '.join(SCENARIOS)}")
    variants = [v.strip() for v in args.variants.split(",")] if args.variants else None
    for v in variants or ():
        if v not in VARIANTS:
            ap.error(f"unknown variant {v!r}; known: {' '.join(VARIANTS)}")
    todo = plan(quick=args.quick, only=only, variants=variants)
    if args.uplink:
        try:
            up = parse_rate(args.uplink)
        except ValueError as e:
            ap.error(f"--uplink: {e}")
        todo = [(sc, v) for sc, v in todo if sc.uplink_bps == up]
        if not todo:
            ap.error(f"no scenario of the plan has an uplink of {args.uplink}")
    runs = [(n, sc, v) for n in range(1, args.repeat + 1) for sc, v in todo]
    total_s = sum(nominal_s(sc) for _, sc, _ in runs)
    if args.list:
        for sc, v in todo:
            print(f"{sc.name:4} {link_text(sc):>22} {v:26} {sc.duration:.0f} s"
                  + (f" {sc.flows} flows" if sc.flows else ""))
        print(f"{len(runs)} runs ({len(todo)} x {args.repeat}), about {total_s / 60:.0f} minutes")
        return 0
    if args.report:
        name = args.name or ("quick" if args.quick else "full")
        out_dir = Path(args.out)
        path = out_dir / f"{name}.json"
        try:
            rows = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            print(f"ackfilter experiments: cannot read {path}: {e}", file=sys.stderr)
            return 2
        for r in rows:
            r["default"] = r["variant"] == default_variant()
        path.write_text(json.dumps(rows, indent=1) + "\n")
        return _report(rows, out_dir, name, quick=args.quick)
    try:
        require_root()
    except TestbedError as e:
        print(f"ackfilter experiments: {e}", file=sys.stderr)
        return 2
    # SIGTERM ends the run like Ctrl-C: the testbed removes its namespaces.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    name = args.name or ("quick" if args.quick else "full")
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    print(f"experiments: {len(runs)} runs, about {total_s / 60:.0f} minutes; building the bridge ...",
          flush=True)
    # One bridge per build of the core the plan needs, built on first use.
    bridges = {}

    def binary_for(v):
        elab = VARIANTS[v].elab()
        key = tuple(sorted(normal_sizes(elab or {}).items()))
        if key not in bridges:
            bridges[key] = build_bridge(elab)
        return bridges[key]

    if todo:
        binary_for(todo[0][1])
    kept = {}
    others = []                 # the earlier file's rows of experiments outside this plan
    if args.resume and (out_dir / f"{name}.json").exists():
        planned = {(scenario_key(sc, v), n) for n, sc, v in runs}
        for r in json.loads((out_dir / f"{name}.json").read_text()):
            k = (row_key(r), r.get("run", 1))
            if k not in planned:
                others.append(r)
            elif r.get("valid"):
                kept[k] = r
        print(f"experiments: keeping {len(kept)} valid rows of {out_dir / (name + '.json')}"
              + (f" and {len(others)} of experiments outside this plan" if others else ""), flush=True)
    rows = []
    t_start = time.monotonic()
    done_s = 0.0
    keys = [(scenario_key(sc, v), n) for n, sc, v in runs]
    for i, (n, sc, v) in enumerate(runs, 1):
        key = keys[i - 1]
        if key in kept:
            rows.append(kept[key])
            total_s -= nominal_s(sc)
            continue
        t = time.monotonic()
        row = run_counted(sc, v, attempts=args.attempts, binary=binary_for(v), seed=args.seed + n - 1,
                          log=lambda line: print(f"  {line}", flush=True))
        row["run"] = n
        rows.append(row)
        done_s += nominal_s(sc)
        left = max(0.0, total_s - done_s) * (time.monotonic() - t_start) / done_s
        what = []
        if row["forward_goodput_bps"] is not None:
            what.append(f"down {row['forward_goodput_bps'] / 1e3:.0f} kb/s")
        if row["reverse_goodput_bps"] is not None:
            what.append(f"up {row['reverse_goodput_bps'] / 1e3:.1f} kb/s")
        if row["jain"] is not None:
            what.append(f"Jain {row['jain']:.3f}")
        if row["page_time_s"] is not None:
            what.append(f"page {row['page_time_s']:.2f} s")
        if row.get("page_incomplete"):
            what.append(f"a page not loaded in {row['page_time_over_s']:.0f} s")
        if row.get("probe"):
            what.append("probe " + probe_text(row["probe"]))
        if not row["valid"]:
            what.append(f"INVALID: {row['invalid_reason']}")
        print(f"[{i}/{len(runs)}] {sc.name} {link_text(sc)}"
              + (f" {sc.flows} flows" if sc.flows else "") + f" {v}"
              + (f" (run {n})" if args.repeat > 1 else "") + f": {', '.join(what)} "
              f"({time.monotonic() - t:.0f} s; about {left / 60:.0f} min left)", flush=True)
        # Rows still to come that an earlier run left are kept in the file too,
        # so that stopping this run loses nothing.
        later = [kept[k] for k in keys[i:] if k in kept]
        (out_dir / f"{name}.json").write_text(json.dumps(rows + later + others, indent=1) + "\n")
    rows += others
    (out_dir / f"{name}.json").write_text(json.dumps(rows, indent=1) + "\n")
    return _report(rows, out_dir, name, quick=args.quick)


def _report(rows, out_dir, name, *, quick):
    """Write NAME.md, NAME-summary.md and the plots of ``rows``; print the
    table and the checks; returns the exit status."""
    md = markdown(rows, f"ackfilter experiments ({name})")
    results = checks(rows)
    if results:
        md += ("\nChecks (gate: the product's claim, one run must show it; report: a comparison one run "
               "cannot decide; target: the goal not yet reached is reported):\n\n")
        md += "".join(f"- {kind} {'PASS' if ok else 'FAIL'}: {text}\n" for kind, text, ok in results)
    (out_dir / f"{name}.md").write_text(md)
    (out_dir / f"{name}-summary.md").write_text(summary(rows) + "\n")
    pngs = plots(rows, out_dir, name)
    print(md)
    print(f"wrote {out_dir / (name + '.json')}, {out_dir / (name + '.md')}"
          + "".join(f", {p}" for p in pngs))
    bad = [r for r in rows if not r["valid"]]
    failed = [t for kind, t, ok in results if kind == "gate" and not ok]
    if bad:
        print(f"experiments: {len(bad)} invalid runs", file=sys.stderr)
    if failed:
        print(f"experiments: {len(failed)} gate checks failed", file=sys.stderr)
    if quick and (bad or failed):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
