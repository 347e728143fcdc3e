// batchlegacy.cu - is work on the legacy stream ordered after a
// cudaMemcpyBatchAsync queued before it on a blocking created stream, as
// after a cudaMemcpyAsync there?  The fuzzer's model says yes (the legacy
// stream waits for the blocking streams' earlier work); seed 9381's plain
// transcript varied under load on an H100 (docs/runs.md, runs 98-100) in
// a way a batch that read its pinned source after a later legacy kernel
// had written it would explain.
//
// Each case: stream B (cudaStreamCreate: blocking) runs a 20 ms spin
// kernel, then copies 64 MiB from a pinned (mapped) buffer S to device
// buffer D: cudaMemcpyAsync, or cudaMemcpyBatchAsync (plain or _ptsz,
// srcAccessOrder Stream or Any); then a kernel on the legacy stream (0, or
// cudaStreamLegacy) overwrites S through its device pointer.  After a
// device sync, D holds S's old bytes if the legacy kernel waited for the
// copy.  One line a case and round:
//   BATCHLEGACY copy=memcpy|batch|batch_ptsz order=stream|any legacy=0|explicit round=N rc=N D=old|new|mixed
//   nvcc -O2 -arch=sm_90 -o /tmp/batchlegacy dev/probe/batchlegacy.cu && /tmp/batchlegacy
#include <cuda_runtime.h>
#include <cstdio>
#include <cstring>
#include <vector>

extern "C" cudaError_t cudaMemcpyBatchAsync_ptsz(void *const *, const void *const *, const size_t *, size_t,
                                                 cudaMemcpyAttributes *, size_t *, size_t, cudaStream_t);

#define N (64u << 20)

__global__ void spin(long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles)
        ;
}

__global__ void overwrite(unsigned char *p, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = 2;
}

int main()
{
    unsigned char *s = nullptr, *sd = nullptr, *d = nullptr;
    std::vector<unsigned char> back(N);
    cudaStream_t b;
    int clk = 0;

    if (cudaHostAlloc(&s, N, cudaHostAllocMapped) || cudaHostGetDevicePointer((void **)&sd, s, 0) ||
        cudaMalloc(&d, N) || cudaStreamCreate(&b) || cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0)) {
        printf("BATCHLEGACY setup failed\n");
        return 1;
    }
    long long cycles = (long long)clk * 20;   // kHz * 20 ms
    const char *copies[] = { "memcpy", "batch", "batch_ptsz" };
    for (int round = 0; round < 3; round++)
        for (int c = 0; c < 3; c++)
            for (int o = 0; o < 2; o++)
                for (int leg = 0; leg < 2; leg++) {
                    if (c == 0 && o == 1)
                        continue;
                    memset(s, 1, N);
                    cudaMemset(d, 0, N);
                    cudaDeviceSynchronize();
                    spin<<<1, 1, 0, b>>>(cycles);
                    void *dst = d;
                    const void *src = s;
                    size_t sz = N, idx = 0;
                    cudaMemcpyAttributes a;
                    memset(&a, 0, sizeof a);
                    a.srcAccessOrder = o ? cudaMemcpySrcAccessOrderAny : cudaMemcpySrcAccessOrderStream;
                    cudaError_t rc = c == 0 ? cudaMemcpyAsync(d, s, N, cudaMemcpyHostToDevice, b)
                                     : c == 1 ? cudaMemcpyBatchAsync(&dst, &src, &sz, 1, &a, &idx, 1, b)
                                              : cudaMemcpyBatchAsync_ptsz(&dst, &src, &sz, 1, &a, &idx, 1, b);
                    overwrite<<<264, 256, 0, leg ? cudaStreamLegacy : (cudaStream_t)0>>>(sd, N);
                    cudaError_t rc2 = cudaDeviceSynchronize();
                    cudaMemcpy(back.data(), d, N, cudaMemcpyDeviceToHost);
                    size_t old = 0, nw = 0;
                    for (size_t i = 0; i < N; i += 4096) {
                        old += back[i] == 1;
                        nw += back[i] == 2;
                    }
                    printf("BATCHLEGACY copy=%s order=%s legacy=%s round=%d rc=%d rc2=%d D=%s\n", copies[c],
                           o ? "any" : "stream", leg ? "explicit" : "0", round, (int)rc, (int)rc2,
                           nw == 0 && old ? "old" : old == 0 && nw ? "new" : "mixed");
                }
    return 0;
}
