// 1 Gb/s Ethernet MACs on the core's 32-bit streams, paced exactly at any
// system clock: the MAC models of the C++ harnesses (sim/replay, sim/net,
// sim/soc).
//
// A byte on a 1 Gb/s wire lasts 8 ns, F_SYS / 125 MHz cycles: a ratio, not
// always a whole number (1/2 at 62.5 MHz, 2/5 at 50 MHz). A MAC's wire time is
// kept exactly, as a cycle and a fraction of one; a word moves in the first
// cycle at or after its wire time, never earlier, and the fraction carries on
// to the next word, so the average is exactly the line rate.
//
// A frame of L bytes (as stored, without FCS) takes L + 24 byte times: FCS 4,
// preamble and SFD 8, inter-frame gap 12 (IEEE 802.3 clauses 3 and 4). Its
// full words take 4 byte times each, its last word as many as it has bytes.

#ifndef ACKFILTER_WIRE_PACE_H
#define ACKFILTER_WIRE_PACE_H

#include <cstdint>
#include <numeric>

namespace wire {

constexpr uint64_t kLineBytesPerSecond = 125000000;   // 1 Gb/s
constexpr uint64_t kOverheadBytes = 24;               // FCS + preamble/SFD + IFG

// How long a MAC's words take, in ticks of 1/den cycle.
struct Pace {
    uint64_t den = 1;
    uint64_t word_ticks = 1;     // a full 32-bit word
    uint64_t byte_ticks = 0;     // a byte of a frame's last word (0: a last word takes word_ticks)
    uint64_t gap_ticks = 0;      // after a frame's last word (FCS, preamble, IFG)

    // Ethernet at `bytes_per_second` (1 Gb/s: 125e6) at a system clock of
    // f_sys_hz: a byte is f_sys_hz / bytes_per_second cycles, reduced to num / den.
    static Pace line_rate(uint64_t f_sys_hz, uint64_t bytes_per_second = kLineBytesPerSecond) {
        uint64_t g = std::gcd(f_sys_hz, bytes_per_second);
        uint64_t num = f_sys_hz / g;
        return Pace{bytes_per_second / g, 4 * num, num, kOverheadBytes * num};
    }
    // A word every `cycles_per_word` cycles, `gap_cycles` more after a frame
    // (whatever the bytes of its last word).
    static Pace whole_words(uint64_t cycles_per_word, uint64_t gap_cycles) {
        return Pace{1, cycles_per_word, 0, gap_cycles};
    }
};

// A MAC's word schedule. `due()` is the first cycle its next word may move;
// `moved(now, last, bytes)` tells it that a word moved in cycle `now`.
//
// A word that moves in its due cycle keeps its exact wire time: the next one is
// due a word later (after a frame's last word: its bytes and the gap later).
// A word that moves later (the other side was not ready) puts the wire at
// `now`, and the next one follows from there. With `catch_up` (a receiving
// MAC, whose bytes keep arriving from the wire), words inside a frame keep the
// frame's schedule even after a late one; only a late last word moves the wire.
class Pacer {
  public:
    Pacer(Pace pace, bool catch_up) : pace_(pace), catch_up_(catch_up) {}

    const Pace& pace() const { return pace_; }
    uint64_t due() const { return cycle_ + (frac_ != 0); }
    // The next word moves no earlier than `cycle` (its frame arrives then).
    void not_before(uint64_t cycle) {
        if (cycle > cycle_) { cycle_ = cycle; frac_ = 0; }
    }
    // A word moved in cycle `now`; `bytes` (1..4) counts only for a frame's last word.
    void moved(uint64_t now, bool last, unsigned bytes) {
        if (now > due() && (last || !catch_up_)) { cycle_ = now; frac_ = 0; }
        uint64_t ticks = pace_.word_ticks;
        if (last) ticks = (pace_.byte_ticks ? bytes * pace_.byte_ticks : pace_.word_ticks) + pace_.gap_ticks;
        frac_ += ticks;
        cycle_ += frac_ / pace_.den;
        frac_ %= pace_.den;
    }

  private:
    Pace pace_;
    bool catch_up_;
    uint64_t cycle_ = 0;         // the next word's wire time: cycle_ + frac_ / den
    uint64_t frac_ = 0;
};

}  // namespace wire

#endif  // ACKFILTER_WIRE_PACE_H
