/* hostpool.c - the books of host pools and host VMM from the results of
 * the program's own calls (hostpool.h).  Nothing here changes an argument,
 * a result or the last error: the only CUDA call of its own is the
 * driver's cuPointerGetAttribute, which leaves the runtime's last error
 * alone, and only after a stream-ordered allocation made once a host pool
 * was current somewhere. */
#include "config.h"
#include <string.h>
#include "api/hostpool.h"
#include "core/pinned.h"
#include "real/drv_ext.h"
#include "real/real.h"
#include "util/options.h"
#include "util/state.h"

_Static_assert((int)cudaMemLocationTypeHost == (int)CU_MEM_LOCATION_TYPE_HOST &&
               (int)cudaMemLocationTypeHostNuma == (int)CU_MEM_LOCATION_TYPE_HOST_NUMA &&
               (int)cudaMemLocationTypeHostNumaCurrent == (int)CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT,
               "runtime and driver share the location types");
_Static_assert(sizeof(void *) == sizeof(CUdeviceptr) && sizeof(cudaMemPool_t) == sizeof(CUmemoryPool),
               "pointers, device pointers and pool handles are one word");

/* Books kept: mode not off, not a fork child (whose calls all fail). */
static int pc_books(int r)
{
    if (r != 0 || pc_state.mode == PC_MODE_OFF || pc_state.forked_child)
        return 0;
    pc_mark_used();
    return 1;
}

static int pc_host_loc(int t)
{
    return t == CU_MEM_LOCATION_TYPE_HOST || t == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
           t == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
}

/* A word the program's call wrote (a pointer, a handle). */
static uint64_t pc_word(const void *p)
{
    uint64_t v = 0;
    memcpy(&v, p, sizeof v);
    return v;
}

int pc_pool_known(int r, const void *pool_out, int loc_type)
{
    if (pc_books(r) && pool_out && pc_host_loc(loc_type))
        pc_pinned_pool_host(pc_word(pool_out));
    return r;
}

int pc_pool_destroyed(int r, const void *pool)
{
    if (pc_books(r))
        pc_pinned_pool_destroyed((uint64_t)(uintptr_t)pool);
    return r;
}

int pc_pool_made_current(int r, int loc_type, const void *pool)
{
    if (pc_books(r) && (pc_host_loc(loc_type) || pc_pinned_pool_is_host((uint64_t)(uintptr_t)pool)))
        pc_pinned_host_current_set();
    return r;
}

int pc_pool_alloced(int r, const void *ptr_out, size_t size, const void *pool)
{
    uint64_t p;

    if (pc_books(r) && ptr_out && (p = pc_word(ptr_out)) != 0 &&
        pc_pinned_pool_is_host((uint64_t)(uintptr_t)pool))
        pc_pinned_alloc((uintptr_t)p, size, (uint64_t)(uintptr_t)pool);
    return r;
}

/* Which pool p came from, or 0 when the driver cannot say. */
static uint64_t pc_pool_of(uint64_t p)
{
    typedef CUresult pc_attr_fn(void *, CUpointer_attribute, CUdeviceptr);
    pc_attr_fn *f = (pc_attr_fn *)pc_real_drv_entry((void *)PC_REAL(cuPointerGetAttribute),
                                                   "cuPointerGetAttribute", 4000);
    CUmemoryPool pool = NULL;

    if (!f || f(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, (CUdeviceptr)p) != CUDA_SUCCESS)
        return 0;
    return (uint64_t)(uintptr_t)pool;
}

int pc_async_alloced(int r, const void *ptr_out, size_t size)
{
    uint64_t p, pool;

    if (pc_books(r) && ptr_out && pc_pinned_host_current_ever() && (p = pc_word(ptr_out)) != 0 &&
        (pool = pc_pool_of(p)) != 0 && pc_pinned_pool_is_host(pool))
        pc_pinned_alloc((uintptr_t)p, size, pool);
    return r;
}

int pc_pool_freed(int r, uintptr_t ptr)
{
    if (pc_books(r) && ptr)
        pc_pinned_alloc_free(ptr);
    return r;
}

int pc_vmm_created(int r, const void *handle_out, size_t size, int loc_type)
{
    if (pc_books(r) && handle_out && pc_host_loc(loc_type))
        pc_pinned_vmm_create(pc_word(handle_out), size);
    return r;
}

int pc_vmm_released(int r, uint64_t handle)
{
    if (pc_books(r))
        pc_pinned_vmm_release(handle);
    return r;
}

int pc_vmm_mapped(int r, uintptr_t ptr, size_t size, uint64_t handle)
{
    if (pc_books(r))
        pc_pinned_vmm_map(ptr, size, handle);
    return r;
}

int pc_vmm_unmapped(int r, uintptr_t ptr, size_t size)
{
    if (pc_books(r))
        pc_pinned_vmm_unmap(ptr, size);
    return r;
}
