/* sim_cudart.c - the simulated runtime's core: start-up, configuration, fork,
 * the free-host gate, the last error, devices, versions and error strings. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cuda.h>
#include "sim_internal.h"

struct sim_config sim_cfg;
pthread_mutex_t sim_mu = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t sim_progress = PTHREAD_COND_INITIALIZER;
struct sim_counters sim_ctr;

static pthread_once_t sim_once = PTHREAD_ONCE_INIT;
static atomic_int sim_started;   /* set once start-up has run in this process */
static atomic_int sim_forked;    /* a child of a process that had started: every call fails */
static pthread_rwlock_t sim_gate;

static __thread cudaError_t tls_last_error;
static __thread int tls_device;
/* Per device: the sticky error a kernel fault left in its context, or 0. */
static atomic_int sim_sticky[SIM_MAX_DEVICES];

/* ---- configuration */

static void warn_env(const char *name, const char *val)
{
	fprintf(stderr, "sim: ignoring %s=%s (bad value)\n", name, val);
}

static double env_double(const char *name, double def)
{
	const char *v = getenv(name);
	char *end;
	double d;

	if (!v || !*v)
		return def;
	errno = 0;
	d = strtod(v, &end);
	if (errno || *end || d < 0) {
		warn_env(name, v);
		return def;
	}
	return d;
}

static size_t env_size(const char *name, size_t def)
{
	const char *v = getenv(name);
	unsigned long long n, mult = 1;
	char *end;

	if (!v || !*v)
		return def;
	errno = 0;
	n = strtoull(v, &end, 10);
	switch (*end) {
	case 'k': case 'K': mult = 1ULL << 10; end++; break;
	case 'm': case 'M': mult = 1ULL << 20; end++; break;
	case 'g': case 'G': mult = 1ULL << 30; end++; break;
	case 't': case 'T': mult = 1ULL << 40; end++; break;
	}
	if (*end == 'b' || *end == 'B')
		end++;
	if (errno || end == v || *end || n > SIZE_MAX / mult) {
		warn_env(name, v);
		return def;
	}
	return (size_t)(n * mult);
}

/* One of names[] (its index), or def after one warning. */
static const char *const pageable_names[] = { "none", "hmm", "ats", NULL };

static int env_choice(const char *name, const char *const *names, int def)
{
	const char *v = getenv(name);

	if (!v || !*v)
		return def;
	for (int i = 0; names[i]; i++)
		if (strcmp(v, names[i]) == 0)
			return i;
	warn_env(name, v);
	return def;
}

/* Registration's costs on the H200 (dev/probe/fastalloc.cu and fastalloc2.cu,
 * driver 580.159.04, CUDA 13.0, kernel 6.18, THP madvise; ms at 64 MiB / 1 GiB
 * / 4 GiB), each as fixed + per MB fitted to its rows:
 *   cudaHostAlloc 24-42 / 415-537 / 1757, 0.53 at 4 KB-1 MB (DESIGN.md):
 *     0.53 + 0.43/MB;
 *   cudaFreeHost 6.4-10.6 / 145-160 / 447, 0.23 small (DESIGN.md): 0.23 + 0.13/MB;
 *   cuMemHostRegister of per-chunk shared mappings pre-faulted on 16 threads
 *     2.6-3.5 / 40-53: 0.15 + 0.045/MB (private huge pages, 1.4-2.6 / 21-28,
 *     register at about half that: not told apart, see sim_mem.c);
 *   unregister of either 1.1-1.6 / 16-21: 0.22 + 0.017/MB;
 *   cudaHostRegister faulting the pages itself, one thread, 20.4 / 271 / 1076:
 *     0.262/MB;
 *   fork() with registered private memory live (not MADV_DONTFORK) 4 KiB
 *     pages 25.6 / 395: 0.385/MB, huge pages 55 / 835: 0.81/MB; shared
 *     mappings and cudaHostAlloc memory 0.9-1.5 ms whatever the size (no
 *     extra cost).
 * The sim's alloc and free costs are these scaled down so that CI stays
 * fast; the defaults below keep the H200's ratios to them, so that a run
 * with H200-sized alloc costs (scripts/demo.sh) gets H200-sized
 * registrations too.  The fixed cost of a small registration is the
 * fit's, not measured below 64 MiB. */
static void read_register_costs(void)
{
	sim_cfg.register_us = env_double("SIM_REGISTER_US", sim_cfg.alloc_us * 0.15 / 0.53);
	sim_cfg.register_us_per_mb = env_double("SIM_REGISTER_US_PER_MB", sim_cfg.alloc_us_per_mb * 0.045 / 0.43);
	sim_cfg.register_fault_us_per_mb = sim_cfg.alloc_us_per_mb * 0.262 / 0.43;
	sim_cfg.unregister_us = env_double("SIM_UNREGISTER_US", sim_cfg.free_us * 0.22 / 0.23);
	sim_cfg.unregister_us_per_mb = env_double("SIM_UNREGISTER_US_PER_MB", sim_cfg.free_us_per_mb * 0.017 / 0.13);
	sim_cfg.fork_us_per_mb = sim_cfg.alloc_us_per_mb * 0.385 / 0.43;
	sim_cfg.fork_huge_us_per_mb = sim_cfg.alloc_us_per_mb * 0.81 / 0.43;
}

static void read_config(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	size_t phys = pages > 0 && psz > 0 ? (size_t)pages * (size_t)psz : (size_t)1 << 34;
	double devs = env_double("SIM_DEVICES", 1);

	sim_cfg.devices = devs >= 1 && devs <= SIM_MAX_DEVICES ? (int)devs : 1;
	sim_cfg.pinned_limit = env_size("SIM_PINNED_LIMIT", phys);
	sim_cfg.device_limit = env_size("SIM_DEVICE_LIMIT", (size_t)140 << 30);
	sim_cfg.alloc_us = env_double("SIM_ALLOC_US", 20);
	sim_cfg.alloc_us_per_mb = env_double("SIM_ALLOC_US_PER_MB", 5);
	sim_cfg.free_us = env_double("SIM_FREE_US", 20);
	sim_cfg.free_us_per_mb = env_double("SIM_FREE_US_PER_MB", 2);
	read_register_costs();
	sim_cfg.copy_gbps = env_double("SIM_COPY_GBPS", 50);
	sim_cfg.hostfn_us = env_double("SIM_HOSTFN_US", 0);
	sim_cfg.inline_ops = env_double("SIM_INLINE_OPS", 0) > 0;
	sim_cfg.context_us = env_double("SIM_CONTEXT_US", 0);
	sim_cfg.pageable_access = env_choice("SIM_PAGEABLE_ACCESS", pageable_names, SIM_PAGEABLE_NONE);
	sim_cfg.pci_bus = (int)env_double("SIM_PCI_BUS", 16);
	sim_cfg.test_ctx_partial = env_double("SIM_TEST_CTX_PARTIAL", 0) != 0;
}

/* ---- start-up, fork, gate */

static void sim_start(void)
{
	pthread_rwlockattr_t a;

	read_config();
	pthread_rwlockattr_init(&a);
	/* A freeing thread must get the gate even while others keep calling. */
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&sim_gate, &a);
	pthread_rwlockattr_destroy(&a);
	sim_streams_init();
	atomic_store(&sim_started, 1);
}

/* The real runtime refuses every call in a child of a process that had
 * initialized it (cudaErrorInitializationError).  A child touches none of the
 * parent's locks or threads: it only sets the flag. */
static void sim_atfork_child(void)
{
	if (atomic_load(&sim_started))
		atomic_store(&sim_forked, 1);
}

/* The H200 copies registered private memory at fork(), before the child
 * exists: the parent pays for it (sim_fork.c). */
static void sim_atfork_prepare(void)
{
	if (atomic_load(&sim_started) && !atomic_load(&sim_forked))
		sim_sleep_us(sim_fork_copy_us());
}

__attribute__((constructor)) static void sim_register_atfork(void)
{
	pthread_atfork(sim_atfork_prepare, NULL, sim_atfork_child);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CUDA creates its context lazily, in the first call that needs one:
 * SIM_CONTEXT_US makes that call last so much longer (none by default). */
static pthread_once_t sim_context_once = PTHREAD_ONCE_INIT;

static void sim_make_context(void)
{
	sim_sleep_us(sim_cfg.context_us);
}

cudaError_t sim_enter(void)
{
	cudaError_t e = sim_enter_host();

	if (!e)
		pthread_once(&sim_context_once, sim_make_context);
	return e ? e : sim_sticky_error();
}

/* After a kernel fault every call that touches the context answers the
 * sticky error and sets it as the last error again; cudaGetLastError
 * returns it once, then 0 (measured on the H200, tests/doubles/README.md). */
cudaError_t sim_sticky_error(void)
{
	return (cudaError_t)atomic_load(&sim_sticky[tls_device]);
}

void sim_fault(int dev, cudaError_t code)
{
	if (dev >= 0 && dev < SIM_MAX_DEVICES)
		atomic_store(&sim_sticky[dev], (int)code);
}

cudaError_t sim_enter_host(void)
{
	if (atomic_load(&sim_forked))
		return cudaErrorInitializationError;
	pthread_once(&sim_once, sim_start);
	/* Pass the gate: stall while some thread is inside cudaFreeHost
	 * (measured: a cudaFreeHost stalls other threads' launches). */
	if (pthread_rwlock_tryrdlock(&sim_gate) != 0) {
		uint64_t t0 = now_ns();

		pthread_rwlock_rdlock(&sim_gate);
		pthread_mutex_lock(&sim_mu);
		sim_ctr.gate_stalls++;
		sim_ctr.gate_stall_ns += now_ns() - t0;
		pthread_mutex_unlock(&sim_mu);
	}
	pthread_rwlock_unlock(&sim_gate);
	return cudaSuccess;
}

void sim_gate_close(void)
{
	pthread_rwlock_wrlock(&sim_gate);
}

void sim_gate_open(void)
{
	pthread_rwlock_unlock(&sim_gate);
}

/* ---- last error */

cudaError_t sim_ret(cudaError_t e)
{
	if (e != cudaSuccess && e != cudaErrorNotReady)
		tls_last_error = e;
	return e;
}

cudaError_t sim_last_error(bool reset)
{
	cudaError_t e = tls_last_error;

	if (reset)
		tls_last_error = cudaSuccess;
	return e;
}

SIM_API cudaError_t cudaGetLastError(void)
{
	return sim_last_error(true);
}

SIM_API cudaError_t cudaPeekAtLastError(void)
{
	return sim_last_error(false);
}

/* ---- time */

double sim_now_ms(void)
{
	return (double)now_ns() / 1e6;
}

void sim_sleep_us(double us)
{
	struct timespec ts;

	if (us <= 0)
		return;
	ts.tv_sec = (time_t)(us / 1e6);
	ts.tv_nsec = (long)((us - (double)ts.tv_sec * 1e6) * 1e3);
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

double sim_copy_us(size_t bytes)
{
	return sim_cfg.copy_gbps > 0 ? (double)bytes / (sim_cfg.copy_gbps * 1e3) : 0;
}

/* ---- devices */

int sim_current_device(void)
{
	return tls_device;
}

void sim_set_current_device(int dev)
{
	tls_device = dev;
}

SIM_API cudaError_t cudaGetDeviceCount(int *count)
{
	cudaError_t e = sim_enter();

	if (e)
		return sim_ret(e);
	if (!count)
		return sim_ret(cudaErrorInvalidValue);
	*count = sim_cfg.devices;
	return cudaSuccess;
}

SIM_API cudaError_t cudaGetDevice(int *device)
{
	cudaError_t e = sim_enter_host();

	if (e)
		return sim_ret(e);
	if (!device)
		return sim_ret(cudaErrorInvalidValue);
	*device = tls_device;
	return cudaSuccess;
}

SIM_API cudaError_t cudaSetDevice(int device)
{
	cudaError_t e = sim_enter();

	if (e)
		return sim_ret(e);
	if (device < 0 || device >= sim_cfg.devices)
		return sim_ret(cudaErrorInvalidDevice);
	tls_device = device;
	return cudaSuccess;
}

/* The pageable-access attributes (SIM_PAGEABLE_ACCESS); others are not
 * modelled (cudaErrorInvalidValue).  A device query: a kernel fault does not
 * change its answer (assumed). */
SIM_API cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
	cudaError_t e = sim_enter_host();

	if (e)
		return sim_ret(e);
	if (!value)
		return sim_ret(cudaErrorInvalidValue);
	if (device < 0 || device >= sim_cfg.devices)
		return sim_ret(cudaErrorInvalidDevice);
	switch (attr) {
	case cudaDevAttrPageableMemoryAccess:
		*value = sim_cfg.pageable_access != SIM_PAGEABLE_NONE;
		return cudaSuccess;
	case cudaDevAttrPageableMemoryAccessUsesHostPageTables:
		*value = sim_cfg.pageable_access == SIM_PAGEABLE_ATS;
		return cudaSuccess;
	default:
		return sim_ret(cudaErrorInvalidValue);
	}
}

/* Device d sits at PCI bus SIM_PCI_BUS + d (decimal; 16 by default), device
 * 0, function 0: processes given different SIM_PCI_BUS see different GPUs
 * under one ordinal, as CUDA_VISIBLE_DEVICES makes them.  Upper-case hex,
 * as the real runtime writes it. */
SIM_API cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int device)
{
	cudaError_t e = sim_enter_host();

	if (e)
		return sim_ret(e);
	if (!pciBusId || len <= 0)
		return sim_ret(cudaErrorInvalidValue);
	if (device < 0 || device >= sim_cfg.devices)
		return sim_ret(cudaErrorInvalidDevice);
	snprintf(pciBusId, (size_t)len, "0000:%02X:00.0", (sim_cfg.pci_bus + device) & 0xff);
	return cudaSuccess;
}

SIM_API cudaError_t cudaDeviceSynchronize(void)
{
	cudaError_t e = sim_enter();

	if (e)
		return sim_ret(e);
	sim_wait_device(tls_device);
	return cudaSuccess;
}

/* Waits for the device; its primary context's pinned allocations go, as
 * on the H200 (docs/runtime-facts.md, "Pinned blocks and context
 * teardown"); streams, events and device memory stay (not modelled). */
SIM_API cudaError_t cudaDeviceReset(void)
{
	cudaError_t e = sim_enter();

	if (e)
		return sim_ret(e);
	sim_wait_device(tls_device);
	sim_primary_gone(tls_device);
	return cudaSuccess;
}

SIM_API cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
	cudaError_t e = sim_enter();

	if (e)
		return sim_ret(e);
	if (leastPriority)
		*leastPriority = 0;
	if (greatestPriority)
		*greatestPriority = -5;
	return cudaSuccess;
}

SIM_API cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
{
	if (!runtimeVersion)
		return sim_ret(cudaErrorInvalidValue);
	*runtimeVersion = CUDART_VERSION;
	return cudaSuccess;
}

SIM_API cudaError_t cudaDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		return sim_ret(cudaErrorInvalidValue);
	*driverVersion = CUDART_VERSION;
	return cudaSuccess;
}

/* ---- error strings: the codes the sim can return */

static const struct {
	cudaError_t code;
	const char *name, *text;
} sim_errors[] = {
	{ cudaSuccess, "cudaSuccess", "no error" },
	{ cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument" },
	{ cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory" },
	{ cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error" },
	{ cudaErrorInvalidPitchValue, "cudaErrorInvalidPitchValue", "invalid pitch argument" },
	{ cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy" },
	{ cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal" },
	{ cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle" },
	{ cudaErrorIllegalState, "cudaErrorIllegalState", "the operation cannot be performed in the present state" },
	{ cudaErrorNotReady, "cudaErrorNotReady", "device not ready" },
	{ cudaErrorHostMemoryAlreadyRegistered, "cudaErrorHostMemoryAlreadyRegistered", "part or all of the requested memory range is already mapped" },
	{ cudaErrorHostMemoryNotRegistered, "cudaErrorHostMemoryNotRegistered", "pointer does not correspond to a registered memory region" },
	{ cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported", "operation not permitted when stream is capturing" },
	{ cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated", "operation failed due to a previous error during capture" },
	{ cudaErrorStreamCaptureImplicit, "cudaErrorStreamCaptureImplicit", "operation would make the legacy stream depend on a capturing blocking stream" },
};

SIM_API const char *cudaGetErrorName(cudaError_t error)
{
	for (size_t i = 0; i < sizeof sim_errors / sizeof sim_errors[0]; i++)
		if (sim_errors[i].code == error)
			return sim_errors[i].name;
	return "unrecognized error code";
}

SIM_API const char *cudaGetErrorString(cudaError_t error)
{
	for (size_t i = 0; i < sizeof sim_errors / sizeof sim_errors[0]; i++)
		if (sim_errors[i].code == error)
			return sim_errors[i].text;
	return "unrecognized error code";
}

/* ---- introspection */

/* ---- driver entry points handed out by the runtime
 * (cudaGetDriverEntryPointByVersion).  The simulated device has no libcuda:
 * only the calls pincache's fences use are here, acting on the same device
 * state.  A context is the device's primary one: a token per device. */

static char sim_ctx_tokens[SIM_MAX_DEVICES];

/* A driver call leaves the runtime's last error alone. */
static CUresult sim_drv_ret(cudaError_t e, cudaError_t last)
{
	tls_last_error = last;
	return (CUresult)e;
}

static CUresult sim_drv_ctx_get_current(CUcontext *pctx)
{
	cudaError_t last = tls_last_error, e = sim_enter_host();

	if (e)
		return sim_drv_ret(e, last);
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	*pctx = (CUcontext)(void *)&sim_ctx_tokens[sim_current_device()];
	return CUDA_SUCCESS;
}

static CUresult sim_drv_ctx_record_event(CUcontext ctx, CUevent ev)
{
	cudaError_t last = tls_last_error;
	char *c = (char *)(void *)ctx;

	if (c < sim_ctx_tokens || c >= sim_ctx_tokens + sim_cfg.devices)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (atomic_load(&sim_sticky[c - sim_ctx_tokens]))
		return (CUresult)atomic_load(&sim_sticky[c - sim_ctx_tokens]);
	return sim_drv_ret(sim_ctx_record_event((int)(c - sim_ctx_tokens), (cudaEvent_t)ev), last);
}

static CUresult sim_drv_event_query(CUevent ev)
{
	cudaError_t last = tls_last_error;

	return sim_drv_ret(cudaEventQuery((cudaEvent_t)ev), last);
}

static CUresult sim_drv_stream_query(CUstream s)
{
	cudaError_t last = tls_last_error;

	return sim_drv_ret(cudaStreamQuery((cudaStream_t)s), last);
}

/* Touches the context: the sticky error after a fault, as the first call
 * after it on the H200 (dev/probe/ctxhealth.cu). */
static CUresult sim_drv_ctx_get_stream_priority_range(int *least, int *greatest)
{
	cudaError_t last = tls_last_error;

	return sim_drv_ret(cudaDeviceGetStreamPriorityRange(least, greatest), last);
}

/* The device allocation containing dptr (cudaMalloc'd: the sim has no
 * VMM), as the driver reports it; anything else: not found. */
static CUresult sim_drv_mem_get_address_range(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
	struct sim_range *r;
	CUresult rc = CUDA_ERROR_NOT_FOUND;

	if (sim_enter())
		return CUDA_ERROR_NOT_INITIALIZED;
	pthread_mutex_lock(&sim_mu);
	r = sim_mem_find((const void *)(uintptr_t)dptr);
	if (r && r->type == MT_DEVICE) {
		if (pbase)
			*pbase = (CUdeviceptr)r->base;
		if (psize)
			*psize = r->size;
		rc = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&sim_mu);
	return rc;
}

static void *sim_primary_ctx(int dev)
{
	return &sim_ctx_tokens[dev];
}

/* Pinned and registered memory as measured (sim_mem.c); otherwise
 * CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE only (sim_pool.c). */
static CUresult sim_drv_pointer_get_attribute(void *data, CUpointer_attribute attr, CUdeviceptr ptr)
{
	cudaError_t last = tls_last_error;
	int rc;

	if (sim_enter_host())
		return CUDA_ERROR_NOT_INITIALIZED;
	if ((rc = sim_mem_host_attribute(data, (int)attr, (uintptr_t)ptr, sim_primary_ctx)) >= 0)
		return (CUresult)rc;
	if (attr != CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE)
		return sim_drv_ret(cudaErrorInvalidValue, last);
	return (CUresult)sim_pool_of((void **)data, (uintptr_t)ptr);
}

static CUresult sim_drv_ctx_get_device(CUdevice *dev)
{
	cudaError_t last = tls_last_error, e = sim_enter_host();

	if (e)
		return sim_drv_ret(e, last);
	if (!dev)
		return CUDA_ERROR_INVALID_VALUE;
	*dev = (CUdevice)sim_current_device();
	return CUDA_SUCCESS;
}

/* The driver's host registration and flags (pincache's fast miss path maps
 * memory and registers it with cuMemHostRegister): the runtime's answers,
 * whose codes are the driver's numbers (1, 2, 712, 713), and the runtime's
 * last error left alone.  Inside a cuMemHostAlloc block the driver's
 * register is assumed to answer 1 as the runtime's does (not measured). */
static CUresult sim_drv_mem_host_register(void *p, size_t n, unsigned int flags)
{
	cudaError_t last = tls_last_error;

	return sim_drv_ret(cudaHostRegister(p, n, flags), last);
}

static CUresult sim_drv_mem_host_unregister(void *p)
{
	cudaError_t last = tls_last_error;

	return sim_drv_ret(cudaHostUnregister(p), last);
}

static CUresult sim_drv_mem_host_get_flags(unsigned int *flags, void *p)
{
	cudaError_t last = tls_last_error;

	return sim_drv_ret(cudaHostGetFlags(flags, p), last);
}

static CUresult sim_drv_mem_host_alloc(void **pp, size_t n, unsigned int flags)
{
	cudaError_t last = tls_last_error;
	return sim_drv_ret(cudaHostAlloc(pp, n, flags), last);
}

/* The driver's pinned allocations and 1D copies, for programs that reach
 * them through cudaGetDriverEntryPointByVersion (the fuzzer's driver
 * forms): the runtime's calls, their codes the driver's numbers, the last
 * error left alone (size 0: 0 and NULL, a free of NULL 0, as the runtime's:
 * measured, tests/gpu/gpu_errors.cu).  Copies of the _ptds and _ptsz ABIs
 * (asked for with cudaEnablePerThreadDefaultStream) are the runtime's
 * per-thread forms. */
static CUresult sim_drv_mem_alloc_host(void **pp, size_t n)
{
	cudaError_t last = tls_last_error;

	return sim_drv_ret(cudaMallocHost(pp, n), last);
}

static CUresult sim_drv_mem_host_get_device_pointer(CUdeviceptr *d, void *p, unsigned int flags)
{
	cudaError_t last = tls_last_error;

	return sim_drv_ret(cudaHostGetDevicePointer((void **)d, p, flags), last);
}

static CUresult sim_drv_mem_free_host(void *p)
{
	cudaError_t last = tls_last_error;

	return sim_drv_ret(cudaFreeHost(p), last);
}

static CUresult sim_drv_copy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, int pt)
{
	cudaError_t last = tls_last_error;

	return sim_drv_ret((pt ? cudaMemcpy_ptds : cudaMemcpy)(dst, src, n, kind), last);
}

static CUresult sim_drv_copy_async(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, CUstream s,
				   int pt)
{
	cudaError_t last = tls_last_error;

	return sim_drv_ret((pt ? cudaMemcpyAsync_ptsz : cudaMemcpyAsync)(dst, src, n, kind, (cudaStream_t)s), last);
}

#define SIM_DRV_COPIES(pt, sfx)                                                                              \
	static CUresult sim_drv_htod##sfx(CUdeviceptr d, const void *h, size_t n)                             \
	{                                                                                                     \
		return sim_drv_copy((void *)(uintptr_t)d, h, n, cudaMemcpyHostToDevice, pt);                  \
	}                                                                                                     \
	static CUresult sim_drv_dtoh##sfx(void *h, CUdeviceptr d, size_t n)                                   \
	{                                                                                                     \
		return sim_drv_copy(h, (const void *)(uintptr_t)d, n, cudaMemcpyDeviceToHost, pt);            \
	}                                                                                                     \
	static CUresult sim_drv_dtod##sfx(CUdeviceptr d, CUdeviceptr s, size_t n)                             \
	{                                                                                                     \
		return sim_drv_copy((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n,                      \
				    cudaMemcpyDeviceToDevice, pt);                                            \
	}                                                                                                     \
	static CUresult sim_drv_htod_async##sfx(CUdeviceptr d, const void *h, size_t n, CUstream st)         \
	{                                                                                                     \
		return sim_drv_copy_async((void *)(uintptr_t)d, h, n, cudaMemcpyHostToDevice, st, pt);        \
	}                                                                                                     \
	static CUresult sim_drv_dtoh_async##sfx(void *h, CUdeviceptr d, size_t n, CUstream st)               \
	{                                                                                                     \
		return sim_drv_copy_async(h, (const void *)(uintptr_t)d, n, cudaMemcpyDeviceToHost, st, pt);  \
	}                                                                                                     \
	static CUresult sim_drv_dtod_async##sfx(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st)         \
	{                                                                                                     \
		return sim_drv_copy_async((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n,                \
					  cudaMemcpyDeviceToDevice, st, pt);                                  \
	}
SIM_DRV_COPIES(0, )
SIM_DRV_COPIES(1, _pt)

/* pt: 0 either, -1 asked for without cudaEnablePerThreadDefaultStream only,
 * 1 with it only. */
#define SIM_DRV_COPY_ROWS(name, since, fn) { name, since, (void *)fn, -1 }, { name, since, (void *)fn##_pt, 1 }
static const struct { const char *name; unsigned since; void *fn; int pt; } sim_drv_tab[] = {
	{ "cuMemAllocHost", 3020, (void *)sim_drv_mem_alloc_host, 0 },
	{ "cuMemFreeHost", 2000, (void *)sim_drv_mem_free_host, 0 },
	{ "cuMemHostGetDevicePointer", 3020, (void *)sim_drv_mem_host_get_device_pointer, 0 },
	SIM_DRV_COPY_ROWS("cuMemcpyHtoD", 3020, sim_drv_htod),
	SIM_DRV_COPY_ROWS("cuMemcpyDtoH", 3020, sim_drv_dtoh),
	SIM_DRV_COPY_ROWS("cuMemcpyDtoD", 3020, sim_drv_dtod),
	SIM_DRV_COPY_ROWS("cuMemcpyHtoDAsync", 3020, sim_drv_htod_async),
	SIM_DRV_COPY_ROWS("cuMemcpyDtoHAsync", 3020, sim_drv_dtoh_async),
	SIM_DRV_COPY_ROWS("cuMemcpyDtoDAsync", 3020, sim_drv_dtod_async),
	{ "cuMemHostAlloc", 2020, (void *)sim_drv_mem_host_alloc, 0 },
	{ "cuCtxGetDevice", 2000, (void *)sim_drv_ctx_get_device, 0 },
	{ "cuMemHostRegister", 6050, (void *)sim_drv_mem_host_register, 0 },
	{ "cuMemHostUnregister", 4000, (void *)sim_drv_mem_host_unregister, 0 },
	{ "cuMemHostGetFlags", 2030, (void *)sim_drv_mem_host_get_flags, 0 },
	{ "cuPointerGetAttribute", 4000, (void *)sim_drv_pointer_get_attribute, 0 },
	{ "cuCtxGetCurrent", 4000, (void *)sim_drv_ctx_get_current, 0 },
	{ "cuCtxRecordEvent", 12050, (void *)sim_drv_ctx_record_event, 0 },
	{ "cuEventQuery", 2000, (void *)sim_drv_event_query, 0 },
	{ "cuStreamQuery", 2000, (void *)sim_drv_stream_query, 0 },
	{ "cuCtxGetStreamPriorityRange", 5050, (void *)sim_drv_ctx_get_stream_priority_range, 0 },
	{ "cuMemGetAddressRange", 3020, (void *)sim_drv_mem_get_address_range, 0 },
};

const char *sim_drv_name(void *fn)
{
	for (size_t i = 0; i < sizeof sim_drv_tab / sizeof sim_drv_tab[0]; i++)
		if (sim_drv_tab[i].fn == fn)
			return sim_drv_tab[i].name;
	return NULL;
}

SIM_API cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr, unsigned int cudaVersion,
						      unsigned long long flags,
						      enum cudaDriverEntryPointQueryResult *driverStatus)
{
	enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
	cudaError_t e = sim_enter_host();   /* a lookup: assumed to need no context */
	int pt;

	if (e)
		return sim_ret(e);
	if (!symbol || !funcPtr || cudaVersion > 13000 ||
	    (flags & ~(unsigned long long)(cudaEnableLegacyStream | cudaEnablePerThreadDefaultStream)))
		return sim_ret(cudaErrorInvalidValue);
	*funcPtr = NULL;
	pt = (flags & cudaEnablePerThreadDefaultStream) != 0;
	for (size_t i = 0; i < sizeof sim_drv_tab / sizeof sim_drv_tab[0]; i++) {
		if (strcmp(sim_drv_tab[i].name, symbol) != 0 || (sim_drv_tab[i].pt == 1 && !pt) ||
		    (sim_drv_tab[i].pt == -1 && pt))
			continue;
		if (cudaVersion < sim_drv_tab[i].since) {
			st = cudaDriverEntryPointVersionNotSufficent;
		} else {
			*funcPtr = sim_drv_tab[i].fn;
			st = cudaDriverEntryPointSuccess;
		}
	}
	if (driverStatus)
		*driverStatus = st;
	return cudaSuccess;
}

SIM_API void simCounters(struct sim_counters *out)
{
	if (!out)
		return;
	if (atomic_load(&sim_forked)) {
		memset(out, 0, sizeof *out);
		return;
	}
	pthread_mutex_lock(&sim_mu);
	*out = sim_ctr;
	pthread_mutex_unlock(&sim_mu);
}
