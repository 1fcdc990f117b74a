/* The few C library functions the firmware uses. lib.c defines them for the
 * board (no C library is linked there); the host build takes its libc's. */
#ifndef LIB_H
#define LIB_H

#include <stddef.h>

void *memcpy(void *restrict dst, const void *restrict src, size_t n);
void *memset(void *dst, int c, size_t n);
int strcmp(const char *a, const char *b);

#endif
