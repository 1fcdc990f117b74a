/* sim/common/spi_flash.c for tests/test_firmware_iss.py, which loads it with
 * ctypes: plain functions on an opaque flash, so Python never mirrors
 * struct spi_flash's layout. Built with spi_flash.c into one shared library
 * (the test's iss_flash_library(), cached in the build directory by content).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "spi_flash.h"

/* A powered-on flash (see spi_flash_init) counting `now` in cycles of clk_hz;
   NULL when out of memory. */
struct spi_flash *iss_flash_new(uint32_t clk_hz)
{
    struct spi_flash *f = malloc(sizeof *f);
    if (f)
        spi_flash_init(f, clk_hz, "test_firmware_iss");
    return f;
}

void iss_flash_free(struct spi_flash *f) { free(f); }

/* The parameter sectors' size: what iss_flash_set_mem and iss_flash_get_mem take. */
uint32_t iss_flash_bytes(void) { return SPI_FLASH_BYTES; }

/* The sectors' content: 0 when done, -1 unless `n` is iss_flash_bytes(). */
int iss_flash_set_mem(struct spi_flash *f, const uint8_t *bytes, uint32_t n)
{
    if (n != SPI_FLASH_BYTES)
        return -1;
    memcpy(f->mem, bytes, n);
    return 0;
}

int iss_flash_get_mem(const struct spi_flash *f, uint8_t *bytes, uint32_t n)
{
    if (n != SPI_FLASH_BYTES)
        return -1;
    memcpy(bytes, f->mem, n);
    return 0;
}

void iss_flash_pins(struct spi_flash *f, uint64_t now, int cs_n, int sck, int di)
{
    spi_flash_pins(f, now, cs_n, sck, di);
}

int iss_flash_do(const struct spi_flash *f) { return spi_flash_do(f); }

/* Protocol errors so far (each was printed on stderr). */
uint32_t iss_flash_errors(const struct spi_flash *f) { return f->errors; }

/* Erase and program commands taken so far. */
uint32_t iss_flash_writes(const struct spi_flash *f) { return f->writes; }
