/* hostpool.h - host memory pools and host VMM (issue 17): the calls are
 * the program's, forwarded unchanged; these only keep the books
 * (core/pinned.h) from their results.  Each takes the real call's result r
 * (runtime or driver: 0 is success in both) and returns it unchanged;
 * out-pointers are read only after a success.  Location types are shared:
 * cudaMemLocationTypeHost* == CU_MEM_LOCATION_TYPE_HOST* (asserted). */
#ifndef PC_API_HOSTPOOL_H
#define PC_API_HOSTPOOL_H
#include <stddef.h>
#include <stdint.h>

/* A pool created, or returned by a default/current-pool query, for a
 * location of type loc_type; pool_out is a cudaMemPool_t * or CUmemoryPool *. */
int pc_pool_known(int r, const void *pool_out, int loc_type);
int pc_pool_destroyed(int r, const void *pool);
/* pool made current for a location of type loc_type (-1: a device's, by
 * cudaDeviceSetMemPool/cuDeviceSetMemPool). */
int pc_pool_made_current(int r, int loc_type, const void *pool);
/* An allocation from pool (cudaMallocFromPoolAsync, cuMemAllocFromPoolAsync);
 * ptr_out is a void ** or CUdeviceptr *. */
int pc_pool_alloced(int r, const void *ptr_out, size_t size, const void *pool);
/* An allocation from the stream device's current pool (cudaMallocAsync,
 * cuMemAllocAsync): asks which pool only once a host pool was made current. */
int pc_async_alloced(int r, const void *ptr_out, size_t size);
int pc_pool_freed(int r, uintptr_t ptr);
/* Host VMM: cuMemCreate (handle_out: a CUmemGenericAllocationHandle *),
 * cuMemRelease, cuMemMap, cuMemUnmap. */
int pc_vmm_created(int r, const void *handle_out, size_t size, int loc_type);
int pc_vmm_released(int r, uint64_t handle);
int pc_vmm_mapped(int r, uintptr_t ptr, size_t size, uint64_t handle);
int pc_vmm_unmapped(int r, uintptr_t ptr, size_t size);

#endif
