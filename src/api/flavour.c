/* flavour.c - the runtime's and the driver's real calls behind the policies
 * (flavour.h). */
#include "config.h"
#include <stdint.h>
#include "api/flavour.h"
#include "real/drv_ext.h"
#include "real/real.h"

static int pc_rt_alloc(void **p, size_t size, unsigned int flags, int alloc_host)
{
    (void)alloc_host;
    return PC_CALL_REAL(cudaHostAlloc, p, size, flags);
}
static int pc_rt_free(void *p) { return PC_CALL_REAL(cudaFreeHost, p); }
static int pc_rt_get_flags(unsigned int *f, void *p) { return PC_CALL_REAL(cudaHostGetFlags, f, p); }
static int pc_rt_dev_ptr(void *d, void *p, unsigned int f) { return PC_CALL_REAL(cudaHostGetDevicePointer, d, p, f); }
static int pc_rt_reg(void *p, size_t n, unsigned int f) { return PC_CALL_REAL(cudaHostRegister, p, n, f); }
static int pc_rt_unreg(void *p) { return PC_CALL_REAL(cudaHostUnregister, p); }

static int pc_rt_capturing(void *s, int ptsz)
{
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    cudaStream_t q = ptsz && !s ? cudaStreamPerThread : (cudaStream_t)s;

    if (PC_CALL_REAL(cudaStreamIsCapturing, q, &st) != cudaSuccess)
        return 0;
    return st != cudaStreamCaptureStatusNone;
}

static int pc_rt_end_capture(void *s, void *g, int ptsz)
{
    return ptsz ? PC_CALL_REAL(cudaStreamEndCapture_ptsz, (cudaStream_t)s, (cudaGraph_t *)g)
                : PC_CALL_REAL(cudaStreamEndCapture, (cudaStream_t)s, (cudaGraph_t *)g);
}

static int pc_rt_copy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, void *s,
                      enum pc_copy_how how)
{
    switch (how) {
    case PC_COPY_SYNC:       return PC_CALL_REAL(cudaMemcpy, dst, src, n, kind);
    case PC_COPY_SYNC_PTDS:  return PC_CALL_REAL(cudaMemcpy_ptds, dst, src, n, kind);
    case PC_COPY_ASYNC:      return PC_CALL_REAL(cudaMemcpyAsync, dst, src, n, kind, (cudaStream_t)s);
    case PC_COPY_ASYNC_PTSZ: return PC_CALL_REAL(cudaMemcpyAsync_ptsz, dst, src, n, kind, (cudaStream_t)s);
    }
    return cudaErrorInvalidValue;
}

static int pc_drv_alloc(void **p, size_t size, unsigned int flags, int alloc_host)
{
    return alloc_host ? PC_CALL_DRV(cuMemAllocHost_v2, p, size) : PC_CALL_DRV(cuMemHostAlloc, p, size, flags);
}
static int pc_drv_free(void *p) { return PC_CALL_DRV(cuMemFreeHost, p); }
static int pc_drv_get_flags(unsigned int *f, void *p) { return PC_CALL_DRV(cuMemHostGetFlags, f, p); }
static int pc_drv_dev_ptr(void *d, void *p, unsigned int f)
{
    return PC_CALL_DRV(cuMemHostGetDevicePointer_v2, (CUdeviceptr *)d, p, f);
}
static int pc_drv_reg(void *p, size_t n, unsigned int f) { return PC_CALL_DRV(cuMemHostRegister_v2, p, n, f); }
static int pc_drv_unreg(void *p) { return PC_CALL_DRV(cuMemHostUnregister, p); }

static int pc_drv_capturing(void *s, int ptsz)
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult r = ptsz ? PC_CALL_DRV(cuStreamIsCapturing_ptsz, (CUstream)s, &st)
                      : PC_CALL_DRV(cuStreamIsCapturing, (CUstream)s, &st);

    return r == CUDA_SUCCESS && st != CU_STREAM_CAPTURE_STATUS_NONE;
}

static int pc_drv_end_capture(void *s, void *g, int ptsz)
{
    return ptsz ? PC_CALL_DRV(cuStreamEndCapture_ptsz, (CUstream)s, (CUgraph *)g)
                : PC_CALL_DRV(cuStreamEndCapture, (CUstream)s, (CUgraph *)g);
}

/* The driver names the direction where the runtime passes a kind:
 * cuMemcpyHtoD, cuMemcpyDtoH, and cuMemcpy (unified addressing) for the rest. */
#define PC_DRV_PTR(p) ((CUdeviceptr)(uintptr_t)(p))
static int pc_drv_copy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, void *s,
                       enum pc_copy_how how)
{
    CUstream q = (CUstream)s;

    switch (kind) {
    case cudaMemcpyHostToDevice:
        switch (how) {
        case PC_COPY_SYNC:       return PC_CALL_DRV(cuMemcpyHtoD_v2, PC_DRV_PTR(dst), src, n);
        case PC_COPY_SYNC_PTDS:  return PC_CALL_DRV(cuMemcpyHtoD_v2_ptds, PC_DRV_PTR(dst), src, n);
        case PC_COPY_ASYNC:      return PC_CALL_DRV(cuMemcpyHtoDAsync_v2, PC_DRV_PTR(dst), src, n, q);
        case PC_COPY_ASYNC_PTSZ: return PC_CALL_DRV(cuMemcpyHtoDAsync_v2_ptsz, PC_DRV_PTR(dst), src, n, q);
        }
        break;
    case cudaMemcpyDeviceToHost:
        switch (how) {
        case PC_COPY_SYNC:       return PC_CALL_DRV(cuMemcpyDtoH_v2, dst, PC_DRV_PTR(src), n);
        case PC_COPY_SYNC_PTDS:  return PC_CALL_DRV(cuMemcpyDtoH_v2_ptds, dst, PC_DRV_PTR(src), n);
        case PC_COPY_ASYNC:      return PC_CALL_DRV(cuMemcpyDtoHAsync_v2, dst, PC_DRV_PTR(src), n, q);
        case PC_COPY_ASYNC_PTSZ: return PC_CALL_DRV(cuMemcpyDtoHAsync_v2_ptsz, dst, PC_DRV_PTR(src), n, q);
        }
        break;
    default:
        switch (how) {
        case PC_COPY_SYNC:       return PC_CALL_DRV(cuMemcpy, PC_DRV_PTR(dst), PC_DRV_PTR(src), n);
        case PC_COPY_SYNC_PTDS:  return PC_CALL_DRV(cuMemcpy_ptds, PC_DRV_PTR(dst), PC_DRV_PTR(src), n);
        case PC_COPY_ASYNC:      return PC_CALL_DRV(cuMemcpyAsync, PC_DRV_PTR(dst), PC_DRV_PTR(src), n, q);
        case PC_COPY_ASYNC_PTSZ: return PC_CALL_DRV(cuMemcpyAsync_ptsz, PC_DRV_PTR(dst), PC_DRV_PTR(src), n, q);
        }
        break;
    }
    return CUDA_ERROR_INVALID_VALUE;
}

const struct pc_flavour pc_flavour_rt = {
    .runtime = 1,
    .alloc = pc_rt_alloc,
    .free = pc_rt_free,
    .get_flags = pc_rt_get_flags,
    .dev_ptr = pc_rt_dev_ptr,
    .reg = pc_rt_reg,
    .unreg = pc_rt_unreg,
    .capturing = pc_rt_capturing,
    .end_capture = pc_rt_end_capture,
    .copy = pc_rt_copy,
};

const struct pc_flavour pc_flavour_drv = {
    .runtime = 0,
    .alloc = pc_drv_alloc,
    .free = pc_drv_free,
    .get_flags = pc_drv_get_flags,
    .dev_ptr = pc_drv_dev_ptr,
    .reg = pc_drv_reg,
    .unreg = pc_drv_unreg,
    .capturing = pc_drv_capturing,
    .end_capture = pc_drv_end_capture,
    .copy = pc_drv_copy,
};
