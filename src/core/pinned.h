/* pinned.h - the books of the pinned host memory the cache never owns and
 * only counts: allocations from host memory pools and host VMM handles
 * (issue 17).  CUDA-free: handles and pointers are plain integers, so the
 * accounting is unit-tested with no runtime (tests/unit/test_pinned.c).
 *
 * Only successful CUDA calls reach these functions.  Live bytes go to the
 * gauges host_pool_bytes and host_vmm_bytes (stats.def).
 *
 * Host pools.  A pool is remembered as a host pool when it was created, or
 * returned by a default/current-pool query, for a location of type host,
 * host NUMA or host NUMA current.  An allocation from one is counted from
 * its allocation to its cudaFreeAsync/cuMemFreeAsync (the bytes the program
 * holds; what the pool keeps reserved is the driver's business).  A pool
 * destroyed with live allocations keeps them valid (cuMemPoolDestroy's
 * documentation), so destroying forgets the pool, not its allocations.
 *
 * Host VMM.  cuMemCreate's physical host memory is counted from creation
 * until it is released and unmapped everywhere: cuMemRelease of a mapped
 * handle frees the memory only once its last mapping is unmapped
 * (cuMemRelease's documentation), so a release with mappings left only
 * marks the handle.  Mappings are kept by their start address; an unmap
 * drops every mapping that starts inside the range it names. */
#ifndef PC_CORE_PINNED_H
#define PC_CORE_PINNED_H
#include <stddef.h>
#include <stdint.h>

/* Where a pinned pointer comes from (pc_pinned_lookup). */
enum pc_pinned_src { PC_PINNED_NONE, PC_PINNED_POOL, PC_PINNED_VMM };

/* Host pools. */
void pc_pinned_pool_host(uint64_t pool);              /* pool is a host pool */
int pc_pinned_pool_is_host(uint64_t pool);
void pc_pinned_pool_destroyed(uint64_t pool);
/* A host pool was made the current pool of some location: from then on the
 * stream-ordered allocations that name no pool are worth a question. */
void pc_pinned_host_current_set(void);
int pc_pinned_host_current_ever(void);

/* Allocations from host pools: added with their size, taken back at their
 * free.  pc_pinned_alloc_free answers 1 when ptr was one (then uncounted). */
void pc_pinned_alloc(uintptr_t ptr, size_t size, uint64_t pool);
int pc_pinned_alloc_free(uintptr_t ptr);

/* Host VMM: handles by value, mappings by start address. */
void pc_pinned_vmm_create(uint64_t handle, size_t size);
void pc_pinned_vmm_release(uint64_t handle);
/* A mapping of [ptr, ptr+size) to handle (ignored unless handle is a host one). */
void pc_pinned_vmm_map(uintptr_t ptr, size_t size, uint64_t handle);
void pc_pinned_vmm_unmap(uintptr_t ptr, size_t size);

/* Which of these p lies in: a host-pool allocation (its base) or a mapped
 * host VMM range (any address inside it); *base and *size describe it. */
enum pc_pinned_src pc_pinned_lookup(uintptr_t p, uintptr_t *base, size_t *size);

/* In a fork child: the parent's books are not the child's (entries leaked). */
void pc_pinned_after_fork_child(void);
/* Tests only: forget everything (gauges included). */
void pc_pinned_reset(void);

#endif
