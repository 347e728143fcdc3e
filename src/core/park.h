/* park.h - a thread's own front end to the pool: the block a thread frees
 * right after it was handed it, with nothing left to wait for, is parked
 * with the thread (idle to every other thread's question, on no idle
 * list) and handed back to the same thread's next allocation of its class
 * and key without the pool's lock.  Every release of idle blocks (a trim,
 * a memory limit, an allocation out of memory, a device's loss, the
 * report at exit) and a miss of any thread first takes the parked blocks
 * back to the idle lists, so the pool holds nothing it would not hold
 * otherwise.  No CUDA here. */
#ifndef PC_PARK_H
#define PC_PARK_H
#include <stddef.h>
#include "core/pool_int.h"

/* The thread's parked block for a request of req bytes with key, if it is
 * of that class and key: 0 and *out (a hit, counted), else -1 (the pool's
 * way). */
int pc_park_take(struct pc_pool *p, struct pc_park *k, size_t req, unsigned key, void **out);

/* Park ptr, freed by the thread it was handed to last, whose fence is
 * complete: 0, or -1 where it must be freed the pool's way (another block
 * parked already, a trim owed, the cap or a memory limit short of room for
 * it, or not that thread's block any more).  k must have joined. */
int pc_park_put(struct pc_pool *p, struct pc_park *k, void *ptr);

/* Put k on the pool's list (a thread's first park). */
void pc_park_join(struct pc_pool *p, struct pc_park *k);

/* A thread's exit: its parked block back to the idle lists, k off the list. */
void pc_park_leave(struct pc_pool *p, struct pc_park *k);

/* Parked blocks back to the idle lists, with the lock held: those of class
 * cls and key key (another thread's miss of that class), or every one
 * (cls PC_PARK_ALL: a release).  Nonzero when one went.  pc_park_steal:
 * every one, taking the lock. */
#define PC_PARK_ALL (~0u)
int pc_park_steal_locked(struct pc_pool *p, unsigned cls, unsigned key);
void pc_park_steal(struct pc_pool *p);

#endif
