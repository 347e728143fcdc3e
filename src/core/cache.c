/* cache.c - the process's cache of pinned blocks (cache.h). */
#include "config.h"
#include "core/cache.h"

struct pc_pool pc_cache;

int pc_cache_owns(const void *p)
{
    return p && pc_pool_state(&pc_cache, p, 1) == PC_BLOCK_LIVE;
}
