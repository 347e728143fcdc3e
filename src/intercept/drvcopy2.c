/* The driver's other copy shapes, per-thread forms included: device to
 * device, 2D, 3D and peer copies.  Each is counted as its runtime twin is
 * (pc_copy_seen: a 1D device-to-device copy under cudaMemcpy or
 * cudaMemcpyAsync, as the runtime's cudaMemcpy counts it; the others under
 * cudaMemcpyOther, as intercept/memcpy.c counts cudaMemcpy2D, 3D and
 * Peer), its stream shown to the fences (pc_drv_copy_seen), then the real
 * one.  Neither classified nor staged.  A static cudart resolves them
 * through cuGetProcAddress (procaddr.c: docs/runtime-facts.md lists what a
 * static cudart 13 asks for); a shared cudart's copy that reaches them with
 * the guard held is the runtime wrapper's, counted there once. */
#include "config.h"
#include "intercept/guard.h"
#include "api/copy.h"
#include "api/streams.h"
#include "real/real.h"
#include "diag/diag.h"
#include "intercept/intercept.h"

/* Bytes of a shape: WidthInBytes x Height (x Depth); 0 for a NULL descriptor,
 * which the driver rejects. */
#define PC_2D(p) ((p) ? (p)->WidthInBytes * (p)->Height : 0)
#define PC_3D(p) ((p) ? (p)->WidthInBytes * (p)->Height * (p)->Depth : 0)

/* The stream a call's work goes to, for the fences: the synchronous forms
 * run on the legacy stream (_ptds: the per-thread one); 0 in a _ptsz call is
 * the per-thread stream. */
#define PC_SYNC      ((CUstream)0)
#define PC_SYNC_PTDS CU_STREAM_PER_THREAD
#define PC_PTSZ(s)   ((s) ? (s) : CU_STREAM_PER_THREAD)

/* The exported name(params), accounted as api with bytes, its work on
 * stream s; args: the real call's. */
#define PC_SHAPE(api, name, params, bytes, s, ...)                           \
    PC_EXPORT CUresult name params                                           \
    {                                                                        \
        PC_DRV_TIMED(api, bytes, NULL, name,                                 \
                     (pc_copy_seen(bytes), pc_drv_copy_seen(s), PC_CALL_DRV(name, __VA_ARGS__)), \
                     __VA_ARGS__);                                           \
    }
#define PC_DTOD_P  (CUdeviceptr dst, CUdeviceptr src, size_t n)
#define PC_DTODA_P (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
#define PC_PEER_P  (CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n)
#define PC_PEERA_P (CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n, CUstream s)

PC_SHAPE(PC_API_memcpy, cuMemcpyDtoD_v2, PC_DTOD_P, n, PC_SYNC, dst, src, n)
PC_SHAPE(PC_API_memcpy, cuMemcpyDtoD_v2_ptds, PC_DTOD_P, n, PC_SYNC_PTDS, dst, src, n)
PC_SHAPE(PC_API_memcpy_async, cuMemcpyDtoDAsync_v2, PC_DTODA_P, n, s, dst, src, n, s)
PC_SHAPE(PC_API_memcpy_async, cuMemcpyDtoDAsync_v2_ptsz, PC_DTODA_P, n, PC_PTSZ(s), dst, src, n, s)

PC_SHAPE(PC_API_memcpy_other, cuMemcpy2D_v2, (const CUDA_MEMCPY2D *p), PC_2D(p), PC_SYNC, p)
PC_SHAPE(PC_API_memcpy_other, cuMemcpy2D_v2_ptds, (const CUDA_MEMCPY2D *p), PC_2D(p), PC_SYNC_PTDS, p)
PC_SHAPE(PC_API_memcpy_other, cuMemcpy2DUnaligned_v2, (const CUDA_MEMCPY2D *p), PC_2D(p), PC_SYNC, p)
PC_SHAPE(PC_API_memcpy_other, cuMemcpy2DUnaligned_v2_ptds, (const CUDA_MEMCPY2D *p), PC_2D(p), PC_SYNC_PTDS, p)
PC_SHAPE(PC_API_memcpy_other, cuMemcpy2DAsync_v2, (const CUDA_MEMCPY2D *p, CUstream s), PC_2D(p), s, p, s)
PC_SHAPE(PC_API_memcpy_other, cuMemcpy2DAsync_v2_ptsz, (const CUDA_MEMCPY2D *p, CUstream s), PC_2D(p),
         PC_PTSZ(s), p, s)

PC_SHAPE(PC_API_memcpy_other, cuMemcpy3D_v2, (const CUDA_MEMCPY3D *p), PC_3D(p), PC_SYNC, p)
PC_SHAPE(PC_API_memcpy_other, cuMemcpy3D_v2_ptds, (const CUDA_MEMCPY3D *p), PC_3D(p), PC_SYNC_PTDS, p)
PC_SHAPE(PC_API_memcpy_other, cuMemcpy3DAsync_v2, (const CUDA_MEMCPY3D *p, CUstream s), PC_3D(p), s, p, s)
PC_SHAPE(PC_API_memcpy_other, cuMemcpy3DAsync_v2_ptsz, (const CUDA_MEMCPY3D *p, CUstream s), PC_3D(p),
         PC_PTSZ(s), p, s)

PC_SHAPE(PC_API_memcpy_other, cuMemcpyPeer, PC_PEER_P, n, PC_SYNC, dst, dc, src, sc, n)
PC_SHAPE(PC_API_memcpy_other, cuMemcpyPeer_ptds, PC_PEER_P, n, PC_SYNC_PTDS, dst, dc, src, sc, n)
PC_SHAPE(PC_API_memcpy_other, cuMemcpyPeerAsync, PC_PEERA_P, n, s, dst, dc, src, sc, n, s)
PC_SHAPE(PC_API_memcpy_other, cuMemcpyPeerAsync_ptsz, PC_PEERA_P, n, PC_PTSZ(s), dst, dc, src, sc, n, s)

PC_SHAPE(PC_API_memcpy_other, cuMemcpy3DPeer, (const CUDA_MEMCPY3D_PEER *p), PC_3D(p), PC_SYNC, p)
PC_SHAPE(PC_API_memcpy_other, cuMemcpy3DPeer_ptds, (const CUDA_MEMCPY3D_PEER *p), PC_3D(p), PC_SYNC_PTDS, p)
PC_SHAPE(PC_API_memcpy_other, cuMemcpy3DPeerAsync, (const CUDA_MEMCPY3D_PEER *p, CUstream s), PC_3D(p), s, p, s)
PC_SHAPE(PC_API_memcpy_other, cuMemcpy3DPeerAsync_ptsz, (const CUDA_MEMCPY3D_PEER *p, CUstream s), PC_3D(p),
         PC_PTSZ(s), p, s)
