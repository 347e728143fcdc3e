/* quiet - a CUDA program that writes nothing, for signals.sh: a small and a
 * 64 MiB pinned block (the fast path's size), and a 4 MiB pageable copy
 * each way (staged, so the node's shared file is made).  Exit status 0
 * when every call succeeded and the bytes came back, else the step that
 * failed.  Plain, it never writes a byte: whatever pincache writes must not
 * be what ends it. */
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>

int main(void)
{
    size_t big = (size_t)64 << 20, n = (size_t)4 << 20;
    char *p = NULL, *h, *d = NULL;

    if (cudaHostAlloc((void **)&p, 4096, 0) != cudaSuccess || cudaFreeHost(p) != cudaSuccess)
        return 1;
    if (cudaHostAlloc((void **)&p, big, 0) != cudaSuccess)
        return 2;
    memset(p, 5, big);
    if (p[big - 1] != 5 || cudaFreeHost(p) != cudaSuccess)
        return 3;
    h = malloc(n);
    if (!h || cudaMalloc((void **)&d, n) != cudaSuccess)
        return 4;
    memset(h, 9, n);
    if (cudaMemcpy(d, h, n, cudaMemcpyHostToDevice) != cudaSuccess)
        return 5;
    memset(h, 0, n);
    if (cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost) != cudaSuccess || h[0] != 9 || h[n - 1] != 9)
        return 6;
    if (cudaFree(d) != cudaSuccess)
        return 7;
    free(h);
    return 0;
}
