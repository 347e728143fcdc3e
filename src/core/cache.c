/* cache.c - the process's cache of pinned blocks (cache.h). */
#include "config.h"
#include <pthread.h>
#include <stdint.h>
#include "core/cache.h"
#include "core/park.h"
#include "util/state.h"
#include "util/options.h"
#include "util/stats.h"

struct pc_pool pc_cache;

void pc_cache_init(const struct pc_pool_ops *ops)
{
    pc_pool_init(&pc_cache, ops, NULL, pc_opt.max_cached, (unsigned)pc_opt.headroom);
}

void pc_cache_after_fork_child(void)
{
    /* The parent's blocks are not ours to touch (the driver may not even map
     * them into the child).  Everything passes through from now on. */
    pthread_mutex_init(&pc_cache.lock, NULL);
}

/* The live block this thread's last pc_cache_owns found, and its state
 * word then.  While the word stands the block is the same live block (freed,
 * parked, forgotten or dropped, its word moves: registry.h), so a pointer
 * inside it is inside a live block, without the pool's lock: a program that
 * copies from a few long-lived blocks (PyTorch's pinned blocks, which its
 * own allocator keeps) asks the lock once per block, and other blocks'
 * frees do not make it ask again. */
static __thread struct pc_pool_span pc_owns_last __attribute__((tls_model("initial-exec")));

int pc_cache_owns(const void *p)
{
    struct pc_pool_span *m = &pc_owns_last;

    if (!p)
        return 0;
    if ((uintptr_t)p - m->ptr < m->size && pc_pool_span_live(m))
        return 1;
    return pc_pool_live_span(&pc_cache, p, m) == 0;
}

/* At exit, before the report: the threads' parked blocks are idle ones
 * (the report's cached and live bytes).  No CUDA, no allocation, and no
 * wait: with the lock held elsewhere (a thread stopped inside it), the
 * report counts them as live. */
void pc_cache_at_exit(void)
{
    if (pc_state.forked_child || pthread_mutex_trylock(&pc_cache.lock) != 0)
        return;
    (void)pc_park_steal_locked(&pc_cache, PC_PARK_ALL, 0);
    pthread_mutex_unlock(&pc_cache.lock);
}

void pc_cache_forget_device(int dev)
{
    pc_pool_drop_home(&pc_cache, (unsigned)dev);
}

int pc_cache_holds_room(void)
{
    pc_park_steal(&pc_cache);     /* parked blocks are room too */
    return __atomic_load_n(&pc_cache.cached, __ATOMIC_RELAXED) > 0 ||
           __atomic_load_n(&pc_cache.releasing, __ATOMIC_RELAXED) > 0 ||
           __atomic_load_n(&pc_stats.stage_ring_bytes, __ATOMIC_RELAXED) > 0;
}

int pc_cache_make_room(void)
{
    pc_park_steal(&pc_cache);
    int gave = __atomic_load_n(&pc_cache.cached, __ATOMIC_RELAXED) > 0 ||
               __atomic_load_n(&pc_cache.releasing, __ATOMIC_RELAXED) > 0;

    if (gave)
        pc_pool_release_idle(&pc_cache);
    if (pc_cache.ops->shed && pc_cache.ops->shed(pc_cache.ctx))
        gave = 1;
    return gave;
}
