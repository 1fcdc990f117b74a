"""The board build's timing gate (``make bitstream``, and so ``.ci/run``):
reading nextpnr's log, naming clocks by domain, failing on a missed domain.
The toolchain itself is not run here (a place and route takes ~12 minutes);
``build`` is replaced by a function returning a summary as the real one does."""

import pytest

from ackfilter.board import build as B
from ackfilter.reports.nextpnr import parse_nextpnr_log

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


def _summary(out, timing_ok):
    return {"board": "colorlight-5a-75b", "swap_ports": False, "bitstream": str(out / "top.bit"),
            "build_seconds": 660.0,
            "clocks": [dict(domain="tx", net="$glbnet$lan_tx_clk", fmax_mhz=149.28 if timing_ok else 121.0,
                            target_mhz=125.0, margin_pct=19.4 if timing_ok else -3.2, ok=timing_ok)],
            "utilization": {"TRELLIS_COMB": {"used": 14479, "available": 24288}},
            "timing_ok": timing_ok}


@pytest.mark.parametrize("timing_ok, code", [(True, 0), (False, 1)])
def test_main_exits_1_on_missed_timing_and_names_the_bitstream(monkeypatch, tmp_path, capsys,
                                                                timing_ok, code):
    seen = {}

    def fake_build(board, *, out_root, **kw):
        seen.update(board=board, out_root=out_root, **kw)
        return _summary(out_root, timing_ok)

    monkeypatch.setattr(B, "build", fake_build)
    assert B.main(["--board", "colorlight-5a-75b", "--out", str(tmp_path), "--seed", "3"]) == code
    out, err = capsys.readouterr()
    assert seen["out_root"] == tmp_path and seen["seed"] == 3 and seen["router"] == "router2"
    assert f"bitstream: {tmp_path / 'top.bit'} (660 s)" in out
    assert ("MISSED" in out) is (not timing_ok)
    assert ("timing not met" in err) is (not timing_ok)


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
