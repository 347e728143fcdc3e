/* pool.h - the caching pinned allocator's policy: size classes, idle lists,
 * the cap and LRU trimming.  It makes no CUDA call of its own: the real
 * allocation, release and fence checks come through an ops table, so the
 * unit tests drive it with no runtime at all. */
#ifndef PC_POOL_H
#define PC_POOL_H
#include "core/pool_int.h"

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
int pc_pool_alloc_for(struct pc_pool *p, struct pc_park *k, size_t req, unsigned key, void **out, int *hit);
/* The same for a caller with no park (k: the thread's, which learns the
 * block handed out, for pc_park_put: core/park.h). */
static inline int pc_pool_alloc(struct pc_pool *p, size_t req, unsigned key, void **out, int *hit)
{
    return pc_pool_alloc_for(p, NULL, req, key, out, hit);
}

/* What the pool knows of ptr: exact base only, or any pointer inside a block. */
enum pc_block_state pc_pool_state(struct pc_pool *p, const void *ptr, int interior);

/* The live block containing ptr (0), or none (-1): where it starts, its
 * size and key, and its block's state word as it was found. */
struct pc_pool_span {
    uintptr_t ptr;
    size_t size;
    unsigned key;
    struct pc_block *blk;
    uint64_t word;
};
int pc_pool_live_span(struct pc_pool *p, const void *ptr, struct pc_pool_span *out);

/* Is the block a span was found in still live, without the lock?  Every
 * change of a block's state moves its word (registry.h), and its struct is
 * never freed: a word unchanged is the same live block. */
static inline int pc_pool_span_live(const struct pc_pool_span *s)
{
    return s->blk && __atomic_load_n(&s->blk->st, __ATOMIC_ACQUIRE) == s->word;
}

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
