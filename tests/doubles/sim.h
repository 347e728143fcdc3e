/* sim.h - what the simulated libcudart.so.13 offers beyond the CUDA runtime API.
 *
 * The simulated device (tests/doubles/sim_*.c) stands in for libcudart.so.13 so the
 * test suite can run where there is no GPU.  These extra entry points are
 * exported under the version node SIM_1.0; real CUDA programs never see them.
 */
#ifndef SIM_H
#define SIM_H
#include <stddef.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What reached the "driver".  All values are totals since start-up, except
 * the live_* levels and their peaks. */
struct sim_counters {
	unsigned long long host_allocs;        /* successful cudaHostAlloc/cudaMallocHost (real blocks) */
	unsigned long long host_alloc_errors;  /* cudaHostAlloc/cudaMallocHost that returned an error */
	unsigned long long host_alloc_oom;     /* ... of which cudaErrorMemoryAllocation */
	unsigned long long host_frees;         /* successful cudaFreeHost (size != NULL) */
	unsigned long long host_free_errors;   /* cudaFreeHost that returned an error */
	unsigned long long host_frees_waited;  /* cudaFreeHost that found device work in flight and waited */
	unsigned long long host_registers;     /* successful cudaHostRegister */
	unsigned long long host_unregisters;   /* successful cudaHostUnregister */
	unsigned long long live_pinned_bytes;  /* cudaHostAlloc'd + registered bytes, live */
	unsigned long long peak_pinned_bytes;
	unsigned long long live_pinned_blocks; /* cudaHostAlloc'd blocks, live */
	unsigned long long device_allocs;      /* successful cudaMalloc/cudaMallocAsync */
	unsigned long long device_frees;
	unsigned long long live_device_bytes;
	unsigned long long streams_created;    /* cudaStreamCreate* (not default streams) */
	unsigned long long streams_destroyed;
	unsigned long long per_thread_streams; /* per-thread default streams brought into being */
	unsigned long long events_created;
	unsigned long long events_destroyed;
	unsigned long long events_recorded;
	unsigned long long ctx_records;        /* context-wide records (cuCtxRecordEvent) */
	unsigned long long ops_enqueued;       /* stream operations queued */
	unsigned long long ops_executed;       /* ... and completed */
	unsigned long long copies;             /* copy operations executed */
	unsigned long long pageable_copies;    /* copies with a pageable host side */
	unsigned long long device_waits;       /* calls that waited for all device work (free, unregister, sync) */
	unsigned long long gate_stalls;        /* calls stalled behind another thread's cudaFreeHost */
	unsigned long long gate_stall_ns;      /* ... and for how long */
	unsigned long long fork_copy_bytes;    /* registered private bytes fork() copied (sim_fork.c) */
	unsigned long long fork_copy_ns;       /* ... and the time it was charged for them */
};

/* Fill *out with a consistent snapshot (taken under the sim's lock). */
void simCounters(struct sim_counters *out);

/* Launch a "kernel": after the stream's earlier work (and the default-stream
 * rules) the stream's worker sleeps delay_us, then runs fn(arg).  fn runs on a
 * sim thread and must not call the CUDA API.  stream takes the same values as
 * in cudaLaunchHostFunc (0/cudaStreamLegacy, cudaStreamPerThread, a handle). */
cudaError_t simLaunch(cudaStream_t stream, void (*fn)(void *), void *arg, unsigned delay_us);

/* Launch a "kernel" that faults when it runs, as a __trap() (code 719,
 * cudaErrorLaunchFailure) or a store through a bad pointer (700,
 * cudaErrorIllegalAddress) does: from then on the current device's context
 * is broken and every call that touches it returns code (README, "Errors"). */
cudaError_t simLaunchFault(cudaStream_t stream, cudaError_t code);

/* cudaStreamCreateWithFlags under a name no shim interposes: a stream
 * made by a path a shim cannot see (a library's private runtime, another
 * cudart major, a lookup it does not hook). */
cudaError_t simStreamCreateUnseen(cudaStream_t *stream, unsigned int flags);

/* 1 when no operation is queued or running on any stream of any device. */
int simDeviceIdle(void);

/* With SIM_CALLS=1: the CUDA calls (runtime, and the driver entry points
 * it hands out) that reached the sim from outside it since start-up, one
 * entry per entry point called.  Fills up to max entries; returns how many
 * there are (0 without SIM_CALLS). */
struct sim_call {
	const char *name;
	unsigned long long calls;
};
int simCalls(struct sim_call *out, int max);

/* The per-thread-default-stream variants.  cuda_runtime_api.h declares them
 * only when CUDA_API_PER_THREAD_DEFAULT_STREAM is defined (and then renames
 * the plain calls); these prototypes have the same parameter lists. */
cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind);
cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count);
cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream);
cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);
cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream);
cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags);
cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t hStream, unsigned int *flags);
cudaError_t cudaStreamGetDevice_ptsz(cudaStream_t hStream, int *device);
cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t hStream, int *priority);
cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, enum cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *pGraph);
cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus);
cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t stream, enum cudaStreamCaptureStatus *captureStatus_out, unsigned long long *id_out, cudaGraph_t *graph_out, const cudaGraphNode_t **dependencies_out, const cudaGraphEdgeData **edgeData_out, size_t *numDependencies_out);
cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream, unsigned int flags);
cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *userData);
cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);

#ifdef __cplusplus
}
#endif
#endif
