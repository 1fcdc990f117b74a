"""The RISC-V image itself, run by a small RV32I instruction-set simulator.

fwhost (test_firmware_host.py) checks the firmware's logic compiled for the
PC; this runs ``firmware/build/firmware.bin`` as the SoC would: from address
0, with the memory map of ``ackfilter.soc.memmap`` (RAM, the CSR bank a word
per address, the SoC registers), so start.S, the linker script, libgcc, the
board HAL and 32-bit arithmetic are exercised. The same session through both
must give the same transcript.
"""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from ackfilter.soc import memmap as M
from ackfilter.firmware import make_firmware

import fwrecord

pytestmark = pytest.mark.xdist_group("firmware")

REPO = Path(__file__).resolve().parents[1]
REGMAP = json.loads((REPO / "host-tools" / "ackfilter_ctl" / "regmap.json").read_text())
CYCLES_PER_INSN = 32       # the timer's advance per instruction (a bit-serial core's pace)
MAX_INSNS = 20_000_000


def _reg(name):
    return M.soc_addr(name)


class SPIFlash:
    """The parameter sectors of a SPI NOR flash, seen through its pins (mode 0)."""

    def __init__(self, sector):
        self.mem = bytearray(sector)
        self.cs_n, self.sck, self.do = 1, 0, 1
        self.bits, self.shift, self.rx = 0, 0, []
        self.wel = False

    def out_byte(self, index):
        cmd = self.rx[0] if self.rx else None
        if cmd == 0x05 and index >= 1:
            return 0x02 if self.wel else 0x00
        if cmd == 0x03 and index >= 4:
            addr = int.from_bytes(bytes(self.rx[1:4]), "big") + index - 4
            offset = addr - M.FLASH_PARAMS_OFFSET
            return self.mem[offset] if 0 <= offset < len(self.mem) else 0xFF
        return 0xFF

    def end(self):
        rx = self.rx
        if not rx:
            return
        base = int.from_bytes(bytes(rx[1:4]), "big") - M.FLASH_PARAMS_OFFSET if len(rx) >= 4 else None
        if rx[0] == 0x06:
            self.wel = True
        elif rx[0] == 0x20:
            assert self.wel and base is not None and 0 <= base < len(self.mem)
            start = base - base % M.FLASH_SECTOR_BYTES
            self.mem[start:start + M.FLASH_SECTOR_BYTES] = b"\xff" * M.FLASH_SECTOR_BYTES
            self.wel = False
        elif rx[0] == 0x02:
            assert self.wel and 0 <= base and len(rx) - 4 <= 256
            for i, b in enumerate(rx[4:]):
                self.mem[(base & ~0xFF) + ((base + i) & 0xFF)] &= b
            self.wel = False

    def pins(self, value):
        cs_n, sck, di = value & 1, value >> 1 & 1, value >> 2 & 1
        if self.cs_n and not cs_n:
            self.bits, self.rx = 0, []
        elif not self.cs_n and cs_n:
            self.end()
        elif not cs_n and sck and not self.sck:
            self.shift = (self.shift << 1 | di) & 0xFF
            self.bits += 1
            if self.bits % 8 == 0:
                self.rx.append(self.shift)
        elif not cs_n and self.sck and not sck:
            self.do = self.out_byte(self.bits // 8) >> (7 - self.bits % 8) & 1
        self.cs_n, self.sck = cs_n, sck


class SoC:
    """RV32I + the SoC's memory map. ``run`` executes until the firmware polls
    the UART again after the last input byte."""

    def __init__(self, image, uart_in, *, flash=fwrecord.region(), counters={}):
        self.ram = bytearray(M.RAM_BYTES)
        self.ram[:len(image)] = image
        self.x = [0] * 32
        self.pc = 0
        self.insns = 0
        self.rx = list(uart_in)
        self.tx = bytearray()
        self.flash = SPIFlash(flash)
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
        cycles = self.insns * CYCLES_PER_INSN
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
            self.flash.pins(value & 7)
        elif addr == _reg("watchdog"):
            self.kicked = self.insns
        else:
            raise AssertionError(f"write of {addr:#x}")

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


def test_the_image_boots_and_answers_as_fwhost_does(image, fwhost, tmp_path):
    flash = fwrecord.region(b"", fwrecord.record([("ack_mode", 1), ("shaper_overhead_bytes", -10),
                                                  ("ared_interval_ms", 2000), ("no_such_knob", 1)]))
    counters = {"frames_in": 2**40 + 5, "drop_red": 3}
    text = "".join(f"{line}\n" for line in SCRIPT)
    soc = SoC(image, text.encode(), flash=flash, counters=counters)
    got = soc.run()
    (tmp_path / "flash.bin").write_bytes(flash)
    want = subprocess.run([str(fwhost), "--flash", str(tmp_path / "flash.bin"),
                           *[a for n, v in counters.items() for a in ("--counter", f"{n}={v}")]],
                          input=text.encode(), capture_output=True, check=True).stdout.decode()
    assert got == want
    assert "warning: saved parameter 'no_such_knob' is not in regmap 1, dropped" in got
    overhead = next(p for p in REGMAP["params"] if p["name"] == "shaper_overhead_bytes")
    assert soc.csr[overhead["addr"]] == 0xFFFF_FFC0                  # -64 as the bus sees it


def test_the_image_saves_a_record_fwhost_reads(image, fwhost, tmp_path):
    commands = ["set ack_mode 0", "set shaper_overhead_bytes -7", "set ared_enable 0", "save"]
    soc = SoC(image, "".join(f"{c}\n" for c in commands).encode())
    out = soc.run()
    assert out.rstrip().endswith("ok\r\n>"), out
    (tmp_path / "flash.bin").write_bytes(soc.flash.mem)
    got = subprocess.run([str(fwhost), "--flash", str(tmp_path / "flash.bin")],
                         input=b"echo off\nget ack_mode\nget shaper_overhead_bytes\nget ared_enable\n",
                         capture_output=True, check=True).stdout.decode()
    assert "ack_mode 0\r\n" in got and "shaper_overhead_bytes -7\r\n" in got
    assert "ared_enable 0\r\n" in got


def test_stats_reads_64_bit_counters_on_the_image(image):
    soc = SoC(image, b"echo off\nstats\n", counters={"bytes_out": 2**33 + 2**32 + 9})
    lines = soc.run().split("\r\n")
    assert f"bytes_out {2**33 + 2**32 + 9}" in lines
    uptime = next(int(x.split()[1]) for x in lines if x.startswith("uptime_ms"))
    assert 0 < uptime <= soc.insns * CYCLES_PER_INSN // (REGMAP["f_sys_hz"] // 1000)
