/* The board's SPI flash, pin by pin: see spi_flash.h. */
#define _POSIX_C_SOURCE 200809L
#include "spi_flash.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* How long an erase and a program keep the flash busy; tRES1, the time from
   the release from deep power-down to the next command. */
#define ERASE_US 30000u
#define PROGRAM_US 700u
#define TRES1_US 3u

enum {
    CMD_RELEASE_PD = 0xab,
    CMD_READ = 0x03,
    CMD_WRITE_ENABLE = 0x06,
    CMD_SECTOR_ERASE = 0x20,
    CMD_PAGE_PROGRAM = 0x02,
    CMD_READ_STATUS = 0x05,
    DEVICE_ID = 0x15,           /* what 0xab answers after its 3 dummy bytes */
};

static uint64_t cycles_us(const struct spi_flash *f, uint32_t us)
{
    return (uint64_t)(f->clk_hz / 1000000u) * us;
}

static void flash_error(struct spi_flash *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: flash: ", f->name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    f->errors++;
}

void spi_flash_init(struct spi_flash *f, uint32_t clk_hz, const char *name)
{
    memset(f, 0, sizeof *f);
    memset(f->mem, 0xff, sizeof f->mem);
    f->clk_hz = clk_hz;
    f->name = name;
    f->powered_down = 1;
    f->cs_n = 1;
    f->dout = 1;
}

const char *spi_flash_load(struct spi_flash *f, const char *path)
{
    static char why[80];
    memset(f->mem, 0xff, sizeof f->mem);
    FILE *file = fopen(path, "rb");
    if (!file)
        return NULL;                     /* no file yet: erased */
    size_t n = fread(f->mem, 1, sizeof f->mem, file);
    int more = fgetc(file) != EOF;
    fclose(file);
    if (n == sizeof f->mem && !more)
        return NULL;
    snprintf(why, sizeof why, "must be the %u bytes of the parameter sectors, or absent",
             (unsigned)SPI_FLASH_BYTES);
    return why;
}

const char *spi_flash_save(struct spi_flash *f, const char *path)
{
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
        return "cannot write";
    FILE *file = fopen(tmp, "wb");
    if (!file)
        return "cannot write";
    int ok = fwrite(f->mem, 1, sizeof f->mem, file) == sizeof f->mem;
    ok = fclose(file) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        return "cannot write";
    }
    f->dirty = 0;
    return NULL;
}

static int busy(const struct spi_flash *f, uint64_t now) { return now < f->busy_until; }

static int in_region(uint32_t addr) { return addr - SPI_FLASH_BASE < SPI_FLASH_BYTES; }

/* The byte the flash shifts out as byte `index` of the transaction. */
static uint8_t out_byte(const struct spi_flash *f, uint64_t now, unsigned index)
{
    if (f->powered_down)
        return 0xff;                     /* DO stays high-impedance */
    if (f->cmd == CMD_READ_STATUS && index >= 1)
        return (uint8_t)(busy(f, now) | f->wel << 1);
    if (f->cmd == CMD_READ && index >= 4) {
        uint32_t a = (f->addr + index - 4) & 0xffffffu;
        return in_region(a) ? f->mem[a - SPI_FLASH_BASE] : 0xff;
    }
    if (f->cmd == CMD_RELEASE_PD && index >= 4)
        return DEVICE_ID;
    return 0xff;
}

static void byte_in(struct spi_flash *f, uint64_t now, uint8_t b, unsigned index)
{
    if (index == 0) {
        f->cmd = b;
        if (f->powered_down && b != CMD_RELEASE_PD)
            flash_error(f, "command 0x%02x in deep power-down (0xab releases it)", b);
        else if (busy(f, now) && b != CMD_READ_STATUS)
            flash_error(f, "command 0x%02x while busy (poll 0x05 until WIP is 0)", b);
        else if (b != CMD_RELEASE_PD && b != CMD_READ && b != CMD_WRITE_ENABLE &&
                 b != CMD_SECTOR_ERASE && b != CMD_PAGE_PROGRAM && b != CMD_READ_STATUS)
            flash_error(f, "unknown command 0x%02x", b);
    } else if (index <= 3) {
        f->addr = f->addr << 8 | b;
    } else if (f->cmd == CMD_PAGE_PROGRAM) {
        unsigned off = (f->addr + index - 4) % SPI_FLASH_PAGE_BYTES;   /* wraps within the page */
        f->page[off] = b;
        f->page_set[off] = 1;
        if (++f->page_bytes > SPI_FLASH_PAGE_BYTES)
            flash_error(f, "page program of more than %u bytes", SPI_FLASH_PAGE_BYTES);
    }
}

/* An erase or program, checked: what it does to the memory. */
static void write_command(struct spi_flash *f, uint64_t now, uint8_t cmd, uint32_t a)
{
    if (cmd == CMD_SECTOR_ERASE ? f->nbits != 32 : f->nbits < 40) {
        flash_error(f, "command 0x%02x with %u bits", cmd, f->nbits);
        return;
    }
    if (!f->wel) {
        flash_error(f, "command 0x%02x without write enable (0x06)", cmd);
        return;
    }
    if (!in_region(a)) {
        flash_error(f, "command 0x%02x at 0x%06x, outside the parameter sectors", cmd, (unsigned)a);
        return;
    }
    unsigned n = ++f->writes;
    /* A cut leaves half done: the first half of the sector erased, or of the
       page's bytes programmed. */
    unsigned part = n == f->cut_at ? 2u : 1u;
    if (f->write_protected || n == f->fail_at) {
        /* the protected flash ignores it; the failing one too */
    } else if (cmd == CMD_SECTOR_ERASE) {
        memset(f->mem + ((a - SPI_FLASH_BASE) & ~(SPI_FLASH_SECTOR_BYTES - 1u)), 0xff,
               SPI_FLASH_SECTOR_BYTES / part);
    } else {
        uint32_t page = (a - SPI_FLASH_BASE) & ~(SPI_FLASH_PAGE_BYTES - 1u);
        for (unsigned i = 0, done = 0; i < SPI_FLASH_PAGE_BYTES; i++)
            if (f->page_set[i] && done++ < f->page_bytes / part)
                f->mem[page + i] &= f->page[i];   /* programming only clears bits */
    }
    f->busy_until = n == f->fail_at ? UINT64_MAX
                  : now + cycles_us(f, cmd == CMD_SECTOR_ERASE ? ERASE_US : PROGRAM_US);
    f->dirty = 1;
    f->cut = n == f->cut_at;
}

/* CS# rose: the command takes effect. */
static void command_end(struct spi_flash *f, uint64_t now)
{
    uint8_t cmd = f->cmd;
    if (f->nbits == 0)
        return;
    if (f->nbits % 8 && cmd != CMD_READ && cmd != CMD_READ_STATUS) {
        flash_error(f, "command 0x%02x ended after %u bits, not whole bytes (ignored)", cmd, f->nbits);
        return;
    }
    if (f->powered_down) {
        if (cmd == CMD_RELEASE_PD) {
            f->powered_down = 0;
            f->awake_at = now + cycles_us(f, TRES1_US);
        }
        return;
    }
    switch (cmd) {
    case CMD_WRITE_ENABLE:
        f->wel = 1;
        break;
    case CMD_SECTOR_ERASE:
    case CMD_PAGE_PROGRAM:
        write_command(f, now, cmd, f->addr & 0xffffffu);
        f->wel = 0;
        break;
    default:
        break;
    }
}

void spi_flash_pins(struct spi_flash *f, uint64_t now, int cs_n, int sck, int di)
{
    cs_n = !!cs_n, sck = !!sck, di = !!di;
    if (f->cs_n && !cs_n) {                       /* selected: a new command */
        if (sck)
            flash_error(f, "CS# fell with SCK high (mode 0 idles SCK low)");
        if (now < f->awake_at)
            flash_error(f, "selected %u cycles after the release from power-down (tRES1: %u us)",
                        (unsigned)(now - (f->awake_at - cycles_us(f, TRES1_US))), TRES1_US);
        f->nbits = 0;
        f->addr = 0;
        f->page_bytes = 0;
        memset(f->page_set, 0, sizeof f->page_set);
    } else if (!f->cs_n && cs_n) {                /* deselected: it takes effect */
        command_end(f, now);
        f->dout = 1;
    } else if (!cs_n && !f->sck && sck) {         /* rising edge: the flash samples DI */
        f->shift = (uint8_t)(f->shift << 1 | di);
        if (++f->nbits % 8 == 0)
            byte_in(f, now, f->shift, f->nbits / 8 - 1);
    } else if (!cs_n && f->sck && !sck) {         /* falling edge: it shifts DO out */
        f->dout = out_byte(f, now, f->nbits / 8) >> (7 - f->nbits % 8) & 1;
    }
    f->cs_n = cs_n;
    f->sck = sck;
}

int spi_flash_do(const struct spi_flash *f) { return f->dout; }

int spi_flash_idle(const struct spi_flash *f) { return f->cs_n; }
