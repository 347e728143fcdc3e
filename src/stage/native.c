/* native.c - staging's platform check: devices that read pageable memory
 * themselves get no staging by default (PINCACHE_STAGE=auto).
 *
 * The rule, next to plan.c's measured ordering rules:
 *   - cudaDevAttrPageableMemoryAccessUsesHostPageTables 1 (ATS: Grace
 *     Hopper's NVLink-C2C, Power9 with NVLink): the device reads pageable
 *     memory through the host's own page tables, coherently, at the link's
 *     rate.  The driver needs no bounce buffer for a pageable copy there, and
 *     a CPU copy into a pinned ring is one more pass over the data that can
 *     only be slower.  Staging is off for that device.
 *   - PageableMemoryAccess 1 with UsesHostPageTables 0 (HMM): kernels can
 *     touch pageable memory by migrating its pages, but a pageable copy
 *     still goes through the driver's staging buffer, at the 6.5-15 GB/s
 *     measured on the H200 without HMM (assumed the same with HMM: no HMM
 *     machine has measured it).  Staging stays on.
 *   - both 0 (the H200, docs/runtime-facts.md): staging on.
 * Each device is asked once, the first time staging considers a copy of it;
 * the answer lasts until the device is reset, and a fork child forgets it. */
#include "config.h"
#include "stage/native.h"
#include <stdint.h>
#include "stage/plan.h"

enum { PC_NATIVE_UNKNOWN, PC_NATIVE_NO, PC_NATIVE_YES };

/* Per device, PC_NATIVE_*; relaxed atomics: racing first questions store the
 * same answer. */
static int pc_native[PC_STAGE_MAX_DEV];

int pc_native_device(int dev)
{
    int v, access = 0, host_tables = 0;

    if (dev < 0 || dev >= PC_STAGE_MAX_DEV)
        return 0;
    v = __atomic_load_n(&pc_native[dev], __ATOMIC_RELAXED);
    if (v != PC_NATIVE_UNKNOWN)
        return v == PC_NATIVE_YES;
    if (PC_CALL_REAL(cudaDeviceGetAttribute, &access, cudaDevAttrPageableMemoryAccess, dev) != cudaSuccess ||
        PC_CALL_REAL(cudaDeviceGetAttribute, &host_tables, cudaDevAttrPageableMemoryAccessUsesHostPageTables,
                     dev) != cudaSuccess) {
        pc_clear_own_error();
        access = host_tables = 0;
    }
    v = access && host_tables ? PC_NATIVE_YES : PC_NATIVE_NO;
    __atomic_store_n(&pc_native[dev], v, __ATOMIC_RELAXED);
    return v == PC_NATIVE_YES;
}

void pc_native_forget(int dev)
{
    for (int d = 0; d < PC_STAGE_MAX_DEV; d++)
        if (dev < 0 || d == dev)
            __atomic_store_n(&pc_native[d], PC_NATIVE_UNKNOWN, __ATOMIC_RELAXED);
}

uint64_t pc_native_devices(void)
{
    uint64_t mask = 0;

    for (int d = 0; d < PC_STAGE_MAX_DEV && d < 64; d++)
        if (__atomic_load_n(&pc_native[d], __ATOMIC_RELAXED) == PC_NATIVE_YES)
            mask |= (uint64_t)1 << d;
    return mask;
}
