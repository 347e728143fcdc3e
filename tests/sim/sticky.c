/* sticky - what the runtime answers once a kernel fault broke the context,
 * one line per call, in the format of errors.c: the call, its return code,
 * then cudaPeekAtLastError(), cudaGetLastError() and a second
 * cudaGetLastError(), then any value the call reported.  Until the first
 * call that fails, a line reads only cudaPeekAtLastError(): the H200 run
 * read the last error first after cudaStreamQuery had failed, so what
 * cudaGetLastError says before that is not known.
 *
 * Before the fault the program leaves two 64 KiB blocks freed (under the
 * shim: idle in the cache, so the allocations after the fault would be
 * cache hits) and one 1 MiB block live.  Then a "kernel" faults
 * (simLaunchFault: 719 as a __trap(), 700 as a store through a bad
 * pointer) and the program waits, making no CUDA call, until the device is
 * idle, as the H200 measurement slept 500 ms.
 *
 * sticky.h200.txt holds the answers measured on the H200 for these calls
 * (tests/sim/README.md, "Errors"); tests/sim/sticky.sh diffs the sim
 * against it and the shim against the sim (issue 15, D10: a cache hit
 * answered 0 with a pointer where the runtime answers 719 and NULL).
 * Lines that begin with '+' are calls the H200 run did not make; only the
 * shim-against-sim comparison reads them.
 *
 *   sticky 719 | sticky 700
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "sim.h"

#define KB (1u << 10)

static int failed;   /* a call has failed since the fault */

static void line(const char *what, cudaError_t r, const char *extra)
{
	cudaError_t peek = cudaPeekAtLastError();
	cudaError_t last, last2;

	failed |= r != cudaSuccess;
	if (!failed) {
		printf("%-52s ret=%-3d peek=%d%s%s\n", what, (int)r, (int)peek, extra ? "  " : "", extra ? extra : "");
		return;
	}
	last = cudaGetLastError();
	last2 = cudaGetLastError();
	printf("%-52s ret=%-3d peek=%-3d last=%-3d last2=%d%s%s\n", what, (int)r, (int)peek, (int)last,
	       (int)last2, extra ? "  " : "", extra ? extra : "");
}

static void alloc_line(const char *what, cudaError_t r, void *p)
{
	line(what, r, p ? "null=0" : "null=1");
}

int main(int argc, char **argv)
{
	cudaError_t code = argc > 1 && atoi(argv[1]) == 700 ? cudaErrorIllegalAddress : cudaErrorLaunchFailure;
	void *small[2] = { 0 }, *blk = NULL, *dev = NULL, *p;
	char *m = malloc(64);
	struct cudaPointerAttributes a;
	unsigned flags = 0;
	char buf[64];
	cudaError_t r;
	int spins = 0;

	if (!m || cudaHostAlloc(&blk, 1024 * KB, 0) != cudaSuccess || cudaMalloc(&dev, 4096) != cudaSuccess)
		return 1;
	for (int i = 0; i < 2; i++)
		if (cudaHostAlloc(&small[i], 64 * KB, 0) != cudaSuccess)
			return 1;
	for (int i = 0; i < 2; i++)
		if (cudaFreeHost(small[i]) != cudaSuccess)
			return 1;
	if (simLaunchFault(0, code) != cudaSuccess)
		return 1;
	while (!simDeviceIdle() && spins++ < 5000)
		usleep(1000);

	line(code == cudaErrorLaunchFailure ? "(a kernel trapped; nothing called since)"
					    : "(a kernel faulted; nothing called since)", cudaSuccess, NULL);
	{
		int d = -1;
		r = cudaGetDevice(&d);
		snprintf(buf, sizeof buf, "device=%d", d);
		line("cudaGetDevice", r, buf);
	}
	line("cudaPointerGetAttributes(live block)", cudaPointerGetAttributes(&a, blk), NULL);
	line("cudaHostGetFlags(live block)", cudaHostGetFlags(&flags, blk), NULL);
	line("cudaStreamQuery(0)", cudaStreamQuery(0), NULL);
	p = (void *)1;
	r = cudaHostAlloc(&p, 64 * KB, 0);
	alloc_line("cudaHostAlloc(64 KiB, freed before the fault)", r, p);
	p = (void *)1;
	r = cudaMallocHost(&p, 64 * KB);
	alloc_line("cudaMallocHost(64 KiB, freed before the fault)", r, p);
	line("cudaHostAlloc(size 0)", cudaHostAlloc(&p, 0, 0), NULL);
	line("cudaHostAlloc(NULL out)", cudaHostAlloc(NULL, 4096, 0), NULL);
	p = (void *)1;
	line("cudaHostAlloc(flags=0xFF)", cudaHostAlloc(&p, 4096, 0xFF), NULL);
	line("cudaFreeHost(NULL)", cudaFreeHost(NULL), NULL);
	line("cudaFreeHost(malloc'd)", cudaFreeHost(m), NULL);
	line("+cudaFreeHost(64 KiB block freed before the fault)", cudaFreeHost(small[0]), NULL);
	line("+cudaMemcpy(H2D from the live block)", cudaMemcpy(dev, blk, 4096, cudaMemcpyHostToDevice), NULL);
	line("cudaFreeHost(live block)", cudaFreeHost(blk), NULL);
	line("+cudaFreeHost(live block again)", cudaFreeHost(blk), NULL);
	return 0;
}
