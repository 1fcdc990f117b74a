/* SPI NOR flash, bit-banged over the SoC's flash pins (mode 0, MSB first). */
#ifndef FLASH_H
#define FLASH_H

#include <stdint.h>

#define FLASH_PAGE_BYTES 256u

enum flash_err {
    FLASH_OK = 0,
    FLASH_NO_WEL,     /* write enable did not set the WEL status bit */
    FLASH_TIMEOUT,    /* still busy (WIP) after FLASH_TIMEOUT_MS */
    FLASH_BUSY,       /* busy before a read: a write that never finished */
};

#define FLASH_TIMEOUT_MS 1000u   /* 4 KiB erase: 400 ms at most on common parts */

void flash_init(void);   /* release from deep power-down (0xAB) */
/* Refused (FLASH_BUSY, nothing read) while the flash is still busy. */
enum flash_err flash_read(uint32_t addr, uint8_t *buf, uint32_t n);
enum flash_err flash_erase_sector(uint32_t addr);   /* the 4 KiB sector holding addr */
/* Program n bytes from addr (split at page boundaries); the range must be erased. */
enum flash_err flash_program(uint32_t addr, const uint8_t *buf, uint32_t n);

#endif
