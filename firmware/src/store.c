#include "store.h"
#include "flash.h"
#include "lib.h"
#include "params.h"
#include "print.h"

#define BASE ACKFILTER_SOC_FLASH_PARAMS_OFFSET
#define SECTOR_BYTES ACKFILTER_SOC_FLASH_SECTOR_BYTES
#define HEADER_BYTES 12u
#define ENTRY_BYTES (STORE_NAME_BYTES + 4u)
/* The most entries a sector holds: a larger count is corruption. */
#define MAX_ENTRIES ((SECTOR_BYTES - HEADER_BYTES - 4u) / ENTRY_BYTES)

struct store_origin store_origin;

/* Every name fits a record's name field with its NUL. */
#define NAME_FITS(name, ...) \
    _Static_assert(sizeof #name <= STORE_NAME_BYTES, #name ": too long for a saved record");
ACKFILTER_PARAMS(NAME_FITS)
ACKFILTER_FW_PARAMS(NAME_FITS)

/* A record's header, once its CRC has been checked. */
struct record {
    unsigned sector;
    uint32_t seq;
    uint16_t regmap, count;
};

/* The values of the record being applied, by parameter index, as stored. */
static uint32_t staged[PARAMS_COUNT];
static uint8_t have[PARAMS_COUNT];

/* CRC-32 of IEEE 802.3 (zlib's): reflected, polynomial 0xEDB88320. Start with
 * 0xFFFFFFFF, xor the end result with 0xFFFFFFFF. Four bits a step from a
 * 64-byte table (a byte's 1 KiB table would not fit the RAM; bit by bit took
 * a quarter of a record's check on SERV): entry k is k's four steps of the
 * bitwise form, crc = (crc >> 1) ^ (0xEDB88320 & -(crc & 1)). */
static const uint32_t crc_nibble[16] = {
    0x00000000u, 0x1db71064u, 0x3b6e20c8u, 0x26d930acu, 0x76dc4190u, 0x6b6b51f4u, 0x4db26158u, 0x5005713cu,
    0xedb88320u, 0xf00f9344u, 0xd6d6a3e8u, 0xcb61b38cu, 0x9b64c2b0u, 0x86d3d2d4u, 0xa00ae278u, 0xbdbdf21cu,
};

uint32_t crc32_update(uint32_t crc, const uint8_t *p, uint32_t n)
{
    while (n--) {
        crc ^= *p++;
        crc = (crc >> 4) ^ crc_nibble[crc & 15u];
        crc = (crc >> 4) ^ crc_nibble[crc & 15u];
    }
    return crc;
}

static uint32_t get_le32(const uint8_t *p)
{
    return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t sector_addr(unsigned sector)
{
    return BASE + sector * SECTOR_BYTES;
}

enum check { CHECK_EMPTY, CHECK_DAMAGED, CHECK_VALID, CHECK_UNREADABLE };
enum { STAGE = 1, WARN = 2 };

static void warn_dropped(const param_t *p, const char *name, uint32_t word)
{
    if (!p) {
        put_str("warning: saved parameter '");
        put_str(name);
        put_str("' is not in regmap ");
        put_u64(ACKFILTER_REGMAP_VERSION);
        put_line(", dropped");
        return;
    }
    put_str("warning: saved ");
    put_str(p->name);
    put_str(" ");
    put_i64(param_from_word(p, word));
    put_str(" is out of range ");
    put_i64(PARAM_MIN(p));
    put_str("..");
    put_i64(PARAM_MAX(p));
    put_str(" ");
    put_str(p->unit);
    put_line(", dropped");
}

/* Is there a whole record in `sector`? Streams it through the CRC (the
 * record is not kept in RAM). With STAGE, also matches its entries to the
 * parameters (staged[], have[]); with WARN, prints a "warning:" line for
 * each entry it drops. */
static enum check check_record(unsigned sector, struct record *r, int mode)
{
    int stage = mode & STAGE;
    uint8_t buf[ENTRY_BYTES];
    uint32_t addr = sector_addr(sector);
    if (flash_read(addr, buf, HEADER_BYTES) != FLASH_OK)
        return CHECK_UNREADABLE;
    if (get_le32(buf) != STORE_MAGIC)
        return CHECK_EMPTY;
    r->sector = sector;
    r->seq = get_le32(buf + 4);
    r->regmap = (uint16_t)(buf[8] | buf[9] << 8);
    r->count = (uint16_t)(buf[10] | buf[11] << 8);
    if (r->count > MAX_ENTRIES)
        return CHECK_DAMAGED;
    uint32_t crc = crc32_update(0xffffffffu, buf, HEADER_BYTES);
    if (stage)
        memset(have, 0, sizeof have);
    addr += HEADER_BYTES;
    for (unsigned i = 0; i < r->count; i++, addr += ENTRY_BYTES) {
        if (flash_read(addr, buf, ENTRY_BYTES) != FLASH_OK)
            return CHECK_UNREADABLE;
        crc = crc32_update(crc, buf, ENTRY_BYTES);
        if (!stage)
            continue;
        char name[STORE_NAME_BYTES + 1];
        memcpy(name, buf, STORE_NAME_BYTES);
        name[STORE_NAME_BYTES] = 0;
        const param_t *p = param_find(name);
        uint32_t word = get_le32(buf + STORE_NAME_BYTES);
        if (!p || !param_in_range(p, param_from_word(p, word))) {
            if (mode & WARN)
                warn_dropped(p, name, word);
        } else {
            unsigned k = (unsigned)(p - params);
            staged[k] = word;
            have[k] = 1;
        }
    }
    if (flash_read(addr, buf, 4) != FLASH_OK)
        return CHECK_UNREADABLE;
    return get_le32(buf) == (crc ^ 0xffffffffu) ? CHECK_VALID : CHECK_DAMAGED;
}

/* The newest valid record in *newest (1), or 0. *damaged counts the sectors
 * that hold a damaged record, *unreadable those the flash did not give. */
static int find_newest(struct record *newest, unsigned *damaged, unsigned *unreadable)
{
    int found = 0;
    *damaged = *unreadable = 0;
    for (unsigned s = 0; s < STORE_SECTORS; s++) {
        struct record r;
        enum check c = check_record(s, &r, 0);
        if (c == CHECK_DAMAGED)
            (*damaged)++;
        else if (c == CHECK_UNREADABLE)
            (*unreadable)++;
        else if (c == CHECK_VALID && (!found || r.seq > newest->seq)) {
            *newest = r;
            found = 1;
        }
    }
    return found;
}

static void put_record(const struct record *r)
{
    put_str("flash record ");
    put_u64(r->seq);
}

enum store_load_result store_load(unsigned *applied, int csrs)
{
    struct record r;
    unsigned damaged, unreadable;
    *applied = 0;
    if (!find_newest(&r, &damaged, &unreadable))
        return unreadable ? STORE_NO_FLASH : damaged ? STORE_CORRUPT : STORE_ABSENT;
    if (damaged || unreadable) {
        put_str(damaged ? "warning: the other parameter sector holds a damaged record (a save cut "
                          "short?), using " : "warning: the other parameter sector cannot be read, using ");
        put_record(&r);
        put_nl();
    }
    if (check_record(r.sector, &r, STAGE | WARN) != CHECK_VALID)
        return STORE_CORRUPT;        /* changed under us: nothing applied */
    /* One pass, each register straight from its live value to its new one. */
    for (unsigned i = 0; i < PARAMS_COUNT; i++) {
        const param_t *p = &params[i];
        int64_t v = have[i] ? param_from_word(p, staged[i]) : PARAM_DEF(p);
        if (!have[i]) {
            put_str("warning: ");
            put_record(&r);
            put_str(" (regmap ");
            put_u64(r.regmap);
            put_str(") has no ");
            put_str(p->name);
            put_str(", default ");
            put_i64(PARAM_DEF(p));
            put_nl();
        } else {
            (*applied)++;
        }
        if ((csrs || !p->is_csr) && param_get(p) != v)
            param_set(p, v);
    }
    store_origin = (struct store_origin){ 1, (uint8_t)r.sector, r.seq, r.regmap, STORE_LOADED, 0 };
    return STORE_LOADED;
}

/* The live values equal the record's, which is of this register map and
 * holds every parameter (check_record staged it). */
static int staged_is_live(const struct record *r)
{
    if (r->regmap != ACKFILTER_REGMAP_VERSION)
        return 0;
    for (unsigned i = 0; i < PARAMS_COUNT; i++)
        if (!have[i] || staged[i] != (uint32_t)param_get(&params[i]))
            return 0;
    return 1;
}

static int quiet_stage(const struct record *r)
{
    struct record again;
    return check_record(r->sector, &again, STAGE) == CHECK_VALID;
}

int store_matches_flash(void)
{
    struct record r;
    unsigned damaged, unreadable;
    return find_newest(&r, &damaged, &unreadable) && quiet_stage(&r) && staged_is_live(&r);
}

/* The record of the live values, a byte at a time: through the CRC and into
 * a buffer programmed whenever it fills (no copy of the whole record in RAM;
 * 32 bytes divide a page, so no program crosses one). */
static struct {
    uint32_t crc, addr;
    unsigned fill;
    enum flash_err err;
    uint8_t page[32];           /* programmed 32 bytes at a time (a page's part) */
} out;

static void flush(void)
{
    if (out.fill && out.err == FLASH_OK)
        out.err = flash_program(out.addr, out.page, out.fill);
    out.addr += out.fill;
    out.fill = 0;
}

static void emit(uint8_t b)
{
    out.crc = crc32_update(out.crc, &b, 1);
    out.page[out.fill++] = b;
    if (out.fill == sizeof out.page)
        flush();
}

static void emit32(uint32_t v)
{
    for (int i = 0; i < 4; i++, v >>= 8)
        emit((uint8_t)v);
}

/* Everything but the CRC. */
static void emit_body(uint32_t seq)
{
    emit32(STORE_MAGIC);
    emit32(seq);
    emit32(ACKFILTER_REGMAP_VERSION | (uint32_t)PARAMS_COUNT << 16);
    for (unsigned i = 0; i < PARAMS_COUNT; i++) {
        const char *name = params[i].name;
        for (unsigned k = 0; k < STORE_NAME_BYTES; k++)   /* names fit: NAME_FITS above */
            emit(*name ? (uint8_t)*name++ : 0);
        emit32((uint32_t)param_get(&params[i]));
    }
}

static enum flash_err write_record(uint32_t addr, uint32_t seq)
{
    out.crc = 0xffffffffu;
    out.addr = addr;
    out.fill = 0;
    out.err = FLASH_OK;
    emit_body(seq);
    emit32(out.crc ^ 0xffffffffu);
    flush();
    return out.err;
}

enum store_save_result store_save(unsigned *saved, uint32_t *where)
{
    struct record newest;
    unsigned damaged, unreadable;
    int found = find_newest(&newest, &damaged, &unreadable);
    *saved = PARAMS_COUNT;
    if (unreadable)
        return STORE_BUSY;           /* from a write that never finished */
    if (found && quiet_stage(&newest) && staged_is_live(&newest)) {
        store_origin = (struct store_origin){ 1, (uint8_t)newest.sector, newest.seq,
                                              newest.regmap, STORE_LOADED, 0 };
        return STORE_UNCHANGED;
    }
    unsigned sector = found ? 1u - newest.sector : 0u;
    uint32_t seq = found ? newest.seq + 1u : 1u;

    /* The record before stays whole in the other sector until this one is. */
    enum flash_err e = flash_erase_sector(sector_addr(sector));
    if (e == FLASH_OK)
        e = write_record(sector_addr(sector), seq);
    if (e != FLASH_OK)
        return e == FLASH_NO_WEL ? STORE_NO_WEL : STORE_TIMEOUT;

    /* Read back: a whole record, this one, holding the live values. */
    struct record back;
    if (check_record(sector, &back, STAGE) != CHECK_VALID || back.seq != seq
        || !staged_is_live(&back)) {
        *where = sector_addr(sector);
        return STORE_VERIFY_FAILED;
    }
    store_origin = (struct store_origin){ 1, (uint8_t)sector, seq, ACKFILTER_REGMAP_VERSION,
                                          STORE_LOADED, 0 };
    return STORE_SAVED;
}

void store_put_problem(enum store_load_result r)
{
    if (r == STORE_ABSENT)
        put_str("no saved parameters");
    else if (r == STORE_NO_FLASH)
        put_str("the flash does not answer");
    else
        put_str("the saved parameters are damaged in both sectors (CRC)");
}
