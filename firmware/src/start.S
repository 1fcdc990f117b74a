/* Reset entry at address 0: stack at the top of the RAM, .bss zeroed, main.
 * .text, .rodata and .data are already in place (the bitstream loads the
 * image into the RAM), so nothing is copied. */
    .section .text.start, "ax"
    .globl _start
_start:
    la sp, __stack_top
    la t0, __bss_start
    la t1, __bss_end
1:  bgeu t0, t1, 2f
    sw zero, 0(t0)
    addi t0, t0, 4
    j 1b
2:  call main
3:  j 3b
