// Real-time bridge: the Verilated uplink core between two TAP devices, for
// real Linux TCP through the RTL (docs/experiments.md).
//
//   LAN TAP (client namespace) --uplink--> [ core | modem FIFO ] -> modem link -> delay -> WAN TAP
//   LAN TAP <- delay <- loss <- downlink FIFO at the downlink rate <--downlink-- WAN TAP (server namespace)
//
// Usage:
//   bridge --lan NETNS:TAP --wan NETNS:TAP [options]
// Options:
//   --csr ADDR=VALUE         core register write after reset (repeatable)
//   --uplink core|fifo       the uplink path: the core (default), or the
//                            modem's own FIFO without the core (--up-queue)
//   --up-rate BPS            modem link rate (the serializer after the core; the
//                            FIFO's rate); the core's shaper is set by --csr
//   --up-queue PACKETS       FIFO limit of the `fifo` uplink (default 10)
//   --down-rate BPS          downlink rate (default 10000000)
//   --down-queue PACKETS     downlink FIFO limit (default 10)
//   --overhead BYTES         bytes added to each frame's length (as stored,
//                            without FCS) when a link charges it (default 0)
//   --up-delay-us N, --down-delay-us N   one-way delays (default 25000 each)
//   --loss P                 independent loss of downlink packets, 0..1
//   --ge TG_US:TB_US[:PG:PB] Gilbert-Elliott downlink loss: a continuous-time
//                            two-state chain with mean sojourns TG/TB in µs,
//                            loss probability PG in the good and PB in the bad
//                            state (default 0 and 1)
//   --seed N                 loss random seed (default 1)
//   --late-us N              a frame written more than N µs after it was due
//                            counts as late (`*_late_frames`; default 1000)
//   --stats-s S              a `status` line on stderr every S seconds (default 1)
//   --wake-lead-us N         end a sleep N us before a frame is due and wait the rest
//                            awake (default 50)
//   --realtime               run both threads as SCHED_FIFO tasks (root), so a loaded
//                            machine does not delay them (they sleep whenever there is
//                            nothing to do, the I/O thread but for the wake lead before
//                            a frame is due)
//
// Time: the core's `now` follows the wall clock. While the core has work the
// simulation runs as fast as it can and falls behind the wall clock (the lag);
// when it is idle, `now` jumps forward to the wall clock (or to when the
// shaper next wakes, if that is earlier) and the bridge sleeps. A frame read
// from the LAN TAP arrives at the cycle of its wall-clock read time; the TAP is
// read at least every kPollCycles simulated cycles. A frame leaving the core
// at cycle c is put on the modem link at wall time c / F_SYS; it is written
// to the WAN TAP one serialization and one delay later. So the lag changes
// nothing as long as it stays below the one-way delay; the bridge records the
// largest lag, how late any frame was written and how many were late
// (--late-us), and the caller marks a run invalid past its bounds
// (bridge.py, validity_bounds).
//
// Threads: the simulation thread reads the LAN TAP and runs the core; the
// I/O thread reads the WAN TAP and writes every frame of both links when it
// is due, so neither the writes nor the work Linux does inside them (the
// receiving TCP's) take the simulation's time.
//
// Writing on time: the I/O thread sleeps (ppoll on the WAN TAP and a wake-up
// from the simulation) until the wake lead before the next frame is due and
// waits the rest awake, going round its loop, so the latency of a timer
// wake-up does not make a write late. How late each frame is, is read on the
// clock at its write.
//
// Stdout: `ready` once both TAPs are open and the core is reset and
// programmed; at the end (SIGINT, SIGTERM or end of stdin) `key value` lines:
// counters of both directions, the lag figures, every CSR word.
// Exit status: 0 ok, 1 usage or I/O error.

#include "Vackfilter_core.h"
#include "ackfilter_regs.h"
#include "core_stream.h"
#include "verilated.h"
#include "wire_pace.h"

#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

constexpr double kFsys = ACKFILTER_F_SYS_HZ;
constexpr uint64_t kPollCycles = 256;      // read the TAPs at least this often
constexpr uint64_t kInGapCycles = 20;      // between two input frames (see in_mac)
constexpr int64_t kMaxSleepNs = 5000000;   // and sleep at most this long at a time
constexpr size_t kMinFrame = 60;           // a MAC pads shorter frames
constexpr size_t kMaxFrame = 2048;

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

[[noreturn]] void die(const char* fmt, const char* arg = "") {
    std::fprintf(stderr, "error: ");
    std::fprintf(stderr, fmt, arg);
    std::fprintf(stderr, "\n");
    std::exit(1);
}

int64_t mono_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

double parse_double(const char* s, const char* what) {
    char* end = nullptr;
    errno = 0;
    double v = std::strtod(s, &end);
    if (errno || !end || *end || end == s || !std::isfinite(v)) die("bad number for %s", what);
    return v;
}

uint64_t parse_u64(const char* s, const char* what) {
    char* end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(s, &end, 0);
    if (errno || !end || *end || end == s) die("bad number for %s", what);
    return v;
}

// Open TAP `name` inside network namespace `ns` (/var/run/netns/NS).
int open_tap(const std::string& spec) {
    size_t colon = spec.find(':');
    if (colon == std::string::npos) die("a TAP is NETNS:NAME, not %s", spec.c_str());
    std::string ns = spec.substr(0, colon), name = spec.substr(colon + 1);
    if (name.empty() || name.size() >= IFNAMSIZ) die("bad TAP name in %s", spec.c_str());
    int home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (home < 0) die("cannot open /proc/self/ns/net");
    int target = open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
    if (target < 0) die("no network namespace %s (ip netns add it first)", ns.c_str());
    if (setns(target, CLONE_NEWNET) != 0) die("setns into %s failed (root needed)", ns.c_str());
    int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) die("cannot open /dev/net/tun (root needed)");
    ifreq ifr{};
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
    std::strncpy(ifr.ifr_name, name.c_str(), IFNAMSIZ - 1);
    if (ioctl(fd, TUNSETIFF, &ifr) != 0) die("TUNSETIFF %s failed", spec.c_str());
    if (setns(home, CLONE_NEWNET) != 0) die("setns back failed");
    close(home);
    close(target);
    return fd;
}

struct Frame {
    int64_t t_ns = 0;            // wall time (ns since the start) it is due
    std::vector<uint8_t> bytes;
};

// A link: a FIFO of `limit` packets (0 = unlimited) served at `rate` bit/s,
// then a one-way delay, then written to a TAP. Loss is applied as a packet
// leaves the FIFO. Release times are monotonic, so a deque is the delay line.
struct Link {
    const char* name = "";
    double rate_bps = 0;         // 0: no serialization
    size_t limit = 0;
    int overhead = 0;
    int64_t delay_ns = 0;
    int fd = -1;
    std::deque<int64_t> finishes;     // serialization ends of packets in the FIFO
    int64_t free_at = 0;              // the serializer's next free time
    std::atomic<int64_t> busy_until{0};  // free_at, for the other thread's status line
    // The delay line, frames and their release times: filled by the thread
    // that offers (the simulation's, for the uplink), emptied by the I/O
    // thread; `m` guards it.
    std::mutex m;
    std::deque<Frame> line;
    // figures
    uint64_t in_frames = 0, in_bytes = 0, drops = 0, lost = 0;
    uint64_t out_frames = 0, out_bytes = 0, charged_bytes = 0, first_charged = 0;
    int64_t first_out_ns = -1, last_out_ns = -1;
    int64_t late_ns = 1000000;        // a frame written more than this after due is late
    int64_t max_late_ns = 0, max_late_at_ns = 0;
    uint64_t late_frames = 0;
    uint64_t write_errors = 0;
    int write_errno = 0;              // of the last failed write (0: a short write)

    // Per wall-clock second: pure TCP ACKs (IPv4, no payload), other frames, their bytes.
    struct Second { uint64_t acks = 0, others = 0, other_bytes = 0; };
    std::vector<Second> series;
    void count(int64_t t, const std::vector<uint8_t>& b) {
        size_t sec = size_t(std::max<int64_t>(0, t) / 1000000000);
        if (series.size() <= sec) series.resize(sec + 1);
        bool ack = false;
        if (b.size() >= 54 && b[12] == 0x08 && b[13] == 0x00 && b[23] == 6) {
            size_t ihl = 4u * (b[14] & 0xf), total = (size_t(b[16]) << 8) | b[17];
            if (14 + ihl + 13 < b.size()) {
                size_t doff = 4u * (b[14 + ihl + 12] >> 4);
                ack = total == ihl + doff;
            }
        }
        if (ack) series[sec].acks++;
        else { series[sec].others++; series[sec].other_bytes += b.size(); }
    }

    int64_t ser_ns(size_t len) const {
        if (rate_bps <= 0) return 0;
        double charged = std::max(0.0, double(len) + overhead);
        return int64_t(std::llround(charged * 8e9 / rate_bps));
    }
    // Offer a frame at `t`; returns false if the FIFO was full (tail drop).
    // `lose(t)` decides loss after the queue.
    template <class Lose>
    bool offer(int64_t t, std::vector<uint8_t>&& bytes, Lose&& lose) {
        in_frames++;
        in_bytes += bytes.size();
        while (!finishes.empty() && finishes.front() <= t) finishes.pop_front();
        if (limit && finishes.size() >= limit) { drops++; return false; }
        int64_t start = std::max(t, free_at);
        int64_t fin = start + ser_ns(bytes.size());
        free_at = fin;
        busy_until.store(fin, std::memory_order_relaxed);
        finishes.push_back(fin);
        if (lose(start)) { lost++; return true; }
        std::lock_guard<std::mutex> g(m);
        line.push_back(Frame{fin + delay_ns, std::move(bytes)});
        return true;
    }
    // When the next frame is due (INT64_MAX: none waits).
    int64_t next_due() {
        std::lock_guard<std::mutex> g(m);
        return line.empty() ? INT64_MAX : line.front().t_ns;
    }
    // Write every frame that is due, reading `clock()` before each write (a
    // frame's lateness includes the writes before it).
    template <class Clock>
    void release(Clock&& clock) {
        for (;;) {
            int64_t t = clock();
            Frame f;
            {
                std::lock_guard<std::mutex> g(m);
                if (line.empty() || line.front().t_ns > t) break;
                f = std::move(line.front());
                line.pop_front();
            }
            int64_t late = t - f.t_ns;
            if (late > max_late_ns) { max_late_ns = late; max_late_at_ns = t; }
            if (late > late_ns) late_frames++;
            ssize_t n = write(fd, f.bytes.data(), f.bytes.size());
            if (n != ssize_t(f.bytes.size())) { write_errors++; write_errno = n < 0 ? errno : 0; }
            out_frames++;
            out_bytes += f.bytes.size();
            count(t, f.bytes);
            uint64_t charged = uint64_t(std::max(0, int(f.bytes.size()) + overhead));
            charged_bytes += charged;
            if (first_out_ns < 0) { first_out_ns = t; first_charged = charged; }
            last_out_ns = t;
        }
    }
    size_t pending() {
        std::lock_guard<std::mutex> g(m);
        return line.size();
    }
};

// Downlink loss: independent (p) and/or Gilbert-Elliott (continuous time).
struct Loss {
    std::mt19937_64 rng{1};
    double p = 0;
    bool ge = false;
    double tg_ns = 0, tb_ns = 0, pg = 0, pb = 1;
    bool bad = false;
    int64_t switch_at = -1;
    uint64_t bad_periods = 0;
    double uniform() { return std::uniform_real_distribution<double>(0.0, 1.0)(rng); }
    double expo(double mean) { return std::exponential_distribution<double>(1.0 / mean)(rng); }
    bool operator()(int64_t t) {
        bool lost = false;
        if (ge) {
            if (switch_at < 0) switch_at = int64_t(expo(tg_ns));
            while (t >= switch_at) {
                bad = !bad;
                if (bad) bad_periods++;
                switch_at += std::max<int64_t>(1, int64_t(expo(bad ? tb_ns : tg_ns)));
            }
            lost = uniform() < (bad ? pb : pg);
        }
        if (!lost && p > 0) lost = uniform() < p;
        return lost;
    }
};

struct Nolose { bool operator()(int64_t) const { return false; } };

}  // namespace

int main(int argc, char** argv) {
    std::string lan_spec, wan_spec;
    std::vector<std::pair<uint32_t, uint32_t>> csr_writes;
    bool use_core = true;
    Link up, down;
    up.name = "up"; down.name = "down";
    up.limit = 10; down.limit = 10;
    down.rate_bps = 10e6;
    up.delay_ns = down.delay_ns = 25000000;
    Loss loss;
    double stats_s = 1.0;
    int overhead = 0;
    int64_t late_ns = 1000000;
    int64_t wake_lead_ns = 50000;      // end a sleep this long before a frame is due
    bool realtime = false;

    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto need = [&](const char* opt) -> const char* {
            if (i + 1 >= argc) die("%s needs a value", opt);
            return argv[++i];
        };
        if (a == "--lan") lan_spec = need("--lan");
        else if (a == "--wan") wan_spec = need("--wan");
        else if (a == "--csr") {
            std::string kv = need("--csr");
            size_t eq = kv.find('=');
            if (eq == std::string::npos) die("--csr wants ADDR=VALUE, not %s", kv.c_str());
            uint64_t addr = parse_u64(kv.substr(0, eq).c_str(), "--csr address");
            uint64_t val = parse_u64(kv.substr(eq + 1).c_str(), "--csr value");
            if (addr > 0xff || val > 0xffffffffull) die("--csr out of range: %s", kv.c_str());
            csr_writes.emplace_back(uint32_t(addr), uint32_t(val));
        } else if (a == "--uplink") {
            std::string m = need("--uplink");
            if (m == "core") use_core = true;
            else if (m == "fifo") use_core = false;
            else die("--uplink is core or fifo, not %s", m.c_str());
        } else if (a == "--up-rate") up.rate_bps = parse_double(need(a.c_str()), "--up-rate");
        else if (a == "--down-rate") down.rate_bps = parse_double(need(a.c_str()), "--down-rate");
        else if (a == "--up-queue") up.limit = parse_u64(need(a.c_str()), "--up-queue");
        else if (a == "--down-queue") down.limit = parse_u64(need(a.c_str()), "--down-queue");
        else if (a == "--overhead") overhead = int(parse_double(need(a.c_str()), "--overhead"));
        else if (a == "--up-delay-us") up.delay_ns = int64_t(parse_u64(need(a.c_str()), a.c_str())) * 1000;
        else if (a == "--down-delay-us") down.delay_ns = int64_t(parse_u64(need(a.c_str()), a.c_str())) * 1000;
        else if (a == "--loss") {
            loss.p = parse_double(need("--loss"), "--loss");
            if (loss.p < 0 || loss.p > 1) die("--loss must be 0..1");
        } else if (a == "--ge") {
            std::string s = need("--ge");
            double v[4] = {0, 0, 0, 1};
            int n = 0;
            size_t pos = 0;
            while (n < 4) {
                size_t c = s.find(':', pos);
                v[n++] = parse_double(s.substr(pos, c - pos).c_str(), "--ge");
                if (c == std::string::npos) break;
                pos = c + 1;
            }
            if (n < 2 || v[0] <= 0 || v[1] <= 0 || v[2] < 0 || v[2] > 1 || v[3] < 0 || v[3] > 1)
                die("--ge wants TG_US:TB_US[:PG:PB], sojourns > 0, probabilities 0..1, not %s", s.c_str());
            loss.ge = true;
            loss.tg_ns = v[0] * 1e3; loss.tb_ns = v[1] * 1e3; loss.pg = v[2]; loss.pb = v[3];
        } else if (a == "--seed") loss.rng.seed(parse_u64(need("--seed"), "--seed"));
        else if (a == "--late-us") late_ns = int64_t(parse_u64(need(a.c_str()), a.c_str())) * 1000;
        else if (a == "--wake-lead-us") wake_lead_ns = int64_t(parse_u64(need(a.c_str()), a.c_str())) * 1000;
        else if (a == "--realtime") realtime = true;
        else if (a == "--stats-s") stats_s = parse_double(need("--stats-s"), "--stats-s");
        else if (a == "-h" || a == "--help") {
            std::printf("usage: %s --lan NETNS:TAP --wan NETNS:TAP [--csr ADDR=VALUE]... "
                        "[--uplink core|fifo] [--up-rate BPS] [--up-queue N] [--down-rate BPS] "
                        "[--down-queue N] [--overhead BYTES] [--up-delay-us N] [--down-delay-us N] "
                        "[--loss P] [--ge TG_US:TB_US[:PG:PB]] [--seed N] [--late-us N] [--stats-s S] "
                        "[--wake-lead-us N] [--realtime]\n", argv[0]);
            return 0;
        } else die("unknown argument %s", a.c_str());
    }
    if (lan_spec.empty() || wan_spec.empty()) die("--lan NETNS:TAP and --wan NETNS:TAP are required");
    if (!use_core && up.rate_bps <= 0) die("--uplink fifo needs --up-rate");
    up.overhead = down.overhead = overhead;
    up.late_ns = down.late_ns = late_ns;
    if (use_core) up.limit = 0;        // the core is the queue; the link only serializes

    if (realtime) {
        sched_param sp{};
        sp.sched_priority = 10;
        if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0)
            std::fprintf(stderr, "warning: --realtime: SCHED_FIFO refused (%s); running as a normal task\n",
                         std::strerror(errno));
    }
    // Stop with the process that started us, even if it is killed outright:
    // the TAPs (and with them the links) go away with the bridge.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() == 1) die("parent exited before the bridge started");
    int lan_fd = open_tap(lan_spec);
    int wan_fd = open_tap(wan_spec);
    up.fd = wan_fd;
    down.fd = lan_fd;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGPIPE, SIG_IGN);
    fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);

    auto ctx = std::make_unique<VerilatedContext>();
    auto top = std::make_unique<Vackfilter_core>(ctx.get(), "ackfilter_core");
    core_stream::start(top.get(), csr_writes);
    auto tick = [&](auto&& sample) { core_stream::tick(top.get(), sample); };
    auto nop = [] {};

    std::printf("ready\n");
    std::fflush(stdout);

    const int64_t t0 = mono_ns();
    auto wall = [&] { return mono_ns() - t0; };
    auto to_cycles = [](int64_t ns) { return uint64_t(double(ns) * kFsys / 1e9); };
    auto to_ns = [](uint64_t cyc) { return int64_t(double(cyc) * 1e9 / kFsys); };

    // Two threads. The simulation thread (this one) reads the LAN TAP, runs
    // the core and puts what it emits on the uplink's delay line. The I/O
    // thread reads the WAN TAP into the downlink and writes every frame of
    // both links when it is due: the writes, and the receiving stack's work
    // that Linux does inside them, stay off the simulation's time. The
    // simulation thread wakes the I/O thread (`wake`, an eventfd) when the
    // uplink's delay line was empty, since a frame's release time is later
    // than every one before it.
    int wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake < 0) die("eventfd failed");
    std::atomic<bool> stop{false};
    auto stopping = [&] { return g_stop || stop.load(std::memory_order_relaxed); };
    // Figures both threads update or the status line reads.
    std::atomic<uint64_t> lan_read{0};
    std::atomic<int64_t> max_lag_ns{0};
    int64_t max_read_ns = 0, max_read_at_ns = 0;             // simulation thread (LAN TAP)
    int64_t io_max_read_ns = 0, io_max_read_at_ns = 0;       // I/O thread (WAN TAP)

    std::thread io([&] {
        std::vector<uint8_t> buf(kMaxFrame + 64);
        double next_stats = stats_s;
        int64_t max_write_ns = 0, max_write_at_ns = 0, max_oversleep_ns = 0;
        uint64_t wan_read = 0;
        auto stdin_closed = [&] {
            char c[64];
            ssize_t n = read(0, c, sizeof c);
            return n == 0;
        };
        while (!stopping()) {
            int64_t t_write = wall();
            up.release(wall);
            down.release(wall);
            int64_t t = wall();
            for (int k = 0; k < 64; k++) {
                ssize_t n = read(wan_fd, buf.data(), buf.size());
                if (n <= 0) break;
                wan_read++;
                std::vector<uint8_t> b(buf.begin(), buf.begin() + n);
                if (b.size() < kMinFrame) b.resize(kMinFrame, 0);
                down.offer(t, std::move(b), loss);
            }
            int64_t t_read = wall();
            if (t - t_write > max_write_ns) { max_write_ns = t - t_write; max_write_at_ns = t_write; }
            if (t_read - t > io_max_read_ns) { io_max_read_ns = t_read - t; io_max_read_at_ns = t; }
            if (t / 1e9 >= next_stats) {
                next_stats += stats_s;
                if (stdin_closed()) { stop = true; break; }
                std::fprintf(stderr, "status %.1f lag_max_ms %.3f up_in %" PRIu64 " up_out %" PRIu64
                             " down_in %" PRIu64 " down_drop %" PRIu64 " down_lost %" PRIu64
                             " up_backlog_ms %.3f down_backlog_ms %.3f\n",
                             t / 1e9, max_lag_ns.load() / 1e6, lan_read.load(), up.out_frames, wan_read,
                             down.drops, down.lost,
                             std::max<int64_t>(0, up.busy_until.load(std::memory_order_relaxed) - t) / 1e6,
                             std::max<int64_t>(0, down.free_at - t) / 1e6);
                std::fflush(stderr);
            }
            // Sleep until wake_lead_ns before the next frame is due, the WAN TAP
            // has a frame, the uplink gets one, or a status line is due; within
            // wake_lead_ns of a frame, wait awake (go round), so that a timer's
            // wake-up latency does not make the write late.
            int64_t t_now = wall();
            int64_t due_ns = std::min(up.next_due(), down.next_due());
            if (due_ns != INT64_MAX && due_ns - t_now <= wake_lead_ns) continue;
            int64_t until_ns = std::min({due_ns == INT64_MAX ? INT64_MAX : due_ns - wake_lead_ns,
                                         int64_t(std::llround(next_stats * 1e9)), t_now + kMaxSleepNs});
            int64_t sleep_ns = until_ns - t_now;
            if (sleep_ns > 0) {
                pollfd fds[2] = {{wan_fd, POLLIN, 0}, {wake, POLLIN, 0}};
                timespec ts{time_t(sleep_ns / 1000000000), long(sleep_ns % 1000000000)};
                int r = ppoll(fds, 2, &ts, nullptr);
                if (r == 0) {
                    int64_t over = wall() - t_now - sleep_ns;
                    if (over > max_oversleep_ns) max_oversleep_ns = over;
                }
                if (r > 0 && (fds[1].revents & POLLIN)) {
                    uint64_t v;
                    if (read(wake, &v, sizeof v) < 0) { /* nothing to clear */ }
                }
            }
        }
        stop = true;
        // This thread's figures (the main thread prints the rest after join()).
        std::printf("wan_read %" PRIu64 "\n", wan_read);
        std::printf("max_oversleep_ms %.6f\n", max_oversleep_ns / 1e6);
        std::printf("max_write_ms %.6f\n", max_write_ns / 1e6);       // writing the frames due, once
        std::printf("max_write_at_s %.6f\n", max_write_at_ns / 1e9);
    });

    // The uplink gets a frame; wake the I/O thread if its delay line was empty.
    auto to_uplink = [&](int64_t t, std::vector<uint8_t>&& b) {
        bool was_idle = up.next_due() == INT64_MAX;
        up.offer(t, std::move(b), Nolose{});
        if (was_idle) {
            uint64_t one = 1;
            if (write(wake, &one, sizeof one) < 0) { /* already signalled */ }
        }
    };

    // Core input and output: a word a cycle, and kInGapCycles between two
    // input frames (wire_pace.h). Faster than the board's 1 Gb/s MACs for a
    // frame of more than 70 bytes (a 1514-byte frame enters in 399 cycles,
    // 8 us, and leaves in 379 where the wire takes 615 each way), never for
    // a minimum frame (35 cycles, the wire 33.6), so the core never gets
    // frames faster than a gigabit LAN sends them. The microseconds gained
    // change nothing a host can tell on links of 10 Mb/s and less, and
    // they are the simulation's time: a 10 Mb/s upload needs 0.6 million
    // cycles a second this way and 1 million at the wire's pace, more than
    // the simulation has (docs/experiments.md, "Time").
    wire::Pacer in_mac(wire::Pace::whole_words(1, kInGapCycles), /*catch_up=*/true);
    wire::Pacer out_mac(wire::Pace::whole_words(1, 0), /*catch_up=*/false);
    std::deque<Frame> lan_in;          // frames read from the LAN TAP, t_ns = read time
    uint64_t now = 0;
    Frame cur;                         // the frame being fed (while feed.busy())
    core_stream::Feeder feed;
    core_stream::Collector col;
    uint64_t protocol_errors = 0, core_in = 0, core_out = 0, events = 0, overruns = 0;
    uint64_t oversize_in = 0;
    // Lag: wall clock minus simulated time while the core has work.
    uint64_t lag_hist[8] = {0};        // batches of cycles by lag: <0.1, <0.3, <1, <3, <10, <30, <100 ms, more
    uint64_t ticks = 0, jumps = 0;
    int64_t max_batch_ns = 0;

    std::vector<uint8_t> buf(kMaxFrame + 64);
    auto read_lan = [&](int64_t t) {
        for (int k = 0; k < 64; k++) {
            ssize_t n = read(lan_fd, buf.data(), buf.size());
            if (n <= 0) break;
            lan_read++;
            std::vector<uint8_t> b(buf.begin(), buf.begin() + n);
            if (b.size() < kMinFrame) b.resize(kMinFrame, 0);
            if (b.size() > kMaxFrame) { oversize_in++; continue; }
            if (use_core) lan_in.push_back(Frame{t, std::move(b)});
            else to_uplink(t, std::move(b));
        }
    };

    uint64_t since_poll = 0;
    while (!stopping()) {
        int64_t t = wall();
        read_lan(t);
        int64_t t_read = wall();
        if (t_read - t > max_read_ns) { max_read_ns = t_read - t; max_read_at_ns = t; }
        uint64_t wc = to_cycles(t);
        int64_t core_wake_ns = INT64_MAX;   // when the core, waiting, has work again
        if (use_core) {
            since_poll = 0;
            bool waiting = false;
            while (since_poll < kPollCycles) {
                if (!feed.busy() && !lan_in.empty()) {
                    uint64_t arr = to_cycles(lan_in.front().t_ns);
                    if (std::max(arr, in_mac.due()) <= now) {
                        cur = std::move(lan_in.front());
                        lan_in.pop_front();
                        in_mac.not_before(arr);
                        feed.start(cur.bytes);
                    }
                }
                bool offering = feed.busy() && now >= in_mac.due();
                if (!offering && !feed.busy() && top->idle && !col.open) {
                    uint64_t target = UINT64_MAX;
                    if (!lan_in.empty())
                        target = std::max(to_cycles(lan_in.front().t_ns), in_mac.due());
                    if (top->backlog && top->wake_at < target) target = top->wake_at;
                    if (target > now + 2) {
                        uint64_t to = std::min(target, std::max(wc, now));
                        if (to > now) { now = to; jumps++; }
                        if (now < target) {        // the core waits for the wall clock
                            waiting = true;
                            if (target != UINT64_MAX) core_wake_ns = to_ns(target);
                            break;
                        }
                        continue;
                    }
                }
                // The core has work: simulate one cycle.
                core_stream::cycle(top.get(), now, offering, feed, col, in_mac, out_mac,
                    [&](const char*) { protocol_errors++; },
                    [&] { core_in++; },
                    [&] {
                        core_out++;
                        to_uplink(to_ns(col.start), std::move(col.bytes));
                        col.bytes = std::vector<uint8_t>();
                    },
                    [&] {
                        if (top->ev_valid) events++;
                        if (top->ev_overrun) overruns++;
                    });
                now++;
                ticks++;
                since_poll++;
            }
            if (since_poll > 0) {           // the core had work: how far behind is it?
                int64_t t_end = wall();
                if (t_end - t > max_batch_ns) max_batch_ns = t_end - t;
                int64_t lag = t_end - to_ns(now);
                if (lag > max_lag_ns.load(std::memory_order_relaxed)) max_lag_ns = lag;
                double ms = lag / 1e6;
                int b = ms < 0.1 ? 0 : ms < 0.3 ? 1 : ms < 1 ? 2 : ms < 3 ? 3 : ms < 10 ? 4
                      : ms < 30 ? 5 : ms < 100 ? 6 : 7;
                lag_hist[b]++;
            }
            if (!waiting) continue;         // more work: read the LAN TAP, go on
        }
        // Nothing to do before the LAN TAP has a frame or the core wakes.
        int64_t t_now = wall();
        int64_t sleep_ns = std::min(core_wake_ns, t_now + kMaxSleepNs) - t_now;
        if (sleep_ns > 0) {
            pollfd fds[1] = {{lan_fd, POLLIN, 0}};
            timespec ts{time_t(sleep_ns / 1000000000), long(sleep_ns % 1000000000)};
            ppoll(fds, 1, &ts, nullptr);
        }
    }
    stop = true;
    io.join();
    close(wake);

    // Read the CSRs.
    top->i_valid = 0;
    top->o_ready = 1;
    std::vector<uint32_t> csr(ACKFILTER_CSR_LAST + 1);
    for (uint32_t addr = 0; addr <= ACKFILTER_CSR_LAST; addr++) {
        top->now = now; top->csr_addr = addr; top->csr_r_stb = 1;
        tick(nop);
        now++;
        top->now = now; top->csr_r_stb = 0;
        for (unsigned i = 1; i < ACKFILTER_CSR_READ_LATENCY; i++, now++) {
            tick(nop);
            top->now = now + 1;
        }
        tick([&] { csr[addr] = top->csr_r_data; });
        now++;
    }
    top->final();
    double run_s = wall() / 1e9;

    std::printf("run_s %.6f\n", run_s);
    std::printf("sim_s %.6f\n", now / kFsys);
    std::printf("ticks %" PRIu64 "\n", ticks);
    std::printf("jumps %" PRIu64 "\n", jumps);
    std::printf("max_lag_ms %.6f\n", max_lag_ns.load() / 1e6);
    std::printf("max_batch_ms %.6f\n", max_batch_ns / 1e6);
    if (io_max_read_ns > max_read_ns) { max_read_ns = io_max_read_ns; max_read_at_ns = io_max_read_at_ns; }
    std::printf("max_read_ms %.6f\n", max_read_ns / 1e6);          // reading a TAP, once
    std::printf("max_read_at_s %.6f\n", max_read_at_ns / 1e9);
    std::printf("lag_hist");
    for (auto h : lag_hist) std::printf(" %" PRIu64, h);
    std::printf("\n");
    std::printf("lan_read %" PRIu64 "\n", lan_read.load());
    std::printf("oversize_in %" PRIu64 "\n", oversize_in);
    std::printf("core_in %" PRIu64 "\n", core_in);
    std::printf("core_out %" PRIu64 "\n", core_out);
    std::printf("core_events %" PRIu64 "\n", events);
    std::printf("core_overruns %" PRIu64 "\n", overruns);
    std::printf("protocol_errors %" PRIu64 "\n", protocol_errors);
    for (Link* l : {&up, &down}) {
        std::printf("%s_in_frames %" PRIu64 "\n", l->name, l->in_frames);
        std::printf("%s_drops %" PRIu64 "\n", l->name, l->drops);
        std::printf("%s_lost %" PRIu64 "\n", l->name, l->lost);
        std::printf("%s_out_frames %" PRIu64 "\n", l->name, l->out_frames);
        std::printf("%s_out_bytes %" PRIu64 "\n", l->name, l->out_bytes);
        std::printf("%s_charged_bytes %" PRIu64 "\n", l->name, l->charged_bytes);
        std::printf("%s_first_charged %" PRIu64 "\n", l->name, l->first_charged);
        std::printf("%s_first_out_s %.6f\n", l->name, l->first_out_ns / 1e9);
        std::printf("%s_last_out_s %.6f\n", l->name, l->last_out_ns / 1e9);
        std::printf("%s_max_late_ms %.6f\n", l->name, l->max_late_ns / 1e6);
        std::printf("%s_late_frames %" PRIu64 "\n", l->name, l->late_frames);
        std::printf("%s_max_late_at_s %.6f\n", l->name, l->max_late_at_ns / 1e9);
        std::printf("%s_write_errors %" PRIu64 "\n", l->name, l->write_errors);
        std::printf("%s_write_errno %d\n", l->name, l->write_errno);
        std::printf("%s_pending %zu\n", l->name, l->pending());
        std::printf("%s_series", l->name);      // per second: acks,others,other_bytes
        for (auto& x : l->series)
            std::printf(" %" PRIu64 ",%" PRIu64 ",%" PRIu64, x.acks, x.others, x.other_bytes);
        std::printf("\n");
    }
    std::printf("ge_bad_periods %" PRIu64 "\n", loss.bad_periods);
    // Where the per-second series start, on CLOCK_MONOTONIC (Python's
    // time.monotonic() in every namespace): second k of a series is
    // [start_mono_s + k, start_mono_s + k + 1).
    std::printf("start_mono_s %.9f\n", t0 / 1e9);
    for (uint32_t addr = 0; addr <= ACKFILTER_CSR_LAST; addr++)
        std::printf("csr 0x%02x %u\n", addr, csr[addr]);
    std::fflush(stdout);
    return 0;
}
