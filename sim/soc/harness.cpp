// Simulated SoC harness: runs `soc_top` (the control plane's CPU and firmware
// with the uplink core, hdl/ackfilter/soc/sim_top.py) in Verilator in real
// time as fast as it goes, and serves
//
//   * the UART on TCP port --port (default 2323): bytes from the client go
//     to the SoC's rx line, bytes the SoC sends go to the client, exactly as
//     a USB serial adapter on the board would pass them (one client at a
//     time; a new client replaces the old);
//   * the datapath's streams on TCP port --frames-port (default port + 1,
//     0 = off): the client sends records [u32 len][len bytes] (little-endian),
//     each fed to the core as a frame from a 1 Gb/s MAC as soon as the wire
//     is free; every frame the core sends back (to a 1 Gb/s MAC: both paced
//     exactly at the core's clock, sim/common/wire_pace.h) is returned as
//     [u64 start_cycle][u32 len][len bytes], start_cycle being `now` when its
//     first word left (the core's cycles, ACKFILTER_F_SYS_HZ);
//   * the board's SPI flash on the flash pins: the model fwhost uses
//     (sim/common/spi_flash.h: its parameter sectors, deep power-down at
//     power-on, busy times, every protocol mistake reported on stderr),
//     kept in --flash FILE when given (absent: erased; saved when the flash
//     is deselected after a write, and at the end), so saved parameters
//     survive a restart like on the board.
//
// Usage: soc_sim [--port N] [--frames-port N] [--flash FILE] [--max-seconds S]
//                [--uart-divisor N] [--log-uart]
// --log-uart writes every UART byte to stderr (`uart< 41` from the client,
// `uart> 41` from the SoC); SOC_SIM_DEBUG=1 in the environment adds the
// sockets' accepts, sends and closes.
// Prints `listening uart <port> frames <port>` on stdout once both listen,
// then `progress <cycles> <MHz simulated>` on stderr every 10 s. Exit: 0 at
// --max-seconds or SIGTERM/SIGINT, 1 on a usage, socket or flash file error,
// 3 if the flash saw a protocol error (each reported as it happens).

#include "Vsoc_top.h"
#include "ackfilter_regs.h"
#include "spi_flash.h"
#include "verilated.h"
#include "wire_pace.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace {

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

[[noreturn]] void die(const std::string& msg) {
    std::fprintf(stderr, "error: %s\n", msg.c_str());
    std::exit(1);
}

// --- a non-blocking TCP server with one client -------------------------------------

struct Server {
    int listen_fd = -1, fd = -1;
    std::string name;

    void open(int port, const char* what) {
        name = what;
        listen_fd = socket(AF_INET, SOCK_STREAM, 0);
        if (listen_fd < 0) die(std::string("socket: ") + std::strerror(errno));
        int one = 1;
        setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(static_cast<uint16_t>(port));
        if (bind(listen_fd, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0)
            die(std::string(what) + " port " + std::to_string(port) + ": " + std::strerror(errno));
        if (listen(listen_fd, 1) < 0) die(std::string("listen: ") + std::strerror(errno));
        fcntl(listen_fd, F_SETFL, O_NONBLOCK);
    }

    // Accept a new client (it replaces the old one). True if one arrived.
    bool poll_accept() {
        if (listen_fd < 0) return false;
        int c = accept(listen_fd, nullptr, nullptr);
        if (c < 0) return false;
        if (getenv("SOC_SIM_DEBUG")) std::fprintf(stderr, "debug: accept fd %d (old %d)\n", c, fd);
        if (fd >= 0) close(fd);
        fd = c;
        fcntl(fd, F_SETFL, O_NONBLOCK);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        return true;
    }

    void recv_into(std::deque<uint8_t>& q) {
        if (fd < 0) return;
        uint8_t buf[4096];
        for (;;) {
            ssize_t n = recv(fd, buf, sizeof buf, 0);
            if (n > 0) { q.insert(q.end(), buf, buf + n); continue; }
            if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
                if (getenv("SOC_SIM_DEBUG")) std::fprintf(stderr, "debug: recv fd %d: %zd %s\n", fd, n, std::strerror(errno));
                close(fd); fd = -1;
            }
            return;
        }
    }

    void send_from(std::deque<uint8_t>& q) {
        if (fd < 0) { q.clear(); return; }
        while (!q.empty()) {
            uint8_t buf[4096];
            size_t n = 0;
            while (n < sizeof buf && n < q.size()) { buf[n] = q[n]; n++; }
            ssize_t s = send(fd, buf, n, MSG_NOSIGNAL);
            if (s <= 0) {
                if (errno != EAGAIN && errno != EWOULDBLOCK) {
                    if (getenv("SOC_SIM_DEBUG")) std::fprintf(stderr, "debug: send fd %d failed: %s\n", fd, std::strerror(errno));
                    close(fd); fd = -1; q.clear();
                }
                return;
            }
            if (getenv("SOC_SIM_DEBUG")) std::fprintf(stderr, "debug: sent %zd to fd %d\n", s, fd);
            q.erase(q.begin(), q.begin() + s);
        }
    }
};

// --- UART, bit level, at `div` cycles a bit --------------------------------------------

struct UartRx {       // the harness drives the SoC's rx line
    uint32_t div;
    std::deque<uint8_t> bytes;
    int bit = -1;     // -1 idle, 0 start, 1..8 data, 9 stop
    uint32_t timer = 0;
    uint8_t cur = 0;
    int line() const {
        if (bit < 0 || bit == 9) return 1;
        if (bit == 0) return 0;
        return (cur >> (bit - 1)) & 1;
    }
    void tick() {
        if (bit < 0) {
            if (bytes.empty()) return;
            cur = bytes.front(); bytes.pop_front();
            bit = 0; timer = 0;
            return;
        }
        if (++timer == div) { timer = 0; bit = bit == 9 ? -1 : bit + 1; }
    }
};

struct UartTx {       // the harness listens to the SoC's tx line
    uint32_t div;
    int bit = -1;
    uint32_t timer = 0;
    uint8_t cur = 0;
    int last = 1;
    bool sample(int tx, uint8_t* out) {
        bool got = false;
        if (bit < 0) {
            if (last && !tx) { bit = 0; timer = div / 2; }
        } else if (--timer == 0) {
            timer = div;
            if (bit == 0) {
                if (tx) bit = -1;                  // a glitch
                else bit = 1;
            } else if (bit <= 8) {
                cur = static_cast<uint8_t>((cur >> 1) | (tx ? 0x80 : 0));
                bit++;
            } else {
                if (tx) { *out = cur; got = true; }
                bit = -1;
            }
        }
        last = tx;
        return got;
    }
};

uint32_t le32(const std::deque<uint8_t>& q, size_t at) {
    return q[at] | (q[at + 1] << 8) | (q[at + 2] << 16) | (static_cast<uint32_t>(q[at + 3]) << 24);
}

void put_le(std::deque<uint8_t>& q, uint64_t v, int n) {
    for (int i = 0; i < n; i++) q.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

}  // namespace

int main(int argc, char** argv) {
    int port = 2323, frames_port = -1;
    double max_seconds = 0;
    uint32_t divisor = 16;
    std::string flash_path;
    bool log_uart = false;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto val = [&]() -> std::string {
            if (i + 1 >= argc) die(a + " needs a value");
            return argv[++i];
        };
        if (a == "--port") port = std::atoi(val().c_str());
        else if (a == "--frames-port") frames_port = std::atoi(val().c_str());
        else if (a == "--flash") flash_path = val();
        else if (a == "--max-seconds") max_seconds = std::atof(val().c_str());
        else if (a == "--log-uart") log_uart = true;
        else if (a == "--uart-divisor") divisor = static_cast<uint32_t>(std::atoi(val().c_str()));
        else die("unknown option " + a + " (see the comment at the top of harness.cpp)");
    }
    if (port <= 0 || port > 65535) die("--port must be 1..65535");
    if (frames_port < 0) frames_port = port + 1;
    if (divisor < 4) die("--uart-divisor must be at least 4");
    static spi_flash flash;             // 8 KiB: not on the stack
    spi_flash_init(&flash, ACKFILTER_F_SYS_HZ, "soc_sim");
    auto save_flash = [&]() {
        if (flash_path.empty() || !flash.dirty) return;
        if (const char* why = spi_flash_save(&flash, flash_path.c_str()))
            std::fprintf(stderr, "warning: %s: %s\n", flash_path.c_str(), why);
    };
    if (!flash_path.empty())
        if (const char* why = spi_flash_load(&flash, flash_path.c_str())) die(flash_path + ": " + why);
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    signal(SIGPIPE, SIG_IGN);

    Server uart_srv, frame_srv;
    uart_srv.open(port, "uart");
    if (frames_port) frame_srv.open(frames_port, "frames");
    std::printf("listening uart %d frames %d\n", port, frames_port);
    std::fflush(stdout);

    UartRx urx{divisor};
    UartTx utx{divisor};
    std::deque<uint8_t> uart_out, frames_in_raw, frames_out_raw;

    auto ctx = std::make_unique<VerilatedContext>();
    auto top = std::make_unique<Vsoc_top>(ctx.get());
    top->clk = 0; top->rst = 1; top->uart_rx = 1; top->flash_do = 1; top->o_ready = 1;
    top->eval();

    uint64_t cycle = 0;
    auto tick = [&]() {
        top->clk = 1; top->eval();
        top->clk = 0; top->eval();
        cycle++;
        top->now = cycle;
    };
    for (int i = 0; i < 4; i++) tick();
    top->rst = 0;

    // Input frame being fed: words of the current frame; both MACs at 1 Gb/s,
    // paced as the replay harness's.
    const wire::Pace line = wire::Pace::line_rate(ACKFILTER_F_SYS_HZ);
    wire::Pacer in_mac(line, /*catch_up=*/true), out_mac(line, /*catch_up=*/false);
    std::vector<uint8_t> cur;
    size_t cur_word = 0;
    bool feeding = false;
    // Output frame being collected.
    std::vector<uint8_t> out;
    uint64_t out_start = 0;

    auto start = std::chrono::steady_clock::now();
    auto last_progress = start;
    uint64_t last_cycles = 0;
    while (!g_stop) {
        // Sockets and wall time, every 4096 cycles.
        if ((cycle & 4095) == 0) {
            if (uart_srv.poll_accept()) {
                urx.bytes.clear();
                if (log_uart) std::fprintf(stderr, "uart: client connected at cycle %" PRIu64 "\n", cycle);
            }
            size_t before = urx.bytes.size();
            uart_srv.recv_into(urx.bytes);
            if (log_uart)
                for (size_t k = before; k < urx.bytes.size(); k++) std::fprintf(stderr, "uart< %02x\n", urx.bytes[k]);
            uart_srv.send_from(uart_out);
            if (frames_port) {
                if (frame_srv.poll_accept()) { frames_in_raw.clear(); frames_out_raw.clear(); }
                frame_srv.recv_into(frames_in_raw);
                frame_srv.send_from(frames_out_raw);
            }
            auto now = std::chrono::steady_clock::now();
            double run_s = std::chrono::duration<double>(now - start).count();
            if (max_seconds > 0 && run_s >= max_seconds) break;
            if (std::chrono::duration<double>(now - last_progress).count() >= 10) {
                double mhz = (cycle - last_cycles) /
                             std::chrono::duration<double>(now - last_progress).count() / 1e6;
                std::fprintf(stderr, "progress %" PRIu64 " %.2f\n", cycle, mhz);
                last_progress = now; last_cycles = cycle;
            }
            if (spi_flash_idle(&flash)) save_flash();
        }

        // UART and flash pins, this cycle.
        urx.tick();
        top->uart_rx = static_cast<uint8_t>(urx.line());
        uint8_t b;
        if (utx.sample(top->uart_tx, &b)) {
            uart_out.push_back(b);
            if (log_uart) std::fprintf(stderr, "uart> %02x\n", b);
        }
        spi_flash_pins(&flash, cycle, top->flash_cs_n, top->flash_sck, top->flash_di);
        top->flash_do = static_cast<uint8_t>(spi_flash_do(&flash));

        // Input: a new frame when a record is complete; its first word when
        // the wire is free (and not before the frame is here).
        if (!feeding && frames_in_raw.size() >= 4) {
            uint32_t len = le32(frames_in_raw, 0);
            if (len == 0 || len > 16384) {
                std::fprintf(stderr, "warning: frame record of %u bytes dropped\n", len);
                frames_in_raw.erase(frames_in_raw.begin(), frames_in_raw.begin() + 4);
            } else if (frames_in_raw.size() >= 4 + len) {
                cur.assign(frames_in_raw.begin() + 4, frames_in_raw.begin() + 4 + len);
                frames_in_raw.erase(frames_in_raw.begin(), frames_in_raw.begin() + 4 + len);
                feeding = true; cur_word = 0; in_mac.not_before(cycle);
            }
        }
        if (feeding && cycle >= in_mac.due()) {
            size_t nwords = (cur.size() + 3) / 4;
            uint32_t data = 0, keep = 0;
            for (int k = 0; k < 4; k++) {
                size_t at = cur_word * 4 + k;
                if (at < cur.size()) { data |= static_cast<uint32_t>(cur[at]) << (8 * k); keep |= 1u << k; }
            }
            top->i_valid = 1; top->i_data = data; top->i_keep = static_cast<uint8_t>(keep);
            top->i_first = cur_word == 0; top->i_last = cur_word + 1 == nwords;
        } else {
            top->i_valid = 0;
        }
        // Output: 1 Gb/s pacing.
        top->o_ready = cycle >= out_mac.due();
        top->eval();
        bool in_taken = top->i_valid && top->i_ready;
        bool out_taken = top->o_valid && top->o_ready;
        uint32_t o_data = top->o_data, o_keep = top->o_keep;
        bool o_first = top->o_first, o_last = top->o_last;
        const uint64_t moved_at = cycle;                // `now` of the transfers
        tick();
        if (in_taken) {
            size_t nwords = (cur.size() + 3) / 4;
            cur_word++;
            bool last = cur_word == nwords;
            in_mac.moved(moved_at, last, static_cast<unsigned>(cur.size() - 4 * (nwords - 1)));
            if (last) feeding = false;
        }
        if (out_taken) {
            if (o_first) { out.clear(); out_start = moved_at; }
            for (int k = 0; k < 4; k++)
                if (o_keep & (1u << k)) out.push_back(static_cast<uint8_t>(o_data >> (8 * k)));
            out_mac.moved(moved_at, o_last, static_cast<unsigned>(__builtin_popcount(o_keep)));
            if (o_last && frames_port && frame_srv.fd >= 0) {
                put_le(frames_out_raw, out_start, 8);
                put_le(frames_out_raw, out.size(), 4);
                frames_out_raw.insert(frames_out_raw.end(), out.begin(), out.end());
            }
        }
    }
    save_flash();
    top->final();
    if (flash.errors) {
        std::fprintf(stderr, "soc_sim: %u flash protocol error(s)\n", flash.errors);
        return 3;
    }
    return 0;
}
