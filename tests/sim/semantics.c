/* semantics - the host-side behaviour a program relies on, and the device
 * model behind it.
 *
 *   semantics plain   the simulated device alone: copy semantics, plus the
 *                     driver facts the sim models (cudaFreeHost waits for all
 *                     device work and stalls other threads; cudaHostAlloc
 *                     does not wait)
 *   semantics shim    under libpincache.so: the same copy semantics (the shim
 *                     stages pageable copies itself), and a free with GPU work
 *                     in flight no longer waits for it
 *
 * Both: a cudaFreeHost while another stream captures a graph leaves the
 * capture valid (seen failing with the shim's capture guard removed: the
 * context-wide fence invalidated the capture, cudaStreamEndCapture 901).
 * And a pinned allocation or free during a capture, in each mode, from the
 * capturing thread and another, is refused or done exactly as the H200's
 * runtime does it (seen failing under the shim while it served allocations
 * from its cache during captures: 0 where the runtime answers 900).
 *
 * A "slow kernel" is a simLaunch host function that sleeps 60 ms first, so
 * work queued behind it on its stream is certainly still pending.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../doubles/sim.h"
#include "../tap.h"
#include "simtest.h"

#define N 65536
#define SLOW_US 60000

struct fill {
	unsigned char *dst;
	int value;
};

/* A kernel that writes a device buffer. */
static void fill_kernel(void *arg)
{
	struct fill *f = arg;

	memset(f->dst, f->value, N);
}

static int all(const unsigned char *p, int value)
{
	for (size_t i = 0; i < N; i++)
		if (p[i] != (unsigned char)value)
			return 0;
	return 1;
}

struct launcher {
	double call_ms;
};

static void *launch_during_free(void *arg)
{
	struct launcher *l = arg;
	struct timespec ms10 = { 0, 10 * 1000 * 1000 };
	double t0;

	nanosleep(&ms10, NULL);             /* let the main thread enter cudaFreeHost */
	t0 = simtest_now_ms();
	simLaunch(cudaStreamPerThread, simtest_nop, NULL, 0);
	l->call_ms = simtest_now_ms() - t0;
	cudaStreamSynchronize(cudaStreamPerThread);
	return NULL;
}

/* ---- capture modes: what a pinned allocation or free does during a
 * capture, as measured on the H200 (tests/gpu/gpu_capture.cu) */
struct capop {
	int op;                  /* 0 free p, 1 allocate *q */
	void *p, **q;
	cudaError_t rc;
};

static void *capop_run(void *arg)
{
	struct capop *c = arg;

	c->rc = c->op ? cudaHostAlloc(c->q, N, 0) : cudaFreeHost(c->p);
	return NULL;
}

/* op 0: free a block with device work in flight; 1: allocate
 * after a block of the size was freed with the device idle; 2: allocate
 * after it was freed with work in flight.  The runtime refuses (900) and
 * invalidates the capture when the capture prohibits the calling thread's
 * unsafe calls: global mode from any thread, thread-local mode from the
 * capturing one; a cache must do the same. */
static void capture_case(cudaStream_t work, int op, enum cudaStreamCaptureMode mode, int other)
{
	static const char *mname[] = { "global", "thread-local", "relaxed" };
	static const char *oname[] = { "cudaFreeHost", "cudaHostAlloc (a block idle in a cache)",
				       "cudaHostAlloc (a block behind a pending fence)" };
	int prohibited = mode == cudaStreamCaptureModeGlobal || (mode == cudaStreamCaptureModeThreadLocal && !other);
	cudaStream_t cs;
	cudaGraph_t g = NULL;
	void *p = NULL, *q = NULL;
	struct capop c = { op != 0, NULL, &q, cudaErrorUnknown };
	pthread_t t;

	cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking);
	cudaHostAlloc(&p, N, 0);
	if (op == 1) {
		cudaFreeHost(p);
		p = NULL;
	}
	cudaDeviceSynchronize();
	simLaunch(work, simtest_nop, NULL, SLOW_US / 10);   /* device work in flight */
	if (op == 2) {
		cudaFreeHost(p);
		p = NULL;
	}
	c.p = p;
	cudaStreamBeginCapture(cs, mode);
	if (other) {
		pthread_create(&t, NULL, capop_run, &c);
		pthread_join(t, NULL);
	} else {
		capop_run(&c);
	}
	is_int(c.rc, prohibited ? cudaErrorStreamCaptureUnsupported : cudaSuccess,
	       "%s during a %s capture, %s thread: %s", oname[op], mname[mode], other ? "another" : "the capturing",
	       prohibited ? "refused" : "done");
	is_int(cudaStreamEndCapture(cs, &g), prohibited ? cudaErrorStreamCaptureInvalidated : cudaSuccess,
	       "... and the capture %s", prohibited ? "is invalidated" : "ends with a graph");
	cudaGetLastError();
	cudaDeviceSynchronize();
	if (op == 0 && c.rc != cudaSuccess)
		cudaFreeHost(p);
	if (op != 0 && c.rc == cudaSuccess)
		cudaFreeHost(q);
	cudaStreamDestroy(cs);
}

int main(int argc, char **argv)
{
	int shim = argc > 1 && !strcmp(argv[1], "shim");
	unsigned char *pin = NULL, *dev = NULL, *page = malloc(N), *out = malloc(N);
	cudaStream_t blk, nb;
	struct fill f;
	double t0, ms;

	cudaStreamCreate(&blk);
	cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking);
	cudaHostAlloc((void **)&pin, N, 0);
	cudaMalloc((void **)&dev, N);

	/* Pinned async H2D: the copy reads the block when it runs. */
	memset(pin, 'A', N);
	simLaunch(blk, simtest_nop, NULL, SLOW_US);
	cudaMemcpyAsync(dev, pin, N, cudaMemcpyHostToDevice, blk);
	memset(pin, 'B', N);
	cudaStreamSynchronize(blk);
	cudaMemcpy(out, dev, N, cudaMemcpyDeviceToHost);
	ok(all(out, 'B'), "pinned async H2D reads host memory when it executes");

	/* Pageable async H2D: staged before return; the source may be reused. */
	memset(page, 'C', N);
	simLaunch(blk, simtest_nop, NULL, SLOW_US);
	is_int(cudaMemcpyAsync(dev, page, N, cudaMemcpyHostToDevice, blk), cudaSuccess, "pageable async H2D");
	memset(page, 'D', N);
	cudaStreamSynchronize(blk);
	cudaMemcpy(out, dev, N, cudaMemcpyDeviceToHost);
	ok(all(out, 'C'), "... delivers the bytes of the call, not those written after it returned");

	/* Pageable async D2H: returns only when the data is there, in stream order. */
	f = (struct fill){ dev, 'E' };
	simLaunch(blk, fill_kernel, &f, SLOW_US);
	memset(page, 0, N);
	cudaMemcpyAsync(page, dev, N, cudaMemcpyDeviceToHost, blk);
	ok(all(page, 'E'), "pageable async D2H returns with the data, after the stream's earlier work");

	/* cudaMemcpy is ordered on the legacy stream, after blocking streams' work. */
	f = (struct fill){ dev, 'F' };
	simLaunch(blk, fill_kernel, &f, SLOW_US);
	memset(page, 0, N);
	cudaMemcpy(page, dev, N, cudaMemcpyDeviceToHost);
	ok(all(page, 'F'), "cudaMemcpy waits for earlier work on a blocking stream");

	/* The per-thread default stream: _ptsz with stream 0, cudaMemcpy_ptds. */
	f = (struct fill){ dev, 'G' };
	simLaunch(cudaStreamPerThread, fill_kernel, &f, SLOW_US);
	memset(page, 0, N);
	cudaMemcpyAsync_ptsz(page, dev, N, cudaMemcpyDeviceToHost, 0);
	ok(all(page, 'G'), "cudaMemcpyAsync_ptsz(stream 0) is ordered on the per-thread stream");
	f = (struct fill){ dev, 'H' };
	simLaunch(cudaStreamPerThread, fill_kernel, &f, SLOW_US);
	memset(page, 0, N);
	cudaMemcpy_ptds(page, dev, N, cudaMemcpyDeviceToHost);
	ok(all(page, 'H'), "cudaMemcpy_ptds is ordered on the per-thread stream");
	f = (struct fill){ dev, 'I' };
	simLaunch(cudaStreamPerThread, fill_kernel, &f, SLOW_US);
	memset(pin, 0, N);
	cudaMemcpyAsync(pin, dev, N, cudaMemcpyDeviceToHost, cudaStreamPerThread);
	cudaStreamSynchronize(cudaStreamPerThread);
	ok(all(pin, 'I'), "pinned async D2H on cudaStreamPerThread, then a sync, delivers");
	cudaDeviceSynchronize();

	if (!shim) {
		struct sim_counters c0, c;
		struct launcher l = { 0 };
		pthread_t t;
		void *p = NULL;

		/* cudaHostAlloc does not wait for the device. */
		simLaunch(nb, simtest_nop, NULL, SLOW_US);
		t0 = simtest_now_ms();
		cudaHostAlloc(&p, N, 0);
		ms = simtest_now_ms() - t0;
		ok(ms < SLOW_US / 2000.0, "cudaHostAlloc does not wait for a pending kernel (%.1f ms)", ms);

		/* cudaFreeHost waits for all device work, even on a non-blocking
		 * stream, and stalls another thread's launch while it runs. */
		simCounters(&c0);
		pthread_create(&t, NULL, launch_during_free, &l);
		t0 = simtest_now_ms();
		cudaFreeHost(p);
		ms = simtest_now_ms() - t0;
		pthread_join(t, NULL);
		simCounters(&c);
		ok(ms > SLOW_US / 2000.0, "cudaFreeHost waits for a kernel on a non-blocking stream (%.1f ms)", ms);
		is_int(c.host_frees_waited - c0.host_frees_waited, 1, "... and the sim counts it as a waiting free");
		ok(c.gate_stalls > c0.gate_stalls && l.call_ms > 5,
		   "... and another thread's launch stalls meanwhile (%.1f ms)", l.call_ms);
		ok(simDeviceIdle(), "the device is idle after the free");
	} else {
		void *p = NULL;

		/* The point of the cache: no device-wide wait on free. */
		cudaHostAlloc(&p, N, 0);
		simLaunch(nb, simtest_nop, NULL, SLOW_US);
		t0 = simtest_now_ms();
		is_int(cudaFreeHost(p), cudaSuccess, "cudaFreeHost with a kernel in flight");
		ms = simtest_now_ms() - t0;
		ok(ms < SLOW_US / 2000.0, "... returns without waiting for it (%.1f ms)", ms);
	}
	cudaDeviceSynchronize();

	/* A free while another stream captures a graph (relaxed mode) leaves
	 * the capture valid, plainly and under the shim: whatever the shim does
	 * to fence the block must not be an operation that breaks captures
	 * (cuCtxRecordEvent does). */
	{
		cudaStream_t cs;
		cudaGraph_t g = NULL;
		enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
		void *p = NULL;

		cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking);
		cudaHostAlloc(&p, N, 0);
		simLaunch(nb, simtest_nop, NULL, SLOW_US / 10);  /* device work in flight */
		is_int(cudaStreamBeginCapture(cs, cudaStreamCaptureModeRelaxed), cudaSuccess,
		       "a capture begins on a non-blocking stream");
		/* An EndCapture that ends nothing (that stream does not capture)
		 * must not make the shim think the capture is over. */
		ok(cudaStreamEndCapture(nb, &g) != cudaSuccess, "cudaStreamEndCapture of a stream that does not capture fails");
		cudaGetLastError();
		is_int(cudaFreeHost(p), cudaSuccess, "cudaFreeHost while it captures");
		cudaStreamIsCapturing(cs, &st);
		is_int(st, cudaStreamCaptureStatusActive, "... leaves the capture active");
		is_int(cudaStreamEndCapture(cs, &g), cudaSuccess, "... and it ends with a graph");
		ok(g != NULL, "... a graph came back (the simulated device's is a token, not destroyed)");
		cudaDeviceSynchronize();
		cudaStreamDestroy(cs);
	}
	for (int op = 0; op < 3; op++)
		for (int mode = cudaStreamCaptureModeRelaxed; mode >= cudaStreamCaptureModeGlobal; mode--)
			for (int other = 0; other < 2; other++)
				capture_case(nb, op, (enum cudaStreamCaptureMode)mode, other);
	cudaFreeHost(pin);
	cudaFree(dev);
	cudaStreamDestroy(blk);
	cudaStreamDestroy(nb);
	free(page);
	free(out);
	return done_testing();
}
