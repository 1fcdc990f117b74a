#include "params.h"
#include "hal.h"
#include "lib.h"

#define CSR_ROW(name, addr, width, is_signed, def, min, max, unit) \
    { #name, unit, (uint32_t)(def), (uint32_t)(min), (uint32_t)(max), addr, 1, is_signed, 0, \
      ACKFILTER_STEP_##name },
#define FW_ROW(name, key, def, min, max, unit) \
    { #name, unit, def, min, max, key, 0, 0, FWP_##name, 1 },

const param_t params[PARAMS_COUNT] = {
    ACKFILTER_PARAMS(CSR_ROW)
    ACKFILTER_FW_PARAMS(FW_ROW)
};

uint32_t fw_values[PARAMS_FW];

const param_t *param_find(const char *name)
{
    for (const param_t *p = params; p < params + PARAMS_COUNT; p++)
        if (strcmp(p->name, name) == 0)
            return p;
    return 0;
}

const param_t *param_by_key(uint32_t key)
{
    for (const param_t *p = params; p < params + PARAMS_COUNT; p++)
        if (p->key == key)
            return p;
    return 0;
}

int param_in_range(const param_t *p, int64_t v)
{
    return v >= PARAM_MIN(p) && v <= PARAM_MAX(p) && (v & (p->step - 1)) == 0;
}

/* A signed CSR reads back sign-extended to 32 bits. */
int64_t param_from_word(const param_t *p, uint32_t word)
{
    return p->is_signed ? (int64_t)(int32_t)word : (int64_t)word;
}

int64_t param_get(const param_t *p)
{
    if (p->is_csr)
        return param_from_word(p, csr_read(p->key));
    return fw_values[p->slot];
}

int64_t param_set(const param_t *p, int64_t v)
{
    if (p->is_csr)
        csr_write(p->key, (uint32_t)v);     /* two's complement if negative */
    else
        fw_values[p->slot] = (uint32_t)v;
    return param_get(p);
}

void params_defaults(int csrs)
{
    for (const param_t *p = params; p < params + PARAMS_COUNT; p++)
        if ((csrs || !p->is_csr) && param_get(p) != PARAM_DEF(p))
            param_set(p, PARAM_DEF(p));
}
