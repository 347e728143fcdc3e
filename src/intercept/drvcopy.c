/* The driver's 1D host copies, per-thread forms included: counted like the
 * runtime's, then forwarded (api/copy.c's pc_drv_memcpy).  nvcc's static
 * cudart resolves each of them through cuGetProcAddress (procaddr.c), and
 * its copies reach the driver through these names, not cudaMemcpy
 * (docs/runtime-facts.md).  A shared cudart's copy served by the runtime
 * wrappers meets these with the guard held and is counted once. */
#include "config.h"
#include <stdint.h>
#include "intercept/guard.h"
#include "api/copy.h"
#include "real/real.h"
#include "diag/diag.h"
#include "intercept/intercept.h"

#define PC_P(d) ((void *)(uintptr_t)(d))
/* name(args): accounted as api, dst, src, n, kind, stream and shape as the policy reads them. */
#define PC_DRV_1D(api, name, dst, src, n, kind, s, how, ...) \
    PC_DRV_TIMED(api, n, NULL, name, pc_drv_memcpy(dst, src, n, kind, s, how), __VA_ARGS__)

PC_EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    PC_DRV_1D(PC_API_memcpy, cuMemcpy, PC_P(dst), PC_P(src), n, cudaMemcpyDefault, 0, PC_COPY_SYNC, dst, src, n);
}

PC_EXPORT CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    PC_DRV_1D(PC_API_memcpy, cuMemcpy_ptds, PC_P(dst), PC_P(src), n, cudaMemcpyDefault, 0, PC_COPY_SYNC_PTDS,
              dst, src, n);
}

PC_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
    PC_DRV_1D(PC_API_memcpy, cuMemcpyHtoD_v2, PC_P(dst), src, n, cudaMemcpyHostToDevice, 0, PC_COPY_SYNC,
              dst, src, n);
}

PC_EXPORT CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t n)
{
    PC_DRV_1D(PC_API_memcpy, cuMemcpyHtoD_v2_ptds, PC_P(dst), src, n, cudaMemcpyHostToDevice, 0,
              PC_COPY_SYNC_PTDS, dst, src, n);
}

PC_EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
    PC_DRV_1D(PC_API_memcpy, cuMemcpyDtoH_v2, dst, PC_P(src), n, cudaMemcpyDeviceToHost, 0, PC_COPY_SYNC,
              dst, src, n);
}

PC_EXPORT CUresult cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n)
{
    PC_DRV_1D(PC_API_memcpy, cuMemcpyDtoH_v2_ptds, dst, PC_P(src), n, cudaMemcpyDeviceToHost, 0,
              PC_COPY_SYNC_PTDS, dst, src, n);
}

PC_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    PC_DRV_1D(PC_API_memcpy_async, cuMemcpyAsync, PC_P(dst), PC_P(src), n, cudaMemcpyDefault, s, PC_COPY_ASYNC,
              dst, src, n, s);
}

PC_EXPORT CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    PC_DRV_1D(PC_API_memcpy_async, cuMemcpyAsync_ptsz, PC_P(dst), PC_P(src), n, cudaMemcpyDefault, s,
              PC_COPY_ASYNC_PTSZ, dst, src, n, s);
}

PC_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
    PC_DRV_1D(PC_API_memcpy_async, cuMemcpyHtoDAsync_v2, PC_P(dst), src, n, cudaMemcpyHostToDevice, s,
              PC_COPY_ASYNC, dst, src, n, s);
}

PC_EXPORT CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
    PC_DRV_1D(PC_API_memcpy_async, cuMemcpyHtoDAsync_v2_ptsz, PC_P(dst), src, n, cudaMemcpyHostToDevice, s,
              PC_COPY_ASYNC_PTSZ, dst, src, n, s);
}

PC_EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
    PC_DRV_1D(PC_API_memcpy_async, cuMemcpyDtoHAsync_v2, dst, PC_P(src), n, cudaMemcpyDeviceToHost, s,
              PC_COPY_ASYNC, dst, src, n, s);
}

PC_EXPORT CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
    PC_DRV_1D(PC_API_memcpy_async, cuMemcpyDtoHAsync_v2_ptsz, dst, PC_P(src), n, cudaMemcpyDeviceToHost, s,
              PC_COPY_ASYNC_PTSZ, dst, src, n, s);
}
