/* cache.h - the process's one cache of pinned blocks (a pool, pool.h), which
 * the host-memory policy fills and empties, and which the copy paths ask
 * whether a pointer is one of its blocks. */
#ifndef PC_CACHE_H
#define PC_CACHE_H
#include "core/pool.h"

extern struct pc_pool pc_cache;

/* Start-up: the pool, with its CUDA operations (handed down by init.c) and
 * the cap and headroom of the options. */
void pc_cache_init(const struct pc_pool_ops *ops);
/* In a fork child: the parent's blocks are not ours to touch. */
void pc_cache_after_fork_child(void);

/* At exit, before the report: parked blocks back to the idle lists. */
void pc_cache_at_exit(void);

/* Device dev's primary context is gone, and its blocks with it. */
void pc_cache_forget_device(int dev);

/* Is p inside a block the program holds from the cache (live)? */
int pc_cache_owns(const void *p);

/* Pinned memory ran out in a call of the program's own (a registration)
 * where plainly it might not have: every idle block released, then the
 * staging rings' chunks (the pool's shed).  Nonzero when memory went back.
 * Waits for the device (real frees); cache mode only, never in a fork
 * child (the caller's to check). */
int pc_cache_make_room(void);
/* Is there anything for pc_cache_make_room to give back (idle blocks,
 * parked ones, blocks being released, the rings' chunks)?  No CUDA; the
 * threads' parked blocks are taken to the idle lists first (the pool's
 * lock). */
int pc_cache_holds_room(void);

#endif
