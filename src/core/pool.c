/* pool.c - idle lists, cap and trimming (size classes: sizeclass.c).  No CUDA here. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "core/pool.h"
#include "core/park.h"
#include "util/stats.h"

void pc_pool_init(struct pc_pool *p, const struct pc_pool_ops *ops, void *ctx, size_t max_cached,
                  unsigned headroom_pct)
{
    *p = (struct pc_pool){0};
    pthread_mutex_init(&p->lock, NULL);
    p->ops = ops;
    p->ctx = ctx;
    p->max_cached = max_cached;
    p->headroom_pct = headroom_pct;
    p->cost = (struct pc_alloc_cost)PC_ALLOC_COST_SEED;
    pthread_cond_init(&p->released, NULL);
}

/* --- idle lists (lock held; pushing: pool_int.h) --- */

static void pc_idle_unlink(struct pc_pool *p, struct pc_block *b)
{
    struct pc_bucket *q = pc_bucket_of(p, b);
    if (b->prev) b->prev->next = b->next; else q->head = b->next;
    if (b->next) b->next->prev = b->prev; else q->tail = b->prev;
    if (b->lru_prev) b->lru_prev->lru_next = b->lru_next; else p->lru_head = b->lru_next;
    if (b->lru_next) b->lru_next->lru_prev = b->lru_prev; else p->lru_tail = b->lru_prev;
    b->prev = b->next = b->lru_prev = b->lru_next = NULL;
    q->n--;
    __atomic_store_n(&p->cached, p->cached - b->size, __ATOMIC_RELAXED);
}

/* What the cache may hold once a block of size is added for a request of
 * req (sizeclass.h).  Lock held. */
static size_t pc_hold_limit(const struct pc_pool *p, size_t size, size_t req)
{
    return pc_hold_bound(p->req_peak, p->req_live + req, size, p->headroom_pct);
}

/* The idle bytes the cache may keep once add more bytes are held: those it
 * holds less its excess over pc_hold_limit(size, req).  Lock held. */
static size_t pc_idle_target(const struct pc_pool *p, size_t add, size_t size, size_t req)
{
    size_t limit = pc_hold_limit(p, size, req);
    size_t excess = p->held + add > limit ? p->held + add - limit : 0;

    return p->cached > excess ? p->cached - excess : 0;
}

/* Lock held. */
static void pc_req_add(struct pc_pool *p, size_t req)
{
    p->req_live += req;
    if (p->req_live > p->req_peak)
        p->req_peak = p->req_live;
}

/* The oldest idle block of a bucket if its fence is known complete. */
static struct pc_block *pc_take_ready(struct pc_pool *p, struct pc_bucket *q, size_t req, uint64_t *wait_seq,
                                      unsigned *idle)
{
    struct pc_block *b = q->head;
    *wait_seq = 0;
    *idle = q->n;
    if (!b)
        return NULL;
    if (b->fence == 0 || p->ops->fence_known(p->ctx, b->fence)) {
        pc_idle_unlink(p, b);
        pc_block_set(b, PC_ST_LIVE);
        b->req = req;
        pc_req_add(p, req);
        return b;
    }
    *wait_seq = b->fence;
    return NULL;
}

enum pc_trim_why { PC_TRIM_HEADROOM, PC_TRIM_CAP, PC_TRIM_MEMORY };   /* for the report's advice */
static void pc_trim(struct pc_pool *p, size_t target, enum pc_trim_why why);

/* Idle bytes a memory limit lets the cache keep (no lock held). */
static size_t pc_mem_allow(struct pc_pool *p, size_t cached)
{
    return p->ops->mem_allow && cached ? p->ops->mem_allow(p->ctx, cached) : SIZE_MAX;
}

/* Room without a release, whose real frees wait for the device where the
 * runtime's allocation would not: an idle block of a larger class (same
 * home and flags) whose fence is done, the smallest first; the first fence
 * not yet known is polled once, outside the lock. */
static struct pc_block *pc_take_larger(struct pc_pool *p, unsigned cls, unsigned key, size_t req)
{
    struct pc_home *h;
    struct pc_block *b = NULL;
    uint64_t seq, poll = 0;
    unsigned idle, c, at = 0;

    pthread_mutex_lock(&p->lock);
    h = p->home[PC_KEY_HOME(key)];      /* never freed once made */
    for (c = cls + 1; h && c < PC_NCLASS && !b; c++) {
        b = pc_take_ready(p, &h->bucket[c][PC_KEY_FLAGS(key)], req, &seq, &idle);
        if (!b && seq && !poll) {
            poll = seq;
            at = c;
        }
    }
    if (!b && poll) {
        pthread_mutex_unlock(&p->lock);
        if (!p->ops->fence_poll(p->ctx, poll))
            return NULL;
        pthread_mutex_lock(&p->lock);
        b = pc_take_ready(p, &h->bucket[at][PC_KEY_FLAGS(key)], req, &seq, &idle);
    }
    if (b)
        pc_publish(p);
    pthread_mutex_unlock(&p->lock);
    return b;
}

static int pc_real_alloc(struct pc_pool *p, struct pc_park *k, size_t size, unsigned cls, unsigned key, size_t req,
                         void **out)
{
    struct pc_block *b;
    void *ptr = NULL;
    uint64_t t0;
    size_t cached, target, allow;

    /* Keep what the cache holds near what the program asks for, and within
     * what a memory limit allows: release idle blocks before adding a real
     * one, if the device is quiet; if not, the next free does. */
    pthread_mutex_lock(&p->lock);
    target = pc_idle_target(p, size, size, req);
    cached = p->cached;
    pthread_mutex_unlock(&p->lock);
    allow = pc_mem_allow(p, cached);
    if ((target < cached || allow < cached) && p->ops->device_quiet(p->ctx)) {
        if (allow < target)
            pc_trim(p, allow, PC_TRIM_MEMORY);
        else
            pc_trim(p, target, PC_TRIM_HEADROOM);
    } else if (target < cached) {
        size_t was = __atomic_load_n(&p->trim_owed, __ATOMIC_RELAXED);

        while (was < size && !__atomic_compare_exchange_n(&p->trim_owed, &was, size, 0, __ATOMIC_RELAXED,
                                                          __ATOMIC_RELAXED))
            ;
        PC_STAT_INC(trim_deferred);
    }

    t0 = pc_now_ns();
    int err = p->ops->alloc(p->ctx, size, key, &ptr);
    uint64_t dt = pc_now_ns() - t0;
    int room = err == PC_POOL_ROOM_FIRST;

    /* Out of memory, or room to make: parked blocks are idle ones. */
    if (room || err == p->ops->oom_error)
        pc_park_steal(p);
    size_t exact = (req + PC_CLASS_PAGE - 1) & ~(size_t)(PC_CLASS_PAGE - 1);   /* what plainly is asked */

    /* Out of memory with idle blocks held, or with another thread's trim
     * still releasing some (their memory is not back yet). */
    if (room || (err == p->ops->oom_error && (__atomic_load_n(&p->cached, __ATOMIC_RELAXED) > 0 ||
                                              __atomic_load_n(&p->releasing, __ATOMIC_RELAXED) > 0))) {
        if (!room)
            PC_STAT_INC(oom_retries);
        if ((b = pc_take_larger(p, cls, key, req)) != NULL) {
            PC_STAT_INC(oom_larger);
            *out = b->ptr;
            return 0;
        }
        pc_pool_release_idle(p);
        /* With nothing tried yet, the one attempt (pc_pool_ops) gets all
         * the room there is, and asks for what plainly is asked. */
        if (room && p->ops->shed)
            (void)p->ops->shed(p->ctx);
        if (room && size > exact) {
            size = exact;
            cls--;
        }
        t0 = pc_now_ns();
        err = p->ops->alloc(p->ctx, size, key, &ptr);
        dt = room ? pc_now_ns() - t0 : dt;     /* the first call tried nothing */
    }
    /* Then pincache's own pinned memory besides the cache goes; then the
     * class's rounding (plainly only the request's pages are asked for):
     * such a block serves the class below its size. */
    if (err == p->ops->oom_error && p->ops->shed && p->ops->shed(p->ctx))
        err = p->ops->alloc(p->ctx, size, key, &ptr);
    if (err == p->ops->oom_error && size > exact) {
        if ((err = p->ops->alloc(p->ctx, exact, key, &ptr)) == 0) {
            PC_STAT_INC(oom_exact);
            size = exact;
            cls--;
        }
    }
    if (err)
        return err;
    pthread_mutex_lock(&p->lock);
    pc_alloc_cost_learn(&p->cost, size, dt);
    if ((b = pc_block_get(p)) == NULL) {
        pthread_mutex_unlock(&p->lock);
        goto fail_release;
    }
    b->ptr = ptr;
    b->size = size;
    b->req = req;
    b->key = key;
    b->cls = cls;
    if (pc_registry_add(&p->reg, b) != 0) {
        pc_block_put(p, b);
        pthread_mutex_unlock(&p->lock);
        goto fail_release;
    }
    pc_block_set(b, PC_ST_LIVE);
    pc_mine(k, b);
    p->held += size;
    pc_req_add(p, req);
    pc_publish(p);
    pthread_mutex_unlock(&p->lock);
    *out = ptr;
    return 0;

fail_release:
    /* Bookkeeping failed: release it; the program still gets a working block
     * from the runtime directly. */
    p->ops->release(p->ctx, ptr, size);
    return p->ops->alloc(p->ctx, req, key, out);
}

int pc_pool_alloc_for(struct pc_pool *p, struct pc_park *k, size_t req, unsigned key, void **out, int *hit)
{
    unsigned cls;
    size_t size = pc_size_class(req, &cls);
    struct pc_bucket *q;
    struct pc_block *b;
    uint64_t wait_seq;
    unsigned idle;

    *hit = 0;
    if (k)
        k->mine = NULL;
    if (size == 0 || PC_KEY_HOME(key) >= PC_POOL_NHOME)
        return -1;

    pthread_mutex_lock(&p->lock);
    if (!p->home[PC_KEY_HOME(key)] && (p->home[PC_KEY_HOME(key)] = calloc(1, sizeof(struct pc_home))) == NULL) {
        pthread_mutex_unlock(&p->lock);
        return -1;
    }
    q = &p->home[PC_KEY_HOME(key)]->bucket[cls][PC_KEY_FLAGS(key)];
    /* An empty bucket: another thread's parked block may be of its class. */
    if ((b = pc_take_ready(p, q, req, &wait_seq, &idle)) == NULL && !wait_seq && p->parks &&
        pc_park_steal_locked(p, cls, key))
        b = pc_take_ready(p, q, req, &wait_seq, &idle);
    if (b) {
        pc_mine(k, b);
        pc_publish(p);
    }
    pthread_mutex_unlock(&p->lock);
    if (!b && wait_seq) {
        /* The oldest candidate is still fenced: poll it (outside the lock:
         * CUDA calls).  With one idle block, allocate a second one instead,
         * as a hand-written double buffer would.  With two or more, the
         * GPU is more than a double buffer behind: deepen the pipeline by
         * one more block while that fits in the headroom without releasing
         * anything (memory the headroom allows anyway); beyond it, wait for
         * the fence no longer than a new real block would take. */
        uint64_t budget;
        int room;
        pthread_mutex_lock(&p->lock);
        budget = pc_alloc_cost_ns(&p->cost, size);
        room = p->held + size <= pc_hold_limit(p, size, req);   /* within the headroom, releasing nothing */
        pthread_mutex_unlock(&p->lock);
        int ready = p->ops->fence_poll(p->ctx, wait_seq);
        if (!ready && idle >= 2 && !room) {
            PC_STAT_INC(alloc_fence_waits);
            ready = p->ops->fence_wait(p->ctx, wait_seq, budget);
        }
        if (ready) {
            pthread_mutex_lock(&p->lock);
            if ((b = pc_take_ready(p, q, req, &wait_seq, &idle)) != NULL) {
                pc_mine(k, b);
                pc_publish(p);
            }
            pthread_mutex_unlock(&p->lock);
        }
    }
    if (b) {
        PC_STAT_INC(alloc_hits);
        *hit = 1;
        *out = b->ptr;
        return 0;
    }
    PC_STAT_INC(alloc_misses);
    return pc_real_alloc(p, k, size, cls, key, req, out);
}

enum pc_block_state pc_pool_state(struct pc_pool *p, const void *ptr, int interior)
{
    struct pc_block *b;
    enum pc_block_state st = PC_BLOCK_NONE;

    pthread_mutex_lock(&p->lock);
    b = interior ? pc_registry_find_interior(&p->reg, ptr) : pc_registry_find(&p->reg, ptr);
    if (b)
        st = pc_block_st(b) == PC_ST_LIVE ? PC_BLOCK_LIVE : PC_BLOCK_IDLE;
    pthread_mutex_unlock(&p->lock);
    return st;
}

int pc_pool_live_span(struct pc_pool *p, const void *ptr, struct pc_pool_span *out)
{
    struct pc_block *b;
    uint64_t w;
    int live;

    pthread_mutex_lock(&p->lock);
    b = pc_registry_find_interior(&p->reg, ptr);
    w = b ? __atomic_load_n(&b->st, __ATOMIC_ACQUIRE) : 0;    /* one read: its thread may park it */
    if ((live = PC_ST_OF(w) == PC_ST_LIVE))
        *out = (struct pc_pool_span){ (uintptr_t)b->ptr, b->size, b->key, b, w };
    pthread_mutex_unlock(&p->lock);
    return live ? 0 : -1;
}

enum pc_block_state pc_pool_free(struct pc_pool *p, void *ptr, uint64_t fence)
{
    struct pc_block *b;
    enum pc_block_state st = PC_BLOCK_NONE;

    pthread_mutex_lock(&p->lock);
    b = pc_registry_find(&p->reg, ptr);
    if (b && !pc_block_unlive(b, PC_ST_IDLE)) {
        st = PC_BLOCK_IDLE;          /* idle or parked: a double free */
    } else if (b) {
        st = PC_BLOCK_LIVE;
        b->fence = fence;
        p->req_live -= b->req;
        b->req = 0;
        pc_idle_push(p, b);
        pc_publish(p);
    }
    pthread_mutex_unlock(&p->lock);
    return st;
}

int pc_pool_forget(struct pc_pool *p, void *ptr)
{
    struct pc_block *b;

    pthread_mutex_lock(&p->lock);
    b = pc_registry_find(&p->reg, ptr);
    if (!b || !pc_block_unlive(b, PC_ST_NONE)) {
        pthread_mutex_unlock(&p->lock);
        return -1;
    }
    pc_registry_del(&p->reg, b);
    p->held -= b->size;
    p->req_live -= b->req;
    pc_publish(p);
    pc_block_put(p, b);
    pthread_mutex_unlock(&p->lock);
    return 0;
}

static void pc_trim(struct pc_pool *p, size_t target, enum pc_trim_why why)
{
    struct pc_block *victims = NULL, *b;

    pthread_mutex_lock(&p->lock);
    pc_park_steal_locked(p, PC_PARK_ALL, 0);
    while (p->cached > target && (b = p->lru_head) != NULL) {
        pc_idle_unlink(p, b);
        pc_block_set(b, PC_ST_NONE);
        pc_registry_del(&p->reg, b);
        p->held -= b->size;
        __atomic_store_n(&p->releasing, p->releasing + b->size, __ATOMIC_RELAXED);
        b->next = victims;
        victims = b;
    }
    pthread_mutex_unlock(&p->lock);

    /* Released outside the lock: each real free waits for the device. */
    while ((b = victims) != NULL) {
        victims = b->next;
        p->ops->release(p->ctx, b->ptr, b->size);
        PC_STAT_INC(trim_blocks);
        PC_STAT_ADD(real_free_bytes, b->size);
        if (why == PC_TRIM_CAP) {
            PC_STAT_INC(trim_cap_blocks);
            PC_STAT_ADD(trim_cap_bytes, b->size);
        } else if (why == PC_TRIM_MEMORY) {
            PC_STAT_INC(trim_mem_blocks);
            PC_STAT_ADD(trim_mem_bytes, b->size);
        }
        pthread_mutex_lock(&p->lock);
        __atomic_store_n(&p->releasing, p->releasing - b->size, __ATOMIC_RELAXED);
        if (!p->releasing)
            pthread_cond_broadcast(&p->released);
        pc_publish(p);
        pc_block_put(p, b);
        pthread_mutex_unlock(&p->lock);
    }
}

void pc_pool_trim(struct pc_pool *p, size_t target)
{
    pc_trim(p, target, PC_TRIM_HEADROOM);
}

void pc_pool_release_idle(struct pc_pool *p)
{
    pc_pool_trim(p, 0);
    pthread_mutex_lock(&p->lock);
    while (p->releasing)
        pthread_cond_wait(&p->released, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

/* The headroom's trim a miss left (pc_real_alloc): down to what a request
 * of nothing would be allowed, with the headroom a block of the largest
 * size owed (a double buffer of it stays). */
static void pc_pay_owed_trim(struct pc_pool *p)
{
    size_t target;

    pthread_mutex_lock(&p->lock);
    target = pc_idle_target(p, 0, __atomic_exchange_n(&p->trim_owed, 0, __ATOMIC_RELAXED), 0);
    pthread_mutex_unlock(&p->lock);
    if (target < __atomic_load_n(&p->cached, __ATOMIC_RELAXED))
        pc_pool_trim(p, target);
}

void pc_pool_enforce_cap(struct pc_pool *p)
{
    size_t cached, allow;

    if (__atomic_load_n(&p->trim_owed, __ATOMIC_RELAXED))
        pc_pay_owed_trim(p);
    cached = __atomic_load_n(&p->cached, __ATOMIC_RELAXED);   /* no lock: called after every free */
    if (cached > (allow = pc_mem_allow(p, cached))) {
        pc_trim(p, allow, PC_TRIM_MEMORY);
        cached = __atomic_load_n(&p->cached, __ATOMIC_RELAXED);
    }
    if (cached <= p->max_cached)
        return;
    if (cached <= p->max_cached + p->max_cached / 8 && !p->ops->device_idle(p->ctx))
        return;
    pc_trim(p, p->max_cached, PC_TRIM_CAP);
}

void pc_pool_drop_home(struct pc_pool *p, unsigned home)
{
    struct pc_block *b, *tmp;
    int dropped = 0;

    pthread_mutex_lock(&p->lock);
    HASH_ITER(hh, p->reg.by_ptr, b, tmp) {
        uint64_t w = __atomic_load_n(&b->st, __ATOMIC_ACQUIRE);

        if (PC_KEY_HOME(b->key) != home)
            continue;
        /* Live or parked, a block may move under us: its thread parks it or
         * takes it back (a parked block counts as live). */
        while (!__atomic_compare_exchange_n(&b->st, &w, PC_ST_NEXT(w, PC_ST_NONE), 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE))
            ;
        if (PC_ST_OF(w) == PC_ST_IDLE)
            pc_idle_unlink(p, b);
        else
            p->req_live -= b->req;
        p->held -= b->size;
        dropped = 1;
        pc_registry_del(&p->reg, b);
        b->next = p->dropped;       /* kept reachable; never used again */
        p->dropped = b;
    }
    /* An empty pool (observe mode) leaves the shadow's gauges alone. */
    if (dropped)
        pc_publish(p);
    pthread_mutex_unlock(&p->lock);
}
