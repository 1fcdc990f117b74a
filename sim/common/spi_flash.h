/* The board's SPI flash (W25Q32JV) as the firmware's driver (firmware/src/
 * flash.c) uses it, decoded from its pins bit by bit (mode 0, MSB first):
 * the one model behind fwhost (firmware/host/hal_host.c) and the simulated
 * SoC (sim/soc/harness.cpp). C, also compiled as C++ (Verilator builds every
 * source of a harness with the C++ compiler).
 *
 *   commands  0xab release from deep power-down (then its device ID), 0x03
 *             read, 0x06 write enable, 0x20 sector erase, 0x02 page program
 *             (it wraps within its page), 0x05 read status (WIP, WEL).
 *   state     deep power-down at power-on; commands 3 us (tRES1) after the
 *             release; WEL, cleared by an erase or program; busy 30 ms after
 *             an erase, 0.7 ms after a program; programming only clears bits.
 *   memory    only the parameter sectors exist (ackfilter_regs.h:
 *             ACKFILTER_SOC_FLASH_PARAMS_*), SPI_FLASH_BYTES; reads elsewhere
 *             give 0xff, erases and programs elsewhere are errors.
 *   errors    any protocol mistake (a command in power-down or while busy, an
 *             unknown command, an erase or program without write enable or
 *             outside the sectors or of the wrong length, a partial byte, CS#
 *             falling with SCK high, a command before tRES1, more than 256
 *             bytes in a page program) is printed on stderr as
 *             "<name>: flash: <what>" and counted in `errors`.
 *
 * Time is the caller's: `now` in cycles of `clk_hz`, never going back.
 * A file holds exactly the SPI_FLASH_BYTES of the sectors; an absent one is
 * erased flash. The model does no file I/O of its own: `dirty` says an erase
 * or program was taken since the last spi_flash_save().
 */
#ifndef ACKFILTER_SPI_FLASH_H
#define ACKFILTER_SPI_FLASH_H

#include <stdint.h>

#include "ackfilter_regs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The parameter sectors: the flash's bytes from SPI_FLASH_BASE. */
#define SPI_FLASH_BASE ACKFILTER_SOC_FLASH_PARAMS_OFFSET
#define SPI_FLASH_SECTOR_BYTES ACKFILTER_SOC_FLASH_SECTOR_BYTES
#define SPI_FLASH_BYTES (ACKFILTER_SOC_FLASH_SECTOR_BYTES * ACKFILTER_SOC_FLASH_PARAMS_SECTORS)
#define SPI_FLASH_PAGE_BYTES 256u

struct spi_flash {
    /* Set by spi_flash_init(); the options may be changed before use. */
    uint32_t clk_hz;            /* `now` counts these */
    const char *name;           /* messages start "<name>: flash: " */
    int write_protected;        /* erases and programs are taken and ignored */
    unsigned cut_at, fail_at;   /* this erase or program (from 1), 0 = none: */
                                /*   cut: half of it done, then `cut` is set; */
                                /*   fail: nothing done, busy for ever */

    /* What the caller reads. */
    uint8_t mem[SPI_FLASH_BYTES];
    unsigned errors;            /* protocol errors so far */
    unsigned writes;            /* erase and program commands taken so far */
    int dirty;                  /* one taken since the last spi_flash_save() */
    int cut;                    /* the power is cut (write `writes`, `cmd` at `addr`): stop */
    uint8_t cmd;                /* the current (or last) command */
    uint32_t addr;              /* its address (24 bits once complete) */

    /* The chip and the transaction: the model's own. */
    int powered_down, wel;
    uint64_t busy_until;
    uint64_t awake_at;          /* tRES1 after the release from power-down */
    int cs_n, sck, dout;
    unsigned nbits;             /* bits clocked in since CS# fell */
    uint8_t shift;
    uint8_t page[SPI_FLASH_PAGE_BYTES], page_set[SPI_FLASH_PAGE_BYTES];
    unsigned page_bytes;
};

/* Power-on: erased, in deep power-down, deselected; messages as `name`. */
void spi_flash_init(struct spi_flash *f, uint32_t clk_hz, const char *name);

/* The sectors from `path`: NULL when done (an absent file: erased), else why
   not ("must be the 8192 bytes of the parameter sectors, or absent"). */
const char *spi_flash_load(struct spi_flash *f, const char *path);

/* The sectors to `path` (through a temporary file beside it, renamed), and
   `dirty` cleared: NULL when done, else why not. */
const char *spi_flash_save(struct spi_flash *f, const char *path);

/* The pins at time `now`: CS#, SCK, DI (0 or not). An erase or program takes
   effect when CS# rises. */
void spi_flash_pins(struct spi_flash *f, uint64_t now, int cs_n, int sck, int di);

/* The DO line (1 when deselected or in deep power-down). */
int spi_flash_do(const struct spi_flash *f);

/* Deselected: no command under way (a time to save the file). */
int spi_flash_idle(const struct spi_flash *f);

#ifdef __cplusplus
}
#endif

#endif
