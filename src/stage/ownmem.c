/* ownmem.c - the table of pincache's own pinned memory (ownmem.h).
 *
 * A sorted array of ranges under a mutex: it changes when a ring chunk or a
 * witness is made or given back, and is read by the program's frees of
 * pointers the cache does not know and by its pointer queries, where the
 * count read first answers for a process that has none. */
#include "config.h"
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "stage/ownmem.h"
#include "util/sorted.h"

struct pc_own {
    uintptr_t base;
    size_t size;
};

static pthread_mutex_t pc_own_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pc_own *pc_own_tab;
static size_t pc_own_n, pc_own_cap;   /* pc_own_n: atomic for the first look */

/* Index of the first entry whose base is above p.  Lock held. */
static size_t pc_own_upper(uintptr_t p)
{
    return pc_sorted_upper(pc_own_tab, pc_own_n, sizeof *pc_own_tab, p);
}

int pc_own_add(const void *base, size_t size)
{
    size_t i;

    pthread_mutex_lock(&pc_own_lock);
    if (pc_own_n == pc_own_cap) {
        size_t cap = pc_own_cap ? 2 * pc_own_cap : 32;
        struct pc_own *t = realloc(pc_own_tab, cap * sizeof *t);
        if (!t) {
            pthread_mutex_unlock(&pc_own_lock);
            return -1;
        }
        pc_own_tab = t;
        pc_own_cap = cap;
    }
    i = pc_own_upper((uintptr_t)base);
    memmove(&pc_own_tab[i + 1], &pc_own_tab[i], (pc_own_n - i) * sizeof *pc_own_tab);
    pc_own_tab[i] = (struct pc_own){ (uintptr_t)base, size };
    __atomic_store_n(&pc_own_n, pc_own_n + 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&pc_own_lock);
    return 0;
}

void pc_own_remove(const void *base)
{
    size_t i;

    if (!base)
        return;
    pthread_mutex_lock(&pc_own_lock);
    i = pc_own_upper((uintptr_t)base);
    if (i > 0 && pc_own_tab[i - 1].base == (uintptr_t)base) {
        memmove(&pc_own_tab[i - 1], &pc_own_tab[i], (pc_own_n - i) * sizeof *pc_own_tab);
        __atomic_store_n(&pc_own_n, pc_own_n - 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&pc_own_lock);
}

int pc_own_contains(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    size_t i;
    int in;

    if (!p || !__atomic_load_n(&pc_own_n, __ATOMIC_ACQUIRE))
        return 0;
    pthread_mutex_lock(&pc_own_lock);
    i = pc_own_upper(a);
    in = i > 0 && a - pc_own_tab[i - 1].base < pc_own_tab[i - 1].size;
    pthread_mutex_unlock(&pc_own_lock);
    return in;
}

void pc_own_after_fork_child(void)
{
    pthread_mutex_init(&pc_own_lock, NULL);
    __atomic_store_n(&pc_own_n, 0, __ATOMIC_RELAXED);
}
