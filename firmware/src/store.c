#include "store.h"
#include "flash.h"
#include "params.h"
#include "print.h"

#define STORE_ADDR ACKFILTER_SOC_FLASH_PARAMS_OFFSET
#define HEADER_BYTES 8u
#define ENTRY_BYTES 8u
/* The most entries a sector holds: a larger count is corruption. */
#define MAX_ENTRIES ((ACKFILTER_SOC_FLASH_SECTOR_BYTES - HEADER_BYTES - 4u) / ENTRY_BYTES)
#define RECORD_BYTES (HEADER_BYTES + ENTRY_BYTES * PARAMS_COUNT + 4u)

/* CRC-32 of IEEE 802.3 (zlib's): reflected, polynomial 0xEDB88320. Start with
 * 0xFFFFFFFF, xor the end result with 0xFFFFFFFF. Bitwise: no 1 KiB table. */
uint32_t crc32_update(uint32_t crc, const uint8_t *p, uint32_t n)
{
    while (n--) {
        crc ^= *p++;
        for (int i = 0; i < 8; i++)
            crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1u));
    }
    return crc;
}

static uint32_t get_le32(const uint8_t *p)
{
    return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint8_t *put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++, v >>= 8)
        *p++ = (uint8_t)v;
    return p;
}

static void warn_skipped(const param_t *p, uint32_t key, uint32_t word)
{
    put_str("warning: saved ");
    if (!p) {
        put_str("parameter key ");
        put_hex(key, 4);
        put_line(" is unknown, skipped");
        return;
    }
    put_str(p->name);
    put_str(" ");
    put_i64(param_from_word(p, word));
    put_str(" is out of range ");
    put_i64(p->min);
    put_str("..");
    put_i64(p->max);
    put_str(" ");
    put_str(p->unit);
    put_line(", skipped");
}

enum store_load_result store_load(unsigned *applied, unsigned *regmap)
{
    uint8_t buf[ENTRY_BYTES];
    *applied = 0;
    params_defaults();

    flash_read(STORE_ADDR, buf, HEADER_BYTES);
    *regmap = buf[4] | buf[5] << 8;
    uint32_t count = buf[6] | buf[7] << 8;
    if (get_le32(buf) != STORE_MAGIC)
        return STORE_ABSENT;
    if (count > MAX_ENTRIES)
        return STORE_CORRUPT;

    /* First pass: the CRC, streamed (the record is not kept in RAM). */
    uint32_t crc = crc32_update(0xffffffffu, buf, HEADER_BYTES);
    uint32_t addr = STORE_ADDR + HEADER_BYTES;
    for (uint32_t i = 0; i < count; i++, addr += ENTRY_BYTES) {
        flash_read(addr, buf, ENTRY_BYTES);
        crc = crc32_update(crc, buf, ENTRY_BYTES);
    }
    flash_read(addr, buf, 4);
    if (get_le32(buf) != (crc ^ 0xffffffffu))
        return STORE_CORRUPT;
    if (*regmap != ACKFILTER_REGMAP_VERSION)
        return STORE_OTHER_REGMAP;

    /* Second pass: apply. */
    addr = STORE_ADDR + HEADER_BYTES;
    for (uint32_t i = 0; i < count; i++, addr += ENTRY_BYTES) {
        flash_read(addr, buf, ENTRY_BYTES);
        uint32_t key = get_le32(buf), word = get_le32(buf + 4);
        const param_t *p = param_by_key(key);
        if (!p || !param_in_range(p, param_from_word(p, word))) {
            warn_skipped(p, key, word);
            continue;
        }
        param_set(p, param_from_word(p, word));
        (*applied)++;
    }
    return STORE_LOADED;
}

enum store_save_result store_save(unsigned *saved, uint32_t *where)
{
    static uint8_t rec[RECORD_BYTES];
    uint8_t *p = put_le32(rec, STORE_MAGIC);
    p = put_le32(p, ACKFILTER_REGMAP_VERSION | (uint32_t)PARAMS_COUNT << 16);
    for (unsigned i = 0; i < PARAMS_COUNT; i++) {
        p = put_le32(p, params[i].key);
        p = put_le32(p, (uint32_t)param_get(&params[i]));
    }
    put_le32(p, crc32_update(0xffffffffu, rec, RECORD_BYTES - 4) ^ 0xffffffffu);
    *saved = PARAMS_COUNT;

    enum flash_err e = flash_erase_sector(STORE_ADDR);
    if (e == FLASH_OK)
        e = flash_program(STORE_ADDR, rec, RECORD_BYTES);
    if (e != FLASH_OK)
        return e == FLASH_NO_WEL ? STORE_NO_WEL : STORE_TIMEOUT;

    uint8_t back[ENTRY_BYTES];
    for (uint32_t off = 0; off < RECORD_BYTES; off += ENTRY_BYTES) {
        uint32_t n = RECORD_BYTES - off < ENTRY_BYTES ? RECORD_BYTES - off : ENTRY_BYTES;
        flash_read(STORE_ADDR + off, back, n);
        for (uint32_t i = 0; i < n; i++) {
            if (back[i] != rec[off + i]) {
                *where = STORE_ADDR + off + i;
                return STORE_VERIFY_FAILED;
            }
        }
    }
    return STORE_SAVED;
}

void store_put_problem(enum store_load_result r, unsigned regmap)
{
    if (r == STORE_ABSENT) {
        put_str("no saved parameters (using defaults)");
    } else if (r == STORE_OTHER_REGMAP) {
        put_str("saved parameters are for regmap ");
        put_u64(regmap);
        put_str(", not ");
        put_u64(ACKFILTER_REGMAP_VERSION);
        put_str(", using defaults");
    } else {
        put_str("saved parameters are corrupt (CRC), using defaults");
    }
}
