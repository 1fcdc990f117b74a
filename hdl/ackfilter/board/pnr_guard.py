"""Run nextpnr and give a placement seed up by what the router does, not by the clock.

::

    python -m ackfilter.board.pnr_guard [--max-iter N] [--hang-s S] -- NEXTPNR ARGS...

nextpnr's router2 logs one ``iter=K wires=... overused=...`` line per pass
over the congested nets. On a placement it can route, the overuse falls to
0 (this design: 57-120 passes on rev 7.0, seed 1); on one it cannot, the
overuse stalls or climbs again and the router runs on for hours. The guard
watches the log (``--log FILE`` of ``ARGS``) and gives the seed up by three
rules, read off the ``iter=`` lines in order (the first that applies, by
pass, decides):

* *diverged*: from pass :data:`DIVERGE_FROM` on, the overused wires are back
  over :data:`DIVERGE_MIN` and at least :data:`DIVERGE_FACTOR` times the
  fewest seen;
* *stalled*: at pass :data:`STALL_PASS` (the first line at or after it),
  more than :data:`STALL_OVERUSED` wires are overused;
* *not converged*: more than :data:`MAX_ROUTER_ITER` passes.

Each depends on the netlist and the seed only, so a loaded or slow machine
takes longer but never gets another outcome (a run that ends between two
looks at the log is judged on its whole log). A wall-clock limit
(:data:`HANG_S`, far above any routed seed) remains, for a hang.

Exit status: nextpnr's own; :data:`EXIT_NOT_CONVERGED`, :data:`EXIT_DIVERGED`
or :data:`EXIT_STALLED` when a rule gave the seed up; :data:`EXIT_HANG` when
the hang guard stopped it.
"""

import argparse
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["MAX_ROUTER_ITER", "HANG_S", "DIVERGE_FROM", "DIVERGE_MIN", "DIVERGE_FACTOR", "STALL_PASS",
           "STALL_OVERUSED", "EXIT_NOT_CONVERGED", "EXIT_DIVERGED", "EXIT_STALLED", "EXIT_HANG", "guarded",
           "gave_up_reason", "router_passes", "router_trace", "verdict", "run", "main"]

#: Router passes after which a seed is given up: 2.5 times the 120 that rev
#: 7.0's seed 1 needs. A pass with a few dozen overused wires takes about
#: 0.3 s, so a stalled seed costs a couple of minutes more, not hours.
MAX_ROUTER_ITER = 300
#: Wall-clock limit of one nextpnr run, for a hang only: a routed seed takes
#: 8-16 minutes on this project's machines, 30 on one twice as slow.
HANG_S = 3 * 3600
#: The divergence rule. Of this project's router logs, the seeds that routed
#: never rose back above 4 times their fewest overused wires once those were
#: past 1; the ones that diverged climbed to thousands, from passes 47-79 on
#: (ending at pass 300 after 500-600 s here, 2 x that at half speed).
DIVERGE_FROM, DIVERGE_MIN, DIVERGE_FACTOR = 20, 1000, 4
#: The stall rule. Of 12 placements of the 84 %-full flow-queue netlists
#: that routed, none had more than 57 overused wires at pass 40; of 13 that
#: never routed, 11 had 160-950 there. (A second check, more than 5 at pass
#: 100, gave up a placement that routed with 6 there; it is not a rule.)
STALL_PASS, STALL_OVERUSED = 40, 100
EXIT_NOT_CONVERGED = 86
EXIT_DIVERGED = 87
EXIT_STALLED = 88
EXIT_HANG = 124

_ITER_RE = re.compile(r"^Info:\s+iter=(\d+)\s.*overused=(\d+)")


def guarded(argv):
    """``argv`` (a nextpnr command) run under this guard, as a command line."""
    return [sys.executable, "-m", "ackfilter.board.pnr_guard", "--", *argv]


def gave_up_reason(returncode):
    """Why the guard stopped nextpnr, from its exit status (``None``: it did not)."""
    if returncode == EXIT_NOT_CONVERGED:
        return f"routing did not converge in {MAX_ROUTER_ITER} router passes"
    if returncode == EXIT_DIVERGED:
        return (f"the router diverged (from pass {DIVERGE_FROM} on, over {DIVERGE_MIN} overused wires and "
                f"{DIVERGE_FACTOR} x the fewest)")
    if returncode == EXIT_STALLED:
        return f"the router stalled (over {STALL_OVERUSED} overused wires at pass {STALL_PASS})"
    if returncode == EXIT_HANG:
        return f"no result after {HANG_S} s (the hang guard)"
    return None


def router_trace(text):
    """``[(pass, overused), ...]`` of the router2 ``iter=`` lines of a nextpnr log, in order."""
    return [(int(m.group(1)), int(m.group(2))) for m in map(_ITER_RE.match, text.splitlines()) if m]


def router_passes(text):
    """``(passes, overused)`` of the last router2 ``iter=`` line of a
    nextpnr log, or ``(0, None)`` when the router has not started."""
    trace = router_trace(text)
    return trace[-1] if trace else (0, None)


def verdict(trace, max_iter=MAX_ROUTER_ITER):
    """The first rule (module docstring) that gives the seed up on the router
    trace ``[(pass, overused), ...]``: ``(exit status, pass, what)``, or
    ``None`` while none applies."""
    fewest = None
    stall_seen = False
    for k, over in trace:
        if k >= DIVERGE_FROM and fewest is not None and over > DIVERGE_MIN and over >= DIVERGE_FACTOR * fewest:
            return EXIT_DIVERGED, k, (f"the router diverged: {over} overused wires at pass {k}, "
                                      f"{over / fewest:.0f} x the fewest ({fewest})")
        if k >= STALL_PASS and not stall_seen:
            stall_seen = True
            if over > STALL_OVERUSED:
                return EXIT_STALLED, k, (f"the router stalled: {over} overused wires at pass {k} "
                                         f"(more than {STALL_OVERUSED} at pass {STALL_PASS})")
        if k > max_iter:
            return EXIT_NOT_CONVERGED, k, f"the router had not converged after {max_iter} passes"
        fewest = over if fewest is None else min(fewest, over)
    return None


def run(argv, *, max_iter=MAX_ROUTER_ITER, hang_s=HANG_S, poll_s=1.0, forward_signals=False):
    """Run the nextpnr command ``argv`` under the guard; returns the exit status.

    The log is read every ``poll_s`` seconds, and once more when nextpnr
    exits: a run that converged after more than ``max_iter`` passes, between
    two looks, is given up too (:data:`EXIT_NOT_CONVERGED`), so the outcome
    does not depend on when the guard looked. ``forward_signals``: SIGTERM,
    SIGINT and SIGHUP to the guard go on to nextpnr (the command line's
    guard, so a stopped build stops nextpnr too)."""
    if "--log" not in argv:
        raise ValueError("the nextpnr command has no --log FILE for the guard to watch")
    log = Path(argv[argv.index("--log") + 1])
    t0 = time.monotonic()
    proc = subprocess.Popen(argv)

    old = {}
    if forward_signals:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            old[sig] = signal.signal(sig, lambda signum, _frame: proc.send_signal(signum))
    try:
        return _watch(proc, log, t0, max_iter=max_iter, hang_s=hang_s, poll_s=poll_s)
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def _watch(proc, log, t0, *, max_iter, hang_s, poll_s):
    seen = 0
    trace = []
    while True:
        try:
            rc = proc.wait(timeout=poll_s)
        except subprocess.TimeoutExpired:
            rc = None
        if log.exists():
            with open(log, "rb") as f:
                f.seek(seen)
                chunk = f.read()
            # Only whole lines while nextpnr runs: a line being written is read
            # again next time. Once it has exited, the rest.
            cut = len(chunk) if rc is not None else chunk.rfind(b"\n") + 1
            seen += cut
            trace += router_trace(chunk[:cut].decode(errors="replace"))
        given_up = verdict(trace, max_iter)
        if rc is not None:
            if rc == 0 and given_up is not None:
                # A rule applied before the router ended, between two looks at
                # the log: given up all the same, or the outcome would depend
                # on timing.
                code, _k, what = given_up
                if code == EXIT_NOT_CONVERGED:
                    what = (f"the router converged only after {trace[-1][0]} passes, over the "
                            f"limit of {max_iter}")
                with open(log, "a") as f:
                    f.write(f"pnr_guard: {what}; given up\n")
                return code
            return rc
        if given_up is not None:
            proc.kill()
            proc.wait()
            code, _k, what = given_up
            with open(log, "a") as f:
                f.write(f"pnr_guard: {what}; stopped\n")
            return code
        if time.monotonic() - t0 > hang_s:
            proc.kill()
            proc.wait()
            with open(log, "a") as f:
                f.write(f"pnr_guard: no result after {hang_s} s; stopped (a hang)\n")
            return EXIT_HANG


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m ackfilter.board.pnr_guard",
                                 description="Run nextpnr; stop it when its router has not converged "
                                             "after N passes, or after a hang guard in seconds.")
    ap.add_argument("--max-iter", type=int, default=MAX_ROUTER_ITER,
                    help=f"router passes before the seed is given up (default {MAX_ROUTER_ITER})")
    ap.add_argument("--hang-s", type=float, default=HANG_S,
                    help=f"wall-clock limit, for a hang only (default {HANG_S})")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- NEXTPNR ARGS...")
    args = ap.parse_args(argv)
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        ap.error("no nextpnr command given")
    if args.max_iter < 1 or args.hang_s <= 0:
        ap.error("--max-iter and --hang-s must be positive")
    try:
        return run(cmd, max_iter=args.max_iter, hang_s=args.hang_s, forward_signals=True)
    except (ValueError, OSError) as e:
        print(f"pnr_guard: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
