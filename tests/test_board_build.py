"""The board build's timing gate (``make bitstream``, and so ``.ci/run``):
reading nextpnr's log, naming clocks by domain, failing on a missed domain.
The toolchain itself is not run here (a place and route takes ~12 minutes);
``build`` is replaced by a function returning a summary as the real one does."""

import sys

import pytest

from ackfilter.board import build as B, pnr_guard as G
from ackfilter.board.nextpnr import parse_nextpnr_log

# The tail of a real nextpnr-ecp5 log of this board (post-route figures come last).
LOG = """
Info: Device utilisation:
Info:             TRELLIS_IO:    29/  197    14%
Info:           TRELLIS_COMB: 14479/24288    59%
Info:             TRELLIS_FF:  9654/24288    39%
Info:                 DP16KD:    34/   56    60%
Info: Max frequency for clock '$glbnet$modem_rx_clk': 172.74 MHz (PASS at 125.00 MHz)
Info: Max frequency for clock   '$glbnet$lan_tx_clk': 132.96 MHz (PASS at 125.00 MHz)
Info: Max frequency for clock          '$glbnet$clk': 68.56 MHz (PASS at 62.50 MHz)
Info: Max frequency for clock '$glbnet$modem_rx_clk': 146.35 MHz (PASS at 125.00 MHz)
Info: Max frequency for clock   '$glbnet$lan_rx_clk': 148.85 MHz (PASS at 125.00 MHz)
Warning: Max frequency for clock   '$glbnet$lan_tx_clk': 121.00 MHz (FAIL at 125.00 MHz)
Info: Max frequency for clock          '$glbnet$clk': 70.90 MHz (PASS at 62.50 MHz)
"""

TARGETS = {"sync": 62.5e6, "lan_rx": 125e6, "modem_rx": 125e6, "tx": 125e6}


@pytest.fixture(autouse=True)
def no_firmware_build(monkeypatch):
    """The build makes the firmware first; these tests replace the toolchain, so
    the firmware too (the tests that build it are tests/test_firmware_*.py)."""
    from ackfilter import firmware
    monkeypatch.setattr(firmware, "build_firmware", lambda: firmware.FIRMWARE_BIN)
    monkeypatch.setattr(firmware, "firmware_image", lambda path=None: b"\x13\x00\x00\x00")


def fake_toolchain(monkeypatch, platform, run):
    """The board build with ``platform`` for Amaranth's and ``run`` for
    every later tool call (nextpnr, ecppack)."""
    from ackfilter.board import revisions as R, top as T
    monkeypatch.setattr(R, "platform_class", lambda name: platform)
    monkeypatch.setattr(T, "BoardTop", lambda **kw: None)
    monkeypatch.setattr(B.subprocess, "run", run)
    monkeypatch.setenv("NEXTPNR_ECP5", "nextpnr")
    monkeypatch.setenv("ECPPACK", "ecppack")


def test_log_gives_the_post_route_figure_of_each_clock_and_the_utilization():
    parsed = parse_nextpnr_log(LOG)
    fmax, util = parsed["fmax"], parsed["utilization"]
    assert fmax["$glbnet$lan_tx_clk"] == {"achieved": 121.0, "constraint": 125.0}
    assert fmax["$glbnet$modem_rx_clk"] == {"achieved": 146.35, "constraint": 125.0}
    assert util["TRELLIS_COMB"] == {"used": 14479, "available": 24288}
    assert util["DP16KD"] == {"used": 34, "available": 56}


def test_clock_nets_are_named_by_domain_and_ports_follow_the_swap():
    assert B.domain_of_clock("$glbnet$clk") == "sync"
    assert B.domain_of_clock("$glbnet$lan_tx_clk") == B.domain_of_clock("modem_tx_clk") == "tx"
    assert B.domain_of_clock("$glbnet$eth_rgmii_0__rx_clk__io") == "lan_rx"
    assert B.domain_of_clock("$glbnet$eth_rgmii_0__rx_clk__io", swap_ports=True) == "modem_rx"


def test_a_missed_domain_fails_with_its_margin_and_a_missing_one_fails_too():
    fmax = parse_nextpnr_log(LOG)["fmax"]
    rows = {r[0]: r for r in B.check_timing(fmax, TARGETS)}
    domain, net, got, want, margin, ok = rows["tx"]
    assert (got, want, ok) == (121.0, 125.0, False) and margin == pytest.approx(-3.2)
    assert rows["sync"][5] and rows["sync"][4] == pytest.approx(13.44)
    fmax.pop("$glbnet$lan_rx_clk")
    rows = {r[0]: r for r in B.check_timing(fmax, TARGETS)}
    assert rows["lan_rx"][2:] == (0.0, 125.0, -100.0, False)


def test_the_configured_target_wins_over_a_lower_constraint():
    rows = B.check_timing({"$glbnet$clk": {"achieved": 60.0, "constraint": 50.0}}, {"sync": 62.5e6})
    assert rows[0][3] == 62.5 and not rows[0][5]


def _summary(out, timing_ok, tx_mhz=None):
    tx_mhz = tx_mhz or (149.28 if timing_ok else 121.0)
    margin = 100 * (tx_mhz - 125) / 125
    return {"board": "colorlight-5a-75b", "swap_ports": False, "bitstream": str(out / "top.bit"),
            "build_seconds": 660.0,
            "clocks": [dict(domain="tx", net="$glbnet$lan_tx_clk", fmax_mhz=tx_mhz,
                            target_mhz=125.0, margin_pct=round(margin, 1), ok=timing_ok)],
            "utilization": {"TRELLIS_COMB": {"used": 14479, "available": 24288}},
            "timing_ok": timing_ok, "margin_pct": B.MARGIN_PCT, "margin_ok": margin >= B.MARGIN_PCT}


@pytest.mark.parametrize("tx_mhz, code, warned", [(149.28, 0, False), (131.0, 0, True), (121.0, 1, False)])
def test_main_exits_1_on_missed_timing_warns_under_the_margin_and_names_the_bitstream(
        monkeypatch, tmp_path, capsys, tx_mhz, code, warned):
    seen = {}
    timing_ok = tx_mhz >= 125

    def fake_build(board, *, out_root, **kw):
        seen.update(board=board, out_root=out_root, **kw)
        return _summary(out_root, timing_ok, tx_mhz)

    monkeypatch.setattr(B, "build", fake_build)
    assert B.main(["--board", "colorlight-5a-75b", "--out", str(tmp_path), "--seed", "3"]) == code
    out, err = capsys.readouterr()
    assert seen["out_root"] == tmp_path and seen["seeds"] == (3,) and seen["router"] == "router2"
    assert seen["control_plane"] is True
    assert f"bitstream: {tmp_path / 'top.bit'} (660 s)" in out
    assert ("MISSED" in out) is (not timing_ok)
    assert ("timing not met" in err) is (not timing_ok)
    assert ("no placement seed gave every clock 10 % of margin" in err) is warned
    assert seen["margin_pct"] == B.MARGIN_PCT


def test_main_with_margin_0_asks_for_the_first_seed_that_meets_and_warns_under_10(
        monkeypatch, tmp_path, capsys):
    seen = {}

    def fake_build(board, *, out_root, **kw):
        seen.update(kw)
        return dict(_summary(out_root, True, 131.0), margin_pct=0.0, margin_ok=True, margin_goal_ok=False)

    monkeypatch.setattr(B, "build", fake_build)
    assert B.main(["--board", "colorlight-5a-75b", "--out", str(tmp_path), "--margin", "0"]) == 0
    assert seen["margin_pct"] == 0.0
    err = capsys.readouterr().err
    assert ("the seed kept (the first that meets every target, --margin 0) does not give every "
            "clock 10 % of margin") in err


def test_main_leaves_the_control_plane_out_when_told(monkeypatch, tmp_path):
    seen = {}

    def fake_build(board, *, out_root, **kw):
        seen.update(kw)
        return _summary(out_root, True)

    monkeypatch.setattr(B, "build", fake_build)
    assert B.main(["--board", "colorlight-5a-75b", "--out", str(tmp_path), "--no-control-plane"]) == 0
    assert seen["control_plane"] is False


def test_main_exits_2_with_the_log_paths_when_the_toolchain_fails(monkeypatch, tmp_path, capsys):
    def failing_build(board, **kw):
        raise B.BuildError("the toolchain failed (exit 1); its logs are X/top.rpt (Yosys) and X/top.tim")

    monkeypatch.setattr(B, "build", failing_build)
    assert B.main(["--board", "colorlight-5a-75b", "--out", str(tmp_path)]) == 2
    assert "top.tim" in capsys.readouterr().err


def test_main_refuses_an_unknown_board_and_spi_without_flash(capsys):
    with pytest.raises(SystemExit) as e:
        B.main(["--board", "versa"])
    assert e.value.code == 2
    with pytest.raises(SystemExit):
        B.main(["--board", "colorlight-5a-75b", "--spi"])
    assert "--spi needs --flash" in capsys.readouterr().err


def test_a_build_does_not_require_openfpgaloader():
    from ackfilter.board.top import Colorlight5A75BR70Platform
    tools = Colorlight5A75BR70Platform().required_tools
    assert "openFPGALoader" not in tools
    assert {"yosys", "nextpnr-ecp5", "ecppack"} <= set(tools)


_SCRIPT = """#!/bin/sh
"$YOSYS" -q -l top.rpt top.ys
"$NEXTPNR_ECP5" --quiet --timing-allow-fail --seed 1 --router router2 --log top.tim --25k --package CABGA256 --speed 6 --json top.json --lpf top.lpf --textcfg top.config
"$ECPPACK" --compress --input top.config --bit top.bit --svf top.svf
"""

# The guard's command ahead of a nextpnr command (pnr_guard.guarded).
_GUARD = [sys.executable, "-m", "ackfilter.board.pnr_guard", "--"]


def _router(passes, overused_at_end=0):
    """router2's pass lines: the overuse falls to ``overused_at_end`` at pass ``passes``."""
    return "".join(f"Info:     iter={k} wires=408609 overused={max(overused_at_end, passes - k)} "
                   f"overuse={max(overused_at_end, passes - k)} archfail=NA\n" for k in range(1, passes + 1))


def _tim(tx_mhz, passes=120):
    verdict = "PASS" if tx_mhz >= 125 else "FAIL"
    return (LOG.split("Info: Max frequency")[0] + _router(passes)
            + "Info: Max frequency for clock '$glbnet$modem_rx_clk': 146.35 MHz (PASS at 125.00 MHz)\n"
            + "Info: Max frequency for clock '$glbnet$lan_rx_clk': 148.85 MHz (PASS at 125.00 MHz)\n"
            + f"Info: Max frequency for clock '$glbnet$lan_tx_clk': {tx_mhz:.2f} MHz ({verdict} at 125.00 MHz)\n"
            + "Info: Max frequency for clock '$glbnet$clk': 70.90 MHz (PASS at 62.50 MHz)\n")


def _stalled():
    """The log of a seed the guard stopped: placement, 301 passes whose overuse stalls, the guard's line."""
    return (LOG.split("Info: Max frequency")[0] + _router(301, overused_at_end=37)
            + "pnr_guard: the router had not converged after 300 passes; stopped\n")


def _nextpnr(argv):
    """The nextpnr command of a guarded one, else None (ecppack runs unguarded)."""
    return argv[len(_GUARD):] if argv[:len(_GUARD)] == _GUARD else None


def _seed_1_misses_tx(tmp_path):
    """A platform class whose build (Yosys and seed 1's nextpnr, as
    Amaranth's script runs them) misses TX at 121 MHz."""
    class FakePlatform:
        def build(self, top, *, build_dir, nextpnr_opts, **kw):
            work = tmp_path / "amaranth"
            work.mkdir(parents=True, exist_ok=True)
            assert "--seed 1" in nextpnr_opts
            (work / "build_top.sh").write_text(_SCRIPT)
            (work / "top.tim").write_text(_tim(121.0))
            (work / "top.config").write_text("seed 1")
            (work / "top.bit").write_text("bitstream of seed 1")
    return FakePlatform


@pytest.mark.parametrize("seed3_tx", [140.0, None])
def test_the_next_seed_is_placed_from_the_same_netlist_until_every_clock_has_its_margin(
        monkeypatch, tmp_path, seed3_tx):
    """Seed 1 misses TX, seed 2 meets it by 4.8 % (under the 10 % margin),
    seed 3 by 12 % (then seed 3 is packed and seed 4 never run) or misses it
    (then the best of them, seed 2, is packed); timing.json records every try."""
    ran = []

    FakePlatform = _seed_1_misses_tx(tmp_path)

    def fake_run(argv, *, cwd, **kw):
        nextpnr = _nextpnr(argv)
        if nextpnr is not None:
            ran.append("guarded " + nextpnr[0])
            seed = nextpnr[nextpnr.index("--seed") + 1]
            assert nextpnr[nextpnr.index("--json") + 1] == "top.json"          # Yosys's netlist, not rerun
            tx = {"2": 131.0, "3": seed3_tx or 100.0}[seed]
            (cwd / nextpnr[nextpnr.index("--log") + 1]).write_text(_tim(tx, passes=100 + int(seed)))
            (cwd / nextpnr[nextpnr.index("--textcfg") + 1]).write_text(f"seed {seed}")
        else:
            ran.append(argv[0])
            assert argv[0] == "ecppack"
            config = (cwd / argv[argv.index("--input") + 1]).read_text()
            (cwd / argv[argv.index("--bit") + 1]).write_text(f"bitstream of {config}")
        return B.subprocess.CompletedProcess(argv, 0, "", "")

    fake_toolchain(monkeypatch, FakePlatform, fake_run)
    heard = []
    summary = B.build("colorlight-5a-75b", out_root=tmp_path, seeds=(1, 2, 3), log=heard.append)
    chosen = 3 if seed3_tx else 2
    assert ran == ["guarded nextpnr", "guarded nextpnr", "ecppack"]
    assert summary["timing_ok"] and summary["seed"] == chosen
    assert summary["margin_ok"] is bool(seed3_tx)
    assert [(t["seed"], t["timing_ok"]) for t in summary["tries"]] == [(1, False), (2, True), (3, bool(seed3_tx))]
    assert [(t["router_passes"], t["gave_up"]) for t in summary["tries"]] == [
        (120, None), (102, None), (103, None)]
    assert (tmp_path / "top.bit").read_text() == f"bitstream of seed {chosen}"
    assert "seed 1: tx missed by 3.2% (" in heard[0] and heard[0].endswith(" s, 120 router passes)")
    assert "seed 2: every clock met, worst tx +4.8% (under the 10 % margin)" in heard[1]
    if seed3_tx:
        assert "seed 3: every clock met, worst tx +12.0% (" in heard[2] and "under" not in heard[2]
        assert summary["seed_reason"].startswith("seed 3: every clock beats its target by 10 % or more (")
    else:
        assert summary["seed_reason"].startswith("seed 2: the best worst margin of the seeds tried "
                                                 "(none reached 10 %) (seed 1: tx missed by 3.2%)")


def test_with_no_margin_asked_the_first_seed_that_meets_every_target_ends_the_search(
        monkeypatch, tmp_path):
    """CI's build (``--margin 0``): seed 1 misses TX, seed 2 meets it by
    4.8 %, and seed 3 is never placed."""
    seeds_run = []

    FakePlatform = _seed_1_misses_tx(tmp_path)

    def fake_run(argv, *, cwd, **kw):
        nextpnr = _nextpnr(argv)
        if nextpnr is not None:
            seed = nextpnr[nextpnr.index("--seed") + 1]
            seeds_run.append(seed)
            (cwd / nextpnr[nextpnr.index("--log") + 1]).write_text(_tim({"2": 131.0, "3": 140.0}[seed]))
            (cwd / nextpnr[nextpnr.index("--textcfg") + 1]).write_text(f"seed {seed}")
        else:
            config = (cwd / argv[argv.index("--input") + 1]).read_text()
            (cwd / argv[argv.index("--bit") + 1]).write_text(f"bitstream of {config}")
        return B.subprocess.CompletedProcess(argv, 0, "", "")

    fake_toolchain(monkeypatch, FakePlatform, fake_run)
    summary = B.build("colorlight-5a-75b", out_root=tmp_path, seeds=(1, 2, 3), margin_pct=0)
    assert seeds_run == ["2"] and summary["seed"] == 2 and summary["timing_ok"]
    assert summary["margin_ok"] and not summary["margin_goal_ok"]
    assert summary["seed_reason"].startswith("seed 2: every clock beats its target by 0 % or more")


@pytest.mark.parametrize("seed1_late", [False, True])
def test_a_seed_whose_routing_does_not_converge_is_given_up_for_the_next(monkeypatch, tmp_path, capsys,
                                                                         seed1_late):
    """Seed 1's nextpnr, run by Amaranth's build script through the guard's
    wrapper, is stopped by the guard (exit EXIT_NOT_CONVERGED, no config
    written), or (``seed1_late``) converged at pass 305 and wrote its config
    before the guard saw it (given up all the same); seed 2's is stopped too,
    run by the build itself; seed 3 routes and misses: the bitstream is packed
    from seed 3, the only routed one, and the summary says why."""
    ran = []

    class FakePlatform:
        def build(self, top, *, build_dir, **kw):
            work = tmp_path / "amaranth"
            (work / "build_top.sh").write_text(_SCRIPT)
            assert B.os.environ["NEXTPNR_ECP5"] == str(work / "nextpnr-guarded.sh")
            wrapper = (work / "nextpnr-guarded.sh").read_text()
            assert wrapper.startswith("#!/bin/sh\nexec ")
            assert " -m ackfilter.board.pnr_guard -- nextpnr \"$@\"" in wrapper
            if seed1_late:
                (work / "top.tim").write_text(_tim(121.0, passes=305) + "pnr_guard: the router converged "
                                              "only after 305 passes, over the limit of 300; given up\n")
                (work / "top.config").write_text("seed 1")
            else:
                (work / "top.tim").write_text(_stalled())
            raise B.subprocess.CalledProcessError(G.EXIT_NOT_CONVERGED, "build_top.sh")

    def fake_run(argv, *, cwd, **kw):
        assert "timeout" not in kw                    # no wall-clock limit besides the guard's own
        nextpnr = _nextpnr(argv)
        if nextpnr is not None:
            ran.append("guarded " + nextpnr[0])
            seed = nextpnr[nextpnr.index("--seed") + 1]
            if seed == "2":
                (cwd / nextpnr[nextpnr.index("--log") + 1]).write_text(_stalled())
                return B.subprocess.CompletedProcess(argv, G.EXIT_NOT_CONVERGED, "", "")
            (cwd / nextpnr[nextpnr.index("--log") + 1]).write_text(_tim(100.0))
            (cwd / nextpnr[nextpnr.index("--textcfg") + 1]).write_text(f"seed {seed}")
        else:
            ran.append(argv[0])
            config = (cwd / argv[argv.index("--input") + 1]).read_text()
            (cwd / argv[argv.index("--bit") + 1]).write_text(f"bitstream of {config}")
        return B.subprocess.CompletedProcess(argv, 0, "", "")

    fake_toolchain(monkeypatch, FakePlatform, fake_run)
    heard = []
    summary = B.build("colorlight-5a-75b", out_root=tmp_path, seeds=(1, 2, 3), log=heard.append)
    assert B.os.environ["NEXTPNR_ECP5"] == "nextpnr"
    assert ran == ["guarded nextpnr", "guarded nextpnr", "ecppack"]
    assert summary["seed"] == 3 and not summary["timing_ok"]
    assert (tmp_path / "top.bit").read_text() == "bitstream of seed 3"
    gave_up = "routing did not converge in 300 router passes"
    assert G.MAX_ROUTER_ITER == 300
    assert heard[0].startswith(f"place and route, seed 1: {gave_up} (")
    assert heard[0].endswith(f", {305 if seed1_late else 301} router passes)")
    assert heard[1].startswith(f"place and route, seed 2: {gave_up} (")
    assert heard[2].startswith("place and route, seed 3: tx missed by 20.0% (")
    assert [(t["seed"], t["gave_up"], t["router_passes"]) for t in summary["tries"]] == [
        (1, gave_up, 305 if seed1_late else 301), (2, gave_up, 301), (3, None, 120)]
    assert summary["seed_reason"] == (f"seed 3: the best worst margin of the seeds tried (a clock misses its "
                                      f"target) (seed 1: {gave_up}; seed 2: {gave_up})")
    B.print_summary(summary)
    assert f"kept {summary['seed_reason']}" in capsys.readouterr().out


@pytest.mark.parametrize("code, gave_up", [
    (G.EXIT_HANG, f"no result after {G.HANG_S} s (the hang guard)"),
    (G.EXIT_DIVERGED, "the router diverged (from pass 20 on, over 1000 overused wires and 4 x the fewest)"),
    (G.EXIT_STALLED, "the router stalled (over 100 overused wires at pass 40)"),
    (1, None),
])
def test_only_the_guards_exit_statuses_give_a_seed_up(monkeypatch, tmp_path, code, gave_up):
    """The hang guard's exit gives a seed up as a stalled router does; any
    other failure of nextpnr stops the build with the seed's log."""

    class FakePlatform:
        def build(self, top, *, build_dir, **kw):
            (tmp_path / "amaranth" / "build_top.sh").write_text(_SCRIPT)
            (tmp_path / "amaranth" / "top.tim").write_text(_tim(121.0))
            (tmp_path / "amaranth" / "top.config").write_text("seed 1")
            (tmp_path / "amaranth" / "top.bit").write_text("bitstream of seed 1")

    def fake_run(argv, *, cwd, **kw):
        assert _nextpnr(argv) is not None
        return B.subprocess.CompletedProcess(argv, code, "", "")

    fake_toolchain(monkeypatch, FakePlatform, fake_run)
    if gave_up is None:
        with pytest.raises(B.BuildError,
                           match=r"nextpnr failed with seed 2 \(exit 1\); its log is .*top-seed2\.tim"):
            B.build("colorlight-5a-75b", out_root=tmp_path, seeds=(1, 2), log=lambda _: None)
        return
    summary = B.build("colorlight-5a-75b", out_root=tmp_path, seeds=(1, 2), log=lambda _: None)
    assert summary["seed"] == 1 and summary["tries"][1]["gave_up"] == gave_up
    assert summary["tries"][1]["router_passes"] == 0              # it wrote no log
    assert summary["seed_reason"] == ("seed 1, the first tried: the best worst margin of the seeds tried "
                                      "(a clock misses its target)")


def test_a_failed_build_script_is_a_toolchain_failure_not_a_given_up_seed(monkeypatch, tmp_path):
    """Yosys (or nextpnr) failing with a status of its own: no other seed is tried."""

    class FakePlatform:
        def build(self, top, *, build_dir, **kw):
            (tmp_path / "amaranth" / "build_top.sh").write_text(_SCRIPT)
            raise B.subprocess.CalledProcessError(1, "build_top.sh")

    fake_toolchain(monkeypatch, FakePlatform, lambda *a, **kw: pytest.fail("no seed after a failure"))
    with pytest.raises(B.BuildError, match=r"the toolchain failed \(exit 1\); its logs are .*top\.rpt"):
        B.build("colorlight-5a-75b", out_root=tmp_path, seeds=(1, 2), log=lambda _: None)


def test_no_routed_seed_is_an_error_that_says_so(monkeypatch, tmp_path):

    class FakePlatform:
        def build(self, top, *, build_dir, **kw):
            (tmp_path / "amaranth" / "build_top.sh").write_text(_SCRIPT)
            raise B.subprocess.CalledProcessError(G.EXIT_NOT_CONVERGED, "build_top.sh")

    def fake_run(argv, **kw):
        assert _nextpnr(argv) is not None
        return B.subprocess.CompletedProcess(argv, G.EXIT_NOT_CONVERGED, "", "")

    fake_toolchain(monkeypatch, FakePlatform, fake_run)
    with pytest.raises(B.BuildError, match=r"no placement seed of 1, 2 routed \(seed 1: routing did not "
                                           r"converge in 300 router passes; seed 2: routing did not converge "
                                           r"in 300 router passes: the design is too congested"):
        B.build("colorlight-5a-75b", out_root=tmp_path, seeds=(1, 2), log=lambda _: None)


def test_main_tries_the_default_seeds_unless_one_is_given(monkeypatch, tmp_path):
    seen = {}

    def fake_build(board, *, out_root, **kw):
        seen.update(kw)
        return _summary(out_root, True)

    monkeypatch.setattr(B, "build", fake_build)
    assert B.main(["--board", "colorlight-5a-75b", "--out", str(tmp_path)]) == 0
    assert seen["seeds"] == B.PNR_SEEDS and len(B.PNR_SEEDS) > 1


def test_the_board_top_with_the_control_plane_names_its_uart_and_flash_pins():
    """The SoC's pins as the board has them: UART on J19 (TX P11, the LED's pad;
    RX M13, the button's), the configuration flash's CS# N8, DI T8 (driven),
    DO T7 (read), its clock through USRMCLK; SERV's Verilog goes with the design."""
    import re
    from ackfilter.board.top import BoardTop, Colorlight5A75BR70Platform
    from ackfilter.soc.cpu import SERV_FILES
    plan = Colorlight5A75BR70Platform().prepare(BoardTop(firmware=b"\x13\x00\x00\x00"), name="top")
    lpf = plan.files["top.lpf"]
    sites = dict(re.findall(r'LOCATE COMP "([^"]+)" SITE "([^"]+)"', lpf))
    assert {sites[k] for k in sites if k.startswith("uart_0__tx")} == {"P11"}
    assert {sites[k] for k in sites if k.startswith("uart_0__rx")} == {"M13"}
    assert {sites[k] for k in sites if k.startswith("config_flash_0__cs")} == {"N8"}
    assert {sites[k] for k in sites if k.startswith("config_flash_0__di")} == {"T8"}
    assert {sites[k] for k in sites if k.startswith("config_flash_0__do")} == {"T7"}
    assert not any(k.startswith("led_0") for k in sites)          # P11 is the UART's now
    il = plan.files["top.il"]
    assert "USRMCLK" in il and "serv_rf_top" in il
    assert all(f"{name}.v" in plan.files for name in SERV_FILES)


def test_the_board_top_without_firmware_keeps_the_led():
    import re
    from ackfilter.board.top import BoardTop, Colorlight5A75BR70Platform
    plan = Colorlight5A75BR70Platform().prepare(BoardTop(), name="top")
    sites = dict(re.findall(r'LOCATE COMP "([^"]+)" SITE "([^"]+)"', plan.files["top.lpf"]))
    assert {sites[k] for k in sites if k.startswith("led_0")} == {"P11"}
    assert not any(k.startswith("uart_0") for k in sites)


def test_a_bitstream_reaching_the_saved_parameters_is_refused(tmp_path, monkeypatch, capsys):
    """Written from the flash's start, the bitstream must end below the two
    parameter sectors; the build and `--flash --spi` both check."""
    from ackfilter.soc import memmap as M
    fits, too_big = tmp_path / "fits.bit", tmp_path / "big.bit"
    fits.write_bytes(b"\0" * M.FLASH_PARAMS_OFFSET)
    too_big.write_bytes(b"\0" * (M.FLASH_PARAMS_OFFSET + 1))
    assert B.check_flash_room(fits) == M.FLASH_PARAMS_OFFSET
    with pytest.raises(B.BuildError, match="would overwrite the saved parameters at 0x1fe000"):
        B.check_flash_room(too_big)
    monkeypatch.setenv("OPENFPGALOADER", "/nonexistent/openFPGALoader")
    assert B.flash(too_big, spi=True) == 2
    assert "would overwrite the saved parameters" in capsys.readouterr().err
