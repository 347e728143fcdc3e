/* hostkind.c - the pinned ranges pincache follows and the pageable pages the
 * runtime named, for the copy accounting (hostkind.h). */
#include "config.h"
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/hostkind.h"

/* --- the ranges: sorted by start, never overlapping (the runtime refuses a
 * registration inside a pinned range, and blocks do not overlap) --- */

struct pc_range {
    uintptr_t p, end;
};

/* R.lock protects R.v and R.cap; R.n is written under it and read
 * atomically, so that a copy in a process with no ranges takes no lock. */
static struct {
    pthread_mutex_t lock;
    struct pc_range *v;
    size_t n, cap;
} R = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Index of the first range starting after p.  Under R.lock. */
static size_t pc_range_after(uintptr_t p)
{
    size_t lo = 0, hi = R.n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (R.v[mid].p <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void pc_hostkind_add(const void *p, size_t size)
{
    uintptr_t a = (uintptr_t)p;
    size_t i;

    if (!p || !size)
        return;
    pthread_mutex_lock(&R.lock);
    i = pc_range_after(a);
    if (i > 0 && R.v[i - 1].p == a) {
        R.v[i - 1].end = a + size;
        goto out;
    }
    if (R.n == R.cap) {
        size_t cap = R.cap ? 2 * R.cap : 16;
        struct pc_range *v = realloc(R.v, cap * sizeof *v);

        if (!v)
            goto out;        /* not followed: its copies ask the runtime */
        R.v = v;
        R.cap = cap;
    }
    memmove(&R.v[i + 1], &R.v[i], (R.n - i) * sizeof *R.v);
    R.v[i] = (struct pc_range){ a, a + size };
    __atomic_store_n(&R.n, R.n + 1, __ATOMIC_RELEASE);
out:
    pthread_mutex_unlock(&R.lock);
}

void pc_hostkind_remove(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    size_t i;

    if (!__atomic_load_n(&R.n, __ATOMIC_ACQUIRE))
        return;
    pthread_mutex_lock(&R.lock);
    i = pc_range_after(a);
    if (i > 0 && R.v[i - 1].p == a) {
        memmove(&R.v[i - 1], &R.v[i], (R.n - i) * sizeof *R.v);
        __atomic_store_n(&R.n, R.n - 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&R.lock);
}

int pc_hostkind_pinned(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    size_t i;
    int in;

    if (!__atomic_load_n(&R.n, __ATOMIC_ACQUIRE))
        return 0;
    pthread_mutex_lock(&R.lock);
    i = pc_range_after(a);
    in = i > 0 && a < R.v[i - 1].end;
    pthread_mutex_unlock(&R.lock);
    return in;
}

void pc_hostkind_forget_device(int dev)
{
    (void)dev;
    pthread_mutex_lock(&R.lock);
    __atomic_store_n(&R.n, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&R.lock);
}

void pc_hostkind_after_fork_child(void)
{
    pthread_mutex_init(&R.lock, NULL);
    R.v = NULL;
    R.cap = 0;
    __atomic_store_n(&R.n, 0, __ATOMIC_RELEASE);
}

/* --- the pages the runtime called pageable ---
 *
 * Pageable memory becomes pinned (or device or managed memory) only through
 * a CUDA call, and each such call pincache sees bumps pc_epoch.  A page
 * remembered under an older epoch is asked about again.  Per thread, a few
 * direct-mapped slots: no lock, no allocation. */
#define PC_PAGE_SHIFT 12
#define PC_MEMO_SLOTS 8

static unsigned pc_epoch = 1;  /* atomic; 0 never matches a slot's epoch */

struct pc_memo {
    uintptr_t page;
    unsigned epoch;
};
static __thread struct pc_memo pc_tls_memo[PC_MEMO_SLOTS] __attribute__((tls_model("initial-exec")));

static struct pc_memo *pc_memo_slot(uintptr_t page)
{
    return &pc_tls_memo[(page ^ (page >> 3)) & (PC_MEMO_SLOTS - 1)];
}

void pc_hostkind_changed(void)
{
    __atomic_add_fetch(&pc_epoch, 1, __ATOMIC_RELEASE);
}

unsigned pc_hostkind_epoch(void)
{
    return __atomic_load_n(&pc_epoch, __ATOMIC_ACQUIRE);
}

int pc_hostkind_pageable(const void *p)
{
    uintptr_t page = (uintptr_t)p >> PC_PAGE_SHIFT;
    const struct pc_memo *m = pc_memo_slot(page);

    return m->page == page && m->epoch && m->epoch == pc_hostkind_epoch();
}

void pc_hostkind_note_pageable(const void *p, unsigned epoch)
{
    uintptr_t page = (uintptr_t)p >> PC_PAGE_SHIFT;
    struct pc_memo *m = pc_memo_slot(page);

    m->page = page;
    m->epoch = epoch;
}
