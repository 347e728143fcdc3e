/* park.c - each thread's parked block (park.h).
 *
 * Who holds a parked block is decided by its state word alone
 * (registry.h): its thread takes it back with a compare-and-swap from the
 * word it left (PARKED) to LIVE; a thread holding the pool's lock takes it
 * to the idle lists with one from PARKED to IDLE.  One wins; the other
 * finds the word moved, and the version in the word means that a block
 * parked again since, by this thread or another, never passes for the old
 * one.  Block structs are never freed while the pool lives, so a stale
 * pointer is only ever read.  A parked block stays counted as live in the
 * pool's counts until it reaches the idle lists. */
#include "config.h"
#include "core/park.h"

int pc_park_take(struct pc_pool *p, struct pc_park *k, size_t req, unsigned key, void **out)
{
    struct pc_block *b = __atomic_load_n(&k->parked, __ATOMIC_RELAXED);
    uint64_t w = k->parked_word;
    unsigned cls;

    (void)p;
    if (!b || k->parked_key != key || pc_size_class(req, &cls) == 0 || cls != k->parked_cls)
        return -1;
    __atomic_store_n(&k->parked, NULL, __ATOMIC_RELAXED);
    if (!__atomic_compare_exchange_n(&b->st, &w, PC_ST_NEXT(w, PC_ST_LIVE), 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED))
        return -1;           /* taken to the idle lists meanwhile */
    k->mine = b;
    k->mine_word = PC_ST_NEXT(w, PC_ST_LIVE);
    k->mine_ptr = k->parked_ptr;
    k->mine_size = k->parked_size;
    k->mine_cls = k->parked_cls;
    k->mine_key = key;
    PC_STAT_INC(alloc_hits);
    *out = k->parked_ptr;
    return 0;
}

int pc_park_put(struct pc_pool *p, struct pc_park *k, void *ptr)
{
    struct pc_block *b = k->mine;
    uint64_t w = k->mine_word;
    size_t cached;

    if (!b || k->mine_ptr != ptr)
        return -1;
    k->mine = NULL;                  /* freed, one way or the other */
    if (__atomic_load_n(&k->parked, __ATOMIC_RELAXED) ||
        __atomic_load_n(&p->trim_owed, __ATOMIC_RELAXED))
        return -1;
    /* What the idle lists would keep after this free (pc_pool_enforce_cap):
     * the block must fit under the cap and a memory limit with the idle
     * bytes there are. */
    cached = __atomic_load_n(&p->cached, __ATOMIC_RELAXED) + k->mine_size;
    if (cached > p->max_cached || (p->ops->mem_allow && p->ops->mem_allow(p->ctx, cached) < cached))
        return -1;
    if (!__atomic_compare_exchange_n(&b->st, &w, PC_ST_NEXT(w, PC_ST_PARKED), 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED))
        return -1;           /* not live any more: freed or dropped meanwhile */
    k->parked_word = PC_ST_NEXT(w, PC_ST_PARKED);
    k->parked_ptr = ptr;
    k->parked_size = k->mine_size;
    k->parked_cls = k->mine_cls;
    k->parked_key = k->mine_key;
    __atomic_store_n(&k->parked, b, __ATOMIC_RELEASE);
    return 0;
}

/* Take k's parked block to the idle lists (lock held): 1 if it went.
 * Only a block of class cls and key key, unless cls is PC_PARK_ALL (a
 * parked block's own fields stay as they are while it is parked, and
 * change only under the lock). */
static int pc_park_steal_one(struct pc_pool *p, struct pc_park *k, unsigned cls, unsigned key)
{
    struct pc_block *b = __atomic_load_n(&k->parked, __ATOMIC_ACQUIRE);
    uint64_t w;

    if (!b)
        return 0;
    w = __atomic_load_n(&b->st, __ATOMIC_ACQUIRE);
    if (PC_ST_OF(w) != PC_ST_PARKED || (cls != PC_PARK_ALL && (b->cls != cls || b->key != key)) ||
        !__atomic_compare_exchange_n(&b->st, &w, PC_ST_NEXT(w, PC_ST_IDLE), 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED))
        return 0;
    {
        struct pc_block *was = b;    /* (a failed exchange writes what it found here) */

        (void)__atomic_compare_exchange_n(&k->parked, &was, NULL, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    }
    /* The accounting of a free (pc_pool_free). */
    b->fence = 0;
    p->req_live -= b->req;
    b->req = 0;
    pc_idle_push(p, b);
    return 1;
}

int pc_park_steal_locked(struct pc_pool *p, unsigned cls, unsigned key)
{
    int any = 0;

    for (struct pc_park *k = p->parks; k; k = k->next)
        any |= pc_park_steal_one(p, k, cls, key);
    if (any)
        pc_publish(p);
    return any;
}

void pc_park_steal(struct pc_pool *p)
{
    pthread_mutex_lock(&p->lock);
    (void)pc_park_steal_locked(p, PC_PARK_ALL, 0);
    pthread_mutex_unlock(&p->lock);
}

void pc_park_join(struct pc_pool *p, struct pc_park *k)
{
    pthread_mutex_lock(&p->lock);
    if (!k->joined) {
        k->prev = NULL;
        k->next = p->parks;
        if (p->parks)
            p->parks->prev = k;
        p->parks = k;
        k->joined = 1;
    }
    pthread_mutex_unlock(&p->lock);
}

void pc_park_leave(struct pc_pool *p, struct pc_park *k)
{
    pthread_mutex_lock(&p->lock);
    if (k->joined) {
        if (pc_park_steal_one(p, k, PC_PARK_ALL, 0))
            pc_publish(p);
        if (k->prev)
            k->prev->next = k->next;
        else
            p->parks = k->next;
        if (k->next)
            k->next->prev = k->prev;
        k->prev = k->next = NULL;
        k->joined = 0;
    }
    k->mine = NULL;
    pthread_mutex_unlock(&p->lock);
}
