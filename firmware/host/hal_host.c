/* fwhost: the firmware's logic on a PC, with hal.h simulated.
 *
 *   UART   stdin is the received bytes, stdout the sent ones. A line of the
 *          input starting with "%%" is a directive to fwhost, never passed to
 *          the firmware (see usage()).
 *   CSRs   an array; writes to a parameter are clamped to its range as the
 *          bank does; info words give the build's capacities, the ID and the
 *          RED average (--red-avg); 64-bit counters (--counter), whose low
 *          word latches the high word, as in the gateware; the board's
 *          registers with PHYs on MDIO (--phy).
 *   time   the timer advances 100 us per main-loop pass, 1 us per flash pin
 *          access and 1 cycle per read of itself (so busy-waits end);
 *          nothing else takes time. The UART receives at most one
 *          byte per pass, about its own rate (87 us a byte at 115200 baud),
 *          as from a sender that waits for each answer; with --uart-stream
 *          the bytes arrive at the UART's rate whatever the firmware does,
 *          into the SoC's receive FIFO, and a byte that finds it full is lost
 *          and marks the next one (UART_LOST), as the SoC's UART does.
 *   flash  the SPI commands the driver uses, decoded from the pin changes bit
 *          by bit (mode 0, MSB first) by the model the simulated SoC uses too
 *          (sim/common/spi_flash.c). Only the parameter sectors exist,
 *          backed by --flash FILE. Any protocol mistake is reported on stderr
 *          and makes fwhost exit with status 3. --flash-cut N cuts the power
 *          in the middle of the Nth erase or program (half of it done), and
 *          fwhost stops there with status 4; --flash-fail N makes the Nth
 *          never finish (busy for ever, nothing changed).
 *
 *   wdt    the firmware must kick the watchdog at least every
 *          ACKFILTER_SOC_WATCHDOG_CYCLES of simulated time, checked each
 *          main-loop pass; --restarts N is what its register reads.
 *
 * Exit status: 0, 2 for a usage error, 3 if the flash saw a protocol error,
 * 4 if the power was cut (--flash-cut), 5 if the watchdog ran out.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ackfilter_regs.h"
#include "ared.h"
#include "fw.h"
#include "hal.h"
#include "spi_flash.h"

#define CLK_HZ ACKFILTER_F_SYS_HZ
#define POLL_CYCLES (CLK_HZ / 10000u)      /* 100 us per main-loop pass */
#define PIN_CYCLES (CLK_HZ / 1000000u)     /* 1 us per flash pin access */

static uint64_t now;            /* simulated timer, cycles */
static uint64_t sleep_until;    /* %%sleep: no input before this */

static void die(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fwhost: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(status);
}

/* ---- CSR bank ---- */

#define SIM_PARAM(name, addr, width, is_signed, def, min, max, unit) \
    { addr, is_signed, def, min, max },
static const struct { uint32_t addr; int is_signed; int64_t def, min, max; } sim_params[] = {
    ACKFILTER_PARAMS(SIM_PARAM)
};
#define N_SIM_PARAMS (sizeof sim_params / sizeof sim_params[0])

#define SIM_COUNTER(name, addr_lo, is_drop) { #name, addr_lo },
static const struct { const char *name; uint32_t addr; } sim_counters[] = {
    ACKFILTER_COUNTERS(SIM_COUNTER)
};
#define N_SIM_COUNTERS (sizeof sim_counters / sizeof sim_counters[0])

static uint32_t param_words[N_SIM_PARAMS];
static uint64_t counter_values[N_SIM_COUNTERS];
static uint32_t hi_latch;
static uint32_t red_avg;

/* ---- the board's registers: PHYs on MDIO ---- */

/* --phy ADDR=ID puts a PHY at MDIO address ADDR: registers 2 and 3 its ID,
 * register 1 (BMSR) 0x796d (link up, autonegotiation complete), the rest 0;
 * the Realtek RTL8211F's page register (0x1f) selects page 0xd08 for
 * registers 0x10-0x1e, where 0x11 holds 0x0009 and 0x15 0x0019 at power-on
 * (TX delay off, RX delay on: its straps' internal pulls). */
#define N_PHY 32
static struct { int present; uint32_t id; uint16_t regs[32]; uint16_t d08[32]; } phys[N_PHY];
static uint32_t mdio_result;

static void add_phy(const char *spec)
{
    char *eq;
    unsigned long addr = strtoul(spec, &eq, 0);
    if (*eq != '=' || addr >= N_PHY)
        die(2, "--phy takes ADDR=ID with ADDR 0..31, not %s", spec);
    phys[addr].present = 1;
    phys[addr].id = (uint32_t)strtoul(eq + 1, NULL, 0);
    phys[addr].regs[1] = 0x796d;
    phys[addr].regs[2] = (uint16_t)(phys[addr].id >> 16);
    phys[addr].regs[3] = (uint16_t)phys[addr].id;
    phys[addr].d08[0x11] = 0x0009;
    phys[addr].d08[0x15] = 0x0019;
}

static uint16_t *phy_reg(unsigned a, unsigned reg)
{
    int paged = reg >= 0x10 && reg < 0x1f && phys[a].regs[0x1f] == 0x0d08;
    return paged ? &phys[a].d08[reg] : &phys[a].regs[reg];
}

static void mdio_frame(uint32_t cmd)
{
#define CMD(name) ((cmd >> ACKFILTER_MDIO_COMMAND_##name##_LSB) & \
                   ((1u << ACKFILTER_MDIO_COMMAND_##name##_WIDTH) - 1u))
    unsigned a = CMD(PHY), reg = CMD(REG);
    uint32_t data = 0xffff, no_phy = !phys[a].present;
    if (phys[a].present && CMD(WRITE)) {
        if (reg != 2 && reg != 3)          /* the ID is read-only */
            *phy_reg(a, reg) = (uint16_t)CMD(DATA);
        data = (mdio_result >> ACKFILTER_MDIO_RESULT_DATA_LSB) & 0xffffu;
    } else if (phys[a].present) {
        data = *phy_reg(a, reg);
    }
    uint32_t done = ((mdio_result >> ACKFILTER_MDIO_RESULT_DONE_LSB) + 1u) & 0xffu;
    mdio_result = data << ACKFILTER_MDIO_RESULT_DATA_LSB | no_phy << ACKFILTER_MDIO_RESULT_NO_PHY_LSB |
                  done << ACKFILTER_MDIO_RESULT_DONE_LSB;
#undef CMD
}

static uint32_t board_read(uint32_t addr, int *found)
{
    *found = 1;
    for (unsigned n = 0; n < 2; n++) {
        if (addr == ACKFILTER_BOARD_PHY0_STATUS + n)   /* present, and one poll round done */
            return (uint32_t)phys[n].present << ACKFILTER_PHY_PRESENT_LSB | 1u << ACKFILTER_PHY_POLLS_LSB;
        if (addr == ACKFILTER_BOARD_PHY0_ID + n)
            return phys[n].present ? phys[n].id : 0xffffffffu;
    }
    if (addr == ACKFILTER_BOARD_MDIO_RESULT)
        return mdio_result;
    *found = addr >= ACKFILTER_BOARD_LAN_LINK && addr <= ACKFILTER_BOARD_MDIO_COMMAND;
    return 0;
}

uint32_t csr_read(uint32_t addr)
{
    int board;
    uint32_t b = board_read(addr, &board);
    if (board)
        return b;
    for (unsigned i = 0; i < N_SIM_PARAMS; i++)
        if (sim_params[i].addr == addr)
            return param_words[i];
    for (unsigned i = 0; i < N_SIM_COUNTERS; i++) {
        if (sim_counters[i].addr == addr) {
            hi_latch = (uint32_t)(counter_values[i] >> 32);
            return (uint32_t)counter_values[i];
        }
        if (sim_counters[i].addr + 1u == addr)
            return hi_latch;
    }
    switch (addr) {
    case ACKFILTER_CSR_INFO_ID: return ACKFILTER_ID_VALUE;
    case ACKFILTER_CSR_INFO_ACK_SLOTS: return ACKFILTER_DEFAULT_ACK_SLOTS;
    case ACKFILTER_CSR_INFO_FLOW_ENTRIES: return ACKFILTER_DEFAULT_FLOW_ENTRIES;
    case ACKFILTER_CSR_INFO_DATA_BUFFER_BYTES: return ACKFILTER_DEFAULT_DATA_BUFFER_BYTES;
    case ACKFILTER_CSR_INFO_RED_AVG_BYTES: return red_avg;
    default: return 0;   /* the live levels, and every unused address */
    }
}

/* As the bank: the word read as signed 32 bits for a signed parameter,
 * clamped to min..max, read back sign-extended. */
/* --csr-trace FILE: every write to a parameter, "0xADDR 0xVALUE" a line. */
static const char *trace_path;
static FILE *trace;

static void trace_restart(void)
{
    if (trace)
        fclose(trace);
    trace = trace_path ? fopen(trace_path, "w") : NULL;
    if (trace_path && !trace)
        die(2, "%s: cannot write", trace_path);
}

void csr_write(uint32_t addr, uint32_t value)
{
    if (addr == ACKFILTER_BOARD_MDIO_COMMAND)
        mdio_frame(value);
    for (unsigned i = 0; i < N_SIM_PARAMS; i++) {
        if (sim_params[i].addr != addr)
            continue;
        if (trace) {
            fprintf(trace, "0x%02" PRIx32 " 0x%08" PRIx32 "\n", addr, value);
            fflush(trace);
        }
        int64_t v = sim_params[i].is_signed ? (int64_t)(int32_t)value : (int64_t)value;
        if (v < sim_params[i].min)
            v = sim_params[i].min;
        if (v > sim_params[i].max)
            v = sim_params[i].max;
        param_words[i] = (uint32_t)v;
    }
}

static void set_counter(const char *name, const char *value)
{
    for (unsigned i = 0; i < N_SIM_COUNTERS; i++) {
        if (strcmp(sim_counters[i].name, name) == 0) {
            counter_values[i] = strtoull(value, NULL, 0);
            return;
        }
    }
    die(2, "no counter '%s'", name);
}

/* ---- timer, ids ---- */

/* ---- watchdog ---- */

static unsigned restarts;        /* --restarts: what the register reads */
static uint64_t last_kick;

void watchdog_kick(void) { last_kick = now; }
unsigned watchdog_restarts(void) { return restarts; }

/* The firmware must kick it in time, whatever it does: fwhost fails if not
   (checked every main-loop pass and timer read). */
static void watchdog_check(void)
{
    if (now - last_kick > ACKFILTER_SOC_WATCHDOG_CYCLES) {
        fflush(stdout);
        die(5, "watchdog: not kicked for %" PRIu64 " ms (it restarts the CPU after %u ms)",
            (now - last_kick) / (CLK_HZ / 1000u), ACKFILTER_SOC_WATCHDOG_CYCLES / (CLK_HZ / 1000u));
    }
}

uint64_t timer_cycles(void)
{
    watchdog_check();
    return now++;
}
uint32_t sys_clk_hz(void) { return CLK_HZ; }
uint32_t soc_id(void) { return ACKFILTER_SOC_ID_VALUE; }

/* ---- UART ---- */

static char in_line[4096];
static size_t in_len, in_pos;
static int in_eof, at_line_start = 1;
static int byte_this_pass;      /* one byte per main-loop pass */

/* --uart-stream: the bytes on their way, and the receive FIFO. */
#define BYTE_CYCLES (CLK_HZ / (ACKFILTER_SOC_UART_BAUD / 10u))   /* 10 bits a byte */
#define FIFO_DEPTH ACKFILTER_SOC_UART_RX_FIFO_DEPTH
static int uart_stream;
static uint64_t next_arrival;
static int rx_fifo[FIFO_DEPTH];
static unsigned rx_head, rx_count;
static int rx_lost;

static int next_input_byte(void);

static void directive(char *s)
{
    char *word = strtok(s, " \t\r\n"), *a = strtok(NULL, " \t\r\n"), *b = strtok(NULL, " \t\r\n");
    if (word && a && strcmp(word, "sleep") == 0)
        sleep_until = (uart_stream ? next_arrival : now) + strtoull(a, NULL, 0) * (CLK_HZ / 1000u);
    else if (word && a && b && strcmp(word, "counter") == 0)
        set_counter(a, b);
    else if (word && a && strcmp(word, "red-avg") == 0)
        red_avg = (uint32_t)strtoul(a, NULL, 0);
    else if (word && strcmp(word, "csr-trace") == 0)
        trace_restart();
    else
        die(2, "unknown directive '%%%%%s'", word ? word : "");
}


/* Every byte that has arrived by now, into the FIFO or lost. */
static void uart_arrivals(void)
{
    while (next_arrival <= now) {
        int c = next_input_byte();
        if (c < 0)
            return;
        if (rx_count == FIFO_DEPTH) {
            rx_lost = 1;
        } else {
            rx_fifo[(rx_head + rx_count++) % FIFO_DEPTH] = c | (rx_lost ? UART_LOST : 0);
            rx_lost = 0;
        }
        next_arrival += BYTE_CYCLES;
    }
}

int uart_getc(void)
{
    if (uart_stream) {
        uart_arrivals();
        if (rx_count == 0)
            return -1;
        int c = rx_fifo[rx_head];
        rx_head = (rx_head + 1) % FIFO_DEPTH;
        rx_count--;
        return c;
    }
    if (byte_this_pass)
        return -1;
    byte_this_pass = 1;
    int c = next_input_byte();
    if (c < 0)
        byte_this_pass = 0;
    return c;
}

/* The next byte of the input, -1 if none (yet: %%sleep, or at its end). */
static int next_input_byte(void)
{
    while (in_pos == in_len) {
        if (in_eof || now < sleep_until)
            return -1;
        fflush(stdout);                 /* before blocking for more input */
        if (!fgets(in_line, sizeof in_line, stdin)) {
            in_eof = 1;
            return -1;
        }
        in_len = strlen(in_line);
        in_pos = 0;
        int was_start = at_line_start;
        at_line_start = in_len > 0 && in_line[in_len - 1] == '\n';
        if (was_start && strncmp(in_line, "%%", 2) == 0) {
            directive(in_line + 2);
            in_len = 0;
        }
    }
    if (uart_stream && next_arrival < sleep_until)
        next_arrival = sleep_until;       /* the sender waited */
    return (unsigned char)in_line[in_pos++];
}

void uart_putc(char c) { putchar(c); }

/* ---- SPI flash: sim/common/spi_flash.c ---- */

static struct spi_flash fl;
static const char *flash_file;    /* --flash */
static int flash_absent;          /* --no-flash */

void flash_set(int cs_n, int sck, int di)
{
    now += PIN_CYCLES;
    if (flash_absent)
        return;
    spi_flash_pins(&fl, now, cs_n, sck, di);
    if (fl.dirty && flash_file) {                 /* written back on every erase and program */
        const char *why = spi_flash_save(&fl, flash_file);
        if (why)
            die(2, "%s: %s", flash_file, why);
    }
    if (fl.cut) {
        fflush(stdout);
        fprintf(stderr, "fwhost: power cut in flash write %u (command 0x%02x at 0x%06x)\n",
                fl.writes, fl.cmd, (unsigned)(fl.addr & 0xffffffu));
        exit(4);
    }
}

int flash_get_do(void)
{
    now += PIN_CYCLES;
    return flash_absent ? 1 : spi_flash_do(&fl);
}

/* ---- main ---- */

static void usage(FILE *out)
{
    fputs("usage: fwhost [options] < input\n"
          "Runs the ackfilter firmware's main loop: stdin is the UART's input, stdout its output.\n"
          "  --flash FILE          the flash's parameter sectors (8192 bytes; absent: erased;\n"
          "                        written back on every erase and program)\n"
          "  --no-flash            no flash answers (its DO stays high)\n"
          "  --flash-wp            the flash ignores erase and program (write-protected)\n"
          "  --flash-cut N         the power fails halfway through the Nth erase or program\n"
          "                        (from 1): fwhost stops with status 4\n"
          "  --flash-fail N        the Nth erase or program never finishes (busy for ever)\n"
          "  --restarts N          the watchdog's restart count (N > 0: this boot is a restart)\n"
          "  --csr-trace FILE      every write to a parameter register, a line each\n"
          "  --uart-stream         input bytes arrive at the UART's rate into its FIFO, lost\n"
          "                        when it is full, whether the firmware reads or not\n"
          "  --red-avg N           info word red_avg_bytes (RED's average), default 0\n"
          "  --counter NAME=VALUE  a counter's value (repeatable)\n"
          "  --phy ADDR=ID         a PHY at MDIO address ADDR with that identifier (repeatable)\n"
          "  --ared-step           instead: read 'AVG MIN MAX MAXP' lines, print ared_step()\n"
          "Input lines starting with %% are fwhost's, not the firmware's:\n"
          "  %%sleep MS            MS ms of simulated time pass (the main loop runs)\n"
          "  %%counter NAME VALUE  set a counter\n"
          "  %%red-avg N           set RED's average\n"
          "  %%csr-trace           start --csr-trace's file again (empty)\n"
          "Time: 100 us per main-loop pass, 1 us per flash pin access, 1 cycle per\n"
          "timer read; the UART receives at most one byte per pass.\n", out);
}

static int ared_steps(void)
{
    uint32_t avg, min, max, max_p;
    while (scanf("%" SCNu32 " %" SCNu32 " %" SCNu32 " %" SCNu32, &avg, &min, &max, &max_p) == 4)
        printf("%" PRIu32 "\n", ared_step(avg, min, max, max_p));
    return 0;
}

int main(int argc, char **argv)
{
    spi_flash_init(&fl, CLK_HZ, "fwhost");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        if (strcmp(a, "--flash") == 0 && has_value) {
            flash_file = argv[++i];
        } else if (strcmp(a, "--no-flash") == 0) {
            flash_absent = 1;
        } else if (strcmp(a, "--flash-wp") == 0) {
            fl.write_protected = 1;
        } else if (strcmp(a, "--flash-cut") == 0 && has_value) {
            fl.cut_at = (unsigned)strtoul(argv[++i], NULL, 0);
        } else if (strcmp(a, "--flash-fail") == 0 && has_value) {
            fl.fail_at = (unsigned)strtoul(argv[++i], NULL, 0);
        } else if (strcmp(a, "--restarts") == 0 && has_value) {
            restarts = (unsigned)strtoul(argv[++i], NULL, 0);
        } else if (strcmp(a, "--csr-trace") == 0 && has_value) {
            trace_path = argv[++i];
        } else if (strcmp(a, "--uart-stream") == 0) {
            uart_stream = 1;
        } else if (strcmp(a, "--red-avg") == 0 && has_value) {
            red_avg = (uint32_t)strtoul(argv[++i], NULL, 0);
        } else if (strcmp(a, "--counter") == 0 && has_value) {
            char *eq = strchr(argv[++i], '=');
            if (!eq)
                die(2, "--counter takes NAME=VALUE, not %s", argv[i]);
            *eq = 0;
            set_counter(argv[i], eq + 1);
        } else if (strcmp(a, "--phy") == 0 && has_value) {
            add_phy(argv[++i]);
        } else if (strcmp(a, "--ared-step") == 0) {
            return ared_steps();
        } else if (strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    for (unsigned i = 0; i < N_SIM_PARAMS; i++)
        param_words[i] = (uint32_t)sim_params[i].def;   /* the bank's reset values */
    const char *why = flash_file ? spi_flash_load(&fl, flash_file) : NULL;
    if (why)
        die(2, "%s: %s", flash_file, why);
    trace_restart();

    fw_boot();
    while (!in_eof || now < sleep_until || rx_count > 0) {
        watchdog_check();
        fw_poll();
        now += POLL_CYCLES;
        byte_this_pass = 0;
    }
    fflush(stdout);
    if (fl.errors) {
        fprintf(stderr, "fwhost: %u flash protocol error(s)\n", fl.errors);
        return 3;
    }
    return 0;
}
