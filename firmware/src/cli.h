/* The UART command line: line editing, echo, the prompt. */
#ifndef CLI_H
#define CLI_H

#define CLI_LINE_MAX 120   /* longer lines are refused: "error: line too long" */

extern int cli_echo;       /* echo typed characters (1 at boot) */

void cli_prompt(void);     /* "> ", no newline */
void cli_input(int c);     /* one received byte */

#endif
