/* cudart_ext.h - CUDA runtime declarations the public header hides.
 * cuda_runtime_api.h declares the _ptds/_ptsz entry points only when a
 * translation unit is compiled for per-thread default streams; libcudart
 * exports them regardless, so we declare them here with identical types. */
#ifndef PC_CUDART_EXT_H
#define PC_CUDART_EXT_H
#include <cuda.h>
#include <cuda_runtime_api.h>

#define PC_PTDS_DECL(ret, name, params) extern __host__ ret CUDARTAPI name params;

PC_PTDS_DECL(cudaError_t, cudaMemcpy_ptds, (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind))
PC_PTDS_DECL(cudaError_t, cudaMemcpyAsync_ptsz, (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream))
PC_PTDS_DECL(cudaError_t, cudaMemcpy2D_ptds, (void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind))
PC_PTDS_DECL(cudaError_t, cudaMemcpy2DAsync_ptsz, (void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind, cudaStream_t stream))
PC_PTDS_DECL(cudaError_t, cudaMemcpy3D_ptds, (const struct cudaMemcpy3DParms *p))
PC_PTDS_DECL(cudaError_t, cudaMemcpy3DAsync_ptsz, (const struct cudaMemcpy3DParms *p, cudaStream_t stream))
PC_PTDS_DECL(cudaError_t, cudaMemcpyToSymbol_ptds, (const void *symbol, const void *src, size_t count, size_t offset, enum cudaMemcpyKind kind))
PC_PTDS_DECL(cudaError_t, cudaMemcpyFromSymbol_ptds, (void *dst, const void *symbol, size_t count, size_t offset, enum cudaMemcpyKind kind))
PC_PTDS_DECL(cudaError_t, cudaMemcpyToSymbolAsync_ptsz, (const void *symbol, const void *src, size_t count, size_t offset, enum cudaMemcpyKind kind, cudaStream_t stream))
PC_PTDS_DECL(cudaError_t, cudaMemcpyFromSymbolAsync_ptsz, (void *dst, const void *symbol, size_t count, size_t offset, enum cudaMemcpyKind kind, cudaStream_t stream))
PC_PTDS_DECL(cudaError_t, cudaStreamBeginCapture_ptsz, (cudaStream_t stream, enum cudaStreamCaptureMode mode))
PC_PTDS_DECL(cudaError_t, cudaStreamBeginCaptureToGraph_ptsz, (cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t *dependencies, const cudaGraphEdgeData *dependencyData, size_t numDependencies, enum cudaStreamCaptureMode mode))
PC_PTDS_DECL(cudaError_t, cudaStreamEndCapture_ptsz, (cudaStream_t stream, cudaGraph_t *pGraph))
PC_PTDS_DECL(cudaError_t, cudaStreamSynchronize_ptsz, (cudaStream_t stream))
PC_PTDS_DECL(cudaError_t, cudaMallocAsync_ptsz, (void **devPtr, size_t size, cudaStream_t hStream))
PC_PTDS_DECL(cudaError_t, cudaFreeAsync_ptsz, (void *devPtr, cudaStream_t hStream))
PC_PTDS_DECL(cudaError_t, cudaMallocFromPoolAsync_ptsz, (void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream))

/* Batched copies.  cuda.h maps cuMemcpyBatchAsync and cuMemcpy3DBatchAsync
 * to their CUDA 13 ABIs (_v2) with macros; libcuda still exports the plain
 * names with the CUDA 12.8 ABI (a failIdx argument: cudaTypedefs.h's
 * PFN_cuMemcpyBatchAsync_v12080), and pincache wraps both, so the macros
 * go and each ABI is declared under its own name. */
#undef cuMemcpyBatchAsync
#undef cuMemcpy3DBatchAsync
CUresult CUDAAPI cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                    CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                                    size_t *failIdx, CUstream hStream);
CUresult CUDAAPI cuMemcpyBatchAsync_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                         CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                                         size_t *failIdx, CUstream hStream);
CUresult CUDAAPI cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                            CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                                            CUstream hStream);
CUresult CUDAAPI cuMemcpy3DBatchAsync(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, size_t *failIdx,
                                      unsigned long long flags, CUstream hStream);
CUresult CUDAAPI cuMemcpy3DBatchAsync_ptsz(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, size_t *failIdx,
                                           unsigned long long flags, CUstream hStream);
CUresult CUDAAPI cuMemcpy3DBatchAsync_v2_ptsz(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList,
                                              unsigned long long flags, CUstream hStream);
PC_PTDS_DECL(cudaError_t, cudaMemcpyBatchAsync_ptsz, (void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count, struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, cudaStream_t stream))
PC_PTDS_DECL(cudaError_t, cudaMemcpy3DBatchAsync_ptsz, (size_t numOps, struct cudaMemcpy3DBatchOp *opList, unsigned long long flags, cudaStream_t stream))
/* libcudart.so.12's ABI of the runtime's (12.8, 12.9): a failIdx argument. */
typedef cudaError_t CUDARTAPI pc_cudaMemcpyBatchAsync12_t(void *const *dsts, const void *const *srcs,
    const size_t *sizes, size_t count, struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
    size_t *failIdx, cudaStream_t stream);
typedef cudaError_t CUDARTAPI pc_cudaMemcpy3DBatchAsync12_t(size_t numOps, struct cudaMemcpy3DBatchOp *opList,
    size_t *failIdx, unsigned long long flags, cudaStream_t stream);

#endif
