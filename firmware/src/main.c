/* The board's entry (start.S calls main): boot, then the main loop forever. */
#include "fw.h"

int main(void)
{
    fw_boot();
    for (;;)
        fw_poll();
}
