"""The place-and-route guard (ackfilter.board.pnr_guard): it gives a seed up
by the number of router passes in nextpnr's log, not by the clock. Real
subprocesses, with a fake nextpnr (a Python script) that writes router2's
``iter=`` lines to its ``--log`` file."""

import os
import subprocess
import sys
import textwrap
import time

import pytest

from ackfilter.board import build as B, pnr_guard as G

# The fake nextpnr. Options (besides --log FILE): --passes N router passes,
# one every --step S seconds, the overuse reaching 0 at pass --converge-at K
# (0: never, it stalls at 37), or --profile A,B,...: the overuse pass by
# pass (converged if the last is 0); then --hang S seconds of silence, a
# last line and --exit C.
FAKE = textwrap.dedent("""\
    #!{python}
    import sys, time
    argv = sys.argv[1:]
    def opt(name, default):
        return type(default)(argv[argv.index(name) + 1]) if name in argv else default
    passes, converge, step = opt("--passes", 0), opt("--converge-at", 0), opt("--step", 0.01)
    profile = [int(x) for x in opt("--profile", "").split(",") if x]
    if profile:
        passes, converge = len(profile), len(profile) if profile[-1] == 0 else 0
    with open(opt("--log", ""), "w", buffering=1) as log:
        log.write("Info: Command line: " + " ".join(argv) + "\\n")
        log.write("Info: Running router2...\\n")
        for k in range(1, passes + 1):
            time.sleep(step)
            over = profile[k - 1] if profile else max(0, converge - k) if converge else 37
            log.write(f"Info:     iter={{k}} wires=408609 overused={{over}} overuse={{over}} archfail=NA\\n")
            if converge and k >= converge:
                log.write("Info: Router2 time 1.5s\\n")
                break
        time.sleep(opt("--hang", 0.0))
        log.write("Info: Program finished normally.\\n")
    sys.exit(opt("--exit", 0))
""")


@pytest.fixture
def nextpnr(tmp_path):
    """``(command, log path)``: the fake nextpnr with ``--log`` in ``tmp_path``."""
    exe = tmp_path / "nextpnr-ecp5"
    exe.write_text(FAKE.format(python=sys.executable))
    exe.chmod(0o755)
    log = tmp_path / "pnr.log"
    return [str(exe), "--log", str(log)], log


def _timed(fn, *args, **kw):
    t0 = time.monotonic()
    return fn(*args, **kw), time.monotonic() - t0


@pytest.mark.parametrize("converge_at", [5, 20])
def test_a_router_that_converges_is_left_alone(nextpnr, converge_at):
    """Overuse 0 at pass 5, or at pass 20 = max_iter (the limit is on passes beyond it)."""
    cmd, log = nextpnr
    rc = G.run([*cmd, "--passes", "1000", "--converge-at", str(converge_at), "--step", "0.02"],
               max_iter=20, poll_s=0.05)
    text = log.read_text()
    assert rc == 0
    assert G.router_passes(text) == (converge_at, 0)
    assert text.endswith("Info: Program finished normally.\n") and "pnr_guard" not in text


def test_a_router_that_does_not_converge_is_stopped_after_max_iter_passes(nextpnr):
    cmd, log = nextpnr
    rc, wall = _timed(G.run, [*cmd, "--passes", "10000", "--step", "0.01"], max_iter=20, poll_s=0.05)
    text = log.read_text()
    assert rc == G.EXIT_NOT_CONVERGED
    passes, overused = G.router_passes(text)
    assert 20 < passes < 10000 and overused == 37
    assert text.endswith("pnr_guard: the router had not converged after 20 passes; stopped\n")
    assert "finished normally" not in text                 # killed, not waited for
    assert wall < 5


def test_a_router_that_converges_after_max_iter_between_two_looks_is_given_up_all_the_same(nextpnr):
    """The outcome depends on the passes only: nextpnr converging at pass 25
    and exiting before the guard's next look (poll_s 5 s) is still given up."""
    cmd, log = nextpnr
    rc, wall = _timed(G.run, [*cmd, "--passes", "1000", "--converge-at", "25", "--step", "0.001"],
                      max_iter=20, poll_s=5)
    text = log.read_text()
    assert rc == G.EXIT_NOT_CONVERGED and wall < 5
    assert "finished normally" in text and G.router_passes(text) == (25, 0)
    assert text.endswith("pnr_guard: the router converged only after 25 passes, over the limit of 20; "
                         "given up\n")


def test_a_hang_without_router_passes_is_stopped_by_the_hang_guard(nextpnr):
    cmd, log = nextpnr
    rc, wall = _timed(G.run, [*cmd, "--hang", "60"], max_iter=20, hang_s=0.5, poll_s=0.05)
    text = log.read_text()
    assert rc == G.EXIT_HANG
    assert G.router_passes(text) == (0, None)
    assert text.endswith("pnr_guard: no result after 0.5 s; stopped (a hang)\n")
    assert wall < 5


def test_nextpnrs_own_exit_status_passes_through(nextpnr):
    cmd, log = nextpnr
    assert G.run([*cmd, "--passes", "3", "--converge-at", "3", "--exit", "3"], max_iter=20, poll_s=0.05) == 3
    assert "pnr_guard" not in log.read_text()


def test_router_passes_reads_the_last_iter_line_of_a_log():
    log = textwrap.dedent("""\
        Info: Device utilisation:
        Info:           TRELLIS_COMB: 21584/24288    88%
        Info: Running router2...
        Info: Setting up routing resources...
        Info: Running main router loop...
        Info:     iter=1 wires=408609 overused=35124 overuse=47082 archfail=NA
        Info:     iter=2 wires=408609 overused=21890 overuse=27311 archfail=NA
        Info:     iter=119 wires=408609 overused=2 overuse=2 archfail=NA
        Info:     iter=120 wires=408609 overused=0 overuse=0 archfail=0
        Info: Router2 time 283.55s
        Info: Running router1 to check that route is legal...
        Info:            |   (re-)routed arcs  |   delta    | remaining|       time spent     |
        Info:     iter=not a pass line
        Info: Max frequency for clock '$glbnet$clk': 57.30 MHz (PASS at 50.00 MHz)
        """)
    assert G.router_passes(log) == (120, 0)
    assert G.router_passes(log.split("Info: Running main")[0]) == (0, None)
    assert G.router_passes("") == (0, None)


def test_main_wants_a_command_with_a_log(capsys):
    with pytest.raises(SystemExit) as e:
        G.main([])
    assert e.value.code == 2 and "no nextpnr command given" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        G.main(["--max-iter", "20", "--"])
    assert e.value.code == 2 and "no nextpnr command given" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        G.main(["--max-iter", "0", "--", "nextpnr-ecp5", "--log", "x.log"])
    assert e.value.code == 2 and "must be positive" in capsys.readouterr().err
    # No --log: refused before anything runs.
    assert G.main(["--", sys.executable, "-c", "raise SystemExit(9)"]) == 2
    assert "has no --log FILE" in capsys.readouterr().err


def test_the_board_builds_wrapper_runs_nextpnr_under_the_guard(tmp_path, nextpnr):
    """The script Amaranth's build script calls as $NEXTPNR_ECP5 (build._guard_wrapper)
    hands its arguments to the tool through ``python -m ackfilter.board.pnr_guard``."""
    cmd, log = nextpnr
    wrapper = B._guard_wrapper(tmp_path, cmd[0])
    assert f"-m ackfilter.board.pnr_guard -- {cmd[0]} " in wrapper.read_text()
    proc = subprocess.run([str(wrapper), *cmd[1:], "--passes", "2", "--converge-at", "2"],
                          env={**os.environ, "PYTHONPATH": str(B.REPO / "hdl")})
    assert proc.returncode == 0
    assert f"Info: Command line: --log {log} --passes 2 --converge-at 2\n" in log.read_text()


def test_the_guard_as_a_command_gives_up_with_its_own_exit_status(nextpnr):
    cmd, log = nextpnr
    proc = subprocess.run([sys.executable, "-m", "ackfilter.board.pnr_guard", "--max-iter", "20", "--",
                           *cmd, "--passes", "10000", "--step", "0.002"],
                          env={**os.environ, "PYTHONPATH": str(B.REPO / "hdl")})
    assert proc.returncode == G.EXIT_NOT_CONVERGED
    assert log.read_text().endswith("pnr_guard: the router had not converged after 20 passes; stopped\n")


def test_a_stopped_guard_stops_nextpnr(nextpnr, tmp_path):
    """SIGTERM to the command-line guard reaches nextpnr: no router left
    running behind a build that was stopped."""
    cmd, log = nextpnr
    guard = subprocess.Popen([sys.executable, "-m", "ackfilter.board.pnr_guard", "--", *cmd,
                              "--passes", "1", "--hang", "60"])
    deadline = time.monotonic() + 20
    while "iter=1 " not in (log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline, "the fake nextpnr did not start"
        time.sleep(0.05)
    guard.terminate()
    guard.wait(timeout=20)
    # The fake's last line would come after its 60 s of silence: it never does.
    time.sleep(0.5)
    assert "finished normally" not in log.read_text()
    out = subprocess.run(["pgrep", "-f", str(cmd[0])], capture_output=True, text=True)
    assert out.stdout.strip() == "", out.stdout


def _profile(*segments):
    """Overuse per pass from (passes, from, to) segments, each a straight line."""
    out = []
    for n, a, b in segments:
        out += [round(a + (b - a) * i / max(n - 1, 1)) for i in range(n)]
    return out


# Shapes of real router2 logs of this project (overused wires by pass).
ROUTED = _profile((10, 35000, 900), (30, 800, 57), (22, 50, 0))          # converged at pass 62
DIVERGED = _profile((10, 35000, 900), (30, 800, 60), (56, 50, 6), (80, 8, 3000))   # 6 at pass 96, then up
STALLED = _profile((10, 35000, 900), (30, 800, 160), (60, 150, 40))      # 160 at pass 40


def test_verdict_reads_the_rules_off_router_traces():
    trace = lambda p: list(enumerate(p, start=1))
    assert G.verdict(trace(ROUTED)) is None
    assert max(ROUTED[39:]) <= 57 and DIVERGED[39] <= 100 and min(DIVERGED) == 6
    code, k, what = G.verdict(trace(DIVERGED))
    # The first pass over 1,000 overused wires and 4 x the fewest (6).
    first = next(i for i, o in enumerate(DIVERGED, start=1) if i > 96 and o > 1000)
    assert (code, k) == (G.EXIT_DIVERGED, first) and "6)" in what
    assert G.verdict(trace(STALLED))[:2] == (G.EXIT_STALLED, 40)
    # Pass 40 missing from the log: the first line after it is judged, once.
    assert G.verdict([(39, 50), (41, 150)])[:2] == (G.EXIT_STALLED, 41)
    assert G.verdict([(40, 100), (41, 150), (42, 400)]) is None
    # Divergence needs both: over 1,000, and 4 x the fewest; from pass 20 on.
    assert G.verdict([(1, 300), (19, 2000)]) is None
    assert G.verdict([(1, 300), (20, 1200)])[:2] == (G.EXIT_DIVERGED, 20)
    assert G.verdict([(1, 300), (20, 1000)]) is None
    assert G.verdict([(1, 400), (20, 1500)]) is None
    # The earliest rule by pass decides: here divergence (pass 30) before the stall check.
    assert G.verdict([(1, 200), (30, 5000), (40, 5000), (301, 0)])[:2] == (G.EXIT_DIVERGED, 30)
    assert G.verdict([(k, 37) for k in range(1, 302)], max_iter=300)[:2] == (G.EXIT_NOT_CONVERGED, 301)


@pytest.mark.parametrize("profile, code, at", [
    (DIVERGED, G.EXIT_DIVERGED, "at pass 124,"), (STALLED, G.EXIT_STALLED, "at pass 40 ")])
def test_a_diverging_or_stalled_router_is_stopped_where_its_rule_says(nextpnr, profile, code, at):
    cmd, log = nextpnr
    rc, wall = _timed(G.run, [*cmd, "--profile", ",".join(map(str, profile)), "--step", "0.01"],
                      poll_s=0.05)
    text = log.read_text()
    assert rc == code and G.gave_up_reason(rc) is not None
    assert "finished normally" not in text and wall < 10
    last = text.splitlines()[-1]
    assert last.startswith("pnr_guard: the router ") and last.endswith("; stopped") and at in last, last


def test_a_rule_that_applied_before_a_late_look_still_gives_the_seed_up(nextpnr):
    """Stalled at pass 40, then converged, all between two looks (poll_s 5 s):
    given up as if the guard had looked at pass 40."""
    cmd, log = nextpnr
    profile = _profile((10, 35000, 900), (30, 800, 160), (20, 150, 0))
    rc, wall = _timed(G.run, [*cmd, "--profile", ",".join(map(str, profile)), "--step", "0.0005"],
                      poll_s=5)
    text = log.read_text()
    assert rc == G.EXIT_STALLED and wall < 5
    assert "finished normally" in text and G.router_passes(text) == (60, 0)
    assert text.endswith("pnr_guard: the router stalled: 160 overused wires at pass 40 "
                         "(more than 100 at pass 40); given up\n")
