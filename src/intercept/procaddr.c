/* The driver's symbol resolvers: cuGetProcAddress (CUDA 11 and _v2) and the
 * runtime's cudaGetDriverEntryPoint (and ByVersion, and their _ptsz forms).
 * This is how the cudart that nvcc links statically, and every library
 * that resolves the driver by version, reaches cuMemHostAlloc and friends.
 *
 * The real resolver is asked first; only when it succeeds is its answer
 * replaced, and only where name, version and flags select exactly the ABI
 * of one of pincache's wrappers.  Older ABIs (cuMemAllocHost with a 32-bit
 * size, the CUDA 3.x cuStreamDestroy, cuMemcpyHtoD with a 32-bit count...)
 * keep the real function. */
#include "config.h"
#include <dlfcn.h>
#include <limits.h>
#include <string.h>
#include "intercept/guard.h"
#include "real/real.h"
#include "util/log.h"
#include "intercept/intercept.h"

#define PC_PER_THREAD 2   /* CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, cudaEnablePerThreadDefaultStream */
#define PC_LEGACY     1   /* CU_GET_PROC_ADDRESS_LEGACY_STREAM, cudaEnableLegacyStream */

/* A request for name with version in [since, until) and, when ptsz is 1,
 * per-thread semantics (0: either) gets fn.  Versions from cudaTypedefs.h
 * (PFN_cuMemAllocHost_v3020, PFN_cuMemcpy_v4000, PFN_cuMemcpyHtoD_v7000_ptds,
 * PFN_cuMemcpyHtoDAsync_v7000_ptsz, PFN_cuMemcpy2D_v3020, PFN_cuMemcpyPeer_v4000,
 * ...). */
struct pc_gpa {
    const char *name;
    int since, until;
    int ptsz;           /* 0 any, 1 per-thread only, -1 legacy only */
    void *fn;
};

/* A name with a per-thread form since 7000 (the _ptds/_ptsz ABIs): before
 * that a per-thread request gets the legacy form, the only one there was. */
#define PC_GPA_PT(name, since, legacy, per_thread)                           \
    { name, since, INT_MAX, -1, (void *)legacy },                            \
    { name, since, 7000, 1, (void *)legacy },                                \
    { name, 7000, INT_MAX, 1, (void *)per_thread }

/* A name whose per-thread form came with it (the stream-ordered allocator,
 * 11020: PFN_cuMemAllocAsync_v11020 and _v11020_ptsz). */
#define PC_GPA_PT_SINCE(name, since, legacy, per_thread)                     \
    { name, since, INT_MAX, -1, (void *)legacy },                            \
    { name, since, INT_MAX, 1, (void *)per_thread }

static const struct pc_gpa pc_gpa_tab[] = {
    { "cuCtxCreate", 3020, 11040, 0, (void *)cuCtxCreate_v2 },
    { "cuCtxCreate", 11040, 12050, 0, (void *)cuCtxCreate_v3 },
    { "cuCtxCreate", 12050, INT_MAX, 0, (void *)cuCtxCreate_v4 },
    { "cuCtxDestroy", 4000, INT_MAX, 0, (void *)cuCtxDestroy_v2 },
    { "cuDevicePrimaryCtxRelease", 11000, INT_MAX, 0, (void *)cuDevicePrimaryCtxRelease_v2 },
    { "cuDevicePrimaryCtxReset", 11000, INT_MAX, 0, (void *)cuDevicePrimaryCtxReset_v2 },
    { "cuDevicePrimaryCtxRetain", 7000, INT_MAX, 0, (void *)cuDevicePrimaryCtxRetain },
    { "cuDeviceSetMemPool", 11020, INT_MAX, 0, (void *)cuDeviceSetMemPool },
    { "cuGetProcAddress", 11030, 12000, 0, (void *)pc_cuGetProcAddress_v1 },
    { "cuGetProcAddress", 12000, INT_MAX, 0, (void *)cuGetProcAddress_v2 },
    PC_GPA_PT_SINCE("cuMemAllocAsync", 11020, cuMemAllocAsync, cuMemAllocAsync_ptsz),
    PC_GPA_PT_SINCE("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync_ptsz),
    { "cuMemAllocHost", 3020, INT_MAX, 0, (void *)cuMemAllocHost_v2 },
    { "cuMemCreate", 10020, INT_MAX, 0, (void *)cuMemCreate },
    PC_GPA_PT_SINCE("cuMemFreeAsync", 11020, cuMemFreeAsync, cuMemFreeAsync_ptsz),
    { "cuMemFreeHost", 2000, INT_MAX, 0, (void *)cuMemFreeHost },
    { "cuMemGetDefaultMemPool", 13000, INT_MAX, 0, (void *)cuMemGetDefaultMemPool },
    { "cuMemGetMemPool", 13000, INT_MAX, 0, (void *)cuMemGetMemPool },
    { "cuMemHostAlloc", 2020, INT_MAX, 0, (void *)cuMemHostAlloc },
    { "cuMemHostGetDevicePointer", 3020, INT_MAX, 0, (void *)cuMemHostGetDevicePointer_v2 },
    { "cuMemHostGetFlags", 2030, INT_MAX, 0, (void *)cuMemHostGetFlags },
    { "cuMemHostRegister", 6050, INT_MAX, 0, (void *)cuMemHostRegister_v2 },
    { "cuMemHostUnregister", 4000, INT_MAX, 0, (void *)cuMemHostUnregister },
    { "cuPointerGetAttribute", 4000, INT_MAX, 0, (void *)cuPointerGetAttribute },
    { "cuPointerGetAttributes", 7000, INT_MAX, 0, (void *)cuPointerGetAttributes },
    { "cuMemMap", 10020, INT_MAX, 0, (void *)cuMemMap },
    { "cuMemPoolCreate", 11020, INT_MAX, 0, (void *)cuMemPoolCreate },
    { "cuMemPoolDestroy", 11020, INT_MAX, 0, (void *)cuMemPoolDestroy },
    { "cuMemPoolTrimTo", 11020, INT_MAX, 0, (void *)cuMemPoolTrimTo },
    { "cuMemRelease", 10020, INT_MAX, 0, (void *)cuMemRelease },
    { "cuMemSetMemPool", 13000, INT_MAX, 0, (void *)cuMemSetMemPool },
    { "cuMemUnmap", 10020, INT_MAX, 0, (void *)cuMemUnmap },
    PC_GPA_PT("cuMemcpy", 4000, cuMemcpy, cuMemcpy_ptds),
    PC_GPA_PT("cuMemcpy2D", 3020, cuMemcpy2D_v2, cuMemcpy2D_v2_ptds),
    PC_GPA_PT("cuMemcpy2DAsync", 3020, cuMemcpy2DAsync_v2, cuMemcpy2DAsync_v2_ptsz),
    PC_GPA_PT("cuMemcpy2DUnaligned", 3020, cuMemcpy2DUnaligned_v2, cuMemcpy2DUnaligned_v2_ptds),
    PC_GPA_PT("cuMemcpy3D", 3020, cuMemcpy3D_v2, cuMemcpy3D_v2_ptds),
    PC_GPA_PT("cuMemcpy3DAsync", 3020, cuMemcpy3DAsync_v2, cuMemcpy3DAsync_v2_ptsz),
    PC_GPA_PT("cuMemcpy3DPeer", 4000, cuMemcpy3DPeer, cuMemcpy3DPeer_ptds),
    PC_GPA_PT("cuMemcpy3DPeerAsync", 4000, cuMemcpy3DPeerAsync, cuMemcpy3DPeerAsync_ptsz),
    PC_GPA_PT("cuMemcpyAsync", 4000, cuMemcpyAsync, cuMemcpyAsync_ptsz),
    PC_GPA_PT("cuMemcpyDtoD", 3020, cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds),
    PC_GPA_PT("cuMemcpyDtoDAsync", 3020, cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_ptsz),
    /* CUDA 12.8's ABI (failIdx) below 13000, 13.0's (_v2) from there */
    { "cuMemcpy3DBatchAsync", 12080, 13000, -1, (void *)cuMemcpy3DBatchAsync },
    { "cuMemcpy3DBatchAsync", 12080, 13000, 1, (void *)cuMemcpy3DBatchAsync_ptsz },
    { "cuMemcpy3DBatchAsync", 13000, INT_MAX, -1, (void *)cuMemcpy3DBatchAsync_v2 },
    { "cuMemcpy3DBatchAsync", 13000, INT_MAX, 1, (void *)cuMemcpy3DBatchAsync_v2_ptsz },
    { "cuMemcpyBatchAsync", 12080, 13000, -1, (void *)cuMemcpyBatchAsync },
    { "cuMemcpyBatchAsync", 12080, 13000, 1, (void *)cuMemcpyBatchAsync_ptsz },
    { "cuMemcpyBatchAsync", 13000, INT_MAX, -1, (void *)cuMemcpyBatchAsync_v2 },
    { "cuMemcpyBatchAsync", 13000, INT_MAX, 1, (void *)cuMemcpyBatchAsync_v2_ptsz },
    PC_GPA_PT("cuMemcpyDtoH", 3020, cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds),
    PC_GPA_PT("cuMemcpyDtoHAsync", 3020, cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz),
    PC_GPA_PT("cuMemcpyHtoD", 3020, cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds),
    PC_GPA_PT("cuMemcpyHtoDAsync", 3020, cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz),
    PC_GPA_PT("cuMemcpyPeer", 4000, cuMemcpyPeer, cuMemcpyPeer_ptds),
    PC_GPA_PT("cuMemcpyPeerAsync", 4000, cuMemcpyPeerAsync, cuMemcpyPeerAsync_ptsz),
    { "cuStreamBeginCapture", 10010, INT_MAX, -1, (void *)cuStreamBeginCapture_v2 },
    { "cuStreamBeginCapture", 10010, INT_MAX, 1, (void *)cuStreamBeginCapture_v2_ptsz },
    { "cuStreamBeginCaptureToGraph", 12030, INT_MAX, -1, (void *)cuStreamBeginCaptureToGraph },
    { "cuStreamBeginCaptureToGraph", 12030, INT_MAX, 1, (void *)cuStreamBeginCaptureToGraph_ptsz },
    { "cuStreamCreate", 2000, INT_MAX, 0, (void *)cuStreamCreate },
    { "cuStreamCreateWithPriority", 5050, INT_MAX, 0, (void *)cuStreamCreateWithPriority },
    { "cuStreamDestroy", 4000, INT_MAX, 0, (void *)cuStreamDestroy_v2 },
    { "cuStreamEndCapture", 10000, INT_MAX, -1, (void *)cuStreamEndCapture },
    { "cuStreamEndCapture", 10000, INT_MAX, 1, (void *)cuStreamEndCapture_ptsz },
};

/* The wrapper for that request, or NULL.  Cheap: names are compared only
 * when they start with "cu" and the table is small. */
static void *pc_gpa_find(const char *name, int version, int per_thread)
{
    if (!name || name[0] != 'c' || name[1] != 'u')
        return NULL;
    for (size_t i = 0; i < sizeof pc_gpa_tab / sizeof pc_gpa_tab[0]; i++) {
        const struct pc_gpa *g = &pc_gpa_tab[i];
        if (version < g->since || version >= g->until)
            continue;
        if ((g->ptsz == 1 && !per_thread) || (g->ptsz == -1 && per_thread))
            continue;
        if (strcmp(g->name, name) == 0)
            return g->fn;
    }
    return NULL;
}

/* PINCACHE_LOG=debug lists every name resolved this way: which driver entry
 * points a static cudart or a driver-API library uses (issue 17). */
static void pc_gpa_substitute(const char *name, void **pfn, int version, int per_thread)
{
    void *w = NULL;
    if (pfn && *pfn && !pc_is_self(*pfn) && (w = pc_gpa_find(name, version, per_thread)) != NULL) {
        /* What the wrapper calls, libcuda or not; a per-thread ABI (from
         * 7000) apart from the legacy one of the same name. */
        if (!per_thread || version >= 7000)
            pc_real_note_drv(name, per_thread, *pfn);
        *pfn = w;
    }
    pc_debug("entry point %s (version %d%s): %s", name ? name : "(null)", version,
             per_thread ? ", per-thread" : "", w ? "pincache's wrapper" : "the real one");
}

PC_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                       CUdriverProcAddressQueryResult *symbolStatus)
{
    CUresult r = PC_CALL_DRV(cuGetProcAddress_v2, symbol, pfn, cudaVersion, flags, symbolStatus);
    if (r == CUDA_SUCCESS && (!symbolStatus || *symbolStatus == CU_GET_PROC_ADDRESS_SUCCESS))
        pc_gpa_substitute(symbol, pfn, cudaVersion, (flags & PC_PER_THREAD) != 0);
    return r;
}

/* CUDA 11.3-11.8: no symbolStatus.  cuda.h maps the name cuGetProcAddress
 * to _v2, hence the assembler name. */
static pc_cuGetProcAddress_v1_t *pc_gpa_v1_real(void)
{
    static void *real;
    void *f = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
    if (!f) {
        f = pc_real_dlsym(RTLD_NEXT, "cuGetProcAddress");
        if (f && pc_is_self(f))
            f = NULL;
        __atomic_store_n(&real, f, __ATOMIC_RELEASE);
    }
    return (pc_cuGetProcAddress_v1_t *)f;
}

CUresult pc_cuGetProcAddress_v1(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    pc_cuGetProcAddress_v1_t *f = pc_gpa_v1_real();
    CUresult r = f ? f(symbol, pfn, cudaVersion, flags) : CUDA_ERROR_NOT_INITIALIZED;
    if (r == CUDA_SUCCESS)
        pc_gpa_substitute(symbol, pfn, cudaVersion, (flags & PC_PER_THREAD) != 0);
    return r;
}

/* The runtime's resolvers.  Without a version they resolve for the
 * runtime's own (newest); the _ptsz forms default to per-thread. */
static void pc_ep_substitute(cudaError_t r, const char *symbol, void **fn, int version,
                             unsigned long long flags, int ptsz_form,
                             enum cudaDriverEntryPointQueryResult *st)
{
    int per_thread = (flags & PC_PER_THREAD) || (ptsz_form && !(flags & PC_LEGACY));
    if (r == cudaSuccess && (!st || *st == cudaDriverEntryPointSuccess))
        pc_gpa_substitute(symbol, fn, version, per_thread);
}

/* name(args) with the version it resolves for and whether it is a _ptsz form. */
#define PC_EP_WRAP(name, ver, ptsz_form, params, ...)                         \
    PC_EXPORT cudaError_t name params                                        \
    {                                                                        \
        cudaError_t r = PC_CALL_REAL(name, __VA_ARGS__);                     \
        pc_ep_substitute(r, sym, fn, (ver), flags, ptsz_form, st);           \
        return r;                                                            \
    }
#define PC_EP_VER(v) ((v) > INT_MAX ? INT_MAX : (int)(v))

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
PC_EP_WRAP(cudaGetDriverEntryPoint, INT_MAX, 0,
           (const char *sym, void **fn, unsigned long long flags, enum cudaDriverEntryPointQueryResult *st),
           sym, fn, flags, st)
#pragma GCC diagnostic pop
PC_EP_WRAP(cudaGetDriverEntryPoint_ptsz, INT_MAX, 1,
           (const char *sym, void **fn, unsigned long long flags, enum cudaDriverEntryPointQueryResult *st),
           sym, fn, flags, st)
PC_EP_WRAP(cudaGetDriverEntryPointByVersion, PC_EP_VER(ver), 0,
           (const char *sym, void **fn, unsigned int ver, unsigned long long flags,
            enum cudaDriverEntryPointQueryResult *st),
           sym, fn, ver, flags, st)
PC_EP_WRAP(cudaGetDriverEntryPointByVersion_ptsz, PC_EP_VER(ver), 1,
           (const char *sym, void **fn, unsigned int ver, unsigned long long flags,
            enum cudaDriverEntryPointQueryResult *st),
           sym, fn, ver, flags, st)
