#include "fw.h"
#include "ackfilter_regs.h"
#include "ared.h"
#include "cli.h"
#include "flash.h"
#include "hal.h"
#include "phy.h"
#include "params.h"
#include "print.h"
#include "store.h"

void fw_boot(void)
{
    put_str("ackfilter firmware " FW_VERSION " regmap ");
    put_u64(ACKFILTER_REGMAP_VERSION);
    put_nl();
    flash_init();
    /* After a watchdog restart the datapath ran on: its registers (live, maybe
       unsaved) and the PHYs stay as they are; only the firmware's own
       parameters, lost with its RAM, come from the flash. */
    unsigned restarts = watchdog_restarts();
    if (restarts) {
        put_str("warning: the watchdog restarted the firmware (");
        put_u64(restarts);
        put_line(" since power-on); the datapath's registers are kept");
    }
    /* The saved record, checked whole before anything is set; without one,
       the defaults (the CSRs' reset values: only the firmware's own change). */
    unsigned n;
    enum store_load_result r = store_load(&n, !restarts);
    if (r != STORE_LOADED) {
        params_defaults(!restarts);
        store_origin.why = r;
    }
    store_origin.restarted = restarts != 0;
    if (r == STORE_CORRUPT || r == STORE_NO_FLASH) {
        put_str("warning: ");
        store_put_problem(r);
        put_line(", using defaults");
    }
    if (!restarts)
        phy_setup();
    cli_prompt();
}

void fw_poll(void)
{
    watchdog_kick();
    /* Take every byte waiting: a slow core must keep up with 115200 baud
       (the receive FIFO holds 32 bytes). */
    for (int c; (c = uart_getc()) >= 0;)
        cli_input(c);
    ared_poll();
}
