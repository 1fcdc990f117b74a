// The uplink core's frame streams as the C++ harnesses drive and read them
// (sim/replay, sim/net): 32-bit words, byte 0 in lane 0, `keep` a prefix of
// the lanes on a frame's last word (docs/spec.md, section 1).
//
// `start` resets the core (the `core-replay` top) and writes its registers;
// `tick` is one clock cycle; `Feeder` offers one frame to the core's input,
// a word a cycle while the harness lets it (its MAC's pacing); `Collector`
// gathers the words the core gives into frames and reports every breach of
// the stream's rules; `cycle` is one cycle of the core between two paced
// MACs, with all three.

#ifndef ACKFILTER_CORE_STREAM_H
#define ACKFILTER_CORE_STREAM_H

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace core_stream {

constexpr int kResetCycles = 4;
constexpr int kRstLatency = 1;         // the core-replay top registers rst

// One clock cycle: the inputs settle with clk low, `sample` looks at the
// combinational handshake, then the rising edge.
template <class Top, class Sample>
void tick(Top* top, Sample&& sample) {
    top->clk = 0;
    top->eval();
    sample();
    top->clk = 1;
    top->eval();
}

// Every input to a known value, the reset, the wait for the core's free
// list of data cells (it takes no input while it builds it, a cell a
// cycle), then each (address, value) register write.
template <class Top>
void start(Top* top, const std::vector<std::pair<uint32_t, uint32_t>>& csr_writes) {
    auto nop = [] {};
    top->clk = 0;
    top->rst = 1;
    top->i_valid = 0; top->i_data = 0; top->i_keep = 0; top->i_first = 0; top->i_last = 0;
    top->o_ready = 0;
    top->now = 0;
    top->csr_addr = 0; top->csr_r_stb = 0; top->csr_w_stb = 0; top->csr_w_data = 0;
    top->eval();
    for (int i = 0; i < kResetCycles - kRstLatency; i++) tick(top, nop);
    top->rst = 0;
    for (int i = 0; i < 1 + kRstLatency; i++) tick(top, nop);
    for (int i = 0; i < 100000 && !top->i_ready; i++) tick(top, nop);
    for (auto [addr, val] : csr_writes) {
        top->csr_addr = addr; top->csr_w_data = val; top->csr_w_stb = 1;
        tick(top, nop);
        top->csr_w_stb = 0;
        tick(top, nop);
    }
    top->csr_addr = 0; top->csr_w_data = 0;
}

// One frame into the core's input stream.
struct Feeder {
    const std::vector<uint8_t>* bytes = nullptr;   // the frame being fed (nullptr: none)
    size_t word = 0;                               // the word to offer next
    size_t words = 0;

    bool busy() const { return bytes != nullptr; }

    // Start feeding `frame` (it must outlive the feeding).
    void start(const std::vector<uint8_t>& frame) {
        bytes = &frame;
        word = 0;
        words = (frame.size() + 3) / 4;
    }

    // The bytes of the frame's last word.
    unsigned last_word_bytes() const { return unsigned(bytes->size() - 4 * (words - 1)); }

    // Drive the core's i_* for this cycle: the next word when `offering`,
    // else nothing.
    template <class Top>
    void drive(Top* top, bool offering) const {
        if (!offering) {
            top->i_valid = 0; top->i_data = 0; top->i_keep = 0; top->i_first = 0; top->i_last = 0;
            return;
        }
        size_t off = 4 * word;
        size_t n = bytes->size() - off;
        if (n > 4) n = 4;
        uint32_t w = 0;
        for (size_t k = 0; k < n; k++) w |= uint32_t((*bytes)[off + k]) << (8 * k);
        top->i_valid = 1;
        top->i_data = w;
        top->i_keep = (1u << n) - 1;
        top->i_first = word == 0;
        top->i_last = word + 1 == words;
    }

    // The core took the word offered: true when it was the frame's last
    // (the feeder is then free again).
    bool took() {
        bool last = ++word == words;
        if (last) bytes = nullptr;
        return last;
    }
};

// The core's output stream, gathered into frames.
struct Collector {
    bool open = false;                 // a frame has begun and not ended
    uint64_t start = 0;                // the cycle of its first word
    std::vector<uint8_t> bytes;        // its bytes so far (all of them once it ended)

    // The word the core gives at cycle `now` (o_valid and o_ready both high):
    // true when it ended a frame. `error(what)` is called for each breach:
    // a frame starting without o_first, o_first inside a frame, a partial
    // o_keep before the last word, an o_keep that is not a prefix.
    template <class Top, class Error>
    bool take(const Top* top, uint64_t now, Error error) {
        bool first = top->o_first, last = top->o_last;
        uint32_t keep = top->o_keep, d = top->o_data;
        if (!open) {
            if (!first) error("frame starts without o_first");
            open = true;
            start = now;
            bytes.clear();
        } else if (first) {
            error("o_first inside a frame");
        }
        if (!last && keep != 0xf) error("partial o_keep on a word that is not last");
        if (keep != 0x1 && keep != 0x3 && keep != 0x7 && keep != 0xf)
            error("o_keep is not 0001/0011/0111/1111");
        for (int k = 0; k < 4; k++)
            if (keep & (1u << k)) bytes.push_back(uint8_t(d >> (8 * k)));
        if (last) open = false;
        return last;
    }
};

// One cycle of the core at cycle `now` between two paced MACs (`in_mac`,
// `out_mac`: wire::Pacer): the feeder's word offered when `offering`, the
// output taken when the egress MAC is ready, the clock edge, and the words
// that moved told to the MACs. At the edge, `frame_in()` when a frame's
// last word went in, `frame_out()` when `col` holds a whole frame (its
// `start` and `bytes`), `error(what)` for a breach of the output's rules,
// and `sample()` for whatever else the caller samples there.
template <class Top, class Mac, class Error, class In, class Out, class Sample>
void cycle(Top* top, uint64_t now, bool offering, Feeder& feed, Collector& col, Mac& in_mac, Mac& out_mac,
           Error&& error, In&& frame_in, Out&& frame_out, Sample&& sample) {
    top->now = now;
    feed.drive(top, offering);
    top->o_ready = now >= out_mac.due();
    tick(top, [&] {
        if (offering && top->i_ready) {
            unsigned last_bytes = feed.last_word_bytes();
            bool last = feed.took();
            in_mac.moved(now, last, last_bytes);
            if (last) frame_in();
        }
        if (top->o_valid && top->o_ready) {
            unsigned keep = top->o_keep;
            bool last = col.take(top, now, error);
            if (last) frame_out();
            out_mac.moved(now, last, unsigned(__builtin_popcount(keep)));
        }
        sample();
    });
}

}  // namespace core_stream

#endif
