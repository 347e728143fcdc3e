/* Batched copies: cudaMemcpyBatchAsync and cudaMemcpy3DBatchAsync (their
 * _ptsz forms, and libcudart.so.12's failIdx ABI for the twins of
 * major.c), and the driver's cuMemcpyBatchAsync and cuMemcpy3DBatchAsync
 * in both ABIs (12080 with failIdx, _v2 without) and their _ptsz forms:
 * forwarded to the policy (api/batch.c).  A shared cudart's batch served by
 * the runtime wrappers meets the driver's with the guard held and is
 * counted once. */
#include "config.h"
#include "intercept/guard.h"
#include "api/batch.h"
#include "real/real.h"
#include "diag/diag.h"
#include "intercept/intercept.h"

/* The real libcudart.so.12 function of that name, with its own ABI. */
typedef pc_cudaMemcpyBatchAsync12_t pc_cudaMemcpyBatchAsync_ptsz12_t;
typedef pc_cudaMemcpy3DBatchAsync12_t pc_cudaMemcpy3DBatchAsync_ptsz12_t;
#define PC_CALL_REAL12(name, ...)                                                     \
    ({ pc_##name##12_t *pc_f_ = (pc_##name##12_t *)(void *)PC_REAL(name);             \
       pc_f_ ? pc_f_(__VA_ARGS__) : cudaErrorInitializationError; })

/* The policy's view of a 1D batch wrapper's arguments (named alike in each). */
#define PC_BATCH(drv_, ptsz_, has_fail_, fail_)                                       \
    pc_batch_copy(&(struct pc_batch){ .drv = (drv_), .ptsz = (ptsz_), .has_fail = (has_fail_),      \
                                      .dsts = dsts, .srcs = srcs, .sizes = sizes, .count = count,   \
                                      .attrs = attrs, .attrsIdxs = idxs, .numAttrs = nattrs,        \
                                      .failIdx = (fail_), .stream = (void *)s })
#define PC_RT_BATCH(name, ptsz) \
    PC_FORWARD_TIMED(PC_API_memcpy_batch, 0, NULL, name, (cudaError_t)PC_BATCH(0, ptsz, 0, NULL), \
                     dsts, srcs, sizes, count, attrs, idxs, nattrs, s)
#define PC_RT12_BATCH(name, ptsz) \
    PC_FORWARD_TIMED_WITH(PC_CALL_REAL12, PC_API_memcpy_batch, 0, NULL, name, \
                          (cudaError_t)PC_BATCH(0, ptsz, 1, fail), dsts, srcs, sizes, count, attrs, idxs, \
                          nattrs, fail, s)
#define PC_DRV_BATCH(name, ptsz) \
    PC_DRV_TIMED(PC_API_memcpy_batch, 0, NULL, name, (CUresult)PC_BATCH(1, ptsz, 1, fail), \
                 dsts, srcs, sizes, count, attrs, idxs, nattrs, fail, s)
#define PC_DRV_BATCH_V2(name, ptsz) \
    PC_DRV_TIMED(PC_API_memcpy_batch, 0, NULL, name, (CUresult)PC_BATCH(1, ptsz, 0, NULL), \
                 dsts, srcs, sizes, count, attrs, idxs, nattrs, s)

PC_EXPORT cudaError_t cudaMemcpyBatchAsync(void *const *dsts, const void *const *srcs, const size_t *sizes,
                                           size_t count, struct cudaMemcpyAttributes *attrs, size_t *idxs,
                                           size_t nattrs, cudaStream_t s)
{
    PC_RT_BATCH(cudaMemcpyBatchAsync, 0);
}

PC_EXPORT cudaError_t cudaMemcpyBatchAsync_ptsz(void *const *dsts, const void *const *srcs, const size_t *sizes,
                                                size_t count, struct cudaMemcpyAttributes *attrs, size_t *idxs,
                                                size_t nattrs, cudaStream_t s)
{
    PC_RT_BATCH(cudaMemcpyBatchAsync_ptsz, 1);
}

cudaError_t pc_cudaMemcpyBatchAsync_12(void *const *dsts, const void *const *srcs, const size_t *sizes,
                                       size_t count, struct cudaMemcpyAttributes *attrs, size_t *idxs,
                                       size_t nattrs, size_t *fail, cudaStream_t s)
{
    PC_RT12_BATCH(cudaMemcpyBatchAsync, 0);
}

cudaError_t pc_cudaMemcpyBatchAsync_ptsz_12(void *const *dsts, const void *const *srcs, const size_t *sizes,
                                            size_t count, struct cudaMemcpyAttributes *attrs, size_t *idxs,
                                            size_t nattrs, size_t *fail, cudaStream_t s)
{
    PC_RT12_BATCH(cudaMemcpyBatchAsync_ptsz, 1);
}

/* 3D batches: the stream seen, the real call, then its operands counted if it succeeded. */
#define PC_3D_BATCH(call_real, name, kind, ...) \
    PC_FORWARD_TIMED_WITH(call_real, PC_API_memcpy_3d_batch, 0, NULL, name, \
                          ({ pc_batch3d_seen_##kind(s); \
                             __auto_type pc_r3_ = call_real(name, __VA_ARGS__); \
                             pc_batch3d_made_##kind(n, ops, pc_r3_ == 0); \
                             pc_r3_; }), __VA_ARGS__)

PC_EXPORT cudaError_t cudaMemcpy3DBatchAsync(size_t n, struct cudaMemcpy3DBatchOp *ops, unsigned long long flags,
                                             cudaStream_t s)
{
    PC_3D_BATCH(PC_CALL_REAL, cudaMemcpy3DBatchAsync, rt, n, ops, flags, s);
}

PC_EXPORT cudaError_t cudaMemcpy3DBatchAsync_ptsz(size_t n, struct cudaMemcpy3DBatchOp *ops,
                                                  unsigned long long flags, cudaStream_t s)
{
    PC_3D_BATCH(PC_CALL_REAL, cudaMemcpy3DBatchAsync_ptsz, rt, n, ops, flags, s);
}

cudaError_t pc_cudaMemcpy3DBatchAsync_12(size_t n, struct cudaMemcpy3DBatchOp *ops, size_t *fail,
                                         unsigned long long flags, cudaStream_t s)
{
    PC_3D_BATCH(PC_CALL_REAL12, cudaMemcpy3DBatchAsync, rt, n, ops, fail, flags, s);
}

cudaError_t pc_cudaMemcpy3DBatchAsync_ptsz_12(size_t n, struct cudaMemcpy3DBatchOp *ops, size_t *fail,
                                              unsigned long long flags, cudaStream_t s)
{
    PC_3D_BATCH(PC_CALL_REAL12, cudaMemcpy3DBatchAsync_ptsz, rt, n, ops, fail, flags, s);
}

/* --- the driver's: CUDA 12.8's ABI under the plain names, 13.0's as _v2 --- */

PC_EXPORT CUresult cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                      CUmemcpyAttributes *attrs, size_t *idxs, size_t nattrs, size_t *fail,
                                      CUstream s)
{
    PC_DRV_BATCH(cuMemcpyBatchAsync, 0);
}

PC_EXPORT CUresult cuMemcpyBatchAsync_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                           CUmemcpyAttributes *attrs, size_t *idxs, size_t nattrs, size_t *fail,
                                           CUstream s)
{
    PC_DRV_BATCH(cuMemcpyBatchAsync_ptsz, 1);
}

PC_EXPORT CUresult cuMemcpyBatchAsync_v2(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                         CUmemcpyAttributes *attrs, size_t *idxs, size_t nattrs, CUstream s)
{
    PC_DRV_BATCH_V2(cuMemcpyBatchAsync_v2, 0);
}

PC_EXPORT CUresult cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                              CUmemcpyAttributes *attrs, size_t *idxs, size_t nattrs, CUstream s)
{
    PC_DRV_BATCH_V2(cuMemcpyBatchAsync_v2_ptsz, 1);
}

PC_EXPORT CUresult cuMemcpy3DBatchAsync(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail,
                                        unsigned long long flags, CUstream s)
{
    PC_3D_BATCH(PC_CALL_DRV, cuMemcpy3DBatchAsync, drv, n, ops, fail, flags, s);
}

PC_EXPORT CUresult cuMemcpy3DBatchAsync_ptsz(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail,
                                             unsigned long long flags, CUstream s)
{
    PC_3D_BATCH(PC_CALL_DRV, cuMemcpy3DBatchAsync_ptsz, drv, n, ops, fail, flags, s);
}

PC_EXPORT CUresult cuMemcpy3DBatchAsync_v2(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long flags,
                                           CUstream s)
{
    PC_3D_BATCH(PC_CALL_DRV, cuMemcpy3DBatchAsync_v2, drv, n, ops, flags, s);
}

PC_EXPORT CUresult cuMemcpy3DBatchAsync_v2_ptsz(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long flags,
                                                CUstream s)
{
    PC_3D_BATCH(PC_CALL_DRV, cuMemcpy3DBatchAsync_v2_ptsz, drv, n, ops, flags, s);
}
