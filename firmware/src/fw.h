/* Boot and the main loop, shared by the board (main.c) and fwhost. */
#ifndef FW_H
#define FW_H

#define FW_VERSION "0.1.0"

/* Banner, flash wake-up, saved parameters (warnings if any), first prompt. */
void fw_boot(void);
/* One pass of the main loop: the received bytes, then ARED if due. */
void fw_poll(void);

#endif
