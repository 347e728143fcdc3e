// drvsize0.cu - what the driver answers a pinned allocation of 0 bytes
// (cuMemHostAlloc, cuMemAllocHost) and a free of NULL (cuMemFreeHost),
// against the runtime's (cudaHostAlloc, cudaMallocHost, cudaFreeHost): the
// simulated driver entry points assumed 1 for the allocations
// (tests/doubles/README.md).  One line a call:
//   DRVSIZE0 call=.. rc=N ptr=null|untouched|set last=N
//   nvcc -O2 -arch=sm_90 -o /tmp/drvsize0 dev/probe/drvsize0.cu -lcuda && /tmp/drvsize0
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>

static void line(const char *call, int rc, void *p)
{
    printf("DRVSIZE0 call=%s rc=%d ptr=%s last=%d\n", call, rc, !p ? "null" : p == (void *)1 ? "untouched" : "set",
           (int)cudaGetLastError());
}

int main()
{
    void *p = (void *)1;

    cudaFree(0);   // the primary context current
    p = (void *)1;
    line("cudaHostAlloc0", cudaHostAlloc(&p, 0, 0), p);
    p = (void *)1;
    line("cudaMallocHost0", cudaMallocHost(&p, 0), p);
    p = (void *)1;
    line("cuMemHostAlloc0", cuMemHostAlloc(&p, 0, 0), p);
    p = (void *)1;
    line("cuMemAllocHost0", cuMemAllocHost(&p, 0), p);
    line("cuMemFreeHostNULL", cuMemFreeHost(NULL), NULL);
    line("cudaFreeHostNULL", cudaFreeHost(NULL), NULL);
    return 0;
}
