/* sticky - what the runtime answers once a kernel fault broke the context,
 * one line per call, in the format of errors.c: the call, its return code,
 * then cudaPeekAtLastError(), cudaGetLastError() and a second
 * cudaGetLastError(), then any value the call reported (sticky_line.h).
 *
 * Before the fault the program leaves two 64 KiB blocks freed (under the
 * shim: idle in the cache, so the allocations after the fault would be
 * cache hits) and one 1 MiB block live.  Then a "kernel" faults
 * (simLaunchFault: 719 as a __trap(), 700 as a store through a bad
 * pointer) and the program waits, making no CUDA call, until the device is
 * idle, as the H200 measurement slept 500 ms.
 *
 * sticky.h200.txt holds the answers measured on the H200 for these calls
 * (tests/doubles/README.md, "Errors"); tests/sim/sticky.sh diffs the sim
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
#include "../doubles/sim.h"
#include "sticky_line.h"

#define KB (1u << 10)

int main(int argc, char **argv)
{
	cudaError_t code = argc > 1 && atoi(argv[1]) == 700 ? cudaErrorIllegalAddress : cudaErrorLaunchFailure;
	void *small[2] = { 0 }, *blk = NULL, *dev = NULL;
	char *m = malloc(64);
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

	sticky_calls(code == cudaErrorLaunchFailure, blk, small[0], m, dev);
	free(m);   /* the refused cudaFreeHost left it allocated */
	return 0;
}
