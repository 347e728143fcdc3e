/* sticky_line.h - the calls tests/sim/sticky.c and tests/gpu/gpu_sticky.cu
 * make after a kernel fault, and their output (one list and one format, so
 * that the GPU's plain answers can be diffed against
 * tests/sim/sticky.h200.txt).  A line holds the call, its return code,
 * cudaPeekAtLastError(), then cudaGetLastError() twice, then any value the
 * call reported.  Until the first call that fails, a line reads only
 * cudaPeekAtLastError(): the H200 run first read the last error after
 * cudaStreamQuery had failed, so what cudaGetLastError says before that is
 * not known. */
#ifndef STICKY_LINE_H
#define STICKY_LINE_H
#include <stdio.h>
#include <cuda_runtime_api.h>

static int sticky_failed;   /* a call has failed since the fault */

static void sticky_line(const char *what, cudaError_t r, const char *extra)
{
	cudaError_t peek = cudaPeekAtLastError();
	cudaError_t last, last2;

	sticky_failed |= r != cudaSuccess;
	if (!sticky_failed) {
		printf("%-52s ret=%-3d peek=%d%s%s\n", what, (int)r, (int)peek, extra ? "  " : "", extra ? extra : "");
		return;
	}
	last = cudaGetLastError();
	last2 = cudaGetLastError();
	printf("%-52s ret=%-3d peek=%-3d last=%-3d last2=%d%s%s\n", what, (int)r, (int)peek, (int)last,
	       (int)last2, extra ? "  " : "", extra ? extra : "");
}

/* The calls, in the order of the H200 measurement.  blk: a live 1 MiB
 * block; small: a 64 KiB block freed before the fault (two were: under the
 * shim both are idle in the cache); m: malloc'd; dev: device memory.
 * Lines that begin with '+' are calls the H200 run did not make. */
static void sticky_calls(int trap, void *blk, void *small, char *m, void *dev)
{
	struct cudaPointerAttributes a;
	unsigned flags = 0;
	char buf[32];
	cudaError_t r;
	void *p;
	int d = -1;

	sticky_line(trap ? "(a kernel trapped; nothing called since)" : "(a kernel faulted; nothing called since)",
		    cudaSuccess, NULL);
	r = cudaGetDevice(&d);
	snprintf(buf, sizeof buf, "device=%d", d);
	sticky_line("cudaGetDevice", r, buf);
	sticky_line("cudaPointerGetAttributes(live block)", cudaPointerGetAttributes(&a, blk), NULL);
	sticky_line("cudaHostGetFlags(live block)", cudaHostGetFlags(&flags, blk), NULL);
	sticky_line("cudaStreamQuery(0)", cudaStreamQuery(0), NULL);
	p = (void *)1;
	r = cudaHostAlloc(&p, 64 << 10, 0);
	sticky_line("cudaHostAlloc(64 KiB, freed before the fault)", r, p ? "null=0" : "null=1");
	p = (void *)1;
	r = cudaMallocHost(&p, 64 << 10);
	sticky_line("cudaMallocHost(64 KiB, freed before the fault)", r, p ? "null=0" : "null=1");
	sticky_line("cudaHostAlloc(size 0)", cudaHostAlloc(&p, 0, 0), NULL);
	sticky_line("cudaHostAlloc(NULL out)", cudaHostAlloc(NULL, 4096, 0), NULL);
	sticky_line("cudaHostAlloc(flags=0xFF)", cudaHostAlloc(&p, 4096, 0xFF), NULL);
	sticky_line("cudaFreeHost(NULL)", cudaFreeHost(NULL), NULL);
	sticky_line("cudaFreeHost(malloc'd)", cudaFreeHost(m), NULL);
	sticky_line("+cudaFreeHost(64 KiB block freed before the fault)", cudaFreeHost(small), NULL);
	sticky_line("+cudaMemcpy(H2D from the live block)",
		    cudaMemcpy(dev, blk, 4096, cudaMemcpyHostToDevice), NULL);
	sticky_line("cudaFreeHost(live block)", cudaFreeHost(blk), NULL);
	sticky_line("+cudaFreeHost(live block again)", cudaFreeHost(blk), NULL);
}

#endif
