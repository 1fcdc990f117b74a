#include "print.h"
#include "hal.h"

void put_str(const char *s)
{
    while (*s)
        uart_putc(*s++);
}

/* Decimal by subtracting powers of ten: RV32I has no divide instruction and
 * libgcc's 64-bit division takes thousands of cycles per digit. */
static const uint64_t powers_of_ten[] = {
    10000000000000000000ull, 1000000000000000000ull, 100000000000000000ull,
    10000000000000000ull, 1000000000000000ull, 100000000000000ull, 10000000000000ull,
    1000000000000ull, 100000000000ull, 10000000000ull, 1000000000ull, 100000000ull,
    10000000ull, 1000000ull, 100000ull, 10000ull, 1000ull, 100ull, 10ull, 1ull,
};

void put_u64(uint64_t v)
{
    int started = 0;
    for (unsigned i = 0; i < sizeof powers_of_ten / sizeof powers_of_ten[0]; i++) {
        char digit = '0';
        while (v >= powers_of_ten[i]) {
            v -= powers_of_ten[i];
            digit++;
        }
        if (digit != '0' || started || powers_of_ten[i] == 1) {
            uart_putc(digit);
            started = 1;
        }
    }
}

void put_i64(int64_t v)
{
    if (v < 0) {
        uart_putc('-');
        put_u64(-(uint64_t)v);
    } else {
        put_u64((uint64_t)v);
    }
}

void put_hex(uint32_t v, int digits)
{
    put_str("0x");
    while (digits-- > 0)
        uart_putc("0123456789abcdef"[(v >> (4 * digits)) & 0xfu]);
}

void put_nl(void)
{
    uart_putc('\r');
    uart_putc('\n');
}

void put_line(const char *s)
{
    put_str(s);
    put_nl();
}

void put_error(const char *s)
{
    put_str("error: ");
    put_str(s);
}
