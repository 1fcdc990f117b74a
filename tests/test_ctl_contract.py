"""ackfilter-ctl's contract with its user, against fake devices.

Every device command against firmwares that answer garbage, nothing, half a
reply, another parameter or only ``ok``: the exit status host-tools/README.md
documents and exactly one line on stderr, never a traceback. Then the
session's opening (Ctrl-U, an exclusive serial port), the overrun retry,
read-back checks, Ctrl-C, the refusals of ``tune`` and ``set``, and the
rate grammar ackfilter-ctl shares with ``ackfilter replay``.
"""

import argparse
import itertools
import json
import math
import sys
import time

import pytest

from ackfilter import cli as hdl_cli
from ackfilter import params as P
from ackfilter import units as hdl_units
from ackfilter.paths import REPO_ROOT
from ackfilter.regmap import TUNE_LINKS

sys.path.insert(0, str(REPO_ROOT / "host-tools"))     # the tool as shipped, not installed
from ackfilter_ctl import cli, device, regmap as ctl_regmap, tune as T, units as ctl_units  # noqa: E402

REGMAP = ctl_regmap.load()
VERSION = (f"firmware 0.1.0\r\nregmap {REGMAP.raw['regmap_version']}\r\ngateware_id 0x41434b46\r\n"
           "soc_id 0x534f4331\r\nclock_hz 50000000\r\n")
GARBAGE = "\x00\ufffd#%& garbage!"


class Firmware:
    """What a board of this register map answers, command by command
    (firmware/README.md, "Commands"): ``answer(line)`` gives the reply lines
    and the status line."""

    def __init__(self):
        self.values = {p["name"]: p["default"] for p in REGMAP.all_params}

    def answer(self, line):
        words = line.split()
        if words == ["get"]:
            return [f"{n} {v}" for n, v in self.values.items()] + ["ok"]
        if words[0] == "get":
            return [f"{words[1]} {self.values[words[1]]}", "ok"]
        if words[0] == "set":
            self.values[words[1]] = int(words[2], 0)
            return [f"{words[1]} {self.values[words[1]]}", "ok"]
        if words == ["stats"]:
            return ([f"{c['name']} 0" for c in REGMAP.counters] + [f"info.{i['name']} 0" for i in REGMAP.info]
                    + ["uptime_ms 1000", "ared_adjustments 0", "watchdog_restarts 0", "ok"])
        if words == ["settings"]:
            return ["source flash", "record 3", "sector 0", "record_regmap 1", "saved yes", "ok"]
        if words == ["save"]:
            return [f"saved {len(self.values)} parameters as flash record 4", "ok"]
        if words == ["load"]:
            return [f"loaded {len(self.values)} parameters from flash record 4", "ok"]
        if words in (["defaults"], ["reset-counters"]):
            return ["ok"]
        return [f"error: no command '{words[0]}'"]


def wire(lines):
    return "".join(f"{line}\r\n" for line in lines).encode() + b"> "


def _half(fw, line):
    """The first half of the reply's bytes, then silence."""
    reply = wire(fw.answer(line))
    return reply[:len(reply) // 2]


def _cut_line(fw, line):
    """The first half of the reply's lines, then half a line, then ``ok``."""
    out = fw.answer(line)[:-1]
    n = len(out) // 2
    return wire(out[:n] + [out[n][:5], "ok"] if out else ["ok"])


def _wrong_parameter(fw, line):
    """The reply with its first line naming another parameter (or, for a
    command whose reply names none, with a parameter's line in front)."""
    out = fw.answer(line)
    if line.split()[0] not in ("get", "set", "stats"):
        return wire(["ack_mode 2"] + out)
    name, value = out[0].split()
    return wire([f"{'red_max_p' if name != 'red_max_p' else 'ack_mode'} {value}"] + out[1:])


#: The ways a device answers a command badly: ``(firmware, line) -> bytes``
#: to send back, or None for silence.
BAD_REPLIES = {
    "garbage": lambda fw, line: wire([GARBAGE, "ok"]),
    "noise": lambda fw, line: GARBAGE.encode(),                      # no line, no status
    "nothing": lambda fw, line: None,
    "half": _half,
    "cut-line": _cut_line,
    "wrong-parameter": _wrong_parameter,
    "only-ok": lambda fw, line: wire(["ok"]),
}


class FakeBoard:
    """The link to a fake board: it keeps the line being typed as the
    firmware does (Ctrl-U discards it), answers ``echo off`` and ``version``
    as a board would, and every other command line with ``reply(firmware,
    line)``. ``reply`` may raise (KeyboardInterrupt: the user's Ctrl-C)."""
    name = "fake"

    def __init__(self, reply=lambda fw, line: wire(fw.answer(line))):
        self.reply = reply
        self.firmware = Firmware()
        self.written = b""
        self.commands = []
        self.typing = b""
        self.pending = b""

    def write(self, data):
        self.written += data
        for byte in data:
            if byte == 0x15:
                self.typing = b""
            elif byte != 0x0A:
                self.typing += bytes([byte])
            else:
                line, self.typing = self.typing.decode(), b""
                self.commands.append(line)
                if line == "echo off":
                    answer = b"echo off\r\nok\r\n> "
                elif line == "version":
                    answer = VERSION.encode() + b"ok\r\n> "
                else:
                    answer = self.reply(self.firmware, line)
                self.pending += answer or b""

    def read(self, timeout):
        if not self.pending:
            time.sleep(min(timeout, 0.01))
            return b""
        data, self.pending = self.pending[:7], self.pending[7:]     # a few bytes at a time
        return data

    def close(self):
        pass


@pytest.fixture
def board(monkeypatch):
    """A fake board behind ``--connect fake:1``; set ``board.reply`` to make it misbehave."""
    fake = FakeBoard()
    monkeypatch.setattr(cli, "open_link", lambda **kw: fake)
    monkeypatch.setattr(device, "FLASH_TIMEOUT_S", 0.2)
    return fake


def ctl(capsys, *argv):
    rc = cli.main(["--connect", "fake:1", "--timeout", "0.2", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def one_error_line(err):
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ackfilter-ctl: error: "), err
    return lines[0]


DEVICE_COMMANDS = {
    "status": ["status"],
    "get": ["get"],
    "get NAME": ["get", "ack_mode"],
    "set": ["set", "ack_mode", "aggressive"],
    "save": ["save"],
    "load": ["load"],
    "defaults": ["defaults"],
    "reset-counters": ["reset-counters"],
    "watch": ["watch", "--count", "1", "--interval", "0.01"],
    "plot": ["plot", "--duration", "0.02", "--interval", "0.01"],
    "tune --apply": ["tune", "--up", "1mbit", "--down", "16mbit", "--apply"],
}
#: A reply with no output line is the right one for these two.
SILENT_COMMANDS = {"defaults", "reset-counters"}


@pytest.mark.parametrize("how", sorted(BAD_REPLIES))
@pytest.mark.parametrize("command", sorted(DEVICE_COMMANDS))
def test_every_command_against_a_bad_reply_exits_1_with_one_line(board, capsys, tmp_path, command, how):
    board.reply = BAD_REPLIES[how]
    argv = DEVICE_COMMANDS[command] + (["--out", str(tmp_path / "p.png")] if command == "plot" else [])
    rc, out, err = ctl(capsys, *argv)
    assert "Traceback" not in out + err
    if command in SILENT_COMMANDS and how in ("only-ok", "cut-line"):
        assert (rc, err) == (0, "")               # exactly the reply these commands have
        return
    assert rc == 1, (rc, out, err)
    line = one_error_line(err)
    asked = board.commands[-1]
    assert f"'{asked}'" in line                    # it names the command
    if how == "garbage":
        assert repr(GARBAGE) in line              # and shows the line at fault
    if how == "wrong-parameter":                   # the line naming another, or the name missing
        assert any(name in line for name in ("red_max_p", "ack_mode", "frames_in")), line


def test_status_prints_nothing_when_stats_lacks_a_counter(board, capsys):
    def reply(fw, line):
        out = fw.answer(line)
        return wire([x for x in out if not x.startswith("frames_in ")]) if line == "stats" else wire(out)
    board.reply = reply
    rc, out, err = ctl(capsys, "status")
    assert rc == 1 and out == ""
    assert "unexpected reply to 'stats'" in one_error_line(err) and "none for frames_in" in err


def test_a_good_board_gives_every_command_exit_0_and_a_quiet_stderr(board, capsys, tmp_path):
    for command, argv in DEVICE_COMMANDS.items():
        argv = argv + (["--out", str(tmp_path / "p.png")] if command == "plot" else [])
        rc, out, err = ctl(capsys, *argv)
        progress = [line for line in err.splitlines() if command == "plot" and line.startswith("plot: ")]
        assert (rc, err.splitlines()) == (0, progress), (command, err)


# --- the session's opening ------------------------------------------------------------

def test_opening_sends_ctrl_u_not_a_bare_newline(board, capsys):
    board.typing = b"set red_enab"                  # a line half-typed on the board's terminal
    rc, out, err = ctl(capsys, "get", "ack_mode")
    assert rc == 0 and out == "ack_mode 2\n"
    assert board.written.startswith(b"\x15echo off\n")
    assert board.commands == ["echo off", "version", "get ack_mode"]    # nothing else ran
    assert b"\n\n" not in board.written and not board.written.startswith(b"\n")


def test_the_serial_port_is_opened_exclusively(monkeypatch, capsys):
    import serial
    fake = FakeBoard()
    opened = {}

    class Port:
        def __init__(self, port, baud, **kwargs):
            opened.update(kwargs, port=port, baud=baud)

        def write(self, data):
            fake.write(data)

        def read(self, n):
            data, fake.pending = fake.pending[:n], fake.pending[n:]
            return data

        def flush(self):
            pass

        def close(self):
            pass

    monkeypatch.setattr(serial, "Serial", Port)
    rc = cli.main(["--port", "/dev/ttyFAKE", "--timeout", "0.2", "get", "ack_mode"])
    assert rc == 0 and capsys.readouterr().out == "ack_mode 2\n"
    assert opened["exclusive"] is True and opened["port"] == "/dev/ttyFAKE"


def test_a_port_another_program_holds_is_a_link_failure(monkeypatch, capsys):
    import serial

    def busy(port, baud, **kwargs):
        raise serial.SerialException(11, f"Could not exclusively lock port {port}")
    monkeypatch.setattr(serial, "Serial", busy)
    rc = cli.main(["--port", "/dev/ttyFAKE", "status"])
    assert rc == 1 and "cannot open /dev/ttyFAKE" in one_error_line(capsys.readouterr().err)


# --- replies: overrun, names, read-back ----------------------------------------------

def overrun_first(times):
    """A reply that loses the first ``times`` command lines to an overrun."""
    left = [times]

    def reply(fw, line):
        if left[0]:
            left[0] -= 1
            return wire([f"error: {device.OVERRUN}"])
        return wire(fw.answer(line))
    return reply


def test_a_line_lost_to_an_overrun_is_sent_once_more(board, capsys):
    board.reply = overrun_first(1)
    rc, out, err = ctl(capsys, "get", "ack_mode")
    assert (rc, out, err) == (0, "ack_mode 2\n", "")
    assert board.commands[-2:] == ["get ack_mode", "get ack_mode"]


def test_a_second_overrun_is_a_device_failure(board, capsys):
    board.reply = overrun_first(2)
    rc, out, err = ctl(capsys, "set", "red_enable", "1")
    assert rc == 1 and board.commands[-2:] == ["set red_enable 1"] * 2
    assert "'set red_enable 1' failed twice: uart overrun, line discarded" in one_error_line(err)


def test_get_refuses_a_reply_naming_another_parameter(board, capsys):
    board.reply = lambda fw, line: wire(["data_share 128", "ok"])
    rc, out, err = ctl(capsys, "get", "ack_mode")
    assert rc == 1 and out == ""
    assert "unexpected reply to 'get ack_mode': 'data_share 128' (expected one line 'ack_mode NUMBER')" \
        in one_error_line(err)


def test_set_refuses_a_reply_naming_another_parameter(board, capsys):
    board.reply = lambda fw, line: wire(["data_share 1", "ok"])
    rc, out, err = ctl(capsys, "set", "ack_mode", "1")
    assert rc == 1 and "unexpected reply to 'set ack_mode 1': 'data_share 1'" in one_error_line(err)


def test_set_checks_the_value_read_back(board, capsys):
    board.reply = lambda fw, line: wire(["ack_mode 2", "ok"])
    rc, out, err = ctl(capsys, "set", "ack_mode", "conservative")
    assert rc == 1 and "the device set ack_mode to 1, read back 2" in one_error_line(err)


def test_tune_apply_checks_every_value_read_back_and_says_what_it_wrote(board, capsys):
    def reply(fw, line):
        out = fw.answer(line)
        return wire(["chunk_bytes 0", "ok"]) if line.startswith("set chunk_bytes") else wire(out)
    board.reply = reply
    rc, out, err = ctl(capsys, "tune", "--up", "1mbit", "--down", "16mbit", "--apply")
    line = one_error_line(err)
    assert rc == 1 and "the device set chunk_bytes to 512, read back 0" in line
    regs, _ = T.tune(REGMAP, up_bps=10**6, down_bps=16 * 10**6, rtt_ms=50, link="ethernet")
    before = list(regs)[:list(regs).index("chunk_bytes")]
    assert f"{len(before)} parameters had been written (not saved): " \
           f"{', '.join(f'{n} {regs[n]}' for n in before)}" in line


def test_set_refuses_a_chunk_size_the_segmenter_would_ignore(board, capsys):
    rc, out, err = ctl(capsys, "set", "chunk_bytes", "8")
    assert rc == 2 and board.written == b""
    assert one_error_line(err) == ("ackfilter-ctl: error: chunk_bytes = 8 is not a multiple of 16 (the "
                                   "hardware ignores the rest, so it would act as 0): allowed 0 .. "
                                   "1456 bytes in steps of 16")


# --- Ctrl-C -------------------------------------------------------------------------

def interrupt_at(command_number):
    """A reply that raises KeyboardInterrupt at the n-th command after the session's opening."""
    seen = itertools.count(1)

    def reply(fw, line):
        if next(seen) == command_number:
            raise KeyboardInterrupt
        return wire(fw.answer(line))
    return reply


def test_ctrl_c_in_tune_apply_exits_130_saying_what_was_written(board, capsys):
    board.reply = interrupt_at(3)
    rc, out, err = ctl(capsys, "tune", "--up", "1mbit", "--down", "16mbit", "--apply")
    regs, _ = T.tune(REGMAP, up_bps=10**6, down_bps=16 * 10**6, rtt_ms=50, link="ethernet")
    first, second = list(regs)[:2]
    assert rc == 130 and "Traceback" not in err
    assert err == (f"ackfilter-ctl: interrupted (Ctrl-C); 2 parameters had been written (not saved): "
                   f"{first} {regs[first]}, {second} {regs[second]}\n")


@pytest.mark.parametrize("argv", [["watch", "--interval", "0.01"], ["get"], ["save"]])
def test_ctrl_c_anywhere_exits_130_with_one_line(board, capsys, argv):
    board.reply = interrupt_at(3 if argv[0] == "watch" else 1)
    rc, out, err = ctl(capsys, *argv)
    assert rc == 130 and err == "ackfilter-ctl: interrupted (Ctrl-C)\n"


# --- arguments ------------------------------------------------------------------------

@pytest.mark.parametrize("argv, says", [
    (["watch", "--interval", "-1"], "argument --interval: must be more than 0 seconds, not '-1'"),
    (["watch", "--interval", "0"], "must be more than 0 seconds"),
    (["watch", "--count", "0"], "argument --count: must be 1 or more"),
    (["plot", "--duration", "0"], "argument --duration: must be more than 0 seconds"),
    (["plot", "--interval", "nan"], "must be more than 0 seconds"),
    (["--timeout", "0", "status"], "argument --timeout: must be more than 0 seconds"),
    (["set", "ack_mode"], "set takes NAME VALUE pairs"),
    (["set", "chunk_bytes", "8"], "chunk_bytes = 8 is not a multiple of 16"),
    (["get", "ack_mod"], "no parameter named ack_mod"),
    (["plot", "--counters", "frames_inn"], "no counter frames_inn"),
    (["tune", "--up", "1gbit", "--down", "1gbit", "--rtt", "100", "--red", "--apply"],
     "more than red_max_bytes holds"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
])
def test_bad_arguments_exit_2_with_one_line_before_any_device_is_opened(board, capsys, argv, says):
    rc = cli.main(argv if argv[0].startswith("--") else ["--connect", "fake:1", *argv])
    err = capsys.readouterr().err
    assert rc == 2 and says in one_error_line(err)
    assert board.written == b""


@pytest.mark.parametrize("argv, says", [
    (["--up", "1gbit", "--down", "1gbit", "--rtt", "100", "--red"], "more than red_max_bytes holds"),
    (["--up", "2gbit", "--down", "10gbit"], "faster than the board's ports"),
    (["--up", "5kbit", "--down", "1mbit"], "cannot be shaped"),
    (["--up", "0", "--down", "1mbit"], "the uplink rate must be a number of bit/s above 0"),
    (["--up", "1mbit", "--down", "0kbit"], "the downlink rate must be a number of bit/s above 0"),
    (["--up", "1M", "--down", "16mbit"], "invalid rate '1M': tc has no unit 'm': write 1mbit"),
    (["--up", "1mbit", "--down", "16mbit", "--rtt", "soon"], "not a time: 'soon'"),
])
def test_tune_refuses_what_it_cannot_set_with_the_reason(capsys, argv, says):
    rc = cli.main(["tune", *argv])
    assert rc == 2 and says in one_error_line(capsys.readouterr().err)


RATES = [1, 6000, 6426, 28_800, 64_000, 10**6, 16 * 10**6, 10**8, 999_999_999, 10**9, 10**9 + 1, 10**10,
         0.5, 0, -1, math.inf, math.nan]


@pytest.mark.parametrize("link", sorted(TUNE_LINKS))
@pytest.mark.parametrize("red", [False, True])
def test_tune_either_gives_in_range_settings_or_says_why_not(link, red):
    """A grid of rates (the shaper's ends, the port's, a downlink slower than
    the uplink, nonsense) and round trips: only ``TuneError`` ever escapes."""
    for up, down, rtt in itertools.product(RATES, RATES, [0.001, 1, 50, 100, 1000, 9999, 10_000, math.nan]):
        try:
            regs, why = T.tune(REGMAP, up_bps=up, down_bps=down, rtt_ms=rtt, link=link, red=red)
        except T.TuneError:
            continue
        for name, value in regs.items():
            REGMAP.check_value(name, value)
        assert all(w.strip() for w in why)


# --- one rate grammar -----------------------------------------------------------------

AGREED = ["256000", "64kbit", "64Kbit", "1.5mbit", "20mbit", " 64kbit ", "1 mbit", "1gbit", "1mbps",
          "64kibit", "2mibit", "1e6", ".5mbit", "12.5kbit", "1kbps", "12.5kbps"]
REFUSED = ["1M", "64k", "1G", "1Mbit/s", "fast", "", "-1mbit", "1,5mbit", "10kb"]


@pytest.mark.parametrize("text", AGREED)
def test_both_tools_read_a_rate_the_same(text):
    bps = hdl_units.parse_rate(text)
    assert ctl_units.parse_rate(text) == bps
    assert hdl_cli._rate(text) == cli._rate(text) == bps          # the two command lines' readers


@pytest.mark.parametrize("text", REFUSED)
def test_both_tools_refuse_the_same_rates_with_the_same_words(text):
    for reader in (hdl_cli._rate, cli._rate):
        with pytest.raises(argparse.ArgumentTypeError) as info:
            reader(text)
        message = str(info.value)
        assert f"invalid rate {text!r}" in message
        if text in ("1M", "64k", "1G"):            # a prefix alone: say what tc writes
            assert f"write {text.lower()}bit for bit/s or {text.lower()}bps" in message


def test_1M_is_refused_by_both_command_lines_naming_1mbit(capsys, tmp_path):
    rc = cli.main(["tune", "--up", "1M", "--down", "16mbit"])
    assert rc == 2 and "write 1mbit for bit/s or 1mbps" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        hdl_cli.main(["replay", "--in", str(tmp_path / "in.pcap"), "--out", str(tmp_path / "out.pcap"),
                      "--uplink-rate", "1M"])
    assert e.value.code == 2 and "write 1mbit for bit/s or 1mbps" in capsys.readouterr().err


def test_the_help_of_both_tools_teaches_tc_rates(capsys):
    with pytest.raises(SystemExit):
        cli.main(["tune", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "1mbit" in text and "1M" in text and "refused" in text and "e.g. 1M" not in text
    with pytest.raises(SystemExit):
        hdl_cli.main(["replay", "--help"])
    assert "write 1mbit" in " ".join(capsys.readouterr().out.split())


def test_bare_integers_are_bit_per_second_as_the_experiments_write_them(capsys):
    # hdl/ackfilter/sim/net/variants.py runs `tune --up <int> --down <int>`.
    import json
    rc = cli.main(["--json", "tune", "--up", "1000000", "--down", "16000000", "--rtt", "20"])
    regs = json.loads(capsys.readouterr().out)["registers"]
    assert rc == 0 and regs["shaper_cpb_q16"] == P.cpb_q16_for_rate(0.95 * 10**6)


def test_status_says_where_the_settings_came_from_and_refuses_a_bad_settings_reply(board, capsys):
    """`settings` (firmware/README.md): the record, or the defaults and why,
    whether the live values are the saved ones, and the watchdog's restarts;
    a reply missing a field is the device's error, one line."""
    class Restarted(Firmware):
        def answer(self, line):
            if line == "settings":
                return ["source kept", "reason the watchdog restarted the firmware, the live "
                        "registers were kept", "saved no", "ok"]
            if line == "stats":
                return [x.replace("watchdog_restarts 0", "watchdog_restarts 2")
                        for x in super().answer(line)]
            return super().answer(line)

    restarted = Restarted()
    board.reply = lambda fw, line: wire(restarted.answer(line))
    rc, out, err = ctl(capsys, "status")
    assert rc == 0, err
    assert ("settings     kept through a watchdog restart, not saved (ackfilter-ctl save); the "
            "watchdog restarted the firmware 2 times\n") in out
    board.reply = lambda fw, line: wire(fw.answer(line))
    rc, out, err = ctl(capsys, "--json", "status")
    assert json.loads(out)["settings"] == {"source": "flash", "record": 3, "sector": 0,
                                           "record_regmap": 1, "saved": True}
    board.reply = lambda fw, line: (wire(["source flash", "saved yes", "ok"]) if line == "settings"
                                    else wire(fw.answer(line)))
    rc, out, err = ctl(capsys, "status")
    assert rc == 1 and "unexpected reply to 'settings'" in one_error_line(err)
