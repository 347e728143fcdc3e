/* hello - a trivial CUDA program for badopts.sh: one pinned allocation, one
 * line on stdout, exit status 7.  Whatever the shim does with bad options, the
 * program's output and exit status must stay exactly these. */
#include <stdio.h>
#include <cuda_runtime_api.h>

int main(void)
{
	void *p = NULL;

	if (cudaHostAlloc(&p, 4096, 0) != cudaSuccess || cudaFreeHost(p) != cudaSuccess)
		return 1;
	printf("hello from the program\n");
	return 7;
}
