"""The harnesses' 1 Gb/s MAC models (``sim/common/wire_pace.h``) against
:mod:`ackfilter.sim.wire`: every word at the first cycle at or after its exact
wire time, at any system clock, with the fractions carried on.

A small C++ driver moves each word as soon as the pacer allows (one word a
cycle at most), or some cycles late where a case says so, and prints the
cycle of every word, one line per frame.
"""

import math
import shutil
import subprocess
from fractions import Fraction

import pytest

from ackfilter.sim import wire
from ackfilter.paths import REPO_ROOT

HEADER_DIR = REPO_ROOT / "sim" / "common"

DRIVER = r"""
#include "wire_pace.h"
#include <cstdio>
#include <cstdlib>

// driver F_SYS_HZ CATCH_UP FRAME...   FRAME = LEN[@ARRIVAL][/WORD+LATE]
int main(int argc, char** argv) {
    wire::Pacer mac(wire::Pace::line_rate(std::strtoull(argv[1], nullptr, 10)), argv[2][0] == '1');
    unsigned long long prev = 0;
    bool any = false;
    for (int i = 3; i < argc; i++) {
        char* s = argv[i];
        unsigned long len = std::strtoul(s, &s, 10), arrival = 0, late_word = ~0ul, late = 0;
        if (*s == '@') arrival = std::strtoul(s + 1, &s, 10);
        if (*s == '/') { late_word = std::strtoul(s + 1, &s, 10); late = std::strtoul(s + 1, &s, 10); }
        mac.not_before(arrival);
        unsigned long words = (len + 3) / 4;
        for (unsigned long k = 0; k < words; k++) {
            unsigned long long c = mac.due();
            if (any && c <= prev) c = prev + 1;
            if (k == late_word) c += late;
            mac.moved(c, k + 1 == words, unsigned(len - 4 * (words - 1)));
            std::printf("%llu ", c);
            prev = c;
            any = true;
        }
        std::printf("\n");
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    work = tmp_path_factory.mktemp("wire_pace")
    (work / "driver.cpp").write_text(DRIVER)
    subprocess.run([cxx, "-std=c++17", "-O1", "-Wall", "-Werror", f"-I{HEADER_DIR}",
                    "-o", str(work / "driver"), str(work / "driver.cpp")], check=True)

    def run(f_sys_hz, frames, *, catch_up=True):
        out = subprocess.run([str(work / "driver"), str(f_sys_hz), "1" if catch_up else "0",
                              *map(str, frames)], check=True, capture_output=True, text=True).stdout
        return [[int(c) for c in line.split()] for line in out.splitlines()]
    return run


def ideal_schedule(f_sys_hz, lengths):
    """Each frame's word cycles when every word moves as soon as it may."""
    start, out = Fraction(0), []
    for n in lengths:
        out.append(wire.word_due_cycles(n, start, f_sys_hz))
        start += wire.frame_cycles(n, f_sys_hz)
    return out


MIXED = [60, 61, 62, 63, 64, 1514, 60, 99, 60, 1500] * 3


@pytest.mark.parametrize("f_sys_hz", [62_500_000, 50_000_000, 40_000_000, 100_000_001, 125_000_000])
@pytest.mark.parametrize("catch_up", [True, False])
def test_back_to_back_words_move_at_their_exact_wire_time_rounded_up(driver, f_sys_hz, catch_up):
    assert driver(f_sys_hz, MIXED, catch_up=catch_up) == ideal_schedule(f_sys_hz, MIXED)


def test_at_50_mhz_a_minimum_frame_takes_33_6_cycles_on_average(driver):
    assert wire.frame_cycles(60, 50_000_000) == Fraction(168, 5)
    got = driver(50_000_000, [60] * 101)
    assert [f[0] for f in got[:6]] == [0, 34, 68, 101, 135, 168]   # 33.6 k rounded up
    assert got[100][0] - got[0][0] == 3360
    assert got[0] == [0, 2, 4, 5, 7, 8, 10, 12, 13, 15, 16, 18, 20, 21, 23]   # 1.6 k rounded up


def test_at_62_5_mhz_whole_words_take_two_cycles_and_a_frame_twelve_more(driver):
    lengths = [60, 64, 100, 1512, 60]
    start, want = 0, []
    for n in lengths:
        want.append([start + 2 * k for k in range(n // 4)])
        start = want[-1][-1] + 2 + 12
    assert driver(62_500_000, lengths) == want


def test_a_frame_that_arrives_after_the_wire_is_free_starts_on_arrival(driver):
    got = driver(50_000_000, [60, "60@100", "60@120"])
    assert got[1][0] == 100
    assert got[2][0] == math.ceil(100 + Fraction(168, 5))          # the wire was still busy at 120


def test_a_late_word_moves_the_transmit_wire_but_a_receiver_catches_up(driver):
    on_time = driver(50_000_000, [60, 60])
    late = "60/2+3"                                                 # word 2 (due 4) taken at 7
    tx = driver(50_000_000, [late, 60], catch_up=False)
    assert tx[0][:5] == [0, 2, 7, 9, 11]                            # 7 + 1.6 k from then on
    # From word 2 on: it and the 12 words after it, then the overhead.
    assert tx[1][0] == math.ceil(7 + (4 * 13 + 24) * Fraction(2, 5))
    rx = driver(50_000_000, [late, 60], catch_up=True)
    assert rx[0][:8] == [0, 2, 7, 8, 9, 10, 11, 12]                # a word a cycle until back on time
    assert rx[0][8:] == on_time[0][8:] and rx[1] == on_time[1]


def test_a_late_last_word_moves_the_wire_end_of_a_receiver_too(driver):
    got = driver(50_000_000, ["60/14+5", 60], catch_up=True)
    assert got[0][14] == 23 + 5
    assert got[1][0] == math.ceil(28 + (4 + 24) * Fraction(2, 5))
