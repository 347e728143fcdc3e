/* pool.h - the caching pinned allocator's policy: size classes, idle lists,
 * the cap and LRU trimming.  It makes no CUDA call of its own: the real
 * allocation, release and fence checks come through an ops table, so the
 * unit tests drive it with no runtime at all. */
#ifndef PC_POOL_H
#define PC_POOL_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include "core/registry.h"
#include "core/sizeclass.h"

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
    uint64_t unlived;                /* atomic, moved under the lock: counts the times live blocks
                                        stopped being live (freed, forgotten, dropped): cache.c */
    struct pc_alloc_cost cost;       /* of a real allocation (core/sizeclass.h) */
};

/* A live block stopped being live (lock held): every move of unlived is
 * made under the lock, so a store does where an atomic add would cost
 * each free one locked instruction more.  Returns the new count. */
static inline uint64_t pc_unlived_bump(struct pc_pool *p)
{
    uint64_t n = p->unlived + 1;

    __atomic_store_n(&p->unlived, n, __ATOMIC_RELEASE);
    return n;
}

/* headroom_pct: when a new real block is needed and the cache would then
 * hold more than the peak requested bytes plus headroom_pct% of them (at
 * least 32 MiB more), idle blocks are released first, least recently freed
 * first: at once when the device is quiet, else by the next free (a real
 * cudaHostAlloc does not wait for the device, a release does: a kernel
 * waiting for the host to go on after the allocation would hang). */
void pc_pool_init(struct pc_pool *p, const struct pc_pool_ops *ops, void *ctx, size_t max_cached,
                  unsigned headroom_pct);

/* Serve a request from an idle block whose fence is complete, or allocate a
 * new real block (trimming and retrying once on out of memory).  When the
 * bucket's oldest idle block is still fenced: with a single idle block,
 * allocate a second one (like a hand-written double buffer, so the CPU can
 * fill one while the GPU reads the other); with two or more, wait for the
 * oldest at most as long as a real allocation is expected to take.
 * Returns 0 or the runtime's error; *hit says which way it was served.
 * A request too large to cache, or of a home beyond PC_POOL_NHOME, returns
 * -1: the caller passes it through. */
int pc_pool_alloc(struct pc_pool *p, size_t req, unsigned key, void **out, int *hit);

/* What the pool knows of ptr: exact base only, or any pointer inside a block. */
enum pc_block_state pc_pool_state(struct pc_pool *p, const void *ptr, int interior);

/* The live block containing ptr (0), or none (-1): where it starts, its
 * size and key, and the pool's unlived count as it was found. */
struct pc_pool_span {
    uintptr_t ptr;
    size_t size;
    unsigned key;
    uint64_t unlived;
};
int pc_pool_live_span(struct pc_pool *p, const void *ptr, struct pc_pool_span *out);

/* The key of the live block containing ptr, or -1. */
static inline int pc_pool_live_key(struct pc_pool *p, const void *ptr)
{
    struct pc_pool_span s;

    return pc_pool_live_span(p, ptr, &s) == 0 ? (int)s.key : -1;
}

/* Take back a live block; fence is what must complete before reuse.
 * Returns PC_BLOCK_LIVE when it was live (now cached), PC_BLOCK_IDLE when it
 * was already idle (a double free), PC_BLOCK_NONE when not ours. */
enum pc_block_state pc_pool_free(struct pc_pool *p, void *ptr, uint64_t fence);

/* Drop a live block from the registry without releasing it (the caller hands
 * it to the real cudaFreeHost).  Returns 0, or -1 when ptr is not a live block. */
int pc_pool_forget(struct pc_pool *p, void *ptr);

/* After a free (whose real call waits for the device): enforce the cap,
 * what a memory limit allows (ops->mem_allow), and the headroom a miss left
 * to it.  Prefers moments when the device is
 * idle for the cap, because a real cudaFreeHost waits for the device and
 * stalls every thread; trims regardless once the idle bytes exceed the cap
 * by 1/8. */
void pc_pool_enforce_cap(struct pc_pool *p);

/* Forget every block of that home, live or idle, without releasing it: the
 * runtime already did (a device reset frees its context's allocations, and
 * only those).  Blocks of other homes stay. */
void pc_pool_drop_home(struct pc_pool *p, unsigned home);

/* Release least-recently-freed idle blocks until idle bytes <= target. */
void pc_pool_trim(struct pc_pool *p, size_t target);

/* Every idle block released, and other threads' releases waited for. */
void pc_pool_release_idle(struct pc_pool *p);

#endif
