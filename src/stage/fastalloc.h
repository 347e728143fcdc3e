/* fastalloc.h - fast blocks: pinned memory made by pincache itself for a
 * cache miss or a staging ring chunk (PINCACHE_FAST_ALLOC), instead of the
 * real cudaHostAlloc.
 *
 * A fast block is mapped (shared memory, one object per chunk, or with
 * "private" one private huge-page mapping marked MADV_DONTFORK), pre-faulted
 * on the copy threads, and registered with one cuMemHostRegister carrying
 * the block's Portable and Mapped flags.  On the H200 such a block answers
 * every pointer query as a cudaHostAlloc block does, copies at the same rate
 * and, shared, forks the same way (docs/runtime-facts.md, "Fast blocks");
 * the answers that differ (a registration inside it, an unregistration of
 * it, its MAPPING_SIZE, a free that cannot be kept) are given by
 * register.c and hostmem.c from the table here. */
#ifndef PC_STAGE_FASTALLOC_H
#define PC_STAGE_FASTALLOC_H
#include <stddef.h>
#include <stdint.h>

/* A fast block of size bytes (whole pages) with cudaHostAlloc flags for
 * the current context, which must be the primary context of device dev.
 * 0 and *out, or -1: nothing was made and nothing is visible to the
 * program (no runtime call, no last error); the caller makes the real one.
 * ring_lock_held: called by the staging ring, under the staging lock. */
int pc_fast_alloc(void **out, size_t size, unsigned int flags, int dev, int ring_lock_held);

/* If p is a fast block's base: unregister and unmap it, 1.  Else 0. */
int pc_fast_release(void *p);

/* Is p inside a fast block (live or cached)?  2: its base, 1: inside, 0: no.
 * Asked only by the rare calls whose answer differs between a fast and a
 * cudaHostAlloc block. */
int pc_fast_contains(const void *p);

/* The size of the fast block containing p: 1 and *size, or 0. */
int pc_fast_size(const void *p, size_t *size);

/* The answer the program gets for freeing fast block p when its free cannot
 * be kept (fastdrv.h's pc_fast_free_answer for its device).  0: the caller
 * releases the block (pc_fast_release) as the real free would have. */
int pc_fast_free_answer_for(const void *p, int (*real_free)(void *p));

/* Wait until the blocks released so far are unmapped (before retrying an
 * allocation that failed for memory). */
void pc_fast_drain(void);

/* How chunks are faulted in parallel: stage.h's pc_stage_parallel (init.c
 * hands it down; without it the caller faults every chunk). */
void pc_fast_set_runner(int (*run)(void (*fn)(void *arg, uint64_t i), void *arg, uint64_t n, int lock_held,
                                   int wide));

/* Module life cycle (init.c): a lost device's blocks are released (their
 * registrations died with its context, as cudaHostAlloc blocks do); a fork
 * child forgets the table without touching the blocks. */
void pc_fast_forget_device(int dev);
void pc_fast_after_fork_child(void);

#endif
