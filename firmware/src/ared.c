#include "ared.h"
#include "ackfilter_regs.h"
#include "hal.h"
#include "params.h"

uint32_t ared_adjustments;
static uint64_t last_check;        /* timer at the last interval's end */
static uint32_t interval_ms;       /* the ared_interval_ms interval_cycles is for */
static uint64_t interval_cycles;

uint32_t ared_step(uint32_t avg, uint32_t min_th, uint32_t max_th, uint32_t max_p)
{
    if (max_th <= min_th)
        return max_p;
    /* The band's ends times 5, so that integers compare exactly:
       5 * (min + 0.6 (max - min)) = 2 min + 3 max, 5 * (min + 0.4 (max - min)) = 3 min + 2 max. */
    uint64_t avg5 = ((uint64_t)avg << 2) + avg;     /* shifts: RV32I has no multiply */
    uint64_t upper5 = ((uint64_t)min_th << 1) + ((uint64_t)max_th << 1) + max_th;
    uint64_t lower5 = ((uint64_t)min_th << 1) + min_th + ((uint64_t)max_th << 1);
    if (avg5 > upper5 && max_p <= ARED_P_HALF) {
        uint32_t alpha = max_p / 4u < ARED_P_CENT ? max_p / 4u : ARED_P_CENT;
        return max_p + alpha;
    }
    if (avg5 < lower5 && max_p >= ARED_P_CENT)
        return max_p - (max_p / 10u + (max_p % 10u != 0));   /* floor(0.9 max_p): beta */
    return max_p;
}

void ared_poll(void)
{
    uint64_t now = timer_cycles();
    if (interval_ms != fw_values[FWP_ared_interval_ms]) {   /* multiply only on a change */
        interval_ms = fw_values[FWP_ared_interval_ms];
        interval_cycles = (uint64_t)interval_ms * (ACKFILTER_F_SYS_HZ / 1000u);
    }
    if (now - last_check < interval_cycles)
        return;
    last_check = now;
    if (!fw_values[FWP_ared_enable] || !csr_read(ACKFILTER_CSR_RED_ENABLE))
        return;
    uint32_t max_p = csr_read(ACKFILTER_CSR_RED_MAX_P);
    uint32_t next = ared_step(csr_read(ACKFILTER_CSR_INFO_RED_AVG_BYTES),
                              csr_read(ACKFILTER_CSR_RED_MIN_BYTES),
                              csr_read(ACKFILTER_CSR_RED_MAX_BYTES), max_p);
    if (next > ACKFILTER_RED_MAX_P_MAX)
        next = ACKFILTER_RED_MAX_P_MAX;
    if (next != max_p) {
        csr_write(ACKFILTER_CSR_RED_MAX_P, next);
        ared_adjustments++;
    }
}
