/* The hardware the firmware logic sees. hal_soc.c implements it with the
 * SoC's registers; host/hal_host.c with a simulation, so the logic files
 * (everything but hal_soc.c, start.S and main.c) run and are tested on a PC. */
#ifndef HAL_H
#define HAL_H

#include <stdint.h>

/* Datapath CSR `addr` (an ACKFILTER_CSR_* word address). Writes to a
 * parameter are clamped to its range by the bank; reading a counter's low
 * word latches its high word at addr + 1. */
uint32_t csr_read(uint32_t addr);
void csr_write(uint32_t addr, uint32_t value);

/* UART: the next received byte, or -1 if none waits (never blocks); with
 * UART_LOST set if bytes were lost (the receive FIFO was full) just before it. */
#define UART_LOST 0x100
int uart_getc(void);
/* Send a byte (waits while the transmitter is busy). */
void uart_putc(char c);

/* The watchdog: kick it at least every ACKFILTER_SOC_WATCHDOG_CYCLES or the
 * CPU restarts (the datapath runs on); how many times it did since power-on. */
void watchdog_kick(void);
unsigned watchdog_restarts(void);

/* Cycles of sys_clk since reset (64 bits: does not wrap). */
uint64_t timer_cycles(void);
uint32_t sys_clk_hz(void);
uint32_t soc_id(void);

/* SPI flash pins: drive CS# (active low), SCK and the flash's DI; read its DO. */
void flash_set(int cs_n, int sck, int di);
int flash_get_do(void);

#endif
