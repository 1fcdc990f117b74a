/* hal.h on the board: the SoC's memory-mapped registers (ackfilter_regs.h). */
#include "hal.h"
#include "ackfilter_regs.h"

#define REG(addr) (*(volatile uint32_t *)(uintptr_t)(addr))

uint32_t csr_read(uint32_t addr) { return REG(ACKFILTER_SOC_CSR_BASE + 4u * addr); }
void csr_write(uint32_t addr, uint32_t value) { REG(ACKFILTER_SOC_CSR_BASE + 4u * addr) = value; }

int uart_getc(void)
{
    /* bit 8: a byte was there (and is taken); bit 9: bytes were lost before it */
    uint32_t d = REG(ACKFILTER_SOC_UART_DATA);
    return (d & 0x100u) ? (int)(d & 0xffu) | (d & 0x200u ? UART_LOST : 0) : -1;
}

void uart_putc(char c)
{
    while (!(REG(ACKFILTER_SOC_UART_STATUS) & 1u))   /* tx_ready: else the write is dropped */
        ;
    REG(ACKFILTER_SOC_UART_DATA) = (uint8_t)c;
}

uint64_t timer_cycles(void)
{
    uint32_t lo = REG(ACKFILTER_SOC_TIMER_LO);    /* latches timer_hi */
    return ((uint64_t)REG(ACKFILTER_SOC_TIMER_HI) << 32) | lo;
}

uint32_t sys_clk_hz(void) { return REG(ACKFILTER_SOC_SYS_CLK_HZ); }
void watchdog_kick(void) { REG(ACKFILTER_SOC_WATCHDOG) = 1; }
unsigned watchdog_restarts(void) { return REG(ACKFILTER_SOC_WATCHDOG) & 0xffu; }
uint32_t soc_id(void) { return REG(ACKFILTER_SOC_SOC_ID); }

void flash_set(int cs_n, int sck, int di)
{
    REG(ACKFILTER_SOC_FLASH_OUT) = (cs_n ? 1u : 0u) | (sck ? 2u : 0u) | (di ? 4u : 0u);
}

int flash_get_do(void) { return REG(ACKFILTER_SOC_FLASH_IN) & 1u; }
