// slowdown: run a command on a machine that computes at a fraction of its speed.
//
//   slowdown [--share S] [--period-us P] [--] COMMAND [ARG...]
//
// One thread per online CPU, pinned to it and scheduled SCHED_FIFO at the
// highest priority, takes (1 - S) of every P-microsecond period by spinning
// and sleeps the rest (absolute deadlines, so the duty cycle does not drift).
// Everything else on the CPU, real-time tasks such as the experiments'
// bridge included, runs in the S that is left: with the default S = 0.5 a
// single thread and a full parallel load both take twice as long, which a
// CPU hog of normal priority does not give (the scheduler shares it out per
// task, and a SCHED_FIFO task ignores it). The short period (1 ms by default)
// makes the slowdown even rather than a series of long stalls.
//
// Needs root (SCHED_FIFO at priority 99). Exits with COMMAND's status; the
// spinning threads end with it. Build: cc -O2 -pthread -o slowdown slowdown.c

#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double g_share = 0.5;
static long g_period_ns = 1000000;

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void* spinner(void* arg) {
    long cpu = (long)arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
        fprintf(stderr, "slowdown: cannot pin a thread to CPU %ld\n", cpu);
        exit(1);
    }
    struct sched_param sp = {.sched_priority = sched_get_priority_max(SCHED_FIFO)};
    int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
    if (rc != 0) {
        fprintf(stderr, "slowdown: SCHED_FIFO refused (%s); run as root\n", strerror(rc));
        exit(1);
    }
    long busy_ns = (long)((1.0 - g_share) * g_period_ns);
    long long start = now_ns();
    for (;;) {
        while (now_ns() - start < busy_ns) {
        }
        start += g_period_ns;
        struct timespec ts = {.tv_sec = start / 1000000000LL, .tv_nsec = start % 1000000000LL};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
        }
        long long t = now_ns();
        if (t - start > g_period_ns) start = t;   // overslept a whole period: start afresh
    }
    return NULL;
}

static void usage(const char* argv0) {
    fprintf(stderr, "usage: %s [--share S] [--period-us P] [--] COMMAND [ARG...]\n"
                    "  --share S      share of each CPU left to COMMAND, 0 < S <= 1 (default 0.5)\n"
                    "  --period-us P  length of one spin-and-sleep cycle (default 1000)\n", argv0);
    exit(2);
}

int main(int argc, char** argv) {
    int i = 1;
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "--")) { i++; break; }
        if (!strcmp(argv[i], "--share") && i + 1 < argc) {
            char* end;
            g_share = strtod(argv[++i], &end);
            if (*end || !(g_share > 0 && g_share <= 1)) usage(argv[0]);
        } else if (!strcmp(argv[i], "--period-us") && i + 1 < argc) {
            char* end;
            long p = strtol(argv[++i], &end, 10);
            if (*end || p < 100 || p > 1000000) usage(argv[0]);
            g_period_ns = p * 1000;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(argv[0]);
        } else if (argv[i][0] == '-') {
            usage(argv[0]);
        } else {
            break;
        }
    }
    if (i >= argc) usage(argv[0]);

    pid_t child = fork();
    if (child < 0) { perror("slowdown: fork"); return 1; }
    if (child == 0) {
        execvp(argv[i], argv + i);
        fprintf(stderr, "slowdown: %s: %s\n", argv[i], strerror(errno));
        _exit(127);
    }
    if (g_share < 1) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        for (long c = 0; c < cpus; c++) {
            pthread_t t;
            if (pthread_create(&t, NULL, spinner, (void*)c) != 0) {
                fprintf(stderr, "slowdown: cannot start a thread\n");
                kill(child, SIGTERM);
                return 1;
            }
        }
        fprintf(stderr, "slowdown: %ld CPUs at %.0f %% of their speed (period %ld us)\n", cpus,
                100 * g_share, g_period_ns / 1000);
    }
    int status;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
}
