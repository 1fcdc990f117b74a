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
//   * an SPI flash (W25Q32JV: 4 MiB, 4 KiB sectors, 256-byte pages) on the
//     flash pins, kept in --flash FILE when given (created erased), so saved
//     parameters survive a restart like on the board.
//
// Usage: soc_sim [--port N] [--frames-port N] [--flash FILE] [--max-seconds S]
//                [--uart-divisor N] [--log-uart]
// --log-uart writes every UART byte to stderr (`uart< 41` from the client,
// `uart> 41` from the SoC); SOC_SIM_DEBUG=1 in the environment adds the
// sockets' accepts, sends and closes.
// Prints `listening uart <port> frames <port>` on stdout once both listen,
// then `progress <cycles> <MHz simulated>` on stderr every 10 s. Exit: 0 at
// --max-seconds or SIGTERM/SIGINT, 1 on a usage or socket error.

#include "Vsoc_top.h"
#include "ackfilter_regs.h"
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

// --- SPI flash (mode 0, MSB first): W25Q32JV's commands the firmware uses ------------

struct Flash {
    static constexpr uint32_t kSize = 4u << 20;
    std::vector<uint8_t> mem = std::vector<uint8_t>(kSize, 0xFF);
    std::string path;
    bool dirty = false, wel = false;
    int busy_polls = 0;                 // status reads that still show WIP after a write
    // the transaction
    bool selected = false;
    int last_sck = 0;
    uint8_t in_byte = 0, out_byte = 0xFF;
    int in_bits = 0, out_bits = 0;
    std::vector<uint8_t> cmd;           // bytes received in this transaction
    uint32_t read_addr = 0;
    int do_line = 1;

    void load(const std::string& p) {
        path = p;
        FILE* f = std::fopen(p.c_str(), "rb");
        if (!f) return;                 // a new flash: erased
        size_t n = std::fread(mem.data(), 1, kSize, f);
        std::fclose(f);
        (void)n;
    }
    void save() {
        if (path.empty() || !dirty) return;
        std::string tmp = path + ".tmp";
        FILE* f = std::fopen(tmp.c_str(), "wb");
        if (!f) { std::fprintf(stderr, "warning: cannot write %s\n", tmp.c_str()); return; }
        std::fwrite(mem.data(), 1, kSize, f);
        std::fclose(f);
        std::rename(tmp.c_str(), path.c_str());
        dirty = false;
    }
    uint32_t addr24() const { return (cmd[1] << 16) | (cmd[2] << 8) | cmd[3]; }

    uint8_t next_out() {                // the byte shifted out after cmd.size() bytes in
        if (cmd.empty()) return 0xFF;
        switch (cmd[0]) {
        case 0x05: {                    // read status register 1
            uint8_t s = static_cast<uint8_t>((busy_polls > 0 ? 1 : 0) | (wel ? 2 : 0));
            if (busy_polls > 0) busy_polls--;
            return s;
        }
        case 0x9F: {                    // JEDEC ID: Winbond, W25Q32
            static const uint8_t id[3] = {0xEF, 0x40, 0x16};
            size_t i = cmd.size() - 1;
            return i < 3 ? id[i] : 0xFF;
        }
        case 0x03:
            if (cmd.size() < 4) return 0xFF;
            return mem[(read_addr++) % kSize];
        default: return 0xFF;
        }
    }

    void end_transaction() {
        if (cmd.empty()) return;
        uint8_t op = cmd[0];
        if (op == 0x06) wel = true;
        else if (op == 0x04) wel = false;
        else if (op == 0x20 && cmd.size() == 4 && wel && busy_polls == 0) {
            uint32_t a = addr24() & ~0xFFFu;
            std::memset(&mem[a % kSize], 0xFF, 4096);
            wel = false; dirty = true; busy_polls = 20;
        } else if (op == 0x02 && cmd.size() > 4 && wel && busy_polls == 0) {
            uint32_t a = addr24();
            for (size_t i = 4; i < cmd.size() && i < 4 + 256; i++) {
                uint32_t at = (a & ~0xFFu) | ((a + (i - 4)) & 0xFFu);   // wraps in the page
                mem[at % kSize] &= cmd[i];                               // only clears bits
            }
            wel = false; dirty = true; busy_polls = 3;
        }
        cmd.clear();
    }

    // One cycle of the pins; returns the flash's DO line.
    int tick(int cs_n, int sck, int di) {
        if (cs_n) {
            if (selected) end_transaction();
            selected = false; last_sck = sck; in_bits = 0; out_bits = 0; do_line = 1;
            return do_line;
        }
        if (!selected) {
            selected = true; in_bits = 0; out_bits = 0; cmd.clear(); out_byte = 0xFF;
        }
        if (sck && !last_sck) {                         // rising edge: sample DI
            in_byte = static_cast<uint8_t>((in_byte << 1) | (di & 1));
            if (++in_bits == 8) {
                in_bits = 0;
                cmd.push_back(in_byte);
                if (cmd[0] == 0x03 && cmd.size() == 4) read_addr = addr24();
                out_byte = next_out();
                out_bits = 0;
            }
        } else if (!sck && last_sck) {                  // falling edge: next DO bit
            do_line = (out_byte >> (7 - out_bits)) & 1;
            out_bits = (out_bits + 1) & 7;
        }
        last_sck = sck;
        return do_line;
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
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    signal(SIGPIPE, SIG_IGN);

    Server uart_srv, frame_srv;
    uart_srv.open(port, "uart");
    if (frames_port) frame_srv.open(frames_port, "frames");
    std::printf("listening uart %d frames %d\n", port, frames_port);
    std::fflush(stdout);

    Flash flash;
    if (!flash_path.empty()) flash.load(flash_path);
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
            if (flash.dirty && flash.cmd.empty() && !flash.selected) flash.save();
        }

        // UART and flash pins, this cycle.
        urx.tick();
        top->uart_rx = static_cast<uint8_t>(urx.line());
        uint8_t b;
        if (utx.sample(top->uart_tx, &b)) {
            uart_out.push_back(b);
            if (log_uart) std::fprintf(stderr, "uart> %02x\n", b);
        }
        top->flash_do = static_cast<uint8_t>(flash.tick(top->flash_cs_n, top->flash_sck, top->flash_di));

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
    flash.save();
    top->final();
    return 0;
}
