/* SPI flash driver on hal.h's pins. Mode 0: SCK idles low, the flash samples
 * DI on the rising edge and shifts DO out on the falling edge, so each bit is
 * "set DI with SCK low, raise SCK, read DO". */
#include "flash.h"
#include "ackfilter_regs.h"
#include "hal.h"

enum {
    CMD_RELEASE_PD = 0xab,
    CMD_READ = 0x03,
    CMD_WRITE_ENABLE = 0x06,
    CMD_SECTOR_ERASE = 0x20,
    CMD_PAGE_PROGRAM = 0x02,
    CMD_READ_STATUS = 0x05,
    STATUS_WIP = 1u << 0,
    STATUS_WEL = 1u << 1,
};

static void cs_low(void) { flash_set(0, 0, 0); }
static void cs_high(void) { flash_set(1, 0, 0); }

static uint8_t xfer(uint8_t out)
{
    unsigned in = 0, o = out;
    for (int i = 0; i < 8; i++, o <<= 1) {
        int bit = (o >> 7) & 1;
        flash_set(0, 0, bit);
        flash_set(0, 1, bit);
        in = in << 1 | (unsigned)flash_get_do();
    }
    flash_set(0, 0, 0);
    return (uint8_t)in;
}

/* A byte in with DI low: 8 instructions a bit where xfer takes 12, in the
 * reads a record's checks spend most of their time in (SERV takes about 32
 * cycles an instruction). */
static uint8_t recv(void)
{
    unsigned in = 0;
    for (int i = 0; i < 8; i++) {
        flash_set(0, 0, 0);
        flash_set(0, 1, 0);
        in = in << 1 | (unsigned)flash_get_do();
    }
    return (uint8_t)in;
}

static void command_addr(uint8_t cmd, uint32_t addr)
{
    cs_low();
    xfer(cmd);
    xfer((uint8_t)(addr >> 16));
    xfer((uint8_t)(addr >> 8));
    xfer((uint8_t)addr);
}

static uint8_t read_status(void)
{
    cs_low();
    xfer(CMD_READ_STATUS);
    uint8_t s = xfer(0);
    cs_high();
    return s;
}

static enum flash_err write_enable(void)
{
    cs_low();
    xfer(CMD_WRITE_ENABLE);
    cs_high();
    return (read_status() & STATUS_WEL) ? FLASH_OK : FLASH_NO_WEL;
}

static enum flash_err wait_ready(void)
{
    uint64_t limit = (uint64_t)(ACKFILTER_F_SYS_HZ / 1000u) * FLASH_TIMEOUT_MS;
    uint64_t start = timer_cycles();
    while (read_status() & STATUS_WIP) {
        watchdog_kick();                 /* an erase takes up to 400 ms */
        if (timer_cycles() - start > limit)
            return FLASH_TIMEOUT;
    }
    return FLASH_OK;
}

void flash_init(void)
{
    cs_high();
    cs_low();
    xfer(CMD_RELEASE_PD);
    cs_high();
    /* tRES1: the flash takes commands 3 us after the release. */
    uint64_t end = timer_cycles() + ACKFILTER_F_SYS_HZ / 200000u;   /* 5 us */
    while (timer_cycles() < end)
        ;
}

enum flash_err flash_read(uint32_t addr, uint8_t *buf, uint32_t n)
{
    watchdog_kick();                     /* a record's checks take a few hundred ms */
    if (read_status() & STATUS_WIP)
        return FLASH_BUSY;
    command_addr(CMD_READ, addr);
    while (n--)
        *buf++ = recv();
    cs_high();
    return FLASH_OK;
}

enum flash_err flash_erase_sector(uint32_t addr)
{
    enum flash_err e = write_enable();
    if (e != FLASH_OK)
        return e;
    command_addr(CMD_SECTOR_ERASE, addr);
    cs_high();
    return wait_ready();
}

enum flash_err flash_program(uint32_t addr, const uint8_t *buf, uint32_t n)
{
    while (n) {
        /* A page program wraps within its page: stop at the page's end. */
        uint32_t chunk = FLASH_PAGE_BYTES - (addr % FLASH_PAGE_BYTES);
        if (chunk > n)
            chunk = n;
        enum flash_err e = write_enable();
        if (e != FLASH_OK)
            return e;
        command_addr(CMD_PAGE_PROGRAM, addr);
        for (uint32_t i = 0; i < chunk; i++)
            xfer(buf[i]);
        cs_high();
        if ((e = wait_ready()) != FLASH_OK)
            return e;
        addr += chunk;
        buf += chunk;
        n -= chunk;
    }
    return FLASH_OK;
}
