/* Line editing. Bytes accumulate until LF; CR is ignored (so CR LF works),
 * backspace (0x08) and DEL (0x7f) erase one character, tab counts as a space,
 * Ctrl-U (0x15) discards the line typed so far (a host tool sends it before
 * its first command), other control bytes are dropped. A line with a byte
 * lost to a full receive FIFO before or in it is never run: it may have lost
 * anything, a digit or its end, and still parse. With echo on, printable
 * characters are echoed as they come, an erase as "\b \b", and LF as CR LF. */
#include "cli.h"
#include "cmd.h"
#include "print.h"
#include "hal.h"

#define MAX_ARGS 4

int cli_echo = 1;
static char line[CLI_LINE_MAX + 1];
static unsigned len;
static int too_long;
static int damaged;                  /* bytes were lost in this line */

void cli_prompt(void)
{
    put_str("> ");
}

/* Split the line in place at spaces. argc counts every word, argv keeps the
 * first MAX_ARGS (no command takes more, so more is a usage error). */
static void run_line(void)
{
    char *argv[MAX_ARGS];
    int argc = 0;
    line[len] = 0;
    for (char *s = line; *s;) {
        while (*s == ' ')
            *s++ = 0;
        if (!*s)
            break;
        if (argc < MAX_ARGS)
            argv[argc] = s;
        argc++;
        while (*s && *s != ' ')
            s++;
    }
    if (argc == 0)
        return;                      /* an empty line: just a new prompt */
    if (cmd_run(argc, argv))
        put_str("ok");
    put_nl();
}

void cli_input(int c)
{
    if (c & UART_LOST) {
        damaged = 1;
        c &= 0xff;
    }
    if (c == '\n') {
        if (cli_echo)
            put_nl();
        if (damaged) {
            put_error("uart overrun, line discarded");
            put_nl();
        } else if (too_long) {
            put_error("line too long");
            put_nl();
        } else {
            run_line();
        }
        len = 0;
        too_long = 0;
        damaged = 0;
        cli_prompt();
    } else if (c == 0x15) {
        len = 0;
        too_long = 0;
        damaged = 0;
        if (cli_echo) {
            put_nl();
            cli_prompt();
        }
    } else if (c == 0x08 || c == 0x7f) {
        if (len > 0 && !too_long) {
            len--;
            if (cli_echo)
                put_str("\b \b");
        }
    } else if (c == '\t' || (c >= 0x20 && c < 0x7f)) {
        if (len == CLI_LINE_MAX) {
            too_long = 1;            /* the rest of the line is dropped */
        } else if (!too_long) {
            line[len++] = (char)(c == '\t' ? ' ' : c);
            if (cli_echo)
                uart_putc(line[len - 1]);
        }
    }
    /* CR and other control bytes: ignored */
}
