/* simtest.h - helpers shared by the simulated device's test programs. */
#ifndef PINCACHE_SIMTEST_H
#define PINCACHE_SIMTEST_H

#include <stddef.h>
#include <time.h>
#include <unistd.h>

static inline double simtest_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A "kernel" that only holds its stream (simLaunch's delay). */
static inline void simtest_nop(void *arg)
{
    (void)arg;
}

/* A zero-copy "kernel" that reads a block: every 509th byte must be want. */
struct simtest_job {
    const unsigned char *p;
    size_t n;
    unsigned char want;
    int bad;
};

static inline void simtest_reader(void *arg)
{
    struct simtest_job *j = arg;

    for (size_t i = 0; i < j->n; i += 509)
        if (j->p[i] != j->want) {
            j->bad = 1;
            return;
        }
}

/* A "kernel" that waits for the host: it spins until *flag (in mapped
 * pinned memory) is set, or gives up after limit_ms and says so.  A call
 * that waited for it would wait for ever on a GPU. */
struct simtest_spin {
    int *flag;
    double limit_ms;
    int gave_up;
};

static inline void simtest_spin_fn(void *arg)
{
    struct simtest_spin *k = arg;
    double t0 = simtest_now_ms();

    while (!__atomic_load_n(k->flag, __ATOMIC_ACQUIRE)) {
        if (simtest_now_ms() - t0 > k->limit_ms) {
            __atomic_store_n(&k->gave_up, 1, __ATOMIC_RELEASE);
            return;
        }
        usleep(50);
    }
}

#endif
