/* The commands. */
#ifndef CMD_H
#define CMD_H

/* Run the command in argv[0] (argc counts all words, argv holds at most 4).
 * Returns 1 for success (the caller prints "ok"), 0 when the command printed
 * "error: ..." (the caller ends the line). */
int cmd_run(int argc, char **argv);

#endif
