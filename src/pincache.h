/* pincache.h - process state, the interposition guard and the core entry
 * points the thin wrappers in src/intercept/ call. */
#ifndef PC_PINCACHE_H
#define PC_PINCACHE_H
#include <stdint.h>
#include "cudart_ext.h"

#define PC_EXPORT __attribute__((visibility("default")))

struct pc_state {
    int inited;        /* pc_init() finished */
    int mode;          /* PC_MODE_*; fixed after init */
    int forked_child;  /* we are a child of fork(): pass everything through */
    int cuda_used;     /* this process made CUDA calls through us */
    uint64_t start_ns;
};
/* Written during init and in the fork child handler (single-threaded moments);
 * read without locks elsewhere. */
extern struct pc_state pc_state;

void pc_init(void);

/* Note that the program made a CUDA call through us (read at exit). */
static inline void pc_mark_used(void)
{
    if (!__atomic_load_n(&pc_state.cuda_used, __ATOMIC_RELAXED))
        __atomic_store_n(&pc_state.cuda_used, 1, __ATOMIC_RELAXED);
}

/* Thread-local guard: set while a wrapper runs, so that a runtime that calls
 * its own exported entry points (or our own calls) pass straight through. */
extern __thread int pc_tls_depth __attribute__((tls_model("initial-exec")));

static inline int pc_enter(void)
{
    if (pc_tls_depth)
        return 0;
    pc_tls_depth = 1;
    if (__builtin_expect(!__atomic_load_n(&pc_state.inited, __ATOMIC_ACQUIRE), 0))
        pc_init();
    return 1;
}

static inline void pc_leave(void)
{
    pc_tls_depth = 0;
}

/* Forward to the real function when the guard is already held, otherwise run
 * the core function under the guard.  This is all a wrapper does. */
#define PC_FORWARD_WITH(call_real, name, core_call, ...)                     \
    do {                                                                     \
        if (!pc_enter())                                                     \
            return call_real(name, __VA_ARGS__);                             \
        __auto_type pc_r_ = (core_call);                                     \
        pc_leave();                                                          \
        return pc_r_;                                                        \
    } while (0)
#define PC_FORWARD(name, core_call, ...) PC_FORWARD_WITH(PC_CALL_REAL, name, core_call, __VA_ARGS__)
#define PC_FORWARD_DRV(name, core_call, ...) PC_FORWARD_WITH(PC_CALL_DRV, name, core_call, __VA_ARGS__)

/* --- core entry points (hostmem.c) --- */
cudaError_t pc_host_alloc(void **p, size_t size, unsigned int flags);
cudaError_t pc_free_host(void *p);
cudaError_t pc_host_get_flags(unsigned int *flags, void *p);
cudaError_t pc_host_get_device_pointer(void **pdev, void *p, unsigned int flags);
cudaError_t pc_pointer_get_attributes(struct cudaPointerAttributes *a, const void *p);
cudaError_t pc_host_register(void *p, size_t size, unsigned int flags);
cudaError_t pc_host_unregister(void *p);
/* Driver-API frees and queries of blocks the runtime allocated. */
CUresult pc_drv_free_host(void *p);
CUresult pc_drv_host_get_flags(unsigned int *flags, void *p);
CUresult pc_drv_host_get_device_pointer(CUdeviceptr *pdev, void *p, unsigned int flags);
/* Driver-API allocation (alloc_host: cuMemAllocHost, else cuMemHostAlloc),
 * registration, streams, contexts and copies (hostmem.c). */
CUresult pc_drv_host_alloc(void **pp, size_t size, unsigned int flags, int alloc_host);
CUresult pc_drv_host_register(void *p, size_t size, unsigned int flags);
CUresult pc_drv_host_unregister(void *p);
CUresult pc_drv_stream_created(CUresult r, CUstream *s, unsigned int flags);
CUresult pc_drv_device_used(CUresult r, CUdevice dev);
/* Context teardown and creation (hostmem.c). */
CUresult pc_drv_primary_reset(CUdevice dev);
CUresult pc_drv_primary_released(CUresult r, CUdevice dev);
CUresult pc_drv_ctx_created(CUresult r, CUcontext *pctx);
CUresult pc_drv_ctx_destroyed(CUresult r, CUcontext ctx);
void pc_drv_copy_seen(CUstream s);
void pc_hostmem_init(void);
void pc_hostmem_after_fork_child(void);
void pc_hostmem_before_fork(void);   /* pthread_atfork prepare: count what the fork copies */

/* --- streams, devices, capture (hostmem.c) --- */
cudaError_t pc_stream_created(cudaError_t r, cudaStream_t *s, unsigned int flags);
void pc_stream_destroying(cudaStream_t s);
void pc_stream_seen(cudaStream_t s);
cudaError_t pc_device_set(cudaError_t r, int dev);
cudaError_t pc_device_reset(void);
cudaError_t pc_capture_began(cudaError_t r);
/* EndCapture (ptsz: the _ptsz form), counting the capture it ends. */
cudaError_t pc_end_capture(cudaStream_t s, cudaGraph_t *g, int ptsz);
CUresult pc_drv_capture_began(CUresult r);
CUresult pc_drv_end_capture(CUstream s, CUgraph *g, int ptsz);

/* --- copies (copy.c) --- */
enum pc_copy_how { PC_COPY_SYNC, PC_COPY_SYNC_PTDS, PC_COPY_ASYNC, PC_COPY_ASYNC_PTSZ };
cudaError_t pc_memcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                      cudaStream_t stream, enum pc_copy_how how);
/* The real runtime's copy for that call shape. */
cudaError_t pc_copy_real(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                         cudaStream_t stream, enum pc_copy_how how);
/* Other copy shapes (2D, 3D, peer, symbol): counted, then forwarded. */
void pc_copy_seen(size_t bytes);

#endif
