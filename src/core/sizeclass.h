/* sizeclass.h - the cache's size classes (DESIGN.md "Size policy"): page
 * granularity up to 64 KiB, then 8 classes per power of two, so a class
 * wastes at most 12.5%; and what a real allocation costs by size. */
#ifndef PC_SIZECLASS_H
#define PC_SIZECLASS_H
#include <stddef.h>
#include <stdint.h>

#define PC_CLASS_PAGE     4096u
#define PC_CLASS_SMALL    (64u * 1024u)
#define PC_CLASS_MAXSHIFT 48         /* larger requests are not cached */
#define PC_NCLASS (16 + (PC_CLASS_MAXSHIFT - 16) * 8)

/* Class size for a request of n > 0 bytes, and its index; 0 when n is too
 * large to be cached. */
size_t pc_size_class(size_t n, unsigned *idx);

/* Cost model of a real allocation, ns = fixed + per_mib * MiB, kept as
 * moving averages of what the real calls took (seeded from the H200
 * measurements: 0.53 ms up to 1 MB, 5.2 ms at 16 MB). */
struct pc_alloc_cost {
    uint64_t fixed_ns, per_mib_ns;
};
#define PC_ALLOC_COST_SEED { 500000, 300000 }
uint64_t pc_alloc_cost_ns(const struct pc_alloc_cost *c, size_t size);
/* Fold one real allocation's duration in: small blocks teach the fixed
 * part, large ones the per-MiB part. */
void pc_alloc_cost_learn(struct pc_alloc_cost *c, size_t size, uint64_t ns);

/* What the cache may hold: the larger of the peak request and the requests
 * live with this one (live), plus a slack of pct% of that, but at least
 * 32 MiB, so that a handful of differently sized buffers can all stay
 * cached, and at least one more block of size, so that it can be
 * double-buffered. */
size_t pc_hold_bound(size_t peak, size_t live, size_t size, unsigned pct);

#endif
