"""ackfilter-ctl without a device: rates, the tuning rules against the
register map's ranges and the tc-cake presets, and the errors and exit
statuses a user sees for bad arguments or no device. (tests/test_ctl_contract.py
drives the tool against fake devices.)"""

import json
import re
import sys

import pytest

from ackfilter import params as P
from ackfilter.model.cake import cake_accounting
from ackfilter.model.red import registers_for_rate
from ackfilter.paths import REPO_ROOT
from ackfilter.regmap import TUNE_LINKS

sys.path.insert(0, str(REPO_ROOT / "host-tools"))     # the tool as shipped, not installed
from ackfilter_ctl import cli, regmap as ctl_regmap, tune as T, units as ctl_units  # noqa: E402

REGMAP = ctl_regmap.load()


@pytest.mark.parametrize("text, bps", [("64kbit", 64_000), ("1.5mbit", 1_500_000), ("20Mbit", 20_000_000),
                                       ("56000", 56_000), ("1gbit", 10**9), ("28.8kbit", 28_800),
                                       ("1mbps", 8_000_000)])
def test_rates_parse_as_tc_reads_them(text, bps):
    assert ctl_units.parse_rate(text) == bps


@pytest.mark.parametrize("text", ["fast", "", "-5kbit", "kbit", "1M", "64k"])
def test_bad_rates_are_refused_naming_the_forms(text):
    with pytest.raises(ValueError, match=f"invalid rate {re.escape(repr(text))}.*[km]bit"):
        ctl_units.parse_rate(text)


def test_the_cycles_per_byte_rule_is_the_gateways():
    for rate in (28_800, 64_000, 1e6, 100e6):
        assert T.cpb_for_rate(rate, P.F_SYS_HZ) == P.cpb_q16_for_rate(rate)
        assert T.rate_from_cpb(P.cpb_q16_for_rate(rate), P.F_SYS_HZ) == pytest.approx(rate, rel=1e-6)


@pytest.mark.parametrize("link", sorted(TUNE_LINKS))
@pytest.mark.parametrize("up, down", [(28_800, 1.5e6), (64e3, 10e6), (1e6, 16e6), (40e6, 250e6)])
def test_tune_gives_in_range_values_and_the_links_accounting(link, up, down):
    regs, why = T.tune(REGMAP, up_bps=up, down_bps=down, rtt_ms=50, link=link)
    for name, value in regs.items():
        p = P.param(name)
        assert p.minimum <= value <= p.maximum, (name, value)
    assert {k: regs[k] for k in cake_accounting(TUNE_LINKS[link][0]).registers()} == \
        cake_accounting(TUNE_LINKS[link][0]).registers()
    shaped = T.rate_from_cpb(regs["shaper_cpb_q16"], P.F_SYS_HZ)
    assert shaped == pytest.approx(0.95 * up, rel=1e-6)
    # RED off unless asked for (the flow queues; docs/experiments.md, "Choosing the default")
    assert regs["red_enable"] == 0 and not any(k.startswith("red_") and k != "red_enable" for k in regs)
    red, why_red = T.tune(REGMAP, up_bps=up, down_bps=down, rtt_ms=50, link=link, red=True)
    assert red["red_enable"] == 1
    assert red["red_max_bytes"] == 3 * red["red_min_bytes"] >= 3 * 2 * 1500
    assert red["red_idle_shift"] == registers_for_rate(0.95 * up)["red_idle_shift"]
    assert {k: v for k, v in red.items() if not k.startswith("red_")} == \
        {k: v for k, v in regs.items() if not k.startswith("red_")}
    assert any(w.startswith("RED off") for w in why) and any(w.startswith("RED on") for w in why_red)
    # chunks where a full frame takes more than 10 ms on the uplink, not where it is short
    frame_ms = 1000 * 8 * 1514 / (0.95 * up)
    assert regs["chunk_bytes"] == (512 if frame_ms > 10 else 0)
    assert regs["chunk_bytes"] % 16 == 0
    assert len(why) >= 5 and all(w.strip() for w in why)


def test_tune_red_at_modem_rates_matches_the_experiments_red_settings():
    regs, _ = T.tune(REGMAP, up_bps=64e3, down_bps=10e6, rtt_ms=50, link="ethernet", red=True)
    want = registers_for_rate(0.95 * 64e3)
    assert {k: regs[k] for k in want} == want


def test_tune_refuses_rates_the_shaper_cannot_make_and_unknown_links():
    with pytest.raises(T.TuneError, match="cannot be shaped"):
        T.tune(REGMAP, up_bps=1, down_bps=1e6, rtt_ms=50, link="ethernet")
    with pytest.raises(T.TuneError, match="unknown link type 'isdn'; one of: ethernet"):
        T.tune(REGMAP, up_bps=64e3, down_bps=1e6, rtt_ms=50, link="isdn")
    with pytest.raises(T.TuneError, match="round-trip"):
        T.tune(REGMAP, up_bps=64e3, down_bps=1e6, rtt_ms=0, link="ethernet")


def run(capsys, *argv):
    rc = cli.main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_tune_prints_reasons_and_values_and_json(capsys):
    rc, out, err = run(capsys, "tune", "--up", "64kbit", "--down", "10mbit", "--link", "adsl-pppoe")
    assert rc == 0 and "ATM cells" in out and "shaper_cpb_q16" in out and "not applied" in out
    rc, out, err = run(capsys, "--json", "tune", "--up", "64kbit", "--down", "10mbit")
    doc = json.loads(out)
    assert rc == 0 and doc["applied"] is False and doc["registers"]["ack_mode"] == 2
    assert doc["registers"]["red_enable"] == 0
    rc, out, err = run(capsys, "--json", "tune", "--up", "64kbit", "--down", "10mbit", "--red")
    assert rc == 0 and json.loads(out)["registers"]["red_enable"] == 1
    # The round-trip time as a person writes it: the same settings each way.
    for same in (("40", "40ms", "0.04s"), ("400", "400ms", "0.4s")):
        runs = [json.loads(run(capsys, "--json", "tune", "--up", "1mbit", "--down", "16mbit",
                               "--rtt", rtt)[1])
                for rtt in same]
        assert runs[0] == runs[1] == runs[2]
    rc, out, err = run(capsys, "tune", "--up", "1mbit", "--down", "8mbit", "--rtt", "soon")
    assert rc == 2 and "not a time: 'soon'" in err


@pytest.mark.parametrize("argv, code, text", [
    (["status"], 2, "give --port DEVICE"),
    (["get", "ack_mode"], 2, "give --port DEVICE"),
    (["tune", "--up", "64kbit", "--down", "1mbit", "--apply"], 2, "give --port DEVICE"),
    (["tune", "--up", "fast", "--down", "1mbit"], 2, "invalid rate 'fast'"),
    (["--connect", "localhost", "status"], 1, "HOST:PORT"),
    (["--connect", "127.0.0.1:1", "status"], 1, "cannot connect to 127.0.0.1:1"),
    (["--port", "/dev/does-not-exist", "status"], 1, "cannot open /dev/does-not-exist"),
    (["check", "red_max_p", "70000"], 2, "allowed 0 .. 65536"),
    (["check", "no_such", "1"], 2, "no parameter named 'no_such'"),
])
def test_errors_name_the_problem_and_exit_with_its_status(capsys, argv, code, text):
    rc, out, err = run(capsys, *argv)
    assert rc == code and text in err, (rc, err)


def test_firmware_parameters_are_known_and_checked(capsys):
    rc, out, err = run(capsys, "check", "ared_interval_ms", "50")
    assert rc == 2 and "allowed 100 .. 10000 ms" in err
    rc, out, err = run(capsys, "registers")
    assert all(f.name in out for f in P.FIRMWARE_PARAMS)


class ScriptedLink:
    """A link whose far end answers each line written with the next scripted bytes."""
    name = "scripted"

    def __init__(self, answers):
        self.answers = list(answers)
        self.pending = b""
        self.written = []

    def write(self, data):
        self.written.append(data)
        for _ in range(data.count(b"\n")):
            if self.answers:
                self.pending += self.answers.pop(0)

    def read(self, timeout):
        data, self.pending = self.pending[:3], self.pending[3:]     # a few bytes at a time
        return data

    def close(self):
        pass


def test_the_device_reads_replies_whatever_is_left_of_a_previous_prompt():
    from ackfilter_ctl.device import Device, DeviceError
    version = (b"firmware 0.1.0\r\nregmap 1\r\ngateware_id 0x41434b46\r\nsoc_id 0x534f4331\r\n"
               b"clock_hz 62500000\r\nok\r\n> ")
    link = ScriptedLink([b"ok\r\n> ", version, b"ack_mode 2\r\nok\r\n> ",
                         b"error: red_max_p must be 0..65536 1/65536, not 70000\r\n> "])
    link.pending = b" > "      # the previous connection took the prompt's '>' and left its space
    dev = Device(link, timeout=1.0)
    dev.open()
    assert dev.version["regmap"] == "1"
    assert dev.get("ack_mode") == 2
    with pytest.raises(DeviceError, match="must be 0..65536"):
        dev.set("red_max_p", 70000)
    assert link.written[:2] == [b"\x15", b"echo off\n"]      # Ctrl-U: drop a half-typed line


def test_a_device_that_does_not_answer_times_out_naming_the_command():
    from ackfilter_ctl.device import Device, DeviceTimeout
    dev = Device(ScriptedLink([]), timeout=0.2)
    with pytest.raises(DeviceTimeout, match="no answer to 'echo off'"):
        dev.open()


def test_a_firmware_of_another_register_map_is_refused():
    from ackfilter_ctl.device import Device, VersionMismatch
    link = ScriptedLink([b"ok\r\n> ", b"firmware 9.0\r\nregmap 2\r\nok\r\n> "])
    with pytest.raises(VersionMismatch, match="speaks register map 2"):
        Device(link, timeout=1.0).open()


def test_status_shows_each_ports_speed_and_the_phys_from_the_board_words(capsys):
    """The firmware's `stats` gives the board's words raw (info.board_*);
    the tool decodes them with the register map's field tables. Hand-made
    words: LAN at 1000 (speed 2, RX clock seen: 0b110), modem at 100 after one
    change (0b101 + 1 << 8); PHY 0 present, link, 1000, full duplex, 3 polls
    (1 + 2 + 2 << 2 + 1 << 4 + 3 << 8), PHY 1 absent."""
    from types import SimpleNamespace
    stats = {"info.board_lan_link": 0b110, "info.board_modem_link": 0b101 + (1 << 8),
             "info.board_phy0_status": 1 + 2 + (2 << 2) + (1 << 4) + (3 << 8),
             "info.board_phy0_id": 0x001CC916, "info.board_phy1_status": 0, "info.board_phy1_id": 0xFFFFFFFF}
    dev = SimpleNamespace(get_all=lambda: {p.name: p.default for p in P.PARAMS}, stats=lambda: stats,
                          settings=lambda: {"source": "defaults", "reason": "no saved parameters",
                                            "saved": False},
                          version={"firmware": "0.1.0", "regmap": "1", "gateware_id": "0x41434b46"},
                          link=SimpleNamespace(name="fake"), warnings=[])
    regmap = ctl_regmap.load()
    ports = cli._board(regmap, stats)
    assert ports["ports"]["lan"]["speed"] == 2 and ports["ports"]["modem"] == {
        "speed": 1, "rxc_ok": 1, "inband_link": 0, "inband_speed": 0, "inband_full_duplex": 0, "speed_changes": 1}
    assert ports["phys"][0]["polls"] == 3 and ports["phys"][1]["present"] == 0
    assert cli._status(SimpleNamespace(json=False), regmap, dev) == 0
    out = capsys.readouterr().out
    assert "ports        lan 1000 Mb/s, modem 100 Mb/s (the PHYs' RX clocks)" in out
    assert "PHYs (MDIO)  0: id 0x001cc916, link 1000 Mb/s full duplex; 1: none" in out
    assert "settings     defaults (no saved parameters), not saved (ackfilter-ctl save)\n" in out


@pytest.mark.parametrize("queues, hosts, says", [
    (32, 64, "upload data  32 per-flow queues, sparse flows first, hosts first (64 buckets)\n"),
    (32, 0, "upload data  32 per-flow queues, sparse flows first\n"),
    (0, 0, "upload data  one FIFO\n")])
def test_status_says_how_the_core_queues_upload_data(capsys, queues, hosts, says):
    """The information words data_queues and host_buckets: the board's 32
    flow queues shared by host first, by flow only, or 0 for a core built
    with one data FIFO; a firmware without the words says nothing."""
    from types import SimpleNamespace
    for stats in ({"info.data_queues": queues, "info.host_buckets": hosts}, {}):
        dev = SimpleNamespace(get_all=lambda: {p.name: p.default for p in P.PARAMS}, stats=lambda: stats,
                              settings=lambda: {"source": "kept", "reason": "a restart", "saved": True},
                              version={"firmware": "0.1.0", "regmap": "1", "gateware_id": "0x41434b46"},
                              link=SimpleNamespace(name="fake"), warnings=[])
        assert cli._status(SimpleNamespace(json=False), ctl_regmap.load(), dev) == 0
        out = capsys.readouterr().out
        assert (says in out) is bool(stats) and ("upload data" in out) is bool(stats)
