/* test_pinned.c - the books of host-pool allocations and host VMM
 * (core/pinned.h) alone: live and peak through allocation and free, pool
 * destruction, create/map/release/unmap in both orders, lookups. */
#include "config.h"
#include "core/pinned.h"
#include "util/stats.h"
#include "tap.h"

#define MiB ((size_t)1 << 20)

static void test_pools(void)
{
    uintptr_t base = 0;
    size_t size = 0;

    pc_pinned_reset();
    pc_stats_reset();
    pc_pinned_pool_host(7);
    ok(pc_pinned_pool_is_host(7) && !pc_pinned_pool_is_host(8), "a host pool is remembered");
    pc_pinned_alloc(0x1000, MiB, 7);
    pc_pinned_alloc(0x9000, 8 * MiB, 7);
    is_int(pc_stats.host_pool_bytes, (long long)(9 * MiB), "two allocations live");
    ok(pc_pinned_alloc_free(0x9000) && !pc_pinned_alloc_free(0x9000), "freed once");
    ok(!pc_pinned_alloc_free(0x1001), "an interior pointer is not an allocation");
    pc_pinned_pool_destroyed(7);
    ok(!pc_pinned_pool_is_host(7), "a destroyed pool is forgotten");
    ok(pc_pinned_lookup(0x1000, &base, &size) == PC_PINNED_POOL && base == 0x1000 && size == MiB,
       "its live allocation stays");
    is_int(pc_stats.host_pool_bytes, (long long)MiB, "live: 1 MiB");
    is_int(pc_stats.host_pool_bytes_peak, (long long)(9 * MiB), "peak: 9 MiB");
}

static void test_vmm(void)
{
    uintptr_t base = 0;
    size_t size = 0;

    pc_pinned_reset();
    pc_stats_reset();
    pc_pinned_vmm_create(1, 4 * MiB);
    pc_pinned_vmm_create(2, 2 * MiB);
    pc_pinned_vmm_map(0x100000, 4 * MiB, 1);
    pc_pinned_vmm_map(0x900000, 2 * MiB, 3);   /* not a host handle: ignored */
    ok(pc_pinned_lookup(0x100000 + MiB, &base, &size) == PC_PINNED_VMM && base == 0x100000,
       "an address inside a mapped host handle");
    ok(pc_pinned_lookup(0x900000, &base, &size) == PC_PINNED_NONE, "a mapping of another handle is not");
    pc_pinned_vmm_release(1);
    is_int(pc_stats.host_vmm_bytes, (long long)(6 * MiB), "released while mapped: still pinned");
    pc_pinned_vmm_unmap(0x100000, 4 * MiB);
    is_int(pc_stats.host_vmm_bytes, (long long)(2 * MiB), "gone at its unmap");
    pc_pinned_vmm_map(0x200000, 2 * MiB, 2);
    pc_pinned_vmm_unmap(0x200000, 2 * MiB);
    is_int(pc_stats.host_vmm_bytes, (long long)(2 * MiB), "unmapped, not released: still pinned");
    pc_pinned_vmm_release(2);
    pc_pinned_vmm_release(2);
    is_int(pc_stats.host_vmm_bytes, 0, "gone at its release (once)");
    is_int(pc_stats.host_vmm_bytes_peak, (long long)(6 * MiB), "peak: 6 MiB");
    pc_pinned_vmm_create(4, 2 * MiB);
    pc_pinned_vmm_map(0x400000, MiB, 4);
    pc_pinned_vmm_map(0x500000, MiB, 4);
    pc_pinned_vmm_release(4);
    pc_pinned_vmm_unmap(0x400000, MiB);
    is_int(pc_stats.host_vmm_bytes, (long long)(2 * MiB), "one of two mappings left: still pinned");
    pc_pinned_vmm_unmap(0x400000, 2 * MiB);
    is_int(pc_stats.host_vmm_bytes, 0, "an unmap over both mappings: gone");
}

int main(void)
{
    test_pools();
    test_vmm();
    return done_testing();
}
