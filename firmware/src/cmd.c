/* The commands of the UART protocol (firmware/README.md describes each). */
#include "cmd.h"
#include "ared.h"
#include "cli.h"
#include "flash.h"
#include "fw.h"
#include "ackfilter_regs.h"
#include "hal.h"
#include "lib.h"
#include "params.h"
#include "phy.h"
#include "print.h"
#include "store.h"

/* ---- counters and info words, from ackfilter_regs.h ---- */

#define COUNTER_ROW(name, addr_lo, is_drop) { #name, addr_lo },
static const struct { const char *name; uint8_t addr; } counters[] = {
    ACKFILTER_COUNTERS(COUNTER_ROW)
};
#define N_COUNTERS (sizeof counters / sizeof counters[0])
static uint64_t baseline[N_COUNTERS];   /* taken by reset-counters */

#define INFO_ROW(name, addr) { #name, addr },
/* The board's words print as info words too: info.board_lan_link ... */
#define BOARD_ROW(suffix) { "BOARD_" #suffix, ACKFILTER_BOARD_##suffix },
static const struct { const char *name; uint8_t addr; } infos[] = {
    ACKFILTER_INFO(INFO_ROW)
    BOARD_ROW(LAN_LINK) BOARD_ROW(MODEM_LINK) BOARD_ROW(PHY0_STATUS) BOARD_ROW(PHY1_STATUS)
    BOARD_ROW(PHY0_ID) BOARD_ROW(PHY1_ID)
};

static uint64_t counter_read(uint8_t addr)
{
    uint32_t lo = csr_read(addr);    /* latches the high word */
    return (uint64_t)csr_read(addr + 1u) << 32 | lo;
}

/* n / d by shift and subtract: libgcc's 64-bit division takes 1.7 KiB. */
static uint64_t div64(uint64_t n, uint32_t d)
{
    uint64_t q = 0, r = 0;
    for (int i = 63; i >= 0; i--) {
        r = r << 1 | (n >> i & 1u);
        if (r >= d) {
            r -= d;
            q |= 1ull << i;
        }
    }
    return q;
}

static void put_lower(const char *s)
{
    for (; *s; s++)
        uart_putc(*s >= 'A' && *s <= 'Z' ? (char)(*s + 'a' - 'A') : *s);
}

/* ---- helpers ---- */

/* "name value" of a parameter, a line. */
static void put_param(const param_t *p)
{
    put_str(p->name);
    put_str(" ");
    put_i64(param_get(p));
    put_nl();
}

static int no_args(int argc, char **argv)
{
    if (argc == 1)
        return 1;
    put_error(argv[0]);
    put_str(" takes no arguments");
    return 0;
}

static int usage(const char *s)
{
    put_error("usage: ");
    put_str(s);
    return 0;
}

static const param_t *find_or_complain(const char *name)
{
    const param_t *p = param_find(name);
    if (!p) {
        put_error("no parameter '");
        put_str(name);
        put_str("' (list shows them)");
    }
    return p;
}

/* Decimal, or hex after 0x, either with a leading '-'. Magnitudes saturate at
 * 2^40, far outside every range: a huge number is out of range, not "not a
 * number". */
static int parse_int(const char *s, int64_t *out)
{
    int neg = *s == '-';
    unsigned base = 10;
    uint64_t v = 0;
    s += neg;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s += 2;
    }
    if (!*s)
        return 0;
    for (; *s; s++) {
        char c = (char)(*s | 0x20);   /* lower case for letters */
        unsigned d;
        if (*s >= '0' && *s <= '9')
            d = (unsigned)(*s - '0');
        else if (base == 16 && c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else
            return 0;
        v = (base == 16 ? v << 4 : (v << 3) + (v << 1)) + d;   /* no multiply in RV32I */
        if (v > (1ull << 40))
            v = 1ull << 40;
    }
    *out = neg ? -(int64_t)v : (int64_t)v;
    return 1;
}

/* ---- the commands ---- */

static int c_help(int argc, char **argv);

static int c_version(int argc, char **argv)
{
    if (!no_args(argc, argv))
        return 0;
    put_line("firmware " FW_VERSION);
    put_str("regmap ");
    put_u64(ACKFILTER_REGMAP_VERSION);
    put_nl();
    put_str("gateware_id ");
    put_hex(csr_read(ACKFILTER_CSR_INFO_ID), 8);
    put_nl();
    put_str("soc_id ");
    put_hex(soc_id(), 8);
    put_nl();
    put_str("clock_hz ");
    put_u64(sys_clk_hz());
    put_nl();
    return 1;
}

static int c_echo(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "on") == 0)
        cli_echo = 1;
    else if (argc == 2 && strcmp(argv[1], "off") == 0)
        cli_echo = 0;
    else
        return usage("echo on|off");
    return 1;
}

static int c_list(int argc, char **argv)
{
    if (!no_args(argc, argv))
        return 0;
    for (const param_t *p = params; p < params + PARAMS_COUNT; p++) {
        put_str(p->name);
        put_str(" ");
        put_i64(param_get(p));
        put_str(" ");
        put_i64(PARAM_MIN(p));
        put_str(" ");
        put_i64(PARAM_MAX(p));
        put_str(" ");
        put_i64(PARAM_DEF(p));
        put_str(" ");
        put_line(p->unit);
    }
    return 1;
}

static int c_get(int argc, char **argv)
{
    if (argc == 1) {
        for (const param_t *p = params; p < params + PARAMS_COUNT; p++)
            put_param(p);
        return 1;
    }
    if (argc != 2)
        return usage("get [NAME]");
    const param_t *p = find_or_complain(argv[1]);
    if (!p)
        return 0;
    put_param(p);
    return 1;
}

static int c_set(int argc, char **argv)
{
    if (argc != 3)
        return usage("set NAME VALUE");
    const param_t *p = find_or_complain(argv[1]);
    int64_t v;
    if (!p)
        return 0;
    if (!parse_int(argv[2], &v)) {
        put_error(argv[2]);
        put_str(" is not a number");
        return 0;
    }
    if (!param_in_range(p, v)) {
        put_error(p->name);
        put_str(" must be ");
        put_i64(PARAM_MIN(p));
        put_str("..");
        put_i64(PARAM_MAX(p));
        put_str(" ");
        put_str(p->unit);
        if (p->step > 1) {
            put_str(" in steps of ");
            put_u64(p->step);
        }
        put_str(", not ");
        put_str(argv[2]);
        return 0;
    }
    param_set(p, v);
    put_param(p);
    return 1;
}

static int c_stats(int argc, char **argv)
{
    if (!no_args(argc, argv))
        return 0;
    for (unsigned i = 0; i < N_COUNTERS; i++) {
        put_str(counters[i].name);
        put_str(" ");
        put_u64(counter_read(counters[i].addr) - baseline[i]);
        put_nl();
    }
    for (unsigned i = 0; i < sizeof infos / sizeof infos[0]; i++) {
        put_str("info.");
        put_lower(infos[i].name);
        put_str(" ");
        put_u64(csr_read(infos[i].addr));
        put_nl();
    }
    put_str("uptime_ms ");
    put_u64(div64(timer_cycles(), ACKFILTER_F_SYS_HZ / 1000u));
    put_nl();
    put_str("ared_adjustments ");
    put_u64(ared_adjustments);
    put_nl();
    put_str("watchdog_restarts ");
    put_u64(watchdog_restarts());
    put_nl();
    return 1;
}

static int c_mdio(int argc, char **argv)
{
    static const int64_t max[3] = {31, 31, 0xffff};
    int64_t a[3] = {0, 0, 0};
    if (argc != 3 && argc != 4)
        return usage("mdio PHY REG [VALUE]");
    for (int i = 1; i < argc; i++) {
        if (!parse_int(argv[i], &a[i - 1]) || a[i - 1] < 0 || a[i - 1] > max[i - 1]) {
            put_error("PHY and REG must be 0..31, VALUE 0..0xffff");
            return 0;
        }
    }
    uint16_t v = (uint16_t)a[2];
    enum phy_result e = phy_mdio((unsigned)a[0], (unsigned)a[1], argc == 4, &v);
    if (e != PHY_OK) {
        put_error(e == PHY_NO_PHY    ? "no PHY at that address" :
                  e == PHY_NO_MDIO   ? "no MDIO in this build (its board registers are absent)" :
                                       "MDIO did not finish");
        return 0;
    }
    put_hex(v, 4);
    put_nl();
    return 1;
}

static int c_reset_counters(int argc, char **argv)
{
    if (!no_args(argc, argv))
        return 0;
    for (unsigned i = 0; i < N_COUNTERS; i++)
        baseline[i] = counter_read(counters[i].addr);
    return 1;
}

static void put_origin_record(void)
{
    put_str("flash record ");
    put_u64(store_origin.seq);
}

static int c_save(int argc, char **argv)
{
    unsigned n;
    uint32_t where = 0;
    if (!no_args(argc, argv))
        return 0;
    switch (store_save(&n, &where)) {
    case STORE_SAVED:
        put_str("saved ");
        put_u64(n);
        put_str(" parameters as ");
        put_origin_record();
        put_nl();
        return 1;
    case STORE_UNCHANGED:
        put_str("unchanged: ");
        put_origin_record();
        put_line(" holds these values, nothing written");
        return 1;
    case STORE_NO_WEL:
        put_error("flash does not answer (write enable not taken), nothing saved");
        return 0;
    case STORE_TIMEOUT:
        put_error("flash does not answer (still busy after ");
        put_u64(FLASH_TIMEOUT_MS);
        put_str(" ms), nothing saved");
        return 0;
    case STORE_BUSY:
        put_error("flash does not answer (busy), nothing saved");
        return 0;
    case STORE_VERIFY_FAILED:
        put_error("flash verify failed at ");
        put_hex(where, 6);
        put_str(", the record before is kept");
        return 0;
    }
    return 0;
}

static int c_defaults(int argc, char **argv)
{
    if (!no_args(argc, argv))
        return 0;
    params_defaults(1);
    store_origin = (struct store_origin){ 0 };
    store_origin.why = STORE_LOADED;          /* by this command */
    return 1;
}

static int c_load(int argc, char **argv)
{
    if (!no_args(argc, argv))
        return 0;
    unsigned n;
    enum store_load_result r = store_load(&n, 1);
    if (r == STORE_LOADED) {
        put_str("loaded ");
        put_u64(n);
        put_str(" parameters from ");
        put_origin_record();
        put_nl();
        return 1;
    }
    put_error("");
    store_put_problem(r);
    put_str(", nothing changed");
    return 0;
}

/* Stops: the watchdog then restarts the firmware (a user's check of it). */
static int c_hang(int argc, char **argv)
{
    if (!no_args(argc, argv))
        return 0;
    put_line("hanging: the watchdog restarts the firmware, the datapath runs on");
    for (;;)
        (void)timer_cycles();
}

/* Where the live settings came from, and whether they are still the saved ones. */
static int c_settings(int argc, char **argv)
{
    if (!no_args(argc, argv))
        return 0;
    if (store_origin.restarted) {
        put_line("source kept");
        put_line("reason the watchdog restarted the firmware, the live registers were kept");
    } else if (store_origin.from_flash) {
        put_line("source flash");
        put_str("record ");
        put_u64(store_origin.seq);
        put_nl();
        put_str("sector ");
        put_u64(store_origin.sector);
        put_nl();
        put_str("record_regmap ");
        put_u64(store_origin.regmap);
        put_nl();
    } else {
        put_line("source defaults");
        put_str("reason ");
        if (store_origin.why == STORE_LOADED)
            put_line("the defaults command");
        else {
            store_put_problem(store_origin.why);
            put_nl();
        }
    }
    put_str("saved ");
    put_line(store_matches_flash() ? "yes" : "no");
    return 1;
}

static const struct command {
    const char *name, *args, *help;
    int (*run)(int argc, char **argv);
} commands[] = {
    { "help", "", "this list", c_help },
    { "version", "", "firmware, register map, gateware and SoC ids, clock", c_version },
    { "echo", "on|off", "echo what is typed (on at boot)", c_echo },
    { "list", "", "parameters: name value min max default unit", c_list },
    { "get", "[NAME]", "one parameter's value, or all of them", c_get },
    { "set", "NAME VALUE", "write a parameter (decimal, 0x hex, - if signed)", c_set },
    { "stats", "", "counters since reset-counters, info words, uptime", c_stats },
    { "reset-counters", "", "count from zero in stats (the hardware keeps counting)",
      c_reset_counters },
    { "save", "", "write every parameter to the flash", c_save },
    { "defaults", "", "set every parameter to its default (not saved)", c_defaults },
    { "load", "", "set the parameters saved in the flash, as at boot", c_load },
    { "settings", "", "where the live parameters came from; saved yes|no", c_settings },
    { "hang", "", "stop answering, to see the watchdog restart the firmware", c_hang },
    { "mdio", "PHY REG [VALUE]", "read (or write) a PHY register over MDIO", c_mdio },
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static int c_help(int argc, char **argv)
{
    if (!no_args(argc, argv))
        return 0;
    for (unsigned i = 0; i < N_COMMANDS; i++) {
        unsigned col = 0;
        for (const char *s = commands[i].name; *s; s++, col++)
            uart_putc(*s);
        if (*commands[i].args) {
            uart_putc(' ');
            col++;
            for (const char *s = commands[i].args; *s; s++, col++)
                uart_putc(*s);
        }
        do
            uart_putc(' ');
        while (++col < 18);
        put_line(commands[i].help);
    }
    return 1;
}

int cmd_run(int argc, char **argv)
{
    for (unsigned i = 0; i < N_COMMANDS; i++)
        if (strcmp(argv[0], commands[i].name) == 0)
            return commands[i].run(argc, argv);
    put_error("no command '");
    put_str(argv[0]);
    put_str("'; commands:");
    for (unsigned i = 0; i < N_COMMANDS; i++) {
        put_str(" ");
        put_str(commands[i].name);
    }
    return 0;
}
