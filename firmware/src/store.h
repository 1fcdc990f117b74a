/* The saved parameters: one record in the flash sector at
 * ACKFILTER_SOC_FLASH_PARAMS_OFFSET, all fields little-endian:
 *
 *   u32 magic      STORE_MAGIC, the bytes "AFP1"
 *   u16 regmap     ACKFILTER_REGMAP_VERSION of the firmware that saved it
 *   u16 count
 *   count x { u32 key, u32 value }   key: CSR address, or firmware param key
 *   u32 crc        CRC-32 (IEEE 802.3, as zlib.crc32) of all the bytes above
 */
#ifndef STORE_H
#define STORE_H

#include <stdint.h>

#define STORE_MAGIC 0x31504641u   /* "AFP1" in memory order */

enum store_load_result {
    STORE_LOADED,        /* the record's valid entries were applied */
    STORE_ABSENT,        /* no record (erased, or another magic): defaults */
    STORE_CORRUPT,       /* CRC mismatch or impossible count: defaults */
    STORE_OTHER_REGMAP,  /* saved under another register map version: defaults */
};

enum store_save_result {
    STORE_SAVED,
    STORE_NO_WEL,        /* the flash did not take write enable */
    STORE_TIMEOUT,       /* the flash stayed busy */
    STORE_VERIFY_FAILED, /* read back differs at *where */
};

/* Set every parameter to its default, then apply the record's entries. An
 * entry with an unknown key or out of range is skipped with a "warning:"
 * line. *applied counts the entries written; *regmap is the record's version. */
enum store_load_result store_load(unsigned *applied, unsigned *regmap);

/* Erase the sector, write every parameter's current value, read it back. */
enum store_save_result store_save(unsigned *saved, uint32_t *where);

/* What a load result other than STORE_LOADED means, e.g. "saved parameters
 * are corrupt (CRC), using defaults" (no prefix, no newline). */
void store_put_problem(enum store_load_result r, unsigned regmap);

uint32_t crc32_update(uint32_t crc, const uint8_t *p, uint32_t n);

#endif
