/* pool_int.h - the pool's types and what its two halves share: pool.c (the
 * idle lists, cap and trimming) and park.c (each thread's parked block).
 * Lock-held helpers; the API is pool.h's and park.h's. */
#ifndef PC_POOL_INT_H
#define PC_POOL_INT_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/registry.h"
#include "core/sizeclass.h"
#include "util/stats.h"

#define PC_NKEY 8                    /* flags & (Portable|WriteCombined|Mapped), packed */
/* A block's key is its flags (PC_NKEY of them) and its home: the device
 * whose context allocated it.  A block is handed out only for a request of
 * the same key, and a device reset forgets the blocks of its home. */
#define PC_POOL_NHOME 64
#define PC_KEY(flags, home) ((flags) | (unsigned)(home) * PC_NKEY)
#define PC_KEY_FLAGS(key) ((key) % PC_NKEY)
#define PC_KEY_HOME(key) ((key) / PC_NKEY)

struct pc_pool_ops {
    /* Allocate a real block; 0 or the runtime's error code, or
     * PC_POOL_ROOM_FIRST: nothing was tried, and the caller is to make room
     * (an idle block of a larger size, else the cache released) and ask
     * again. */
    int (*alloc)(void *ctx, size_t size, unsigned key, void **out);
    /* Release a real block (may stall the whole process: the caller decides when). */
    void (*release)(void *ctx, void *ptr, size_t size);
    /* Is this fence already known complete?  Must not call CUDA. */
    int (*fence_known)(void *ctx, uint64_t seq);
    /* Check (may call CUDA) whether this fence is complete. */
    int (*fence_poll)(void *ctx, uint64_t seq);
    /* Are all fences recorded so far complete (the device is idle)? */
    int (*device_idle)(void *ctx);
    /* Wait up to timeout_ns for a fence; 1 when it completed. */
    int (*fence_wait)(void *ctx, uint64_t seq, uint64_t timeout_ns);
    /* Has all device work queued so far completed (waiting a moment at
     * most)?  A release waits for all device work, as cudaFreeHost does,
     * and an allocation must not wait where the runtime's does not (may
     * call CUDA). */
    int (*device_quiet)(void *ctx);
    /* Of the idle bytes the cache holds (cached), those a memory limit lets
     * it keep (SIZE_MAX: no limit); NULL: no limits.  No CUDA. */
    size_t (*mem_allow)(void *ctx, size_t cached);
    /* Out of memory: give back pinned memory held besides the pool (the
     * staging rings); nonzero when some went.  NULL: none.  May call CUDA. */
    size_t (*shed)(void *ctx);
    int oom_error;                   /* the runtime's code for out of memory */
};

#define PC_POOL_ROOM_FIRST (-2)

enum pc_block_state { PC_BLOCK_NONE = 0, PC_BLOCK_LIVE, PC_BLOCK_IDLE };

struct pc_bucket { struct pc_block *head, *tail; unsigned n; };
struct pc_home { struct pc_bucket bucket[PC_NCLASS][PC_NKEY]; };

struct pc_pool {
    /* lock protects everything below; never held across an ops call */
    pthread_mutex_t lock;
    const struct pc_pool_ops *ops;
    void *ctx;
    size_t max_cached;               /* cap on idle bytes; read-only after init */
    struct pc_registry reg;
    struct pc_home *home[PC_POOL_NHOME];   /* idle lists, made on a home's first use */
    struct pc_block *lru_head, *lru_tail;
    size_t cached;                   /* idle bytes; written atomically, read without the lock by the cap check */
    size_t held;                     /* real bytes owned, live or idle */
    size_t releasing;                /* bytes a trim took out, still being released; written
                                        atomically under the lock, read without it (a retry's
                                        check: pool.c, cache.c) */
    pthread_cond_t released;         /* broadcast when releasing returns to 0 */
    size_t req_live, req_peak;       /* bytes the program asked for: now, and at most */
    size_t trim_owed;                /* atomic: the largest block whose miss left the headroom's trim to the next free */
    unsigned headroom_pct;           /* read-only after init */
    struct pc_block *dropped;        /* blocks forgotten by pc_pool_drop_home */
    struct pc_alloc_cost cost;       /* of a real allocation (core/sizeclass.h) */
    struct pc_park *parks;           /* every thread's park (core/park.c) */
    struct pc_block *spare;          /* structs of released blocks, for reuse (registry.h) */
};

/* A thread's own front end to the pool (core/park.c, park.h): the block
 * it was handed last, and one block it freed and keeps for its next
 * allocation of the same class and key.  The owner alone writes it, but
 * for parked, which a thread holding the pool's lock may also clear once
 * it took the block (the block's word decides who has it). */
struct pc_park {
    struct pc_block *parked;         /* atomic: the parked block, or NULL */
    uint64_t parked_word;            /* its word when parked */
    void *parked_ptr;
    size_t parked_size;
    unsigned parked_cls, parked_key;
    struct pc_block *mine;           /* the block this thread was handed last, */
    uint64_t mine_word;              /* its word then, */
    void *mine_ptr;                  /* its address, */
    size_t mine_size;                /* size, */
    unsigned mine_cls, mine_key;     /* class and key */
    struct pc_park *prev, *next;     /* the pool's list (lock) */
    int joined;                      /* on the list */
};

/* A block's state, read without the lock where a park may move it. */
static inline unsigned pc_block_st(struct pc_block *b)
{
    return PC_ST_OF(__atomic_load_n(&b->st, __ATOMIC_ACQUIRE));
}

/* Move a live block to st (lock held): fails (0) where its owner parked it
 * first. */
static inline int pc_block_unlive(struct pc_block *b, unsigned st)
{
    uint64_t w = __atomic_load_n(&b->st, __ATOMIC_ACQUIRE);

    return PC_ST_OF(w) == PC_ST_LIVE &&
           __atomic_compare_exchange_n(&b->st, &w, PC_ST_NEXT(w, st), 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/* Move a block no thread can move (idle, or a new one) to st (lock held). */
static inline void pc_block_set(struct pc_block *b, unsigned st)
{
    __atomic_store_n(&b->st, PC_ST_NEXT(__atomic_load_n(&b->st, __ATOMIC_RELAXED), st), __ATOMIC_RELEASE);
}

/* A block's struct (lock held): a spare one, its state word kept (a stale
 * park's question must never find an old word again), or a new one. */
static inline struct pc_block *pc_block_get(struct pc_pool *p)
{
    struct pc_block *b = p->spare;

    if (!b)
        return calloc(1, sizeof *b);
    p->spare = b->next;
    memset(&b->ptr, 0, sizeof *b - offsetof(struct pc_block, ptr));
    return b;
}

/* A released or forgotten block's struct, kept for reuse (lock held). */
static inline void pc_block_put(struct pc_pool *p, struct pc_block *b)
{
    pc_block_set(b, PC_ST_NONE);
    b->next = p->spare;
    p->spare = b;
}

/* The block this thread was handed (lock held), for its free (park.h). */
static inline void pc_mine(struct pc_park *k, struct pc_block *b)
{
    if (!k)
        return;
    k->mine = b;
    k->mine_word = __atomic_load_n(&b->st, __ATOMIC_RELAXED);
    k->mine_ptr = b->ptr;
    k->mine_size = b->size;
    k->mine_cls = b->cls;
    k->mine_key = b->key;
}

/* --- idle lists (lock held) --- */

/* The idle list of a block's class and key (handed out through it: it exists). */
static inline struct pc_bucket *pc_bucket_of(struct pc_pool *p, const struct pc_block *b)
{
    return &p->home[PC_KEY_HOME(b->key)]->bucket[b->cls][PC_KEY_FLAGS(b->key)];
}

/* Put a block on its idle list; its state is the caller's to set. */
static inline void pc_idle_push(struct pc_pool *p, struct pc_block *b)
{
    struct pc_bucket *q = pc_bucket_of(p, b);
    /* Blocks with nothing to wait for go first: they can be handed out now. */
    if (b->fence == 0 || !q->head) {
        b->prev = NULL;
        b->next = q->head;
        if (q->head) q->head->prev = b; else q->tail = b;
        q->head = b;
    } else {
        b->next = NULL;
        b->prev = q->tail;
        q->tail->next = b;
        q->tail = b;
    }
    b->lru_next = NULL;
    b->lru_prev = p->lru_tail;
    if (p->lru_tail) p->lru_tail->lru_next = b; else p->lru_head = b;
    p->lru_tail = b;
    q->n++;
    __atomic_store_n(&p->cached, p->cached + b->size, __ATOMIC_RELAXED);
}

/* The pool's gauges (stats.def), stored from its counts under its lock (no
 * read-modify-write on the hit path); a block a trim is releasing is held
 * and cached until its real free returns.  Observe mode's shadow moves live
 * and requested bytes, and never reaches the pool.  A parked block counts
 * as live until a thread takes it back to the idle lists. */
static inline void pc_publish(const struct pc_pool *p)
{
    PC_GAUGE_SET(cached_bytes, p->cached + p->releasing);
    PC_GAUGE_SET(held_bytes, p->held + p->releasing);
    PC_GAUGE_SET(live_bytes, p->held - p->cached);
    PC_GAUGE_SET(requested_bytes, p->req_live);
}

#endif
