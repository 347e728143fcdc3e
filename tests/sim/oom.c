/* oom - out of pinned memory, run with SIM_PINNED_LIMIT=8M.
 *
 * Fills the cache with idle blocks (six 1 MB blocks, freed), then asks for a
 * 4 MB block, which fits only if those idle blocks are really released: the
 * shim must trim and retry, and succeed without leaving an error behind.  A
 * 16 MB block can never fit: cudaErrorMemoryAllocation, with or without shim.
 * Then, with the cache full again and an error pending (cudaSetDevice(99):
 * 101), a 5 MB block that fits only once idle blocks are released must leave
 * that 101 pending, as it does plainly: the shim's own failed attempt before
 * trimming must not replace it with 2 (issue 15, D5).
 *
 *   oom plain | oom shim
 *
 * Last, a kernel that waits for the host (simtest.h) runs while a 3 MB
 * request fits only without the cache's idle 6 MB block: plainly the
 * allocation does not wait for the kernel; under the shim it gets that
 * idle block instead of releasing it, a release that would wait (over
 * libcudart.so.12 too, launched through the libcuda.so.1 double); the same
 * with an error pending, where the shim makes no attempt of its own first
 * when no context is current.
 *
 * Inside a stream capture that allows the allocation (relaxed, or the
 * calling thread's mode relaxed during a global or thread-local one), a
 * 4 MB block that fits only once the cache's idle 6 MB block goes: plainly
 * it fits, and under the shim too (released on that thread: every call a
 * release makes is allowed where the allocation is, measured), with no
 * error left and the capture intact.  Where the capture refuses it (global
 * mode, the thread's mode global), 900 and an invalidated capture (901), as
 * plainly.
 *
 * Built with -DOOM_CUDART12 against tests/driver's libcudart.so.12 (whose
 * driver, libcuda.so.1, is the simulated one with the same limit), the
 * shim's first attempt can go through the driver (a context is current). */
#include <dlfcn.h>
#include <string.h>
#include "../doubles/sim.h"
#include "../tap.h"
#include "simtest.h"

#define MB (1u << 20)

/* simCounters: the sim's own, or the one of the libcuda.so.1 double that
 * libcudart.so.12 loaded. */
static void counters(struct sim_counters *c)
{
#ifdef OOM_CUDART12
	void (*fn)(struct sim_counters *) = NULL;
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);

	memset(c, 0, sizeof *c);
	if (h)
		*(void **)&fn = dlsym(h, "simCounters");
	if (fn)
		fn(c);
#else
	simCounters(c);
#endif
}

/* Six 1 MB blocks allocated and freed: under the shim they stay cached. */
static int fill(void)
{
	void *blk[6] = { 0 };
	int errors = 0;

	for (int i = 0; i < 6; i++)
		errors += cudaHostAlloc(&blk[i], MB, 0) != cudaSuccess;
	for (int i = 0; i < 6; i++)
		errors += cudaFreeHost(blk[i]) != cudaSuccess;
	return errors;
}

/* simLaunch: the sim's own, or the libcuda.so.1 double's. */
typedef cudaError_t (*launch_fn)(cudaStream_t, void (*)(void *), void *, unsigned);
static launch_fn launcher(void)
{
#ifdef OOM_CUDART12
	launch_fn fn = NULL;
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);

	if (h)
		*(void **)&fn = dlsym(h, "simLaunch");
	return fn;
#else
	return simLaunch;
#endif
}

/* n bytes allocated while a kernel on ks waits for the host: a point that
 * the allocation did not wait for it (what), one that it succeeded, one
 * that the last error is then want; the block is used and freed. */
static void beside_kernel(launch_fn launch, cudaStream_t ks, struct simtest_spin *k, size_t n,
			  cudaError_t want, const char *what)
{
	void *y = NULL;
	int err;

	__atomic_store_n(k->flag, 0, __ATOMIC_RELEASE);
	launch(ks, simtest_spin_fn, k, 0);
	err = cudaHostAlloc(&y, n, 0);
	__atomic_store_n(k->flag, 1, __ATOMIC_RELEASE);
	cudaStreamSynchronize(ks);
	is_int(__atomic_load_n(&k->gave_up, __ATOMIC_ACQUIRE), 0, "%s: the allocation did not wait for it", what);
	is_int(err, cudaSuccess, "... and succeeded");
	is_int(cudaGetLastError(), want, "... and the last error is %d", (int)want);
	if (y)
		memset(y, 3, n);
	is_int(cudaFreeHost(y), cudaSuccess, "... and the block frees");
}

/* Out of memory while a kernel waits for the host. */
static void waiting_kernel(void)
{
	struct simtest_spin k = { .limit_ms = 3000 };
	launch_fn launch = launcher();
	cudaStream_t ks;
	void *x = NULL;

	if (!launch) {
		ok(0, "the simulated device's simLaunch");
		return;
	}
	is_int(cudaHostAlloc(&x, 6 * MB, 0), cudaSuccess, "a 6 MB block");
	is_int(cudaFreeHost(x), cudaSuccess, "... freed (the shim keeps it)");
	is_int(cudaHostAlloc((void **)&k.flag, 4096, cudaHostAllocMapped), cudaSuccess, "a mapped flag");
	is_int(cudaStreamCreateWithFlags(&ks, cudaStreamNonBlocking), cudaSuccess, "a stream for the kernel");
	beside_kernel(launch, ks, &k, 3 * MB, cudaSuccess, "3 MB with a kernel waiting for the host");
	/* Again with an error pending: without a context current to try the
	 * driver with, the shim tries nothing before making room. */
	is_int(cudaSetDevice(99), cudaErrorInvalidDevice, "cudaSetDevice(99): 101, left pending");
	beside_kernel(launch, ks, &k, 2 * MB, cudaErrorInvalidDevice,
		      "2 MB with an error pending and a kernel waiting for the host");
	cudaFreeHost(k.flag);
	cudaStreamDestroy(ks);
}

#ifndef OOM_CUDART12
/* 4 MB asked for inside a capture of mode on a stream of this thread, its
 * own mode tmode meanwhile, with the cache's idle 6 MB block in the way;
 * pending: with cudaSetDevice(99)'s 101 pending (fuzzer seed 78111), which
 * an allowed allocation leaves and a refused one replaces by 900. */
static void captured(enum cudaStreamCaptureMode mode, enum cudaStreamCaptureMode tmode, int refused, int pending,
		     const char *what)
{
	enum cudaStreamCaptureMode m = tmode;
	cudaStream_t s;
	cudaGraph_t g = NULL;
	void *x = NULL, *y = NULL;
	int err, last, end;

	is_int(cudaHostAlloc(&x, 6 * MB, 0), cudaSuccess, "%s: a 6 MB block", what);
	is_int(cudaFreeHost(x), cudaSuccess, "... freed (the shim keeps it)");
	is_int(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess, "... a stream");
	is_int(cudaStreamBeginCapture(s, mode), cudaSuccess, "... captures");
	cudaThreadExchangeStreamCaptureMode(&m);
	if (pending)
		cudaSetDevice(99);
	err = cudaHostAlloc(&y, 4 * MB, 0);
	last = cudaGetLastError();
	cudaThreadExchangeStreamCaptureMode(&m);
	end = cudaStreamEndCapture(s, &g);
	is_int(err, refused ? cudaErrorStreamCaptureUnsupported : cudaSuccess, "%s: 4 MB inside the capture", what);
	is_int(last, pending && !refused ? cudaErrorInvalidDevice : err,
	       pending && !refused ? "... and the pending 101 is still the last error" : "... and the last error is its answer");
	is_int(end, refused ? cudaErrorStreamCaptureInvalidated : cudaSuccess, "... and the capture ends so");
	if (y)
		memset(y, 2, 4 * MB);
	cudaFreeHost(y);
	cudaStreamDestroy(s);
	cudaGetLastError();
}
#endif

int main(int argc, char **argv)
{
	int shim = argc > 1 && !strcmp(argv[1], "shim");
	void *p = NULL, *q = NULL;
	struct sim_counters c;

	is_int(fill(), 0, "six 1 MB blocks allocated and freed");
	counters(&c);
	if (shim)
		ok(c.live_pinned_bytes >= 6 * MB, "shim: the cache holds the freed blocks (%llu KB live in the sim)",
		   c.live_pinned_bytes / 1024);
	else
		is_int(c.live_pinned_bytes, 0, "plain: the freed blocks were released");

	is_int(cudaHostAlloc(&p, 4 * MB, 0), cudaSuccess, "a 4 MB block fits once idle blocks are released");
	is_int(cudaGetLastError(), cudaSuccess, "... and leaves no error behind");
	ok(p != NULL, "... and returns a pointer");
	if (p)
		memset(p, 1, 4 * MB);
	is_int(cudaFreeHost(p), cudaSuccess, "the 4 MB block frees");

	is_int(cudaHostAlloc(&q, 16 * MB, 0), cudaErrorMemoryAllocation, "16 MB can never fit: out of memory");
	is_int(cudaPeekAtLastError(), cudaErrorMemoryAllocation, "... recorded as the last error");
	is_int(cudaGetLastError(), cudaErrorMemoryAllocation, "... returned once by cudaGetLastError");
	is_int(cudaGetLastError(), cudaSuccess, "... and then cleared (not sticky)");
	is_int(cudaMallocHost(&q, 16 * MB), cudaErrorMemoryAllocation, "cudaMallocHost too");
	cudaGetLastError();

	/* D5: an error pending while the shim trims and retries. */
	is_int(fill(), 0, "six 1 MB blocks allocated and freed again");
	counters(&c);
	if (shim)
		ok(c.live_pinned_bytes + 5 * MB > 8 * MB, "shim: 5 MB fits only once idle blocks go (%llu KB live)",
		   c.live_pinned_bytes / 1024);
	is_int(cudaSetDevice(99), cudaErrorInvalidDevice, "cudaSetDevice(99): 101, left pending");
	p = NULL;
	is_int(cudaHostAlloc(&p, 5 * MB, 0), cudaSuccess, "a 5 MB block fits once idle blocks are released");
	is_int(cudaPeekAtLastError(), cudaErrorInvalidDevice, "... and the pending 101 is still the last error");
	is_int(cudaGetLastError(), cudaErrorInvalidDevice, "... returned by cudaGetLastError");
	is_int(cudaFreeHost(p), cudaSuccess, "the 5 MB block frees");
	is_int(cudaGetLastError(), cudaSuccess, "no error left");
	waiting_kernel();
#ifndef OOM_CUDART12
	captured(cudaStreamCaptureModeRelaxed, cudaStreamCaptureModeRelaxed, 0, 0, "relaxed capture");
	captured(cudaStreamCaptureModeGlobal, cudaStreamCaptureModeRelaxed, 0, 0, "global capture, thread relaxed");
	captured(cudaStreamCaptureModeThreadLocal, cudaStreamCaptureModeRelaxed, 0, 0, "thread-local capture, thread relaxed");
	captured(cudaStreamCaptureModeGlobal, cudaStreamCaptureModeGlobal, 1, 0, "global capture");
	captured(cudaStreamCaptureModeRelaxed, cudaStreamCaptureModeRelaxed, 0, 1, "relaxed capture, an error pending");
	captured(cudaStreamCaptureModeGlobal, cudaStreamCaptureModeGlobal, 1, 1, "global capture, an error pending");
#endif
	counters(&c);
	diag("sim: %llu allocation(s) refused for lack of memory", c.host_alloc_oom);
	return done_testing();
}
