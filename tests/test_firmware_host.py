"""The control-plane firmware: its RISC-V image, and its logic on the PC.

``fwhost`` (``make -C firmware host``) runs the firmware's main loop with a
simulated SoC: stdin is the UART's input, stdout its output, lines of the
input starting with ``%%`` are fwhost directives (``%%sleep MS``, ``%%counter
NAME VALUE``, ``%%red-avg N``). Every expectation here comes from
``regmap.json``, the SoC's memory map, the README's protocol and a Python
reference of Adaptive RED, never from the C code. fwhost exits 3 when its
flash model saw a protocol error, so every session also checks the SPI driver.
"""

import json
import math
import random
import re
import shutil
import struct
import subprocess
from fractions import Fraction
from pathlib import Path

import pytest

from ackfilter.soc import memmap as M
from ackfilter.firmware import make_firmware

import fwrecord

# One worker builds and runs fwhost (pytest-xdist --dist loadgroup).
pytestmark = pytest.mark.xdist_group("firmware")

REPO = Path(__file__).resolve().parents[1]
FIRMWARE = REPO / "firmware"
HOST_BUILD = REPO / "build" / "firmware-host"
CROSS_GCC = "riscv64-unknown-elf-gcc"
# The stack the link reserves (link.ld's default).
STACK_BYTES = int(re.search(r"STACK_BYTES : (\d+);", (FIRMWARE / "link.ld").read_text()).group(1))

REGMAP = json.loads((REPO / "host-tools" / "ackfilter_ctl" / "regmap.json").read_text())
# Every parameter as `list` shows them: CSR parameters, then the firmware's.
PARAMS = [{**p, "key": p["addr"]} for p in REGMAP["params"]] + \
         [{**p, "signed": False} for p in REGMAP["firmware_params"]]
BY_NAME = {p["name"]: p for p in PARAMS}
COMMANDS = ["help", "version", "echo", "list", "get", "set", "stats", "reset-counters",
            "save", "defaults", "load", "settings", "hang", "mdio"]


@pytest.fixture(scope="module")
def fwhost():
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no host C compiler (cc or gcc) to build fwhost")
    r = make_firmware("host", f"HOST_CC={cc}", f"HOST_BUILD={HOST_BUILD}")
    assert r.returncode == 0, r.stdout + r.stderr
    return HOST_BUILD / "fwhost"


def run(fwhost, lines, *args):
    """stdout of one fwhost session fed ``lines``; it must exit cleanly."""
    r = subprocess.run([str(fwhost), *map(str, args)], capture_output=True, timeout=60,
                       input="".join(f"{line}\n" for line in lines).encode())
    assert r.returncode == 0, r.stderr.decode()
    assert r.stderr == b""
    return r.stdout.decode()


def session(fwhost, commands, *args):
    """(boot lines, one list of reply lines per command) with echo off.

    Directives (``%%...``) and empty lines get no reply."""
    out = run(fwhost, ["echo off", *commands], *args)
    assert out.endswith("> ")
    boot, echo_off, *replies = out.split("> ")
    assert echo_off == "echo off\r\nok\r\n"
    assert replies.pop() == ""
    assert all(r.endswith("\r\n") for r in replies)
    expected = [c for c in commands if c and not c.startswith("%%")]
    assert len(replies) == len(expected), replies
    return boot.split("\r\n")[:-1], [r.split("\r\n")[:-1] for r in replies]


def ask(fwhost, command, *args):
    return session(fwhost, [command], *args)[1][0]


def values(fwhost, *args, commands=()):
    """Every parameter's value after ``commands``, from `get`."""
    reply = session(fwhost, [*commands, "get"], *args)[1][-1]
    assert reply[-1] == "ok"
    return {name: int(v) for name, v in (line.split(" ") for line in reply[:-1])}


def defaults():
    return {p["name"]: p["default"] for p in PARAMS}


def out_of_range(p, value):
    steps = f" in steps of {p['step']}" if p.get("step", 1) > 1 else ""
    return [f"error: {p['name']} must be {p['min']}..{p['max']} {p['unit']}{steps}, not {value}"]


# ---- the RISC-V image ----

def test_the_riscv_image_builds_and_fits_the_ram_with_its_stack():
    if shutil.which(CROSS_GCC) is None:
        pytest.fail(f"{CROSS_GCC} is required (Debian: gcc-riscv64-unknown-elf; `make venv`)")
    r = make_firmware()
    assert r.returncode == 0, r.stdout + r.stderr
    elf, image = FIRMWARE / "build" / "firmware.elf", FIRMWARE / "build" / "firmware.bin"
    size = subprocess.run(["riscv64-unknown-elf-size", str(elf)], capture_output=True, text=True,
                          check=True).stdout.splitlines()[1].split()
    text, data, bss = map(int, size[:3])
    assert text + data + bss + STACK_BYTES <= M.RAM_BYTES
    assert text + data <= image.stat().st_size <= text + data + 8     # (+ alignment)
    header = subprocess.run(["riscv64-unknown-elf-readelf", "-h", "-A", str(elf)],
                            capture_output=True, text=True, check=True).stdout
    assert re.search(r"Entry point address:\s+0x0\n", header)        # the reset address
    assert re.search(r'Tag_RISCV_arch: "rv32i\d+p\d+"', header)       # no M, no C
    assert re.search(r"^firmware.bin: \d+ bytes", r.stdout, re.M)     # the size is printed


def stack_chain(build):
    """(bytes, [function, ...]) of the deepest call chain from `_start`: each
    function's frame from GCC's -fstack-usage at the link (the image is
    compiled there, -flto: firmware.elf.ltrans*.su), the calls from the
    image's disassembly; the one indirect call (the command table's, in
    `cmd_run` or wherever the link inlined it) may reach every `c_*` command.
    libgcc's helpers have no .su: their
    register save and restore routines are part of the caller's frame, the
    others are counted at 32 bytes."""
    frames = {}
    sus = list(build.glob("firmware.elf.ltrans*.su"))
    assert sus, f"no stack usage files in {build}"
    for su in sus:
        for line in su.read_text().splitlines():
            where, size, kind = line.split("\t")
            assert kind == "static", line          # no alloca, no variable-length arrays
            name = where.rsplit(":", 1)[1].split(".")[0]
            frames[name] = max(frames.get(name, 0), int(size))
    dis = subprocess.run(["riscv64-unknown-elf-objdump", "-d", str(build / "firmware.elf")],
                         capture_output=True, text=True, check=True).stdout
    calls, func, indirect = {}, None, []
    for line in dis.splitlines():
        if m := re.match(r"^[0-9a-f]+ <([^>]+)>:$", line):
            func = m.group(1).split(".")[0]
            calls.setdefault(func, set())
        elif func and (m := re.search(r"\t(?:jal|j)\t(?:\w+,)?[0-9a-f]+ <([^>+]+)>", line)):
            target = m.group(1).split(".")[0]
            if target != func:
                calls[func].add(target)
        elif func and re.search(r"\tjalr\t", line) and not func.startswith("__riscv_"):
            indirect.append(func)
    assert len(indirect) == 1, f"indirect calls in {indirect}: teach stack_chain where they go"
    calls[indirect[0]] |= {f for f in calls if f.startswith("c_")}

    def frame(f):
        if f in frames:
            return frames[f]
        assert f.startswith("__") or f == "_start", f"no stack usage for {f}"
        return 0 if f.startswith("__riscv_") or f == "_start" else 32

    best = {}

    def deepest(f, path):
        assert f not in path, f"recursion: {' -> '.join(path + [f])}"
        if f not in best:
            below = [deepest(g, path + [f]) for g in calls.get(f, ())]
            depth, chain = max(below, default=(0, []))
            best[f] = (frame(f) + depth, [f] + chain)
        return best[f]

    return deepest("_start", [])


def test_the_deepest_call_chain_needs_under_half_the_stack():
    """The stack the link reserves (link.ld's STACK_BYTES) is at least twice
    the deepest call chain, so that the RAM it takes is no guess."""
    if shutil.which(CROSS_GCC) is None:
        pytest.fail(f"{CROSS_GCC} is required")
    assert make_firmware().returncode == 0
    depth, chain = stack_chain(FIRMWARE / "build")
    assert 2 * depth <= STACK_BYTES, f"{depth} bytes: {' -> '.join(chain)}"
    assert depth >= 200 and "check_record" in chain, chain     # the analysis sees the save path


def test_the_image_builds_under_a_make_that_sets_board(monkeypatch):
    """`make bitstream BOARD=...` runs the board build, which runs the
    firmware's make: the outer make's variables (MAKEFLAGS) must not reach
    it (BOARD once named the firmware's list of SoC sources)."""
    if shutil.which(CROSS_GCC) is None:
        pytest.fail(f"{CROSS_GCC} is required")
    monkeypatch.setenv("MAKEFLAGS", " -- BOARD=colorlight-5a-75b SOC=0")
    monkeypatch.setenv("MAKELEVEL", "1")
    r = make_firmware()
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_link_fails_when_the_image_and_the_stack_do_not_fit(tmp_path):
    if shutil.which(CROSS_GCC) is None:
        pytest.fail(f"{CROSS_GCC} is required")
    r = subprocess.run(["make", "-j4", "-C", str(FIRMWARE), f"BUILD={tmp_path}",
                        f"STACK_BYTES={M.RAM_BYTES - 1024}"], capture_output=True, text=True)
    assert r.returncode != 0
    assert "do not fit the RAM" in r.stderr


# ---- the line discipline ----

def test_boot_prints_the_banner_then_the_prompt(fwhost):
    out = run(fwhost, [])
    assert re.fullmatch(rf"ackfilter firmware \d+\.\d+\.\d+ regmap {REGMAP['regmap_version']}\r\n> ",
                        out), out


def test_echo_is_on_at_boot_and_off_on_request(fwhost):
    out = run(fwhost, ["get ack_mode", "echo off", "get ack_mode", "echo on", "get ack_mode"])
    banner = out.split("\r\n")[0]
    assert out == (f"{banner}\r\n"
                   "> get ack_mode\r\nack_mode 2\r\nok\r\n"
                   "> echo off\r\nok\r\n"
                   "> ack_mode 2\r\nok\r\n"
                   "> ok\r\n"                              # echo on, not echoed
                   "> get ack_mode\r\nack_mode 2\r\nok\r\n> ")


def test_backspace_and_delete_erase_one_character(fwhost):
    out = run(fwhost, ["get ack_modx\x7fe", "get ack_mode\x08\x08\x08\x08mode"])
    assert "> get ack_modx\b \be\r\nack_mode 2\r\nok\r\n" in out
    assert "> get ack_mode" + "\b \b" * 4 + "mode\r\nack_mode 2\r\nok\r\n" in out


def test_a_line_of_120_characters_is_taken_and_a_longer_one_refused(fwhost):
    longest = "set ack_mode " + "0" * 106 + "1"
    assert len(longest) == 120
    _, replies = session(fwhost, [longest, "get ack_mode", longest[:13] + "0" + longest[13:],
                                  "get ack_mode", "x" * 500])
    assert replies == [["ack_mode 1", "ok"], ["ack_mode 1", "ok"], ["error: line too long"],
                       ["ack_mode 1", "ok"], ["error: line too long"]]


def test_cr_is_ignored_so_crlf_works(fwhost):
    _, replies = session(fwhost, ["get ack_mode\r", "ge\rt\r ack_mode"])
    assert replies == [["ack_mode 2", "ok"]] * 2


def test_an_empty_line_gives_only_a_new_prompt(fwhost):
    out = run(fwhost, ["echo off", "", "  ", "get ack_mode"])
    assert out.endswith("> echo off\r\nok\r\n> > > ack_mode 2\r\nok\r\n> ")


def test_tabs_and_repeated_spaces_separate_words(fwhost):
    assert ask(fwhost, "set\t ack_mode  \t1 ") == ["ack_mode 1", "ok"]


# ---- the commands ----

def test_help_has_a_line_per_command(fwhost):
    reply = ask(fwhost, "help")
    assert reply[-1] == "ok"
    assert [line.split()[0] for line in reply[:-1]] == COMMANDS


def test_version_gives_the_firmware_regmap_and_ids(fwhost):
    reply = ask(fwhost, "version")
    assert re.fullmatch(r"firmware \d+\.\d+\.\d+", reply[0])
    assert reply[1:] == [f"regmap {REGMAP['regmap_version']}", f"gateware_id 0x{REGMAP['id']:08x}",
                         f"soc_id 0x{M.SOC_ID_VALUE:08x}", f"clock_hz {REGMAP['f_sys_hz']}", "ok"]


def test_list_shows_each_parameter_with_the_register_maps_range(fwhost):
    reply = ask(fwhost, "list")
    assert reply[-1] == "ok"
    rows = [line.split(" ", 5) for line in reply[:-1]]
    assert rows == [[p["name"], str(p["default"]), str(p["min"]), str(p["max"]), str(p["default"]),
                     p["unit"]] for p in PARAMS]


def test_get_gives_every_parameter_or_one(fwhost):
    assert values(fwhost) == defaults()
    for p in PARAMS:
        assert ask(fwhost, f"get {p['name']}") == [f"{p['name']} {p['default']}", "ok"]


def test_set_reads_back_every_parameter_at_its_bounds(fwhost):
    commands, want = [], []
    for p in PARAMS:
        for v in (p["min"], p["max"], p["default"]):
            commands += [f"set {p['name']} {v}", f"get {p['name']}"]
            want += [[f"{p['name']} {v}", "ok"]] * 2
        commands.append(f"set {p['name']} {p['max']:#x}")
        want.append([f"{p['name']} {p['max']}", "ok"])
    assert session(fwhost, commands)[1] == want


def test_set_takes_hex_and_negative_numbers(fwhost):
    _, replies = session(fwhost, ["set shaper_overhead_bytes -64", "set shaper_overhead_bytes -0x20",
                                  "set red_max_p 0X1a2B", "set shaper_cpb_q16 0xffffffff",
                                  "set ack_mode 0002", "set ack_mode -0"])
    assert replies == [["shaper_overhead_bytes -64", "ok"], ["shaper_overhead_bytes -32", "ok"],
                       ["red_max_p 6699", "ok"], ["shaper_cpb_q16 4294967295", "ok"],
                       ["ack_mode 2", "ok"], ["ack_mode 0", "ok"]]


def test_out_of_range_values_are_refused_with_the_range_and_change_nothing(fwhost):
    commands, want = [], []
    for p in PARAMS:
        for typed in (str(p["min"] - 1), str(p["max"] + 1), hex(p["max"] + 1),
                      "-99999999999999999999999", "99999999999999999999999", "0x10000000000000000"):
            commands.append(f"set {p['name']} {typed}")
            want.append(out_of_range(p, typed))
    _, replies = session(fwhost, commands + ["get"])
    assert replies[:-1] == want
    assert replies[-1][:-1] == [f"{n} {v}" for n, v in defaults().items()]


def test_values_between_the_steps_the_hardware_takes_are_refused(fwhost):
    """chunk_bytes: the segmenter ignores the low four bits, so 8 would act
    as 0 (off) and 520 as 512: refused, with the step (register map)."""
    stepped = [p for p in PARAMS if p.get("step", 1) > 1]
    assert [p["name"] for p in stepped] == ["chunk_bytes"]
    p = stepped[0]
    off = [p["step"] // 2, p["min"] + p["step"] + 1, p["max"] - 1]
    _, replies = session(fwhost, [f"set {p['name']} {v}" for v in off] +
                         [f"set {p['name']} {p['step'] * 3}", f"get {p['name']}"])
    assert replies[:3] == [out_of_range(p, v) for v in off]
    assert replies[3:] == [[f"{p['name']} {p['step'] * 3}", "ok"]] * 2


@pytest.mark.parametrize("typed", ["abc", "0x", "-", "--1", "+1", "12a", "0xg", "1.5", "1e3", "0b1",
                                   "x10", "1_000"])
def test_malformed_values_are_not_numbers(fwhost, typed):
    assert ask(fwhost, f"set ack_mode {typed}") == [f"error: {typed} is not a number"]


def test_an_unknown_parameter_is_named_and_list_suggested(fwhost):
    _, replies = session(fwhost, ["set no_such 1", "get no_such", "set ACK_MODE 1"])
    assert replies == [["error: no parameter 'no_such' (list shows them)"],
                       ["error: no parameter 'no_such' (list shows them)"],
                       ["error: no parameter 'ACK_MODE' (list shows them)"]]


def test_wrong_arguments_give_the_usage(fwhost):
    cases = {
        "set ack_mode": "error: usage: set NAME VALUE",
        "set": "error: usage: set NAME VALUE",
        "set ack_mode 1 2": "error: usage: set NAME VALUE",
        "set a b c d e f": "error: usage: set NAME VALUE",
        "get ack_mode red_max_p": "error: usage: get [NAME]",
        "echo": "error: usage: echo on|off",
        "echo yes": "error: usage: echo on|off",
        "echo on off": "error: usage: echo on|off",
    }
    cases.update({f"{c} x": f"error: {c} takes no arguments" for c in COMMANDS
                  if c not in ("set", "get", "echo", "mdio")})
    cases.update({"mdio": "error: usage: mdio PHY REG [VALUE]",
                  "mdio 0 1 2 3": "error: usage: mdio PHY REG [VALUE]"})
    _, replies = session(fwhost, list(cases))
    assert replies == [[e] for e in cases.values()]


def test_an_unknown_command_lists_the_commands(fwhost):
    assert ask(fwhost, "sett ack_mode 1") == \
        [f"error: no command 'sett'; commands: {' '.join(COMMANDS)}"]


def test_defaults_sets_every_parameter_back(fwhost):
    changed = [f"set {p['name']} {p['min'] if p['min'] != p['default'] else p['max']}" for p in PARAMS]
    assert values(fwhost, commands=changed + ["defaults"]) == defaults()


def stats(reply):
    assert reply[-1] == "ok"
    return dict(line.split(" ") for line in reply[:-1])


def test_stats_counts_from_the_reset_counters_baseline(fwhost):
    big = 2**40 + 7
    _, replies = session(fwhost, ["stats", "reset-counters", "%%counter frames_in 12",
                                  f"%%counter bytes_in {big + 2**33}", "%%sleep 2000", "stats"],
                         "--counter", "frames_in=5", "--counter", f"bytes_in={big}",
                         "--counter", "seg_chunks=3", "--red-avg", "1234")
    first, _, second = replies
    names = [c["name"] for c in REGMAP["counters"]] + [f"info.{i['name']}" for i in REGMAP["info"]] + \
        [f"info.board_{b['name']}" for b in REGMAP["board"] if b["name"] not in ("mdio_result", "mdio_command")] + \
        ["uptime_ms", "ared_adjustments", "watchdog_restarts"]
    assert [line.split(" ")[0] for line in first[:-1]] == names
    first, second = stats(first), stats(second)
    assert (first["frames_in"], first["bytes_in"], first["seg_chunks"]) == ("5", str(big), "3")
    assert (second["frames_in"], second["bytes_in"], second["seg_chunks"]) == ("7", str(2**33), "0")
    assert all(first[c["name"]] == "0" for c in REGMAP["counters"]
               if c["name"] not in ("frames_in", "bytes_in", "seg_chunks"))
    assert first["info.id"] == str(REGMAP["id"]) and first["info.red_avg_bytes"] == "1234"
    assert 2000 <= int(second["uptime_ms"]) - int(first["uptime_ms"]) < 2100
    assert second["ared_adjustments"] == "0"


# ---- saved parameters ----

def non_defaults():
    """A value other than the default for every parameter."""
    return {p["name"]: p["max"] if p["max"] != p["default"] else p["min"] for p in PARAMS}


def written(flash):
    """The newest valid record of a flash file as ``(sector, seq, regmap, {name: value})``,
    values as the parameters' signed or unsigned numbers."""
    found = fwrecord.newest(flash.read_bytes())
    if found is None:
        return None
    sector, seq, regmap, words = found
    values = {n: (w - 2**32 if BY_NAME.get(n, {}).get("signed") and w >= 2**31 else w)
              for n, w in words.items()}
    return sector, seq, regmap, values


def raw_run(fwhost, lines, *args):
    """(status, stdout, stderr) of one fwhost session, whatever its status."""
    r = subprocess.run([str(fwhost), *map(str, args)], capture_output=True, timeout=60,
                       input="".join(f"{line}\n" for line in lines).encode())
    return r.returncode, r.stdout.decode(), r.stderr.decode()


def settings(reply):
    """`settings`' reply: ``{key: rest of the line}``."""
    assert reply[-1] == "ok"
    return dict(line.split(" ", 1) for line in reply[:-1])


def test_save_then_a_new_boot_loads_the_values(fwhost, tmp_path):
    flash = tmp_path / "flash.bin"
    want = non_defaults()
    _, replies = session(fwhost, [f"set {n} {v}" for n, v in want.items()] + ["save"],
                         "--flash", flash)
    assert replies[-1] == [f"saved {len(PARAMS)} parameters as flash record 1", "ok"]
    boot, replies = session(fwhost, ["get", "settings", "defaults", "load", "get"], "--flash", flash)
    assert boot == [boot[0]]                                     # no warning
    assert stats(replies[0]) == {n: str(v) for n, v in want.items()}
    assert settings(replies[1]) == {"source": "flash", "record": "1", "sector": "0",
                                    "record_regmap": str(REGMAP["regmap_version"]), "saved": "yes"}
    assert replies[3] == [f"loaded {len(PARAMS)} parameters from flash record 1", "ok"]
    assert stats(replies[4]) == {n: str(v) for n, v in want.items()}


def test_the_saved_record_has_the_documented_layout_and_crc(fwhost, tmp_path):
    flash = tmp_path / "flash.bin"
    want = non_defaults()
    session(fwhost, [f"set {n} {v}" for n, v in want.items()] + ["save"], "--flash", flash)
    data = flash.read_bytes()
    assert len(data) == fwrecord.SECTORS * M.FLASH_SECTOR_BYTES
    assert data == fwrecord.region(fwrecord.record([(p["name"], want[p["name"]]) for p in PARAMS]))
    assert M.FLASH_PARAMS_OFFSET + len(data) == 0x20_0000        # the end of the first 16 Mbit


def test_saves_go_to_the_two_sectors_in_turn_with_rising_numbers(fwhost, tmp_path):
    flash = tmp_path / "flash.bin"
    for n, mode in enumerate((0, 1, 2, 0), 1):
        _, replies = session(fwhost, [f"set ack_mode {mode}", "save"], "--flash", flash)
        assert replies[1] == [f"saved {len(PARAMS)} parameters as flash record {n}", "ok"]
        sector, seq, _, values = written(flash)
        assert (sector, seq, values["ack_mode"]) == ((n - 1) % 2, n, mode)
        before = fwrecord.read(flash.read_bytes())[n % 2]
        if n > 1:                                                # the one before, still whole
            assert before[0] == n - 1
    assert values_of(fwhost, flash)["ack_mode"] == 0


def values_of(fwhost, flash, *more):
    return values(fwhost, "--flash", flash, *more)


def test_saving_unchanged_settings_writes_nothing(fwhost, tmp_path):
    flash = tmp_path / "flash.bin"
    session(fwhost, ["set ack_mode 1", "save"], "--flash", flash)
    before = flash.read_bytes()
    _, replies = session(fwhost, ["save", "set ack_mode 1", "save", "settings"], "--flash", flash)
    unchanged = ["unchanged: flash record 1 holds these values, nothing written", "ok"]
    assert replies[0] == replies[2] == unchanged
    assert settings(replies[3])["saved"] == "yes"
    assert flash.read_bytes() == before
    _, replies = session(fwhost, ["set ack_mode 0", "settings", "set ack_mode 1", "settings"],
                         "--flash", flash)
    assert settings(replies[1])["saved"] == "no" and settings(replies[3])["saved"] == "yes"


def test_a_save_cut_short_at_any_step_boots_on_the_record_before(fwhost, tmp_path):
    """Power fails halfway through each erase and program of a save in turn,
    until a save gets through: each time the next boot has the settings of
    the save before, whole, and the next save works."""
    flash, start = tmp_path / "flash.bin", tmp_path / "start.bin"
    old, new = non_defaults(), defaults()
    session(fwhost, [f"set {n} {v}" for n, v in old.items()] + ["save", "set data_share 77", "save"],
            "--flash", start)                                    # records 1 and 2: sector 0 is next
    old["data_share"] = 77
    for cut in range(1, 200):
        flash.write_bytes(start.read_bytes())
        status, out, err = raw_run(fwhost, ["echo off", "defaults", "save"], "--flash", flash,
                                   "--flash-cut", cut)
        if status == 0:
            break
        assert status == 4 and f"power cut in flash write {cut} " in err
        assert "saved" not in out                                # the save never finished
        boot, replies = session(fwhost, ["get", "settings"], "--flash", flash)
        assert stats(replies[0]) == {n: str(v) for n, v in old.items()}, cut
        assert settings(replies[1])["record"] == "2"
        damaged = fwrecord.read(flash.read_bytes())[0] == "damaged"
        assert boot[1:] == (["warning: the other parameter sector holds a damaged record (a save "
                             "cut short?), using flash record 2"] if damaged else [])
        _, replies = session(fwhost, ["defaults", "save"], "--flash", flash)
        assert replies[1][0] == f"saved {len(PARAMS)} parameters as flash record 3"
        assert written(flash)[:2] == (0, 3) and values_of(fwhost, flash) == new
    assert cut > 3 and "saved" in out                            # an erase and several programs
    assert written(flash)[:2] == (0, 3) and values_of(fwhost, flash) == new


def test_the_first_save_cut_short_boots_on_the_defaults(fwhost, tmp_path):
    flash = tmp_path / "flash.bin"
    for cut in range(1, 200):
        flash.unlink(missing_ok=True)
        status, _, _ = raw_run(fwhost, ["echo off", "set ack_mode 0", "save"], "--flash", flash,
                               "--flash-cut", cut)
        if status == 0:
            break
        assert status == 4
        assert values_of(fwhost, flash) == defaults()
    assert cut > 3 and values_of(fwhost, flash)["ack_mode"] == 0


def test_a_failed_save_keeps_the_live_values_and_the_record_before(fwhost, tmp_path):
    """Each erase or program in turn never finishes: an error, the live
    settings stay, and the next boot has the record before."""
    flash, start = tmp_path / "flash.bin", tmp_path / "start.bin"
    session(fwhost, ["set ack_mode 1", "save"], "--flash", start)
    for fail in range(1, 200):
        flash.write_bytes(start.read_bytes())
        _, replies = session(fwhost, ["set ack_mode 0", "save", "get ack_mode", "settings"],
                             "--flash", flash, "--flash-fail", fail)
        if replies[1][-1] == "ok":
            break
        assert replies[1] == ["error: flash does not answer (still busy after 1000 ms), nothing saved"]
        assert replies[2] == ["ack_mode 0", "ok"]
        assert settings(replies[3])["saved"] == "no"
        assert values_of(fwhost, flash)["ack_mode"] == 1
    assert fail > 3 and values_of(fwhost, flash)["ack_mode"] == 0


def test_save_reports_a_flash_that_keeps_its_old_content(fwhost, tmp_path):
    flash = tmp_path / "flash.bin"
    flash.write_bytes(fwrecord.region())
    _, replies = session(fwhost, ["save"], "--flash", flash, "--flash-wp")
    assert replies == [[f"error: flash verify failed at {M.FLASH_PARAMS_OFFSET:#08x}, "
                        "the record before is kept"]]
    assert flash.read_bytes() == fwrecord.region()


def test_a_flash_that_does_not_answer_gives_defaults_and_refuses_save(fwhost):
    boot, replies = session(fwhost, ["save", "get ack_mode", "settings"], "--no-flash")
    assert boot[1:] == ["warning: the flash does not answer, using defaults"]
    assert replies[:2] == [["error: flash does not answer (busy), nothing saved"],
                           [f"ack_mode {BY_NAME['ack_mode']['default']}", "ok"]]
    assert settings(replies[2]) == {"source": "defaults", "reason": "the flash does not answer",
                                    "saved": "no"}


@pytest.mark.parametrize("offset", [0, 4, 9, 11, 12 + 3, 12 + 26, 300, -1])
def test_both_records_damaged_boots_on_defaults_and_load_changes_nothing(fwhost, tmp_path, offset):
    flash = tmp_path / "flash.bin"
    session(fwhost, [f"set {n} {v}" for n, v in non_defaults().items()] + ["save", "set ack_mode 1",
                                                                            "save"], "--flash", flash)
    data = bytearray(flash.read_bytes())
    size = fwrecord.len_record(len(PARAMS))
    assert data[:size] != data[M.FLASH_SECTOR_BYTES:][:size]      # two records
    for base in (0, M.FLASH_SECTOR_BYTES):
        data[base + offset % size] ^= 0x10
    flash.write_bytes(data)
    boot, replies = session(fwhost, ["get", "settings", "set ack_mode 0", "load", "get ack_mode"],
                            "--flash", flash)
    if offset == 0:            # the magic: no record at all
        problem, warning = "no saved parameters", []
    else:
        problem = "the saved parameters are damaged in both sectors (CRC)"
        warning = [f"warning: {problem}, using defaults"]
    assert boot[1:] == warning
    assert stats(replies[0]) == {n: str(v) for n, v in defaults().items()}
    assert settings(replies[1]) == {"source": "defaults", "reason": problem, "saved": "no"}
    assert replies[3] == [f"error: {problem}, nothing changed"]
    assert replies[4] == ["ack_mode 0", "ok"]


def test_one_damaged_record_falls_back_to_the_other(fwhost, tmp_path):
    flash = tmp_path / "flash.bin"
    session(fwhost, ["set ack_mode 0", "save", "set ack_mode 1", "save"], "--flash", flash)
    data = bytearray(flash.read_bytes())
    data[M.FLASH_SECTOR_BYTES + 40] ^= 1                         # record 2, in sector 1
    flash.write_bytes(data)
    boot, replies = session(fwhost, ["get ack_mode", "settings"], "--flash", flash)
    assert boot[1:] == ["warning: the other parameter sector holds a damaged record (a save cut "
                        "short?), using flash record 1"]
    assert replies[0] == ["ack_mode 0", "ok"] and settings(replies[1])["record"] == "1"


@pytest.mark.parametrize("content", ["missing", "erased", "other magic"])
def test_no_saved_record_gives_defaults_quietly_and_load_changes_nothing(fwhost, tmp_path, content):
    flash = tmp_path / "flash.bin"
    if content == "erased":
        flash.write_bytes(fwrecord.region())
    elif content == "other magic":
        flash.write_bytes(fwrecord.region(fwrecord.record([("ack_mode", 1)], magic=b"AFP1")))
    boot, replies = session(fwhost, ["get", "settings", "set ack_mode 1", "load", "get ack_mode"],
                            "--flash", flash)
    assert boot == [boot[0]]
    assert stats(replies[0]) == {n: str(v) for n, v in defaults().items()}
    assert settings(replies[1]) == {"source": "defaults", "reason": "no saved parameters",
                                    "saved": "no"}
    assert replies[3] == ["error: no saved parameters, nothing changed"]
    assert replies[4] == ["ack_mode 1", "ok"]


def test_a_record_of_another_register_map_keeps_what_exists_and_says_what_it_dropped(fwhost, tmp_path):
    flash = tmp_path / "flash.bin"
    version = REGMAP["regmap_version"]
    red_max_p, overhead = BY_NAME["red_max_p"], BY_NAME["shaper_overhead_bytes"]
    interval = BY_NAME["ared_interval_ms"]
    kept = {"ack_mode": 1, "shaper_overhead_bytes": overhead["min"], "ared_interval_ms": interval["max"]}
    entries = [("ack_mode", 1), ("red_ecn_bloom", 7), ("red_max_p", red_max_p["max"] + 1),
               ("shaper_overhead_bytes", overhead["min"]), ("ared_interval_ms", interval["max"])]
    flash.write_bytes(fwrecord.region(fwrecord.record(entries, seq=9, regmap=version - 1)))
    boot, replies = session(fwhost, ["get", "settings", "save", "settings"], "--flash", flash)
    missing = [p for p in PARAMS if p["name"] not in kept]
    assert boot[1:] == [
        f"warning: saved parameter 'red_ecn_bloom' is not in regmap {version}, dropped",
        f"warning: saved red_max_p {red_max_p['max'] + 1} is out of range "
        f"{red_max_p['min']}..{red_max_p['max']} {red_max_p['unit']}, dropped",
    ] + [f"warning: flash record 9 (regmap {version - 1}) has no {p['name']}, default {p['default']}"
         for p in missing]
    assert stats(replies[0]) == {n: str(v) for n, v in {**defaults(), **kept}.items()}
    assert settings(replies[1]) == {"source": "flash", "record": "9", "sector": "0",
                                    "record_regmap": str(version - 1), "saved": "no"}
    assert replies[2] == [f"saved {len(PARAMS)} parameters as flash record 10", "ok"]
    assert settings(replies[3])["saved"] == "yes"
    assert written(flash)[1:3] == (10, version)


def test_load_sets_each_register_once_straight_to_its_saved_value(fwhost, tmp_path):
    """Live traffic never sees a default between the live and the saved
    value: `load` writes only the registers that change, each once."""
    flash, trace = tmp_path / "flash.bin", tmp_path / "csr.log"
    live = non_defaults()
    saved = {**live, "ack_mode": 0 if live["ack_mode"] else 1, "data_share": 77}
    session(fwhost, [f"set {n} {v}" for n, v in saved.items()] + ["save"], "--flash", flash)
    _, replies = session(fwhost, [f"set {n} {v}" for n, v in live.items()] + ["%%csr-trace", "load"],
                         "--flash", flash, "--csr-trace", trace)
    csr = {p["key"]: p["name"] for p in PARAMS if "addr" in p}
    writes = [line.split() for line in trace.read_text().splitlines()]
    assert [(csr[int(a, 0)], int(v, 0)) for a, v in writes] == \
        [(n, saved[n] & 0xFFFF_FFFF) for n in ("ack_mode", "data_share")]


def test_boot_with_no_record_writes_no_register(fwhost, tmp_path):
    trace = tmp_path / "csr.log"
    session(fwhost, ["get"], "--csr-trace", trace)
    assert trace.read_text() == ""


# ---- the watchdog ----

def test_boot_after_a_watchdog_restart_keeps_the_datapaths_registers(fwhost, tmp_path):
    """The datapath ran on through the restart: no register is written (its
    live values may be unsaved ones), the PHYs are left alone, and only the
    firmware's own parameters, lost with its RAM, come from the flash."""
    flash, trace = tmp_path / "flash.bin", tmp_path / "csr.log"
    interval = BY_NAME["ared_interval_ms"]["max"]
    session(fwhost, ["set ack_mode 0", "set data_share 77", f"set ared_interval_ms {interval}", "save"],
            "--flash", flash)
    boot, replies = session(fwhost, ["get ack_mode", "get ared_interval_ms", "settings", "stats",
                                     "mdio 0 31 0x0d08", "mdio 0 17"],
                            "--flash", flash, "--restarts", 3, "--csr-trace", trace,
                            "--phy", f"0={RTL8211F:#x}")
    assert boot[1:] == ["warning: the watchdog restarted the firmware (3 since power-on); "
                        "the datapath's registers are kept"]
    assert trace.read_text() == ""
    assert replies[0] == [f"ack_mode {BY_NAME['ack_mode']['default']}", "ok"]   # untouched
    assert replies[1] == [f"ared_interval_ms {interval}", "ok"]
    assert settings(replies[2]) == {"source": "kept", "reason": "the watchdog restarted the "
                                    "firmware, the live registers were kept", "saved": "no"}
    assert stats(replies[3])["watchdog_restarts"] == "3"
    assert replies[5] == ["0x0009", "ok"]                   # the PHY as it powered up
    _, replies = session(fwhost, ["stats"], "--flash", flash)
    assert stats(replies[0])["watchdog_restarts"] == "0"


def test_hang_stops_kicking_the_watchdog(fwhost):
    """`hang` is there to see the watchdog work; fwhost checks the kicks of
    every session, so a command that forgets them fails every test."""
    status, out, err = raw_run(fwhost, ["echo off", "hang", "get ack_mode"])
    assert out.endswith("> hanging: the watchdog restarts the firmware, the datapath runs on\r\n")
    assert status == 5 and "watchdog: not kicked for 2684 ms" in err


# ---- the line: Ctrl-U and lost bytes ----

def test_ctrl_u_discards_the_line_typed_so_far(fwhost):
    out = run(fwhost, ["echo off", "set ack_mode 0\x15get ack_mode", "\x15", "get data_share"])
    assert out.split("> ")[2:] == [f"ack_mode {BY_NAME['ack_mode']['default']}\r\nok\r\n",
                                   "",                           # the empty line after Ctrl-U
                                   f"data_share {BY_NAME['data_share']['default']}\r\nok\r\n", ""]


def test_a_line_that_lost_bytes_to_a_full_fifo_is_discarded_not_run(fwhost, tmp_path):
    """Bytes sent on while `save` runs (tens of ms) overflow the 32-byte
    receive FIFO: the line they were lost from is refused as a whole, even
    when what is left parses (`set shaper_cpb_q16 1234567` as `... 1267`)."""
    flash = tmp_path / "flash.bin"
    cpb = BY_NAME["shaper_cpb_q16"]
    lines = ["echo off", "%%sleep 5", "save", "set red_min_bytes 3000",
             "set shaper_cpb_q16 1234567", "get shaper_cpb_q16", "%%sleep 200",
             "get red_min_bytes", "get shaper_cpb_q16"]
    out = run(fwhost, lines, "--flash", flash, "--uart-stream")
    replies = out.split("> ")[2:]
    # The FIFO held the first line and the start of the second; the rest was
    # lost while `save` ran, and the next byte to come (after the pause)
    # carried the mark: the line from "set shaper" to it is refused.
    assert replies == [f"saved {len(PARAMS)} parameters as flash record 1\r\nok\r\n",
                       "red_min_bytes 3000\r\nok\r\n",              # whole in the FIFO
                       "error: uart overrun, line discarded\r\n",
                       f"shaper_cpb_q16 {cpb['default']}\r\nok\r\n", ""]
    # the same bytes, paced as a sender that waits: every line runs
    out = run(fwhost, lines, "--flash", flash)
    assert "error" not in out and "shaper_cpb_q16 1234567\r\nok" in out


# ---- Adaptive RED ----

P_ONE = 65536              # red_max_p's unit is 1/65536
P_CENT = Fraction(655, P_ONE)   # 0.01 as the firmware rounds it (655.36 -> 655)


def ared_reference(avg, min_th, max_th, max_p):
    """Floyd, Gummadi, Shenker 2001, Fig. 2: one interval's update of max_p
    (in 1/65536, floored), exact arithmetic. No band when max_th <= min_th."""
    if max_th <= min_th:
        return max_p
    p = Fraction(max_p, P_ONE)
    target = (min_th + Fraction(2, 5) * (max_th - min_th), min_th + Fraction(3, 5) * (max_th - min_th))
    if avg > target[1] and p <= Fraction(1, 2):
        p += min(P_CENT, p / 4)                       # alpha
    elif avg < target[0] and p >= P_CENT:
        p *= Fraction(9, 10)                          # beta
    return math.floor(p * P_ONE)


def ared_cases():
    rng = random.Random(2001)
    ps = [0, 1, 3, 4, 5, 654, 655, 656, 2619, 2620, 2621, 2624, 6554, 32767, 32768, 32769, 65535, 65536]
    cases = []
    for _ in range(3000):
        lo = rng.choice([0, 1, rng.randrange(1 << 20), rng.randrange(1 << 32)])
        hi = rng.choice([lo, lo + 1, lo + 5, lo + rng.randrange(1 << 20), rng.randrange(1 << 32)])
        hi = min(hi, (1 << 32) - 1)
        d = hi - lo
        edges = [lo + 2 * d // 5, lo + 3 * d // 5, lo + (2 * d + 4) // 5, lo + (3 * d + 4) // 5]
        avg = rng.choice([e + rng.choice([-1, 0, 1]) for e in edges] +
                         [0, lo, hi, rng.randrange(1 << 32), (1 << 32) - 1])
        avg = min(max(avg, 0), (1 << 32) - 1)
        cases.append((avg, lo, hi, rng.choice(ps + [rng.randrange(P_ONE + 1)])))
    return cases


def test_the_ared_step_follows_the_papers_rule(fwhost):
    cases = ared_cases()
    r = subprocess.run([str(fwhost), "--ared-step"], capture_output=True, text=True, check=True,
                       input="".join(f"{a} {lo} {hi} {p}\n" for a, lo, hi, p in cases))
    got = [int(x) for x in r.stdout.split()]
    assert len(got) == len(cases)
    wrong = [(c, g, ared_reference(*c)) for c, g in zip(cases, got) if g != ared_reference(*c)]
    assert not wrong, wrong[:5]
    moves = {(g > c[3]) - (g < c[3]) for c, g in zip(cases, got)}
    assert moves == {-1, 0, 1}                       # the cases cover all three branches


def trajectory(avg, min_th, max_th, max_p):
    """max_p after 0, 1, 2, ... intervals, until it stops moving."""
    seen = [max_p]
    while (nxt := ared_reference(avg, min_th, max_th, seen[-1])) != seen[-1]:
        seen.append(nxt)
    return seen


def ared_run(fwhost, avg, commands, interval_ms=100):
    """red_max_p and ared_adjustments after each `%%sleep`, ARED on."""
    script = ["set red_enable 1", f"set ared_interval_ms {interval_ms}"]
    for c in commands:
        script += [c, "get red_max_p", "stats"] if c.startswith("%%sleep") else [c]
    _, replies = session(fwhost, script, "--red-avg", avg)
    got, it = [], iter(replies[2:])
    for c in commands:
        if c.startswith("%%sleep"):
            max_p = int(next(it)[0].split()[1])
            got.append((max_p, int(stats(next(it))["ared_adjustments"])))
        elif not c.startswith("%%"):
            next(it)
    return got


def test_ared_raises_max_p_under_a_high_average_until_the_cap(fwhost):
    lo, hi, p0 = (BY_NAME[n]["default"] for n in ("red_min_bytes", "red_max_bytes", "red_max_p"))
    avg = hi                                         # above min + 0.6 (max - min)
    path = trajectory(avg, lo, hi, p0)
    assert path[-1] > 32768 and len(path) > 20       # it ends just past 0.5
    got = ared_run(fwhost, avg, ["%%sleep 1000"] * 2 + ["%%sleep 30000", "%%sleep 5000"])
    (p1, n1), (p2, n2), (p3, n3), (p4, n4) = got
    assert path[n1] == p1 and 9 <= n1 <= 11          # one step per 100 ms interval
    assert path[n2] == p2 and 10 <= n2 - n1 <= 11
    assert (p3, n3) == (path[-1], len(path) - 1)     # the cap, and one adjustment per change
    assert (p4, n4) == (p3, n3)                      # then it stays


def test_ared_lowers_max_p_under_a_low_average_down_to_the_floor(fwhost):
    lo, hi = BY_NAME["red_min_bytes"]["default"], BY_NAME["red_max_bytes"]["default"]
    path = trajectory(0, lo, hi, 40000)
    assert path[-1] < 655
    got = ared_run(fwhost, 0, ["set red_max_p 40000", "%%sleep 1000", "%%sleep 60000"],
                   interval_ms=500)
    (p1, n1), (p2, n2) = got
    assert path[n1] == p1 and 1 <= n1 <= 3           # one step per 500 ms
    assert (p2, n2) == (path[-1], len(path) - 1)


@pytest.mark.parametrize("switch", ["set red_enable 0", "set ared_enable 0", "%%red-avg 9000"])
def test_ared_leaves_max_p_alone_when_off_or_in_the_band(fwhost, switch):
    # The default band is 8100..9900 bytes.
    got = ared_run(fwhost, 20000, [switch, "%%sleep 3000"])
    assert got == [(BY_NAME["red_max_p"]["default"], 0)]


def test_ared_follows_the_interval_parameter(fwhost):
    got = ared_run(fwhost, 20000, ["%%sleep 10500"], interval_ms=2000)
    assert got[0][1] == 5


# ---- the PHYs over MDIO ----

RTL8211F = 0x001CC916       # Realtek's OUI and model (registers 2, 3; RTL8211F datasheet)
B50612D = 0x03625E60        # another PHY: left alone


def test_boot_gives_each_rtl8211f_the_rgmii_delays_and_restores_its_page(fwhost):
    # fwhost's RTL8211F powers up as its straps' internal pulls leave it:
    # page 0xd08 reg 0x11 = 0x0009 (TX delay off), reg 0x15 = 0x0019 (RX
    # delay on). After boot: bit 8 of 0x11 set, bit 3 of 0x15 clear, the
    # other bits as they were, the page register back at 0.
    boot, replies = session(fwhost, ["mdio 0 31", "mdio 0 31 0x0d08", "mdio 0 17", "mdio 0 21",
                                     "mdio 1 2", "mdio 1 3"],
                            "--phy", f"0={RTL8211F:#x}", "--phy", f"1={B50612D:#x}")
    assert "phy 0: RTL8211F, RGMII delays set" in boot
    assert not any(line.startswith("phy 1") for line in boot)
    assert replies == [["0x0000", "ok"], ["0x0d08", "ok"], ["0x0109", "ok"], ["0x0011", "ok"],
                       ["0x0362", "ok"], ["0x5e60", "ok"]]


def test_boot_without_phys_says_nothing_and_mdio_reports_no_phy(fwhost):
    boot, replies = session(fwhost, ["mdio 0 1", "mdio 32 1", "mdio 0 1 0x10000", "mdio 0", "mdio x 1"])
    assert not any(line.startswith("phy") for line in boot)
    assert replies[0] == ["error: no PHY at that address"]
    assert replies[1] == replies[2] == replies[4] == ["error: PHY and REG must be 0..31, VALUE 0..0xffff"]
    assert replies[3] == ["error: usage: mdio PHY REG [VALUE]"]


def test_stats_shows_the_board_words(fwhost):
    reply = ask(fwhost, "stats", "--phy", f"1={RTL8211F:#x}")
    words = dict(line.split(" ", 1) for line in reply[:-1])
    assert int(words["info.board_phy1_id"]) == RTL8211F
    assert int(words["info.board_phy0_id"]) == 0xFFFFFFFF      # nobody at address 0
    status = int(words["info.board_phy1_status"])
    assert status & 1 == 1 and (status >> 8) & 0xFF >= 1       # present, polled
