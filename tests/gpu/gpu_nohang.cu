/* gpu_nohang.cu - a call that does not wait for the device plainly must not
 * wait for it under the shim either (tests/sim/nohang.c on the simulated
 * device; pincache(7) CAVEATS).  A kernel on a non-blocking stream waits
 * for the host to set a flag in mapped pinned memory, which the host sets
 * only after the calls below return: a call that waited for the kernel
 * would wait for ever.  The kernel gives up after SPIN_S seconds instead,
 * and the case FAILs.
 *
 *  miss       idle blocks of 64 and 48 MiB, then cudaHostAlloc of 40 MiB:
 *             under the shim a miss beyond the cache's headroom, whose
 *             release of an idle block would wait for the device
 *  mallochost the same through cudaMallocHost (36 MiB)
 *  fenced     two idle 48 MiB blocks fenced behind 200 ms of other work,
 *             then a 48 MiB request
 *  staged     4 MiB pageable cudaMemcpy both ways on the legacy stream and
 *             cudaMemcpyAsync on another non-blocking stream
 * Plainly each line is the runtime's own behaviour (H200: cudaHostAlloc and
 * cudaMallocHost did not wait for a 30 ms kernel, DESIGN.md); under the shim
 * (--shim) the same must hold.  PASS/FAIL lines, then RESULT. */
#include "gpu_common.cuh"

#define MiB ((size_t)1 << 20)
#define SPIN_S 5ull

__global__ void k_wait(volatile int *flag, volatile int *gave_up, uint64_t max_ns)
{
    uint64_t t0 = dev_ns();

    while (!*flag) {
        if (dev_ns() - t0 > max_ns) {
            *gave_up = 1;
            __threadfence_system();
            return;
        }
    }
}

static volatile int *g_flag, *g_gave_up;
static cudaStream_t g_ks, g_other;

static void wait_start(void)
{
    *g_flag = 0;
    *g_gave_up = 0;
    k_wait<<<1, 1, 0, g_ks>>>(g_flag, g_gave_up, SPIN_S * 1000000000ull);
    CK(cudaGetLastError());
}

/* The kernel was still waiting when the calls returned: 1. */
static int wait_end(void)
{
    __sync_synchronize();
    *g_flag = 1;
    __sync_synchronize();
    CK(cudaStreamSynchronize(g_ks));
    return *g_gave_up == 0;
}

static void verdict(const char *id, int ok, cudaError_t err, double ms, const char *what)
{
    printf("%s %s: %s (%.1f ms, %s)\n", ok && err == cudaSuccess ? "PASS" : "FAIL", id, what, ms,
           cudaGetErrorName(err));
}

int main(int argc, char **argv)
{
    int shim = argc > 1 && !strcmp(argv[1], "--shim");
    void *flags, *a, *b, *c, *d;
    cudaError_t err;
    uint64_t t;

    CK(cudaFree(0));
    CK(cudaHostAlloc(&flags, 4096, cudaHostAllocMapped));
    g_flag = (volatile int *)flags;
    g_gave_up = (volatile int *)flags + 16;
    CK(cudaStreamCreateWithFlags(&g_ks, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&g_other, cudaStreamNonBlocking));

    CK(cudaHostAlloc(&a, 64 * MiB, 0));
    CK(cudaFreeHost(a));
    CK(cudaHostAlloc(&a, 48 * MiB, 0));
    CK(cudaFreeHost(a));
    CK(cudaDeviceSynchronize());
    wait_start();
    t = host_ns();
    err = cudaHostAlloc(&b, 40 * MiB, 0);
    double ms = ms_since(t);
    verdict("miss", wait_end(), err, ms, "cudaHostAlloc of a new size did not wait for the kernel");
    if (err == cudaSuccess)
        CK(cudaFreeHost(b));

    wait_start();
    t = host_ns();
    err = cudaMallocHost(&c, 36 * MiB);
    ms = ms_since(t);
    verdict("mallochost", wait_end(), err, ms, "cudaMallocHost of a new size did not wait for the kernel");
    if (err == cudaSuccess)
        CK(cudaFreeHost(c));

    CK(cudaHostAlloc(&c, 48 * MiB, 0));
    CK(cudaHostAlloc(&d, 48 * MiB, 0));
    k_spin<<<1, 1, 0, g_other>>>(200000000ull, NULL);
    CK(cudaGetLastError());
    CK(cudaFreeHost(c));   /* plainly, waits for the 200 ms */
    CK(cudaFreeHost(d));
    wait_start();
    t = host_ns();
    err = cudaHostAlloc(&b, 48 * MiB, 0);
    ms = ms_since(t);
    verdict("fenced", wait_end(), err, ms, "cudaHostAlloc with its size's idle blocks fenced did not wait for the kernel");
    CK(cudaStreamSynchronize(g_other));
    if (err == cudaSuccess)
        CK(cudaFreeHost(b));

    unsigned char *src = (unsigned char *)malloc(4 * MiB), *dst = (unsigned char *)malloc(4 * MiB), *dev;
    if (!src || !dst)
        return 2;
    memset(src, 7, 4 * MiB);
    memset(dst, 0, 4 * MiB);
    CK(cudaMalloc(&dev, 4 * MiB));
    CK(cudaDeviceSynchronize());
    wait_start();
    t = host_ns();
    err = cudaMemcpy(dev, src, 4 * MiB, cudaMemcpyHostToDevice);
    if (err == cudaSuccess)
        err = cudaMemcpy(dst, dev, 4 * MiB, cudaMemcpyDeviceToHost);
    if (err == cudaSuccess)
        err = cudaMemcpyAsync(dev, src, 4 * MiB, cudaMemcpyHostToDevice, g_other);
    if (err == cudaSuccess)
        err = cudaMemcpyAsync(dst, dev, 4 * MiB, cudaMemcpyDeviceToHost, g_other);
    if (err == cudaSuccess)
        err = cudaStreamSynchronize(g_other);
    ms = ms_since(t);
    verdict("staged", wait_end() && dst[0] == 7 && dst[4 * MiB - 1] == 7, err, ms,
            "4 MiB pageable copies on the legacy stream and another stream did not wait for the kernel");
    CK(cudaFree(dev));
    free(src);
    free(dst);

    CK(cudaDeviceSynchronize());
    CK(cudaFreeHost(flags));
    printf("RESULT nohang shim=%d\n", shim);
    return 0;
}
