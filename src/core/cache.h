/* cache.h - the process's one cache of pinned blocks (a pool, pool.h), which
 * the host-memory policy fills and empties, and which the copy paths ask
 * whether a pointer is one of its blocks. */
#ifndef PC_CACHE_H
#define PC_CACHE_H
#include "core/pool.h"

extern struct pc_pool pc_cache;

/* Is p inside a block the program holds from the cache (live)? */
int pc_cache_owns(const void *p);

#endif
