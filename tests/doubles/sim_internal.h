/* sim_internal.h - shared state of the simulated device (not installed, not exported).
 *
 * Files, one concern each; each exports the cuda* calls of its concern:
 *   sim_cudart.c  start-up, configuration, fork, the free-host gate, last error,
 *                 devices, versions, error strings, simCounters
 *   sim_stream.c  streams and their worker threads, operations, events,
 *                 host functions and simLaunch, stream capture
 *   sim_mem.c     pinned, registered and device memory, pointer queries
 *   sim_copy.c    the cudaMemcpy and cudaMemset families
 *
 * Locking: one mutex, sim_mu, protects every stream, operation, event and
 * memory record and the counters.  Nothing sleeps, copies or runs user code
 * while holding it.  Stream workers never take the gate, so device progress
 * never depends on an API call, and waiting for the device cannot deadlock.
 */
#ifndef SIM_INTERNAL_H
#define SIM_INTERNAL_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "sim.h"

#define SIM_API __attribute__((visibility("default")))
#define SIM_MAX_DEVICES 16

/* ---- configuration (sim_cudart.c), read once at start-up, read-only after */
struct sim_config {
	int devices;              /* SIM_DEVICES */
	size_t pinned_limit;      /* SIM_PINNED_LIMIT: cap on live pinned bytes */
	size_t device_limit;      /* SIM_DEVICE_LIMIT: cap on live device bytes per device */
	double alloc_us;          /* SIM_ALLOC_US: fixed cost of cudaHostAlloc */
	double alloc_us_per_mb;   /* SIM_ALLOC_US_PER_MB */
	double free_us;           /* SIM_FREE_US: fixed cost of cudaFreeHost */
	double free_us_per_mb;    /* SIM_FREE_US_PER_MB */
	/* Registration's own costs (sim_mem.c has the H200 rows); the defaults
	 * keep the H200's ratio to the alloc and free costs above. */
	double register_us;       /* SIM_REGISTER_US: fixed cost of cudaHostRegister */
	double register_us_per_mb;   /* SIM_REGISTER_US_PER_MB: per MB already faulted in */
	double register_fault_us_per_mb; /* per MB the registration faults in itself */
	double unregister_us;     /* SIM_UNREGISTER_US: fixed cost of cudaHostUnregister */
	double unregister_us_per_mb; /* SIM_UNREGISTER_US_PER_MB */
	double fork_us_per_mb;    /* fork() copying registered private memory, 4 KiB pages */
	double fork_huge_us_per_mb;  /* ... huge pages */
	double copy_gbps;         /* SIM_COPY_GBPS: copy and memset bandwidth, 0 = instant */
	double hostfn_us;         /* SIM_HOSTFN_US: duration of a cudaLaunchHostFunc */
	bool inline_ops;          /* SIM_INLINE_OPS: an idle stream's instant op runs in the caller */
	double context_us;        /* SIM_CONTEXT_US: added to the first call that touches a device */
	int pageable_access;      /* SIM_PAGEABLE_ACCESS: SIM_PAGEABLE_* below */
	int pci_bus;              /* SIM_PCI_BUS: device 0's PCI bus (cudaDeviceGetPCIBusId) */
	bool test_ctx_partial;    /* SIM_TEST_CTX_PARTIAL=1, TEST ONLY: cuCtxRecordEvent
				   * leaves non-blocking streams out (a broken fence
				   * that tests/sim/ctxpartial.sh must catch) */
};
extern struct sim_config sim_cfg;

/* How the devices read pageable memory (cudaDevAttrPageableMemoryAccess and
 * ...UsesHostPageTables): not at all (the H200 measured: 0, 0), through HMM
 * (1, 0), or through the host's page tables, ATS (1, 1). */
enum { SIM_PAGEABLE_NONE, SIM_PAGEABLE_HMM, SIM_PAGEABLE_ATS };

extern pthread_mutex_t sim_mu;
extern pthread_cond_t sim_progress;   /* broadcast on every completed operation */
extern struct sim_counters sim_ctr;   /* under sim_mu */

/* Every API call begins with this: one-time start-up, the after-fork check,
 * then the gate (a call stalls while another thread is inside cudaFreeHost),
 * then the current device's sticky error (a kernel fault broke its context).
 * Returns cudaSuccess, cudaErrorInitializationError or the sticky error. */
cudaError_t sim_enter(void);
/* The name of a driver entry point the sim hands out (sim_cudart.c), or NULL. */
const char *sim_drv_name(void *fn);
/* The same without the sticky error: for the calls that read only host-side
 * bookkeeping, which a broken context still answers (measured on the H200:
 * cuCtxGetCurrent, cudaGetDevice, cudaPointerGetAttributes; README). */
cudaError_t sim_enter_host(void);
/* The sticky error of the current device's context, or cudaSuccess. */
cudaError_t sim_sticky_error(void);
/* A kernel on dev faulted with code: its context is broken for good. */
void sim_fault(int dev, cudaError_t code);
/* cudaFreeHost holds the gate closed for its whole duration. */
void sim_gate_close(void);
void sim_gate_open(void);

/* Record e as the calling thread's last error, as the runtime does for every
 * error except cudaErrorNotReady; returns e. */
cudaError_t sim_ret(cudaError_t e);
cudaError_t sim_last_error(bool reset);

int sim_current_device(void);
void sim_set_current_device(int dev);

void sim_sleep_us(double us);
double sim_now_ms(void);
double sim_copy_us(size_t bytes);

/* ---- streams, operations, events (sim_stream.c) */
enum sim_stream_kind { SK_LEGACY, SK_PER_THREAD, SK_CREATED };

struct CUstream_st {
	uint32_t magic;
	enum sim_stream_kind kind;
	int dev;
	unsigned flags;
	int priority;
	bool blocking;            /* synchronizes with the legacy stream */
	bool destroyed;           /* no new work; the worker drains and exits */
	uint64_t enq, done;       /* operations are numbered 1, 2, ...: last queued, last completed */
	struct sim_op *head, *tail;
	enum cudaStreamCaptureStatus capture;
	unsigned long long capture_id;
	enum cudaStreamCaptureMode capture_mode;
	unsigned capture_thread;  /* sim_thread_id() of the thread that began it */
	pthread_cond_t work;      /* signalled when an operation is queued or the stream destroyed */
	struct CUstream_st *next; /* sim_streams: every stream ever made (never freed) */
};

struct CUevent_st {
	uint32_t magic;
	bool live;
	int dev;
	unsigned flags;
	struct CUstream_st *s;    /* last record: done when s->done >= seq; NULL = never recorded */
	uint64_t seq;
	/* a context-wide record (cuCtxRecordEvent): done when every stream's
	 * work enqueued before it is; ncdeps 0 after a stream record */
	struct sim_dep *cdeps;
	size_t ncdeps;
	bool stamped;             /* the last record has completed and has a time */
	double t_ms;
	struct CUevent_st *next;  /* all events (never freed; destroyed ones are reused) */
	struct CUevent_st *next_free;
};

enum sim_op_kind { OP_COPY, OP_MEMSET, OP_HOSTFN, OP_RECORD, OP_WAIT, OP_FREE };

struct sim_dep {
	struct CUstream_st *s;
	uint64_t seq;
};

struct sim_op {
	struct sim_op *next;
	enum sim_op_kind kind;
	uint64_t seq;
	double delay_us;
	/* OP_COPY / OP_MEMSET: rows of width bytes */
	void *dst;
	const void *src;
	size_t dpitch, spitch, width, height;
	int value;
	bool pageable;
	bool held;                /* the host is still reading the source into owned:
				   * not ready to run (a pageable H2D, sim_copy.c) */
	void *owned;              /* staging buffer, freed after the copy */
	/* OP_HOSTFN */
	void (*fn)(void *);
	void *arg;
	/* OP_RECORD */
	struct CUevent_st *ev;
	/* OP_WAIT: the event's record at the time of the call (a context-wide
	 * record: its streams in xdeps) */
	struct sim_dep wait;
	size_t nxdeps;
	struct sim_dep *xdeps;
	/* implicit default-stream dependencies, filled in at enqueue */
	size_t ndeps;
	struct sim_dep *deps;
};

/* Map a stream argument to a stream.  per_thread_zero: 0 means the
 * per-thread default stream (the _ptsz/_ptds variants).  NULL when the handle
 * is not a live stream. */
struct CUstream_st *sim_stream_resolve(cudaStream_t h, bool per_thread_zero);
struct sim_op *sim_op_new(enum sim_op_kind kind);
/* Queue op on s (takes ownership); *seq gets its number.  Returns
 * cudaErrorStreamCaptureImplicit/InvalidResourceHandle on refusal (op freed).
 * While s is capturing the op is accepted and dropped, *seq = 0. */
cudaError_t sim_enqueue(struct CUstream_st *s, struct sim_op *op, uint64_t *seq);
/* Wait until s->done >= seq. */
void sim_wait_seq(struct CUstream_st *s, uint64_t seq);
/* Wait until everything queued on op's stream before op (queued, seq set)
 * is done and, with deps, the default-stream dependencies it took at
 * enqueue too: the work the runtime orders op after. */
void sim_wait_ahead(struct CUstream_st *s, const struct sim_op *op, bool deps);
/* Is that work done already?  Caller holds sim_mu. */
bool sim_ahead_done(const struct CUstream_st *s, const struct sim_op *op);
/* op->held = false (sim_mu taken), and the worker told. */
void sim_op_release(struct sim_op *op);
/* Wait for all work queued so far on every stream of dev (-1: all devices).
 * Returns true if there was work to wait for. */
bool sim_wait_device(int dev);
struct CUstream_st *sim_legacy_stream(int dev);
void sim_streams_init(void);

struct CUevent_st *sim_event_resolve(cudaEvent_t h);
/* cuCtxRecordEvent on device dev's context: the event completes when all
 * work enqueued on the device's streams so far has.  Refused with
 * cudaErrorStreamCaptureUnsupported, invalidating them, while any of its
 * streams captures (as the driver documents). */
cudaError_t sim_ctx_record_event(int dev, cudaEvent_t event);
/* Measured on an H200: a pinned allocation or free (and an event query)
 * made while a capture prohibits the calling thread's "unsafe" calls fails
 * with cudaErrorStreamCaptureUnsupported and invalidates that capture.  A
 * thread is prohibited by its own capture unless it began it in relaxed
 * mode, and by any other thread's global-mode capture, unless it made
 * itself relaxed (cudaThreadExchangeStreamCaptureMode).  Returns the error,
 * or cudaSuccess; takes sim_mu. */
cudaError_t sim_capture_prohibits(void);

/* ---- memory (sim_mem.c) */
/* MT_POOL_HOST: an allocation from a host memory pool (owner: the pool);
 * MT_VMM_HOST: a mapped, accessible range of host VMM memory (sim_vmm.c). */
enum sim_mem_type { MT_HOST_ALLOC, MT_REGISTERED, MT_DEVICE, MT_POOL_HOST, MT_VMM_HOST };

struct sim_range {
	uintptr_t base;
	size_t size;
	enum sim_mem_type type;
	unsigned flags;
	int dev;
	uintptr_t owner;	/* pinned allocations: the context they belong to */
};

/* The context current on this thread, which owns the pinned allocations
 * it makes (measured on an H200: the runtime's cudaHostAlloc too).  Set by
 * the driver double (sim_cuda.c); 0 in the runtime double,
 * which models primary contexts only and never destroys one. */
extern __thread uintptr_t sim_tls_owner;
/* The context owner is destroyed: its pinned allocations are freed at
 * once (measured: they are gone, and the driver hands their addresses out
 * again).  Takes sim_mu. */
void sim_mem_drop_owner(uintptr_t owner);
void sim_mem_drop_primary(int dev, uintptr_t primary);
/* dev's primary context destroyed (a reset, its last release): its pinned
 * allocations are gone (H200: docs/runtime-facts.md, "Pinned blocks and
 * context teardown"). */
void sim_primary_gone(int dev);
/* The owner value of dev's primary context (sim_cuda.c; 0 without it). */
uintptr_t sim_primary_owner(int dev);

/* The range containing p, or NULL.  Caller holds sim_mu; the pointer is
 * valid until sim_mu is released. */
struct sim_range *sim_mem_find(const void *p);
/* Release a device or host-pool range freed by cudaFreeAsync (from a
 * worker, sim_mu not held). */
void sim_mem_free_device_now(void *p);
/* Pinned bytes against SIM_PINNED_LIMIT (false: over it); caller holds sim_mu. */
bool sim_mem_reserve_pinned(size_t size);
/* The ranges of type t, a malloc'd array (NULL, *n = 0: none or no
 * memory); takes sim_mu. */
struct sim_span { uintptr_t base; size_t size; };
struct sim_span *sim_mem_spans(enum sim_mem_type t, size_t *n);
/* Record / forget a range of memory made elsewhere (pools, VMM); take sim_mu. */
bool sim_mem_add(uintptr_t base, size_t size, enum sim_mem_type t, int dev, uintptr_t owner);
void sim_mem_del(uintptr_t base, enum sim_mem_type t);

/* The driver's cuPointerGetAttribute(attr) of pinned or registered memory,
 * as a CUresult; -1: other memory or an attribute not modelled.
 * primary_ctx: the context of a range made with none recorded (the runtime
 * double's primary contexts), or NULL.  Takes sim_mu. */
int sim_mem_host_attribute(void *data, int attr, uintptr_t ptr, void *(*primary_ctx)(int dev));

/* ---- fork (sim_fork.c): what the H200 charges a fork() for the
 * registered private memory it copies, in microseconds, counted in
 * sim_ctr (takes sim_mu; for the parent's prepare handler). */
double sim_fork_copy_us(void);

/* ---- memory pools (sim_pool.c) */
/* The pool cudaMallocAsync allocates from when it is a host pool
 * (SIM_ASYNC_HOST_POOL=1 and one was made current), else NULL. */
void *sim_pool_async_redirect(void);
/* cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE) of ptr. */
int sim_pool_of(void **pool, uintptr_t ptr);

/* ---- copies (sim_copy.c) and batches (sim_batch.c) */
/* An async copy by pointer (cudaMemcpyDefault); in_order: a pageable
 * source is read when the copy runs, not at the call. */
/* How a batch operand's pageable side is met (sim_batch.c, measured on the
 * H200: README "Batched copies"): BATCH_SRC_AFTER: the call waits for the
 * stream's earlier work, then reads the source; BATCH_SRC_LATE: the source
 * is read when the copy runs; neither: read at the call.  BATCH_DST_ASYNC:
 * a copy into pageable memory returns at once (else once the data is there). */
enum { SIM_BATCH = 1, SIM_BATCH_SRC_AFTER = 2, SIM_BATCH_SRC_LATE = 4, SIM_BATCH_DST_ASYNC = 8 };
cudaError_t sim_copy_async(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
			   cudaStream_t stream, bool ptz, int batch);
/* A batch of 1D copies (cudaMemcpyBatchAsync, cuMemcpyBatchAsync; fail:
 * the failIdx of the 12.8 ABI, or NULL); the runtime's code, last error set. */
cudaError_t sim_batch(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
		      const struct cudaMemcpyAttributes *attrs, const size_t *idxs, size_t nattrs, size_t *fail,
		      cudaStream_t stream, bool ptz);
/* A batch of 3D copies, pointer operands only (the sim has no arrays). */
cudaError_t sim_batch3d(size_t n, const struct cudaMemcpy3DBatchOp *ops, size_t *fail, unsigned long long flags,
			cudaStream_t stream, bool ptz);

/* Keep p reachable for a leak checker: an object the sim never frees. */
void sim_keep(void *p);

#endif
