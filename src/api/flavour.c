/* flavour.c - the runtime's and the driver's real calls behind the policies
 * (flavour.h). */
#include "config.h"
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
};
