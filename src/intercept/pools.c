/* Host memory pools and host VMM (issue 17): forwarded unchanged, and
 * counted from their results (api/hostpool.h); never cached.  A shared
 * cudart's pool calls reach the driver wrappers below with the guard held
 * and pass straight through, so each allocation is counted once. */
#include "config.h"
#include <stdint.h>
#include "intercept/guard.h"
#include "api/hostpool.h"
#include "real/drv_ext.h"
#include "real/real.h"

#define PC_LOC(l) ((l) ? (int)(l)->type : 0)
#define PC_PROPS_LOC(p) ((p) ? (int)(p)->location.type : 0)
#define PC_U(p) ((uintptr_t)(p))

/* --- the runtime's --- */

PC_EXPORT cudaError_t cudaMemPoolCreate(cudaMemPool_t *pool, const struct cudaMemPoolProps *props)
{
    PC_FORWARD(cudaMemPoolCreate, pc_pool_known(PC_CALL_REAL(cudaMemPoolCreate, pool, props), pool,
                                                PC_PROPS_LOC(props)), pool, props);
}

PC_EXPORT cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool)
{
    PC_FORWARD(cudaMemPoolDestroy, pc_pool_destroyed(PC_CALL_REAL(cudaMemPoolDestroy, pool), pool), pool);
}

PC_EXPORT cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t keep)
{
    /* The books count what the program holds, which a trim leaves alone. */
    PC_FORWARD(cudaMemPoolTrimTo, PC_CALL_REAL(cudaMemPoolTrimTo, pool, keep), pool, keep);
}

PC_EXPORT cudaError_t cudaMemGetDefaultMemPool(cudaMemPool_t *pool, struct cudaMemLocation *loc,
                                               enum cudaMemAllocationType type)
{
    PC_FORWARD(cudaMemGetDefaultMemPool,
               pc_pool_known(PC_CALL_REAL(cudaMemGetDefaultMemPool, pool, loc, type), pool, PC_LOC(loc)),
               pool, loc, type);
}

PC_EXPORT cudaError_t cudaMemGetMemPool(cudaMemPool_t *pool, struct cudaMemLocation *loc,
                                        enum cudaMemAllocationType type)
{
    PC_FORWARD(cudaMemGetMemPool, pc_pool_known(PC_CALL_REAL(cudaMemGetMemPool, pool, loc, type), pool, PC_LOC(loc)),
               pool, loc, type);
}

PC_EXPORT cudaError_t cudaMemSetMemPool(struct cudaMemLocation *loc, enum cudaMemAllocationType type,
                                        cudaMemPool_t pool)
{
    PC_FORWARD(cudaMemSetMemPool,
               pc_pool_made_current(PC_CALL_REAL(cudaMemSetMemPool, loc, type, pool), PC_LOC(loc), pool),
               loc, type, pool);
}

PC_EXPORT cudaError_t cudaDeviceSetMemPool(int dev, cudaMemPool_t pool)
{
    PC_FORWARD(cudaDeviceSetMemPool, pc_pool_made_current(PC_CALL_REAL(cudaDeviceSetMemPool, dev, pool), -1, pool),
               dev, pool);
}

PC_EXPORT cudaError_t cudaMallocFromPoolAsync(void **p, size_t n, cudaMemPool_t pool, cudaStream_t s)
{
    PC_FORWARD(cudaMallocFromPoolAsync,
               pc_pool_alloced(PC_CALL_REAL(cudaMallocFromPoolAsync, p, n, pool, s), p, n, pool), p, n, pool, s);
}

PC_EXPORT cudaError_t cudaMallocFromPoolAsync_ptsz(void **p, size_t n, cudaMemPool_t pool, cudaStream_t s)
{
    PC_FORWARD(cudaMallocFromPoolAsync_ptsz,
               pc_pool_alloced(PC_CALL_REAL(cudaMallocFromPoolAsync_ptsz, p, n, pool, s), p, n, pool),
               p, n, pool, s);
}

PC_EXPORT cudaError_t cudaMallocAsync(void **p, size_t n, cudaStream_t s)
{
    PC_FORWARD(cudaMallocAsync, pc_async_alloced(PC_CALL_REAL(cudaMallocAsync, p, n, s), p, n), p, n, s);
}

PC_EXPORT cudaError_t cudaMallocAsync_ptsz(void **p, size_t n, cudaStream_t s)
{
    PC_FORWARD(cudaMallocAsync_ptsz, pc_async_alloced(PC_CALL_REAL(cudaMallocAsync_ptsz, p, n, s), p, n), p, n, s);
}

PC_EXPORT cudaError_t cudaFreeAsync(void *p, cudaStream_t s)
{
    PC_FORWARD(cudaFreeAsync, pc_pool_freed(PC_CALL_REAL(cudaFreeAsync, p, s), PC_U(p)), p, s);
}

PC_EXPORT cudaError_t cudaFreeAsync_ptsz(void *p, cudaStream_t s)
{
    PC_FORWARD(cudaFreeAsync_ptsz, pc_pool_freed(PC_CALL_REAL(cudaFreeAsync_ptsz, p, s), PC_U(p)), p, s);
}

/* --- the driver's --- */

PC_EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    PC_FORWARD_DRV(cuMemPoolCreate, pc_pool_known(PC_CALL_DRV(cuMemPoolCreate, pool, props), pool,
                                                  PC_PROPS_LOC(props)), pool, props);
}

PC_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    PC_FORWARD_DRV(cuMemPoolDestroy, pc_pool_destroyed(PC_CALL_DRV(cuMemPoolDestroy, pool), pool), pool);
}

PC_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep)
{
    PC_FORWARD_DRV(cuMemPoolTrimTo, PC_CALL_DRV(cuMemPoolTrimTo, pool, keep), pool, keep);
}

PC_EXPORT CUresult cuMemGetDefaultMemPool(CUmemoryPool *pool, CUmemLocation *loc, CUmemAllocationType type)
{
    PC_FORWARD_DRV(cuMemGetDefaultMemPool,
                   pc_pool_known(PC_CALL_DRV(cuMemGetDefaultMemPool, pool, loc, type), pool, PC_LOC(loc)),
                   pool, loc, type);
}

PC_EXPORT CUresult cuMemGetMemPool(CUmemoryPool *pool, CUmemLocation *loc, CUmemAllocationType type)
{
    PC_FORWARD_DRV(cuMemGetMemPool, pc_pool_known(PC_CALL_DRV(cuMemGetMemPool, pool, loc, type), pool, PC_LOC(loc)),
                   pool, loc, type);
}

PC_EXPORT CUresult cuMemSetMemPool(CUmemLocation *loc, CUmemAllocationType type, CUmemoryPool pool)
{
    PC_FORWARD_DRV(cuMemSetMemPool,
                   pc_pool_made_current(PC_CALL_DRV(cuMemSetMemPool, loc, type, pool), PC_LOC(loc), pool),
                   loc, type, pool);
}

PC_EXPORT CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    PC_FORWARD_DRV(cuDeviceSetMemPool, pc_pool_made_current(PC_CALL_DRV(cuDeviceSetMemPool, dev, pool), -1, pool),
                   dev, pool);
}

PC_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s)
{
    PC_FORWARD_DRV(cuMemAllocFromPoolAsync,
                   pc_pool_alloced(PC_CALL_DRV(cuMemAllocFromPoolAsync, p, n, pool, s), p, n, pool), p, n, pool, s);
}

PC_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s)
{
    PC_FORWARD_DRV(cuMemAllocFromPoolAsync_ptsz,
                   pc_pool_alloced(PC_CALL_DRV(cuMemAllocFromPoolAsync_ptsz, p, n, pool, s), p, n, pool),
                   p, n, pool, s);
}

PC_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s)
{
    PC_FORWARD_DRV(cuMemAllocAsync, pc_async_alloced(PC_CALL_DRV(cuMemAllocAsync, p, n, s), p, n), p, n, s);
}

PC_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *p, size_t n, CUstream s)
{
    PC_FORWARD_DRV(cuMemAllocAsync_ptsz, pc_async_alloced(PC_CALL_DRV(cuMemAllocAsync_ptsz, p, n, s), p, n),
                   p, n, s);
}

PC_EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
    PC_FORWARD_DRV(cuMemFreeAsync, pc_pool_freed(PC_CALL_DRV(cuMemFreeAsync, p, s), PC_U(p)), p, s);
}

PC_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s)
{
    PC_FORWARD_DRV(cuMemFreeAsync_ptsz, pc_pool_freed(PC_CALL_DRV(cuMemFreeAsync_ptsz, p, s), PC_U(p)), p, s);
}

PC_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t n, const CUmemAllocationProp *prop,
                               unsigned long long flags)
{
    PC_FORWARD_DRV(cuMemCreate, pc_vmm_created(PC_CALL_DRV(cuMemCreate, h, n, prop, flags), h, n, PC_PROPS_LOC(prop)),
                   h, n, prop, flags);
}

PC_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle h)
{
    PC_FORWARD_DRV(cuMemRelease, pc_vmm_released(PC_CALL_DRV(cuMemRelease, h), h), h);
}

PC_EXPORT CUresult cuMemMap(CUdeviceptr p, size_t n, size_t off, CUmemGenericAllocationHandle h,
                            unsigned long long flags)
{
    PC_FORWARD_DRV(cuMemMap, pc_vmm_mapped(PC_CALL_DRV(cuMemMap, p, n, off, h, flags), PC_U(p), n, h),
                   p, n, off, h, flags);
}

PC_EXPORT CUresult cuMemUnmap(CUdeviceptr p, size_t n)
{
    PC_FORWARD_DRV(cuMemUnmap, pc_vmm_unmapped(PC_CALL_DRV(cuMemUnmap, p, n), PC_U(p), n), p, n);
}
