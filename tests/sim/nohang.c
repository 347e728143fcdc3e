/* nohang - a call that does not wait for the device plainly must not wait
 * under the shim either ("the same hangs and the same non-hangs").  On the
 * H200 cudaHostAlloc, cudaMallocHost and cudaHostRegister did not wait for
 * a 30 ms kernel, while cudaFreeHost, cudaHostUnregister and cudaFree did
 * (DESIGN.md); the simulated device does the same.
 *
 * Each case starts a "kernel" on a non-blocking stream that spins until the
 * host sets a flag in mapped pinned memory, makes its calls, and only then
 * sets the flag: a call that waited for the kernel would wait for ever.
 * Here the kernel gives up after SPIN_MS instead, and the case fails.
 *
 *  - miss: idle blocks of 64 and 48 MiB, then a 40 MiB request, a miss
 *    beyond the cache's headroom (src/core/pool.c): making room releases
 *    an idle block, and a release waits for the device;
 *  - the same with cudaMallocHost;
 *  - fenced: two idle 48 MiB blocks whose fences wait for other work,
 *    then a 48 MiB request while the kernel runs: the pool may wait for the
 *    oldest fence no longer than an allocation costs;
 *  - staged: pageable cudaMemcpy both ways on the legacy stream and
 *    cudaMemcpyAsync on another non-blocking stream, 4 MiB each (staged
 *    under the shim), which the kernel's stream does not hold up.
 * Then, with the device idle, a free (whose real call waits anyway) may
 * release what the misses left (tests/sim/nohang.sh reads the report).
 *
 * Run plainly and under the shim (tests/sim/nohang.sh). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../doubles/sim.h"
#include "simtest.h"
#include "../tap.h"

#define MiB ((size_t)1 << 20)
#define SPIN_MS 10000.0

static struct simtest_spin k = { .limit_ms = SPIN_MS };
static cudaStream_t ks, other;

static void spin_start(void)
{
	__atomic_store_n(k.flag, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&k.gave_up, 0, __ATOMIC_RELEASE);
	simLaunch(ks, simtest_spin_fn, &k, 0);
}

/* 0 when the kernel was still waiting for the flag: nothing waited for it. */
static int spin_end(void)
{
	__atomic_store_n(k.flag, 1, __ATOMIC_RELEASE);
	cudaStreamSynchronize(ks);
	return __atomic_load_n(&k.gave_up, __ATOMIC_ACQUIRE);
}

static void *must_alloc(size_t n)
{
	void *p = NULL;

	if (cudaHostAlloc(&p, n, 0) != cudaSuccess)
		return NULL;
	return p;
}

int main(void)
{
	void *a, *b, *c, *d, *e;
	unsigned char *src, *dst, *dev;
	int err;

	if (cudaHostAlloc(&a, 4096, cudaHostAllocMapped) != cudaSuccess ||
	    cudaStreamCreateWithFlags(&ks, cudaStreamNonBlocking) != cudaSuccess ||
	    cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking) != cudaSuccess) {
		diag("set-up failed");
		return 1;
	}
	k.flag = a;

	/* miss, cudaHostAlloc */
	a = must_alloc(64 * MiB);
	cudaFreeHost(a);
	a = must_alloc(48 * MiB);
	cudaFreeHost(a);
	spin_start();
	err = cudaHostAlloc(&b, 40 * MiB, 0);
	is_int(spin_end(), 0, "a miss beyond the headroom did not wait for the kernel");
	is_int(err, cudaSuccess, "... and succeeded");
	cudaFreeHost(b);

	/* miss, cudaMallocHost: a size class of its own again */
	spin_start();
	err = cudaMallocHost(&c, 36 * MiB);
	is_int(spin_end(), 0, "cudaMallocHost: the same");
	is_int(err, cudaSuccess, "... and succeeded");
	cudaFreeHost(c);

	/* fenced: two idle blocks of one class whose fences wait for 200 ms of
	 * work on another stream (plainly, the first free waits for it) */
	c = must_alloc(48 * MiB);
	d = must_alloc(48 * MiB);
	simLaunch(other, simtest_nop, NULL, 200000);
	cudaFreeHost(c);
	cudaFreeHost(d);
	spin_start();
	err = cudaHostAlloc(&e, 48 * MiB, 0);
	is_int(spin_end(), 0, "a request whose idle blocks are fenced did not wait for the kernel");
	is_int(err, cudaSuccess, "... and succeeded");
	cudaStreamSynchronize(other);
	cudaFreeHost(e);

	/* staged copies, 4 MiB, on streams the kernel does not hold */
	src = malloc(4 * MiB);
	dst = malloc(4 * MiB);
	memset(src, 7, 4 * MiB);
	memset(dst, 0, 4 * MiB);
	if (cudaMalloc((void **)&dev, 4 * MiB) != cudaSuccess) {
		diag("cudaMalloc failed");
		return 1;
	}
	spin_start();
	err = cudaMemcpy(dev, src, 4 * MiB, cudaMemcpyHostToDevice) != cudaSuccess;
	err += cudaMemcpy(dst, dev, 4 * MiB, cudaMemcpyDeviceToHost) != cudaSuccess;
	err += cudaMemcpyAsync(dev, src, 4 * MiB, cudaMemcpyHostToDevice, other) != cudaSuccess;
	err += cudaMemcpyAsync(dst, dev, 4 * MiB, cudaMemcpyDeviceToHost, other) != cudaSuccess;
	err += cudaStreamSynchronize(other) != cudaSuccess;
	is_int(spin_end(), 0, "pageable copies on the legacy stream and another stream did not wait for the kernel");
	is_int(err, 0, "... and succeeded");
	ok(dst[0] == 7 && dst[4 * MiB - 1] == 7, "... with the bytes");
	free(src);
	free(dst);
	cudaFree(dev);

	/* idle device: a free may trim what the misses left */
	b = must_alloc(40 * MiB);
	is_int(cudaFreeHost(b), cudaSuccess, "a free with the device idle");
	is_int(cudaDeviceSynchronize(), cudaSuccess, "the device synchronizes");
	is_int(cudaGetLastError(), cudaSuccess, "no error left behind");
	return done_testing();
}
