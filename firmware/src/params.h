/* The parameter table: the datapath's CSR parameters (ACKFILTER_PARAMS), then
 * the firmware's own (ACKFILTER_FW_PARAMS), both from ackfilter_regs.h. */
#ifndef PARAMS_H
#define PARAMS_H

#include <stdint.h>
#include "ackfilter_regs.h"

typedef struct {
    const char *name;
    const char *unit;
    uint32_t def, min, max;  /* as the register holds them: PARAM_DEF() etc. give the number */
    uint16_t key;            /* CSR address, or the firmware parameter's key */
    uint8_t is_csr;
    uint8_t is_signed;
    uint8_t slot;            /* firmware parameter: its index in fw_values[] */
    uint8_t step;            /* a value is a multiple of it (the hardware ignores the bits below) */
} param_t;

#define PARAM_COUNT_ONE(...) + 1
enum {
    PARAMS_CSR = 0 ACKFILTER_PARAMS(PARAM_COUNT_ONE),
    PARAMS_FW = 0 ACKFILTER_FW_PARAMS(PARAM_COUNT_ONE),
    PARAMS_COUNT = PARAMS_CSR + PARAMS_FW,
};

/* Indices of the firmware parameters in fw_values[]: FWP_ared_enable, ... */
#define FWP_ENUM(name, ...) FWP_##name,
enum { ACKFILTER_FW_PARAMS(FWP_ENUM) };

extern const param_t params[PARAMS_COUNT];
extern uint32_t fw_values[PARAMS_FW];

#define PARAM_DEF(p) param_from_word(p, (p)->def)
#define PARAM_MIN(p) param_from_word(p, (p)->min)
#define PARAM_MAX(p) param_from_word(p, (p)->max)

const param_t *param_find(const char *name);     /* NULL if none */
const param_t *param_by_key(uint32_t key);       /* NULL if none */
int param_in_range(const param_t *p, int64_t v);
int64_t param_from_word(const param_t *p, uint32_t word);
int64_t param_get(const param_t *p);
/* Write v (in range) and return the value read back. */
int64_t param_set(const param_t *p, int64_t v);
/* Every parameter (the CSRs too if `csrs`) to its default, writing only
 * those that change. */
void params_defaults(int csrs);

#endif
