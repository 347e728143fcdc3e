/* gpu_sticky.cu - what the runtime answers once a kernel fault broke the
 * context (issue 15, D10), plainly and under the shim.
 *
 *   gpu_sticky trap|addr [--shim]
 *
 * trap: a kernel calls __trap() (719); addr: a kernel stores to address
 * 0x10 (700).  A fault breaks the context for the rest of the process, so
 * each kind is its own run.  Before the fault two 64 KiB blocks and one of
 * 128 KiB are allocated and freed (under the shim they stay in the cache:
 * --shim checks that the next 128 KiB allocation is served from it, so the
 * allocations after the fault are ones the cache could serve) and three
 * 1 MiB blocks stay live; the third is freed after the fault through the
 * driver (cuMemFreeHost), which must leave the runtime's last error as it
 * was (under the shim with PINCACHE_FENCE=runtime too, whose fences are
 * runtime calls that a broken context would refuse, setting it).  After
 * the fault the host sleeps 500 ms with no CUDA call.
 *
 * stdout: tests/sim/sticky_line.h's calls and lines (the call, its code,
 * cudaPeekAtLastError, then cudaGetLastError twice once a call has
 * failed), so scripts/gpu-suite.sh can diff the plain run against
 * tests/sim/sticky.h200.txt (the simulated device's model) and the shimmed
 * run against the plain one; then PASS/FAIL lines for the properties the
 * shim must keep, and a RESULT line.  Exit 0, or 1 when a FAIL was printed. */
#include "gpu_common.cuh"

#include <cuda.h>

#include <unistd.h>

#include "../sim/sticky_line.h"

#define KB (1u << 10)

static int nfail;

static void check(int good, const char *id, const char *text)
{
    printf("%s %s %s\n", good ? "PASS" : "FAIL", id, text);
    nfail += !good;
}

__global__ void k_trap(void)
{
    __trap();
}

__global__ void k_bad_store(void)
{
    *(volatile int *)0x10 = 1;
}

int main(int argc, char **argv)
{
    int trap = argc > 1 && strcmp(argv[1], "addr") != 0;
    int shim = argc > 2 && strcmp(argv[2], "--shim") == 0;
    cudaError_t code = trap ? cudaErrorLaunchFailure : cudaErrorIllegalAddress;
    void *small[2] = { 0 }, *mid = NULL, *blk = NULL, *blk2 = NULL, *blk3 = NULL, *dev = NULL, *p;
    char *m = (char *)malloc(64);
    cudaError_t r, l1, l2;

    CK(cudaHostAlloc(&blk, 1024 * KB, 0));
    CK(cudaHostAlloc(&blk2, 1024 * KB, 0));
    CK(cudaHostAlloc(&blk3, 1024 * KB, 0));
    CK(cudaMalloc(&dev, 4096));
    for (int i = 0; i < 2; i++)
        CK(cudaHostAlloc(&small[i], 64 * KB, 0));
    CK(cudaHostAlloc(&mid, 128 * KB, 0));
    for (int i = 0; i < 2; i++)
        CK(cudaFreeHost(small[i]));
    CK(cudaFreeHost(mid));
    if (shim) {
        CK(cudaHostAlloc(&p, 128 * KB, 0));
        check(p == mid, "cached", "before the fault a 128 KiB allocation is served from the cache");
        CK(cudaFreeHost(p));
    }
    CK(cudaDeviceSynchronize());
    if (trap)
        k_trap<<<1, 1>>>();
    else
        k_bad_store<<<1, 1>>>();
    usleep(500000);

    sticky_calls(trap, blk, small[0], m, dev);

    /* The case of issue 15, D10, with the last error read right after it:
     * a size the cache holds (128 KiB, untouched by sticky_calls). */
    p = (void *)1;
    r = cudaHostAlloc(&p, 128 * KB, 0);
    l1 = cudaGetLastError();
    l2 = cudaGetLastError();
    check(r == code && p == NULL, "alloc", "cudaHostAlloc of a cached size after the fault: the sticky code and NULL");
    check(l1 == code && l2 == cudaSuccess, "last", "... the sticky code is the last error once, then 0");
    fprintf(stderr, "cudaHostAlloc after the fault: %d, pointer %p, last %d then %d\n", (int)r, p, (int)l1, (int)l2);
    r = cudaFreeHost(blk2);
    l1 = cudaGetLastError();
    check(r == code && l1 == code, "free", "cudaFreeHost of a live block after the fault: the sticky code, and the last error");
    (void)cudaGetLastError();
    {
        CUresult dr = cuMemFreeHost(blk3);
        char line[96];
        snprintf(line, sizeof line, "+cuMemFreeHost(live block)%-26s ret=%-3d peek=%d", "", (int)dr,
                 (int)cudaPeekAtLastError());
        puts(line);
        check(dr == (CUresult)code, "drvfree", "cuMemFreeHost of a live block after the fault: the sticky code");
    }
    free(m);   /* the refused cudaFreeHost left it allocated */
    printf("RESULT gpu_sticky %s failures=%d\n", trap ? "trap" : "addr", nfail);
    return nfail ? 1 : 0;
}
