/* pinned.c - the books of host-pool allocations and host VMM handles
 * (pinned.h). */
#include "config.h"
#include <pthread.h>
#include <stdlib.h>
#include <uthash.h>
#include "core/pinned.h"
#include "core/hostkind.h"
#include "util/stats.h"

struct pc_pin_pool {           /* a host pool */
    uint64_t pool;
    UT_hash_handle hh;
};
struct pc_pin_alloc {          /* an allocation from a host pool */
    uintptr_t ptr;
    size_t size;
    uint64_t pool;
    UT_hash_handle hh;
};
struct pc_pin_handle {         /* a cuMemCreate'd host handle */
    uint64_t handle;
    size_t size;
    unsigned maps;             /* live mappings of it */
    int released;              /* cuMemRelease'd: gone with its last mapping */
    UT_hash_handle hh;
};
struct pc_pin_map {            /* a cuMemMap of a host handle */
    uintptr_t ptr;
    size_t size;
    uint64_t handle;
    UT_hash_handle hh;
};

/* B.lock protects all of B.  Taken only around calls that cost far more
 * than it (pool allocations, VMM calls); never held across a CUDA call. */
static struct {
    pthread_mutex_t lock;
    struct pc_pin_pool *pools;
    struct pc_pin_alloc *allocs;
    struct pc_pin_handle *handles;
    struct pc_pin_map *maps;
} B = { .lock = PTHREAD_MUTEX_INITIALIZER };
static int pc_host_current;    /* atomic: a host pool was ever made current */

#define PC_FIND(head, key, out) HASH_FIND(hh, head, &(key), sizeof(key), out)
#define PC_ADD(head, field, item) HASH_ADD(hh, head, field, sizeof((item)->field), item)
/* out = the entry of key, taken out of head (NULL when none), under B.lock. */
#define PC_TAKE(head, key, out)                                              \
    do {                                                                     \
        pthread_mutex_lock(&B.lock);                                         \
        PC_FIND(head, key, out);                                             \
        if (out)                                                             \
            HASH_DEL(head, out);                                             \
        pthread_mutex_unlock(&B.lock);                                       \
    } while (0)

void pc_pinned_pool_host(uint64_t pool)
{
    struct pc_pin_pool *p = calloc(1, sizeof *p), *old;

    if (!p)
        return;
    p->pool = pool;
    pthread_mutex_lock(&B.lock);
    PC_FIND(B.pools, pool, old);
    if (!old)
        PC_ADD(B.pools, pool, p);
    pthread_mutex_unlock(&B.lock);
    if (old)
        free(p);
}

int pc_pinned_pool_is_host(uint64_t pool)
{
    struct pc_pin_pool *p;

    pthread_mutex_lock(&B.lock);
    PC_FIND(B.pools, pool, p);
    pthread_mutex_unlock(&B.lock);
    return p != NULL;
}

void pc_pinned_pool_destroyed(uint64_t pool)
{
    struct pc_pin_pool *p;

    PC_TAKE(B.pools, pool, p);
    free(p);
}

void pc_pinned_host_current_set(void)
{
    __atomic_store_n(&pc_host_current, 1, __ATOMIC_RELAXED);
}

int pc_pinned_host_current_ever(void)
{
    return __atomic_load_n(&pc_host_current, __ATOMIC_RELAXED);
}

void pc_pinned_alloc(uintptr_t ptr, size_t size, uint64_t pool)
{
    struct pc_pin_alloc *a = calloc(1, sizeof *a), *old;

    if (!a)
        return;
    a->ptr = ptr;
    a->size = size;
    a->pool = pool;
    pthread_mutex_lock(&B.lock);
    HASH_REPLACE(hh, B.allocs, ptr, sizeof a->ptr, a, old);
    pthread_mutex_unlock(&B.lock);
    if (old) {                 /* cannot happen: the driver hands out each address once */
        PC_GAUGE_ADD(host_pool_bytes, -(int64_t)old->size);
        free(old);
    }
    PC_GAUGE_ADD(host_pool_bytes, size);
    pc_hostkind_changed();
}

int pc_pinned_alloc_free(uintptr_t ptr)
{
    struct pc_pin_alloc *a;

    PC_TAKE(B.allocs, ptr, a);
    if (!a)
        return 0;
    PC_GAUGE_ADD(host_pool_bytes, -(int64_t)a->size);
    free(a);
    return 1;
}

void pc_pinned_vmm_create(uint64_t handle, size_t size)
{
    struct pc_pin_handle *h = calloc(1, sizeof *h), *old;

    if (!h)
        return;
    h->handle = handle;
    h->size = size;
    pthread_mutex_lock(&B.lock);
    HASH_REPLACE(hh, B.handles, handle, sizeof h->handle, h, old);
    pthread_mutex_unlock(&B.lock);
    if (old) {                 /* a value reused after a release we missed */
        PC_GAUGE_ADD(host_vmm_bytes, -(int64_t)old->size);
        free(old);
    }
    PC_GAUGE_ADD(host_vmm_bytes, size);
}

/* Caller holds B.lock.  The handle's bytes when it is gone (released, no
 * mapping left): removed from the books; else 0. */
static size_t pc_vmm_maybe_gone(struct pc_pin_handle *h)
{
    size_t size;

    if (!h->released || h->maps)
        return 0;
    size = h->size;
    HASH_DEL(B.handles, h);
    free(h);
    return size;
}

void pc_pinned_vmm_release(uint64_t handle)
{
    struct pc_pin_handle *h;
    size_t gone = 0;

    pthread_mutex_lock(&B.lock);
    PC_FIND(B.handles, handle, h);
    if (h && !h->released) {
        h->released = 1;
        gone = pc_vmm_maybe_gone(h);
    }
    pthread_mutex_unlock(&B.lock);
    if (gone)
        PC_GAUGE_ADD(host_vmm_bytes, -(int64_t)gone);
}

void pc_pinned_vmm_map(uintptr_t ptr, size_t size, uint64_t handle)
{
    struct pc_pin_map *m = calloc(1, sizeof *m), *old = NULL;
    struct pc_pin_handle *h, *oh = NULL;
    size_t gone = 0;

    pc_hostkind_changed();     /* memory mapped where pages may have been pageable */
    if (!m)
        return;
    m->ptr = ptr;
    m->size = size;
    m->handle = handle;
    pthread_mutex_lock(&B.lock);
    PC_FIND(B.handles, handle, h);
    if (h && !h->released) {
        HASH_REPLACE(hh, B.maps, ptr, sizeof m->ptr, m, old);
        h->maps++;
        m = NULL;
        if (old) {             /* a mapping whose unmap we missed */
            PC_FIND(B.handles, old->handle, oh);
            if (oh && oh->maps && --oh->maps == 0)
                gone = pc_vmm_maybe_gone(oh);
        }
    }
    pthread_mutex_unlock(&B.lock);
    free(m);
    free(old);
    if (gone)
        PC_GAUGE_ADD(host_vmm_bytes, -(int64_t)gone);
}

void pc_pinned_vmm_unmap(uintptr_t ptr, size_t size)
{
    struct pc_pin_map *m, *tmp;
    struct pc_pin_handle *h;
    size_t gone = 0;

    pthread_mutex_lock(&B.lock);
    HASH_ITER(hh, B.maps, m, tmp) {
        if (m->ptr < ptr || m->ptr - ptr >= size)
            continue;
        HASH_DEL(B.maps, m);
        PC_FIND(B.handles, m->handle, h);
        if (h && h->maps && --h->maps == 0)
            gone += pc_vmm_maybe_gone(h);
        free(m);
    }
    pthread_mutex_unlock(&B.lock);
    if (gone)
        PC_GAUGE_ADD(host_vmm_bytes, -(int64_t)gone);
}

enum pc_pinned_src pc_pinned_lookup(uintptr_t p, uintptr_t *base, size_t *size)
{
    enum pc_pinned_src src = PC_PINNED_NONE;
    struct pc_pin_alloc *a;
    struct pc_pin_map *m, *tmp;

    pthread_mutex_lock(&B.lock);
    PC_FIND(B.allocs, p, a);
    if (a) {
        src = PC_PINNED_POOL;
        *base = a->ptr;
        *size = a->size;
    } else {
        HASH_ITER(hh, B.maps, m, tmp) {
            if (p >= m->ptr && p - m->ptr < m->size) {
                src = PC_PINNED_VMM;
                *base = m->ptr;
                *size = m->size;
                break;
            }
        }
    }
    pthread_mutex_unlock(&B.lock);
    return src;
}

void pc_pinned_after_fork_child(void)
{
    pthread_mutex_init(&B.lock, NULL);
    B.pools = NULL;
    B.allocs = NULL;
    B.handles = NULL;
    B.maps = NULL;
    __atomic_store_n(&pc_host_current, 0, __ATOMIC_RELAXED);
}

void pc_pinned_reset(void)
{
    struct pc_pin_pool *p, *pt;
    struct pc_pin_alloc *a, *at;
    struct pc_pin_handle *h, *ht;
    struct pc_pin_map *m, *mt;

    pthread_mutex_lock(&B.lock);
    HASH_ITER(hh, B.pools, p, pt) { HASH_DEL(B.pools, p); free(p); }
    HASH_ITER(hh, B.allocs, a, at) { HASH_DEL(B.allocs, a); free(a); }
    HASH_ITER(hh, B.handles, h, ht) { HASH_DEL(B.handles, h); free(h); }
    HASH_ITER(hh, B.maps, m, mt) { HASH_DEL(B.maps, m); free(m); }
    pthread_mutex_unlock(&B.lock);
    __atomic_store_n(&pc_host_current, 0, __ATOMIC_RELAXED);
}
