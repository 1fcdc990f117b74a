// Fast replay harness: runs the Verilog `ackfilter_core` (docs/spec.md section 8)
// on a frame file, with no Python in the per-cycle loop.
//
// Usage:
//   replay IN OUT [--events EVFILE] [--csr ADDR=VALUE]... [--max-cycles N]
//                 [--csr-read-last ADDR] [--progress-s SECONDS]
//                 [--mbps 10|100|1000] [--in-cycles-per-word N --in-gap N]
//
// File formats (all integers little-endian):
//   IN     records [u64 arrival_cycle][u32 len][len bytes], arrival_cycle counted
//          from the start of traffic (cycle 0 = the `now` value of the first
//          traffic cycle).
//   OUT    records [u64 start_cycle][u32 len][len bytes], one per frame leaving
//          o_*, start_cycle = `now` when its first word was transferred.
//   EVFILE records [u64 cycle][u8 kind]: kind = ev_kind for ev_valid,
//          ACKFILTER_EVENT_OVERRUN (15) for ev_overrun (both may happen in the same cycle; the event comes first).
//
// Stdout at the end, one item per line:
//   csr <addr> <value>     every word 0x00..csr-read-last (default
//                          ACKFILTER_CSR_LAST of the generated register map
//                          firmware/include/ackfilter_regs.h, the parameter
//                          table's last address),
//                          read in address order (counter low word, then high)
//   cycles <n>             `now` when traffic was over
//   frames_in <n>          frames fed to i_*
//   frames_out <n>         frames taken from o_*
//   events <n>             records written to EVFILE (counted even without it)
//   protocol_errors <n>    stream rule violations seen on o_* (details on stderr)
//   wallclock_s <x>        wall time of reset + traffic + CSR reads
// Stderr: `progress <frames_in> <frames_out> <cycle>` about once a second,
// `warning: ...` lines, and `error: ...` before a non-zero exit.
//
// Timing model:
//   * reset: rst high for 4 cycles; `now` is held at 0 through reset and the
//     CSR writes, then counts 0, 1, 2, ... from the first traffic cycle
//     (the top is gen_verilog's `core-replay`, which registers rst on its
//     way into the core, so rst is driven one cycle less and the core still
//     sees 4 reset cycles);
//   * both MACs run at exactly 1 Gb/s, or at `--mbps` (10 or 100)
//     (sim/common/wire_pace.h): a byte is F_SYS / 125 MHz cycles at 1 Gb/s
//     (ACKFILTER_F_SYS_HZ; 0.4 at 50 MHz, 0.5 at 62.5 MHz), 10 or 100 times that, a frame of L bytes takes L + 24 byte times (FCS, preamble,
//     IFG), kept exactly as a cycle and a fraction; a word moves in the first
//     cycle at or after its wire time, never earlier;
//   * input (1 Gb/s MAC): a frame starts on the wire at max(arrival_cycle, the
//     previous frame's wire end); word k of it is due 4k byte times after its
//     start and is offered (i_valid) from its due cycle until the core takes it
//     (i_ready); a late word does not delay the words after it (the MAC's
//     bytes keep coming), a late last word moves the wire end with it;
//     `--in-cycles-per-word N --in-gap M` instead offers a word every N cycles
//     and M cycles more after a frame's last word (faster than line rate:
//     `--in-cycles-per-word 1 --in-gap 0` offers words back to back);
//   * output (1 Gb/s MAC): o_ready is high from the cycle the wire is free for
//     the next word (4 byte times after a word, its bytes + 24 after a
//     frame's last word), counted from the word's wire time, or from the cycle
//     it moved in if the core was late with it;
//   * fast-forward: when the core reports `idle`, no input word is offered and
//     the next input frame is more than 2 cycles away, `now` jumps to
//     min(next frame start, wake_at if backlog) (never backwards);
//   * end: all input fed, idle, no backlog and no output frame open; after 16
//     more cycles the condition is checked again, then the CSRs are read.
//     --max-cycles N: exit 3 if `now` passes N first.
// Exit status: 0 ok, 1 I/O or usage error, 3 max-cycles exceeded.

#include "Vackfilter_core.h"
#include "ackfilter_regs.h"
#include "core_stream.h"
#include "verilated.h"
#include "wire_pace.h"

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr uint64_t kDrainCycles = 16;
constexpr uint8_t kOverrunKind = ACKFILTER_EVENT_OVERRUN;

[[noreturn]] void die(const char* fmt, const char* arg = "") {
    std::fprintf(stderr, "error: ");
    std::fprintf(stderr, fmt, arg);
    std::fprintf(stderr, "\n");
    std::exit(1);
}

void put_u64(std::vector<uint8_t>& b, uint64_t v) {
    for (int i = 0; i < 8; i++) b.push_back(uint8_t(v >> (8 * i)));
}
void put_u32(std::vector<uint8_t>& b, uint32_t v) {
    for (int i = 0; i < 4; i++) b.push_back(uint8_t(v >> (8 * i)));
}

struct Frame {
    uint64_t arrival = 0;
    std::vector<uint8_t> bytes;
};

// Reads IN one record at a time (files may be larger than memory is happy with).
class FrameReader {
  public:
    explicit FrameReader(const char* path) : path_(path) {
        f_ = std::fopen(path, "rb");
        if (!f_) die("cannot open input file %s", path);
        std::setvbuf(f_, nullptr, _IOFBF, 1 << 20);
    }
    ~FrameReader() { if (f_) std::fclose(f_); }
    // false at a clean end of file; dies on a truncated record.
    bool next(Frame& fr) {
        uint8_t hdr[12];
        size_t n = std::fread(hdr, 1, sizeof hdr, f_);
        if (n == 0) return false;
        if (n != sizeof hdr) die("truncated record header in %s", path_);
        uint64_t arrival = 0;
        uint32_t len = 0;
        for (int i = 0; i < 8; i++) arrival |= uint64_t(hdr[i]) << (8 * i);
        for (int i = 0; i < 4; i++) len |= uint32_t(hdr[8 + i]) << (8 * i);
        if (len == 0) die("zero-length frame in %s", path_);
        fr.arrival = arrival;
        fr.bytes.resize(len);
        if (std::fread(fr.bytes.data(), 1, len, f_) != len) die("truncated frame in %s", path_);
        return true;
    }
  private:
    const char* path_;
    FILE* f_ = nullptr;
};

class Writer {
  public:
    explicit Writer(const char* path) {
        f_ = std::fopen(path, "wb");
        if (!f_) die("cannot create %s", path);
        std::setvbuf(f_, nullptr, _IOFBF, 1 << 20);
    }
    ~Writer() { close(); }
    void write(const std::vector<uint8_t>& b) {
        if (!b.empty() && std::fwrite(b.data(), 1, b.size(), f_) != b.size()) die("write error");
    }
    void close() {
        if (f_ && std::fclose(f_) != 0) die("write error on close");
        f_ = nullptr;
    }
  private:
    FILE* f_ = nullptr;
};

uint64_t parse_u64(const char* s, const char* what) {
    char* end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(s, &end, 0);
    if (errno || !end || *end || end == s) die("bad number for %s", what);
    return v;
}

double wall_now() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
    const char* in_path = nullptr;
    const char* out_path = nullptr;
    const char* ev_path = nullptr;
    uint64_t max_cycles = UINT64_MAX;
    uint64_t link_mbps = 1000;               // both MACs' rate: 10, 100 or 1000 Mb/s
    uint64_t in_cycles_per_word = 0;   // 0: the input MAC at 1 Gb/s
    uint64_t in_gap = UINT64_MAX;
    uint32_t csr_read_last = ACKFILTER_CSR_LAST;
    double progress_s = 1.0;
    std::vector<std::pair<uint32_t, uint32_t>> csr_writes;

    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto need = [&](const char* opt) -> const char* {
            if (i + 1 >= argc) die("%s needs a value", opt);
            return argv[++i];
        };
        if (a == "--events") {
            ev_path = need("--events");
        } else if (a == "--max-cycles") {
            max_cycles = parse_u64(need("--max-cycles"), "--max-cycles");
        } else if (a == "--csr-read-last") {
            csr_read_last = uint32_t(parse_u64(need("--csr-read-last"), "--csr-read-last"));
            if (csr_read_last > 0xff) die("--csr-read-last must be <= 0xff");
        } else if (a == "--mbps") {
            link_mbps = parse_u64(need("--mbps"), "--mbps");
            if (link_mbps != 10 && link_mbps != 100 && link_mbps != 1000) die("--mbps must be 10, 100 or 1000");
        } else if (a == "--in-cycles-per-word") {
            in_cycles_per_word = parse_u64(need("--in-cycles-per-word"), "--in-cycles-per-word");
            if (in_cycles_per_word < 1 || in_cycles_per_word > 64) die("--in-cycles-per-word must be 1..64");
        } else if (a == "--in-gap") {
            in_gap = parse_u64(need("--in-gap"), "--in-gap");
            if (in_gap > 1000000) die("--in-gap must be <= 1000000");
        } else if (a == "--progress-s") {
            progress_s = std::atof(need("--progress-s"));
        } else if (a == "--csr") {
            std::string kv = need("--csr");
            size_t eq = kv.find('=');
            if (eq == std::string::npos) die("--csr wants ADDR=VALUE, not %s", kv.c_str());
            uint64_t addr = parse_u64(kv.substr(0, eq).c_str(), "--csr address");
            uint64_t val = parse_u64(kv.substr(eq + 1).c_str(), "--csr value");
            if (addr > 0xff || val > 0xffffffffull) die("--csr out of range: %s", kv.c_str());
            csr_writes.emplace_back(uint32_t(addr), uint32_t(val));
        } else if (a == "-h" || a == "--help") {
            std::printf("usage: %s IN OUT [--events EVFILE] [--csr ADDR=VALUE]... "
                        "[--max-cycles N] [--csr-read-last ADDR] [--progress-s S] "
                        "[--mbps 10|100|1000] [--in-cycles-per-word N --in-gap N]\n", argv[0]);
            return 0;
        } else if (!a.empty() && a[0] == '-') {
            die("unknown option %s", a.c_str());
        } else if (!in_path) {
            in_path = argv[i];
        } else if (!out_path) {
            out_path = argv[i];
        } else {
            die("unexpected argument %s", a.c_str());
        }
    }
    if (!in_path || !out_path) die("usage: replay IN OUT [options] (see --help)");
    if ((in_cycles_per_word == 0) != (in_gap == UINT64_MAX))
        die("--in-cycles-per-word and --in-gap go together");
    const wire::Pace line = wire::Pace::line_rate(ACKFILTER_F_SYS_HZ, link_mbps * 125000);
    wire::Pacer in_mac(in_cycles_per_word ? wire::Pace::whole_words(in_cycles_per_word, in_gap) : line,
                       /*catch_up=*/true);
    wire::Pacer out_mac(line, /*catch_up=*/false);

    FrameReader reader(in_path);
    Writer out(out_path);
    std::unique_ptr<Writer> ev;
    if (ev_path) ev = std::make_unique<Writer>(ev_path);

    const double t_start = wall_now();
    auto ctx = std::make_unique<VerilatedContext>();
    auto top = std::make_unique<Vackfilter_core>(ctx.get(), "ackfilter_core");

    core_stream::start(top.get(), csr_writes);
    auto tick = [&](auto&& sample) { core_stream::tick(top.get(), sample); };
    auto nop = [] {};

    // ---- traffic ----------------------------------------------------------
    uint64_t now = 0;                 // `now` of the cycle being simulated
    // input side
    Frame cur;                        // frame being fed (while feed.busy())
    bool have_next = false;           // `next` holds an unread frame
    Frame next;
    core_stream::Feeder feed;
    uint64_t frames_in = 0;
    have_next = reader.next(next);
    // output side
    core_stream::Collector col;
    std::vector<uint8_t> out_buf;
    uint64_t frames_out = 0;
    uint64_t protocol_errors = 0;
    auto proto_error = [&](const char* what) {
        if (protocol_errors < 20)
            std::fprintf(stderr, "warning: output stream at cycle %" PRIu64 ": %s\n", now, what);
        protocol_errors++;
    };
    // events
    std::vector<uint8_t> ev_buf;
    uint64_t events = 0;
    // progress
    double next_progress = t_start + progress_s;
    uint64_t drain_until = 0;
    bool draining = false;
    uint64_t end_cycle = 0;

    // First cycle the next frame's first word may be offered.
    auto next_start = [&]() -> uint64_t {
        return next.arrival > in_mac.due() ? next.arrival : in_mac.due();
    };

    for (;;) {
        // Load the next frame when its time has come.
        if (!feed.busy() && have_next && next_start() <= now) {
            in_mac.not_before(next.arrival);
            std::swap(cur, next);
            feed.start(cur.bytes);
            have_next = reader.next(next);
        }
        bool offering = feed.busy() && now >= in_mac.due();

        // Fast-forward over idle time.
        if (!offering && !feed.busy() && top->idle && !col.open) {
            bool backlog = top->backlog;
            if (have_next || backlog) {
                uint64_t target = UINT64_MAX;
                if (have_next) target = next_start();
                if (backlog && top->wake_at < target) target = top->wake_at;
                if (target != UINT64_MAX && target > now + 2) {
                    now = target;
                    continue;   // re-evaluate: a frame may start right now
                }
            }
        }

        // End of traffic.
        bool quiet = !feed.busy() && !have_next && top->idle && !top->backlog && !col.open;
        if (quiet) {
            if (!draining) {
                draining = true;
                drain_until = now + kDrainCycles;
            } else if (now >= drain_until) {
                end_cycle = now;
                break;
            }
        } else {
            draining = false;
        }
        if (now > max_cycles) {
            std::fprintf(stderr, "error: --max-cycles %" PRIu64 " exceeded (frames in %" PRIu64
                         ", out %" PRIu64 ", idle %d, backlog %d)\n",
                         max_cycles, frames_in, frames_out, int(top->idle), int(top->backlog));
            out.close();
            return 3;
        }

        // This cycle.
        core_stream::cycle(top.get(), now, offering, feed, col, in_mac, out_mac, proto_error,
            [&] { frames_in++; },
            [&] {
                frames_out++;
                out_buf.clear();
                put_u64(out_buf, col.start);
                put_u32(out_buf, uint32_t(col.bytes.size()));
                out_buf.insert(out_buf.end(), col.bytes.begin(), col.bytes.end());
                out.write(out_buf);
            },
            [&] {
                if (top->ev_valid) {
                    events++;
                    if (ev) { put_u64(ev_buf, now); ev_buf.push_back(uint8_t(top->ev_kind)); }
                }
                if (top->ev_overrun) {
                    events++;
                    if (ev) { put_u64(ev_buf, now); ev_buf.push_back(kOverrunKind); }
                }
            });
        now++;

        if ((now & 0xffff) == 0) {
            if (ev && ev_buf.size() > (1 << 20)) { ev->write(ev_buf); ev_buf.clear(); }
            double t = wall_now();
            if (t >= next_progress) {
                std::fprintf(stderr, "progress %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
                             frames_in, frames_out, now);
                std::fflush(stderr);
                next_progress = t + progress_s;
            }
        }
    }
    if (ev) { ev->write(ev_buf); ev->close(); }
    out.close();

    // ---- CSR read-out -------------------------------------------------------
    top->i_valid = 0;
    top->o_ready = 1;
    std::vector<uint32_t> csr(csr_read_last + 1);
    for (uint32_t addr = 0; addr <= csr_read_last; addr++) {
        top->now = now;
        top->csr_addr = addr; top->csr_r_stb = 1;
        tick(nop);
        now++;
        top->now = now;
        top->csr_r_stb = 0;
        for (unsigned i = 1; i < ACKFILTER_CSR_READ_LATENCY; i++, now++) {
            tick(nop);
            top->now = now + 1;
        }
        tick([&] { csr[addr] = top->csr_r_data; });
        now++;
    }
    top->final();
    double wall = wall_now() - t_start;

    for (uint32_t addr = 0; addr <= csr_read_last; addr++)
        std::printf("csr 0x%02x %u\n", addr, csr[addr]);
    std::printf("cycles %" PRIu64 "\n", end_cycle);
    std::printf("frames_in %" PRIu64 "\n", frames_in);
    std::printf("frames_out %" PRIu64 "\n", frames_out);
    std::printf("events %" PRIu64 "\n", events);
    std::printf("protocol_errors %" PRIu64 "\n", protocol_errors);
    std::printf("wallclock_s %.6f\n", wall);
    return 0;
}
