"""The RISC-V image itself, run by a small RV32I instruction-set simulator.

fwhost (test_firmware_host.py) checks the firmware's logic compiled for the
PC; this runs ``firmware/build/firmware.bin`` as the SoC would: from address
0, with the memory map of ``ackfilter.soc.memmap`` (RAM, the CSR bank a word
per address, the SoC registers), so start.S, the linker script, libgcc, the
board HAL and 32-bit arithmetic are exercised. Its flash pins drive the one
model of the board's flash, ``sim/common/spi_flash.c`` (as fwhost's and the
simulated SoC's do), at the ISS's time, so erases and programs keep it busy.
The same session through both must give the same transcript.
"""

import ctypes
import hashlib
import json
import os
import shutil
import subprocess
import weakref
from pathlib import Path

import pytest

from ackfilter.soc import memmap as M
from ackfilter.firmware import make_firmware
from ackfilter.paths import build_dir, file_lock

import fwrecord

pytestmark = pytest.mark.xdist_group("firmware")

REPO = Path(__file__).resolve().parents[1]
REGMAP = json.loads((REPO / "host-tools" / "ackfilter_ctl" / "regmap.json").read_text())
CYCLES_PER_INSN = 32       # the timer's advance per instruction (a bit-serial core's pace)
MAX_INSNS = 20_000_000


def _reg(name):
    return M.soc_addr(name)


# The board's flash: sim/common/spi_flash.c, the model fwhost and the simulated
# SoC use, through tests/iss_flash.c, built into a shared library cached in the
# build directory by content.
FLASH_SOURCES = [REPO / "tests" / "iss_flash.c", REPO / "sim" / "common" / "spi_flash.c"]
FLASH_HEADERS = [REPO / "sim" / "common" / "spi_flash.h", REPO / "firmware" / "include" / "ackfilter_regs.h"]
FLASH_CFLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-shared", "-fPIC"]


def build_flash_library():
    """Path of the flash model's shared library, compiled when its sources,
    flags or compiler changed (under a lock: pytest-xdist workers share it)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("cc or gcc (a host C compiler) is required to build the SPI flash model "
                    "sim/common/spi_flash.c; `make test` installs build-essential")
    cmd = [cc, *FLASH_CFLAGS, *(f"-I{h.parent}" for h in FLASH_HEADERS), *map(str, FLASH_SOURCES)]
    h = hashlib.sha256()
    for part in (" ".join(cmd).encode(), *(p.read_bytes() for p in FLASH_SOURCES + FLASH_HEADERS)):
        h.update(part)
        h.update(b"\0")
    key = h.hexdigest()[:16]
    lib = build_dir() / "iss-flash" / f"libiss_flash-{key}.so"
    with file_lock(lib.parent / f".{key}.lock"):
        if not lib.is_file():
            tmp = lib.with_name(f".{lib.name}.{os.getpid()}")
            r = subprocess.run([*cmd, "-o", str(tmp)], capture_output=True, text=True)
            if r.returncode != 0:
                tmp.unlink(missing_ok=True)
                pytest.fail(f"building the SPI flash model failed: {' '.join(cmd)}\n{r.stderr}")
            os.replace(tmp, lib)
    return lib


def load_flash_library(path):
    """The library with its functions' C types (tests/iss_flash.c)."""
    lib = ctypes.CDLL(str(path))
    flash = ctypes.c_void_p
    for name, res, args in [
            ("iss_flash_new", flash, [ctypes.c_uint32]),
            ("iss_flash_free", None, [flash]),
            ("iss_flash_bytes", ctypes.c_uint32, []),
            ("iss_flash_set_mem", ctypes.c_int, [flash, ctypes.c_char_p, ctypes.c_uint32]),
            ("iss_flash_get_mem", ctypes.c_int, [flash, ctypes.c_char_p, ctypes.c_uint32]),
            ("iss_flash_pins", None, [flash, ctypes.c_uint64, ctypes.c_int, ctypes.c_int, ctypes.c_int]),
            ("iss_flash_do", ctypes.c_int, [flash]),
            ("iss_flash_errors", ctypes.c_uint32, [flash]),
            ("iss_flash_writes", ctypes.c_uint32, [flash])]:
        getattr(lib, name).restype = res
        getattr(lib, name).argtypes = args
    return lib


class CFlash:
    """One flash of the C model at power-on (deep power-down), holding
    ``sectors``; ``now`` counts cycles of ``clk_hz``."""

    def __init__(self, lib, sectors, *, clk_hz):
        self.lib = lib
        self.size = lib.iss_flash_bytes()
        assert len(sectors) == self.size, f"{len(sectors)} bytes of sectors, not {self.size}"
        self.handle = lib.iss_flash_new(clk_hz)
        assert self.handle, "out of memory"
        self._finalizer = weakref.finalize(self, lib.iss_flash_free, self.handle)
        assert lib.iss_flash_set_mem(self.handle, bytes(sectors), self.size) == 0

    def pins(self, now, value):
        """The SoC's flash_out register (bit 0 CS#, bit 1 SCK, bit 2 DI) at ``now``."""
        self.lib.iss_flash_pins(self.handle, now, value & 1, value >> 1 & 1, value >> 2 & 1)

    @property
    def do(self):
        return self.lib.iss_flash_do(self.handle)

    @property
    def mem(self):
        buf = ctypes.create_string_buffer(self.size)
        assert self.lib.iss_flash_get_mem(self.handle, buf, self.size) == 0
        return buf.raw

    @property
    def errors(self):
        """Protocol errors so far (the model printed each on stderr)."""
        return self.lib.iss_flash_errors(self.handle)

    @property
    def writes(self):
        """Erase and program commands taken so far."""
        return self.lib.iss_flash_writes(self.handle)


class SoC:
    """RV32I + the SoC's memory map, its flash pins on the C flash model
    (``flash_lib``). ``run`` executes until the firmware polls the UART again
    after the last input byte."""

    def __init__(self, image, uart_in, flash_lib, *, flash=fwrecord.region(), counters={}):
        self.ram = bytearray(M.RAM_BYTES)
        self.ram[:len(image)] = image
        self.x = [0] * 32
        self.pc = 0
        self.insns = 0
        self.rx = list(uart_in)
        self.tx = bytearray()
        self.flash = CFlash(flash_lib, flash, clk_hz=REGMAP["f_sys_hz"])
        self.restarts, self.kicked = 0, 0
        self.hi_latch = self.timer_hi = 0
        self.params = {p["addr"]: p for p in REGMAP["params"]}
        self.csr = {a: p["default"] & 0xFFFF_FFFF for a, p in self.params.items()}
        self.counters = {c["addr"]: counters.get(c["name"], 0) for c in REGMAP["counters"]}
        self.info = {i["addr"]: i["name"] for i in REGMAP["info"]}
        self.done = False

    # -- memory --
    def load(self, addr, size, signed=False):
        if addr % size:
            raise AssertionError(f"misaligned {size}-byte load at {addr:#x} (pc {self.pc:#x})")
        if addr + size <= M.RAM_BYTES:
            v = int.from_bytes(self.ram[addr:addr + size], "little")
        else:
            assert size == 4, f"{size}-byte access to the register {addr:#x}"
            v = self.read_reg(addr)
        if signed and v >> (8 * size - 1):
            v -= 1 << (8 * size)
        return v & 0xFFFF_FFFF

    def store(self, addr, size, value):
        if addr % size:
            raise AssertionError(f"misaligned {size}-byte store at {addr:#x} (pc {self.pc:#x})")
        if addr + size <= M.RAM_BYTES:
            self.ram[addr:addr + size] = (value & ((1 << 8 * size) - 1)).to_bytes(size, "little")
        else:
            assert size == 4, f"{size}-byte access to the register {addr:#x}"
            self.write_reg(addr, value)

    def read_reg(self, addr):
        if M.CSR_BASE <= addr < M.SOC_BASE:
            n = (addr - M.CSR_BASE) // 4
            if n in self.csr:
                return self.csr[n]
            if n in self.counters:
                self.hi_latch = self.counters[n] >> 32
                return self.counters[n] & 0xFFFF_FFFF
            if n - 1 in self.counters:
                return self.hi_latch
            return REGMAP["id"] if self.info.get(n) == "id" else 0   # live levels: 0
        if addr == _reg("uart_data"):
            if not self.rx:
                self.done = True
                return 0
            return 0x100 | self.rx.pop(0)
        if addr == _reg("uart_status"):
            return 1 | (2 if self.rx else 0)
        cycles = self.cycles()
        if addr == _reg("timer_lo"):
            self.timer_hi = cycles >> 32
            return cycles & 0xFFFF_FFFF
        if addr == _reg("timer_hi"):
            return self.timer_hi
        if addr == _reg("flash_in"):
            return self.flash.do
        if addr == _reg("soc_id"):
            return M.SOC_ID_VALUE
        if addr == _reg("sys_clk_hz"):
            return REGMAP["f_sys_hz"]
        if addr == _reg("watchdog"):
            return self.restarts
        raise AssertionError(f"read of {addr:#x}")

    def write_reg(self, addr, value):
        if M.CSR_BASE <= addr < M.SOC_BASE:
            p = self.params.get((addr - M.CSR_BASE) // 4)
            assert p is not None, f"write to CSR {(addr - M.CSR_BASE) // 4:#x}"
            v = value - (1 << 32) if p["signed"] and value >> 31 else value
            self.csr[p["addr"]] = min(max(v, p["min"]), p["max"]) & 0xFFFF_FFFF
        elif addr == _reg("uart_data"):
            self.tx.append(value & 0xFF)
        elif addr == _reg("flash_out"):
            self.flash.pins(self.cycles(), value & 7)
            assert self.flash.errors == 0, f"the flash saw a protocol error (stderr) at pc {self.pc:#x}"
        elif addr == _reg("watchdog"):
            self.kicked = self.insns
        else:
            raise AssertionError(f"write of {addr:#x}")

    def cycles(self):
        """The SoC's time: its timer (cycles since reset), which the flash model also counts."""
        return self.insns * CYCLES_PER_INSN

    # -- the core --
    def run(self):
        x, mask = self.x, 0xFFFF_FFFF
        while not self.done:
            self.insns += 1
            assert self.insns < MAX_INSNS, "runaway"
            assert (self.insns - self.kicked) * CYCLES_PER_INSN < M.WATCHDOG_CYCLES, \
                "the firmware stopped kicking the watchdog"
            pc = self.pc
            i = int.from_bytes(self.ram[pc:pc + 4], "little")
            op, rd, f3 = i & 0x7F, i >> 7 & 31, i >> 12 & 7
            rs1, rs2 = x[i >> 15 & 31], x[i >> 20 & 31]
            imm_i = (i >> 20) - ((i >> 19) & 0x1000)               # sign-extended [31:20]
            nxt = pc + 4
            if op == 0x13:                                         # OP-IMM
                sh = i >> 20 & 31
                v = [rs1 + imm_i, rs1 << sh, int(_s(rs1) < imm_i), int(rs1 < (imm_i & mask)),
                     rs1 ^ imm_i, (_s(rs1) >> sh) if i >> 30 & 1 else rs1 >> sh,
                     rs1 | imm_i, rs1 & imm_i][f3]
            elif op == 0x33:                                       # OP
                assert i >> 25 in (0, 0x20), f"not RV32I: {i:#010x} at {pc:#x}"
                sh = rs2 & 31
                alt = i >> 30 & 1
                v = [rs1 - rs2 if alt else rs1 + rs2, rs1 << sh, int(_s(rs1) < _s(rs2)),
                     int(rs1 < rs2), rs1 ^ rs2, (_s(rs1) >> sh) if alt else rs1 >> sh,
                     rs1 | rs2, rs1 & rs2][f3]
            elif op == 0x37:                                       # LUI
                v = i & 0xFFFFF000
            elif op == 0x17:                                       # AUIPC
                v = pc + (i & 0xFFFFF000)
            elif op == 0x6F:                                       # JAL
                imm = (i >> 31 & 1) << 20 | (i >> 12 & 0xFF) << 12 | (i >> 20 & 1) << 11 | \
                    (i >> 21 & 0x3FF) << 1
                v, nxt = pc + 4, pc + imm - ((imm & 0x100000) << 1)
            elif op == 0x67:                                       # JALR
                v, nxt = pc + 4, (rs1 + imm_i) & ~1
            elif op == 0x63:                                       # BRANCH
                imm = (i >> 31 & 1) << 12 | (i >> 7 & 1) << 11 | (i >> 25 & 0x3F) << 5 | \
                    (i >> 8 & 0xF) << 1
                taken = [rs1 == rs2, rs1 != rs2, None, None, _s(rs1) < _s(rs2),
                         _s(rs1) >= _s(rs2), rs1 < rs2, rs1 >= rs2][f3]
                if taken:
                    nxt = pc + imm - ((imm & 0x1000) << 1)
                rd = 0
            elif op == 0x03:                                       # LOAD
                v = self.load((rs1 + imm_i) & mask, 1 << (f3 & 3), signed=not f3 & 4)
            elif op == 0x23:                                       # STORE
                imm = (i >> 25) << 5 | (i >> 7 & 31)
                self.store((rs1 + imm - ((imm & 0x800) << 1)) & mask, 1 << f3, rs2)
                rd = 0
            elif op == 0x0F:                                       # FENCE
                rd = 0
            else:
                raise AssertionError(f"not RV32I: {i:#010x} at {pc:#x}")
            if rd:
                x[rd] = v & mask
            self.pc = nxt & mask
        return self.tx.decode()


def _s(v):
    return v - (1 << 32) if v >> 31 else v


@pytest.fixture(scope="module")
def image():
    if shutil.which("riscv64-unknown-elf-gcc") is None:
        pytest.fail("riscv64-unknown-elf-gcc is required")
    r = make_firmware()
    assert r.returncode == 0, r.stdout + r.stderr
    return (REPO / "firmware" / "build" / "firmware.bin").read_bytes()


@pytest.fixture(scope="module")
def flash_lib():
    return load_flash_library(build_flash_library())


@pytest.fixture(scope="module")
def fwhost():
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no host C compiler (cc or gcc) to build fwhost")
    build = REPO / "build" / "firmware-host"
    r = make_firmware("host", f"HOST_CC={cc}", f"HOST_BUILD={build}")
    assert r.returncode == 0, r.stdout + r.stderr
    return build / "fwhost"




SCRIPT = ["version", "list", "set shaper_overhead_bytes -64", "set red_max_p 0x1a2b",
          "set shaper_cpb_q16 4294967295", "set ack_mode 7", "set ack_mode x", "get",
          "bogus", "reset-counters", "set ared_interval_ms 100", "get ared_interval_ms",
          "get ack_mode\x7f\x7f\x7f\x7fmode", "x" * 130, "defaults", "get shaper_overhead_bytes",
          "set shaper_overhead_bytes -64"]


def test_the_image_boots_and_answers_as_fwhost_does(image, flash_lib, fwhost, tmp_path):
    flash = fwrecord.region(b"", fwrecord.record([("ack_mode", 1), ("shaper_overhead_bytes", -10),
                                                  ("ared_interval_ms", 2000), ("no_such_knob", 1)]))
    counters = {"frames_in": 2**40 + 5, "drop_red": 3}
    text = "".join(f"{line}\n" for line in SCRIPT)
    soc = SoC(image, text.encode(), flash_lib, flash=flash, counters=counters)
    got = soc.run()
    (tmp_path / "flash.bin").write_bytes(flash)
    want = subprocess.run([str(fwhost), "--flash", str(tmp_path / "flash.bin"),
                           *[a for n, v in counters.items() for a in ("--counter", f"{n}={v}")]],
                          input=text.encode(), capture_output=True, check=True).stdout.decode()
    assert got == want
    assert "warning: saved parameter 'no_such_knob' is not in regmap 1, dropped" in got
    overhead = next(p for p in REGMAP["params"] if p["name"] == "shaper_overhead_bytes")
    assert soc.csr[overhead["addr"]] == 0xFFFF_FFC0                  # -64 as the bus sees it


def test_the_image_saves_a_record_fwhost_reads(image, flash_lib, fwhost, tmp_path):
    commands = ["set ack_mode 0", "set shaper_overhead_bytes -7", "set ared_enable 0", "save"]
    soc = SoC(image, "".join(f"{c}\n" for c in commands).encode(), flash_lib)
    out = soc.run()
    assert out.rstrip().endswith("ok\r\n>"), out
    assert soc.flash.writes >= 2 and soc.flash.errors == 0      # an erase, a program: no mistake
    (tmp_path / "flash.bin").write_bytes(soc.flash.mem)
    got = subprocess.run([str(fwhost), "--flash", str(tmp_path / "flash.bin")],
                         input=b"echo off\nget ack_mode\nget shaper_overhead_bytes\nget ared_enable\n",
                         capture_output=True, check=True).stdout.decode()
    assert "ack_mode 0\r\n" in got and "shaper_overhead_bytes -7\r\n" in got
    assert "ared_enable 0\r\n" in got


def test_stats_reads_64_bit_counters_on_the_image(image, flash_lib):
    soc = SoC(image, b"echo off\nstats\n", flash_lib, counters={"bytes_out": 2**33 + 2**32 + 9})
    lines = soc.run().split("\r\n")
    assert f"bytes_out {2**33 + 2**32 + 9}" in lines
    uptime = next(int(x.split()[1]) for x in lines if x.startswith("uptime_ms"))
    assert 0 < uptime <= soc.insns * CYCLES_PER_INSN // (REGMAP["f_sys_hz"] // 1000)
