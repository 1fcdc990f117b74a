/* Output over uart_putc, without printf: strings, decimal and hex numbers.
 * Every line ends with CR LF (put_nl). */
#ifndef PRINT_H
#define PRINT_H

#include <stdint.h>

void put_str(const char *s);
void put_u64(uint64_t v);              /* decimal */
void put_i64(int64_t v);               /* decimal, '-' if negative */
void put_hex(uint32_t v, int digits);  /* "0x" then `digits` lower-case hex digits */
void put_nl(void);                     /* CR LF */
void put_line(const char *s);          /* s, CR LF */
void put_error(const char *s);         /* "error: " s (the caller ends the line) */

#endif
