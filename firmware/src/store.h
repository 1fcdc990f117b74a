/* The saved parameters: two flash sectors from ACKFILTER_SOC_FLASH_PARAMS_OFFSET,
 * written in turn, so that the record before stays whole while the next is
 * written. Each sector holds at most one record, all fields little-endian:
 *
 *   u32 magic      STORE_MAGIC, the bytes "AFP2"
 *   u32 seq        1, 2, 3, ...: of the valid records, the highest is the settings
 *   u16 regmap     ACKFILTER_REGMAP_VERSION of the firmware that saved it
 *   u16 count
 *   count x { char name[24], u32 value }   the parameter's name, NUL-padded
 *   u32 crc        CRC-32 (IEEE 802.3, as zlib.crc32) of all the bytes above
 *
 * Names, not addresses, so that a record saved under another register map
 * applies what still exists and says what it dropped. A record is read and
 * checked whole before anything is applied, and then applied in one pass:
 * a register goes from its live value straight to the saved one. */
#ifndef STORE_H
#define STORE_H

#include <stdint.h>
#include "ackfilter_regs.h"

#define STORE_MAGIC 0x32504641u   /* "AFP2" in memory order */
#define STORE_NAME_BYTES 24u
#define STORE_SECTORS ACKFILTER_SOC_FLASH_PARAMS_SECTORS

enum store_load_result {
    STORE_LOADED,        /* a valid record was applied */
    STORE_ABSENT,        /* no record in either sector (erased, or another magic) */
    STORE_CORRUPT,       /* records, none valid (CRC mismatch, impossible count) */
    STORE_NO_FLASH,      /* the flash does not answer (busy) */
};

enum store_save_result {
    STORE_SAVED,
    STORE_UNCHANGED,     /* the newest record already holds every value: nothing written */
    STORE_NO_WEL,        /* the flash did not take write enable */
    STORE_TIMEOUT,       /* the flash stayed busy */
    STORE_BUSY,          /* the flash was busy before the save began */
    STORE_VERIFY_FAILED, /* read back differs at *where */
};

/* Where the live settings came from: the last boot, load, save or defaults. */
struct store_origin {
    uint8_t from_flash;             /* 1: the record below; 0: defaults, see why */
    uint8_t sector;                 /* 0 or 1 */
    uint32_t seq;
    uint16_t regmap;                /* the record's register map version */
    enum store_load_result why;     /* from_flash == 0: STORE_ABSENT, STORE_CORRUPT or
                                       STORE_NO_FLASH, or STORE_LOADED for `defaults` */
    uint8_t restarted;              /* booted after a watchdog restart: the datapath's
                                       registers were kept, only the firmware's own set */
};
extern struct store_origin store_origin;

/* Read both sectors, pick the newest valid record and apply it: every
 * parameter it holds (by name, in range) to its value, every other one to
 * its default; the datapath's (CSR) parameters only if `csrs`. Nothing is
 * written unless a valid record exists. Each entry dropped and each
 * parameter the record lacks is a "warning:" line; *applied counts the
 * entries set from the record. */
enum store_load_result store_load(unsigned *applied, int csrs);

/* Write every parameter's current value as the next record, into the sector
 * not holding the newest valid one; read it back. Nothing is written when
 * the newest record already holds exactly these values. */
enum store_save_result store_save(unsigned *saved, uint32_t *where);

/* 1 if the live values are exactly the newest valid record's. */
int store_matches_flash(void);

/* What a load result other than STORE_LOADED means, e.g. "no saved
 * parameters" (no prefix, no newline). */
void store_put_problem(enum store_load_result r);

uint32_t crc32_update(uint32_t crc, const uint8_t *p, uint32_t n);

#endif
