/* gpu_batch.cu - reuse safety of a pinned block read by a batched copy
 * (issue 17): each iteration fills a pinned block with its own pattern,
 * queues a spin and then cudaMemcpyBatchAsync (the block into its own device
 * slot, srcAccessOrder Stream) on a non-blocking stream, frees the block at
 * once and allocates the same size again, which the cache hands out only
 * once the batch has read it; the next iteration refills it at once.  At
 * the end every device slot must hold its own iteration's pattern.
 *
 * --phase batch (the only one).  Prints "RESULT integrity phase=batch ...
 * mismatches=N seconds=S"; exit 0 pass, 1 mismatches, 2 CUDA error.  Run
 * plain, under pincache, with runtime fences and with fences off (which
 * must see corruption) by gpu-suite.sh. */
#include "gpu_common.cuh"

#define ITERS 128
#define BLOCK ((size_t)256 << 10)

__global__ void k_count(const uint32_t *w, size_t n, uint32_t tag, unsigned long long *bad)
{
    unsigned long long b = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n / 4; i += (size_t)gridDim.x * blockDim.x)
        b += w[i] != pat32(tag, i);
    if (b)
        atomicAdd(bad, b);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    uint32_t *pin = NULL;
    char *dev = NULL;
    unsigned long long *bad = NULL, mism = 0;
    cudaStream_t s;
    struct cudaMemcpyAttributes a;
    size_t idx = 0, sz = BLOCK;
    double t0 = now_s();

    (void)argc;
    (void)argv;
    memset(&a, 0, sizeof a);
    a.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaMalloc((void **)&dev, ITERS * BLOCK));
    CK(cudaMallocManaged((void **)&bad, sizeof *bad));
    *bad = 0;
    CK(cudaHostAlloc((void **)&pin, BLOCK, 0));
    for (uint32_t it = 0; it < ITERS; it++) {
        void *d = dev + it * BLOCK;
        const void *src = pin;

        for (size_t i = 0; i < BLOCK / 4; i++)
            pin[i] = pat32(it + 1, i);
        k_spin<<<1, 1, 0, s>>>(300000, NULL);
        CK(cudaMemcpyBatchAsync(&d, &src, &sz, 1, &a, &idx, 1, s));
        CK(cudaFreeHost(pin));
        CK(cudaHostAlloc((void **)&pin, BLOCK, 0));
    }
    CK(cudaStreamSynchronize(s));
    for (uint32_t it = 0; it < ITERS; it++)
        k_count<<<64, 256>>>((const uint32_t *)(dev + it * BLOCK), BLOCK, it + 1, bad);
    CK(cudaDeviceSynchronize());
    mism = *bad;
    printf("RESULT integrity phase=batch iters=%d mismatches=%llu seconds=%.3f\n", ITERS, mism, now_s() - t0);
    CK(cudaFreeHost(pin));
    return mism ? 1 : 0;
}
