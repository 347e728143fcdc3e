/* benchlib.h - what the CPU benchmarks and call counters share (synctax.c,
 * simhit.c, simstage.c, tests/diag/callcount.c): the monotonic clock,
 * medians and, where the simulated runtime's sim.h is included first, the
 * calls a stretch of the program made, per entry point.  C and C++ alike
 * (synctax.cu includes synctax.c). */
#ifndef PC_BENCHLIB_H
#define PC_BENCHLIB_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline uint64_t bench_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CPU time of the calling thread. */
static inline uint64_t bench_cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline int bench_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* The median of v[0..n) (sorted in place). */
static inline double bench_median(double *v, long n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp);
    return v[n / 2];
}

#ifdef SIM_H
#define BENCH_MAXC 256

/* The sim's call counts at one moment (SIM_CALLS=1). */
struct bench_calls {
    struct sim_call c[BENCH_MAXC];
    int n;
};

static inline void bench_calls_snap(struct bench_calls *b)
{
    int n = simCalls(b->c, BENCH_MAXC);

    b->n = n < BENCH_MAXC ? n : BENCH_MAXC;
}

/* The calls made since *before, divided by per: "calls NAME N" for each
 * entry point called, then "total N" (%.2f where per > 1).  0 when there are
 * counts. */
static inline int bench_calls_print(const struct bench_calls *before, long per, const char *who)
{
    static struct bench_calls a;
    unsigned long long total = 0;

    bench_calls_snap(&a);
    if (a.n == 0) {
        fprintf(stderr, "%s: no counts (SIM_CALLS=1 unset?)\n", who);
        return 1;
    }
    for (int i = 0; i < a.n; i++) {
        unsigned long long d = a.c[i].calls;

        for (int j = 0; j < before->n; j++)
            if (strcmp(before->c[j].name, a.c[i].name) == 0)
                d -= before->c[j].calls;
        if (!d)
            continue;
        total += d;
        if (per > 1)
            printf("calls %s %.2f\n", a.c[i].name, (double)d / (double)per);
        else
            printf("calls %s %llu\n", a.c[i].name, d);
    }
    if (per > 1)
        printf("total %.2f\n", (double)total / (double)per);
    else
        printf("total %llu\n", total);
    return 0;
}
#endif

#endif
