/* cache.c - the process's cache of pinned blocks (cache.h). */
#include "config.h"
#include <pthread.h>
#include "core/cache.h"
#include "util/options.h"

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

int pc_cache_owns(const void *p)
{
    return p && pc_pool_state(&pc_cache, p, 1) == PC_BLOCK_LIVE;
}

void pc_cache_forget_device(int dev)
{
    pc_pool_drop_home(&pc_cache, (unsigned)dev);
}

int pc_cache_make_room(void)
{
    int gave = __atomic_load_n(&pc_cache.cached, __ATOMIC_RELAXED) > 0 ||
               __atomic_load_n(&pc_cache.releasing, __ATOMIC_RELAXED) > 0;

    if (gave)
        pc_pool_release_idle(&pc_cache);
    if (pc_cache.ops->shed && pc_cache.ops->shed(pc_cache.ctx))
        gave = 1;
    return gave;
}
