"""The DP16KD block RAM model of the gate-level simulation
(``sim/gatesim/ecp5_dp16kd.v``) against a word-level reference, per data
width and write mode: random reads and writes on both ports, every output
compared after every clock edge (the widths and modes Yosys uses for the
board, and READBEFOREWRITE's and NORMAL's outputs on the writing port).
A read of the word the other port writes at the same edge must read the
bytes being written inverted (undefined on the device), the others as
they are.

Parameters come from the environment: ``WIDTH`` (2, 9, 18 or 36) and
``MODE`` (the write mode)."""

import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge

WIDTH = int(os.environ.get("WIDTH", "18"))
MODE = os.environ.get("MODE", "NORMAL")
#: The lowest address bit of a word at each width (the rest select bytes or nothing).
LSB = {1: 0, 2: 1, 4: 2, 9: 3, 18: 4, 36: 5}[WIDTH]
MASK = (1 << WIDTH) - 1


def drive(dut, prefix, n, value):
    for i in range(n):
        getattr(dut, f"{prefix}{i}").value = (value >> i) & 1


def read(dut, prefix, n):
    return sum(int(getattr(dut, f"{prefix}{i}").value) << i for i in range(n))


def out_a(dut):
    return read(dut, "DOA", 18) & MASK


def out_b(dut):
    if WIDTH == 36:
        return read(dut, "DOA", 18) | read(dut, "DOB", 18) << 18
    return read(dut, "DOB", 18) & MASK


def written(be):
    """The bits a write with byte enables ``be`` changes (all, below x18)."""
    if WIDTH < 18:
        return MASK
    return sum(0x1ff << 9 * k for k in range(WIDTH // 9) if be >> k & 1)


def merge(old, new, be):
    """``new`` over ``old`` in the 9-bit bytes ``be`` enables (x18, x36)."""
    for k in range(WIDTH // 9):
        if be >> k & 1:
            old = old & ~(0x1ff << 9 * k) | new & (0x1ff << 9 * k)
    return old


@cocotb.test()
async def test_random_reads_and_writes_match_the_reference(dut):
    rng = random.Random(WIDTH * 7 + len(MODE))
    cocotb.start_soon(Clock(dut.CLKA, 10, unit="ns").start())
    cocotb.start_soon(Clock(dut.CLKB, 10, unit="ns").start())
    for p in "AB":
        for s in ("CE", "OCE"):
            getattr(dut, f"{s}{p}").value = 1
        for s in (f"RST{p}", f"CS{p}0", f"CS{p}1", f"CS{p}2", f"WE{p}"):
            getattr(dut, s).value = 0
    mem = {}                       # word -> value; unwritten words read 0
    want_a = want_b = 0
    words = 6                      # a few, so that reads hit recent writes
    collisions = 0
    for cycle in range(600):
        await FallingEdge(dut.CLKA)
        if cycle:
            assert out_b(dut) == want_b, (cycle, hex(out_b(dut)), hex(want_b))
            if WIDTH != 36:
                assert out_a(dut) == want_a, (cycle, hex(out_a(dut)), hex(want_a))
        wa, wb = rng.randrange(words), rng.randrange(words)
        we_a = rng.random() < 0.5
        we_b = WIDTH != 36 and rng.random() < 0.3 and not we_a
        collide = we_a and wa == wb and not we_b
        if we_a and wa == wb and we_b:
            we_b = False
        da, db = rng.getrandbits(WIDTH), rng.getrandbits(WIDTH)
        be = rng.randrange(1, 1 << (WIDTH // 9)) if WIDTH >= 18 else 0
        ada = wa << LSB | (be if WIDTH >= 18 else 0)
        adb = wb << LSB | (0b11 if WIDTH == 18 else 0)
        drive(dut, "ADA", 14, ada)
        drive(dut, "ADB", 14, adb)
        dut.WEA.value = int(we_a)
        dut.WEB.value = int(we_b)
        if WIDTH == 36:
            drive(dut, "DIA", 18, da & 0x3ffff)
            drive(dut, "DIB", 18, da >> 18)
        else:
            drive(dut, "DIA", 18, da)
            drive(dut, "DIB", 18, db)
        old_a, old_b = mem.get(wa, 0), mem.get(wb, 0)
        # port A's output (not x36: there it writes only)
        if not we_a:
            want_a = old_a ^ written(0b11) if (we_b and wa == wb) else old_a
        elif MODE == "READBEFOREWRITE":
            want_a = old_a
        elif MODE == "WRITETHROUGH":
            want_a = merge(old_a, da, be) if WIDTH >= 18 else da
        # port B's
        if not we_b:
            want_b = old_b ^ written(be) if collide else old_b
            collisions += collide
        elif MODE == "READBEFOREWRITE":
            want_b = old_b
        elif MODE == "WRITETHROUGH":
            want_b = merge(old_b, db, 0b11) if WIDTH >= 18 else db
        if we_a:
            mem[wa] = merge(old_a, da, be) if WIDTH >= 18 else da
        if we_b:
            mem[wb] = merge(mem.get(wb, 0), db, 0b11) if WIDTH >= 18 else db
        await RisingEdge(dut.CLKA)
    assert collisions > 10
