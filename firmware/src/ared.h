/* Adaptive RED: Floyd, Gummadi, Shenker, "Adaptive RED: An Algorithm for
 * Increasing the Robustness of RED's Active Queue Management" (2001), Fig. 2.
 * max_p is in units of 1/65536, as the red_max_p CSR. */
#ifndef ARED_H
#define ARED_H

#include <stdint.h>

#define ARED_P_HALF 32768u   /* 0.5 * 65536: max_p is raised only while <= 0.5 */
#define ARED_P_CENT 655u     /* 0.01 * 65536 = 655.36, rounded: alpha's cap, and the
                                floor under which max_p is not lowered */

/* One step of the rule, pure: max_p after an interval in which RED's average
 * was avg bytes, given min_th and max_th in bytes. Target band: min + 0.4 ..
 * min + 0.6 of (max - min). Above it and max_p <= 0.5: max_p + min(0.01,
 * max_p / 4); below it and max_p >= 0.01: floor(max_p * 0.9); else max_p.
 * max_th <= min_th (RED acts as off) leaves max_p as it is. */
uint32_t ared_step(uint32_t avg, uint32_t min_th, uint32_t max_th, uint32_t max_p);

/* From the main loop: every ared_interval_ms (by the timer), while
 * ared_enable and red_enable are 1, one step on the live average. */
void ared_poll(void);

extern uint32_t ared_adjustments;   /* times ared_poll changed red_max_p */

#endif
