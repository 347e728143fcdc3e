// offload - a vLLM-like KV offload loop through batched copies (issue 17):
// each iteration a kernel writes N device blocks, one cudaMemcpyBatchAsync
// offloads them to host blocks (half pinned, half pageable, as a CPU KV
// cache that outgrew its pinned pool), a second batch reloads host blocks
// (rotated by the iteration) into other device blocks, and a kernel folds
// what arrived into per-block sums.  The pinned sources are read in stream
// order (srcAccessOrder Stream), the pageable ones during the call
// (DuringApiCall), as an offload connector passes them.
//
//   offload [N [BLOCK_KIB [ITERS]]]      (default 256 blocks of 512 KiB, 20)
//
// Prints one line: "OFFLOAD n=N block=B iters=I ms_per_iter=X checksum=C";
// the checksum covers every byte every reload delivered, so a run under
// pincache must print the same one.  tests/bench/offload.sh runs it plain
// and under pincache side by side.
//
// Build: nvcc -O2 -arch=sm_90 -cudart shared -o offload offload.cu
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vector>

#define CK(call)                                                                                      \
    do {                                                                                              \
        cudaError_t e_ = (call);                                                                      \
        if (e_ != cudaSuccess) {                                                                      \
            fprintf(stderr, "offload: %s: %d (%s)\n", #call, (int)e_, cudaGetErrorString(e_));        \
            return 2;                                                                                 \
        }                                                                                             \
    } while (0)

__global__ void produce(uint64_t *const *blk, size_t words, unsigned it)
{
    uint64_t *b = blk[blockIdx.y];
    for (size_t w = blockIdx.x * blockDim.x + threadIdx.x; w < words; w += (size_t)gridDim.x * blockDim.x)
        b[w] = (w * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)it << 40) ^ ((uint64_t)blockIdx.y << 20) ^ w;
}

__global__ void fold(uint64_t *const *blk, size_t words, unsigned long long *acc)
{
    const uint64_t *b = blk[blockIdx.y];
    uint64_t s = 0;
    for (size_t w = blockIdx.x * blockDim.x + threadIdx.x; w < words; w += (size_t)gridDim.x * blockDim.x)
        s += b[w] * (w + 1);
    atomicAdd(&acc[blockIdx.y], (unsigned long long)s);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 0) : 256;
    size_t blk = (argc > 2 ? strtoul(argv[2], NULL, 0) : 512) << 10;
    unsigned iters = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 0) : 20;
    size_t words = blk / 8, half = n / 2;
    std::vector<void *> host(n), dsrc(n), ddst(n), dsts(n), srcs(n);
    std::vector<size_t> sizes(n, blk);
    unsigned char *pinned = NULL, *pageable;
    uint64_t **dsrc_tab, **ddst_tab;
    unsigned long long *acc;
    cudaStream_t s;
    double t0 = 0;

    if (n < 2 || blk < 8 || !iters)
        return 2;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaHostAlloc((void **)&pinned, half * blk, 0));
    pageable = (unsigned char *)malloc((n - half) * blk);
    if (!pageable)
        return 2;
    memset(pageable, 0, (n - half) * blk);
    for (size_t i = 0; i < n; i++) {
        host[i] = i < half ? pinned + i * blk : pageable + (i - half) * blk;
        CK(cudaMalloc(&dsrc[i], blk));
        CK(cudaMalloc(&ddst[i], blk));
    }
    CK(cudaMalloc((void **)&dsrc_tab, n * sizeof(void *)));
    CK(cudaMalloc((void **)&ddst_tab, n * sizeof(void *)));
    CK(cudaMalloc((void **)&acc, n * sizeof *acc));
    CK(cudaMemcpy(dsrc_tab, dsrc.data(), n * sizeof(void *), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(ddst_tab, ddst.data(), n * sizeof(void *), cudaMemcpyHostToDevice));
    CK(cudaMemset(acc, 0, n * sizeof *acc));
    CK(cudaDeviceSynchronize());   /* the legacy stream's memset before s's kernels add to acc */

    struct cudaMemcpyAttributes a[2];
    memset(a, 0, sizeof a);
    a[0].srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    a[0].srcLocHint.type = cudaMemLocationTypeDevice;
    a[0].dstLocHint.type = cudaMemLocationTypeHost;
    a[1] = a[0];
    a[1].srcAccessOrder = cudaMemcpySrcAccessOrderDuringApiCall;
    dim3 grid(8, (unsigned)n);

    for (unsigned it = 0; it <= iters; it++) {   // iteration 0 warms up
        if (it == 1)
            t0 = now_s();
        produce<<<grid, 256, 0, s>>>(dsrc_tab, words, it);
        // Offload: device blocks to host blocks, the sources device memory.
        size_t idx0 = 0;
        CK(cudaMemcpyBatchAsync(host.data(), (const void *const *)dsrc.data(), sizes.data(), n, a, &idx0, 1, s));
        // Reload: host block (i + it) % n into device block i, pinned
        // sources first (Stream), then the pageable ones (DuringApiCall).
        // The offload's pageable destinations are written when the stream
        // gets there; DuringApiCall reads its sources at the call, so the
        // reload waits for the offload first, as a connector that reloads
        // what it stored does.
        CK(cudaStreamSynchronize(s));
        size_t k = 0;
        for (int pass = 0; pass < 2; pass++)
            for (size_t i = 0; i < n; i++) {
                size_t h = (i + it) % n;
                if ((h < half) != (pass == 0))
                    continue;
                dsts[k] = ddst[i];
                srcs[k] = host[h];
                k++;
            }
        size_t idx[2] = { 0, half };
        CK(cudaMemcpyBatchAsync(dsts.data(), (const void *const *)srcs.data(), sizes.data(), n, a, idx, 2, s));
        // The reload's targets in dsts order: fold them by table.
        CK(cudaMemcpyAsync(ddst_tab, dsts.data(), n * sizeof(void *), cudaMemcpyHostToDevice, s));
        fold<<<grid, 256, 0, s>>>(ddst_tab, words, acc);
        CK(cudaStreamSynchronize(s));
    }
    double ms = (now_s() - t0) * 1e3 / iters;
    std::vector<unsigned long long> sums(n);
    CK(cudaMemcpy(sums.data(), acc, n * sizeof *acc, cudaMemcpyDeviceToHost));
    unsigned long long c = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        c = (c ^ sums[i]) * 1099511628211ull;
    printf("OFFLOAD n=%zu block=%zu iters=%u ms_per_iter=%.3f checksum=%016llx\n", n, blk, iters, ms, c);
    return 0;
}
